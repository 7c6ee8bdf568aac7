#pragma once
// Where one partition's time went, stage by stage, as `zkfarmctl result
// --json` and zkfarm-api's results show it (docs/protocol.md, "result").
#include <cstdint>
#include <optional>

#include <nlohmann/json.hpp>

namespace zkfarm::supervisor {

/// The stages of the attempt that made a partition's proof, in milliseconds
/// of the supervisor's monotonic clock (a wall-clock jump changes none).
/// nullopt: a stage this farm did not see or did not keep (another host of a
/// shared queue proved it; the client writes the files; a proof journaled by
/// a zkfarmd before these times were kept).
struct PartitionTiming {
  /// Synthesis: the synthesis worker's STARTED → SYNTH_DONE (its witness made
  /// from the input, or the .wtns copied into its slot).
  std::optional<int64_t> witness_ms;
  /// Waiting: queued → a synthesis worker's STARTED, plus synthesized → the
  /// GPU worker's STARTED (the supervisor's queues and the workers' own).
  std::optional<int64_t> queue_ms;
  /// Proving: the GPU worker's STARTED → PROVE_DONE.
  std::optional<int64_t> prove_ms;
  /// Verification: PROVE_DONE → the verdict (the check pool's queue and the
  /// pairing check).
  std::optional<int64_t> verify_ms;
  /// Delivery: verified → OUT/K.proof.json and OUT/K.public.json written by
  /// zkfarmd (the journal's commit comes first).
  std::optional<int64_t> delivery_ms;

  /// {"witness_ms": …, "queue_ms": …, "prove_ms": …, "verify_ms": …,
  /// "delivery_ms": …}, null for a stage not known.
  nlohmann::json to_json() const;
  bool operator==(const PartitionTiming&) const = default;
};

}  // namespace zkfarm::supervisor
