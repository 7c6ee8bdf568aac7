-- Journal migration 3, additive (min_reader 1): the stage times of the
-- attempt that made each proof beside synth_ms and prove_ms, for `zkfarmctl
-- result --json` and zkfarm-api's results (supervisor/model/
-- partition_timing.hpp): queue_ms and verify_ms come with the proof;
-- delivery_ms is set when the job ends done (zkfarmd wrote the files; NULL
-- when the client writes them). NULL in each: not known (a proof journaled
-- before this migration). A zkfarmd of schema 2 names its columns and
-- reads and writes such a journal unchanged.
ALTER TABLE proofs ADD COLUMN queue_ms INTEGER;
ALTER TABLE proofs ADD COLUMN verify_ms INTEGER;
ALTER TABLE proofs ADD COLUMN delivery_ms INTEGER;
