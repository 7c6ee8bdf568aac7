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
#include "witgen/generator_build.hpp"
#include "witgen/subprocess.hpp"

#include <systemd/sd-daemon.h>

namespace zkfarm::supervisor {

namespace fs = std::filesystem;
using nlohmann::json;

namespace {

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

// At most `max` bytes of `s`, with anything but printable ASCII as '?': a
// client's bytes in the log must not forge lines or terminal escapes.
std::string printable(std::string_view s, size_t max) {
  std::string out;
  for (char c : s.substr(0, max)) out += (c >= 0x20 && c < 0x7f) ? c : '?';
  if (s.size() > max) out += "…";
  return out;
}

}  // namespace

void Supervisor::warn_limited(const std::string& line) {
  auto v = bad_frames_.admit(LogLimiter::Clock::now());
  if (v.suppressed) log_->warn("({} similar lines suppressed)", v.suppressed);
  if (v.log) log_->warn("{}", line);
}

Supervisor::Supervisor(Config cfg, std::shared_ptr<spdlog::logger> log)
    : cfg_(std::move(cfg)),
      log_(std::move(log)),
      journal_(cfg_.state_dir + "/journal.sqlite"),
      ctx_(1),
      workers_sock_(ctx_, zmq::socket_type::router),
      control_sock_(ctx_, zmq::socket_type::router),
      arena_([&] {
        // Versions before the memfd arena made a named segment, which outlived
        // a SIGKILLed instance. We hold the state lock, so one of this name is
        // a dead instance's.
        const std::string stale = shm::Arena::name_for(cfg_.state_dir);
        if (shm::Arena::remove(stale)) log_->warn("removed a stale arena /dev/shm/{} left by an earlier instance", stale);
        // Anonymous: its memory goes back when the last process of this farm
        // (zkfarmd or a worker) exits, however it ends (shm/arena.hpp).
        return shm::Arena::create_memfd(shm::Arena::memfd_name_for(cfg_.state_dir), cfg_.arena_mib << 20);
      }()),
      slots_(arena_.capacity()) {
  started_wall_ms_ = wall_ms();
  started_steady_ms_ = now_ms();
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
  // A connection that never finishes ZeroMQ's greeting is closed soon.
  workers_sock_.set(zmq::sockopt::handshake_ivl, 5000);
  control_sock_.set(zmq::sockopt::handshake_ivl, 5000);
  // workers.sock: only zkfarmd's own user (its workers) may connect; control.sock:
  // that user and control_group (docs/security.md). The process umask (077)
  // keeps each socket file private from its bind until these run.
  std::optional<gid_t> control_gid;
  if (!cfg_.control_group.empty()) {
    control_gid = group_id(cfg_.control_group);
    if (!control_gid) throw std::runtime_error("control_group: no group named '" + cfg_.control_group + "'");
    if (::chown(cfg_.state_dir.c_str(), uid_t(-1), *control_gid) != 0)
      throw std::runtime_error("cannot give the state dir to group " + cfg_.control_group + ": " + std::strerror(errno));
  }
  workers_cap_ = std::make_unique<ListenerCap>(ctx_, workers_sock_, workers_path_, 4 * (cfg_.synth_workers + 64),
                                               "workers.sock", log_, [](const std::string& path) {
                                                 ::chmod(path.c_str(), 0600);
                                               });
  control_cap_ = std::make_unique<ListenerCap>(
      ctx_, control_sock_, control_path_, cfg_.control_max_connections, "control.sock", log_,
      [control_gid](const std::string& path) {
        if (control_gid && ::chown(path.c_str(), uid_t(-1), *control_gid) != 0) return;  // stays 0600: no group access
        ::chmod(path.c_str(), 0660);
      });

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
  // Inputs are kept by content under STATE/inputs (submit.cpp), private to zkfarmd.
  for (const char* d : {"/inputs", "/inputs/keys", "/inputs/jobs"}) {
    const std::string path = cfg_.state_dir + d;
    if (::mkdir(path.c_str(), 0700) != 0 && errno != EEXIST)
      throw std::runtime_error("cannot create " + path + ": " + std::strerror(errno));
    struct stat st {};
    if (::lstat(path.c_str(), &st) != 0 || !S_ISDIR(st.st_mode) || st.st_uid != ::geteuid())
      throw std::runtime_error(path + " is not a folder of zkfarmd's user");
    ::chmod(path.c_str(), 0700);
  }
  // Built witness generators, by content hash (circuits.cpp).
  {
    const std::string path = cfg_.state_dir + "/circuits";
    if (::mkdir(path.c_str(), 0700) != 0 && errno != EEXIST)
      throw std::runtime_error("cannot create " + path + ": " + std::strerror(errno));
    struct stat st {};
    if (::lstat(path.c_str(), &st) != 0 || !S_ISDIR(st.st_mode) || st.st_uid != ::geteuid())
      throw std::runtime_error(path + " is not a folder of zkfarmd's user");
  }
  witgen_root_ = witgen::find_witgen_root(fs::path(cfg_.synth_binary).parent_path().string());
  build_pool_ = std::make_unique<CheckPool>(cfg_.generator_builds, 16);
  submit_pool_ = std::make_unique<CheckPool>(cfg_.submit_checks, cfg_.submit_queue);
  // Room for every witness of the submits being checked (each job at most 100000).
  copy_pool_ = std::make_shared<CheckPool>(cfg_.submit_copies, size_t(cfg_.submit_checks) * 100000);
  journal_thread_ = std::make_unique<SerialWorker>("zkfarmd-journal");
  delivery_thread_ = std::make_unique<SerialWorker>("zkfarmd-deliver");
  restore_from_journal();
  load_circuits();
  housekeeping(true);
  log_->info("zkfarmd {} pid {} state dir {}: arena {}:{} ({} MiB), {} synthesis and {} GPU workers", kZkfarmVersion,
             getpid(), cfg_.state_dir, arena_.kind(), arena_.name(), cfg_.arena_mib, cfg_.synth_workers, n);
}

Supervisor::~Supervisor() {
  // The threads end before the members their tasks use; a write still failing
  // is tried once more and dropped rather than held forever.
  journal_giving_up_ = true;
  if (delivery_thread_) delivery_thread_->finish();
  if (journal_thread_) journal_thread_->finish();
  if (sigfd_ >= 0) ::close(sigfd_);
  workers_sock_.close();
  // Replies sent at exit (answer_held) get up to a second to leave; the
  // context's destruction waits for them, then for nothing.
  control_sock_.set(zmq::sockopt::linger, 1000);
  control_sock_.close();
  ::unlink(workers_path_.c_str());
  ::unlink(control_path_.c_str());
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
  size_t requeued = 0, jobs = 0;
  // The journal thread runs these once this function no longer reads the journal.
  std::vector<std::function<void()>> ended;
  for (Job& job : journal_.load()) {
    ++jobs;
    requeued += job.count(PartState::kQueued);
    job.client_delivery = !can_act_as(job.owner_uid);
    for (auto& p : job.parts) p.queued_since_ms = now_ms();
    // Outputs of proved partitions that are missing (a kill between the
    // journal and the write) are written; files already there are left alone.
    std::string error;
    if (job.count(PartState::kDone) > 0 && !job.client_delivery)
      deliver(job, job.out, Peer{job.owner_uid, job.owner_gid, 0}, /*only_missing=*/true, &error);
    for (auto& p : job.parts) p.delivered = p.state == PartState::kDone;
    // Every proof journaled but not the end (killed in between): it ends now.
    if (!job.terminal() && job.count(PartState::kDone) == job.parts.size()) {
      job.state = error.empty() ? JobState::kDone : JobState::kFailed;
      if (!error.empty()) job.error = "a result cannot be written: " + error;
      job.finished_ms = wall_ms();
      ended.push_back([this, id = job.id, st = job.state, e = job.error, t = job.finished_ms] {
        journal_.finish_job(id, st, e, t);
      });
      log_->info("job {}: {} (every proof was journaled before the last stop)", job.id, job_state_name(job.state));
    }
    jobs_.restore(std::move(job));
  }
  for (auto& write : ended) journal_write(std::move(write));
  if (jobs) log_->info("journal: {} jobs restored, {} partitions queued again", jobs, requeued);
}

void Supervisor::start_worker(Worker& w) {
  try {
    if (w.kind == WorkerKind::kGpu) release_check_->baseline(w.device);
    SpawnedWorker spawned = spawn_worker(cfg_, w, workers_endpoint_, arena_.fd());
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
  w.assigned.clear();
  w.computing.reset();
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
                                          {nullptr, sigfd_, ZMQ_POLLIN, 0},
                                          {nullptr, inbox_.fd(), ZMQ_POLLIN, 0}};
    for (const auto& [id, w] : workers_)
      if (w.output && w.output->fd() >= 0) items.push_back({nullptr, w.output->fd(), ZMQ_POLLIN, 0});
    zmq::poll(items.data(), items.size(), std::chrono::milliseconds(50));
    handle_signals();
    inbox_.run();  // what the journal and delivery threads finished
    pump_worker_output();
    workers_cap_->poll(now_ms());
    control_cap_->poll(now_ms());
    reap_children();
    // Drain what is readable now; each frame is bounded, so this stays short.
    for (int i = 0; i < 256; ++i) {
      std::vector<zmq::message_t> parts;
      auto got = zmq::recv_multipart(workers_sock_, std::back_inserter(parts), zmq::recv_flags::dontwait);
      if (!got) break;
      if (parts.size() != 2) {
        warn_limited("dropped a worker message of " + std::to_string(parts.size()) + " frames");
        continue;
      }
      on_worker_frame(parts[0].to_string(), parts[1].to_string(), peer_of(parts[1]));
    }
    for (int i = 0; i < 64; ++i) {
      std::vector<zmq::message_t> parts;
      auto got = zmq::recv_multipart(control_sock_, std::back_inserter(parts), zmq::recv_flags::dontwait);
      if (!got) break;
      if (parts.size() != 3 || parts[1].size() != 0) {
        warn_limited("dropped a control message of " + std::to_string(parts.size()) + " frames");
        continue;
      }
      on_control_frame(parts[0].to_string(), parts[2].to_string(), peer_of(parts[2]));
    }
    if (auto n = bad_frames_.flush(LogLimiter::Clock::now())) log_->warn("({} similar lines suppressed)", n);
    retry_intake();
    finish_submits();
    finish_circuit_adds();
    housekeeping(false);
    check_deadlines();
    advance_release_waits();
    advance_rolling();
    dispatch();
    answer_held(false, 0, "");
    notify_progress();
    if (stopping_ && advance_stop()) break;
    update_snapshot();
  }
  std::filesystem::remove(cfg_.state_dir + "/children");
  finish_background();
  const int code = release_failed_ ? 1 : 0;
  const std::string error =
      release_failed_ ? "the memory of a GPU worker was not released within release_timeout (see the log)" : "";
  // `stop --wait` and long-polled `job`s hear the end before the socket closes
  // (it lingers for these replies: ~Supervisor).
  answer_held(true, code, error);
  if (code != 0) {
    log_->error("stopped, but {}", error);
    return code;
  }
  log_->info("stopped: all workers reaped and released; arena {}:{} is freed as zkfarmd exits", arena_.kind(),
             arena_.name());
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
    pid_t pid;
    {
      // A child a thread runs (a compiler building a witness generator:
      // witgen/subprocess.hpp) is that thread's to reap; peek first.
      std::lock_guard<std::mutex> lock(witgen::ChildRegistry::mutex());
      siginfo_t si{};
      if (::waitid(P_ALL, 0, &si, WEXITED | WNOHANG | WNOWAIT) != 0 || si.si_pid == 0) return;
      if (witgen::ChildRegistry::owns(si.si_pid)) return;  // reaped by its thread within 50 ms
      pid = ::waitpid(si.si_pid, &status, WNOHANG);
    }
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
  p->worker.clear();
  // A GPU worker only reads its slots: the witness is intact, so the partition
  // goes back to the GPU queue in the same slot under a new generation (a
  // late answer about the old one is stale), never through synthesis again.
  if (p->state == PartState::kProving && p->slot && !job->terminal()) {
    if (auto renewed = slots_.renew(p->slot->id)) {
      p->slot = renewed;
      p->state = PartState::kSynthesized;
      ++metrics_.partitions_requeued_intact;
      log_->warn("job {} partition {}: back to the GPU queue, its witness kept in slot {} ({})", ref.job, ref.index,
                 p->slot->id, why);
      return;
    }
  }
  // The slot's generation is bumped, so a late answer about it is stale.
  if (p->slot) slots_.free(p->slot->id);
  p->slot.reset();
  if (job->terminal()) {
    if (p->state != PartState::kDone) p->state = job->state == JobState::kCancelled ? PartState::kCancelled : PartState::kFailed;
    return;
  }
  if (p->state == PartState::kSynthesizing || p->state == PartState::kProving) {
    log_->warn("job {} partition {}: back to the queue ({})", ref.job, ref.index, why);
    p->state = PartState::kQueued;
    p->queued_since_ms = now_ms();
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

void Supervisor::on_worker_frame(const std::string& identity, const std::string& frame,
                                 const std::optional<Peer>& peer) {
  auto it = workers_.find(identity);
  if (it == workers_.end()) {
    warn_limited("dropped a message from unknown worker '" + printable(identity, 64) + "'");
    return;
  }
  Worker& w = it->second;
  // A worker is the process zkfarmd started under that id, as the kernel says
  // (SO_PEERCRED at connect): nothing else can speak, or prove, in its name.
  if (!peer || w.pid <= 0 || peer->pid != w.pid || peer->uid != ::geteuid()) {
    warn_limited("worker " + w.id + ": dropped a message from pid " + (peer ? std::to_string(peer->pid) : "?") +
                         ", not the worker's process (pid " + std::to_string(w.pid) + ")");
    return;
  }
  json msg;
  try {
    msg = protocol::decode(frame);
  } catch (const protocol::ProtocolError& e) {
    warn_limited("worker " + w.id + ": dropped a malformed message: " + e.what());
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
    if (type == protocol::kStarted) {
      on_worker_started(w, msg);
      return;
    }
    log_->warn("worker {}: dropped a message of unknown type {}", w.id, type);
  } catch (const protocol::ProtocolError& e) {
    log_->warn("worker {}: dropped a message: {}", w.id, e.what());
  }
}

namespace {
bool same_part(const PartRef& a, const PartRef& b) { return a.job == b.job && a.index == b.index; }
}  // namespace

void Supervisor::on_worker_started(Worker& w, const json& msg) {
  const PartRef ref{protocol::get_u64(msg, "job"), protocol::get_u32(msg, "partition")};
  if (!slots_.is_current(protocol::get_u32(msg, "slot"), protocol::get_u64(msg, "generation")) ||
      std::none_of(w.assigned.begin(), w.assigned.end(), [&](const PartRef& r) { return same_part(r, ref); }))
    return;  // stale: withdrawn or renewed meanwhile
  w.computing = ref;
  if (Partition* p = jobs_.find(ref)) {
    // Time queued inside the worker is not compute time.
    p->queued_ms += now_ms() - p->stage_start_ms;
    p->stage_start_ms = now_ms();
  }
}

void Supervisor::on_worker_done(Worker& w, const json& msg, bool synth) {
  const PartRef ref{protocol::get_u64(msg, "job"), protocol::get_u32(msg, "partition")};
  const uint32_t slot = protocol::get_u32(msg, "slot");
  const uint64_t generation = protocol::get_u64(msg, "generation");
  auto held = std::find_if(w.assigned.begin(), w.assigned.end(), [&](const PartRef& r) { return same_part(r, ref); });
  if (!slots_.is_current(slot, generation) || held == w.assigned.end()) {
    log_->warn("worker {}: ignored a stale answer for job {} partition {} (slot {} generation {})", w.id, ref.job,
               ref.index, slot, generation);
    return;
  }
  w.assigned.erase(held);
  if (w.computing && same_part(*w.computing, ref)) w.computing.reset();
  if (w.assigned.empty() && w.state == WorkerState::kBusy) w.state = WorkerState::kIdle;
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
    // A witness made from circom inputs: its public signals (values 1..nPublic)
    // are in the slot now; public.json and the verification read them there.
    if (job->inputs() && p->slot) take_public_signals(*job, *p);
    log_->debug("job {} partition {}: synthesized by {}", ref.job, ref.index, w.id);
  } else {
    p->prove_ms = now_ms() - p->stage_start_ms;
    if (msg.contains("key_cached") && msg["key_cached"].is_boolean())
      ++metrics_.key_cache[{"worker", msg["key_cached"].get<bool>() ? "hit" : "miss"}];
    finish_partition(w, ref, protocol::get_bin(msg, "proof"));
  }
}

void Supervisor::finish_partition(Worker& w, const PartRef& ref, const std::string& proof_bytes) {
  Job* job = jobs_.find(ref.job);
  Partition* p = jobs_.find(ref);
  auto free_slot = [&] {
    if (p->slot) slots_.free(p->slot->id);
    p->slot.reset();
  };
  // Nothing is journaled or published before it verifies against the key's
  // verification data taken at submit (verification.cpp): not a wrong result
  // of a faulty device, not a witness that does not satisfy its circuit.
  const std::string bad = check_proof(*job, *p, proof_bytes);
  if (!bad.empty()) {
    ++p->verify_failures;
    ++metrics_.proofs_rejected;
    const bool device = w.backend != "cpu";
    if (device) ++metrics_.device_faults;
    log_->error("job {} partition {}: the proof from {} (backend {}) does not verify: {}{}", ref.job, ref.index, w.id,
                w.backend, bad, device ? " (counted as a device fault)" : "");
    if (device && p->verify_failures < 2) {  // a device fault may not repeat: prove it once more
      // from the same witness (the worker never writes its slot), under a new generation
      if (auto renewed = p->slot ? slots_.renew(p->slot->id) : std::nullopt) {
        p->slot = renewed;
        p->state = PartState::kSynthesized;
      } else {
        free_slot();
        p->state = PartState::kQueued;
        p->queued_since_ms = now_ms();
      }
      return;
    }
    free_slot();
    p->state = PartState::kFailed;
    fail_job(ref.job, "partition " + std::to_string(ref.index) +
                          ": the proof does not verify: the witness does not satisfy the circuit, or the " +
                          (device ? "device" : "prover") + " computed a wrong result (" + bad + ")");
    return;
  }
  p->proof = proof_bytes;
  // Journal first, on the journal thread: once it commits the proof survives
  // anything; a second proof of the same partition (re-proved after a crash)
  // is refused. A journal fault keeps the write for later and goes on: the
  // proof is verified, so publishing it before it is journaled is safe.
  journal_write([this, ref, proof_bytes, proved = wall_ms(), synth = p->synth_ms, prove = p->prove_ms,
                 pub = job->inputs() ? p->public_json : std::string()] {
    if (!journal_.add_proof(ref.job, ref.index, proof_bytes, proved, synth, prove, pub))
      inbox_.post([this, ref] {
        log_->warn("job {} partition {}: a proof was already journaled; keeping that one", ref.job, ref.index);
      });
  });
  free_slot();
  log_->info("job {} partition {}: proved by {} and verified (witness {} ms, queued at the worker {} ms, proving {} ms)",
             ref.job, ref.index, w.id, p->synth_ms, p->queued_ms, p->prove_ms);
  ++metrics_.partitions_proved;
  metrics_.synthesis.observe(double(p->synth_ms) / 1000.0);
  metrics_.proving.observe(double(p->prove_ms) / 1000.0);
  jobs_.mark_done(ref);
  publish(*job, ref.index);  // the job is done once its files are written (on_published)
}

void Supervisor::fail_job(uint64_t id, const std::string& error) {
  const Job* before = jobs_.find(id);
  const bool was_live = before && !before->terminal();
  free_slots(jobs_.fail(id, error.substr(0, 2000), wall_ms()));
  if (Job* job = jobs_.find(id)) {
    if (was_live) count_job_end(*job);
    journal_write([this, id, e = job->error, t = job->finished_ms] { journal_.finish_job(id, JobState::kFailed, e, t); });
  }
  log_->error("job {}: failed: {}", id, error.substr(0, 2000));
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
    if (w.kind != WorkerKind::kSynth || w.state != WorkerState::kIdle || w.retiring) continue;
    if (stopping_ || draining_) continue;  // in-flight work finishes, none starts
    auto ref = jobs_.next(PartState::kQueued);
    if (!ref) break;
    Job* job = jobs_.find(ref->job);
    Partition* p = jobs_.find(*ref);
    auto slot = slots_.allocate(job->slot_bytes);
    if (!slot) break;  // the memory budget is spent: the partition waits for a slot
    p->slot = slot;
    p->state = PartState::kSynthesizing;
    p->worker = w.id;
    p->stage_start_ms = now_ms();
    p->queued_ms = 0;
    if (p->queued_since_ms) metrics_.queue_wait.observe(double(p->stage_start_ms - p->queued_since_ms) / 1000.0);
    ++p->attempts;
    if (job->state == JobState::kQueued) job->state = JobState::kRunning;
    if (job->started_ms == 0) {
      job->started_ms = wall_ms();
      journal_write([this, id = job->id, t = job->started_ms] { journal_.set_started(id, t); });
    }
    json m = protocol::make(protocol::kSynth);
    m["job"] = ref->job;
    m["partition"] = ref->index;
    m["slot"] = slot->id;
    m["generation"] = slot->generation;
    m["offset"] = slot->offset;
    m["size"] = slot->size;
    m["zkey"] = job->zkey;
    if (job->inputs()) {  // circom inputs: the synthesis worker runs the circuit's generator
      m["generator"] = job->generator;
      m["input"] = p->input;
      m["input_name"] = p->input_source;
      m["witness_timeout_ms"] = cfg_.witness_timeout_ms;
      m["witness_memory_mib"] = cfg_.witness_memory_mib;
    } else {
      m["wtns"] = p->wtns;
    }
    send_to_worker(w, m);
    w.assigned.push_back(*ref);
    w.state = WorkerState::kBusy;
  }
  // GPU workers: each holds up to gpu_queue_depth partitions, so the next is
  // already there when one finishes (no round trip between two proofs). The
  // least loaded worker is filled first.
  auto gpu_ready = [](const Worker& w) {
    return w.kind == WorkerKind::kGpu && !w.retiring &&
           (w.state == WorkerState::kIdle || w.state == WorkerState::kBusy);
  };
  for (size_t depth = 1; depth <= cfg_.gpu_queue_depth; ++depth) {
    for (auto& [id, w] : workers_) {
      if (!gpu_ready(w) || w.assigned.size() >= depth) continue;
      auto ref = jobs_.next(PartState::kSynthesized);
      if (!ref) return;
      send_prove(w, *ref);
    }
  }
  // A partition of higher priority than everything a worker holds may go one
  // beyond the depth: the worker takes it next, so it overtakes what is only
  // queued there (never what is computing).
  for (auto& [id, w] : workers_) {
    if (!gpu_ready(w) || w.assigned.size() != cfg_.gpu_queue_depth) continue;
    auto ref = jobs_.next(PartState::kSynthesized);
    if (!ref) return;
    const Priority top = jobs_.find(ref->job)->priority;
    const bool overtakes = std::all_of(w.assigned.begin(), w.assigned.end(), [&](const PartRef& r) {
      const Job* held = jobs_.find(r.job);
      return held && held->priority < top;
    });
    if (overtakes) send_prove(w, *ref);
  }
}

void Supervisor::send_prove(Worker& w, const PartRef& ref) {
  Job* job = jobs_.find(ref.job);
  Partition* p = jobs_.find(ref);
  p->state = PartState::kProving;
  p->worker = w.id;
  p->stage_start_ms = now_ms();
  p->queued_ms = 0;
  json m = protocol::make(protocol::kProve);
  m["job"] = ref.job;
  m["partition"] = ref.index;
  m["slot"] = p->slot->id;
  m["generation"] = p->slot->generation;
  m["offset"] = p->slot->offset;
  m["size"] = p->slot->size;
  m["zkey"] = job->zkey;
  m["priority"] = int(job->priority);
  send_to_worker(w, m);
  w.assigned.push_back(ref);
  w.state = WorkerState::kBusy;
}

// Tells the workers busy with `job`'s partitions to abandon them (ABORT); each
// answers ok:false at its next stage boundary and the slot is freed then, never
// while a worker may still write into it.
void Supervisor::abort_in_flight(uint64_t job) {
  for (auto& [id, w] : workers_) {
    for (const PartRef& ref : w.assigned) {
      if (ref.job != job) continue;
      Partition* p = jobs_.find(ref);
      if (!p || !p->slot) continue;
      json m = protocol::make(protocol::kAbort);
      m["job"] = job;
      m["partition"] = p->index;
      m["slot"] = p->slot->id;
      m["generation"] = p->slot->generation;
      send_to_worker(w, m);
    }
  }
}

void Supervisor::begin_stop(const std::string& reason) {
  if (stopping_) return;
  stopping_ = true;
  if (rolling_op_.result == "running") end_rolling("zkfarmd is stopping (" + reason + ")");
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
  // /readyz: intake open (no drain, no stop, no journal fault) and every worker READY.
  bool all_ready = !stopping_ && !draining_ && intake_fault_.empty();
  for (const auto& [id, w] : workers_) all_ready &= w.state == WorkerState::kIdle || w.state == WorkerState::kBusy;
  ready_ = all_ready;
  const int64_t now = now_ms();
  loop_ms_ = now;
  // Only the HTTP thread reads the rendered texts: render them when it exists,
  // at most every 200 ms (the status lists every journaled job).
  if (cfg_.http_address.empty() || now - last_render_ms_ < 200) return;
  last_render_ms_ = now;
  sample_gpu_usage();
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

namespace {
// Whether this build has the CUDA backend (CMake's ZKFARM_HAVE_CUDA), for zkfarm_build_info.
#ifdef ZKFARM_CUDA_BUILT
constexpr bool kCudaBuilt = true;
#else
constexpr bool kCudaBuilt = false;
#endif
}  // namespace

bool Supervisor::can_act_as(uint32_t uid) { return ::geteuid() == 0 || ::geteuid() == uid; }

void Supervisor::count_job_end(const Job& job) {
  ++metrics_.jobs_finished[job_state_name(job.state)];
  if (job.state == JobState::kDone && job.finished_ms >= job.submitted_ms)
    metrics_.job_duration.observe(double(job.finished_ms - job.submitted_ms) / 1000.0);
}

// NVML's view of each GPU worker's device, every 5 s: a query takes well
// under a millisecond, but /metrics needs no more.
void Supervisor::sample_gpu_usage() {
  const int64_t now = now_ms();
  if (now < next_gpu_sample_ms_) return;
  next_gpu_sample_ms_ = now + 5000;
  for (const auto& [id, w] : workers_) {
    if (w.kind != WorkerKind::kGpu || w.device.empty()) continue;
    if (auto u = release_check_->usage(w.device)) gpu_usage_[w.device] = *u;
    else gpu_usage_.erase(w.device);
  }
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
  out += render_family("zkfarm_build_info", "gauge", "zkfarmd's version and whether its CUDA backend was built (value 1).",
                       {{"version=\"" + std::string(kZkfarmVersion) + "\",cuda=\"" +
                             (kCudaBuilt ? "yes" : "no") + "\"",
                         1}});
  out += render_process_metrics(double(started_wall_ms_) / 1000.0);
  out += gauge("zkfarm_ready", "1 while intake is open and every worker is READY (as /readyz).", ready_.load() ? 1 : 0);
  out += gauge("zkfarm_draining", "1 while drained: submits are queued, no partition starts.", draining_ ? 1 : 0);
  out += gauge("zkfarm_stopping", "1 once a stop has begun.", stopping_ ? 1 : 0);
  out += gauge("zkfarm_intake_refusing", "1 while intake is refused for a fault (see status).", intake_fault_.empty() ? 0 : 1);

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
  out += counter("zkfarm_device_faults_total", "Proofs from a GPU backend that did not verify.",
                 double(metrics_.device_faults));
  out += counter("zkfarm_partitions_requeued_intact_total",
                 "Partitions a dead GPU worker held, proved again from their slot without a new synthesis.",
                 double(metrics_.partitions_requeued_intact));

  out += metrics_.job_duration.render("zkfarm_job_duration_seconds", "Time from a job's submit to its end, done jobs.");
  out += metrics_.queue_wait.render("zkfarm_queue_wait_seconds",
                                    "Time a partition waited in the queue before a synthesis worker took it.");
  out += metrics_.synthesis.render("zkfarm_synthesis_seconds", "Time a partition spent in synthesis.");
  out += metrics_.proving.render("zkfarm_proving_seconds", "Time a partition spent in the prove step.");

  std::map<std::pair<std::string, std::string>, uint64_t> states;
  for (WorkerKind k : {WorkerKind::kSynth, WorkerKind::kGpu})
    for (WorkerState st : {WorkerState::kStarting, WorkerState::kIdle, WorkerState::kBusy, WorkerState::kStopping,
                           WorkerState::kReleasing, WorkerState::kExited, WorkerState::kFailed})
      states[{worker_kind_name(k), worker_state_name(st)}] = 0;
  std::vector<Sample> release;
  for (const auto& [id, w] : workers_) {
    ++states[{worker_kind_name(w.kind), worker_state_name(w.state)}];
    if (w.kind == WorkerKind::kGpu)
      release.push_back({"worker=\"" + escape_label(id) + "\"",
                         w.release_wait ? double(w.release_wait->elapsed().count()) / 1000.0 : 0.0});
  }
  out += render_family("zkfarm_workers", "gauge", "Workers by kind and state.", labelled2("kind", "state", states));
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
               rolling_op_.result == "running" ? 1 : 0);
  out += render_family("zkfarm_arena_bytes", "gauge", "The arena (memory budget) in bytes, used and free.",
                       {{"state=\"used\"", double(slots_.used())},
                        {"state=\"free\"", double(slots_.capacity() - slots_.used())}});
  out += render_family("zkfarm_key_cache_requests_total", "counter",
                       "Proving-key lookups: submit (checked before, by content hash), worker (resident when a partition came).",
                       labelled2("cache", "result", metrics_.key_cache));
  out += counter("zkfarm_journal_write_errors_total", "Journal writes that failed (each failed retry counts).",
                 double(metrics_.journal_write_errors));
  if (!gpu_usage_.empty()) {
    std::vector<Sample> mem, util;
    for (const auto& [dev, u] : gpu_usage_) {
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

std::string Supervisor::status_snapshot() const {
  std::lock_guard<std::mutex> lock(snapshot_mutex_);
  return snapshot_;
}

}  // namespace zkfarm::supervisor
