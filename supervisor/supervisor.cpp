#include "supervisor/supervisor.hpp"

#include <signal.h>
#include <sys/prctl.h>
#include <sys/signalfd.h>
#include <sys/stat.h>
#include <cstring>
#include <sys/wait.h>
#include <unistd.h>

#include <chrono>
#include <filesystem>
#include <fstream>
#include <thread>

#include "groth16/errors.hpp"
#include "groth16/proof_json.hpp"
#include "groth16/prover.hpp"
#include "protocol/messages.hpp"
#include "protocol/proof_codec.hpp"
#include "protocol/worker_channel.hpp"
#include "files/input_file.hpp"
#include "files/safe_write.hpp"
#include "supervisor/ledger/journal.hpp"
#include "supervisor/ledger/pg_queue.hpp"
#include "supervisor/log_sink.hpp"
#include "supervisor/process.hpp"
#include "supervisor/signals.hpp"
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

// This machine, for the hosts table: systemd's machine id, else the hostname.
std::string machine_id() {
  std::ifstream f("/etc/machine-id");
  std::string id;
  if (f >> id && !id.empty()) return id.substr(0, 64);
  char name[256] = {};
  ::gethostname(name, sizeof name - 1);
  return name;
}

// The ledger: the PostgreSQL queue named by queue_url (several hosts), else
// the SQLite journal under the state dir (ledger.hpp).
std::unique_ptr<Ledger> open_ledger(const Config& cfg) {
  if (cfg.queue_url.empty()) return std::make_unique<Journal>(cfg.state_dir + "/journal.sqlite");
  PgOptions o;
  o.url = cfg.queue_url;
  o.host_id = cfg.host_id;
  o.version = kZkfarmVersion;
  std::string devices;
  for (const auto& d : gpu_devices(cfg)) devices += (devices.empty() ? "" : ",") + (d.empty() ? "cpu" : "gpu " + d);
  o.devices = devices;
  o.lease_seconds = cfg.lease_seconds;
  o.max_attempts = cfg.max_attempts;
  o.instance = machine_id() + ":" + cfg.state_dir;
  o.register_host = false;  // after the shared dir's checks (the constructor's)
  auto q = std::make_unique<PgQueue>(o);
  q->set_shared_dir(cfg.shared_dir);
  return q;
}

// The shared dir must be a folder of zkfarmd's user that nobody else may
// write: every host trusts what is under it once its hash matches, and a
// folder others could write would let them delete or swap entries. It must
// also be this queue's: its marker holds the queue's id, so an empty mount
// point (the shared file system not mounted) or another queue's folder is
// refused before anything is written into it.
void check_shared_dir(const std::string& dir, const std::string& queue_id, bool queue_created) {
  auto check_folder = [](const std::string& path, bool follow) {
    struct stat st {};
    if ((follow ? ::stat(path.c_str(), &st) : ::lstat(path.c_str(), &st)) != 0)
      throw std::runtime_error("shared_dir " + path + ": " + std::strerror(errno));
    if (!S_ISDIR(st.st_mode)) throw std::runtime_error("shared_dir " + path + ": not a folder");
    if (st.st_uid != ::geteuid())
      throw std::runtime_error("shared_dir " + path + ": owned by uid " + std::to_string(st.st_uid) +
                               ", not by zkfarmd's user (uid " + std::to_string(::geteuid()) + ")");
    if (st.st_mode & (S_IWGRP | S_IWOTH))
      throw std::runtime_error("shared_dir " + path + ": writable by its group or others; chmod go-w it");
  };
  check_folder(dir, true);
  const std::string marker = dir + "/" + kSharedMarker;
  std::string found;
  if (files::exists_nofollow(dir, kSharedMarker)) {
    files::UniqueFd fd = files::open_regular_file(marker);
    char buf[128] = {};
    const ssize_t n = ::read(fd.get(), buf, sizeof buf - 1);
    found.assign(buf, n > 0 ? size_t(n) : 0);
    while (!found.empty() && (found.back() == '\n' || found.back() == ' ')) found.pop_back();
    if (found != queue_id)
      throw std::runtime_error("shared_dir " + dir + " belongs to another queue (" + marker + " says '" +
                               found.substr(0, 64) + "', this queue's id is '" + queue_id + "')");
  } else if (queue_created) {
    files::write_file_safe(dir, kSharedMarker, queue_id + "\n", 0400);
  } else {
    throw std::runtime_error("shared_dir " + dir + " has no " + kSharedMarker + " of this queue (id '" + queue_id +
                             "'): is the shared folder mounted there? The host that started the queue wrote it; "
                             "copy it from another host's mount if this folder is the right one");
  }
  for (const char* sub : {"keys", "jobs", "generators"}) {
    const std::string path = dir + "/" + sub;
    if (::mkdir(path.c_str(), 0700) != 0 && errno != EEXIST)
      throw std::runtime_error("cannot create " + path + ": " + std::strerror(errno));
    check_folder(path, false);  // a link here would point the farm's files elsewhere
  }
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
      ledger_(open_ledger(cfg_)),
      ctx_(1),
      workers_sock_(ctx_, zmq::socket_type::router),
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
  const sigset_t mask = loop_signals();
  pthread_sigmask(SIG_BLOCK, &mask, nullptr);
  sigfd_ = signalfd(-1, &mask, SFD_NONBLOCK | SFD_CLOEXEC);
  if (sigfd_ < 0) throw std::runtime_error(std::string("signalfd: ") + std::strerror(errno));

  workers_path_ = ipc_path(cfg_.state_dir, "workers.sock");
  ::unlink(workers_path_.c_str());  // stale, under our lock
  workers_endpoint_ = "ipc://" + workers_path_;
  workers_sock_.set(zmq::sockopt::linger, 0);
  workers_sock_.set(zmq::sockopt::maxmsgsize, int64_t(protocol::kMaxFrameBytes));
  // A connection that never finishes ZeroMQ's greeting is closed soon.
  workers_sock_.set(zmq::sockopt::handshake_ivl, 5000);
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
  control_ = std::make_unique<ControlChannel>(ipc_path(cfg_.state_dir, "control.sock"), control_gid,
                                              cfg_.control_max_connections, log_);

  release_check_ = FakeReleaseCheck::from_env();
  if (!release_check_) release_check_ = ReleaseCheck::make_default();
  workers_ = std::make_unique<WorkerTable>(cfg_, log_, metrics_, *release_check_, gpu_devices(cfg_), workers_endpoint_,
                                           arena_.fd());
  size_t n = 0;
  for (const auto& [id, w] : workers_->all()) n += w.kind == WorkerKind::kGpu;
  if (sd_watchdog_enabled(0, &watchdog_usec_) <= 0) watchdog_usec_ = 0;
  // Inputs are kept by content under STATE/inputs (submit.cpp), private to
  // zkfarmd; a shared queue's claims are copied into inputs/claims (cluster.cpp).
  for (const char* d : {"/inputs", "/inputs/keys", "/inputs/jobs", "/inputs/claims"}) {
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
  if (ledger_->shared()) {
    bool created = false;
    const std::string queue_id = ledger_->queue_id(&created);
    check_shared_dir(cfg_.shared_dir, queue_id, created);
    ledger_->register_host();  // only now: a start refused above leaves no trace in the hosts table
    prep_pool_ = std::make_unique<CheckPool>(2, 1024);
    listener_ = std::make_unique<PgListener>(cfg_.queue_url, [this](const std::string& payload) {
      if (payload == "circuit" || payload == "connected") cluster_.circuits_changed = true;
      cluster_.woken = true;
      inbox_.post([] {});  // wakes the loop's poll
    });
    log_->info("queue: {} as host '{}' (lease {} s, shared dir {})", ledger_->where(), cfg_.host_id,
               cfg_.lease_seconds, cfg_.shared_dir);
  } else {
    restore_from_journal();
  }
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
  control_.reset();
  ::unlink(workers_path_.c_str());
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
  for (Job& job : ledger_->load()) {
    ++jobs;
    requeued += job.count(PartState::kQueued);
    job.client_delivery = job.out.empty() || !can_act_as(job.owner_uid);
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
        ledger_->finish_job(id, st, e, t);
      });
      log_->info("job {}: {} (every proof was journaled before the last stop)", job.id, job_state_name(job.state));
    }
    jobs_.restore(std::move(job));
  }
  for (auto& write : ended) journal_write(std::move(write));
  if (jobs) log_->info("journal: {} jobs restored, {} partitions queued again", jobs, requeued);
}

int Supervisor::run() {
  workers_->clean_stale_children();
  for (auto& [id, w] : workers_->all()) workers_->start(w, now_ms());
  update_snapshot();
  for (;;) {
    std::vector<zmq::pollitem_t> items = {{workers_sock_.handle(), 0, ZMQ_POLLIN, 0},
                                          control_->pollitem(),
                                          {nullptr, sigfd_, ZMQ_POLLIN, 0},
                                          {nullptr, inbox_.fd(), ZMQ_POLLIN, 0}};
    for (const auto& [id, w] : workers_->all())
      if (w.output && w.output->fd() >= 0) items.push_back({nullptr, w.output->fd(), ZMQ_POLLIN, 0});
    zmq::poll(items.data(), items.size(), std::chrono::milliseconds(50));
    handle_signals();
    inbox_.run();  // what the journal and delivery threads finished
    pump_worker_output();
    workers_cap_->poll(now_ms());
    control_->poll_cap(now_ms());
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
    for (auto& r : control_->receive(64, [this](const std::string& line) { warn_limited(line); }))
      on_control_frame(r.identity, r.body, r.peer);
    if (auto n = bad_frames_.flush(LogLimiter::Clock::now())) log_->warn("({} similar lines suppressed)", n);
    retry_intake();
    finish_submits();
    finish_circuit_adds();
    housekeeping(false);
    check_deadlines();
    workers_->advance_release_waits(now_ms(), stopping_);
    advance_rolling();
    cluster_tick();
    dispatch();
    answer_held(false, 0, "");
    notify_progress();
    if (stopping_ && advance_stop()) break;
    update_snapshot();
  }
  std::filesystem::remove(cfg_.state_dir + "/children");
  if (ledger_->shared()) {
    // What is still held (a drain that timed out) goes back at once rather
    // than after its lease; then the host says it stopped.
    std::vector<uint64_t> left;
    for (const auto& [ref, token] : jobs_.leases()) left.push_back(token);
    journal_thread_->post([this, left] {
      try {
        if (!left.empty()) ledger_->release(left);
        ledger_->deregister();
      } catch (const std::exception& e) {
        inbox_.post([this, what = std::string(e.what())] { log_->warn("queue: at exit: {}", what); });
      }
    });
    listener_.reset();
  }
  finish_background();
  const int code = workers_->release_failed() ? 1 : 0;
  const std::string error =
      workers_->release_failed() ? "the memory of a GPU worker was not released within release_timeout (see the log)" : "";
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
    if (stray_signal(sig)) {  // signals.hpp: their default action would end the farm
      warn_limited(std::string("signal ") + (sigabbrev_np(sig) ? "SIG" + std::string(sigabbrev_np(sig)) : std::to_string(sig)) +
                   " from pid " + std::to_string(si.ssi_pid) + " (uid " + std::to_string(si.ssi_uid) + "): ignored");
      continue;
    }
    if (stopping_ && (sig == SIGTERM || sig == SIGINT)) {
      drain_deadline_ms_ = 0;
      workers_->kill_all(std::string("second ") + sigabbrev_np(sig) + " during the stop");
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
  for (auto& [id, w] : workers_->all()) {
    if (!w.output) continue;
    w.output->pump(now, [&, wid = id](std::string_view line) { log_->info("[{}] {}", wid, line); });
  }
}

// The worker table reaps and reads exit codes; what an exit means for the
// partitions the worker held and for a rolling upgrade is decided here, then
// the table decides the respawn (worker_table.hpp).
void Supervisor::reap_children() {
  for (const WorkerExit& e : workers_->reap()) {
    Worker* w = workers_->find(e.worker);
    if (!w) continue;
    // Operator-commanded stops (SHUTDOWN sent, a stop, a rolling restart) never count as crashes.
    const bool asked = e.asked || stopping_;
    on_worker_exit(*w, !asked, asked ? e.how : "died (" + e.how + ")", !asked && e.no_respawn);
  }
}

void Supervisor::update_snapshot() {
  // /readyz: intake open (no drain, no stop, no journal fault) and every worker READY.
  bool all_ready = !stopping_ && !draining_ && intake_fault_.empty() && (!ledger_->shared() || cluster_.reachable);
  all_ready &= workers_->ready() == workers_->size();
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

json Supervisor::status(std::optional<uint32_t> only_owner) const {
  FarmView v{jobs_, *workers_};
  v.version = kZkfarmVersion;
  v.state_dir = cfg_.state_dir;
  v.pid = ::getpid();
  v.stopping = stopping_;
  v.draining = draining_;
  v.ready = ready_.load();
  v.intake_fault = !intake_fault_.empty()                      ? intake_fault_
                   : ledger_->shared() && !cluster_.reachable ? "the queue is unreachable: " + cluster_.fault
                                                              : "";
  v.started_ms = started_wall_ms_;
  v.uptime_s = double(now_ms() - started_steady_ms_) / 1000.0;
  v.now_ms = now_ms();
  // The current rolling restart/upgrade, or the last one with its result.
  if (rolling_op_.id) {
    v.rolling = {{"id", rolling_op_.id},
                 {"what", rolling_op_.what},
                 {"result", rolling_op_.result},
                 {"current", rolling_current_ ? json(rolling_current_->worker) : json(nullptr)},
                 {"queued", rolling_.size()},
                 {"replaced", rolling_op_.replaced},
                 {"total", rolling_op_.total},
                 {"error", rolling_op_.error},
                 {"started_ms", rolling_op_.started_ms},
                 {"finished_ms", rolling_op_.finished_ms ? json(rolling_op_.finished_ms) : json(nullptr)}};
  }
  if (rolling_current_) {
    v.rolling_worker = rolling_current_->worker;
    if (const Worker* w = workers_->find(rolling_current_->worker)) v.rolling_step = rolling_step(*w);
  }
  v.arena = {{"kind", arena_.kind()},
             {"name", arena_.name()},
             {"bytes", slots_.capacity()},
             {"used", slots_.used()},
             {"free", slots_.capacity() - slots_.used()},
             {"slots", slots_.slots_in_use()}};
  v.connections = {{"control", control_ ? control_->open_connections() : 0},
                   {"control_sheds", control_ ? control_->sheds() : 0}};
  v.cluster = cluster_status();
  v.status_finished_jobs = cfg_.status_finished_jobs;
  return status_json(v, only_owner);
}

std::string Supervisor::metrics_snapshot() const {
  std::lock_guard<std::mutex> lock(snapshot_mutex_);
  return metrics_text_;
}

bool Supervisor::healthy() const { return now_ms() - loop_ms_.load() < 5000; }

bool Supervisor::can_act_as(uint32_t uid) { return ::geteuid() == 0 || ::geteuid() == uid; }

std::string Supervisor::status_snapshot() const {
  std::lock_guard<std::mutex> lock(snapshot_mutex_);
  return snapshot_;
}

}  // namespace zkfarm::supervisor
