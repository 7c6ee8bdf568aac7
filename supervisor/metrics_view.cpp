// The /metrics view: the supervisor's counters, histograms and gauges in the
// Prometheus text format (docs/metrics.md lists every family), rendered on the
// loop for the HTTP thread's snapshot; and the samples behind them (job ends,
// NVML's view of the GPUs).
#include "version/build_info.hpp"
#include "supervisor/supervisor.hpp"

namespace zkfarm::supervisor {

void Supervisor::count_job_end(const Job& job) {
  ++metrics_.jobs_finished[job_state_name(job.state)];
  if (job.state == JobState::kDone && job.finished_ms >= job.submitted_ms)
    metrics_.job_duration.observe(double(job.finished_ms - job.submitted_ms) / 1000.0);
}

std::string Supervisor::render_metrics() const {
  auto counter = [](const std::string& name, const std::string& help, double v) {
    return render_family(name, "counter", help, {{"", v}});
  };
  auto gauge = [](const std::string& name, const std::string& help, double v) {
    return render_family(name, "gauge", help, {{"", v}});
  };
  auto labelled = [](const std::string& key, const std::map<std::string, uint64_t>& m) {
    std::vector<Sample> out;
    for (const auto& [k, v] : m) out.push_back({key + "=\"" + escape_label(k) + "\"", double(v)});
    return out;
  };
  auto labelled2 = [](const std::string& k1, const std::string& k2,
                      const std::map<std::pair<std::string, std::string>, uint64_t>& m) {
    std::vector<Sample> out;
    for (const auto& [k, v] : m)
      out.push_back({k1 + "=\"" + escape_label(k.first) + "\"," + k2 + "=\"" + escape_label(k.second) + "\"", double(v)});
    return out;
  };
  std::string out;
  out += render_family("zkfarm_build_info", "gauge",
                       "zkfarmd's version, commit and whether its CUDA backend was built (value 1).",
                       {{"version=\"" + escape_label(build_info::version()) + "\",commit=\"" +
                             escape_label(build_info::commit()) + "\",cuda=\"" + (build_info::cuda() ? "yes" : "no") + "\"",
                         1}});
  out += render_process_metrics(double(published_.started_wall_ms()) / 1000.0);
  out += gauge("zkfarm_ready", "1 while intake is open and every worker is READY (as /readyz).", published_.ready() ? 1 : 0);
  out += gauge("zkfarm_draining", "1 while drained: submits are queued, no partition starts.", lifecycle_->draining() ? 1 : 0);
  out += gauge("zkfarm_stopping", "1 once a stop has begun.", lifecycle_->stopping() ? 1 : 0);
  out += gauge("zkfarm_intake_refusing", "1 while intake is refused for a fault (see status).", journal_->intake_fault().empty() ? 0 : 1);

  out += render_family("zkfarm_partitions", "gauge", "Partitions of live jobs by stage (synthesized: waiting for a GPU worker).",
                       {{"stage=\"queued\"", double(jobs_.count(PartState::kQueued))},
                        {"stage=\"synthesizing\"", double(jobs_.count(PartState::kSynthesizing))},
                        {"stage=\"synthesized\"", double(jobs_.count(PartState::kSynthesized))},
                        {"stage=\"proving\"", double(jobs_.count(PartState::kProving))}});
  std::map<std::pair<std::string, std::string>, double> depth;  // (priority, stage)
  for (const char* prio : {"low", "normal", "high", "critical"})
    for (const char* stage : {"synth", "prove"}) depth[{prio, stage}] = 0;
  std::map<std::string, uint64_t> job_states;
  for (JobState st : {JobState::kQueued, JobState::kRunning, JobState::kDone, JobState::kFailed, JobState::kCancelled})
    job_states[job_state_name(st)] = 0;
  for (const auto& [id, job] : jobs_.all()) {
    ++job_states[job_state_name(job.state)];
    if (job.terminal()) continue;
    depth[{priority_name(job.priority), "synth"}] += double(job.count(PartState::kQueued));
    depth[{priority_name(job.priority), "prove"}] += double(job.count(PartState::kSynthesized));
  }
  std::vector<Sample> qs;
  for (const auto& [k, v] : depth) qs.push_back({"priority=\"" + k.first + "\",stage=\"" + k.second + "\"", v});
  out += render_family("zkfarm_queue_depth", "gauge", "Partitions waiting, by job priority and next stage.", qs);
  out += render_family("zkfarm_jobs", "gauge", "Jobs the supervisor holds by state (finished ones until retention_hours).",
                       labelled("state", job_states));

  out += counter("zkfarm_jobs_accepted_total", "Jobs accepted and journaled.", double(metrics_.jobs_accepted));
  out += render_family("zkfarm_jobs_refused_total", "counter", "Submits refused, by reason.",
                       labelled("reason", metrics_.jobs_refused));
  out += render_family("zkfarm_jobs_finished_total", "counter", "Jobs that ended in this instance, by final state.",
                       labelled("state", metrics_.jobs_finished));
  out += counter("zkfarm_partitions_proved_total", "Partitions proved, verified and journaled.",
                 double(metrics_.partitions_proved));
  out += counter("zkfarm_partitions_failed_total", "Partitions a worker failed on (bad input).",
                 double(metrics_.partitions_failed));
  out += counter("zkfarm_proofs_rejected_total", "Proofs that did not verify and were not published.",
                 double(metrics_.proofs_rejected));
  out += counter("zkfarm_device_faults_total", "Device faults a partition was proved again after: a GPU backend's proof that did not verify, a prove step "
                 "that faulted on a device still usable (or found host memory short).",
                 double(metrics_.device_faults));
  out += counter("zkfarm_loop_busy_seconds_total",
                 "Seconds the supervisor's loop thread spent working (not waiting in poll); its rate is the loop's busy share.",
                 metrics_.loop_busy_s);
  const ProofChecks::Counts checked = pipeline_->checks().counts();
  out += counter("zkfarm_verify_proofs_total", "Proofs verified by the proof checks (good or bad).",
                 double(checked.proofs));
  out += counter("zkfarm_verify_batches_total",
                 "Batches the proof checks verified (proofs / batches: the mean batch size).", double(checked.batches));
  out += gauge("zkfarm_verify_waiting", "Proofs waiting for a proof check's thread.",
               double(pipeline_->checks().waiting()));
  out += counter("zkfarm_partitions_requeued_intact_total",
                 "Partitions a dead GPU worker held, proved again from their slot without a new synthesis.",
                 double(metrics_.partitions_requeued_intact));

  out += metrics_.job_duration.render("zkfarm_job_duration_seconds", "Time from a job's submit to its end, done jobs.");
  out += metrics_.queue_wait.render("zkfarm_queue_wait_seconds",
                                    "Time a partition waited in the queue before a synthesis worker took it.");
  out += metrics_.synthesis.render("zkfarm_synthesis_seconds", "Time a partition spent in synthesis.");
  out += metrics_.proving.render("zkfarm_proving_seconds", "Time a partition spent in the prove step.");

  std::map<std::pair<std::string, std::string>, uint64_t> states;
  for (const WorkerKindInfo& k : kWorkerKinds)
    for (WorkerState st : {WorkerState::kStarting, WorkerState::kIdle, WorkerState::kBusy, WorkerState::kStopping,
                           WorkerState::kReleasing, WorkerState::kExited, WorkerState::kFailed})
      states[{k.name, worker_state_name(st)}] = 0;
  std::vector<Sample> release, info;
  for (const auto& [id, w] : workers_->all()) {
    ++states[{worker_kind_name(w.kind), worker_state_name(w.state)}];
    // pid "" while no process runs; version "" until its READY.
    info.push_back({"worker=\"" + escape_label(id) + "\",kind=\"" + worker_kind_name(w.kind) + "\",pid=\"" +
                        (w.pid > 0 ? std::to_string(w.pid) : std::string()) + "\",version=\"" + escape_label(w.version) +
                        "\",binary=\"" + escape_label(w.binary) + "\"",
                    1});
    if (kind_info(w.kind).holds_device)
      release.push_back({"worker=\"" + escape_label(id) + "\"",
                         w.release_wait ? double(w.release_wait->elapsed().count()) / 1000.0 : 0.0});
  }
  out += render_family("zkfarm_workers", "gauge", "Workers by kind and state.", labelled2("kind", "state", states));
  out += render_family("zkfarm_worker_info", "gauge",
                       "One series per worker (value 1): its process id, the version it said in READY, its binary.", info);
  out += render_family("zkfarm_worker_restarts_total", "counter",
                       "Workers replaced after a crash or a kill, by kind and reason.",
                       labelled2("kind", "reason", metrics_.restarts));
  out += render_family("zkfarm_release_wait_seconds", "gauge",
                       "How long the current wait for a GPU worker's memory to be released has run (0: none).", release);
  out += counter("zkfarm_release_timeouts_total", "Release waits that ended in release_timeout.",
                 double(metrics_.release_timeouts));
  out += render_family("zkfarm_rolling_operations_total", "counter", "Rolling restarts and upgrades that ended, by result.",
                       labelled2("what", "result", metrics_.rolling));
  out += gauge("zkfarm_rolling_in_progress", "1 while a rolling restart or upgrade runs.",
               lifecycle_->rolling_running() ? 1 : 0);
  out += render_family("zkfarm_arena_bytes", "gauge", "The arena (memory budget) in bytes, used and free.",
                       {{"state=\"used\"", double(slots_.used())},
                        {"state=\"free\"", double(slots_.capacity() - slots_.used())}});
  out += render_family("zkfarm_key_cache_requests_total", "counter",
                       "Proving-key lookups: submit (checked before, by content hash), worker (resident when a partition came).",
                       labelled2("cache", "result", metrics_.key_cache));
  out += counter("zkfarm_journal_write_errors_total", "Journal writes that failed (each failed retry counts).",
                 double(metrics_.journal_write_errors));
  if (!devices_.usage().empty()) {
    std::vector<Sample> mem, util;
    for (const auto& [dev, u] : devices_.usage()) {
      const std::string d = "device=\"" + escape_label(dev) + "\"";
      mem.push_back({d + ",state=\"used\"", double(u.used_bytes)});
      mem.push_back({d + ",state=\"total\"", double(u.total_bytes)});
      if (u.utilization) util.push_back({d, *u.utilization});
    }
    out += render_family("zkfarm_gpu_memory_bytes", "gauge", "GPU memory of each device a GPU worker runs on (NVML).", mem);
    if (!util.empty())
      out += render_family("zkfarm_gpu_utilization_ratio", "gauge",
                           "Share of the last sample period a kernel ran on the device (NVML, 0..1).", util);
  }
  return out;
}

}  // namespace zkfarm::supervisor
