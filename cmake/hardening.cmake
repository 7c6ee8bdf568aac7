# Hardening of every optimised build: the flags Debian's dpkg-buildflags gives a
# package built with DEB_BUILD_MAINT_OPTIONS=hardening=+all (Debian 12, amd64),
# set here by the project itself so that the Release build the tests use and
# the .deb (debian/rules, which reuses that build folder) are one and the same
# build: making the package compiles nothing again (docs/install.md).
#   -D_FORTIFY_SOURCE=2          checked variants of memcpy, read, snprintf, ...
#                                (needs optimisation: not in Debug builds)
#   -fstack-protector-strong     stack canaries
#   -Wl,-z,relro -Wl,-z,now      read-only relocations, every symbol bound at
#                                start (full RELRO); PIE is Debian gcc's default
# Not dpkg-buildflags' -Werror=format-security: it is no hardening (-Wall has
# -Wformat), and a variadic helper that forwards a literal format (the worker
# channel's log) reads to gcc as a non-literal one.
# Left out of sanitizer and fuzzing builds: ASan's interceptors and libFuzzer
# want the plain libc calls, not their _chk variants.
if(NOT ZKFARM_SANITIZE AND NOT ZKFARM_FUZZ)
  set(_zkfarm_optimised $<AND:$<COMPILE_LANGUAGE:CXX>,$<NOT:$<CONFIG:Debug>>>)
  add_compile_definitions($<${_zkfarm_optimised}:_FORTIFY_SOURCE=2>)
  add_compile_options($<$<COMPILE_LANGUAGE:CXX>:-fstack-protector-strong>)
  add_link_options(LINKER:-z,relro LINKER:-z,now)
endif()
