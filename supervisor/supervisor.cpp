#include "supervisor/supervisor.hpp"

#include <signal.h>
#include <sys/prctl.h>
#include <sys/signalfd.h>
#include <sys/stat.h>
#include <sys/wait.h>
#include <unistd.h>

#include <chrono>
#include <filesystem>
#include <thread>

#include "groth16/errors.hpp"
#include "groth16/proof_json.hpp"
#include "groth16/prover.hpp"
#include "protocol/messages.hpp"
#include "protocol/proof_codec.hpp"
#include "protocol/worker_channel.hpp"
#include "supervisor/log_sink.hpp"
#include "supervisor/process.hpp"

#include <systemd/sd-daemon.h>

namespace zkfarm::supervisor {

namespace fs = std::filesystem;
using nlohmann::json;

namespace {

constexpr const char* kVersion = "0.1.0";
// sun_path holds 108 bytes; ZeroMQ needs the terminating NUL.
constexpr size_t kMaxIpcPath = 107;

std::string ipc_path(const std::string& state_dir, const char* name) {
  std::string p = fs::absolute(state_dir).lexically_normal().string() + "/" + name;
  if (p.size() > kMaxIpcPath) {
    throw std::runtime_error("state dir path too long for a socket (" + p + " is " + std::to_string(p.size()) +
                             " bytes, at most " + std::to_string(kMaxIpcPath) + ")");
  }
  return p;
}

// GPU devices to run workers on: "none", "auto" (one per /dev/nvidiaN when the
// CUDA backend was asked for or auto), or a comma list. An empty string means
// one worker on the CPU backend.
std::vector<std::string> gpu_devices(const Config& cfg) {
  std::vector<std::string> out;
  if (cfg.backend == "cpu" || cfg.gpu_devices == "none") return {""};
  if (cfg.gpu_devices == "auto") {
    // CUDA numbers the devices it sees 0..n−1, whatever the /dev/nvidiaN nodes
    // are called (in a container the node keeps the host's number).
    int n = 0;
    for (int i = 0; i < 64; ++i) n += fs::exists("/dev/nvidia" + std::to_string(i));
    for (int i = 0; i < n; ++i) out.push_back(std::to_string(i));
    if (out.empty() || cfg.backend == "cpu") return {""};
    return out;
  }
  std::string cur;
  for (char c : cfg.gpu_devices + ",") {
    if (c == ',') {
      if (!cur.empty()) out.push_back(cur);
      cur.clear();
    } else if (c != ' ') {
      cur += c;
    }
  }
  return out.empty() ? std::vector<std::string>{""} : out;
}

}  // namespace

Supervisor::Supervisor(Config cfg, std::shared_ptr<spdlog::logger> log)
    : cfg_(std::move(cfg)),
      log_(std::move(log)),
      journal_(cfg_.state_dir + "/journal.sqlite"),
      ctx_(1),
      workers_sock_(ctx_, zmq::socket_type::router),
      control_sock_(ctx_, zmq::socket_type::router),
      arena_([&] {
        const std::string name = shm::Arena::name_for(cfg_.state_dir);
        // We hold the state lock, so a segment of this name is a dead instance's.
        if (shm::Arena::remove(name)) log_->warn("removed a stale arena /dev/shm/{} left by an earlier instance", name);
        return shm::Arena::create(name, cfg_.arena_mib << 20);
      }()),
      slots_(arena_.capacity()) {
  prctl(PR_SET_CHILD_SUBREAPER, 1);
  sigset_t mask;
  sigemptyset(&mask);
  for (int s : {SIGTERM, SIGINT, SIGCHLD, SIGHUP, SIGUSR1, SIGUSR2}) sigaddset(&mask, s);
  pthread_sigmask(SIG_BLOCK, &mask, nullptr);
  sigfd_ = signalfd(-1, &mask, SFD_NONBLOCK | SFD_CLOEXEC);
  if (sigfd_ < 0) throw std::runtime_error(std::string("signalfd: ") + std::strerror(errno));

  workers_path_ = ipc_path(cfg_.state_dir, "workers.sock");
  control_path_ = ipc_path(cfg_.state_dir, "control.sock");
  for (const auto& p : {workers_path_, control_path_}) ::unlink(p.c_str());  // stale, under our lock
  workers_endpoint_ = "ipc://" + workers_path_;
  workers_sock_.set(zmq::sockopt::linger, 0);
  control_sock_.set(zmq::sockopt::linger, 0);
  workers_sock_.set(zmq::sockopt::maxmsgsize, int64_t(protocol::kMaxFrameBytes));
  control_sock_.set(zmq::sockopt::maxmsgsize, int64_t(protocol::kMaxFrameBytes));
  workers_sock_.bind(workers_endpoint_);
  control_sock_.bind("ipc://" + control_path_);
  ::chmod(workers_path_.c_str(), 0660);
  ::chmod(control_path_.c_str(), 0660);

  unsigned n = 0;
  for (unsigned i = 0; i < cfg_.synth_workers; ++i) {
    Worker w;
    w.id = "synth-" + std::to_string(i);
    w.kind = WorkerKind::kSynth;
    workers_.emplace(w.id, w);
  }
  for (const auto& dev : gpu_devices(cfg_)) {
    Worker w;
    w.id = "gpu-" + std::to_string(n++);
    w.kind = WorkerKind::kGpu;
    w.device = dev;
    workers_.emplace(w.id, w);
  }
  for (auto& [id, w] : workers_) {
    w.backoff_ms = cfg_.restart_backoff_ms;
    w.binary = w.kind == WorkerKind::kSynth ? cfg_.synth_binary : cfg_.gpu_binary;
  }
  release_check_ = FakeReleaseCheck::from_env();
  if (!release_check_) release_check_ = ReleaseCheck::make_default();
  if (sd_watchdog_enabled(0, &watchdog_usec_) <= 0) watchdog_usec_ = 0;
  restore_from_journal();
  log_->info("zkfarmd {} pid {} state dir {}: arena /dev/shm/{} ({} MiB), {} synthesis and {} GPU workers", kVersion,
             getpid(), cfg_.state_dir, arena_.name(), cfg_.arena_mib, cfg_.synth_workers, n);
}

Supervisor::~Supervisor() {
  if (sigfd_ >= 0) ::close(sigfd_);
  workers_sock_.close();
  control_sock_.close();
  ::unlink(workers_path_.c_str());
  ::unlink(control_path_.c_str());
  shm::Arena::remove(arena_.name());
}

int64_t Supervisor::now_ms() const {
  using namespace std::chrono;
  return duration_cast<milliseconds>(steady_clock::now().time_since_epoch()).count();
}

int64_t Supervisor::wall_ms() const {
  using namespace std::chrono;
  return duration_cast<milliseconds>(system_clock::now().time_since_epoch()).count();
}

// Brings back every journaled job: partitions without a proof are queued again
// (what was in flight when the last instance died is proved anew), finished jobs
// past the retention are pruned, and missing output files of proved partitions
// are rewritten from the journal.
void Supervisor::restore_from_journal() {
  const size_t pruned = journal_.prune(wall_ms() - int64_t(cfg_.retention_hours) * 3600 * 1000);
  if (pruned) log_->info("journal: pruned {} finished jobs older than {} h", pruned, cfg_.retention_hours);
  size_t requeued = 0, jobs = 0;
  for (Job& job : journal_.load()) {
    ++jobs;
    requeued += job.count(PartState::kQueued);
    if (job.count(PartState::kDone) > 0) write_results(job, job.out);
    jobs_.restore(std::move(job));
  }
  if (jobs) log_->info("journal: {} jobs restored, {} partitions queued again", jobs, requeued);
}

// Writes OUT/k.proof.json and OUT/k.public.json of one proved partition from
// the journal; false (logged) if there is no proof or a file cannot be written.
bool Supervisor::write_result(uint64_t job, uint32_t index, const std::string& out) {
  auto jp = journal_.proof(job, index);
  if (!jp) return false;
  const std::string base = out + "/" + std::to_string(index);
  try {
    std::error_code ec;
    fs::create_directories(out, ec);
    write_file_atomic(base + ".public.json", jp->public_json);
    write_file_atomic(base + ".proof.json", proof_to_json(protocol::decode_proof(jp->proof)));
    return true;
  } catch (const std::exception& e) {
    log_->error("job {} partition {}: cannot write the result: {}", job, index, e.what());
    return false;
  }
}

// write_result for every proved partition of `job`; returns how many were written.
int Supervisor::write_results(const Job& job, const std::string& out) {
  int written = 0;
  for (const auto& p : job.parts)
    if (p.state == PartState::kDone) written += write_result(job.id, p.index, out);
  return written;
}

void Supervisor::start_worker(Worker& w) {
  try {
    if (w.kind == WorkerKind::kGpu) release_check_->baseline(w.device);
    SpawnedWorker spawned = spawn_worker(cfg_, w, workers_endpoint_, arena_.name());
    w.pid = spawned.pid;
    w.output = std::make_shared<WorkerOutput>(std::move(spawned.output));
    w.pidfd = pidfd_open_child(w.pid);
    if (w.pidfd < 0) log_->warn("worker {}: no pidfd ({}); signals go by pid", w.id, std::strerror(errno));
  } catch (const std::exception& e) {
    log_->error("worker {}: {}", w.id, e.what());
    w.pid = 0;
    w.state = WorkerState::kExited;
    w.restart_at_ms = now_ms() + w.backoff_ms;
    w.backoff_ms = std::min(w.backoff_ms * 2, cfg_.restart_backoff_max_ms);
    return;
  }
  w.state = WorkerState::kStarting;
  w.started_ms = w.last_seen_ms = now_ms();
  w.restart_at_ms = 0;
  w.kill_sent = false;
  w.term_sent = false;
  w.failed_reason.clear();
  w.current.reset();
  w.version.clear();
  record_children();
  log_->info("worker {}: started pid {} ({})", w.id, w.pid, w.binary);
}

int Supervisor::run() {
  clean_stale_children();
  for (auto& [id, w] : workers_) start_worker(w);
  update_snapshot();
  for (;;) {
    std::vector<zmq::pollitem_t> items = {{workers_sock_.handle(), 0, ZMQ_POLLIN, 0},
                                          {control_sock_.handle(), 0, ZMQ_POLLIN, 0},
                                          {nullptr, sigfd_, ZMQ_POLLIN, 0}};
    for (const auto& [id, w] : workers_)
      if (w.output && w.output->fd() >= 0) items.push_back({nullptr, w.output->fd(), ZMQ_POLLIN, 0});
    zmq::poll(items.data(), items.size(), std::chrono::milliseconds(50));
    handle_signals();
    pump_worker_output();
    reap_children();
    // Drain what is readable now; each frame is bounded, so this stays short.
    for (int i = 0; i < 256; ++i) {
      std::vector<zmq::message_t> parts;
      auto got = zmq::recv_multipart(workers_sock_, std::back_inserter(parts), zmq::recv_flags::dontwait);
      if (!got) break;
      if (parts.size() != 2) {
        log_->warn("dropped a worker message of {} frames", parts.size());
        continue;
      }
      on_worker_frame(parts[0].to_string(), parts[1].to_string());
    }
    for (int i = 0; i < 64; ++i) {
      std::vector<zmq::message_t> parts;
      auto got = zmq::recv_multipart(control_sock_, std::back_inserter(parts), zmq::recv_flags::dontwait);
      if (!got) break;
      if (parts.size() != 3 || parts[1].size() != 0) {
        log_->warn("dropped a control message of {} frames", parts.size());
        continue;
      }
      on_control_frame(parts[0].to_string(), parts[2].to_string());
    }
    finish_submits();
    check_deadlines();
    advance_release_waits();
    advance_rolling();
    dispatch();
    notify_progress();
    if (stopping_ && advance_stop()) break;
    update_snapshot();
  }
  std::filesystem::remove(cfg_.state_dir + "/children");
  if (release_failed_) {
    log_->error("stopped, but the memory of a GPU worker was not released within release_timeout");
    return 1;
  }
  log_->info("stopped: all workers reaped and released, arena /dev/shm/{} unlinked", arena_.name());
  return 0;
}

void Supervisor::handle_signals() {
  signalfd_siginfo si;
  while (::read(sigfd_, &si, sizeof si) == sizeof si) {
    int sig = int(si.ssi_signo);
    if (sig == SIGCHLD) continue;  // reap_children runs every pass
    if (sig == SIGHUP || sig == SIGUSR1) {  // logrotate's postrotate; nginx's USR1
      reopen_logs(sigabbrev_np(sig));
      continue;
    }
    if (sig == SIGUSR2) {  // reserved: taken so that a stray kill -USR2 never ends the farm
      log_->info("SIGUSR2: ignored (reserved)");
      continue;
    }
    if (stopping_ && (sig == SIGTERM || sig == SIGINT)) {
      drain_deadline_ms_ = 0;
      kill_all_workers(std::string("second ") + sigabbrev_np(sig) + " during the stop");
      continue;
    }
    begin_stop(std::string("signal ") + strsignal(sig));
  }
}

void Supervisor::reopen_logs(const char* why) {
  for (auto& sink : log_->sinks()) {
    auto file = std::dynamic_pointer_cast<ReopenableFileSink>(sink);
    if (!file) continue;
    try {
      file->reopen();
      log_->info("SIG{}: reopened {}", why, file->path());
    } catch (const std::exception& e) {
      log_->error("SIG{}: cannot reopen the log file: {}", why, e.what());
    }
  }
}

void Supervisor::pump_worker_output() {
  const int64_t now = now_ms();
  for (auto& [id, w] : workers_) {
    if (!w.output) continue;
    w.output->pump(now, [&, wid = id](std::string_view line) { log_->info("[{}] {}", wid, line); });
  }
}

void Supervisor::reap_children() {
  for (;;) {
    int status = 0;
    pid_t pid = ::waitpid(-1, &status, WNOHANG);
    if (pid <= 0) return;
    std::string how = WIFEXITED(status) ? "exit code " + std::to_string(WEXITSTATUS(status))
                                        : std::string("signal ") + strsignal(WTERMSIG(status));
    Worker* w = nullptr;
    for (auto& [id, cand] : workers_)
      if (cand.pid == pid) w = &cand;
    if (!w) {
      log_->info("reaped pid {} ({}), not a worker of ours", pid, how);
      continue;
    }
    // Operator-commanded stops (SHUTDOWN sent, a stop, a rolling restart) never count as crashes.
    const bool asked = (w->state == WorkerState::kStopping && !w->kill_sent) || stopping_;
    // The exit-code contract (protocol/worker_channel.hpp): usage and
    // environment faults say that the same binary with the same flags cannot
    // boot, so the worker is retired instead of fed into a restart loop.
    const bool no_respawn = WIFEXITED(status) && (WEXITSTATUS(status) == protocol::kExitUsage ||
                                                  WEXITSTATUS(status) == protocol::kExitEnvironment);
    after_exit(*w, !asked, asked ? how : "died (" + how + ")", !asked && no_respawn);
  }
}

void Supervisor::requeue(const PartRef& ref, const std::string& why, bool crashed) {
  Partition* p = jobs_.find(ref);
  Job* job = jobs_.find(ref.job);
  if (!p || !job) return;
  if (crashed && !job->terminal() && ++p->crashes >= cfg_.max_attempts) {
    // A poison partition: its input takes down whichever worker gets it. It
    // fails (and with it its job) instead of crashing the farm's workers forever.
    if (p->slot) slots_.free(p->slot->id);
    p->slot.reset();
    p->worker.clear();
    p->state = PartState::kFailed;
    fail_job(ref.job, "partition " + std::to_string(ref.index) + ": its worker died " + std::to_string(p->crashes) +
                          " times (max_attempts " + std::to_string(cfg_.max_attempts) + "); last: " + why);
    return;
  }
  // The slot's generation is bumped, so a late answer about it is stale.
  if (p->slot) slots_.free(p->slot->id);
  p->slot.reset();
  p->worker.clear();
  if (job->terminal()) {
    if (p->state != PartState::kDone) p->state = job->state == JobState::kCancelled ? PartState::kCancelled : PartState::kFailed;
    return;
  }
  if (p->state == PartState::kSynthesizing || p->state == PartState::kProving) {
    log_->warn("job {} partition {}: back to the queue ({})", ref.job, ref.index, why);
    p->state = PartState::kQueued;
  }
}

void Supervisor::send_to_worker(const Worker& w, const json& msg) {
  std::string body = protocol::encode(msg);
  std::array<zmq::const_buffer, 2> frames = {zmq::buffer(w.id), zmq::buffer(body)};
  try {
    zmq::send_multipart(workers_sock_, frames, zmq::send_flags::dontwait);
  } catch (const zmq::error_t& e) {
    log_->warn("worker {}: send failed: {}", w.id, e.what());
  }
}

void Supervisor::on_worker_frame(const std::string& identity, const std::string& frame) {
  auto it = workers_.find(identity);
  if (it == workers_.end()) {
    log_->warn("dropped a message from unknown worker '{}'", identity.substr(0, 64));
    return;
  }
  Worker& w = it->second;
  json msg;
  try {
    msg = protocol::decode(frame);
  } catch (const protocol::ProtocolError& e) {
    log_->warn("worker {}: dropped a malformed message: {}", w.id, e.what());
    if (w.state == WorkerState::kStarting && std::string(e.what()).find("protocol version") != std::string::npos) {
      log_->error("worker {}: speaks another protocol version; asking it to exit", w.id);
      send_to_worker(w, protocol::make(protocol::kShutdown));
      w.state = WorkerState::kStopping;
      w.stop_deadline_ms = now_ms() + cfg_.stop_timeout_ms;
    }
    return;
  }
  w.last_seen_ms = now_ms();
  try {
    const std::string type = protocol::type_of(msg);
    if (type == protocol::kHeartbeat) return;
    if (type == protocol::kReady) {
      w.version = protocol::get_str(msg, "version");
      w.backend = protocol::get_str(msg, "backend");
      if (w.state == WorkerState::kStarting) w.state = WorkerState::kIdle;
      log_->info("worker {}: READY (version {}, backend {}, pid {})", w.id, w.version, w.backend,
                 protocol::get_u64(msg, "pid"));
      return;
    }
    if (type == protocol::kSynthDone || type == protocol::kProveDone) {
      on_worker_done(w, msg, type == protocol::kSynthDone);
      return;
    }
    log_->warn("worker {}: dropped a message of unknown type {}", w.id, type);
  } catch (const protocol::ProtocolError& e) {
    log_->warn("worker {}: dropped a message: {}", w.id, e.what());
  }
}

void Supervisor::on_worker_done(Worker& w, const json& msg, bool synth) {
  const PartRef ref{protocol::get_u64(msg, "job"), protocol::get_u32(msg, "partition")};
  const uint32_t slot = protocol::get_u32(msg, "slot");
  const uint64_t generation = protocol::get_u64(msg, "generation");
  if (!slots_.is_current(slot, generation) || !w.current || w.current->job != ref.job ||
      w.current->index != ref.index) {
    log_->warn("worker {}: ignored a stale answer for job {} partition {} (slot {} generation {})", w.id, ref.job,
               ref.index, slot, generation);
    return;
  }
  w.current.reset();
  if (w.state == WorkerState::kBusy) w.state = WorkerState::kIdle;
  Partition* p = jobs_.find(ref);
  Job* job = jobs_.find(ref.job);
  if (!p || !job) return;
  p->worker.clear();
  if (job->terminal()) {  // cancelled or failed meanwhile: drop the work, free the slot
    if (p->slot) slots_.free(p->slot->id);
    p->slot.reset();
    p->state = job->state == JobState::kCancelled ? PartState::kCancelled : PartState::kFailed;
    return;
  }
  if (!protocol::get_bool(msg, "ok")) {
    std::string error = protocol::find_str(msg, "error").value_or("unknown error");
    log_->error("job {} partition {}: {} failed in {}: {}", ref.job, ref.index, synth ? "synthesis" : "proving",
                w.id, error);
    ++metrics_.partitions_failed;
    if (p->slot) slots_.free(p->slot->id);
    p->slot.reset();
    p->state = PartState::kFailed;
    fail_job(ref.job, "partition " + std::to_string(ref.index) + ": " + error);
    return;
  }
  w.backoff_ms = cfg_.restart_backoff_ms;  // a worker that delivers is healthy again
  if (synth) {
    p->synth_ms = now_ms() - p->stage_start_ms;
    p->state = PartState::kSynthesized;
    log_->debug("job {} partition {}: synthesized by {}", ref.job, ref.index, w.id);
  } else {
    p->prove_ms = now_ms() - p->stage_start_ms;
    finish_partition(w, ref, protocol::get_bin(msg, "proof"));
  }
}

void Supervisor::finish_partition(Worker& w, const PartRef& ref, const std::string& proof_bytes) {
  Job* job = jobs_.find(ref.job);
  Partition* p = jobs_.find(ref);
  try {
    protocol::decode_proof(proof_bytes);  // a malformed proof never reaches the journal
    // Journal first: once this commits the proof survives anything; a second
    // proof of the same partition (re-proved after a crash) is refused.
    if (!journal_.add_proof(ref.job, ref.index, proof_bytes, wall_ms(), p->synth_ms, p->prove_ms)) {
      log_->warn("job {} partition {}: a proof was already journaled; keeping that one", ref.job, ref.index);
    }
  } catch (const std::exception& e) {
    if (p->slot) slots_.free(p->slot->id);
    p->slot.reset();
    p->state = PartState::kFailed;
    fail_job(ref.job, "partition " + std::to_string(ref.index) + ": cannot journal the proof: " + e.what());
    return;
  }
  if (p->slot) slots_.free(p->slot->id);
  p->slot.reset();
  log_->info("job {} partition {}: proved by {} (synthesis {} ms, proving {} ms)", ref.job, ref.index, w.id,
             p->synth_ms, p->prove_ms);
  ++metrics_.partitions_proved;
  metrics_.synthesis.observe(double(p->synth_ms) / 1000.0);
  metrics_.proving.observe(double(p->prove_ms) / 1000.0);
  const bool finished = jobs_.mark_done(ref, wall_ms());
  write_result(ref.job, ref.index, job->out);
  if (finished) {
    journal_.finish_job(ref.job, JobState::kDone, "", job->finished_ms);
    log_->info("job {}: done, {} proofs in {}", ref.job, job->parts.size(), job->out);
  }
}

void Supervisor::fail_job(uint64_t id, const std::string& error) {
  free_slots(jobs_.fail(id, error, wall_ms()));
  if (Job* job = jobs_.find(id)) journal_.finish_job(id, JobState::kFailed, error, job->finished_ms);
  log_->error("job {}: failed: {}", id, error);
}

void Supervisor::free_slots(const std::vector<shm::Slot>& slots) {
  for (const auto& s : slots) slots_.free(s.id);
}

void Supervisor::check_deadlines() {
  const int64_t now = now_ms();
  if (now >= next_heartbeat_ms_) {
    next_heartbeat_ms_ = now + cfg_.heartbeat_ms;
    for (auto& [id, w] : workers_)
      if (w.pid > 0 && w.state != WorkerState::kStarting) send_to_worker(w, protocol::make(protocol::kHeartbeat));
  }
  for (auto& [id, w] : workers_) {
    if (w.pid > 0 && !w.kill_sent) {
      const char* why = nullptr;
      if (w.state == WorkerState::kStarting && now - w.started_ms > cfg_.ready_timeout_ms) {
        why = "no READY in time";
        w.kill_reason = "no_ready";
      }
      if ((w.state == WorkerState::kIdle || w.state == WorkerState::kBusy) &&
          now - w.last_seen_ms > cfg_.heartbeat_timeout_ms) {
        why = "missed its heartbeats";
        w.kill_reason = "heartbeat";
      }
      // A stop asks over the channel first (SHUTDOWN), then with SIGTERM half-way, then SIGKILL.
      if (w.state == WorkerState::kStopping && w.stop_deadline_ms && !w.term_sent &&
          now > w.stop_deadline_ms - int64_t(cfg_.stop_timeout_ms) / 2) {
        log_->warn("worker {}: still running {} ms after SHUTDOWN; SIGTERM", id, cfg_.stop_timeout_ms / 2);
        signal_worker(w, SIGTERM);
        w.term_sent = true;
      }
      if (w.state == WorkerState::kStopping && w.stop_deadline_ms && now > w.stop_deadline_ms) {
        why = "did not exit within stop_timeout";
        w.kill_reason = "stop_timeout";
      }
      if (why) {
        log_->error("worker {}: {}; sending SIGKILL to pid {}", id, why, w.pid);
        signal_worker(w, SIGKILL);
        w.kill_sent = true;
      }
    }
    if (!stopping_ && w.state == WorkerState::kExited && w.pid == 0 && w.restart_at_ms && now >= w.restart_at_ms) {
      start_worker(w);
    }
  }
}

void Supervisor::dispatch() {
  for (auto& [id, w] : workers_) {
    if (w.state != WorkerState::kIdle || w.retiring) continue;
    if (w.kind == WorkerKind::kSynth) {
      if (stopping_ || draining_) continue;  // in-flight work finishes, none starts
      auto ref = jobs_.next(PartState::kQueued);
      if (!ref) continue;
      Job* job = jobs_.find(ref->job);
      Partition* p = jobs_.find(*ref);
      auto slot = slots_.allocate(job->slot_bytes);
      if (!slot) continue;  // the memory budget is spent: the partition waits for a slot
      p->slot = slot;
      p->state = PartState::kSynthesizing;
      p->worker = w.id;
      p->stage_start_ms = now_ms();
      ++p->attempts;
      if (job->state == JobState::kQueued) job->state = JobState::kRunning;
      if (job->started_ms == 0) {
        job->started_ms = wall_ms();
        journal_.set_started(job->id, job->started_ms);
      }
      json m = protocol::make(protocol::kSynth);
      m["job"] = ref->job;
      m["partition"] = ref->index;
      m["slot"] = slot->id;
      m["generation"] = slot->generation;
      m["offset"] = slot->offset;
      m["size"] = slot->size;
      m["zkey"] = job->zkey;
      m["wtns"] = p->wtns;
      send_to_worker(w, m);
      w.current = ref;
      w.state = WorkerState::kBusy;
    } else {
      auto ref = jobs_.next(PartState::kSynthesized);
      if (!ref) continue;
      Job* job = jobs_.find(ref->job);
      Partition* p = jobs_.find(*ref);
      p->state = PartState::kProving;
      p->worker = w.id;
      p->stage_start_ms = now_ms();
      json m = protocol::make(protocol::kProve);
      m["job"] = ref->job;
      m["partition"] = ref->index;
      m["slot"] = p->slot->id;
      m["generation"] = p->slot->generation;
      m["offset"] = p->slot->offset;
      m["size"] = p->slot->size;
      m["zkey"] = job->zkey;
      send_to_worker(w, m);
      w.current = ref;
      w.state = WorkerState::kBusy;
    }
  }
}

// Tells the workers busy with `job`'s partitions to abandon them (ABORT); each
// answers ok:false at its next stage boundary and the slot is freed then, never
// while a worker may still write into it.
void Supervisor::abort_in_flight(uint64_t job) {
  for (auto& [id, w] : workers_) {
    if (!w.current || w.current->job != job) continue;
    Partition* p = jobs_.find(*w.current);
    if (!p || !p->slot) continue;
    json m = protocol::make(protocol::kAbort);
    m["job"] = job;
    m["partition"] = p->index;
    m["slot"] = p->slot->id;
    m["generation"] = p->slot->generation;
    send_to_worker(w, m);
  }
}

void Supervisor::begin_stop(const std::string& reason) {
  if (stopping_) return;
  stopping_ = true;
  notify("STOPPING=1\nSTATUS=stopping: " + reason);
  drain_deadline_ms_ = now_ms() + cfg_.drain_timeout_ms;
  log_->info("stopping ({}): intake closed, letting in-flight partitions finish (drain_timeout {} ms)", reason,
             cfg_.drain_timeout_ms);
}

// One step of a stop; true when it is complete (every worker reaped).
bool Supervisor::advance_stop() {
  const int64_t now = now_ms();
  const bool in_flight = jobs_.count(PartState::kSynthesizing) + jobs_.count(PartState::kSynthesized) +
                             jobs_.count(PartState::kProving) > 0;
  bool workers_alive = false, releasing = false;
  for (auto& [id, w] : workers_) {
    workers_alive |= w.pid > 0;
    releasing |= w.state == WorkerState::kReleasing;  // the exit waits for their memory too
  }
  if (!shutdown_sent_ && (!in_flight || now >= drain_deadline_ms_ || !workers_alive)) {
    if (in_flight) log_->warn("drain_timeout passed with partitions in flight; stopping the workers anyway");
    for (auto& [id, w] : workers_) {
      if (w.pid <= 0) continue;
      send_to_worker(w, protocol::make(protocol::kShutdown));
      w.state = WorkerState::kStopping;
      w.stop_deadline_ms = now + cfg_.stop_timeout_ms;
    }
    shutdown_sent_ = true;
  }
  return shutdown_sent_ && !workers_alive && !releasing;
}

void Supervisor::update_snapshot() {
  bool all_ready = !stopping_ && !draining_;  // /readyz: intake open and every worker READY
  for (const auto& [id, w] : workers_) all_ready &= w.state == WorkerState::kIdle || w.state == WorkerState::kBusy;
  ready_ = all_ready;
  const int64_t now = now_ms();
  loop_ms_ = now;
  // Only the HTTP thread reads the rendered texts: render them when it exists,
  // at most every 200 ms (the status lists every journaled job).
  if (cfg_.http_address.empty() || now - last_render_ms_ < 200) return;
  last_render_ms_ = now;
  std::string s = status().dump(1);
  std::string m = render_metrics();
  std::lock_guard<std::mutex> lock(snapshot_mutex_);
  snapshot_ = std::move(s);
  metrics_text_ = std::move(m);
}

std::string Supervisor::metrics_snapshot() const {
  std::lock_guard<std::mutex> lock(snapshot_mutex_);
  return metrics_text_;
}

bool Supervisor::healthy() const { return now_ms() - loop_ms_.load() < 5000; }

std::string Supervisor::render_metrics() const {
  std::string out;
  out += render_family("zkfarm_partitions_proved_total", "counter", "Partitions proved and journaled.",
                       {{"", double(metrics_.partitions_proved)}});
  out += render_family("zkfarm_partitions_failed_total", "counter", "Partitions a worker failed on (bad input).",
                       {{"", double(metrics_.partitions_failed)}});
  out += render_family("zkfarm_jobs_accepted_total", "counter", "Jobs accepted and journaled.",
                       {{"", double(metrics_.jobs_accepted)}});
  out += "# HELP zkfarm_synthesis_seconds Time a partition spent in synthesis.\n# TYPE zkfarm_synthesis_seconds histogram\n";
  out += metrics_.synthesis.render("zkfarm_synthesis_seconds");
  out += "# HELP zkfarm_proving_seconds Time a partition spent in the prove step.\n# TYPE zkfarm_proving_seconds histogram\n";
  out += metrics_.proving.render("zkfarm_proving_seconds");
  std::map<std::pair<std::string, std::string>, double> depth;  // (priority, stage)
  for (const char* prio : {"low", "normal", "high", "critical"})
    for (const char* stage : {"synth", "prove"}) depth[{prio, stage}] = 0;
  for (const auto& [id, job] : jobs_.all()) {
    if (job.terminal()) continue;
    depth[{priority_name(job.priority), "synth"}] += double(job.count(PartState::kQueued));
    depth[{priority_name(job.priority), "prove"}] += double(job.count(PartState::kSynthesized));
  }
  std::vector<Sample> qs;
  for (const auto& [k, v] : depth) qs.push_back({"priority=\"" + k.first + "\",stage=\"" + k.second + "\"", v});
  out += render_family("zkfarm_queue_depth", "gauge", "Partitions waiting, by job priority and next stage.", qs);
  out += render_family("zkfarm_arena_bytes", "gauge", "The arena (memory budget) in bytes, used and free.",
                       {{"state=\"used\"", double(slots_.used())}, {"state=\"free\"", double(slots_.capacity() - slots_.used())}});
  std::vector<Sample> rs;
  for (const auto& [k, v] : metrics_.restarts)
    rs.push_back({"kind=\"" + k.first + "\",reason=\"" + escape_label(k.second) + "\"", double(v)});
  out += render_family("zkfarm_worker_restarts_total", "counter", "Workers replaced after a crash or a kill, by kind and reason.", rs);
  std::map<std::pair<std::string, std::string>, double> states;
  for (const auto& [id, w] : workers_) states[{worker_kind_name(w.kind), worker_state_name(w.state)}] += 1;
  std::vector<Sample> ws;
  for (const auto& [k, v] : states) ws.push_back({"kind=\"" + k.first + "\",state=\"" + k.second + "\"", v});
  out += render_family("zkfarm_workers", "gauge", "Workers by kind and state.", ws);
  return out;
}

std::string Supervisor::status_snapshot() const {
  std::lock_guard<std::mutex> lock(snapshot_mutex_);
  return snapshot_;
}

json Supervisor::status() const {
  json s;
  s["version"] = kVersion;
  s["pid"] = getpid();
  s["state_dir"] = cfg_.state_dir;
  s["state"] = stopping_ ? "stopping" : "running";
  s["intake"] = stopping_ ? "closed" : draining_ ? "draining" : "open";
  s["in_flight"] = in_flight();
  json rolling = nullptr;
  if (rolling_current_ || !rolling_.empty() || !rolling_error_.empty()) {
    rolling = {{"what", rolling_what_},
               {"current", rolling_current_ ? json(rolling_current_->worker) : json(nullptr)},
               {"queued", rolling_.size()},
               {"error", rolling_error_}};
  }
  s["rolling"] = rolling;
  s["workers"] = json::array();
  for (const auto& [id, w] : workers_) {
    json j;
    j["id"] = id;
    j["kind"] = worker_kind_name(w.kind);
    j["pid"] = w.pid;
    j["state"] = worker_state_name(w.state);
    j["version"] = w.version;
    j["backend"] = w.backend;
    j["partition"] = w.current ? json(std::to_string(w.current->job) + "/" + std::to_string(w.current->index)) : json(nullptr);
    j["restarts"] = w.restarts;
    j["retiring"] = w.retiring;
    j["binary"] = w.binary;
    if (w.state == WorkerState::kReleasing || !w.release_detail.empty()) j["release"] = w.release_detail;
    if (w.state == WorkerState::kFailed) j["failed_reason"] = w.failed_reason;
    s["workers"].push_back(j);
  }
  s["queue"] = {{"synth", jobs_.count(PartState::kQueued)}, {"prove", jobs_.count(PartState::kSynthesized)}};
  s["arena"] = {{"name", arena_.name()},
                {"bytes", slots_.capacity()},
                {"used", slots_.used()},
                {"free", slots_.capacity() - slots_.used()},
                {"slots", slots_.slots_in_use()}};
  s["jobs"] = json::array();
  for (const auto& [id, job] : jobs_.all()) s["jobs"].push_back(job.to_json());
  return s;
}

void Supervisor::on_control_frame(const std::string& identity, const std::string& frame) {
  json reply;
  try {
    json req = protocol::decode(frame);
    if (protocol::type_of(req) == "submit") {
      start_submit(identity, req);  // answered when its files are checked (submit.cpp)
      return;
    }
    reply = handle_request(req);
  } catch (const protocol::ProtocolError& e) {
    log_->warn("control: dropped a bad request: {}", e.what());
    reply = {{"ok", false}, {"error", std::string("bad request: ") + e.what()}};
  }
  send_reply(identity, reply);
}

void Supervisor::send_reply(const std::string& identity, json reply) {
  reply["v"] = protocol::kProtocolVersion;
  reply["t"] = "REPLY";
  std::string body = protocol::encode(reply);
  std::array<zmq::const_buffer, 3> frames = {zmq::buffer(identity), zmq::const_buffer(), zmq::buffer(body)};
  try {
    zmq::send_multipart(control_sock_, frames, zmq::send_flags::dontwait);
  } catch (const zmq::error_t& e) {
    log_->warn("control: reply not sent: {}", e.what());
  }
}

json Supervisor::handle_request(const json& req) {
  const std::string type = protocol::type_of(req);
  if (type == "status") return {{"ok", true}, {"status", status()}};
  if (type == "jobs") {
    json list = json::array();
    for (const auto& [id, job] : jobs_.all()) list.push_back(job.to_json());
    return {{"ok", true}, {"jobs", list}};
  }
  if (type == "job") {
    Job* job = jobs_.find(protocol::get_u64(req, "job"));
    if (!job) return {{"ok", false}, {"error", "no job " + std::to_string(protocol::get_u64(req, "job"))}};
    return {{"ok", true}, {"job", job->to_json()}};
  }
  if (type == "cancel") {
    const uint64_t id = protocol::get_u64(req, "job");
    Job* job = jobs_.find(id);
    if (!job) return {{"ok", false}, {"error", "no job " + std::to_string(id)}};
    if (job->terminal()) return {{"ok", false}, {"error", "job " + std::to_string(id) + " is already " + job_state_name(job->state)}};
    free_slots(jobs_.cancel(id, wall_ms()));
    journal_.finish_job(id, JobState::kCancelled, "", job->finished_ms);
    abort_in_flight(id);
    log_->info("job {}: cancelled", id);
    return {{"ok", true}};
  }
  if (type == "result") {
    const uint64_t id = protocol::get_u64(req, "job");
    const std::string out = protocol::get_str(req, "out");
    Job* job = jobs_.find(id);
    if (!job) return {{"ok", false}, {"error", "no job " + std::to_string(id) + " in the journal"}};
    if (job->state != JobState::kDone)
      return {{"ok", false}, {"error", "job " + std::to_string(id) + " is " + job_state_name(job->state) + ", not done"}};
    if (out.empty() || out[0] != '/') return {{"ok", false}, {"error", "paths must be absolute: " + out}};
    const int n = write_results(*job, out);
    if (n != int(job->parts.size()))
      return {{"ok", false}, {"error", "wrote " + std::to_string(n) + " of " + std::to_string(job->parts.size()) + " proofs to " + out}};
    return {{"ok", true}, {"written", n}, {"out", out}};
  }
  if (type == "stop") {
    begin_stop("zkfarmctl stop");
    if (req.contains("timeout_s")) drain_deadline_ms_ = now_ms() + int64_t(protocol::get_u64(req, "timeout_s")) * 1000;
    return {{"ok", true}};
  }
  if (type == "drain" || type == "resume" || type == "kill" || type == "restart" || type == "upgrade")
    return lifecycle_request(type, req);
  return {{"ok", false}, {"error", "unknown request '" + type + "'"}};
}

}  // namespace zkfarm::supervisor
