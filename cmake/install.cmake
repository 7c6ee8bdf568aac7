# Install rules and the Debian package (docs/install.md). Included at the end of
# the top-level CMakeLists.txt.
#
#   cmake --install build --prefix /usr/local      # or DESTDIR=/tmp/root cmake --install build
#   cpack -G DEB --config build/CPackConfig.cmake   # zkfarm_VERSION_ARCH.deb, installs to /usr
#
# What goes where (PREFIX = the install prefix, /usr for the package):
#   PREFIX/bin/                 zkfarmd, zkfarmctl, zkfarm-synth, zkfarm-gpu, zkfarm-prove,
#                               zkfarm-testkey (the workers beside zkfarmd: supervisor/config.cpp)
#   systemd unit folder         zkfarmd.service: /lib/systemd/system for PREFIX /usr (Debian 12's
#                               systemdsystemunitdir), PREFIX/lib/systemd/system otherwise
#                               (/usr/local/lib/systemd/system is on systemd's search path)
#   /etc/init.d/zkfarmd         the LSB script
#   /etc/zkfarm/zkfarmd.toml    the example configuration (an existing one is kept)
#   /etc/logrotate.d/zkfarmd    logrotate for /var/lib/zkfarm/zkfarmd.log
#   PREFIX/share/doc/zkfarm/    README.md, docs/*.md, LICENSE, NOTICE, copyright
# The /etc files go to /etc whatever the prefix (ZKFARM_ETC_DIR): init.d and
# logrotate.d are read only there, and the unit, the LSB script and the docs
# all name /etc/zkfarm/zkfarmd.toml. DESTDIR applies to them as to the rest.
#
# The unit's ExecStart and the LSB script's DAEMON are filled in when
# installing, from the prefix in force then, so "cmake --install --prefix /usr"
# of a tree configured for /usr/local still writes /usr/bin/zkfarmd into them.

include(GNUInstallDirs)

set(ZKFARM_ETC_DIR "/etc" CACHE PATH
    "Absolute folder for init.d/, logrotate.d/ and zkfarm/zkfarmd.toml (DESTDIR applies)")
set(ZKFARM_SYSTEMD_UNIT_DIR "" CACHE PATH
    "Absolute systemd system unit folder; empty: /lib/systemd/system for prefix /usr, PREFIX/lib/systemd/system otherwise")

install(TARGETS zkfarmd zkfarmctl zkfarm-api zkfarm-synth zkfarm-gpu zkfarm-prove zkfarm-testkey
        RUNTIME DESTINATION ${CMAKE_INSTALL_BINDIR})

file(GLOB ZKFARM_DOC_FILES CONFIGURE_DEPENDS ${PROJECT_SOURCE_DIR}/docs/*.md)
install(FILES ${PROJECT_SOURCE_DIR}/README.md ${ZKFARM_DOC_FILES} ${PROJECT_SOURCE_DIR}/docs/api_example.py
              ${PROJECT_SOURCE_DIR}/LICENSE ${PROJECT_SOURCE_DIR}/NOTICE
              ${PROJECT_SOURCE_DIR}/packaging/deb/copyright
        DESTINATION ${CMAKE_INSTALL_DOCDIR})

# The witness generator hosts, compiled into each circuit's generator when
# zkfarmd or zkfarm-prove builds one (docs/witness.md): found as
# BINDIR/../share/zkfarm/witgen (witgen::find_witgen_root).
install(FILES ${PROJECT_SOURCE_DIR}/witgen/generator_host.hpp ${PROJECT_SOURCE_DIR}/witgen/input_json.hpp
              ${PROJECT_SOURCE_DIR}/witgen/input_json.cpp ${PROJECT_SOURCE_DIR}/witgen/wtns_writer.hpp
              ${PROJECT_SOURCE_DIR}/witgen/native_main.cpp ${PROJECT_SOURCE_DIR}/witgen/wasm_host.cpp
              ${PROJECT_SOURCE_DIR}/witgen/fr_inline.hpp
              ${PROJECT_SOURCE_DIR}/witgen/graph_recorder.cpp ${PROJECT_SOURCE_DIR}/witgen/graph_hooks.hpp
              ${PROJECT_SOURCE_DIR}/witgen/graph_format.hpp ${PROJECT_SOURCE_DIR}/witgen/graph_ops.hpp
        DESTINATION ${CMAKE_INSTALL_DATADIR}/zkfarm/witgen)
# The witness graph recorder's field arithmetic: the curves' headers (each
# curve's constants live in its own file) and what they include.
install(FILES ${PROJECT_SOURCE_DIR}/groth16/field.hpp ${PROJECT_SOURCE_DIR}/groth16/mont_mul_x86.hpp
              ${PROJECT_SOURCE_DIR}/groth16/bn254.hpp ${PROJECT_SOURCE_DIR}/groth16/bls12_381.hpp
              ${PROJECT_SOURCE_DIR}/groth16/curve.hpp ${PROJECT_SOURCE_DIR}/groth16/curve_id.hpp
              ${PROJECT_SOURCE_DIR}/groth16/fp2.hpp ${PROJECT_SOURCE_DIR}/groth16/xyzz_formulas.hpp
              ${PROJECT_SOURCE_DIR}/groth16/hd.hpp
        DESTINATION ${CMAKE_INSTALL_DATADIR}/zkfarm/groth16)

install(FILES ${PROJECT_SOURCE_DIR}/scripts/init/zkfarmd.logrotate
        DESTINATION ${ZKFARM_ETC_DIR}/logrotate.d RENAME zkfarmd)

# Configure-time values for the install-time code below (install(CODE) blocks
# run in order, in one scope).
install(CODE "
set(_zkfarm_src \"${PROJECT_SOURCE_DIR}\")
set(_zkfarm_gen \"${PROJECT_BINARY_DIR}/zkfarm-install\")
set(_zkfarm_bindir \"${CMAKE_INSTALL_BINDIR}\")
set(_zkfarm_docdir \"${CMAKE_INSTALL_DOCDIR}\")
set(_zkfarm_etc \"${ZKFARM_ETC_DIR}\")
set(_zkfarm_unitdir \"${ZKFARM_SYSTEMD_UNIT_DIR}\")
")
install(CODE [[
  # Paths as installed, from the prefix in force now (cmake --install --prefix).
  cmake_path(ABSOLUTE_PATH _zkfarm_bindir BASE_DIRECTORY "${CMAKE_INSTALL_PREFIX}" NORMALIZE
             OUTPUT_VARIABLE ZKFARM_BINDIR)
  cmake_path(ABSOLUTE_PATH _zkfarm_docdir BASE_DIRECTORY "${CMAKE_INSTALL_PREFIX}" NORMALIZE
             OUTPUT_VARIABLE ZKFARM_DOCDIR)
  string(REGEX REPLACE "/$" "" ZKFARM_BINDIR "${ZKFARM_BINDIR}")
  string(REGEX REPLACE "/$" "" ZKFARM_DOCDIR "${ZKFARM_DOCDIR}")
  if(_zkfarm_unitdir)
    set(_unitdir "${_zkfarm_unitdir}")
  elseif(CMAKE_INSTALL_PREFIX STREQUAL "/usr" OR CMAKE_INSTALL_PREFIX STREQUAL "/usr/")
    set(_unitdir "/lib/systemd/system")
  else()
    cmake_path(APPEND CMAKE_INSTALL_PREFIX "lib/systemd/system" OUTPUT_VARIABLE _unitdir)
  endif()
  configure_file("${_zkfarm_src}/scripts/init/zkfarmd.service.in" "${_zkfarm_gen}/zkfarmd.service" @ONLY)
  configure_file("${_zkfarm_src}/scripts/init/zkfarm-api.service.in" "${_zkfarm_gen}/zkfarm-api.service" @ONLY)
  configure_file("${_zkfarm_src}/scripts/init/zkfarmd.sysv.in" "${_zkfarm_gen}/zkfarmd" @ONLY)
  file(INSTALL DESTINATION "${_unitdir}" TYPE FILE FILES "${_zkfarm_gen}/zkfarmd.service" "${_zkfarm_gen}/zkfarm-api.service")
  file(INSTALL DESTINATION "${_zkfarm_etc}/init.d" TYPE PROGRAM FILES "${_zkfarm_gen}/zkfarmd")

  # The example configuration: never over an operator's own file (as dpkg does
  # with a changed conffile, the new one lands beside it as .new).
  set(_conf "$ENV{DESTDIR}${_zkfarm_etc}/zkfarm/zkfarmd.toml")
  set(_conf_name zkfarmd.toml)
  if(EXISTS "${_conf}")
    file(READ "${_conf}" _old)
    file(READ "${_zkfarm_src}/scripts/init/zkfarmd.toml" _new)
    if(NOT _old STREQUAL _new)
      message(STATUS "Keeping: ${_conf} (yours); the example is installed as ${_conf}.new")
      set(_conf_name zkfarmd.toml.new)
    endif()
  endif()
  file(INSTALL DESTINATION "${_zkfarm_etc}/zkfarm" TYPE FILE RENAME ${_conf_name}
       FILES "${_zkfarm_src}/scripts/init/zkfarmd.toml")
]])

# ---- The Debian package: cpack -G DEB (or cmake --build build --target package).
set(CPACK_GENERATOR DEB)
set(CPACK_PACKAGE_NAME zkfarm)
set(CPACK_PACKAGE_VERSION ${PROJECT_VERSION})
set(CPACK_PACKAGE_VENDOR "the zkfarm authors")
set(ZKFARM_DEB_MAINTAINER "the zkfarm authors <zkfarm@example.org>" CACHE STRING
    "Maintainer field of the Debian package")
set(CPACK_DEBIAN_PACKAGE_MAINTAINER "${ZKFARM_DEB_MAINTAINER}")
set(CPACK_PACKAGE_DESCRIPTION_SUMMARY "Groth16 proving farm: supervisor, workers and operator tool")
set(CPACK_DEBIAN_PACKAGE_DESCRIPTION "zkfarm proves Groth16 (BN254, snarkjs formats) on CPUs and NVIDIA GPUs. zkfarmd
supervises synthesis and GPU worker processes, journals every accepted job
in SQLite and serves health and Prometheus metrics over HTTP; zkfarmctl
submits jobs and operates the farm. Also zkfarm-prove (one-shot prover) and
zkfarm-testkey (insecure test keys).
.
The package creates the system user zkfarm and /var/lib/zkfarm, and installs
a hardened systemd unit and an LSB init script; it starts nothing.")
set(CPACK_DEBIAN_PACKAGE_SECTION misc)
set(CPACK_DEBIAN_PACKAGE_PRIORITY optional)
set(CPACK_DEBIAN_FILE_NAME DEB-DEFAULT)  # zkfarm_VERSION_ARCH.deb
# Run the install with DESTDIR and PREFIX /usr, so that the paths filled in
# above, the unit folder and /etc come out as on a real install.
set(CPACK_SET_DESTDIR ON)
set(CPACK_INSTALL_PREFIX /usr)
set(CPACK_PACKAGING_INSTALL_PREFIX /usr)
# Runtime libraries through dpkg-shlibdeps (dpkg-dev); adduser for postinst.
set(CPACK_DEBIAN_PACKAGE_SHLIBDEPS ON)
set(CPACK_DEBIAN_PACKAGE_DEPENDS "adduser")
# The compilers and headers a witness generator is built with (circuit add,
# zkfarm-prove fullprove): without them zkfarm proves witnesses only.
set(CPACK_DEBIAN_PACKAGE_RECOMMENDS "logrotate, g++, nasm, wabt, libgmp-dev, nlohmann-json3-dev")
set(CPACK_STRIP_FILES ON)
set(CPACK_DEBIAN_PACKAGE_CONTROL_EXTRA
    ${PROJECT_SOURCE_DIR}/packaging/deb/conffiles
    ${PROJECT_SOURCE_DIR}/packaging/deb/postinst
    ${PROJECT_SOURCE_DIR}/packaging/deb/prerm
    ${PROJECT_SOURCE_DIR}/packaging/deb/postrm)
set(CPACK_DEBIAN_PACKAGE_CONTROL_STRICT_PERMISSION TRUE)
set(CPACK_SOURCE_GENERATOR TGZ)
set(CPACK_SOURCE_IGNORE_FILES "/\\\\.git/" "/build[^/]*/" "/node_modules/" "/\\\\.gpu/" "/\\\\.whl/")
include(CPack)
