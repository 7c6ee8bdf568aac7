-- The PostgreSQL queue's statements (pg_queue.hpp, docs/cluster.md), one
-- place to read them: each `-- name: X` becomes zkfarm::sql::pg_queue::X
-- (cmake/embed_sql.cmake). $n are libpq parameters, bound in the C++ in the
-- order the comment names them. The tables: pg_migration_*.sql.

-- name: session
-- At connect. A statement never waits long on a lock or a stuck server: a
-- claim skips locked rows, every other statement locks a few rows for
-- milliseconds. Claims, renewals and proofs commit without waiting for the
-- server's flush; what a client is told waits for it (durable).
SET client_min_messages = warning; SET synchronous_commit = off;
SET statement_timeout = '10s'; SET lock_timeout = '5s';
SET idle_in_transaction_session_timeout = '30s'

-- name: durable
-- In a transaction whose success a client hears of (a submit, a job's end).
SET LOCAL synchronous_commit = on

-- name: schema_lock
-- Migrations run one host at a time.
SELECT pg_advisory_lock(7262797346)

-- name: schema_unlock
SELECT pg_advisory_unlock(7262797346)

-- name: meta_table
CREATE TABLE IF NOT EXISTS zkfarm_meta (key text PRIMARY KEY, value text NOT NULL)

-- name: meta_value
-- $1 key
SELECT value FROM zkfarm_meta WHERE key = $1

-- name: set_schema_version
-- $1 schema_version, $2 min_reader_version: in the migration's transaction.
INSERT INTO zkfarm_meta (key, value) VALUES ('schema_version', $1), ('min_reader_version', $2)
ON CONFLICT (key) DO UPDATE SET value = EXCLUDED.value

-- name: register_host
-- $1 host_id, $2 version, $3 devices, $4 pid, $5 instance, $6 lease seconds.
-- One statement decides: a new row, or the row of a host that stopped, went
-- silent for a lease, or is this same instance (a restart) is taken over.
INSERT INTO zkfarm_hosts (host_id, version, devices, state, pid, instance)
VALUES ($1, $2, $3, 'running', $4, $5)
ON CONFLICT (host_id) DO UPDATE SET version = EXCLUDED.version, devices = EXCLUDED.devices,
  state = 'running', pid = EXCLUDED.pid, instance = EXCLUDED.instance, started_at = now(),
  heartbeat_at = now()
WHERE zkfarm_hosts.state = 'stopped' OR zkfarm_hosts.instance = EXCLUDED.instance
  OR zkfarm_hosts.heartbeat_at < now() - make_interval(secs => $6)
RETURNING 1

-- name: host_holder
-- $1 host_id: who holds it (the refusal's message).
SELECT pid, instance, extract(epoch from now() - heartbeat_at) FROM zkfarm_hosts WHERE host_id = $1

-- name: release_previous_run
-- $1 host_id. What an earlier run of this host held is not held by this one:
-- back to the queue at once, its attempt counted (it may be what killed that run).
WITH r AS (UPDATE zkfarm_partitions SET state = 'queued', lease_token = NULL, lease_host = NULL,
    lease_expires = NULL, last_error = 'host ' || $1 || ' restarted while holding it'
  WHERE state = 'leased' AND lease_host = $1 RETURNING 1)
SELECT count(*), pg_notify('zkfarm', 'work') FROM r

-- name: queue_id
-- $1 a new random id: kept if none was made before; (id, made by this call).
WITH i AS (INSERT INTO zkfarm_meta (key, value) VALUES ('queue_id', $1)
  ON CONFLICT (key) DO NOTHING RETURNING value)
SELECT value, true FROM i UNION ALL
SELECT value, false FROM zkfarm_meta WHERE key = 'queue_id' AND NOT EXISTS (SELECT 1 FROM i)

-- name: deregister
-- $1 host_id. A clean stop: the host is stopped, and its maintenance turn
-- ends now rather than after a lease, so another host takes it at its next pass.
WITH m AS (DELETE FROM zkfarm_maintainer WHERE host_id = $1)
UPDATE zkfarm_hosts SET state = 'stopped', heartbeat_at = now() WHERE host_id = $1

-- name: insert_job
-- $1 priority, $2 zkey_sha256, $3 zkey_source, $4 out_dir, $5 owner_uid,
-- $6 owner_gid, $7 submitted_host, $8 n_public, $9 slot_bytes, $10 circuit,
-- $11 generator, $12 k, $13 submitted_ms, $14 files, $15 generator_exe,
-- $16 generator_dat, $17 generator_graph, $18 generator_graph_slower.
INSERT INTO zkfarm_jobs (priority, zkey_sha256, zkey_source, out_dir, owner_uid, owner_gid,
  submitted_host, n_public, slot_bytes, circuit, generator, k, submitted_ms, files, generator_exe,
  generator_dat, generator_graph, generator_graph_slower)
VALUES ($1, $2, $3, $4, $5, $6, $7, $8, $9, $10, $11, $12, $13, $14, $15, $16, $17, $18)
RETURNING id

-- name: insert_witness_partitions
-- $1 job, $2 priority, $3..$6 arrays of index, witness path, its SHA-256,
-- public.json: up to 1000 partitions in one statement.
INSERT INTO zkfarm_partitions (job_id, idx, prio, wtns, wtns_sha256, public_json)
SELECT $1, u.idx, $2, u.wtns, u.sha, u.pub
FROM unnest($3::integer[], $4::text[], $5::text[], $6::text[]) AS u(idx, wtns, sha, pub)

-- name: insert_input_partition
-- $1 job, $2 index, $3 priority, $4 input.json's bytes (binary), $5 its
-- name as the client gave it, $6 public.json.
INSERT INTO zkfarm_partitions (job_id, idx, prio, input, input_name, public_json)
VALUES ($1, $2, $3, $4, $5, $6)

-- name: notify_work
SELECT pg_notify('zkfarm', 'work')

-- name: notify_job
SELECT pg_notify('zkfarm', 'job')

-- name: claim
-- $1 how many, $2 host_id, $3 lease seconds, $4 max_attempts.
-- SKIP LOCKED: a row another host is claiming right now is passed over,
-- never waited for. The jobs of what was claimed become running.
WITH c AS (SELECT job_id, idx FROM zkfarm_partitions WHERE state = 'queued' AND attempts < $4
  ORDER BY prio DESC, job_id, idx LIMIT $1 FOR UPDATE SKIP LOCKED),
u AS (UPDATE zkfarm_partitions p SET state = 'leased', lease_token = nextval('zkfarm_lease_seq'),
  lease_host = $2, lease_expires = now() + make_interval(secs => $3), attempts = p.attempts + 1
  FROM c WHERE p.job_id = c.job_id AND p.idx = c.idx
  RETURNING p.job_id, p.idx, p.lease_token, p.attempts, p.wtns, p.wtns_sha256, p.input, p.input_name),
j AS (UPDATE zkfarm_jobs SET state = 'running', txid = pg_current_xact_id()
  WHERE id IN (SELECT job_id FROM u) AND state = 'queued')
SELECT * FROM u

-- name: complete
-- $1 job, $2 index, $3 lease token, $4 proof (binary), $5 host_id,
-- $6 public.json ('' keeps the partition's), $7 proved_ms, $8 synth_ms, $9 prove_ms, $10 queue_ms,
-- $11 verify_ms.
-- One statement: the partition is done only under its current, unexpired
-- lease; only then is the proof inserted. The job's row is not touched per
-- proof (with 100 hosts on one job it would be a hot row every complete
-- waits on: docs/scaling.md): the sweep counts progress once a second, and
-- the job ends here when no other partition is left (the statement sees the
-- others as of its start, so two last proofs at once both leave it to the
-- sweep, a second later). Another unfinished partition: one probe of
-- zkfarm_partitions_unfinished. The hosts hear a job's end by NOTIFY.
WITH p AS (UPDATE zkfarm_partitions SET state = 'done', lease_token = NULL, lease_host = NULL,
    lease_expires = NULL, proved_by = $5, synth_ms = $8, prove_ms = $9, queue_ms = $10, verify_ms = $11,
    public_json = CASE WHEN $6 = '' THEN public_json ELSE $6 END
  WHERE job_id = $1 AND idx = $2 AND lease_token = $3 AND state = 'leased' AND lease_expires > now()
  RETURNING job_id, idx, public_json, attempts),
ins AS (INSERT INTO zkfarm_proofs (job_id, idx, proof, public_json, proved_ms, host, lease_token)
  SELECT job_id, idx, $4, public_json, $7, $5, $3 FROM p RETURNING job_id),
j AS (UPDATE zkfarm_jobs SET done = k, txid = pg_current_xact_id(), state = 'done', finished_ms = $7,
    attempts = (SELECT sum(attempts) FROM zkfarm_partitions WHERE job_id = $1),
    synth_ms = $8 + (SELECT coalesce(sum(synth_ms), 0) FROM zkfarm_partitions WHERE job_id = $1 AND idx <> $2),
    prove_ms = $9 + (SELECT coalesce(sum(prove_ms), 0) FROM zkfarm_partitions WHERE job_id = $1 AND idx <> $2)
  WHERE id = (SELECT job_id FROM ins) AND state IN ('queued', 'running') AND NOT EXISTS
    (SELECT 1 FROM zkfarm_partitions q WHERE q.job_id = $1 AND q.idx <> $2 AND q.state <> 'done')
  RETURNING state)
SELECT (SELECT count(*) FROM ins), (SELECT state FROM j),
  (SELECT count(*) FROM (SELECT pg_notify('zkfarm', 'job') FROM j) n)

-- name: why_not_stored
-- $1 job, $2 index: the partition as it is now, when complete stored nothing.
SELECT state, coalesce(lease_token, 0), coalesce(lease_host, ''),
  coalesce(lease_expires < now(), false), proved_by
FROM zkfarm_partitions WHERE job_id = $1 AND idx = $2

-- name: renew
-- $1 tokens (bigint[]), $2 host_id, $3 lease seconds, $4 the host's state.
-- Only a lease still current is extended; the heartbeat goes with it.
WITH r AS (UPDATE zkfarm_partitions SET lease_expires = now() + make_interval(secs => $3)
  WHERE lease_token = ANY($1::bigint[]) AND lease_host = $2 AND state = 'leased'
  AND lease_expires > now() RETURNING lease_token),
h AS (UPDATE zkfarm_hosts SET heartbeat_at = now(), state = $4 WHERE host_id = $2)
SELECT lease_token FROM r

-- name: release
-- $1 tokens (bigint[]), $2 host_id: queued again, the attempt not counted.
WITH r AS (UPDATE zkfarm_partitions SET state = 'queued', lease_token = NULL, lease_host = NULL,
    lease_expires = NULL, attempts = greatest(attempts - 1, 0)
  WHERE lease_token = ANY($1::bigint[]) AND lease_host = $2 AND state = 'leased' RETURNING 1)
SELECT count(*), pg_notify('zkfarm', 'work') FROM r

-- name: give_back
-- $1 token, $2 host_id, $3 the error: queued again, the attempt counted.
WITH r AS (UPDATE zkfarm_partitions SET state = 'queued', lease_token = NULL, lease_host = NULL,
    lease_expires = NULL, last_error = $3
  WHERE lease_token = $1 AND lease_host = $2 AND state = 'leased' RETURNING 1)
SELECT count(*), pg_notify('zkfarm', 'work') FROM r

-- name: expire_leases
-- $1 max_attempts, $2 host_id, $3 lease seconds.
-- Maintenance runs on one host (docs/cluster.md "Maintenance"): m takes the
-- maintenance turn, or keeps it, for a lease (the row of a host that stopped
-- renewing it lapses, and the next host to pass takes it over). A host that
-- does not hold the turn changes nothing else. The turn's row is locked until
-- the statement ends, so two hosts never both hold it at once.
-- Expired leases go back to the queue, or fail once their claims are spent
-- (and so do queued partitions whose claims were spent by give_back); the
-- caller fails the jobs of what failed. SKIP LOCKED: a row being completed or
-- renewed right now is left for the next pass.
WITH m AS (INSERT INTO zkfarm_maintainer (id, host_id, expires)
    VALUES (1, $2, now() + make_interval(secs => $3))
  ON CONFLICT (id) DO UPDATE SET host_id = EXCLUDED.host_id, expires = EXCLUDED.expires
  WHERE zkfarm_maintainer.host_id = EXCLUDED.host_id OR zkfarm_maintainer.expires < now()
  RETURNING 1),
e AS (SELECT job_id, idx FROM zkfarm_partitions WHERE state = 'leased' AND lease_expires < now()
  AND EXISTS (SELECT 1 FROM m) LIMIT 1000 FOR UPDATE SKIP LOCKED),
q AS (UPDATE zkfarm_partitions p SET
    state = CASE WHEN p.attempts >= $1 THEN 'failed' ELSE 'queued' END,
    last_error = 'the lease of host ' || p.lease_host || ' expired (claim ' || p.attempts || ')',
    lease_token = NULL, lease_host = NULL, lease_expires = NULL
  FROM e WHERE p.job_id = e.job_id AND p.idx = e.idx RETURNING p.job_id, p.idx, p.state, p.last_error)
SELECT job_id, idx, state, last_error, pg_notify('zkfarm', 'work') FROM q
UNION ALL
SELECT job_id, idx, 'failed', last_error, '' FROM zkfarm_partitions
  WHERE state = 'queued' AND attempts >= $1 AND EXISTS (SELECT 1 FROM m)

-- name: maintainer
-- The host holding the maintenance turn now, if any (status, tests).
SELECT host_id FROM zkfarm_maintainer WHERE id = 1 AND expires > now()

-- name: sweep_gate
-- One host a second sweeps: the one whose update of swept_ms wins. The gate
-- runs on the database's clock: a host whose clock is ahead (or jumped) must
-- not hold every other host's sweep off until it is caught up.
WITH t AS (SELECT (extract(epoch from clock_timestamp()) * 1000)::bigint AS now)
UPDATE zkfarm_meta SET value = t.now::text FROM t WHERE key = 'swept_ms'
AND value::bigint <= t.now - 1000 RETURNING 1

-- name: sweep
-- $1 now (Unix ms), the finished time of the jobs it ends.
-- One scan of the live jobs' partitions: their progress into the jobs' rows,
-- and the queue's counts ("queued leased done failed") for every host's
-- status view, so that 100 hosts do not each count them.
WITH s AS (SELECT p.job_id, count(*) FILTER (WHERE p.state = 'done') AS done,
    count(*) FILTER (WHERE p.state = 'queued') AS queued, count(*) FILTER (WHERE p.state = 'leased') AS leased,
    count(*) FILTER (WHERE p.state = 'failed') AS failed, sum(p.attempts) AS attempts,
    sum(p.synth_ms) AS synth, sum(p.prove_ms) AS prove FROM zkfarm_partitions p
  JOIN zkfarm_jobs j ON j.id = p.job_id WHERE j.state IN ('queued', 'running') GROUP BY p.job_id),
u AS (UPDATE zkfarm_jobs j SET done = s.done, attempts = s.attempts, synth_ms = s.synth, prove_ms = s.prove,
    state = CASE WHEN s.done >= j.k THEN 'done' ELSE j.state END,
    finished_ms = CASE WHEN s.done >= j.k THEN $1 ELSE j.finished_ms END, txid = pg_current_xact_id()
  FROM s WHERE j.id = s.job_id AND j.state IN ('queued', 'running')
  AND (j.done <> s.done OR j.attempts <> s.attempts) RETURNING j.state),
m AS (INSERT INTO zkfarm_meta (key, value) SELECT 'counts', concat_ws(' ', coalesce(sum(queued), 0),
    coalesce(sum(leased), 0), coalesce(sum(done), 0), coalesce(sum(failed), 0)) FROM s
  ON CONFLICT (key) DO UPDATE SET value = EXCLUDED.value)
SELECT count(*) FROM (SELECT pg_notify('zkfarm', 'job') FROM u WHERE state = 'done') n

-- name: fail_partition
-- $1 job, $2 index, $3 lease token, $4 the error: only under its lease.
UPDATE zkfarm_partitions SET state = 'failed', last_error = $4, lease_token = NULL, lease_host = NULL,
  lease_expires = NULL WHERE job_id = $1 AND idx = $2 AND lease_token = $3 AND state = 'leased'
RETURNING 1

-- name: finish_job
-- $1 job, $2 state, $3 error, $4 finished_ms (0: the database's clock now).
UPDATE zkfarm_jobs SET state = $2, error = $3, txid = pg_current_xact_id(),
  finished_ms = CASE WHEN $4::bigint > 0 THEN $4::bigint
    ELSE (extract(epoch from clock_timestamp()) * 1000)::bigint END
WHERE id = $1 AND state IN ('queued', 'running')

-- name: end_partitions
-- $1 job, $2 'failed' or 'cancelled': every partition not proved ends with
-- its job; hosts holding one hear it at their next renewal (their lease is gone).
UPDATE zkfarm_partitions SET state = $2, lease_token = NULL, lease_host = NULL, lease_expires = NULL
WHERE job_id = $1 AND state IN ('queued', 'leased')

-- name: job_live
-- $1 job
SELECT 1 FROM zkfarm_jobs WHERE id = $1 AND state IN ('queued', 'running')

-- name: set_started
-- $1 job, $2 started_ms (kept if already set).
UPDATE zkfarm_jobs SET started_ms = $2, txid = pg_current_xact_id() WHERE id = $1 AND started_ms = 0

-- name: proof
-- $1 job, $2 index: the proof, public.json, and the stage times of its
-- partition (NULL: not known; no delivery time, the clients write the files).
SELECT q.proof, q.public_json, p.synth_ms, p.queue_ms, p.prove_ms, p.verify_ms FROM zkfarm_proofs q
  JOIN zkfarm_partitions p ON p.job_id = q.job_id AND p.idx = q.idx WHERE q.job_id = $1 AND q.idx = $2

-- name: prune
-- $1 cutoff (Unix ms), $2 host_id. Only the host holding the maintenance
-- turn prunes (the others' hourly housekeeping finds nothing to do); a host
-- silent for a week is gone too (it registers again if it comes back).
WITH m AS (SELECT 1 FROM zkfarm_maintainer WHERE id = 1 AND host_id = $2 AND expires > now()),
d AS (DELETE FROM zkfarm_jobs WHERE state IN ('done', 'failed', 'cancelled')
  AND finished_ms > 0 AND finished_ms < $1 AND EXISTS (SELECT 1 FROM m) RETURNING 1),
h AS (DELETE FROM zkfarm_hosts WHERE heartbeat_at < now() - interval '7 days' AND EXISTS (SELECT 1 FROM m))
SELECT count(*) FROM d

-- name: put_generator_inputs
-- $1 generator, $2 its input signals (JSON). Written before the circuit: a
-- circuit is never seen without them (a failure between leaves at most a row
-- of a generator no circuit names, which is kept: a few hundred bytes, and
-- removing it could race another host's add of that generator).
INSERT INTO zkfarm_generator_inputs (generator, inputs) VALUES ($1, $2) ON CONFLICT (generator) DO NOTHING

-- name: put_circuit
-- $1 name, $2 kind, $3 generator, $4 zkey_sha256, $5 zkey_source, $6 source,
-- $7 owner_uid, $8 added_ms, $9 n_vars, $10 n_public, $11 exe_sha256, $12 dat_sha256,
-- $13 graph_file, $14 graph_slower.
WITH u AS (INSERT INTO zkfarm_circuits (name, kind, generator, zkey_sha256, zkey_source, source, owner_uid,
    added_ms, n_vars, n_public, exe_sha256, dat_sha256, graph_file, graph_slower)
  VALUES ($1, $2, $3, $4, $5, $6, $7, $8, $9, $10, $11, $12, $13, $14)
  ON CONFLICT (name) DO UPDATE SET
    kind = EXCLUDED.kind, generator = EXCLUDED.generator, zkey_sha256 = EXCLUDED.zkey_sha256,
    zkey_source = EXCLUDED.zkey_source, source = EXCLUDED.source, owner_uid = EXCLUDED.owner_uid,
    added_ms = EXCLUDED.added_ms, n_vars = EXCLUDED.n_vars, n_public = EXCLUDED.n_public,
    exe_sha256 = EXCLUDED.exe_sha256, dat_sha256 = EXCLUDED.dat_sha256, graph_file = EXCLUDED.graph_file,
    graph_slower = EXCLUDED.graph_slower RETURNING 1)
SELECT count(*), pg_notify('zkfarm', 'circuit') FROM u

-- name: remove_circuit
-- $1 name
WITH d AS (DELETE FROM zkfarm_circuits WHERE name = $1 RETURNING 1)
SELECT count(*), pg_notify('zkfarm', 'circuit') FROM d

-- name: circuits
SELECT name, kind, c.generator, zkey_sha256, zkey_source, source, owner_uid, added_ms, n_vars,
  n_public, exe_sha256, dat_sha256, coalesce(g.inputs, ''), graph_file, graph_slower FROM zkfarm_circuits c
LEFT JOIN zkfarm_generator_inputs g ON g.generator = c.generator ORDER BY name

-- name: probe
SELECT 1

-- name: snapshot
SELECT pg_current_snapshot()::text

-- name: all_jobs
-- $1 the current snapshot: every job visible in it (a host's first sync).
SELECT id, priority, zkey_sha256, zkey_source, out_dir, owner_uid, owner_gid, submitted_host, n_public,
  slot_bytes, circuit, generator, k, done, attempts, synth_ms, prove_ms, state, error, submitted_ms, started_ms,
  finished_ms, files, generator_exe, generator_dat, generator_graph, generator_graph_slower FROM zkfarm_jobs
WHERE pg_visible_in_snapshot(txid, $1::pg_snapshot) ORDER BY id

-- name: changed_jobs
-- $1 the current snapshot, $2 the last one seen: the rows committed between
-- (same columns as all_jobs). Rows of transactions older than the last
-- snapshot's xmin were all visible in it: the index on txid bounds the scan
-- to recent ones.
SELECT id, priority, zkey_sha256, zkey_source, out_dir, owner_uid, owner_gid, submitted_host, n_public,
  slot_bytes, circuit, generator, k, done, attempts, synth_ms, prove_ms, state, error, submitted_ms, started_ms,
  finished_ms, files, generator_exe, generator_dat, generator_graph, generator_graph_slower FROM zkfarm_jobs
WHERE txid >= pg_snapshot_xmin($2::pg_snapshot)
  AND pg_visible_in_snapshot(txid, $1::pg_snapshot)
  AND NOT pg_visible_in_snapshot(txid, $2::pg_snapshot) ORDER BY id

-- name: hosts
SELECT h.host_id, h.version, h.devices, h.state, h.pid,
  extract(epoch from now() - h.heartbeat_at),
  (SELECT count(*) FROM zkfarm_partitions p WHERE p.state = 'leased' AND p.lease_host = h.host_id)
FROM zkfarm_hosts h ORDER BY h.host_id

-- name: counts
-- Partitions by state: the last sweep's counts (at most a second old).
SELECT value FROM zkfarm_meta WHERE key = 'counts'

-- name: live_jobs
SELECT count(*) FROM zkfarm_jobs WHERE state IN ('queued', 'running')
