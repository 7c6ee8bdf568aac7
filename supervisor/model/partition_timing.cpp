#include "supervisor/model/partition_timing.hpp"

namespace zkfarm::supervisor {

nlohmann::json PartitionTiming::to_json() const {
  auto ms = [](const std::optional<int64_t>& v) { return v ? nlohmann::json(*v) : nlohmann::json(nullptr); };
  return {{"witness_ms", ms(witness_ms)},
          {"queue_ms", ms(queue_ms)},
          {"prove_ms", ms(prove_ms)},
          {"verify_ms", ms(verify_ms)},
          {"delivery_ms", ms(delivery_ms)}};
}

}  // namespace zkfarm::supervisor
