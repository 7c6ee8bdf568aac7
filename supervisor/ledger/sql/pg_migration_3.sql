-- Version 3, additive (hosts of 1 and 2 keep working): the maintenance turn
-- (docs/cluster.md "Maintenance"). One row: the host that runs the queue's
-- maintenance (expired leases back to the queue, pruning past retention)
-- until `expires`, on the database's clock; it renews the turn with each
-- pass, and a host that stops renewing it (dead, frozen, cut off) loses it
-- when it lapses, to the next host that passes. A row with a lease rather
-- than a session-level advisory lock: a frozen process's connection stays
-- open (its kernel still answers keepalives), so its lock would never go.
-- Hosts of 2 expire leases on every host as before: harmless (SKIP LOCKED),
-- only more work for the database during a rolling upgrade.
CREATE TABLE zkfarm_maintainer (
  id smallint PRIMARY KEY CHECK (id = 1),
  host_id text NOT NULL,
  expires timestamptz NOT NULL
)
