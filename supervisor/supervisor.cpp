#include "supervisor/supervisor.hpp"

#include "version/build_info.hpp"

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
#include "protocol/worker_channel.hpp"
#include "files/fs_credentials.hpp"
#include "files/input_file.hpp"
#include "files/safe_write.hpp"
#include "supervisor/ledger/journal.hpp"
#include "supervisor/ledger/pg_queue.hpp"
#include "supervisor/log_sink.hpp"
#include "supervisor/workers/process.hpp"
#include "supervisor/signals.hpp"
#include "witgen/generator_build.hpp"
#include "witgen/subprocess.hpp"

#include <systemd/sd-daemon.h>

namespace zkfarm::supervisor {

namespace fs = std::filesystem;
using nlohmann::json;

namespace {

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

// The SQLite journal's file (one owner of the name: opened here, shown by status).
std::string journal_path(const Config& cfg) { return cfg.state_dir + "/journal.sqlite"; }

// The ledger: the PostgreSQL queue named by queue_url (several hosts), else
// the SQLite journal under the state dir (ledger.hpp).
std::unique_ptr<Ledger> open_ledger(const Config& cfg) {
  if (cfg.queue_url.empty()) return std::make_unique<Journal>(journal_path(cfg));
  PgOptions o;
  o.url = cfg.queue_url;
  o.host_id = cfg.host_id;
  o.version = build_info::version();
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
      arena_([&] {
        if (const std::string notice = ledger_->take_acknowledgement_notice(); !notice.empty()) log_->warn("{}", notice);
        if (const std::string fault = ledger_->acknowledgement_fault(); !fault.empty())
          log_->error("{}: acknowledged submits are refused until the mark takes a write", fault);
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
  prctl(PR_SET_CHILD_SUBREAPER, 1);
  const sigset_t mask = loop_signals();
  pthread_sigmask(SIG_BLOCK, &mask, nullptr);
  sigfd_ = signalfd(-1, &mask, SFD_NONBLOCK | SFD_CLOEXEC);
  if (sigfd_ < 0) throw std::runtime_error(std::string("signalfd: ") + std::strerror(errno));

  auto worker_socket = std::make_unique<WorkerSocket>(cfg_.state_dir, 4 * (cfg_.synth_workers + 64), log_);
  // control.sock: zkfarmd's user and control_group (docs/security.md). The
  // process umask (077) keeps the socket file private from its bind until the channel sets its mode.
  std::optional<gid_t> control_gid;
  if (!cfg_.control_group.empty()) {
    control_gid = group_id(cfg_.control_group);
    if (!control_gid) throw std::runtime_error("control_group: no group named '" + cfg_.control_group + "'");
    if (::chown(cfg_.state_dir.c_str(), uid_t(-1), *control_gid) != 0)
      throw std::runtime_error("cannot give the state dir to group " + cfg_.control_group + ": " + std::strerror(errno));
  }
  auto control_channel = std::make_unique<ControlChannel>(ipc_path(cfg_.state_dir, "control.sock"), control_gid,
                                                         cfg_.control_max_connections, log_);

  // The loop's own handler: a job's end is counted for /metrics, whichever part ended it.
  bus_.on<JobEnded>([this](const JobEnded& e) { count_job_end(e.job); });
  workers_ = std::make_unique<WorkerTable>(cfg_, log_, metrics_, devices_.release_check(), gpu_devices(cfg_), worker_socket->endpoint(),
                                           arena_.fd());
  worker_link_ = std::make_unique<WorkerLink>(
      cfg_, log_, std::move(worker_socket), *workers_, bus_, [this](const std::string& line) { warn_limited(line); });
  size_t n = 0;
  for (const auto& [id, w] : workers_->all()) n += w.kind == WorkerKind::kGpu;
  lifecycle_ = std::make_unique<Lifecycle>(
      cfg_, log_, *workers_, jobs_, metrics_, bus_,
      [this](const Worker& w) { worker_link_->send(w, protocol::encode(protocol::Shutdown{})); });
  // Inputs are kept by content under STATE/inputs (submit.cpp), private to
  // zkfarmd; a shared queue's claims are copied into inputs/claims (cluster/claim_prep.cpp).
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
  journal_ = std::make_unique<JournalLane>(cfg_, log_, *ledger_, inbox_, metrics_, bus_);
  delivery_ = std::make_unique<Delivery>(cfg_, log_, jobs_, *journal_, inbox_, bus_);
  pipeline_ = std::make_unique<Pipeline>(
      cfg_, log_, jobs_, slots_, arena_, *workers_, *lifecycle_, metrics_, *journal_, inbox_, bus_,
      Pipeline::Hooks{.send = [this](const Worker& w, const std::string& frame) { worker_link_->send(w, frame); },
                      .circuit_of = [this](const std::string& generator) -> const CircuitRecord* {
                        return circuits_ ? circuits_->by_generator(generator) : nullptr;
                      }});
  if (SharedQueue* queue = ledger_->queue()) {
    bool created = false;
    const std::string queue_id = queue->queue_id(&created);
    check_shared_dir(cfg_.shared_dir, queue_id, created);
    queue->register_host();  // only now: a start refused above leaves no trace in the hosts table
    log_->info("queue: {} as host '{}' (lease {} s, shared dir {})", ledger_->where(), cfg_.host_id,
               cfg_.lease_seconds, cfg_.shared_dir);
  } else {
    restore_from_journal();
  }
  intake_ = std::make_unique<Intake>(cfg_, ledger_->shared());
  circuits_ = std::make_unique<CircuitRegistry>(
      cfg_, log_, ledger_->shared(), witgen::find_witgen_root(fs::path(cfg_.synth_binary).parent_path().string()),
      bus_,
      CircuitRegistry::Hooks{
          .submit_context = [this] { return intake_->context(); },
          .put =
              [this](std::shared_ptr<const CircuitRecord> record, std::function<void(const std::string&)> done) {
                journal_->post([this, record, done](Ledger& ledger) {
                  std::string error;
                  // `done` runs whatever the write throws: until it does, the
                  // add holds its name and housekeeping's removals wait.
                  try {
                    ledger.put_circuit(*record);
                  } catch (const std::exception& e) {
                    error = e.what();
                  } catch (...) {
                    error = "unknown error";
                  }
                  inbox_.post([done, error] { done(error); });
                });
              },
          .remove = [this](const std::string& name) { journal_->remove_circuit(name); },
          .remember_vk = [this](const std::string& sha,
                                std::shared_ptr<const ProofVerifier> vk) { pipeline_->keys().remember(sha, std::move(vk)); }});
  circuits_->replace_all(ledger_->circuits());
  admission_ = std::make_unique<Admission>(
      cfg_, log_, *intake_, *circuits_, *lifecycle_, *journal_, inbox_, jobs_, slots_, *pipeline_, metrics_,
      bus_,
      Admission::Hooks{.remove_inputs = [this](const Job& job) { remove_job_inputs(job); },
                       .queue_fault = [this] { return cluster_ && !cluster_->reachable() ? cluster_->fault() : std::string(); },
                       .queue_wake = [this] { if (cluster_) cluster_->wake(); }});
  if (ledger_->queue())
    cluster_ = std::make_unique<ClusterMirror>(cfg_, log_, ledger_->where(), *journal_, inbox_, jobs_, *workers_, *lifecycle_,
                                               *pipeline_, *circuits_, *intake_, bus_);
  control_ = std::make_unique<ControlApi>(
      cfg_, log_, std::move(control_channel), jobs_, *lifecycle_, *circuits_, metrics_, bus_,
      ControlApi::Hooks{
          .submit = [this](const std::string& identity, const protocol::Submit& req,
                           const Peer& peer) { admission_->start(identity, req, peer); },
          .result = [this](const std::string& identity, const protocol::Result& req, const Peer& peer,
                           Role role) { delivery_->start_result(identity, req, peer, role); },
          .status = [this](std::optional<uint32_t> owner) { return status(owner); },
          .cancel = [this](uint64_t id, uint32_t by_uid) { pipeline_->cancel_job(id, by_uid); },
          .kill_worker =
              [this](const std::string& id) {
                const Worker* w = workers_->find(id);
                const int64_t pid = w ? w->pid : 0;
                const std::string why_not = workers_->kill_one(id, "zkfarmctl kill " + id);
                return why_not.empty() ? json{{"ok", true}, {"worker", id}, {"pid", pid}}
                                       : json{{"ok", false}, {"error", why_not}};
              },
          .warn = [this](const std::string& line) { warn_limited(line); }});
  if (!circuits_->all().empty()) log_->info("journal: {} circuits registered", circuits_->all().size());
  housekeeping(true);
  log_->info("{}: pid {} state dir {}: arena {}:{} ({} MiB), {} synthesis and {} GPU workers", build_info::version_line("zkfarmd"),
             getpid(), cfg_.state_dir, arena_.kind(), arena_.name(), cfg_.arena_mib, cfg_.synth_workers, n);
}

Supervisor::~Supervisor() {
  // The threads end before the members their tasks use; a write still failing
  // is tried once more and dropped rather than held forever.
  if (journal_) journal_->give_up();
  if (delivery_) delivery_->finish();
  if (journal_) journal_->stop();
  if (sigfd_ >= 0) ::close(sigfd_);
  worker_link_.reset();  // and workers.sock with it
  // Replies sent at exit (answer_held) get up to a second to leave; the
  // context's destruction waits for them, then for nothing. From here on no
  // event may be emitted: the bus still holds the control API's handler
  // (nothing runs the inbox or a part's method during destruction).
  control_.reset();
}

void Supervisor::finish_background() {
  // Outputs first: a delivery's completion may queue the job's last journal write.
  delivery_->finish();
  inbox_.run();
  journal_->finish();
}

// Brings back every journaled job: partitions without a proof are queued again
// (what was in flight when the last instance died is proved anew), finished jobs
// past the retention are pruned, and missing output files of proved partitions
// are rewritten from the journal.
void Supervisor::restore_from_journal() {
  size_t requeued = 0, jobs = 0;
  // Journaled (on the journal thread) once this function no longer reads the journal.
  std::vector<uint64_t> ended;
  for (Job& job : ledger_->load()) {
    ++jobs;
    requeued += job.count(PartState::kQueued);
    job.client_delivery = job.out.empty() || !files::can_act_as(job.owner_uid);
    for (auto& p : job.parts) p.queued_since_ms = steady_ms();
    // Outputs of proved partitions that are missing (a kill between the
    // journal and the write) are written; files already there are left alone.
    std::string error;
    if (job.count(PartState::kDone) > 0 && !job.client_delivery)
      delivery_->deliver(*ledger_, job, job.out, Peer{job.owner_uid, job.owner_gid, 0}, /*only_missing=*/true, &error);
    for (auto& p : job.parts) p.delivered = p.state == PartState::kDone;
    // Every proof journaled but not the end (killed in between): it ends now.
    if (!job.terminal() && job.count(PartState::kDone) == job.parts.size()) {
      job.state = error.empty() ? JobState::kDone : JobState::kFailed;
      if (!error.empty()) job.error = "a result cannot be written: " + error;
      job.finished_ms = wall_ms();
      log_->info("job {}: {} (every proof was journaled before the last stop)", job.id, job_state_name(job.state));
      ended.push_back(job.id);
    }
    jobs_.restore(std::move(job));
  }
  for (uint64_t id : ended) {
    const Job* job = jobs_.find(id);
    journal_->finish_job(id, job->state, job->error, job->finished_ms);
  }
  if (jobs) log_->info("journal: {} jobs restored, {} partitions queued again", jobs, requeued);
}

int Supervisor::run() {
  workers_->clean_stale_children();
  for (auto& [id, w] : workers_->all()) workers_->start(w, steady_ms());
  update_snapshot();
  for (;;) {
    std::vector<zmq::pollitem_t> items = {worker_link_->pollitem(),
                                          control_->pollitem(),
                                          {nullptr, sigfd_, ZMQ_POLLIN, 0},
                                          {nullptr, inbox_.fd(), ZMQ_POLLIN, 0}};
    for (const auto& [id, w] : workers_->all())
      if (w.output && w.output->fd() >= 0) items.push_back({nullptr, w.output->fd(), ZMQ_POLLIN, 0});
    zmq::poll(items.data(), items.size(), std::chrono::milliseconds(50));
    const auto pass_start = std::chrono::steady_clock::now();
    handle_signals();
    inbox_.run();  // what the journal and delivery threads finished
    pump_worker_output();
    worker_link_->poll_cap(steady_ms());
    reap_children();
    worker_link_->serve(256);
    control_->serve(steady_ms());
    if (auto n = bad_frames_.flush(LogLimiter::Clock::now())) log_->warn("({} similar lines suppressed)", n);
    journal_->retry_intake(steady_ms());
    admission_->finish_checks();
    circuits_->finish_adds();
    housekeeping(false);
    worker_link_->check_deadlines(steady_ms(), lifecycle_->stopping());
    workers_->advance_release_waits(steady_ms(), lifecycle_->stopping());
    lifecycle_->advance_rolling(steady_ms());
    if (cluster_) cluster_->tick();
    pipeline_->dispatch();
    control_->answer_held(false, 0, "");
    lifecycle_->notify_progress(steady_ms());
    if (lifecycle_->stopping() && lifecycle_->advance_stop(steady_ms())) break;
    update_snapshot();
    metrics_.loop_busy_s += std::chrono::duration<double>(std::chrono::steady_clock::now() - pass_start).count();
  }
  std::filesystem::remove(cfg_.state_dir + "/children");
  // What a shared queue's host still holds (a drain that timed out) goes
  // back at once rather than after its lease; then the host says it stopped.
  if (cluster_) cluster_->leave();
  finish_background();
  const int code = workers_->release_failed() ? 1 : 0;
  const std::string error =
      workers_->release_failed() ? "the memory of a GPU worker was not released within release_timeout (see the log)" : "";
  // `stop --wait` and long-polled `job`s hear the end before the socket closes
  // (it lingers for these replies: ~Supervisor).
  control_->answer_held(true, code, error);
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
    if (lifecycle_->stopping() && (sig == SIGTERM || sig == SIGINT)) {
      lifecycle_->stop_now(std::string("second ") + sigabbrev_np(sig) + " during the stop");
      continue;
    }
    lifecycle_->begin_stop(std::string("signal ") + strsignal(sig));
  }
}

void Supervisor::reopen_logs(const char* why) {
  for (auto& sink : log_->sinks()) {
    auto file = std::dynamic_pointer_cast<ReopenableFileSink>(sink);
    if (!file) continue;
    try {
      file->reopen();
      log_->info("SIG{}: reopened {}", why, file->path());
      if (!file->group_error().empty()) log_->warn("{}", file->group_error());
    } catch (const std::exception& e) {
      log_->error("SIG{}: cannot reopen the log file: {}", why, e.what());
    }
  }
}

void Supervisor::pump_worker_output() {
  const int64_t now = steady_ms();
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
    const bool asked = e.asked || lifecycle_->stopping();
    const std::string why = asked ? e.how : "died (" + e.how + ")";
    // What it held goes back (a crash counts against its partition), a failed
    // upgrade puts the old binary back, then the table decides the respawn.
    pipeline_->worker_gone(*w, !asked, why);
    lifecycle_->on_worker_gone(*w, !asked, why, !asked && e.no_respawn, steady_ms());
  }
}

std::string Supervisor::not_ready_reason() const {
  if (lifecycle_->stopping()) return "stopping";
  if (lifecycle_->draining()) return "drained (`zkfarmctl resume` takes partitions again)";
  if (auto fault = intake_fault(); !fault.empty()) return "refusing jobs: " + fault;
  // A host that has not yet mirrored the queue would answer "no job" for a
  // job submitted elsewhere: not ready until the first sync reached it.
  if (cluster_ && !cluster_->synced()) return "mirroring the queue's jobs";
  if (workers_->ready() == workers_->size()) return "";
  std::string why;
  for (const auto& [id, w] : workers_->all()) {
    if (w.state == WorkerState::kIdle || w.state == WorkerState::kBusy) continue;
    if (why.size() > 400) {
      why += ", …";
      break;
    }
    // The failure's text (a worker's last line may name a user's file) only
    // where /status shows details too: http_status_detail.
    why += (why.empty() ? "" : ", ") + id + " " + worker_state_name(w.state) +
           (cfg_.http_status_detail && w.state == WorkerState::kFailed && !w.failed_reason.empty()
                ? " (" + w.failed_reason.substr(0, 160) + ")"
                : std::string());
  }
  return "workers not READY: " + why;
}

void Supervisor::update_snapshot() {
  // /readyz: intake open (no drain, no stop, no journal fault) and every worker READY.
  const int64_t now = steady_ms();
  published_.mark_loop(now, not_ready_reason());
  // Only the HTTP thread reads the rendered texts: render them when it exists,
  // at most every 200 ms (the status lists every journaled job).
  if (cfg_.http_address.empty() || !published_.render_due(now)) return;
  devices_.sample(now, *workers_);
  std::string s = status().dump(1);
  std::string m = render_metrics();
  published_.publish(std::move(s), std::move(m));
}

std::string Supervisor::intake_fault() const {
  // A shared queue out of reach is named first: a journal write that failed
  // because of it (the journal lane writes to the queue) says the same thing
  // less plainly, and whichever call failed first must not decide the words.
  if (cluster_ && !cluster_->reachable()) return "the queue is unreachable: " + cluster_->fault();
  return journal_->intake_fault();
}

json Supervisor::status(std::optional<uint32_t> only_owner) const {
  FarmView v{jobs_, *workers_};
  v.version = build_info::version();
  v.state_dir = cfg_.state_dir;
  v.pid = ::getpid();
  v.stopping = lifecycle_->stopping();
  v.draining = lifecycle_->draining();
  v.ready = published_.ready();
  v.intake_fault = intake_fault();
  v.started_ms = published_.started_wall_ms();
  v.uptime_s = published_.uptime_s(steady_ms());
  v.now_ms = steady_ms();
  // The current rolling restart/upgrade, or the last one with its result.
  v.rolling = lifecycle_->rolling_json();
  v.rolling_worker = lifecycle_->rolling_worker();
  if (const Worker* w = workers_->find(v.rolling_worker)) v.rolling_step = lifecycle_->rolling_step(*w);
  v.arena = {{"kind", arena_.kind()},
             {"name", arena_.name()},
             {"bytes", slots_.capacity()},
             {"used", slots_.used()},
             {"free", slots_.capacity() - slots_.used()},
             {"slots", slots_.slots_in_use()}};
  v.connections = {{"control", control_ ? control_->open_connections() : 0},
                   {"control_sheds", control_ ? control_->sheds() : 0}};
  v.cluster = cluster_ ? cluster_->status() : nlohmann::json(nullptr);
  v.status_finished_jobs = cfg_.status_finished_jobs;
  if (cfg_.queue_url.empty()) {
    // Two stat(2)s a status: what the journal and its WAL take on disk now.
    const std::string path = journal_path(cfg_);
    auto bytes = [](const std::string& p) {
      struct stat st {};
      return ::stat(p.c_str(), &st) == 0 ? json(uint64_t(st.st_size)) : json(nullptr);
    };
    v.journal = {{"path", path}, {"bytes", bytes(path)}, {"wal_bytes", bytes(path + "-wal")}};
  }
  v.http_address = cfg_.http_address;
  v.log_file = cfg_.log_path();  // "" (null in the reply) when log_file turns the file off
  v.config_file = cfg_.config_file;
  return status_json(v, only_owner);
}

std::string Supervisor::metrics_snapshot() const {
  return published_.metrics();
}

bool Supervisor::healthy() const { return published_.healthy(steady_ms()); }


std::string Supervisor::status_snapshot() const {
  return published_.status();
}

}  // namespace zkfarm::supervisor
