# zkfarm_embed_sql(TARGET SQL_FILE...): each .sql file (relative to the
# current source dir) becomes generated/sql/NAME.sql.hpp in the current binary
# dir, made at build time by embed_sql.cmake, and is included as
# "sql/NAME.sql.hpp" by the target's sources (namespace zkfarm::sql::NAME).
set(ZKFARM_EMBED_SQL_SCRIPT ${CMAKE_CURRENT_LIST_DIR}/embed_sql.cmake)
function(zkfarm_embed_sql target)
  foreach(sql IN LISTS ARGN)
    get_filename_component(name ${sql} NAME_WE)
    set(in ${CMAKE_CURRENT_SOURCE_DIR}/${sql})
    set(out ${CMAKE_CURRENT_BINARY_DIR}/generated/sql/${name}.sql.hpp)
    file(RELATIVE_PATH source ${PROJECT_SOURCE_DIR} ${in})
    add_custom_command(OUTPUT ${out}
                       COMMAND ${CMAKE_COMMAND} -DIN=${in} -DOUT=${out} -DNAME=${name} -DSOURCE=${source}
                               -P ${ZKFARM_EMBED_SQL_SCRIPT}
                       DEPENDS ${in} ${ZKFARM_EMBED_SQL_SCRIPT}
                       COMMENT "Embedding ${source}" VERBATIM)
    target_sources(${target} PRIVATE ${out})
  endforeach()
  target_include_directories(${target} PRIVATE ${CMAKE_CURRENT_BINARY_DIR}/generated)
endfunction()
