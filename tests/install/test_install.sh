#!/usr/bin/env bash
# The install rules, the systemd unit's hardening and the Debian package
# (cmake/install.cmake, scripts/init/, debian/; docs/install.md).
#
#   ZKFARM_BUILD_DIR=build ZKFARM_SOURCE_DIR=. bash tests/install/test_install.sh
#
# Reuses the binaries of the calling build (no rebuild) and installs nothing on
# the machine: everything goes to a temporary folder. Steps:
#   1. cmake --install with DESTDIR, prefix /usr/local, then /usr: every file
#      where docs/install.md says, nothing else, paths filled in per prefix;
#      cmake --install --prefix P (no DESTDIR) writes nothing outside P (the
#      host's /etc and unit folders unchanged), an existing init script and
#      logrotate file are never replaced; CMAKE_INSTALL_SYSCONFDIR=/etc.
#   2. systemd-analyze verify of the installed unit (--root: ExecStart must
#      exist), and systemd-analyze security --offline: exposure <= 4.0.
#   3. sh -n of the installed LSB script.
#   4. zkfarmd from the installed tree accepts the example config as it is
#      and with every key uncommented, finds its workers beside itself, and
#      the commented defaults are those of supervisor/config.hpp.
#   5. zkfarmctl's bash completion offers the verbs and options of
#      ctl/main.cpp.
#   6. dpkg-buildpackage -b from debian/ in a copy of the tree that shares this
#      build folder: nothing is compiled again; lintian --fail-on
#      error,warning; dpkg-deb -I/-c: files, man pages, completion,
#      conffiles, maintainer scripts, dependencies. Not installed.
# Needs: cmake, systemd (systemd-analyze), dpkg-dev, debhelper, help2man,
# bash-completion, lintian (scripts/setup.sh installs them).
# ZKFARM_MAX_EXPOSURE (default 4.0) is the bar for step 2.
# A && ok || fail: ok only prints, so fail runs exactly when A fails.
# shellcheck disable=SC2015
set -euo pipefail

build=${ZKFARM_BUILD_DIR:?set ZKFARM_BUILD_DIR to the build folder (CMake passes PROJECT_BINARY_DIR)}
src=${ZKFARM_SOURCE_DIR:?set ZKFARM_SOURCE_DIR to the source folder}
max_exposure=${ZKFARM_MAX_EXPOSURE:-4.0}
build=$(cd "$build" && pwd)
src=$(cd "$src" && pwd)

tmp=$(mktemp -d "${TMPDIR:-/tmp}/zkfarm-install-test.XXXXXX")
zkfarmd_pid=
cleanup() {
  if [ -n "$zkfarmd_pid" ] && kill -0 "$zkfarmd_pid" 2>/dev/null; then
    kill -TERM "$zkfarmd_pid" 2>/dev/null || true
    wait "$zkfarmd_pid" 2>/dev/null || true
  fi
  rm -rf "$tmp"
}
trap cleanup EXIT

failures=0
step() { printf '\n== %s\n' "$*"; }
ok() { printf 'ok: %s\n' "$*"; }
fail() { printf 'FAIL: %s\n' "$*" >&2; failures=$((failures + 1)); }
die() { printf 'FAIL: %s\n' "$*" >&2; exit 1; }

for tool in cmake:cmake systemd-analyze:systemd dpkg-deb:dpkg dpkg-buildpackage:dpkg-dev dh:debhelper \
            help2man:help2man lintian:lintian; do
  command -v "${tool%%:*}" >/dev/null || die "${tool%%:*} is missing (Debian package ${tool#*:}; scripts/setup.sh installs it)"
done
[ -f /usr/share/bash-completion/bash_completion ] || die "bash-completion is missing (scripts/setup.sh installs it)"
[ -f "$build/cmake_install.cmake" ] || die "$build has no cmake_install.cmake (configure it with this source tree)"

bins="zkfarmd zkfarmctl zkfarm-api zkfarm-synth zkfarm-gpu zkfarm-prove zkfarm-testkey"

# ---------------------------------------------------------------- 1. install
# check_tree ROOT PREFIX UNITDIR ETC: the files under ROOT are exactly the
# expected set; ETC is the configuration folder the prefix implies.
check_tree() {
  local root=$1 prefix=$2 unitdir=$3 etc=$4
  local expected=() f
  for f in $bins; do expected+=("$prefix/bin/$f"); done
  expected+=("$unitdir/zkfarmd.service" "$unitdir/zkfarm-api.service" "$etc/init.d/zkfarmd" "$etc/zkfarm/zkfarmd.toml" "$etc/logrotate.d/zkfarmd")
  for f in README.md LICENSE NOTICE install.md operations.md configuration.md security.md kubernetes.md witness.md; do
    expected+=("$prefix/share/doc/zkfarm/$f")
  done
  for f in generator_host.hpp input_json.hpp input_json.cpp wtns_writer.hpp native_main.cpp wasm_host.cpp fr_inline.hpp \
           graph_recorder.cpp graph_hooks.hpp graph_format.hpp graph_ops.hpp; do
    expected+=("$prefix/share/zkfarm/witgen/$f")
  done
  for f in field.hpp mont_mul_x86.hpp bn254.hpp bls12_381.hpp curve.hpp curve_id.hpp fp2.hpp xyzz_formulas.hpp hd.hpp; do  # the witness graph recorder's field arithmetic
    expected+=("$prefix/share/zkfarm/groth16/$f")
  done
  for f in "${expected[@]}"; do
    if [ -f "$root$f" ]; then ok "installed $f"; else fail "missing $f (prefix $prefix)"; fi
  done
  for f in $bins; do
    [ -x "$root$prefix/bin/$f" ] || fail "$prefix/bin/$f is not executable"
  done
  [ -x "$root$etc/init.d/zkfarmd" ] || fail "$etc/init.d/zkfarmd is not executable"
  # Nothing outside these places (docs/*.md may grow: any .md in the doc folder).
  local extra
  extra=$(cd "$root" && find . -type f -o -type l | sed 's|^\.||' | grep -v -E \
    "^($prefix/bin/[^/]+|$unitdir/zkfarmd\.service|$unitdir/zkfarm-api\.service|$etc/init\.d/zkfarmd|$etc/zkfarm/zkfarmd\.toml|$etc/logrotate\.d/zkfarmd|$prefix/share/doc/zkfarm/[^/]+|$prefix/share/zkfarm/(witgen|groth16)/[^/]+)$" || true)
  [ -z "$extra" ] || fail "unexpected files installed (prefix $prefix): $extra"
  for f in "$root$prefix/bin"/*; do
    case " $bins " in *" ${f##*/} "*) ;; *) fail "unexpected program $prefix/bin/${f##*/}" ;; esac
  done
  # Paths filled in for this prefix, no template left.
  grep -q "^ExecStart=$prefix/bin/zkfarmd --state-dir /var/lib/zkfarm --config $etc/zkfarm/zkfarmd.toml\$" \
    "$root$unitdir/zkfarmd.service" && ok "ExecStart is $prefix/bin/zkfarmd --config $etc/zkfarm/zkfarmd.toml" ||
    fail "ExecStart is not $prefix/bin/zkfarmd --config $etc/zkfarm/zkfarmd.toml"
  grep -q "^DAEMON=$prefix/bin/zkfarmd\$" "$root$etc/init.d/zkfarmd" && grep -q "^CTL=$prefix/bin/zkfarmctl\$" "$root$etc/init.d/zkfarmd" &&
    grep -q "^CONFIG=$etc/zkfarm/zkfarmd.toml\$" "$root$etc/init.d/zkfarmd" &&
    ok "LSB script's DAEMON/CTL are in $prefix/bin, CONFIG in $etc" || fail "LSB script's DAEMON/CTL are not $prefix/bin/… or CONFIG not $etc/…"
  grep -q "^ExecStart=$prefix/bin/zkfarm-api --state-dir /var/lib/zkfarm .*--tls-cert $etc/zkfarm/api.pem " "$root$unitdir/zkfarm-api.service" &&
    ok "zkfarm-api's ExecStart is $prefix/bin/zkfarm-api" || fail "zkfarm-api's ExecStart is not $prefix/bin/zkfarm-api with $etc/zkfarm/api.pem"
  if grep -n '@[A-Z_]*@' "$root$unitdir/zkfarmd.service" "$root$unitdir/zkfarm-api.service" "$root$etc/init.d/zkfarmd"; then fail "template placeholders left"; fi
}

step "cmake --install, prefix /usr/local (DESTDIR): configuration in /usr/local/etc"
root=$tmp/root
DESTDIR=$root cmake --install "$build" --prefix /usr/local >"$tmp/install.log" 2>&1 || { cat "$tmp/install.log"; die "cmake --install failed"; }
check_tree "$root" /usr/local /usr/local/lib/systemd/system /usr/local/etc
cmp -s "$root/usr/local/etc/zkfarm/zkfarmd.toml" "$src/scripts/init/zkfarmd.toml" || fail "installed zkfarmd.toml differs from scripts/init/zkfarmd.toml"
unit=$root/usr/local/lib/systemd/system/zkfarmd.service
lsb=$root/usr/local/etc/init.d/zkfarmd
conf=$root/usr/local/etc/zkfarm/zkfarmd.toml

step "cmake --install, prefix /usr (DESTDIR): the unit in /lib/systemd/system, paths /usr/bin, /etc"
root_usr=$tmp/root-usr
DESTDIR=$root_usr cmake --install "$build" --prefix /usr >"$tmp/install-usr.log" 2>&1 || { cat "$tmp/install-usr.log"; die "cmake --install --prefix /usr failed"; }
check_tree "$root_usr" /usr /lib/systemd/system /etc

step "an existing zkfarmd.toml is kept; the example lands beside it as .new"
echo 'log_level = "debug"' >"$root_usr/etc/zkfarm/zkfarmd.toml"
DESTDIR=$root_usr cmake --install "$build" --prefix /usr >"$tmp/install-again.log" 2>&1 || die "second cmake --install failed"
if grep -qx 'log_level = "debug"' "$root_usr/etc/zkfarm/zkfarmd.toml" && cmp -s "$root_usr/etc/zkfarm/zkfarmd.toml.new" "$src/scripts/init/zkfarmd.toml"; then
  ok "kept the operator's file, wrote zkfarmd.toml.new"
else
  fail "an existing /etc/zkfarm/zkfarmd.toml was overwritten or no .new was written"
fi

step "cmake --install --prefix P writes nothing outside P"
# What an install outside P would touch on this machine: a listing with the
# modification time and size of each, before and after.
host_listing() {
  local d
  for d in /etc/init.d/zkfarmd /etc/logrotate.d/zkfarmd /etc/zkfarm /etc/default/zkfarmd \
           /lib/systemd/system /usr/lib/systemd/system /usr/local/lib/systemd/system /etc/systemd/system \
           /usr/local/etc /usr/local/bin; do
    echo "$d:"
    if [ -e "$d" ] || [ -L "$d" ]; then
      find "$d" -maxdepth 2 -name '*zkfarm*' -printf '%p %y %s %T@\n' 2>/dev/null | sort
    fi
  done
}
host_listing >"$tmp/host.before"
prefix=$tmp/prefix
cmake --install "$build" --prefix "$prefix" >"$tmp/install-prefix.log" 2>&1 || { cat "$tmp/install-prefix.log"; die "cmake --install --prefix $prefix failed"; }
host_listing >"$tmp/host.after"
if cmp -s "$tmp/host.before" "$tmp/host.after"; then
  ok "the host's /etc/init.d, /etc/logrotate.d, /etc/zkfarm and unit folders are as they were"
else
  diff "$tmp/host.before" "$tmp/host.after" >&2 || true
  fail "cmake --install --prefix $prefix changed something outside it (diff above)"
fi
outside=$(grep -E '^-- (Installing|Up-to-date): ' "$tmp/install-prefix.log" | sed -E 's/^-- [A-Za-z-]+: //' | grep -v "^$prefix/" || true)
[ -z "$outside" ] && ok "every path cmake installed is under $prefix" || fail "installed outside $prefix: $outside"
grep -q "^ExecStart=$prefix/bin/zkfarmd .*--config $prefix/etc/zkfarm/zkfarmd.toml\$" "$prefix/lib/systemd/system/zkfarmd.service" &&
  grep -q "^DAEMON=$prefix/bin/zkfarmd\$" "$prefix/etc/init.d/zkfarmd" && grep -q "^CONFIG=$prefix/etc/zkfarm/zkfarmd.toml\$" "$prefix/etc/init.d/zkfarmd" &&
  [ -f "$prefix/etc/logrotate.d/zkfarmd" ] && [ -f "$prefix/etc/zkfarm/zkfarmd.toml" ] &&
  ok "unit, LSB script, logrotate file and config in $prefix, naming $prefix/etc/zkfarm/zkfarmd.toml" ||
  fail "the install under $prefix is not where docs/install.md says"

step "an existing init script or logrotate file is never replaced"
printf '#!/bin/sh\n# an administrator\x27s script\nexit 0\n' >"$prefix/etc/init.d/zkfarmd"
echo '# the administrator changed this' >>"$prefix/etc/logrotate.d/zkfarmd"
cp "$prefix/etc/init.d/zkfarmd" "$tmp/init.mine"; cp "$prefix/etc/logrotate.d/zkfarmd" "$tmp/logrotate.mine"
cmake --install "$build" --prefix "$prefix" >"$tmp/install-prefix2.log" 2>&1 || { cat "$tmp/install-prefix2.log"; die "second cmake --install --prefix $prefix failed"; }
cmp -s "$prefix/etc/init.d/zkfarmd" "$tmp/init.mine" && ok "init.d/zkfarmd kept" || fail "an existing init.d/zkfarmd was replaced"
cmp -s "$prefix/etc/logrotate.d/zkfarmd" "$tmp/logrotate.mine" && ok "logrotate.d/zkfarmd kept" || fail "an existing logrotate.d/zkfarmd was replaced"
grep -q "Keeping: $prefix/etc/init.d/zkfarmd" "$tmp/install-prefix2.log" && ok "the install says so" || fail "no 'Keeping' message for init.d/zkfarmd"
# Nothing else was dropped into init.d or logrotate.d (both read every file there).
read_dirs=("$prefix/etc/init.d"/* "$prefix/etc/logrotate.d"/*)
[ "${#read_dirs[@]}" -eq 2 ] || fail "extra files in init.d or logrotate.d: ${read_dirs[*]}"
# The same files unchanged are installed again (an upgrade of an untouched install).
rm "$prefix/etc/init.d/zkfarmd"
cmake --install "$build" --prefix "$prefix" >/dev/null 2>&1 || die "third cmake --install failed"
grep -q "^DAEMON=$prefix/bin/zkfarmd\$" "$prefix/etc/init.d/zkfarmd" && ok "a removed init script is installed again" || fail "init.d/zkfarmd not installed again"

step "CMAKE_INSTALL_SYSCONFDIR=/etc: a /usr/local install with the host's /etc (DESTDIR)"
root_etc=$tmp/root-etc
DESTDIR=$root_etc cmake -DCMAKE_INSTALL_PREFIX=/usr/local -DCMAKE_INSTALL_SYSCONFDIR=/etc -P "$build/cmake_install.cmake" \
  >"$tmp/install-etc.log" 2>&1 || { cat "$tmp/install-etc.log"; die "cmake -P cmake_install.cmake with CMAKE_INSTALL_SYSCONFDIR=/etc failed"; }
check_tree "$root_etc" /usr/local /usr/local/lib/systemd/system /etc >/dev/null
[ -f "$root_etc/etc/init.d/zkfarmd" ] && [ ! -e "$root_etc/usr/local/etc" ] && ok "init.d, logrotate.d, zkfarm/ in /etc" || fail "CMAKE_INSTALL_SYSCONFDIR=/etc not honoured"

# ---------------------------------------------------------------- 2. the unit
step "systemd-analyze verify (the unit as installed, binaries at its ExecStart)"
# --root: the unit and its ExecStart are resolved inside the install tree; the
# host's own units (the targets it is ordered after) are copied in beside it.
mkdir -p "$root/lib/systemd"
for d in /lib/systemd/system /usr/lib/systemd/system; do
  if [ -e "$d/sysinit.target" ]; then cp -a "$d" "$root/lib/systemd/system"; break; fi
done
[ -e "$root/lib/systemd/system/sysinit.target" ] || die "no host units to verify against (is systemd installed?)"
verify() { systemd-analyze verify --root="$root" --man=no /usr/local/lib/systemd/system/zkfarmd.service 2>&1; }
if out=$(verify); then rc=0; else rc=$?; fi
if [ "$rc" -eq 0 ] && ! printf '%s' "$out" | grep -q .; then
  ok "systemd-analyze verify: no errors, no warnings"
else
  printf '%s\n' "$out" >&2
  fail "systemd-analyze verify (rc $rc, output above)"
fi
# The check is real: without the binary at ExecStart, verify must fail.
mv "$root/usr/local/bin/zkfarmd" "$tmp/zkfarmd.aside"
if out=$(verify); then fail "systemd-analyze verify passed without ExecStart's binary: the check checks nothing"; else ok "verify fails without the binary ($(printf '%s' "$out" | head -n1))"; fi
mv "$tmp/zkfarmd.aside" "$root/usr/local/bin/zkfarmd"
if out=$(systemd-analyze verify --root="$root" --man=no /usr/local/lib/systemd/system/zkfarm-api.service 2>&1) &&
   ! printf '%s' "$out" | grep -q .; then
  ok "systemd-analyze verify zkfarm-api.service: no errors, no warnings"
else
  printf '%s\n' "$out" >&2
  fail "systemd-analyze verify zkfarm-api.service (output above)"
fi

step "systemd-analyze security --offline=true: exposure <= $max_exposure"
security=$(cd "$tmp" && systemd-analyze security --offline=true --no-pager "$unit" 2>&1) || true
printf '%s\n' "$security" | grep -E '^✗|Overall' || true
exposure=$(printf '%s\n' "$security" | sed -n 's/.*Overall exposure level for zkfarmd\.service: \([0-9][0-9.]*\).*/\1/p')
if [ -z "$exposure" ]; then
  printf '%s\n' "$security" >&2
  fail "no 'Overall exposure level' in systemd-analyze security's output"
elif awk -v e="$exposure" -v m="$max_exposure" 'BEGIN { exit !(e <= m) }'; then
  ok "exposure $exposure <= $max_exposure"
else
  fail "exposure $exposure > $max_exposure"
fi

step "the unit keeps what docs/operations.md documents"
for line in Type=notify NotifyAccess=main KillMode=mixed TimeoutStopSec=780 TimeoutStartSec=180 Restart=on-failure \
            'RestartPreventExitStatus=78' \
            WatchdogSec=30 LimitMEMLOCK=infinity StateDirectory=zkfarm User=zkfarm Group=zkfarm \
            NoNewPrivileges=yes ProtectSystem=strict ProtectHome=read-only PrivateTmp=yes DevicePolicy=closed \
            'CapabilityBoundingSet=' 'SystemCallFilter=@system-service' UMask=0077; do
  grep -qx -- "$line" "$unit" && ok "$line" || fail "the unit lacks $line"
done
if grep -q '^ExecStop=' "$unit"; then fail "the unit has an ExecStop= (SIGTERM is the graceful stop)"; fi
if grep -qE '^(PrivateUsers|MemoryDenyWriteExecute|PrivateDevices)=(yes|true|1)' "$unit"; then
  fail "the unit sets a setting docs/install.md explains it must not"
fi

# ---------------------------------------------------------------- 3. LSB script
step "sh -n init.d/zkfarmd"
sh -n "$lsb" && ok "sh -n" || fail "sh -n init.d/zkfarmd"
grep -q '^### BEGIN INIT INFO' "$lsb" || fail "no LSB header"
grep -qE '^[[:space:]]*\. /lib/lsb/init-functions$' "$lsb" && ok "sources /lib/lsb/init-functions" || fail "the LSB script does not source /lib/lsb/init-functions"
grep -q -- '--chuid "\$RUN_AS:\$RUN_GROUP"' "$lsb" && grep -q '^RUN_AS=zkfarm$' "$lsb" &&
  ok "runs zkfarmd as zkfarm" || fail "the LSB script does not run zkfarmd as zkfarm"
if grep -nE '^[^#]*\b(pkill|killall)\b' "$lsb"; then fail "the LSB script uses pkill/killall"; fi

# ---------------------------------------------------------------- 4. the example config
step "the example config's commented defaults are zkfarmd's (supervisor/config.hpp)"
while IFS= read -r line; do
  key=${line%% = *}; key=${key#\#}; value=${line#* = }
  if [ "$value" = '""' ]; then
    grep -qE "std::string $key;|std::string $key = \"\";" "$src/supervisor/config.hpp" || fail "$key: default is not \"\" in config.hpp"
  else
    # A default may be a named constant of its owner (lease_seconds =
    # kDefaultLeaseSeconds, supervisor/model/lease.hpp): then the constant's value counts.
    const=$(grep -oE "\b$key = k[A-Za-z]+;" "$src/supervisor/config.hpp" | sed -E 's/.* = (k[A-Za-z]+);/\1/' || true)
    if [ -n "$const" ]; then
      grep -rqE "\b$const = $value;" "$src/supervisor" || fail "$key = $value: not the value of $const"
    elif [ "$value" = '"auto"' ] && grep -qE "std::optional<[a-z ]+> $key;" "$src/supervisor/config.hpp"; then
      :  # an unset optional: "auto", the worker's choice (gpu_msm_copies)
    else
      grep -qE "\b$key = $value;" "$src/supervisor/config.hpp" || fail "$key = $value: not the default in config.hpp"
    fi
  fi
done < <(grep -E '^#[a-z_]+ = ' "$conf")
n=$(grep -cE '^#?[a-z_]+ = ' "$conf")
known=$(sed -n '/known = {/,/};/p' "$src/supervisor/config.cpp" | grep -oE '"[a-z_]+"' | sort -u | wc -l)
[ "$n" -eq "$known" ] && ok "all $known keys are in the example" || fail "the example has $n keys, zkfarmd knows $known"

# run_config FILE: zkfarmd from the installed tree starts with FILE, is ready, stops.
run_config() {
  local conf=$1 state
  state=$(mktemp -d "$tmp/state.XXXXXX")
  "$root/usr/local/bin/zkfarmd" --config "$conf" --state-dir "$state" --backend cpu --gpu-devices none \
    --synth-workers 1 --arena-mib 16 --http "" >"$state.out" 2>&1 &
  zkfarmd_pid=$!
  local ctl="$root/usr/local/bin/zkfarmctl --state-dir $state"
  if ! $ctl ready --wait --timeout 60 -q >/dev/null 2>&1; then
    cat "$state.out" >&2
    fail "zkfarmd did not become ready with $conf"
  else
    ok "zkfarmd ready with $(basename "$conf")"
    local binaries
    binaries=$($ctl status --json | grep -oE '"binary": *"[^"]*"' | sed 's/.*"\([^"]*\)"$/\1/' | sort -u | tr '\n' ' ')
    [ "$binaries" = "$root/usr/local/bin/zkfarm-gpu $root/usr/local/bin/zkfarm-synth " ] &&
      ok "workers beside zkfarmd: $binaries" || fail "workers are not the installed ones: $binaries"
  fi
  $ctl stop >/dev/null 2>&1 || true
  local waited=0
  while kill -0 "$zkfarmd_pid" 2>/dev/null && [ $waited -lt 60 ]; do sleep 1; waited=$((waited + 1)); done
  if kill -0 "$zkfarmd_pid" 2>/dev/null; then
    fail "zkfarmd did not stop within 60 s of zkfarmctl stop"
    kill -KILL "$zkfarmd_pid" 2>/dev/null || true
  fi
  if wait "$zkfarmd_pid"; then ok "zkfarmd stopped cleanly"; else fail "zkfarmd exited $? (log: $state.out)"; cat "$state.out" >&2; fi
  zkfarmd_pid=
}
step "zkfarmd accepts zkfarm/zkfarmd.toml as installed"
run_config "$conf"
step "zkfarmd accepts it with every key uncommented"
sed -E 's/^#([a-z_]+ = )/\1/' "$conf" >"$tmp/all-keys.toml"
run_config "$tmp/all-keys.toml"

# ---------------------------------------------------------------- 5. bash completion
step "zkfarmctl's bash completion (scripts/zkfarmctl.bash-completion) offers ctl/main.cpp's verbs and options"
ctl_bin=$build/bin/zkfarmctl
# complete WORD...: what TAB offers after "zkfarmctl WORD..." (the last word
# is the one being completed), one a line, sorted.
complete_words() {
  ZKFARM_CTL=$ctl_bin ZKFARM_COMPLETION=$src/scripts/zkfarmctl.bash-completion bash -c '
    source /usr/share/bash-completion/bash_completion
    source "$ZKFARM_COMPLETION"
    COMP_WORDS=("$ZKFARM_CTL" "$@")
    COMP_CWORD=$#
    COMP_LINE="${COMP_WORDS[*]}"
    COMP_POINT=${#COMP_LINE}
    _zkfarmctl "$ZKFARM_CTL" "${COMP_WORDS[COMP_CWORD]}" "${COMP_WORDS[COMP_CWORD-1]}"
    printf "%s\n" "${COMPREPLY[@]}"' complete "$@" | sed '/^$/d' | sort
}
# subcommands PARENT: the verbs ctl/main.cpp defines on PARENT (app, circuit, token, tenant).
subcommands() { { grep -oE "\b$1(\.|->)add_subcommand\(\"[a-z-]+\"" "$src/ctl/main.cpp" || true; } | sed -E 's/.*\("([a-z-]+)"/\1/' | sort -u; }
# long_options VERB: the --options ctl/main.cpp gives VERB's object.
long_options() { { grep -oE "\b$1->add_(option|flag)\(\"[^\"]*\"" "$src/ctl/main.cpp" || true; } | { grep -oE -- '--[a-z-]+' || true; } | sort -u; }

want=$(subcommands app)
[ "$(printf '%s\n' "$want" | wc -l)" -ge 10 ] || fail "found only $(printf '%s\n' "$want" | wc -l) verbs in ctl/main.cpp: the test's parser is stale"
got=$(complete_words '')
[ "$got" = "$want" ] && ok "verbs: $(printf '%s' "$got" | tr '\n' ' ')" || fail "verbs offered: $(printf '%s' "$got" | tr '\n' ' '); ctl/main.cpp: $(printf '%s' "$want" | tr '\n' ' ')"
for parent in circuit token tenant; do
  want=$(subcommands "$parent")
  got=$(complete_words "$parent" '')
  [ -n "$want" ] && [ "$got" = "$want" ] && ok "$parent: $(printf '%s' "$got" | tr '\n' ' ')" ||
    fail "after '$parent': $(printf '%s' "$got" | tr '\n' ' '); ctl/main.cpp: $(printf '%s' "$want" | tr '\n' ' ')"
done
checked=0
for verb in $(subcommands app); do
  opts=$(long_options "$verb")
  [ -n "$opts" ] || continue
  got=$(complete_words --state-dir /var/lib/zkfarm "$verb" --)
  missing=$(comm -23 <(printf '%s\n' "$opts") <(printf '%s\n' "$got"))
  [ -z "$missing" ] || fail "zkfarmctl --state-dir DIR $verb --<TAB> lacks: $missing"
  checked=$((checked + 1))
done
[ "$checked" -ge 8 ] && ok "every option of $checked verbs completes after the verb" || fail "only $checked verbs with options checked"
complete_words stop -- | grep -qx -- --state-dir && ok "global options also after a verb" || fail "--state-dir not offered after 'stop'"
got=$(complete_words submit --priority '')
[ "$got" = "$(printf '%s\n' critical high low normal)" ] && ok "--priority: low normal high critical" || fail "--priority offers: $got"
mkdir -p "$tmp/comp/adir" && touch "$tmp/comp/afile"
got=$(cd "$tmp/comp" && complete_words --state-dir a)
[ "$got" = adir ] && ok "--state-dir completes folders only" || fail "--state-dir a<TAB> offers: $got"
got=$(cd "$tmp/comp" && complete_words submit --zkey a)
[ "$got" = "$(printf '%s\n' adir afile)" ] && ok "--zkey completes files" || fail "--zkey a<TAB> offers: $got"

# ---------------------------------------------------------------- 6. the package
step "dpkg-buildpackage -b from debian/, reusing $build (not installed)"
# A copy of the tree whose debian/ is its own (dpkg-buildpackage writes there
# and puts the .deb in the parent folder) and whose other entries link to the
# source; the build folder is this one.
pkgsrc=$tmp/pkg/zkfarm
mkdir -p "$pkgsrc"
for f in "$src"/* "$src"/.[!.]*; do
  case ${f##*/} in debian | build* | .git | node_modules) continue ;; esac
  [ -e "$f" ] && ln -s "$f" "$pkgsrc/${f##*/}"
done
cp -r "$src/debian" "$pkgsrc/debian"
rm -rf "$pkgsrc/debian/zkfarm" "$pkgsrc/debian/.debhelper" "$pkgsrc/debian/man" "$pkgsrc/debian/files"
stamp() { (cd "$build/bin" && for b in $bins; do stat -c '%n %Y %s' "$b"; done); }
stamp >"$tmp/bins.before"
started=$(date +%s)
# ZKFARM_PACKAGE_PTX_ONLY: scripts/test.sh's build holds its CUDA kernels as
# PTX only, which debian/rules refuses for a package people install; this one
# is built to be checked and linted, and installed nowhere.
if ! (cd "$pkgsrc" && ZKFARM_BUILD_DIR=$build ZKFARM_PACKAGE_PTX_ONLY=1 dpkg-buildpackage -b -us -uc) \
    >"$tmp/dpkg-buildpackage.log" 2>&1; then
  tail -n 40 "$tmp/dpkg-buildpackage.log" >&2
  die "dpkg-buildpackage failed (log above)"
fi
ok "dpkg-buildpackage in $(($(date +%s) - started)) s"
stamp >"$tmp/bins.after"
if grep -E 'Building (CXX|C|CUDA) object|Linking (CXX|CUDA) ' "$tmp/dpkg-buildpackage.log" >&2 || ! cmp -s "$tmp/bins.before" "$tmp/bins.after"; then
  fail "making the package compiled or linked again (lines above): the package must reuse the Release build"
else
  ok "nothing compiled or linked: the programs are the build's"
fi
deb=$(ls "$tmp"/pkg/zkfarm_*.deb 2>/dev/null | head -n1 || true)
[ -n "$deb" ] || { tail -n 40 "$tmp/dpkg-buildpackage.log"; die "dpkg-buildpackage made no zkfarm_*.deb"; }
ok "built $(basename "$deb")"

step "lintian --fail-on error,warning"
if lintian --fail-on error,warning --tag-display-limit 0 "$deb" >"$tmp/lintian.log" 2>&1; then
  ok "lintian: no errors, no warnings$(grep -c . "$tmp/lintian.log" | sed 's/^0$//; s/^\(..*\)$/ (\1 info or pedantic lines)/')"
  cat "$tmp/lintian.log"
else
  cat "$tmp/lintian.log" >&2
  fail "lintian found errors or warnings (above)"
fi

step "the package's fields, files and scripts"
info=$(dpkg-deb -I "$deb")
printf '%s\n' "$info"
field() { dpkg-deb -f "$deb" "$1"; }
[ "$(field Package)" = zkfarm ] || fail "Package is not zkfarm"
[ "$(field Architecture)" = "$(dpkg --print-architecture)" ] || fail "Architecture is not $(dpkg --print-architecture)"
version=$(sed -n 's/^CMAKE_PROJECT_VERSION:STATIC=//p' "$build/CMakeCache.txt")
[ -n "$version" ] && [ "$(field Version)" = "$version" ] && ok "Version $version, the project's (CMakeLists.txt)" ||
  fail "Version $(field Version) is not the project's ($version): update debian/changelog with the project's version"
maintainer=$(field Maintainer)
case $maintainer in *@example.* | *"<zkfarm@"* | '') fail "Maintainer is a placeholder: $maintainer" ;; *) ok "Maintainer: $maintainer" ;; esac
description=$(field Description)
[[ $description == *BLS12-381* && $description == *BN254* ]] && ok "Description names both curves" || fail "Description does not name BN254 and BLS12-381"
depends=$(field Depends)
depnames=$(printf '%s\n' "$depends" | tr ',|' '\n\n' | sed -E 's/^ +//; s/[ (].*//')
for dep in adduser libc6 libstdc++6 libzmq5 libsqlite3-0 libsystemd0; do
  printf '%s\n' "$depnames" | grep -qxF "$dep" && ok "Depends: $dep" || fail "Depends lacks $dep (did dpkg-shlibdeps run?): $depends"
done
mkdir "$tmp/control"
dpkg-deb -e "$deb" "$tmp/control"
printf '/etc/zkfarm/zkfarmd.toml\n/etc/init.d/zkfarmd\n/etc/logrotate.d/zkfarmd\n' | sort >"$tmp/conffiles.want"
sort "$tmp/control/conffiles" | cmp -s - "$tmp/conffiles.want" && ok "conffiles: the three /etc files" || fail "conffiles: $(tr '\n' ' ' <"$tmp/control/conffiles")"
for s in postinst prerm postrm; do
  [ -x "$tmp/control/$s" ] || fail "$s missing or not executable"
  sh -n "$tmp/control/$s" || fail "sh -n $s"
done
# The scripts with continued lines joined, so that one command is one line.
for s in postinst prerm postrm; do sed -e ':a' -e '/\\$/N; s/\\\n//; ta' "$tmp/control/$s" >"$tmp/control/$s.joined"; done
postinst=$tmp/control/postinst.joined
grep -q 'adduser --system' "$postinst" && grep -q 'addgroup --system --quiet zkfarm$' "$postinst" &&
  ok "postinst makes the system user and group zkfarm" || fail "postinst does not create the zkfarm user"
grep -q 'addgroup --system --quiet zkfarm-admin' "$postinst" && ok "postinst makes the operators group zkfarm-admin" || fail "postinst does not create group zkfarm-admin"
grep -qE 'adduser --system .*zkfarm-sandbox' "$postinst" && ok "postinst makes the sandbox user zkfarm-sandbox" || fail "postinst does not create zkfarm-sandbox"
grep -q 'update-rc.d zkfarmd defaults-disabled' "$postinst" && ok "postinst registers the LSB script disabled (dh_installinit)" || fail "no 'update-rc.d zkfarmd defaults-disabled' in postinst"
grep -q "deb-systemd-helper update-state 'zkfarmd.service'" "$postinst" && ok "postinst records the unit's state (dh_installsystemd)" || fail "dh_installsystemd's code is not in postinst"
grep -q "deb-systemd-invoke try-restart 'zkfarm-api.service' 'zkfarmd.service'" "$postinst" && ok "an upgrade try-restarts the units" ||
  fail "postinst does not try-restart the units on upgrade"
# Starting or enabling, except a try-restart and debhelper's re-enabling of a
# unit that the administrator had enabled (the line after "was-enabled").
starts=$(awk '/was-enabled/ { keep = 1; next }
              /^[^#]*(systemctl|deb-systemd-invoke|deb-systemd-helper|invoke-rc\.d|update-rc\.d)[^#]*[^a-z-](start|enable|defaults)([^a-z-]|$)/ &&
                !/try-restart|defaults-disabled/ && !(keep && /deb-systemd-helper enable/) { print FILENAME ":" FNR ": " $0 }
              /^[[:space:]]*fi[[:space:]]*$/ { keep = 0 }' "$postinst")
[ -z "$starts" ] && ok "postinst neither starts nor enables anything" || fail "postinst starts or enables the service: $starts"
grep -q 'deb-systemd-invoke stop zkfarm-api.service zkfarmd.service' "$tmp/control/prerm" && ok "prerm stops the units on removal" || fail "prerm does not stop the units"
grep -q 'ZKFARM_PURGE_STATE' "$tmp/control/postrm" || fail "postrm: no opt-in for removing /var/lib/zkfarm"
grep -q 'update-rc.d zkfarmd remove' "$tmp/control/postrm" && ok "postrm removes the init links on purge" || fail "postrm does not remove the init links"

listing=$(dpkg-deb -c "$deb")
files=$(printf '%s\n' "$listing" | awk '$1 !~ /^d/ {print $6}' | sed 's|^\./|/|' | sort)
want=$( (for b in $bins; do echo "/usr/bin/$b" "/usr/share/man/man1/$b.1.gz"; done | tr ' ' '\n'
         printf '%s\n' /lib/systemd/system/zkfarmd.service /lib/systemd/system/zkfarm-api.service /etc/init.d/zkfarmd /etc/zkfarm/zkfarmd.toml /etc/logrotate.d/zkfarmd
         printf '%s\n' /usr/share/bash-completion/completions/zkfarmctl /usr/share/doc/zkfarm/copyright /usr/share/doc/zkfarm/changelog.gz
         (cd "$root_usr/usr/share/doc/zkfarm" && ls | sed 's|^|/usr/share/doc/zkfarm/|; s|/LICENSE$|/LICENSE.gz|')
         (cd "$root_usr/usr/share/zkfarm/groth16" && ls | sed 's|^|/usr/share/zkfarm/groth16/|')
         cd "$root_usr/usr/share/zkfarm/witgen" && ls | sed 's|^|/usr/share/zkfarm/witgen/|') | sort)
if [ "$files" = "$want" ]; then ok "the package's files are the /usr install's, man pages, completion ($(printf '%s\n' "$files" | wc -l) files)"; else
  diff <(printf '%s\n' "$want") <(printf '%s\n' "$files") >&2 || true
  fail "the package's files differ from the expected set (diff above: < expected, > in the package)"
fi
if printf '%s\n' "$listing" | awk '{print $2}' | grep -v -x 'root/root'; then fail "files not owned by root/root"; fi
dpkg-deb -x "$deb" "$tmp/data"
grep -q '^ExecStart=/usr/bin/zkfarmd --state-dir /var/lib/zkfarm --config /etc/zkfarm/zkfarmd.toml$' "$tmp/data/lib/systemd/system/zkfarmd.service" &&
  ok "the package's unit runs /usr/bin/zkfarmd with /etc/zkfarm/zkfarmd.toml" || fail "the package's unit does not run /usr/bin/zkfarmd with /etc/zkfarm/zkfarmd.toml"
grep -q '^DAEMON=/usr/bin/zkfarmd$' "$tmp/data/etc/init.d/zkfarmd" &&
  ok "the package's LSB script runs /usr/bin/zkfarmd" || fail "the package's LSB script does not run /usr/bin/zkfarmd"
for b in $bins; do
  # The binaries as the package ships them: hardened by the project's CMake.
  dyn=$(readelf -d "$tmp/data/usr/bin/$b"); segments=$(readelf -lW "$tmp/data/usr/bin/$b")
  [[ $dyn == *BIND_NOW* && $segments == *GNU_RELRO* ]] || fail "/usr/bin/$b lacks full RELRO (BIND_NOW, GNU_RELRO)"
  # The man page: made from the program's own --help.
  page=$(zcat "$tmp/data/usr/share/man/man1/$b.1.gz")
  help=$("$build/bin/$b" --help 2>&1 || true)
  opt=$(grep -oE -- '--[a-z][a-z-]+' <<<"$help" | grep -v -x -- '--help' | head -n1 || true)
  [[ -n $opt && $page == *$'\n'"$b \\- "* && ${page//\\-/-} == *"$opt"* ]] ||
    fail "man page of $b: no NAME line '$b \\- …' or no $opt (from its --help)"
done
ok "each program: full RELRO, a man page from its --help"
[[ $(readelf --dyn-syms -W "$tmp/data/usr/bin/zkfarmd") =~ __(memcpy|snprintf|fprintf)_chk ]] && ok "zkfarmd calls fortified functions (_FORTIFY_SOURCE)" || fail "zkfarmd has no fortified (__*_chk) calls"
cmp -s "$tmp/data/usr/share/bash-completion/completions/zkfarmctl" "$src/scripts/zkfarmctl.bash-completion" &&
  ok "bash completion installed as completions/zkfarmctl" || fail "the package's completion is not scripts/zkfarmctl.bash-completion"
copyright=$tmp/data/usr/share/doc/zkfarm/copyright
grep -q '^Format: https://www.debian.org/doc/packaging-manuals/copyright-format/1.0/' "$copyright" &&
  grep -q '^License: Apache-2.0' "$copyright" && grep -q '/usr/share/common-licenses/Apache-2.0' "$copyright" &&
  ok "copyright: DEP-5, Apache-2.0" || fail "/usr/share/doc/zkfarm/copyright is not DEP-5 naming Apache-2.0"

echo
if [ "$failures" -ne 0 ]; then
  echo "test_install: $failures failure(s)" >&2
  exit 1
fi
echo "test_install: all checks passed (exposure $exposure)"
