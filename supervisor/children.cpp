#include "supervisor/children.hpp"

#include "supervisor/process.hpp"

#include <signal.h>
#include <sys/prctl.h>

#include <boost/process.hpp>
#include <boost/process/extend.hpp>

namespace zkfarm::supervisor {

namespace bp = boost::process;

const char* worker_kind_name(WorkerKind k) { return k == WorkerKind::kSynth ? "synth" : "gpu"; }

const char* worker_state_name(WorkerState s) {
  switch (s) {
    case WorkerState::kStarting: return "starting";
    case WorkerState::kIdle: return "idle";
    case WorkerState::kBusy: return "busy";
    case WorkerState::kStopping: return "stopping";
    case WorkerState::kReleasing: return "releasing";
    case WorkerState::kExited: return "exited";
    case WorkerState::kFailed: return "failed";
  }
  return "?";
}

pid_t spawn_worker(const Config& cfg, const Worker& w, const std::string& endpoint, const std::string& arena) {
  const bool synth = w.kind == WorkerKind::kSynth;
  std::vector<std::string> args = {"--endpoint", endpoint, "--arena", arena, "--id", w.id,
                                   "--heartbeat-ms", std::to_string(cfg.heartbeat_ms),
                                   "--heartbeat-timeout-ms", std::to_string(cfg.heartbeat_timeout_ms)};
  if (synth) {
    args.insert(args.end(), {"--threads", std::to_string(cfg.synth_threads)});
  } else {
    args.insert(args.end(), {"--threads", std::to_string(cfg.gpu_threads), "--backend",
                             w.device.empty() && cfg.backend == "auto" ? "cpu" : cfg.backend,
                             "--key-memory-percent", std::to_string(cfg.gpu_key_memory_percent)});
  }
  bp::environment env = boost::this_process::environment();
  if (!synth && !w.device.empty()) env["CUDA_VISIBLE_DEVICES"] = w.device;
  try {
    bp::child child(bp::exe = w.binary, bp::args = args, env,
                    bp::extend::on_exec_setup = [](auto&) {
                      sigset_t none;
                      sigemptyset(&none);
                      sigprocmask(SIG_SETMASK, &none, nullptr);
                      prctl(PR_SET_PDEATHSIG, SIGTERM);
                    });
    pid_t pid = child.id();
    child.detach();  // the supervisor reaps with waitpid itself (SIGCHLD via signalfd)
    return pid;
  } catch (const bp::process_error& e) {
    throw std::runtime_error("cannot start " + w.binary + ": " + e.what());
  }
}

void signal_worker(const Worker& w, int sig) {
  if (w.pidfd >= 0) pidfd_signal(w.pidfd, sig);
}

}  // namespace zkfarm::supervisor
