-- Version 4, additive (hosts of 1 to 3 keep working, without graphs): a
-- circuit's witness graph travels with its generator (docs/cluster.md). The
-- graph file by its SHA-256 (SHARED/generators/SHA256, as the generator's
-- files), and graph.slower's text, which tells `auto` to keep the generator
-- (docs/witness.md); '' where the circuit has no graph or a host of an
-- earlier version added it. A host that fetches the generator fetches the
-- graph beside it.
ALTER TABLE zkfarm_circuits ADD COLUMN graph_file text NOT NULL DEFAULT '',
  ADD COLUMN graph_slower text NOT NULL DEFAULT '';
ALTER TABLE zkfarm_jobs ADD COLUMN generator_graph text NOT NULL DEFAULT '',
  ADD COLUMN generator_graph_slower text NOT NULL DEFAULT ''
