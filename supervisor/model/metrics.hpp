#pragma once
// The supervisor's counters and histograms, rendered in the Prometheus text
// exposition format (version 0.0.4) for GET /metrics. Owned and updated by the
// loop thread only; the HTTP thread reads a rendered snapshot. docs/metrics.md
// lists every family the supervisor exports.
#include <cstdint>
#include <map>
#include <string>
#include <vector>

namespace zkfarm::supervisor {

/// A Prometheus histogram of durations in seconds, fixed upper bounds
/// (ascending; +Inf is implicit).
class Histogram {
 public:
  explicit Histogram(std::vector<double> bounds);
  void observe(double seconds);
  /// HELP and TYPE lines, then NAME_bucket{le=...} (cumulative), NAME_sum, NAME_count.
  std::string render(const std::string& name, const std::string& help) const;
  uint64_t count() const { return count_; }

 private:
  std::vector<double> bounds_;
  std::vector<uint64_t> counts_;  // per bucket, not cumulative
  double sum_ = 0;
  uint64_t count_ = 0;
};

/// Bucket bounds (seconds) of the stage histograms: 10 ms to 5 minutes.
std::vector<double> stage_buckets();
/// Bucket bounds (seconds) of job latency and queue wait: 10 ms to 1 hour.
std::vector<double> wait_buckets();

/// Why a submit was refused: the `reason` label of zkfarm_jobs_refused_total.
enum class RefusedReason { kInvalid, kBusy, kStopping, kIntakeFault, kTimeout };
const char* refused_reason_name(RefusedReason r);

struct Metrics {
  uint64_t partitions_proved = 0;
  uint64_t partitions_failed = 0;
  uint64_t jobs_accepted = 0;
  std::map<std::string, uint64_t> jobs_refused;   ///< by refused_reason_name
  std::map<std::string, uint64_t> jobs_finished;  ///< by final state: done, failed, cancelled
  uint64_t device_faults = 0;      ///< proofs from a GPU backend that did not verify
  uint64_t proofs_rejected = 0;    ///< proofs that did not verify, any backend
  /// Seconds the loop thread spent on its work (each pass from poll's return
  /// to the next poll; monotonic clock): its busy share is the rate.
  double loop_busy_s = 0;
  uint64_t partitions_requeued_intact = 0;  ///< back to the GPU queue from their slot after a GPU worker died (no new synthesis)
  uint64_t release_timeouts = 0;   ///< release waits that ended in release_timeout
  uint64_t journal_write_errors = 0;  ///< journal writes that failed (each retry that fails counts)
  std::map<std::pair<std::string, std::string>, uint64_t> rolling;   ///< (what, result) → count
  std::map<std::pair<std::string, std::string>, uint64_t> key_cache;  ///< (cache, result) → count
  Histogram job_duration{wait_buckets()};   ///< submit → done, seconds
  Histogram queue_wait{wait_buckets()};     ///< a partition queued → taken by a synthesis worker
  Histogram synthesis{stage_buckets()};
  Histogram proving{stage_buckets()};
  std::map<std::pair<std::string, std::string>, uint64_t> restarts;  ///< (kind, reason) → count

  /// Every labelled counter with all its label values at 0, so that a series
  /// exists from the first scrape (rate() and alerts need the zero).
  Metrics();
};

/// One sample: labels as `key="value",…` (already escaped) and a value.
struct Sample {
  std::string labels;
  double value;
};

/// A value as the text format writes it: the shortest decimal form that reads
/// back as the same double ("0.1", not "0.10000000000000001"), so that a
/// query such as {le="0.1"} matches; +Inf, -Inf and NaN as Prometheus spells them.
std::string format_value(double v);

/// Escapes a label value (backslash, quote, newline) for the text format.
std::string escape_label(const std::string& v);

/// HELP and TYPE lines, then the samples of one metric family.
std::string render_family(const std::string& name, const std::string& type, const std::string& help,
                          const std::vector<Sample>& samples);

/// The standard process metrics of Prometheus's client libraries for this
/// process, read from /proc/self: process_cpu_seconds_total,
/// process_resident_memory_bytes, process_open_fds, process_max_fds, and
/// process_start_time_seconds (`start_unix_s`, the wall-clock time zkfarmd
/// started). A file that cannot be read leaves its family out.
std::string render_process_metrics(double start_unix_s);

}  // namespace zkfarm::supervisor
