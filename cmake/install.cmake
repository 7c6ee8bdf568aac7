# Install rules (docs/install.md). Included at the end of the top-level
# CMakeLists.txt. The Debian package is built from debian/ (dpkg-buildpackage),
# whose rules run this same install with prefix /usr.
#
#   cmake --install build --prefix /usr/local      # or DESTDIR=/tmp/root cmake --install build
#
# What goes where (PREFIX = the install prefix, SYSCONF = its configuration folder):
#   PREFIX/bin/                 zkfarmd, zkfarmctl, zkfarm-api, zkfarm-synth, zkfarm-gpu,
#                               zkfarm-prove, zkfarm-testkey (the workers beside zkfarmd:
#                               supervisor/config.cpp)
#   systemd unit folder         zkfarmd.service, zkfarm-api.service: /lib/systemd/system for
#                               PREFIX /usr (Debian 12's systemdsystemunitdir),
#                               PREFIX/lib/systemd/system otherwise (/usr/local/lib/systemd/system
#                               is on systemd's search path)
#   SYSCONF/init.d/zkfarmd      the LSB script
#   SYSCONF/zkfarm/zkfarmd.toml the example configuration
#   SYSCONF/logrotate.d/zkfarmd logrotate for /var/lib/zkfarm/zkfarmd.log
#   PREFIX/share/doc/zkfarm/    README.md, docs/*.md, LICENSE, NOTICE
#   PREFIX/share/zkfarm/        the witness generator hosts and the field headers
# SYSCONF is GNUInstallDirs' CMAKE_INSTALL_SYSCONFDIR ("etc") resolved with the
# prefix in force at install time, as GNUInstallDirs resolves it: /etc for
# PREFIX /usr (or /), PREFIX/etc for every other prefix, so that
# "cmake --install --prefix P" writes nothing outside P (issue 35). An absolute
# value is taken as it is: -DCMAKE_INSTALL_SYSCONFDIR=/etc makes a /usr/local
# install use the host's /etc (init.d and logrotate.d are read only there).
# DESTDIR applies to every path.
#
# Files under SYSCONF are the administrator's once there: an existing
# zkfarmd.toml, init.d/zkfarmd or logrotate.d/zkfarmd that differs from this
# build's is never replaced (a stale init script of an older install would
# otherwise silently change, or a changed one be lost). The new
# configuration lands beside it as zkfarmd.toml.new; the new init script and
# logrotate file are not installed (a second file in init.d or logrotate.d
# would be read too) and the message names the copy in the build folder.
#
# The unit's ExecStart and --config, and the LSB script's DAEMON and CONFIG, are
# filled in when installing, from the prefix in force then, so
# "cmake --install --prefix /usr" of a tree configured for /usr/local still
# writes /usr/bin/zkfarmd and /etc/zkfarm/zkfarmd.toml into them.

include(GNUInstallDirs)

set(ZKFARM_SYSTEMD_UNIT_DIR "" CACHE PATH
    "Absolute systemd system unit folder; empty: /lib/systemd/system for prefix /usr, PREFIX/lib/systemd/system otherwise")

install(TARGETS zkfarmd zkfarmctl zkfarm-api zkfarm-synth zkfarm-gpu zkfarm-prove zkfarm-testkey
        RUNTIME DESTINATION ${CMAKE_INSTALL_BINDIR})

file(GLOB ZKFARM_DOC_FILES CONFIGURE_DEPENDS ${PROJECT_SOURCE_DIR}/docs/*.md)
install(FILES ${PROJECT_SOURCE_DIR}/README.md ${ZKFARM_DOC_FILES} ${PROJECT_SOURCE_DIR}/docs/api_example.py
              ${PROJECT_SOURCE_DIR}/LICENSE ${PROJECT_SOURCE_DIR}/NOTICE
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

# Configure-time values for the install-time code below (install(CODE) blocks
# run in order, in one scope).
install(CODE "
set(_zkfarm_src \"${PROJECT_SOURCE_DIR}\")
set(_zkfarm_gen \"${PROJECT_BINARY_DIR}/zkfarm-install\")
set(_zkfarm_bindir \"${CMAKE_INSTALL_BINDIR}\")
set(_zkfarm_docdir \"${CMAKE_INSTALL_DOCDIR}\")
# CMAKE_INSTALL_SYSCONFDIR as configured, unless the install script is run
# with its own (cmake -DCMAKE_INSTALL_SYSCONFDIR=/etc -P cmake_install.cmake).
if(DEFINED CMAKE_INSTALL_SYSCONFDIR)
  set(_zkfarm_sysconfdir \"\${CMAKE_INSTALL_SYSCONFDIR}\")
else()
  set(_zkfarm_sysconfdir \"${CMAKE_INSTALL_SYSCONFDIR}\")
endif()
set(_zkfarm_unitdir \"${ZKFARM_SYSTEMD_UNIT_DIR}\")
")
install(CODE [[
  # Paths as installed, from the prefix in force now (cmake --install --prefix).
  cmake_path(ABSOLUTE_PATH _zkfarm_bindir BASE_DIRECTORY "${CMAKE_INSTALL_PREFIX}" NORMALIZE
             OUTPUT_VARIABLE ZKFARM_BINDIR)
  cmake_path(ABSOLUTE_PATH _zkfarm_docdir BASE_DIRECTORY "${CMAKE_INSTALL_PREFIX}" NORMALIZE
             OUTPUT_VARIABLE ZKFARM_DOCDIR)
  string(REGEX REPLACE "/$" "" _zkfarm_prefix "${CMAKE_INSTALL_PREFIX}")
  # SYSCONF: GNUInstallDirs' rule for CMAKE_INSTALL_FULL_SYSCONFDIR, applied
  # to the prefix in force now.
  if(IS_ABSOLUTE "${_zkfarm_sysconfdir}")
    set(ZKFARM_SYSCONFDIR "${_zkfarm_sysconfdir}")
  elseif(_zkfarm_prefix STREQUAL "/usr" OR _zkfarm_prefix STREQUAL "")
    set(ZKFARM_SYSCONFDIR "/${_zkfarm_sysconfdir}")
  else()
    set(ZKFARM_SYSCONFDIR "${_zkfarm_prefix}/${_zkfarm_sysconfdir}")
  endif()
  cmake_path(NORMAL_PATH ZKFARM_SYSCONFDIR)
  string(REGEX REPLACE "(.)/$" "\\1" ZKFARM_SYSCONFDIR "${ZKFARM_SYSCONFDIR}")
  string(REGEX REPLACE "/$" "" ZKFARM_BINDIR "${ZKFARM_BINDIR}")
  string(REGEX REPLACE "/$" "" ZKFARM_DOCDIR "${ZKFARM_DOCDIR}")
  if(_zkfarm_unitdir)
    set(_unitdir "${_zkfarm_unitdir}")
  elseif(_zkfarm_prefix STREQUAL "/usr")
    set(_unitdir "/lib/systemd/system")
  else()
    set(_unitdir "${_zkfarm_prefix}/lib/systemd/system")
  endif()
  configure_file("${_zkfarm_src}/scripts/init/zkfarmd.service.in" "${_zkfarm_gen}/zkfarmd.service" @ONLY)
  configure_file("${_zkfarm_src}/scripts/init/zkfarm-api.service.in" "${_zkfarm_gen}/zkfarm-api.service" @ONLY)
  configure_file("${_zkfarm_src}/scripts/init/zkfarmd.sysv.in" "${_zkfarm_gen}/zkfarmd" @ONLY)
  file(COPY_FILE "${_zkfarm_src}/scripts/init/zkfarmd.logrotate" "${_zkfarm_gen}/zkfarmd.logrotate" ONLY_IF_DIFFERENT)
  file(INSTALL DESTINATION "${_unitdir}" TYPE FILE FILES "${_zkfarm_gen}/zkfarmd.service" "${_zkfarm_gen}/zkfarm-api.service")

  # zkfarm_install_conffile(DIR NAME FROM TYPE NEW_NAME): FROM as DIR/NAME,
  # unless DIR/NAME exists (a file, a link, anything) with other contents:
  # then it is kept, and FROM goes to DIR/NEW_NAME (none: not installed).
  function(zkfarm_install_conffile dir name from type new_name)
    set(_path "$ENV{DESTDIR}${dir}/${name}")
    if(EXISTS "${_path}" OR IS_SYMLINK "${_path}")
      file(SHA256 "${from}" _new)
      if(IS_SYMLINK "${_path}" OR IS_DIRECTORY "${_path}")
        set(_old "")
      else()
        file(SHA256 "${_path}" _old)
      endif()
      if(NOT _old STREQUAL _new)
        if(new_name)
          message(STATUS "Keeping: ${_path} (yours); this build's is installed as $ENV{DESTDIR}${dir}/${new_name}")
          file(INSTALL DESTINATION "${dir}" TYPE ${type} RENAME ${new_name} FILES "${from}")
        else()
          message(STATUS "Keeping: ${_path} (yours); this build's is not installed (it is ${from})")
        endif()
        return()
      endif()
    endif()
    file(INSTALL DESTINATION "${dir}" TYPE ${type} RENAME ${name} FILES "${from}")
  endfunction()
  zkfarm_install_conffile("${ZKFARM_SYSCONFDIR}/init.d" zkfarmd "${_zkfarm_gen}/zkfarmd" PROGRAM "")
  zkfarm_install_conffile("${ZKFARM_SYSCONFDIR}/logrotate.d" zkfarmd "${_zkfarm_gen}/zkfarmd.logrotate" FILE "")
  zkfarm_install_conffile("${ZKFARM_SYSCONFDIR}/zkfarm" zkfarmd.toml "${_zkfarm_src}/scripts/init/zkfarmd.toml" FILE
                          zkfarmd.toml.new)
]])
