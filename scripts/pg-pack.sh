#!/usr/bin/env bash
# Packs Debian's PostgreSQL 15 server (initdb, pg_ctl, postgres, createdb,
# psql, its share/ and the modules initdb loads) with the libraries it and
# zkfarm-queue-sim use, for bench/queue_sim.sh on a machine that has no
# Debian packages (the lent H200 machine: 16 cores, for the 100-host
# simulation of docs/scaling.md):
#   scripts/pg-pack.sh [FILE]      (default .pgpack.tar.xz, ignored by git)
# On the other machine, unpack into D and run
#   ZKFARM_PG_BIN=D/usr/lib/postgresql/15/bin LD_LIBRARY_PATH=D/lib PATH=D/usr/lib/postgresql/15/bin:$PATH \
#     ZKFARM_QUEUE_SIM=D/bin/zkfarm-queue-sim bench/queue_sim.sh 100 20
# PostgreSQL finds share/ and lib/ relative to its binary, so the tree keeps
# Debian's layout under D.
set -euo pipefail
root=$(cd "$(dirname "$0")/.." && pwd)
out=${1:-$root/.pgpack.tar.xz}
pg=/usr/lib/postgresql/15
[ -x "$pg/bin/postgres" ] || { echo "pg-pack: no $pg/bin/postgres (apt-get install postgresql-15)" >&2; exit 2; }
cmake --build "$root/build" --target zkfarm-queue-sim -j"$(nproc)" >/dev/null
tmp=$(mktemp -d)
trap 'rm -rf "$tmp"' EXIT
mkdir -p "$tmp$pg/bin" "$tmp$pg/lib" "$tmp/usr/share/postgresql" "$tmp/lib" "$tmp/bin"
for b in postgres initdb pg_ctl createdb psql; do cp "$pg/bin/$b" "$tmp$pg/bin/"; done
cp "$pg"/lib/{plpgsql,dict_snowball}.so "$tmp$pg/lib/"
cp -r /usr/share/postgresql/15 "$tmp/usr/share/postgresql/"
cp "$root/build/bin/zkfarm-queue-sim" "$tmp/bin/"
strip "$tmp/bin/zkfarm-queue-sim"
ldd "$tmp$pg"/bin/* "$tmp$pg"/lib/*.so "$tmp/bin/zkfarm-queue-sim" 2>/dev/null | awk '$3 ~ /^\// {print $3}' | sort -u |
  grep -Ev '/(libc|libm|libstdc\+\+|libgcc_s|libpthread|libdl|librt|ld-linux[^/]*)\.so' |
  while read -r lib; do cp -L "$lib" "$tmp/lib/"; done
tar -C "$tmp" -cJf "$out" .
ls -la "$out"
