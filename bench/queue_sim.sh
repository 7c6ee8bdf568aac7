#!/usr/bin/env bash
# Scale of the shared queue (docs/scaling.md): starts a PostgreSQL server of
# its own on this machine (tests/cluster/pg_cluster.py), runs zkfarm-queue-sim
# (one simulated host as the baseline, then HOSTS hosts), stops the server.
#   bench/queue_sim.sh [HOSTS] [SECONDS] [extra zkfarm-queue-sim flags]
# Needs the build (scripts/setup.sh) and Debian's postgresql-15.
set -euo pipefail
root=$(cd "$(dirname "$0")/.." && pwd)
hosts=${1:-100}
seconds=${2:-20}
shift $(( $# > 2 ? 2 : $# ))
sim=${ZKFARM_QUEUE_SIM:-$root/build/bin/zkfarm-queue-sim}
[ -x "$sim" ] || cmake --build "$root/build" --target zkfarm-queue-sim -j"$(nproc)" >/dev/null
dir=$(mktemp -d /tmp/zkfarm-queue-sim.XXXXXX)
trap 'python3 "$root/tests/cluster/pg_cluster.py" stop "$dir/pg" >/dev/null 2>&1 || true; rm -rf "$dir"' EXIT
chmod 755 "$dir"
python3 "$root/tests/cluster/pg_cluster.py" start "$dir/pg" >/dev/null
echo "machine: $(nproc) cores, $(grep -m1 'model name' /proc/cpuinfo | cut -d: -f2 | sed 's/^ //'), $(date -u +%Y-%m-%dT%H:%MZ)"
echo "server:  $(psql -X -A -t -d "$(cat "$dir/pg/url")" -c 'select version()' | cut -d, -f1), fsync on, synchronous_commit on"
"$sim" --url "$(cat "$dir/pg/url")" --hosts "$hosts" --seconds "$seconds" "$@"
