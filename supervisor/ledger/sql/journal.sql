-- The SQLite journal's statements (journal.hpp), one place to read them:
-- each `-- name: X` becomes zkfarm::sql::journal::X (cmake/embed_sql.cmake).
-- ?n are bound in the C++ in the order the comment names them. The tables:
-- the numbered migrations journal_migration_N.sql (journal_schema.hpp).

-- name: count_objects
-- Tables and indexes: none in a new file.
SELECT count(*) FROM sqlite_master

-- name: has_table
-- ?1 name: whether the journal has that table (an older one may lack
-- `acknowledged` or `schema_migrations`).
SELECT count(*) FROM sqlite_master WHERE type = 'table' AND name = ?1

-- name: acknowledged_seq
-- The acknowledged transactions the journal holds (acked_mark.hpp).
SELECT seq FROM acknowledged WHERE id = 1

-- name: schema_version
-- The last migration applied.
SELECT coalesce(max(version), 1) FROM schema_migrations

-- name: create_schema_migrations
-- The record of migrations applied, made by the first one a journal runs.
CREATE TABLE IF NOT EXISTS schema_migrations (
  version INTEGER PRIMARY KEY,
  min_reader INTEGER NOT NULL,
  applied_ms INTEGER NOT NULL
)

-- name: record_migration
-- ?1 version, ?2 min_reader, ?3 applied_ms (wall clock: for the operator only).
INSERT OR REPLACE INTO schema_migrations (version, min_reader, applied_ms) VALUES (?1, ?2, ?3)

-- name: bump_acknowledged
-- One more transaction whose success a client hears of.
UPDATE acknowledged SET seq = seq + 1 WHERE id = 1

-- name: insert_job
-- ?1 priority, ?2 zkey, ?3 out, ?4 slot_bytes, ?5 n_public, ?6 submitted_ms
INSERT INTO jobs (priority, zkey, out, slot_bytes, n_public, state, submitted_ms)
VALUES (?, ?, ?, ?, ?, 'queued', ?)

-- name: insert_job_meta
-- ?1 job, ?2 owner_uid, ?3 owner_gid, ?4 zkey_source, ?5 zkey_sha256
INSERT INTO job_meta (job, owner_uid, owner_gid, zkey_source, zkey_sha256) VALUES (?, ?, ?, ?, ?)

-- name: insert_partition
-- ?1 job, ?2 index, ?3 wtns, ?4 public.json
INSERT INTO partitions (job, idx, wtns, public_json) VALUES (?, ?, ?, ?)

-- name: insert_job_inputs
-- ?1 job, ?2 circuit, ?3 generator
INSERT INTO job_inputs (job, circuit, generator) VALUES (?, ?, ?)

-- name: insert_partition_input
-- ?1 job, ?2 index, ?3 input copy, ?4 the path the client named
INSERT INTO partition_inputs (job, idx, input, source) VALUES (?, ?, ?, ?)

-- name: insert_proof
-- ?1 job, ?2 index, ?3 proof, ?4 proved_ms, ?5 synth_ms, ?6 prove_ms, ?7 queue_ms, ?8 verify_ms: a second proof
-- of a partition changes nothing.
INSERT OR IGNORE INTO proofs (job, idx, proof, proved_ms, synth_ms, prove_ms, queue_ms, verify_ms)
VALUES (?, ?, ?, ?, ?, ?, ?, ?)

-- name: set_delivery_ms
-- ?1 delivery_ms, ?2 job, ?3 index: zkfarmd wrote the partition's files (the job ended done).
UPDATE proofs SET delivery_ms = ? WHERE job = ? AND idx = ?

-- name: set_public_json
-- ?1 public.json, ?2 job, ?3 index: a partition of inputs, whose public signals came with its witness.
UPDATE partitions SET public_json = ? WHERE job = ? AND idx = ?

-- name: put_circuit
-- ?1 name, ?2 kind, ?3 generator, ?4 zkey_sha256, ?5 zkey_source, ?6 source, ?7 owner_uid, ?8 added_ms, ?9 n_vars, ?10 n_public
INSERT OR REPLACE INTO circuits (name, kind, generator, zkey_sha256, zkey_source, source, owner_uid, added_ms, n_vars, n_public)
VALUES (?, ?, ?, ?, ?, ?, ?, ?, ?, ?)

-- name: put_generator_inputs
-- ?1 generator, ?2 its input signals (JSON)
INSERT OR IGNORE INTO generator_inputs (generator, inputs) VALUES (?, ?)

-- name: put_generator_graph
-- ?1 generator, ?2 its graph's SHA-256
INSERT OR REPLACE INTO generator_graphs (generator, sha256) VALUES (?, ?)

-- name: remove_circuit
-- ?1 name
DELETE FROM circuits WHERE name = ?

-- name: drop_unused_generator_inputs
-- After a circuit is removed.
DELETE FROM generator_inputs WHERE generator NOT IN (SELECT generator FROM circuits);
DELETE FROM generator_graphs WHERE generator NOT IN (SELECT generator FROM circuits)

-- name: circuits
-- Every registered circuit with its generator's inputs.
SELECT name, kind, c.generator, zkey_sha256, zkey_source, source, owner_uid, added_ms, n_vars, n_public, coalesce(g.inputs, ''), coalesce(gg.sha256, '')
FROM circuits c
LEFT JOIN generator_inputs g ON g.generator = c.generator
LEFT JOIN generator_graphs gg ON gg.generator = c.generator
ORDER BY name

-- name: finish_job
-- ?1 state, ?2 error, ?3 finished_ms, ?4 job
UPDATE jobs SET state = ?, error = ?, finished_ms = ? WHERE id = ?

-- name: set_started
-- ?1 started_ms, ?2 job (kept if already set)
UPDATE jobs SET started_ms = ? WHERE id = ? AND started_ms = 0

-- name: load_jobs
-- Every job with who submitted it (a job of an older journal has no job_meta: root's).
SELECT id, priority, zkey, out, slot_bytes, n_public, state, error, submitted_ms, started_ms, finished_ms, coalesce(m.owner_uid, 0), coalesce(m.owner_gid, 0), coalesce(m.zkey_source, ''), coalesce(m.zkey_sha256, '')
FROM jobs
LEFT JOIN job_meta m ON m.job = jobs.id
ORDER BY id

-- name: load_job_inputs
-- Jobs of circom inputs: their circuit and generator.
SELECT job, circuit, generator FROM job_inputs

-- name: load_partitions
-- Every partition, whether it has a proof, and its input.
SELECT p.job, p.idx, p.wtns, q.proof IS NOT NULL, coalesce(q.synth_ms, 0), coalesce(q.prove_ms, 0), p.public_json, coalesce(i.input, ''), coalesce(i.source, '')
FROM partitions p
LEFT JOIN proofs q ON q.job = p.job AND q.idx = p.idx
LEFT JOIN partition_inputs i ON i.job = p.job AND i.idx = p.idx
ORDER BY p.job, p.idx

-- name: proof
-- ?1 job, ?2 index: the proof, public.json, and the stage times (NULL: not known)
SELECT q.proof, p.public_json, q.synth_ms, q.queue_ms, q.prove_ms, q.verify_ms, q.delivery_ms
FROM proofs q
JOIN partitions p ON p.job = q.job AND p.idx = q.idx
WHERE q.job = ? AND q.idx = ?

-- name: proof_before_3
-- proof, on a journal whose migration 3 has not run yet (it runs at the
-- first write, which a full disk may keep failing): the times it has.
SELECT q.proof, p.public_json, q.synth_ms, NULL, q.prove_ms, NULL, NULL
FROM proofs q
JOIN partitions p ON p.job = q.job AND p.idx = q.idx
WHERE q.job = ? AND q.idx = ?

-- name: prune
-- ?1 cutoff (Unix ms). finished_ms > 0 AND finished_ms < ?: a range of the jobs_finished index.
DELETE
FROM jobs
WHERE finished_ms > 0 AND finished_ms < ? AND state IN ('done', 'failed', 'cancelled')

-- name: probe
-- writable()'s real one-row write, touching no job.
UPDATE meta SET probes = probes + 1 WHERE id = 1
