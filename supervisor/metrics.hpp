#pragma once
// The supervisor's counters and histograms, rendered in the Prometheus text
// exposition format (version 0.0.4) for GET /metrics. Owned and updated by the
// loop thread only; the HTTP thread reads a rendered snapshot.
#include <cstdint>
#include <map>
#include <string>
#include <vector>

namespace zkfarm::supervisor {

/// A Prometheus histogram of durations in seconds, fixed buckets.
class Histogram {
 public:
  explicit Histogram(std::vector<double> bounds);
  void observe(double seconds);
  /// Lines NAME_bucket{le=...}, NAME_sum, NAME_count.
  std::string render(const std::string& name) const;

 private:
  std::vector<double> bounds_;
  std::vector<uint64_t> counts_;  // per bucket, not cumulative
  double sum_ = 0;
  uint64_t count_ = 0;
};

struct Metrics {
  uint64_t partitions_proved = 0;
  uint64_t partitions_failed = 0;
  uint64_t jobs_accepted = 0;
  uint64_t jobs_refused = 0;
  uint64_t device_faults = 0;      ///< proofs from a GPU backend that did not verify
  uint64_t proofs_rejected = 0;    ///< proofs that did not verify, any backend
  uint64_t partitions_requeued_intact = 0;  ///< back to the GPU queue from their slot after a GPU worker died (no new synthesis)
  Histogram synthesis{{0.01, 0.05, 0.1, 0.25, 0.5, 1, 2.5, 5, 10, 30, 60, 300}};
  Histogram proving{{0.01, 0.05, 0.1, 0.25, 0.5, 1, 2.5, 5, 10, 30, 60, 300}};
  std::map<std::pair<std::string, std::string>, uint64_t> restarts;  ///< (kind, reason) → count
};

/// One gauge sample: labels as `key="value",…` (already escaped) and a value.
struct Sample {
  std::string labels;
  double value;
};

/// Escapes a label value (backslash, quote, newline) for the text format.
std::string escape_label(const std::string& v);

/// HELP and TYPE lines, then the samples of one metric family.
std::string render_family(const std::string& name, const std::string& type, const std::string& help,
                          const std::vector<Sample>& samples);

}  // namespace zkfarm::supervisor
