#!/usr/bin/env bash
# The monitoring kit (docs/metrics.md, docs/monitoring/) against promtool and a
# real zkfarmd:
#   1. promtool check rules  docs/monitoring/zkfarm-alerts.yml
#   2. promtool test rules   docs/monitoring/zkfarm-alerts.test.yml
#   3. the dashboard parses; the alerts and the panels use only documented
#      metric names, their runbook anchors exist, and the panels' PromQL
#      parses (promtool check rules on them as recording rules)
#   4. a zkfarmd (CPU backend, one synthesis worker) proves one job of the
#      fixture chain; its /metrics passes `promtool check metrics` (format and
#      lint), has every documented metric and every name and label value the
#      alerts and the dashboard use, the histograms' buckets as short decimals
#      (le="0.1"), and the counts of that one job
#   5. `zkfarmctl stop`: zkfarmd exits 0
# Every check runs; the failures are listed at the end (exit 1).
#
# Run by ctest (tests/monitoring/CMakeLists.txt) with ZKFARM_BIN and
# ZKFARM_SOURCE_DIR; fixtures from ZKFARM_SHARED_FIXTURES (default
# $ZKFARM_SOURCE_DIR/tests/fixtures/shared). Needs promtool (Debian: prometheus)
# and python3 (standard library only).
set -euo pipefail

src=${ZKFARM_SOURCE_DIR:-$(cd "$(dirname "$0")/../.." && pwd)}
bin=${ZKFARM_BIN:-$src/build/bin}
fix=${ZKFARM_SHARED_FIXTURES:-$src/tests/fixtures/shared}
here=$src/tests/monitoring
mon=$src/docs/monitoring

if ! command -v promtool >/dev/null 2>&1; then
  echo "test_monitoring: promtool not found (Debian: apt-get install --no-install-recommends prometheus)" >&2
  exit 1
fi

tmp=$(mktemp -d "${TMPDIR:-/tmp}/zkfarm-monitoring.XXXXXX")
state=$tmp/state
zkfarmd_pid=""

ctl() { "$bin/zkfarmctl" --state-dir "$state" "$@"; }

cleanup() {
  local rc=$?
  # Only the zkfarmd this script started, by its pid: a graceful stop, then
  # SIGTERM, then SIGKILL (its workers follow it by their death signal).
  if [ -n "$zkfarmd_pid" ] && kill -0 "$zkfarmd_pid" 2>/dev/null; then
    ctl stop >/dev/null 2>&1 || kill -TERM "$zkfarmd_pid" 2>/dev/null || true
    for _ in $(seq 1 300); do
      kill -0 "$zkfarmd_pid" 2>/dev/null || break
      sleep 0.1
    done
    if kill -0 "$zkfarmd_pid" 2>/dev/null; then
      kill -TERM "$zkfarmd_pid" 2>/dev/null || true
      sleep 5
      kill -KILL "$zkfarmd_pid" 2>/dev/null || true
    fi
    wait "$zkfarmd_pid" 2>/dev/null || true
  fi
  rm -rf "$tmp"
  exit "$rc"
}
trap cleanup EXIT
trap 'exit 130' INT
trap 'exit 143' TERM

failed=()
check() {  # check NAME COMMAND...: runs it, records a failure, goes on
  local name=$1
  shift
  echo "== $name"
  if "$@"; then
    echo "ok: $name"
  else
    echo "FAILED: $name"
    failed+=("$name")
  fi
}

# ---------------------------------------------------------------- static
check "promtool check rules zkfarm-alerts.yml" promtool check rules "$mon/zkfarm-alerts.yml"
check "promtool test rules zkfarm-alerts.test.yml" promtool test rules "$mon/zkfarm-alerts.test.yml"
check "dashboard JSON parses" python3 -m json.tool "$mon/zkfarm-dashboard.json" /dev/null
check "alerts and dashboard use documented metrics only" \
  python3 "$here/check_monitoring.py" static "$src" "$tmp/dashboard-rules.yml"
if [ -f "$tmp/dashboard-rules.yml" ]; then
  check "dashboard PromQL parses" promtool check rules "$tmp/dashboard-rules.yml"
fi

# ---------------------------------------------------------------- live
free_port() {
  python3 -c 'import socket; s = socket.socket(); s.bind(("127.0.0.1", 0)); print(s.getsockname()[1])'
}

# GET http://127.0.0.1:PORT/PATH into a file; fails on anything but 200.
http_get() {
  python3 - "$1" "$2" "$3" <<'EOF'
import sys, urllib.request
port, path, out = sys.argv[1:4]
with urllib.request.urlopen(f"http://127.0.0.1:{port}{path}", timeout=10) as r:
    data = r.read()
with open(out, "wb") as f:
    f.write(data)
EOF
}

start_zkfarmd() {
  for _ in 1 2 3; do
    port=$(free_port)
    "$bin/zkfarmd" --state-dir "$state" --backend cpu --synth-workers 1 \
      --http "127.0.0.1:$port" --arena-mib 64 >"$tmp/zkfarmd.out" 2>&1 &
    zkfarmd_pid=$!
    for _ in $(seq 1 600); do  # 60 s
      if ! kill -0 "$zkfarmd_pid" 2>/dev/null; then
        break
      fi
      if ctl status >/dev/null 2>&1; then
        echo "zkfarmd pid $zkfarmd_pid, http 127.0.0.1:$port"
        return 0
      fi
      sleep 0.1
    done
    if kill -0 "$zkfarmd_pid" 2>/dev/null; then
      echo "zkfarmd did not answer zkfarmctl status within 60 s" >&2
      return 1
    fi
    wait "$zkfarmd_pid" || true
    zkfarmd_pid=""
    # Someone took the port between free_port and the bind: another port.
    grep -q "address already in use" "$tmp/zkfarmd.out" || break
    rm -rf "$state"
  done
  echo "zkfarmd exited at start:" >&2
  cat "$tmp/zkfarmd.out" >&2
  return 1
}

if ! start_zkfarmd; then
  failed+=("zkfarmd starts")
else
  job=""
  if job=$(ctl submit --zkey "$fix/chain.zkey" --wtns "$fix/chain.0.wtns" --out "$tmp/out"); then
    echo "job $job"
    check "zkfarmctl wait $job" ctl wait "$job" --timeout 300 --quiet
  else
    failed+=("zkfarmctl submit")
  fi

  # The snapshot /metrics serves follows the loop by up to 50 ms: scrape until
  # the finished job shows (at most 10 s), then check that scrape.
  scrape=$tmp/metrics.txt
  expected=(
    'zkfarm_jobs_accepted_total 1'
    'zkfarm_jobs_finished_total{state="done"} 1'
    'zkfarm_partitions_proved_total 1'
    'zkfarm_job_duration_seconds_count 1'
    'zkfarm_queue_wait_seconds_count 1'
    'zkfarm_synthesis_seconds_count 1'
    'zkfarm_proving_seconds_count 1'
    'zkfarm_ready 1'
  )
  for _ in $(seq 1 50); do
    http_get "$port" /metrics "$scrape" || true
    grep -qxF 'zkfarm_jobs_finished_total{state="done"} 1' "$scrape" 2>/dev/null && break
    sleep 0.2
  done
  if [ ! -s "$scrape" ]; then
    failed+=("GET /metrics")
  else
    echo "scraped $(grep -vc '^#' "$scrape") samples"
    promtool_metrics() {
      local out rc=0
      out=$(promtool check metrics <"$scrape" 2>&1) || rc=$?
      [ -z "$out" ] || echo "$out"
      [ "$rc" -eq 0 ] && [ -z "$out" ]
    }
    check "promtool check metrics (format and lint) on the scrape" promtool_metrics
    buckets() {
      grep -qE '^zkfarm_[a-z_]+_seconds_bucket\{le="0\.1"\} ' "$scrape" &&
        ! grep -E 'le="[^"]*[0-9]{8,}[^"]*"' "$scrape"
    }
    check 'histogram buckets as short decimals (le="0.1")' buckets
    check "scrape has every documented metric, every name and label value the alerts and dashboard use" \
      python3 "$here/check_monitoring.py" live "$src" "$scrape"
    counts() {
      local line ok=0
      for line in "${expected[@]}"; do
        grep -qxF "$line" "$scrape" || { echo "no line: $line"; ok=1; }
      done
      return "$ok"
    }
    check "the scrape counts the one job" counts
  fi

  # ------------------------------------------------------------ stop
  stop_zkfarmd() {
    ctl stop || return 1
    local pid=$zkfarmd_pid rc=0
    for _ in $(seq 1 1200); do  # 120 s
      kill -0 "$pid" 2>/dev/null || break
      sleep 0.1
    done
    if kill -0 "$pid" 2>/dev/null; then
      echo "zkfarmd still running 120 s after zkfarmctl stop"
      return 1
    fi
    wait "$pid" || rc=$?
    zkfarmd_pid=""
    echo "zkfarmd exited $rc"
    [ "$rc" -eq 0 ]
  }
  check "zkfarmctl stop; zkfarmd exits 0" stop_zkfarmd
fi

if [ ${#failed[@]} -gt 0 ]; then
  echo
  echo "zkfarmd's output:"
  tail -40 "$tmp/zkfarmd.out" 2>/dev/null || true
  echo
  echo "${#failed[@]} check(s) failed:"
  printf '  %s\n' "${failed[@]}"
  exit 1
fi
echo "all monitoring checks passed"
