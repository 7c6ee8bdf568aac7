#!/usr/bin/env bash
# The install rules, the systemd unit's hardening and the Debian package
# (cmake/install.cmake, scripts/init/, packaging/deb/; docs/install.md).
#
#   ZKFARM_BUILD_DIR=build ZKFARM_SOURCE_DIR=. bash tests/install/test_install.sh
#
# Reuses the binaries of the calling build (no rebuild) and installs nothing on
# the machine: everything goes to a temporary folder. Steps:
#   1. cmake --install with DESTDIR, prefix /usr/local, then /usr: every file
#      where docs/install.md says, nothing else, paths filled in per prefix.
#   2. systemd-analyze verify of the installed unit (--root: ExecStart must
#      exist), and systemd-analyze security --offline: exposure <= 4.0.
#   3. sh -n of the installed LSB script.
#   4. zkfarmd from the installed tree accepts the example config as it is
#      and with every key uncommented, finds its workers beside itself, and
#      the commented defaults are those of supervisor/config.hpp.
#   5. cpack -G DEB into a temporary folder; dpkg-deb -I/-c: files, conffiles,
#      maintainer scripts, dependencies (dpkg-shlibdeps ran). Not installed.
# Needs: cmake/cpack, systemd (systemd-analyze), dpkg-dev (dpkg-deb,
# dpkg-shlibdeps), file (cpack's DEB generator), binutils.
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

for tool in cmake:cmake cpack:cmake systemd-analyze:systemd dpkg-deb:dpkg dpkg-shlibdeps:dpkg-dev file:file; do
  command -v "${tool%%:*}" >/dev/null || die "${tool%%:*} is missing (Debian package ${tool#*:}; scripts/setup.sh installs it)"
done
[ -f "$build/CPackConfig.cmake" ] || die "$build has no CPackConfig.cmake (configure it with this source tree)"

bins="zkfarmd zkfarmctl zkfarm-api zkfarm-synth zkfarm-gpu zkfarm-prove zkfarm-testkey"

# ---------------------------------------------------------------- 1. install
# check_tree ROOT PREFIX UNITDIR: the files under ROOT are exactly the expected set.
check_tree() {
  local root=$1 prefix=$2 unitdir=$3
  local expected=() f
  for f in $bins; do expected+=("$prefix/bin/$f"); done
  expected+=("$unitdir/zkfarmd.service" "$unitdir/zkfarm-api.service" /etc/init.d/zkfarmd /etc/zkfarm/zkfarmd.toml /etc/logrotate.d/zkfarmd)
  for f in README.md LICENSE NOTICE copyright install.md operations.md configuration.md security.md kubernetes.md witness.md; do
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
  [ -x "$root/etc/init.d/zkfarmd" ] || fail "/etc/init.d/zkfarmd is not executable"
  # Nothing outside these places (docs/*.md may grow: any .md in the doc folder).
  local extra
  extra=$(cd "$root" && find . -type f -o -type l | sed 's|^\.||' | grep -v -E \
    "^($prefix/bin/[^/]+|$unitdir/zkfarmd\.service|$unitdir/zkfarm-api\.service|/etc/init\.d/zkfarmd|/etc/zkfarm/zkfarmd\.toml|/etc/logrotate\.d/zkfarmd|$prefix/share/doc/zkfarm/[^/]+|$prefix/share/zkfarm/(witgen|groth16)/[^/]+)$" || true)
  [ -z "$extra" ] || fail "unexpected files installed (prefix $prefix): $extra"
  for f in "$root$prefix/bin"/*; do
    case " $bins " in *" ${f##*/} "*) ;; *) fail "unexpected program $prefix/bin/${f##*/}" ;; esac
  done
  # Paths filled in for this prefix, no template left.
  grep -q "^ExecStart=$prefix/bin/zkfarmd --state-dir /var/lib/zkfarm --config /etc/zkfarm/zkfarmd.toml\$" \
    "$root$unitdir/zkfarmd.service" && ok "ExecStart is $prefix/bin/zkfarmd" || fail "ExecStart is not $prefix/bin/zkfarmd"
  grep -q "^DAEMON=$prefix/bin/zkfarmd\$" "$root/etc/init.d/zkfarmd" && grep -q "^CTL=$prefix/bin/zkfarmctl\$" "$root/etc/init.d/zkfarmd" &&
    ok "LSB script's DAEMON/CTL are in $prefix/bin" || fail "LSB script's DAEMON/CTL are not $prefix/bin/…"
  grep -q "^ExecStart=$prefix/bin/zkfarm-api --state-dir /var/lib/zkfarm " "$root$unitdir/zkfarm-api.service" &&
    ok "zkfarm-api's ExecStart is $prefix/bin/zkfarm-api" || fail "zkfarm-api's ExecStart is not $prefix/bin/zkfarm-api"
  if grep -n '@[A-Z_]*@' "$root$unitdir/zkfarmd.service" "$root$unitdir/zkfarm-api.service" "$root/etc/init.d/zkfarmd"; then fail "template placeholders left"; fi
}

step "cmake --install, prefix /usr/local (DESTDIR)"
root=$tmp/root
DESTDIR=$root cmake --install "$build" --prefix /usr/local >"$tmp/install.log" 2>&1 || { cat "$tmp/install.log"; die "cmake --install failed"; }
check_tree "$root" /usr/local /usr/local/lib/systemd/system
cmp -s "$root/etc/zkfarm/zkfarmd.toml" "$src/scripts/init/zkfarmd.toml" || fail "installed zkfarmd.toml differs from scripts/init/zkfarmd.toml"
unit=$root/usr/local/lib/systemd/system/zkfarmd.service

step "cmake --install, prefix /usr (DESTDIR): the unit in /lib/systemd/system, paths /usr/bin"
root_usr=$tmp/root-usr
DESTDIR=$root_usr cmake --install "$build" --prefix /usr >"$tmp/install-usr.log" 2>&1 || { cat "$tmp/install-usr.log"; die "cmake --install --prefix /usr failed"; }
check_tree "$root_usr" /usr /lib/systemd/system

step "an existing zkfarmd.toml is kept; the example lands beside it as .new"
echo 'log_level = "debug"' >"$root_usr/etc/zkfarm/zkfarmd.toml"
DESTDIR=$root_usr cmake --install "$build" --prefix /usr >"$tmp/install-again.log" 2>&1 || die "second cmake --install failed"
if grep -qx 'log_level = "debug"' "$root_usr/etc/zkfarm/zkfarmd.toml" && cmp -s "$root_usr/etc/zkfarm/zkfarmd.toml.new" "$src/scripts/init/zkfarmd.toml"; then
  ok "kept the operator's file, wrote zkfarmd.toml.new"
else
  fail "an existing /etc/zkfarm/zkfarmd.toml was overwritten or no .new was written"
fi

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
step "sh -n /etc/init.d/zkfarmd"
sh -n "$root/etc/init.d/zkfarmd" && ok "sh -n" || fail "sh -n /etc/init.d/zkfarmd"
grep -q '^### BEGIN INIT INFO' "$root/etc/init.d/zkfarmd" || fail "no LSB header"
grep -q -- '--chuid "\$RUN_AS:\$RUN_GROUP"' "$root/etc/init.d/zkfarmd" && grep -q '^RUN_AS=zkfarm$' "$root/etc/init.d/zkfarmd" &&
  ok "runs zkfarmd as zkfarm" || fail "the LSB script does not run zkfarmd as zkfarm"
if grep -nE '^[^#]*\b(pkill|killall)\b' "$root/etc/init.d/zkfarmd"; then fail "the LSB script uses pkill/killall"; fi

# ---------------------------------------------------------------- 4. the example config
step "the example config's commented defaults are zkfarmd's (supervisor/config.hpp)"
while IFS= read -r line; do
  key=${line%% = *}; key=${key#\#}; value=${line#* = }
  if [ "$value" = '""' ]; then
    grep -qE "std::string $key;|std::string $key = \"\";" "$src/supervisor/config.hpp" || fail "$key: default is not \"\" in config.hpp"
  else
    # A default may be a named constant of its owner (lease_seconds =
    # kDefaultLeaseSeconds, supervisor/ledger/lease.hpp): then the constant's value counts.
    const=$(grep -oE "\b$key = k[A-Za-z]+;" "$src/supervisor/config.hpp" | sed -E 's/.* = (k[A-Za-z]+);/\1/' || true)
    if [ -n "$const" ]; then
      grep -rqE "\b$const = $value;" "$src/supervisor" || fail "$key = $value: not the value of $const"
    else
      grep -qE "\b$key = $value;" "$src/supervisor/config.hpp" || fail "$key = $value: not the default in config.hpp"
    fi
  fi
done < <(grep -E '^#[a-z_]+ = ' "$root/etc/zkfarm/zkfarmd.toml")
n=$(grep -cE '^#?[a-z_]+ = ' "$root/etc/zkfarm/zkfarmd.toml")
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
step "zkfarmd accepts /etc/zkfarm/zkfarmd.toml as installed"
run_config "$root/etc/zkfarm/zkfarmd.toml"
step "zkfarmd accepts it with every key uncommented"
sed -E 's/^#([a-z_]+ = )/\1/' "$root/etc/zkfarm/zkfarmd.toml" >"$tmp/all-keys.toml"
run_config "$tmp/all-keys.toml"

# ---------------------------------------------------------------- 5. the package
step "cpack -G DEB (not installed)"
cpack -G DEB --config "$build/CPackConfig.cmake" -B "$tmp/pkg" >"$tmp/cpack.log" 2>&1 || { cat "$tmp/cpack.log"; die "cpack failed"; }
deb=$(ls "$tmp"/pkg/zkfarm_*.deb 2>/dev/null | head -n1 || true)
[ -n "$deb" ] || { cat "$tmp/cpack.log"; die "cpack made no zkfarm_*.deb"; }
ok "built $(basename "$deb")"
info=$(dpkg-deb -I "$deb")
printf '%s\n' "$info"
field() { dpkg-deb -f "$deb" "$1"; }
[ "$(field Package)" = zkfarm ] || fail "Package is not zkfarm"
[ "$(field Architecture)" = "$(dpkg --print-architecture)" ] || fail "Architecture is not $(dpkg --print-architecture)"
[ -n "$(field Version)" ] || fail "no Version"
[ -n "$(field Maintainer)" ] || fail "no Maintainer"
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
grep -q 'adduser --system' "$tmp/control/postinst" && grep -q 'addgroup --system' "$tmp/control/postinst" &&
  ok "postinst makes the system user and group" || fail "postinst does not create the zkfarm user"
if grep -nE '^[^#]*(systemctl|deb-systemd-invoke|invoke-rc\.d)[^#]*\b(start|enable)\b' "$tmp/control/postinst" | grep -v 'try-restart'; then
  fail "postinst starts or enables the service"
fi
grep -q 'ZKFARM_PURGE_STATE' "$tmp/control/postrm" || fail "postrm: no opt-in for removing /var/lib/zkfarm"

listing=$(dpkg-deb -c "$deb")
files=$(printf '%s\n' "$listing" | awk '$1 !~ /^d/ {print $6}' | sed 's|^\./|/|' | sort)
want=$( (for b in $bins; do echo "/usr/bin/$b"; done
         printf '%s\n' /lib/systemd/system/zkfarmd.service /lib/systemd/system/zkfarm-api.service /etc/init.d/zkfarmd /etc/zkfarm/zkfarmd.toml /etc/logrotate.d/zkfarmd
         (cd "$root_usr/usr/share/doc/zkfarm" && ls | sed 's|^|/usr/share/doc/zkfarm/|')
         (cd "$root_usr/usr/share/zkfarm/groth16" && ls | sed 's|^|/usr/share/zkfarm/groth16/|')
         cd "$root_usr/usr/share/zkfarm/witgen" && ls | sed 's|^|/usr/share/zkfarm/witgen/|') | sort)
if [ "$files" = "$want" ]; then ok "the package's files are the /usr install's ($(printf '%s\n' "$files" | wc -l) files)"; else
  diff <(printf '%s\n' "$want") <(printf '%s\n' "$files") >&2 || true
  fail "the package's files differ from the expected set (diff above: < expected, > in the package)"
fi
if printf '%s\n' "$listing" | awk '{print $2}' | grep -v -x 'root/root'; then fail "files not owned by root/root"; fi
dpkg-deb -x "$deb" "$tmp/data"
grep -q '^ExecStart=/usr/bin/zkfarmd ' "$tmp/data/lib/systemd/system/zkfarmd.service" &&
  ok "the package's unit runs /usr/bin/zkfarmd" || fail "the package's unit does not run /usr/bin/zkfarmd"
grep -q '^DAEMON=/usr/bin/zkfarmd$' "$tmp/data/etc/init.d/zkfarmd" &&
  ok "the package's LSB script runs /usr/bin/zkfarmd" || fail "the package's LSB script does not run /usr/bin/zkfarmd"
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
