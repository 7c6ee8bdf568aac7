-- Journal migration 2, additive (min_reader 1): what zkfarmd of schema 1
-- added at every open before migrations were numbered, so each object may
-- already be there (IF NOT EXISTS, INSERT OR IGNORE). A zkfarmd of schema 1
-- that knows none of it reads and writes such a journal unchanged.
-- meta: one row whose counter writable() bumps (a real write that touches no
-- job). jobs_finished: prune's range scan, so an hourly prune with nothing
-- due reads a few index pages instead of every job. job_meta: who submitted a
-- job (outputs are written with that user's rights, also after a restart),
-- the key's path as the client named it and its content hash. A job of an
-- older journal has no row: it reads as root's, as it was written then.
-- job_inputs, partition_inputs: a job of circom inputs (docs/witness.md): its
-- circuit and generator, each partition's private input copy and the path the
-- client named (partitions.wtns is '' for them, and public_json is filled in
-- with the proof). circuits: the registered circuits (zkfarmctl circuit add).
-- acknowledged: one row counting the transactions whose success was told to a
-- client (add_job, put_circuit), matched at open against DB-acked
-- (acked_mark.hpp) so that a WAL cut after an acknowledged commit is found.
-- generator_inputs: a built generator's input signals (witgen::
-- signal_shapes_json), by its source hash: a fact of the generator, so a row
-- is never stale; a circuit without one (added by an older zkfarmd, which
-- also never writes here) is not shape-checked at submit.
CREATE TABLE IF NOT EXISTS meta (
  id INTEGER PRIMARY KEY CHECK (id = 1),
  probes INTEGER NOT NULL DEFAULT 0
);
INSERT OR IGNORE INTO meta (id, probes) VALUES (1, 0);
CREATE INDEX IF NOT EXISTS jobs_finished ON jobs (finished_ms);
CREATE TABLE IF NOT EXISTS job_meta (
  job INTEGER PRIMARY KEY REFERENCES jobs(id) ON DELETE CASCADE,
  owner_uid INTEGER NOT NULL,
  owner_gid INTEGER NOT NULL,
  zkey_source TEXT NOT NULL,
  zkey_sha256 TEXT NOT NULL
);
CREATE TABLE IF NOT EXISTS job_inputs (
  job INTEGER PRIMARY KEY REFERENCES jobs(id) ON DELETE CASCADE,
  circuit TEXT NOT NULL,
  generator TEXT NOT NULL
);
CREATE TABLE IF NOT EXISTS partition_inputs (
  job INTEGER NOT NULL,
  idx INTEGER NOT NULL,
  input TEXT NOT NULL,
  source TEXT NOT NULL,
  PRIMARY KEY (job, idx),
  FOREIGN KEY (job, idx) REFERENCES partitions(job, idx) ON DELETE CASCADE
);
CREATE TABLE IF NOT EXISTS acknowledged (
  id INTEGER PRIMARY KEY CHECK (id = 1),
  seq INTEGER NOT NULL DEFAULT 0
);
INSERT OR IGNORE INTO acknowledged (id, seq) VALUES (1, 0);
CREATE TABLE IF NOT EXISTS circuits (
  name TEXT PRIMARY KEY,
  kind TEXT NOT NULL,
  generator TEXT NOT NULL,
  zkey_sha256 TEXT NOT NULL,
  zkey_source TEXT NOT NULL,
  source TEXT NOT NULL,
  owner_uid INTEGER NOT NULL,
  added_ms INTEGER NOT NULL,
  n_vars INTEGER NOT NULL,
  n_public INTEGER NOT NULL
);
CREATE TABLE IF NOT EXISTS generator_inputs (
  generator TEXT PRIMARY KEY,
  inputs TEXT NOT NULL
);
-- generator_graphs: the SHA-256 of each generator's witness graph as built
-- and checked at `circuit add` (the graph file's own trailing digest); a
-- graph file of another digest is not used (issue 45).
CREATE TABLE IF NOT EXISTS generator_graphs (
  generator TEXT PRIMARY KEY,
  sha256 TEXT NOT NULL
);
