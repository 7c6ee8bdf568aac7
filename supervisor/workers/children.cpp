#include "supervisor/workers/children.hpp"

#include "supervisor/workers/process.hpp"
#include "shm/arena.hpp"

#include <fcntl.h>
#include <signal.h>
#include <sys/prctl.h>
#include <unistd.h>

#include <cerrno>
#include <cstring>

#include <boost/process.hpp>
#include <boost/process/extend.hpp>

namespace zkfarm::supervisor {

namespace bp = boost::process;

SpawnedWorker spawn_worker(const Config& cfg, const Worker& w, const std::string& endpoint, int arena_fd) {
  const WorkerKindInfo& kind = kind_info(w.kind);
  if (arena_fd < 0) throw std::runtime_error("cannot start " + w.binary + ": no arena descriptor to pass");
  const std::string arena = "fd:" + std::to_string(shm::kArenaChildFd);
  std::vector<std::string> args = {"--endpoint", endpoint, "--arena", arena, "--id", w.id,
                                   "--heartbeat-ms", std::to_string(cfg.heartbeat_ms),
                                   "--heartbeat-timeout-ms", std::to_string(cfg.heartbeat_timeout_ms)};
  const std::vector<std::string> own = kind.options(cfg, w.device);
  args.insert(args.end(), own.begin(), own.end());
  bp::environment env = boost::this_process::environment();
  if (kind.holds_device && !w.device.empty()) env["CUDA_VISIBLE_DEVICES"] = w.device;
  // The worker's stdout and stderr go to a pipe the loop reads (worker_output.hpp).
  int out[2];
  if (::pipe2(out, O_CLOEXEC) != 0) throw std::runtime_error(std::string("cannot make a pipe: ") + std::strerror(errno));
  const int write_end = out[1];
  try {
    bp::child child(bp::exe = w.binary, bp::args = args, env,
                    bp::extend::on_exec_setup = [write_end, arena_fd](auto&) {
                      sigset_t none;
                      sigemptyset(&none);
                      sigprocmask(SIG_SETMASK, &none, nullptr);
                      ::signal(SIGPIPE, SIG_DFL);  // zkfarmd ignores it; exec keeps ignored dispositions
                      prctl(PR_SET_PDEATHSIG, SIGTERM);
                      // The arena first to a number above 3 (close-on-exec), so
                      // that neither its number nor the pipe's is overwritten
                      // by the dup2s below, whatever numbers they had.
                      const int arena_copy = ::fcntl(arena_fd, F_DUPFD_CLOEXEC, shm::kArenaChildFd + 1);
                      ::dup2(write_end, 1);  // dup2 clears close-on-exec on the copies
                      ::dup2(write_end, 2);
                      // The arena's memfd as fd 3, inherited across exec: the
                      // worker maps it and closes it (shm::Arena::attach_fd).
                      // Failing, the worker finds no fd 3 and exits 3 saying so.
                      if (arena_copy >= 0) ::dup2(arena_copy, shm::kArenaChildFd);
                    });
    pid_t pid = child.id();
    child.detach();  // the supervisor reaps with waitpid itself (SIGCHLD via signalfd)
    ::close(write_end);
    ::fcntl(out[0], F_SETFL, ::fcntl(out[0], F_GETFL) | O_NONBLOCK);
    return {pid, WorkerOutput(out[0])};
  } catch (const bp::process_error& e) {
    ::close(out[0]);
    ::close(write_end);
    throw std::runtime_error("cannot start " + w.binary + ": " + e.what());
  }
}

void signal_worker(const Worker& w, int sig) {
  if (w.pidfd >= 0) pidfd_signal(w.pidfd, sig);
}

}  // namespace zkfarm::supervisor
