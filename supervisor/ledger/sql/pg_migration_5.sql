-- Version 5, additive (hosts of 1 to 4 keep working; their proofs keep NULL
-- here): the waits and the verification of the attempt that made each
-- proof, beside synth_ms and prove_ms, for `zkfarmctl result --json` and
-- zkfarm-api's results (supervisor/model/partition_timing.hpp). A shared
-- queue's files are written by its clients, so it keeps no delivery time.
ALTER TABLE zkfarm_partitions ADD COLUMN queue_ms bigint, ADD COLUMN verify_ms bigint
