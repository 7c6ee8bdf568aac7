# Writes build_info.cpp (cmake -P, run by the build_info target on every build):
#   -DSRC=<source dir> -DIN=<build_info.cpp.in> -DOUT=<build_info.cpp>
#   -DZKFARM_VERSION=0.1.0 -DZKFARM_CUDA_BUILT=true|false
# configure_file rewrites OUT only when its text changes, so nothing relinks
# while the commit stays the same.
set(ZKFARM_COMMIT unknown)
find_program(GIT git)
if(GIT AND EXISTS "${SRC}/.git")
  execute_process(COMMAND "${GIT}" -C "${SRC}" describe --always --dirty --abbrev=12
                  OUTPUT_VARIABLE out RESULT_VARIABLE rc ERROR_QUIET OUTPUT_STRIP_TRAILING_WHITESPACE)
  # Only a commit-like word goes into a C string literal.
  if(rc EQUAL 0 AND out MATCHES "^[0-9A-Za-z._-]+$")
    set(ZKFARM_COMMIT "${out}")
  endif()
endif()
configure_file("${IN}" "${OUT}" @ONLY)
