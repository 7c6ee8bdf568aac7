# Turns one .sql file into a C++ header of raw string constants (run by
# zkfarm_embed_sql in EmbedSql.cmake at build time, `cmake -P`): the SQL stays
# in .sql files a reviewer reads, and the binary carries it without reading
# files at run time. GCC 12 (Debian 12) has no #embed.
#
#   -DIN=file.sql -DOUT=file.sql.hpp -DNAME=file -DSOURCE=path/for/the/banner
#
# A file of several queries marks each with a line `-- name: IDENT` (sqlc's
# convention); each becomes `zkfarm::sql::NAME::IDENT`. A file without such a
# line (a schema, a migration) becomes `zkfarm::sql::NAME::text`. Lines that
# hold only a comment are left out of the constants: they are for the reader,
# and the server need not receive them with every statement.
cmake_minimum_required(VERSION 3.20)
file(READ "${IN}" content)
set(delim "zkfarm_sql")
set(out "// Generated from ${SOURCE} by cmake/embed_sql.cmake: edit the .sql file, not this.\n")
string(APPEND out "#pragma once\n\nnamespace zkfarm::sql::${NAME} {\n")

function(emit ident body)
  # Comment-only lines go; so do blank lines and a trailing ';'.
  string(REGEX REPLACE "(^|\n)[ \t]*--[^\n]*" "" body "${body}")
  string(REGEX REPLACE "\n[ \t]*\n" "\n" body "${body}")
  string(STRIP "${body}" body)
  string(REGEX REPLACE ";$" "" body "${body}")
  if(body STREQUAL "")
    message(FATAL_ERROR "${SOURCE}: '${ident}' is empty")
  endif()
  string(FIND "${body}" ")${delim}\"" clash)
  if(NOT clash EQUAL -1)
    message(FATAL_ERROR "${SOURCE}: '${ident}' holds the raw string's delimiter")
  endif()
  set(out "${out}inline constexpr const char* ${ident} = R\"${delim}(${body})${delim}\";\n" PARENT_SCOPE)
endfunction()

# A marker counts only at the start of a line.
set(marker "-- name: ")
string(FIND "\n${content}" "\n${marker}" pos)
if(pos EQUAL -1)
  emit(text "${content}")
else()
  string(SUBSTRING "${content}" ${pos} -1 rest)
  set(seen "")
  while(NOT rest STREQUAL "")
    # rest starts with the marker: IDENT up to the end of its line.
    string(LENGTH "${marker}" mlen)
    string(SUBSTRING "${rest}" ${mlen} -1 rest)
    string(FIND "${rest}" "\n" eol)
    if(eol EQUAL -1)
      message(FATAL_ERROR "${SOURCE}: a name without a query")
    endif()
    string(SUBSTRING "${rest}" 0 ${eol} ident)
    string(STRIP "${ident}" ident)
    if(NOT ident MATCHES "^[a-z_][a-z0-9_]*$")
      message(FATAL_ERROR "${SOURCE}: '${ident}' is not a lower-case identifier")
    endif()
    if(ident IN_LIST seen)
      message(FATAL_ERROR "${SOURCE}: '${ident}' is named twice")
    endif()
    list(APPEND seen "${ident}")
    math(EXPR start "${eol} + 1")
    string(SUBSTRING "${rest}" ${start} -1 rest)
    string(FIND "${rest}" "\n${marker}" next)
    if(next EQUAL -1)
      set(body "${rest}")
      set(rest "")
    else()
      string(SUBSTRING "${rest}" 0 ${next} body)
      math(EXPR next "${next} + 1")
      string(SUBSTRING "${rest}" ${next} -1 rest)
    endif()
    emit(${ident} "${body}")
  endwhile()
endif()
string(APPEND out "\n}  // namespace zkfarm::sql::${NAME}\n")
# Written only when it changed: an unchanged header rebuilds nothing.
if(EXISTS "${OUT}")
  file(READ "${OUT}" before)
  if(before STREQUAL out)
    return()
  endif()
endif()
file(WRITE "${OUT}" "${out}")
