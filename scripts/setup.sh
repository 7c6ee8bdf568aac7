#!/usr/bin/env bash
# Sets up a Debian 12 machine for zkfarm and builds it. Idempotent: packages
# already there are not reinstalled, node_modules is reused while package-lock.json
# is unchanged, and the build is incremental.
#   scripts/setup.sh            install what is missing, build everything into build/
#   ZKFARM_BUILD=farm scripts/setup.sh
#                               the farm's programs only (zkfarmd, its workers,
#                               zkfarmctl, zkfarm-prove): no tests, no CUDA kernels
#                               (the main job runs on the CPU; a few minutes less)
#   ZKFARM_BUILD=none scripts/setup.sh
#                               packages, users and npm only; no build (scripts/test.sh
#                               configures and times its builds itself)
# Needs root (or sudo) for apt-get. Environment: BUILD_DIR (default build),
# ZKFARM_SKIP_APT=1 to skip the package step.
set -euo pipefail
root=$(cd "$(dirname "$0")/.." && pwd)
build=${BUILD_DIR:-$root/build}

# Debian's packages the build and the tests need (design.md §8 lists the set
# that builds and links together on Debian 12).
packages=(
  build-essential cmake pkg-config git python3
  cppzmq-dev libzmq3-dev libboost-dev libspdlog-dev nlohmann-json3-dev
  libtomlplusplus-dev libcli11-dev libsqlite3-dev libsystemd-dev
  libgtest-dev libgmock-dev
  libssl-dev
  # libFuzzer targets (fuzz/, scripts/fuzz.sh) build with Debian's clang.
  clang libclang-rt-14-dev
  # libfaketime: the wall-clock jump test (tests/farm/test_faults.py).
  faketime
  # The install checks (tests/install): systemd-analyze verify/security on the
  # installed unit; the Debian package's build (debian/control's
  # Build-Depends: debhelper, help2man for the man pages, bash-completion for
  # dh_bash-completion, dpkg-dev) and lintian, which checks it.
  systemd file debhelper dpkg-dev help2man bash-completion lintian
  # The monitoring checks (tests/monitoring): promtool, from Prometheus.
  prometheus
  # Witness generators built from circom circuits (docs/witness.md): nasm and
  # GMP for circom --c output, wabt's wasm2c and runtime for circuit.wasm.
  nasm libgmp-dev wabt
  # The shared queue of several hosts (docs/cluster.md): libpq to build; the
  # server and psql for the tests, which start clusters of their own (the
  # package's cluster "main" is made but, as below, not started).
  libpq-dev postgresql-15
  # The seccomp filter circuit code runs under (witgen/sandbox.cpp).
  libseccomp-dev
  # xxHash's header: the witness graph plan's checksum (witgen/graph_plan.cpp).
  libxxhash-dev
  # Proving as a service (docs/api.md): cpp-httplib for zkfarmctl --api's
  # HTTPS client; openssl makes the tests' CA; python3-requests runs the
  # Python example of docs/api.md and the API's tests.
  libcpp-httplib-dev openssl python3-requests
)

sudo_if_needed() { if [ "$(id -u)" -eq 0 ]; then "$@"; else sudo "$@"; fi; }

if [ -z "${ZKFARM_SKIP_APT:-}" ]; then
  missing=()
  for p in "${packages[@]}"; do
    dpkg-query -W -f='${Status}' "$p" 2>/dev/null | grep -q "install ok installed" || missing+=("$p")
  done
  # Node.js and npm for snarkjs (the reference the tests verify against). A
  # machine that already has a node with npm (e.g. from NodeSource) keeps it.
  if ! command -v node >/dev/null 2>&1; then missing+=(nodejs npm);
  elif ! command -v npm >/dev/null 2>&1; then missing+=(npm); fi
  if [ ${#missing[@]} -gt 0 ]; then
    echo "setup: installing ${missing[*]}"
    export DEBIAN_FRONTEND=noninteractive
    # Packages such as prometheus start their service on install; setup wants
    # only their tools (promtool). policy-rc.d exit 101 tells invoke-rc.d and
    # deb-systemd-invoke not to start anything (Debian policy 9.3.3.1); one an
    # administrator put there is left alone.
    policy=/usr/sbin/policy-rc.d
    made_policy=
    if [ ! -e "$policy" ]; then
      printf '#!/bin/sh\nexit 101\n' | sudo_if_needed tee "$policy" >/dev/null
      sudo_if_needed chmod 755 "$policy"
      made_policy=1
    fi
    sudo_if_needed apt-get update -qq
    sudo_if_needed apt-get install -y -qq --no-install-recommends "${missing[@]}" >/dev/null
    if [ -n "$made_policy" ]; then sudo_if_needed rm -f "$policy"; fi
  fi
fi

# The unprivileged user circuit code runs as when zkfarmd runs as root
# (sandbox_user; docs/witness.md); the package's postinst makes it too.
if [ -z "${ZKFARM_SKIP_APT:-}" ] && ! getent passwd zkfarm-sandbox >/dev/null; then
  if command -v adduser >/dev/null 2>&1; then
    sudo_if_needed adduser --system --quiet --group --no-create-home --home /nonexistent \
      --shell /usr/sbin/nologin --gecos "zkfarm circuit sandbox" zkfarm-sandbox
  else  # a minimal image without Debian's adduser: shadow's useradd
    sudo_if_needed useradd --system --user-group --no-create-home --home-dir /nonexistent \
      --shell /usr/sbin/nologin --comment "zkfarm circuit sandbox" zkfarm-sandbox
  fi
fi

# snarkjs 0.7.6, circom2 and circomlib, pinned by package-lock.json.
stamp=$root/node_modules/.zkfarm-lock
if [ ! -f "$stamp" ] || ! cmp -s "$root/package-lock.json" "$stamp"; then
  echo "setup: npm ci (snarkjs, circom2, circomlib)"
  (cd "$root" && npm ci --no-audit --no-fund --loglevel=error)
  cp "$root/package-lock.json" "$stamp"
fi

if [ "${ZKFARM_BUILD:-all}" = none ]; then
  echo "setup: done (no build)"
  exit 0
fi
echo "setup: building into $build"
# The options are given every time: CMake keeps them in its cache, so a farm-only
# build must not leave the next full build without its tests or CUDA backend.
if [ "${ZKFARM_BUILD:-all}" = farm ]; then
  cmake -S "$root" -B "$build" -DCMAKE_BUILD_TYPE=Release -DZKFARM_TESTS=OFF -DZKFARM_CUDA=OFF >/dev/null
  cmake --build "$build" -j"$(nproc)" --target zkfarmd zkfarm-synth zkfarm-gpu zkfarmctl zkfarm-prove
  # Their --version's commit (a full build's target zkfarm_commit_stamp does this).
  cmake -DSRC="$root" -DDIR="$build/bin" -P "$root/version/stamp.cmake"
else
  cmake -S "$root" -B "$build" -DCMAKE_BUILD_TYPE=Release -DZKFARM_TESTS=ON -DZKFARM_CUDA=ON >/dev/null
  cmake --build "$build" -j"$(nproc)"
fi
echo "setup: done"
