-- The PostgreSQL queue's schema, version 1 (pg_schema.hpp: each
-- migration runs in one transaction, under an advisory lock).
-- Version 1. Notes on the choices:
--  - partitions.prio copies the job's priority so that the claim's ORDER BY
--    is one partial index (zkfarm_partitions_queue) over queued rows only;
--  - lease_expires is the database's clock (now()), so hosts whose clocks
--    disagree still agree on when a lease ends;
--  - txid (the writing transaction, pg_current_xact_id()) on jobs is the
--    change feed: a host asks for the rows committed between the snapshot it
--    saw last and a new one (pg_visible_in_snapshot), which, unlike a
--    sequence, misses no row whose transaction committed late;
--  - proofs has (job_id, idx) as primary key: a second proof of a partition
--    cannot be stored whatever a host does;
--  - a job's progress columns (done, attempts, stage times) are refreshed by
--    PgQueue::sweep, not by each proof, so that hosts proving partitions of
--    one job never queue on its row.
CREATE SEQUENCE zkfarm_lease_seq;
CREATE TABLE zkfarm_hosts (
  host_id text PRIMARY KEY,
  version text NOT NULL,
  devices text NOT NULL DEFAULT '',
  state text NOT NULL DEFAULT 'running',
  pid bigint NOT NULL DEFAULT 0,
  instance text NOT NULL DEFAULT '',
  started_at timestamptz NOT NULL DEFAULT now(),
  heartbeat_at timestamptz NOT NULL DEFAULT now()
);
CREATE TABLE zkfarm_jobs (
  id bigserial PRIMARY KEY,
  priority smallint NOT NULL,
  zkey_sha256 text NOT NULL,
  zkey_source text NOT NULL,
  out_dir text NOT NULL,
  owner_uid bigint NOT NULL,
  owner_gid bigint NOT NULL,
  submitted_host text NOT NULL,
  n_public integer NOT NULL,
  slot_bytes bigint NOT NULL,
  circuit text NOT NULL DEFAULT '',
  generator text NOT NULL DEFAULT '',
  generator_exe text NOT NULL DEFAULT '',
  generator_dat text NOT NULL DEFAULT '',
  k integer NOT NULL,
  done integer NOT NULL DEFAULT 0,
  attempts bigint NOT NULL DEFAULT 0,
  synth_ms bigint NOT NULL DEFAULT 0,
  prove_ms bigint NOT NULL DEFAULT 0,
  state text NOT NULL DEFAULT 'queued',
  error text NOT NULL DEFAULT '',
  submitted_ms bigint NOT NULL,
  started_ms bigint NOT NULL DEFAULT 0,
  finished_ms bigint NOT NULL DEFAULT 0,
  files text NOT NULL DEFAULT '',
  txid xid8 NOT NULL DEFAULT pg_current_xact_id()
);
CREATE INDEX zkfarm_jobs_txid ON zkfarm_jobs (txid);
CREATE INDEX zkfarm_jobs_live ON zkfarm_jobs (id) WHERE state IN ('queued', 'running');
CREATE INDEX zkfarm_jobs_finished ON zkfarm_jobs (finished_ms) WHERE state IN ('done', 'failed', 'cancelled');
CREATE TABLE zkfarm_partitions (
  job_id bigint NOT NULL REFERENCES zkfarm_jobs (id) ON DELETE CASCADE,
  idx integer NOT NULL,
  prio smallint NOT NULL,
  state text NOT NULL DEFAULT 'queued',
  wtns text NOT NULL DEFAULT '',
  wtns_sha256 text NOT NULL DEFAULT '',
  input bytea,
  input_name text NOT NULL DEFAULT '',
  public_json text NOT NULL DEFAULT '',
  lease_token bigint,
  lease_host text,
  lease_expires timestamptz,
  attempts integer NOT NULL DEFAULT 0,
  last_error text NOT NULL DEFAULT '',
  proved_by text NOT NULL DEFAULT '',
  synth_ms bigint NOT NULL DEFAULT 0,
  prove_ms bigint NOT NULL DEFAULT 0,
  PRIMARY KEY (job_id, idx)
);
CREATE INDEX zkfarm_partitions_queue ON zkfarm_partitions (prio DESC, job_id, idx) WHERE state = 'queued';
CREATE INDEX zkfarm_partitions_leases ON zkfarm_partitions (lease_expires) WHERE state = 'leased';
CREATE INDEX zkfarm_partitions_holder ON zkfarm_partitions (lease_host) WHERE state = 'leased';
CREATE INDEX zkfarm_partitions_unfinished ON zkfarm_partitions (job_id) WHERE state <> 'done';
CREATE INDEX zkfarm_partitions_retried ON zkfarm_partitions (attempts) WHERE state = 'queued' AND attempts > 0;
CREATE TABLE zkfarm_proofs (
  job_id bigint NOT NULL,
  idx integer NOT NULL,
  proof bytea NOT NULL,
  public_json text NOT NULL,
  proved_ms bigint NOT NULL,
  host text NOT NULL,
  lease_token bigint NOT NULL,
  PRIMARY KEY (job_id, idx),
  FOREIGN KEY (job_id, idx) REFERENCES zkfarm_partitions (job_id, idx) ON DELETE CASCADE
);
CREATE TABLE zkfarm_circuits (
  name text PRIMARY KEY,
  kind text NOT NULL,
  generator text NOT NULL,
  zkey_sha256 text NOT NULL,
  zkey_source text NOT NULL,
  source text NOT NULL,
  owner_uid bigint NOT NULL,
  added_ms bigint NOT NULL,
  n_vars bigint NOT NULL,
  n_public bigint NOT NULL,
  exe_sha256 text NOT NULL DEFAULT '',
  dat_sha256 text NOT NULL DEFAULT ''
);
INSERT INTO zkfarm_meta (key, value) VALUES ('swept_ms', '0')
