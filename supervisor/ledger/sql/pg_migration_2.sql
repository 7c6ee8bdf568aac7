-- Version 2, additive (hosts of 1 keep working): a built generator's input
-- signals, by its source hash (the journal's generator_inputs), checked
-- against every input at submit. A host of 1 writes no row, and a circuit
-- without one is not shape-checked; keyed by the generator, a row is never
-- stale whoever changes zkfarm_circuits.
CREATE TABLE zkfarm_generator_inputs (
  generator text PRIMARY KEY,
  inputs text NOT NULL
)
