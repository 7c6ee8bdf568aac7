#pragma once
// The status view: what `zkfarmctl status`, `jobs` and `job` show, and GET
// /status, rendered from a FarmView (a read-only look at the farm taken by
// the supervisor's loop), bounded so that no state of the farm can make a
// reply outgrow a frame (protocol::kMaxFrameBytes): jobs beyond the bounds
// are counted, and `jobs` pages through all of them. No I/O, no clock: what
// it shows is in the view, so it is tested on its own (docs/protocol.md
// defines every field).
#include <nlohmann/json.hpp>

#include <cstdint>
#include <map>
#include <optional>
#include <string>

#include "protocol/control_requests.hpp"
#include "supervisor/model/jobs.hpp"
#include "supervisor/workers/worker_table.hpp"

namespace zkfarm::supervisor {

/// The farm as the status shows it.
struct FarmView {
  const JobTable& jobs;
  const WorkerTable& workers;
  std::string version, state_dir;
  int64_t pid = 0;
  bool stopping = false, draining = false, ready = false;
  std::string intake_fault;       ///< "" when intake is open
  int64_t started_ms = 0;         ///< Unix ms
  double uptime_s = 0;
  int64_t now_ms = 0;             ///< monotonic, the clock of the workers' times
  nlohmann::json rolling;         ///< the current or last rolling operation (null: none)
  std::string rolling_worker;     ///< the worker being replaced now ("" none)
  std::string rolling_step;       ///< …and what it is doing
  nlohmann::json arena, connections;
  nlohmann::json cluster;         ///< a shared queue's hosts and counts (null: one host)
  size_t status_finished_jobs = 50;  ///< finished jobs listed (newest first)
  /// Where the farm keeps things, for operators: the journal (path, bytes,
  /// wal_bytes; null on a shared queue), the HTTP listener ("" off), the
  /// config file ("" none) and the log file ("" none).
  nlohmann::json journal;
  std::string http_address, config_file, log_file;
};

/// The status object (docs/protocol.md). With `only_owner`, the job lists and
/// counts cover that uid's jobs only (a non-admin peer's view).
nlohmann::json status_json(const FarmView& v, std::optional<uint32_t> only_owner);
/// One job as `job`, `jobs` and `status` list it.
nlohmann::json job_json(const Job& job);
/// A page of `jobs`: the reply object (ok, jobs, next_before), or ok:false
/// for a bad state filter. `req` may hold state, limit, before, since_ms.
nlohmann::json jobs_page(const JobTable& jobs, const protocol::JobsPage& req, std::optional<uint32_t> only_owner);

}  // namespace zkfarm::supervisor
