# End-to-end tests in Python (unittest, no extra packages): one ctest test a
# test class, named PREFIX.CLASS, so that ctest runs the classes of a module
# beside each other and its report times each. The classes are listed at
# configure time by tests/e2e_classes.py (exactly what `python3 -m unittest
# MODULE` runs); CMake configures again when the module changes, and a module
# that cannot be listed fails the configure rather than drop its tests.
#
#   zkfarm_e2e(PREFIX DIR MODULE [TIMEOUT s] [PROCESSORS n] [COST n] [LOCKS name...] [ENVIRONMENT k=v...])
#
# TIMEOUT: each class's (the sanitizer build runs them several times slower).
# PROCESSORS: cores a class keeps busy (ctest -jN counts them; default 1): most
#   classes wait on processes and sockets, so they share the machine.
# COST: ctest starts costlier tests first (default 100, above any gtest case;
#   the longest classes more), so that the long ones do not end the run alone.
#   After a run ctest uses the times it measured instead.
# LOCKS: ctest RESOURCE_LOCKs for what classes of different modules must not
#   use at once; RUN_SERIAL is not used (nothing here needs the whole machine).
set(ZKFARM_E2E_ENV
  "ZKFARM_BIN=${PROJECT_BINARY_DIR}/bin"
  "ZKFARM_SOURCE_DIR=${PROJECT_SOURCE_DIR}"
  "ZKFARM_SHARED_FIXTURES=${ZKFARM_FIXTURES}"
  "PYTHONDONTWRITEBYTECODE=1"
  "PYTHONUNBUFFERED=1")

function(zkfarm_e2e prefix dir module)
  cmake_parse_arguments(E "" "TIMEOUT;PROCESSORS;COST" "LOCKS;ENVIRONMENT" ${ARGN})
  if(NOT E_TIMEOUT)
    set(E_TIMEOUT 900)
  endif()
  if(NOT E_PROCESSORS)
    set(E_PROCESSORS 1)
  endif()
  if(NOT E_COST)
    set(E_COST 100)
  endif()
  set_property(DIRECTORY APPEND PROPERTY CMAKE_CONFIGURE_DEPENDS ${dir}/${module}.py)
  execute_process(
    COMMAND ${CMAKE_COMMAND} -E env ${ZKFARM_E2E_ENV} python3 ${PROJECT_SOURCE_DIR}/tests/e2e_classes.py ${dir} ${module}
    OUTPUT_VARIABLE classes ERROR_VARIABLE err RESULT_VARIABLE rc OUTPUT_STRIP_TRAILING_WHITESPACE)
  if(NOT rc EQUAL 0)
    message(FATAL_ERROR "end-to-end tests of ${dir}/${module}.py cannot be listed: ${err}")
  endif()
  string(REPLACE "\n" ";" classes "${classes}")
  foreach(class IN LISTS classes)
    add_test(NAME ${prefix}.${class} COMMAND python3 -m unittest -v ${module}.${class} WORKING_DIRECTORY ${dir})
    set_tests_properties(${prefix}.${class} PROPERTIES TIMEOUT ${E_TIMEOUT} PROCESSORS ${E_PROCESSORS} COST ${E_COST}
      ENVIRONMENT "${ZKFARM_E2E_ENV};${E_ENVIRONMENT}")
    if(E_LOCKS)
      set_tests_properties(${prefix}.${class} PROPERTIES RESOURCE_LOCK "${E_LOCKS}")
    endif()
  endforeach()
endfunction()
