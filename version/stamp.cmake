# Writes the checkout's commit into each program's .zkfarm_commit section
# (version/build_info.cpp.in holds the 64-byte field), where it differs:
#   cmake -DSRC=<source dir> -DDIR=<build>/bin [-DOBJCOPY=objcopy] -P version/stamp.cmake
# The target zkfarm_commit_stamp runs it once every program of a build is
# linked; scripts that build only some programs (setup.sh's farm build,
# gpu-pack.sh, debian/rules) run it themselves. So a new commit (or a checkout
# that became dirty) restamps the programs instead of relinking every one of
# them. A file without the section is left alone.
if(NOT OBJCOPY)
  set(OBJCOPY objcopy)
endif()
file(GLOB PROGRAMS LIST_DIRECTORIES false "${DIR}/*")
list(FILTER PROGRAMS EXCLUDE REGEX "\\.commit-stamp$")
set(commit unknown)
find_program(GIT git)
if(GIT AND EXISTS "${SRC}/.git")
  execute_process(COMMAND "${GIT}" -C "${SRC}" describe --always --dirty --abbrev=12
                  OUTPUT_VARIABLE out RESULT_VARIABLE rc ERROR_QUIET OUTPUT_STRIP_TRAILING_WHITESPACE)
  # Only a commit-like word, and one that fits the field.
  string(LENGTH "${out}" len)
  if(rc EQUAL 0 AND out MATCHES "^[0-9A-Za-z._-]+$" AND len LESS_EQUAL 64)
    set(commit "${out}")
  endif()
endif()
if(commit STREQUAL "unknown")
  return()  # not a git checkout (a copy of the tree, a tarball): what the programs hold stays
endif()
# The field: the commit padded with spaces to its 64 bytes (build_info.cpp
# reads up to the first space or NUL).
string(LENGTH "${commit}" len)
math(EXPR pad "64 - ${len}")
string(REPEAT " " ${pad} spaces)
set(want "${commit}${spaces}")

foreach(program IN LISTS PROGRAMS)
  if(NOT EXISTS "${program}")
    continue()
  endif()
  set(dump "${program}.commit-stamp")
  execute_process(COMMAND "${OBJCOPY}" -O binary --only-section=.zkfarm_commit "${program}" "${dump}"
                  RESULT_VARIABLE rc OUTPUT_QUIET ERROR_QUIET)
  file(SIZE "${dump}" size)
  if(NOT rc EQUAL 0 OR NOT size EQUAL 64)
    file(REMOVE "${dump}")
    continue()  # not a program with the field
  endif()
  file(READ "${dump}" have)
  if(NOT have STREQUAL want)
    file(WRITE "${dump}" "${want}")
    execute_process(COMMAND "${OBJCOPY}" --update-section ".zkfarm_commit=${dump}" "${program}"
                    RESULT_VARIABLE rc ERROR_VARIABLE err)
    if(NOT rc EQUAL 0)
      message(FATAL_ERROR "${program}: cannot stamp the commit: ${err}")
    endif()
  endif()
  file(REMOVE "${dump}")
endforeach()
