-- Journal migration 1: the first schema (jobs, partitions, proofs, …).
-- A new journal runs every migration in one transaction (journal.cpp);
-- schema_migrations records each one applied.
CREATE TABLE jobs (
  id INTEGER PRIMARY KEY AUTOINCREMENT,
  priority INTEGER NOT NULL,
  zkey TEXT NOT NULL,
  out TEXT NOT NULL,
  slot_bytes INTEGER NOT NULL,
  n_public INTEGER NOT NULL,
  state TEXT NOT NULL,
  error TEXT NOT NULL DEFAULT '',
  submitted_ms INTEGER NOT NULL,
  started_ms INTEGER NOT NULL DEFAULT 0,
  finished_ms INTEGER NOT NULL DEFAULT 0
);
CREATE TABLE partitions (
  job INTEGER NOT NULL REFERENCES jobs(id) ON DELETE CASCADE,
  idx INTEGER NOT NULL,
  wtns TEXT NOT NULL,
  public_json TEXT NOT NULL,
  PRIMARY KEY (job, idx)
);
CREATE TABLE proofs (
  job INTEGER NOT NULL,
  idx INTEGER NOT NULL,
  proof BLOB NOT NULL,
  proved_ms INTEGER NOT NULL,
  synth_ms INTEGER NOT NULL,
  prove_ms INTEGER NOT NULL,
  PRIMARY KEY (job, idx),
  FOREIGN KEY (job, idx) REFERENCES partitions(job, idx) ON DELETE CASCADE
);
