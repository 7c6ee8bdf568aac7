#!/usr/bin/env python3
"""supervisor/'s parts include downward only (../shared/style.md, "Layers"):
each file may include the model and the layers below its own, never one
above; a part that must reach one above emits an event the loop routes
(a Hooks callback wired in supervisor.cpp). Exits 1 naming every upward
include.

The layers, bottom to top, in the order of a partition's life through the
supervisor:
  model/      jobs and partitions, counters, a peer's credentials, lease bounds
  (ground)    the top-level utilities: config, clocks, the loop's inbox and
              background threads, pools, logging, signals, the state lock
  ledger/     the journal and the shared queue
  workers/    the children: spawn, table, link, release, the farm's lifecycle
  pipeline/   dispatch, proofs, delivery
  intake/     submits and circuits in
  status/     the status and metrics views, the HTTP endpoints
  control/    control.sock and the control API
  cluster/    the shared queue's mirror of this host
  (loop)      Supervisor (supervisor.*, its housekeeping and metrics), main
"""
import os
import re
import sys

ORDER = ["model", "(ground)", "ledger", "workers", "pipeline", "intake", "status", "control", "cluster", "(loop)"]
LOOP_FILES = {"supervisor.hpp", "supervisor.cpp", "housekeeping.cpp", "metrics_view.cpp", "main.cpp"}
INCLUDE = re.compile(r'^\s*#\s*include\s+"supervisor/([^"]+)"', re.M)


def layer(rel):
    """The layer of supervisor/REL."""
    parts = rel.split("/")
    if len(parts) == 1:
        return "(loop)" if parts[0] in LOOP_FILES else "(ground)"
    return parts[0]


def main():
    root = os.path.join(os.path.dirname(os.path.abspath(__file__)), "..", "supervisor")
    bad = []
    for folder, _, names in os.walk(root):
        for name in names:
            if not name.endswith((".hpp", ".cpp")):
                continue
            path = os.path.join(folder, name)
            rel = os.path.relpath(path, root).replace(os.sep, "/")
            src = layer(rel)
            if src not in ORDER:
                bad.append(f"supervisor/{rel}: folder {src}/ has no place in the layers (add it to ORDER)")
                continue
            with open(path, encoding="utf-8") as f:
                text = f.read()
            for target in INCLUDE.findall(text):
                dst = layer(target)
                if dst not in ORDER:
                    continue
                if ORDER.index(dst) > ORDER.index(src):
                    bad.append(f"supervisor/{rel} ({src}) includes supervisor/{target} ({dst}), a layer above it")
    for line in sorted(bad):
        print(line)
    if bad:
        print(f"{len(bad)} upward include(s): reach a part above through an event (a Hooks callback) instead")
        return 1
    print("supervisor/: every include goes downward (" + " < ".join(ORDER) + ")")
    return 0


if __name__ == "__main__":
    sys.exit(main())
