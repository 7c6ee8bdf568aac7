#include "witgen/subprocess.hpp"

#include <fcntl.h>
#include <poll.h>
#include <signal.h>
#include <sys/prctl.h>
#include <sys/resource.h>
#include <sys/syscall.h>
#include <sys/wait.h>
#include <unistd.h>

#include <cerrno>
#include <ctime>
#include <cstring>
#include <mutex>
#include <set>
#include <system_error>
#include <thread>

extern char** environ;

namespace zkfarm::witgen {

std::mutex& ChildRegistry::mutex() {
  static std::mutex m;
  return m;
}

std::set<pid_t>& ChildRegistry::pids() {
  static std::set<pid_t> p;
  return p;
}

bool ChildRegistry::owns(pid_t pid) { return pids().count(pid) != 0; }

namespace {

using Clock = std::chrono::steady_clock;

[[noreturn]] void child_fail(int out, const char* what) {
  // Only async-signal-safe calls between fork and exec.
  const char* err = strerror(errno);
  (void)!::write(out, what, strlen(what));
  (void)!::write(out, ": ", 2);
  (void)!::write(out, err, strlen(err));
  (void)!::write(out, "\n", 1);
  _exit(127);
}

}  // namespace

std::string RunResult::how() const {
  if (cancelled) return "cancelled";
  if (timed_out) return "timed out after " + std::to_string(elapsed.count()) + " ms";
  if (signal) return "killed by signal " + std::to_string(signal) + " (" + strsignal(signal) + ")";
  return "exit code " + std::to_string(exit_code);
}

std::string RunResult::tail(size_t lines) const {
  std::vector<std::string> kept;
  size_t end = output.size();
  while (end > 0 && kept.size() < lines) {
    size_t start = output.rfind('\n', end - 1);
    start = start == std::string::npos ? 0 : start + 1;
    std::string line = output.substr(start, end - start);
    end = start == 0 ? 0 : start - 1;
    std::string clean;
    for (char c : line) clean += (c >= 0x20 && c < 0x7f) ? c : (c == '\t' ? ' ' : '?');
    while (!clean.empty() && clean.back() == ' ') clean.pop_back();
    // circom's colours and snarkjs's prefixes aside, a line of nothing says nothing.
    if (!clean.empty()) kept.insert(kept.begin(), clean);
  }
  std::string out;
  for (const auto& l : kept) out += (out.empty() ? "" : " | ") + l;
  if (out.size() > 2000) out = "..." + out.substr(out.size() - 1997);
  return out;
}

RunResult run(const RunSpec& spec) {
  int pipefd[2];
  if (::pipe2(pipefd, O_CLOEXEC) != 0) throw std::system_error(errno, std::generic_category(), "pipe2");
  std::vector<char*> argv;
  for (const auto& a : spec.argv) argv.push_back(const_cast<char*>(a.c_str()));
  argv.push_back(nullptr);
  // Circuit code gets a fixed, minimal environment, never the caller's.
  const std::vector<std::string> env =
      !spec.env.empty() ? spec.env
                        : spec.sandbox.enabled ? sandbox_environment(spec.cwd) : std::vector<std::string>{};
  std::vector<char*> envp;
  for (const auto& e : env) envp.push_back(const_cast<char*>(e.c_str()));
  envp.push_back(nullptr);
  const pid_t parent = ::getpid();
  const auto start = Clock::now();
  // Registered before anyone can reap it: a process-wide reaper (zkfarmd, a
  // child subreaper that reaps every child) peeks under the same lock and
  // leaves a registered child to this thread (ChildRegistry).
  pid_t pid;
  {
    std::lock_guard<std::mutex> lock(ChildRegistry::mutex());
    pid = ::fork();
    if (pid > 0) ChildRegistry::pids().insert(pid);
  }
  if (pid < 0) {
    const int e = errno;
    ::close(pipefd[0]);
    ::close(pipefd[1]);
    throw std::system_error(e, std::generic_category(), "fork");
  }
  if (pid == 0) {
    // Between clone/fork and exec: only async-signal-safe calls, no allocation.
    const int out = pipefd[1];
    ::setpgid(0, 0);
    ::prctl(PR_SET_PDEATHSIG, SIGKILL);
    if (::getppid() != parent) _exit(127);
    sigset_t none;
    sigemptyset(&none);
    ::sigprocmask(SIG_SETMASK, &none, nullptr);
    for (int s = 1; s < NSIG; ++s) ::signal(s, SIG_DFL);
    const int in = spec.stdin_fd >= 0 ? spec.stdin_fd : ::open("/dev/null", O_RDONLY);
    if (in < 0) child_fail(out, "open /dev/null");
    // The program's own descriptor, out of the way of 0-3 (kept close-on-exec).
    int exec_fd = -1;
    if (spec.exec_fd >= 0 && (exec_fd = ::fcntl(spec.exec_fd, F_DUPFD_CLOEXEC, 10)) < 0) child_fail(out, "fcntl");
    // fd 3 first: it may be any number, also 0-2.
    int three = spec.fd3;
    if (three >= 0 && three < 3) {
      three = ::fcntl(three, F_DUPFD, 10);
      if (three < 0) child_fail(out, "fcntl");
    }
    int in_fd = in;
    if (in_fd == 1 || in_fd == 2 || in_fd == 3) {
      in_fd = ::fcntl(in_fd, F_DUPFD, 10);
      if (in_fd < 0) child_fail(out, "fcntl");
    }
    int out_fd = out;
    if (out_fd <= 3) {
      out_fd = ::fcntl(out_fd, F_DUPFD, 10);
      if (out_fd < 0) child_fail(out, "fcntl");
    }
    if (::dup2(in_fd, 0) < 0 || ::dup2(out_fd, 1) < 0 || ::dup2(out_fd, 2) < 0) child_fail(out_fd, "dup2");
    if (three >= 0 && ::dup2(three, 3) < 0) child_fail(out_fd, "dup2");
    unsigned keep = three >= 0 ? 4u : 3u;  // descriptors below it stay
    if (exec_fd >= 0) {
      if (::dup3(exec_fd, int(keep), O_CLOEXEC) < 0) child_fail(2, "dup3");
      exec_fd = int(keep++);
    }
    ::syscall(SYS_close_range, keep, ~0u, 0u);
    if (spec.memory_bytes) {
      struct rlimit r{spec.memory_bytes, spec.memory_bytes};
      ::setrlimit(RLIMIT_DATA, &r);
    }
    if (spec.file_bytes) {
      struct rlimit r{spec.file_bytes, spec.file_bytes};
      ::setrlimit(RLIMIT_FSIZE, &r);
    }
    struct rlimit core{0, 0};
    ::setrlimit(RLIMIT_CORE, &core);
    if (!spec.cwd.empty() && ::chdir(spec.cwd.c_str()) != 0) child_fail(2, "chdir");
    if (const char* step = enter_sandbox(spec.sandbox)) child_fail(2, step);
    // ETXTBSY: a generator just written (built, or copied from a cluster's
    // shared folder) can still be open for writing in a process another
    // thread forked meanwhile, until that process execs; it closes within
    // moments, so the exec is retried for up to a second (as Go's os/exec does).
    for (int attempt = 0; attempt < 50; ++attempt) {
      if (exec_fd >= 0)  // a file opened by the parent: the sandbox user need not reach its path
        ::syscall(SYS_execveat, exec_fd, "", argv.data(), env.empty() ? environ : envp.data(), AT_EMPTY_PATH);
      else if (env.empty()) ::execvp(argv[0], argv.data());
      else ::execvpe(argv[0], argv.data(), envp.data());
      if (errno != ETXTBSY) break;
      struct timespec pause{0, 20 * 1000 * 1000};
      ::nanosleep(&pause, nullptr);
    }
    child_fail(2, argv[0]);
  }
  ::close(pipefd[1]);
  ::setpgid(pid, pid);  // also from here: no race with the kill below
  const int pidfd = int(::syscall(SYS_pidfd_open, pid, 0));
  RunResult r;
  std::string& output = r.output;
  bool pipe_open = true, exited = false;
  auto kill_group = [&] { ::kill(-pid, SIGKILL); ::kill(pid, SIGKILL); };
  for (;;) {
    if (!exited && spec.timeout.count() > 0 && Clock::now() - start >= spec.timeout && !r.timed_out) {
      r.timed_out = true;
      kill_group();
    }
    if (!exited && spec.cancel && spec.cancel->load() && !r.cancelled) {
      r.cancelled = true;
      kill_group();
    }
    if (exited && !pipe_open) break;
    struct pollfd fds[2];
    int n = 0;
    if (pipe_open) fds[n++] = {pipefd[0], POLLIN, 0};
    if (!exited && pidfd >= 0) fds[n++] = {pidfd, POLLIN, 0};
    if (n == 0) break;
    ::poll(fds, nfds_t(n), 50);
    if (pipe_open && (fds[0].revents & (POLLIN | POLLHUP | POLLERR))) {
      char buf[8192];
      const ssize_t got = ::read(pipefd[0], buf, sizeof buf);
      if (got > 0) {
        output.append(buf, size_t(got));
        if (output.size() > 2 * spec.output_limit) output.erase(0, output.size() - spec.output_limit);
      } else if (got == 0 || errno != EINTR) {
        pipe_open = false;
      }
    }
    if (!exited) {
      int status = 0;
      const pid_t w = ::waitpid(pid, &status, WNOHANG);
      if (w < 0 && errno == ECHILD) {  // reaped elsewhere (SIGCHLD ignored): its status is gone
        exited = true;
        ::kill(-pid, SIGKILL);
      } else if (w == pid) {
        exited = true;
        if (WIFEXITED(status)) r.exit_code = WEXITSTATUS(status);
        if (WIFSIGNALED(status)) r.signal = WTERMSIG(status);
        // Grandchildren in its group may hold the pipe open: they go too.
        ::kill(-pid, SIGKILL);
      }
    }
  }
  if (pidfd >= 0) ::close(pidfd);
  ::close(pipefd[0]);
  {
    std::lock_guard<std::mutex> lock(ChildRegistry::mutex());
    ChildRegistry::pids().erase(pid);
  }
  if (output.size() > spec.output_limit) output.erase(0, output.size() - spec.output_limit);
  r.elapsed = std::chrono::duration_cast<std::chrono::milliseconds>(Clock::now() - start);
  return r;
}

}  // namespace zkfarm::witgen
