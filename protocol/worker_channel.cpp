#include "protocol/worker_channel.hpp"

#include <poll.h>
#include <signal.h>
#include <sys/eventfd.h>
#include <sys/prctl.h>
#include <sys/signalfd.h>
#include <unistd.h>

#include <algorithm>
#include <condition_variable>
#include <cstring>
#include <cstdio>
#include <cstdlib>
#include <deque>
#include <mutex>
#include <optional>
#include <thread>
#include <vector>
#include <zmq.hpp>

namespace zkfarm::protocol {

namespace {
std::atomic<bool> g_abort{false};
}  // namespace

const std::atomic<bool>& abort_flag() { return g_abort; }


namespace {

using Clock = std::chrono::steady_clock;
using std::chrono::milliseconds;

// The parent seen by guard_process(); 0 when it was not called.
pid_t g_parent = 0;

uint64_t parse_count(std::string_view spec, std::string_view digits) {
  if (digits.empty() || digits.size() > 18) throw std::invalid_argument("ZKFARM_FAULT: bad number in \"" + std::string(spec) + "\"");
  uint64_t n = 0;
  for (char c : digits) {
    if (c < '0' || c > '9') throw std::invalid_argument("ZKFARM_FAULT: bad number in \"" + std::string(spec) + "\"");
    n = n * 10 + uint64_t(c - '0');
  }
  return n;
}

sigset_t stop_signals() {
  sigset_t set;
  sigemptyset(&set);
  sigaddset(&set, SIGTERM);
  sigaddset(&set, SIGINT);
  return set;
}

}  // namespace

const char* const kFaultHelp =
    "Test-only fault injection (environment; never set in production):\n"
    "  ZKFARM_FAULT=crash_after:N  abort() when starting partition N+1\n"
    "  ZKFARM_FAULT=hang           on the first work request stop heartbeating and answering, forever\n"
    "                              (SIGTERM still ends the process)\n"
    "  ZKFARM_FAULT=slow_ms:N      sleep N ms before each partition\n"
    "  ZKFARM_FAULT=ignore_stop    ignore SHUTDOWN and SIGTERM (only SIGKILL ends it)\n"
    "  ZKFARM_TEST_VERSION=V       say version V in READY (upgrade tests)\n"
    "Exit codes: 0 SHUTDOWN or SIGTERM; 1 internal error; 2 bad usage or ZKFARM_FAULT;\n"
    "  3 cannot attach the arena, connect, or use the backend (do not respawn);\n"
    "  4 supervisor lost (heartbeat timeout or parent died).";

TestFault TestFault::parse(std::string_view spec) {
  TestFault f;
  if (spec.empty()) return f;
  if (spec == "hang") {
    f.kind = Kind::kHang;
  } else if (spec.starts_with("crash_after:")) {
    f.kind = Kind::kCrashAfter;
    f.n = parse_count(spec, spec.substr(12));
  } else if (spec == "ignore_stop") {
    f.kind = Kind::kIgnoreStop;
  } else if (spec.starts_with("slow_ms:")) {
    f.kind = Kind::kSlow;
    f.n = parse_count(spec, spec.substr(8));
  } else {
    throw std::invalid_argument("ZKFARM_FAULT: unknown fault \"" + std::string(spec) +
                                "\" (crash_after:N, hang, slow_ms:N, ignore_stop)");
  }
  return f;
}

TestFault TestFault::from_env() {
  const char* v = std::getenv("ZKFARM_FAULT");
  return parse(v ? v : "");
}

bool guard_process() {
  g_parent = getppid();
  // The death signal goes to us when the parent *thread* that forked us exits;
  // the heartbeat timeout and the reparenting check below cover the rest.
  prctl(PR_SET_PDEATHSIG, SIGTERM);
  sigset_t set = stop_signals();
  pthread_sigmask(SIG_BLOCK, &set, nullptr);
  // The parent may have died before prctl: then we were already reparented.
  return g_parent != 1 && getppid() == g_parent;
}

struct WorkerChannel::Impl {
  WorkerOptions opt;
  WorkHandler handler;
  std::string log_name;  // "zkfarm-synth[synth-0]"
  const char* work_type;  // SYNTH or PROVE

  zmq::context_t ctx{1};
  zmq::socket_t sock;
  int event_fd = -1;
  int signal_fd = -1;

  // Compute thread hand-off; `mutex` guards everything below it.
  std::thread compute;
  std::mutex mutex;
  std::condition_variable wake;
  std::optional<Message> pending;  // request for the compute thread
  std::optional<WorkResult> result;
  bool stop = false;

  // Loop state (loop thread only).
  std::optional<Message> current;  // request being computed
  std::deque<Message> waiting;     // accepted, not started: highest priority first, then arrival
  bool draining = false;           // SHUTDOWN received while busy
  bool hung = false;               // ZKFARM_FAULT=hang triggered
  uint64_t started = 0;            // partitions started (compute thread only)

  // One line to stderr, written at once so that workers sharing a terminal
  // do not interleave mid-line.
  template <class... A>
  void log(const char* fmt, A... args) {
    char text[1024];
    std::snprintf(text, sizeof text, fmt, args...);
    std::string line = log_name + ": " + text + "\n";
    std::fwrite(line.data(), 1, line.size(), stderr);
  }

  void send(const Message& m) {
    std::string bytes = encode(m);
    // Never block the loop: with no supervisor the queue fills, and a worker
    // that cannot deliver is about to time out anyway.
    auto r = sock.send(zmq::buffer(bytes), zmq::send_flags::dontwait);
    if (!r) log("cannot send %s (queue full): dropped", type_of(m).c_str());
  }

  // The answer to `req`, of the type matching it (SYNTH → SYNTH_DONE, PROVE → PROVE_DONE).
  Message reply(const Message& req, const WorkResult& r) {
    bool prove = type_of(req) == kProve;
    Message m = make(prove ? kProveDone : kSynthDone);
    m["job"] = req.at("job");
    m["partition"] = req.at("partition");
    m["slot"] = req.at("slot");
    m["generation"] = req.at("generation");
    m["ok"] = r.ok;
    if (!r.ok) m["error"] = r.error;
    if (r.ok && prove) m["proof"] = bin(r.proof);
    if (prove && r.key_cached) m["key_cached"] = *r.key_cached;
    return m;
  }

  void compute_loop() {
    for (;;) {
      Message req;
      {
        std::unique_lock lock(mutex);
        wake.wait(lock, [&] { return stop || pending.has_value(); });
        if (stop) return;
        req = std::move(*pending);
        pending.reset();
      }
      if (opt.fault.kind == TestFault::Kind::kCrashAfter && started >= opt.fault.n) {
        log("ZKFARM_FAULT=crash_after:%llu: aborting at partition %llu", (unsigned long long)opt.fault.n,
            (unsigned long long)started + 1);
        std::abort();
      }
      ++started;
      if (opt.fault.kind == TestFault::Kind::kSlow) std::this_thread::sleep_for(milliseconds(opt.fault.n));
      WorkResult r;
      try {
        r = handler(req);
      } catch (const ProtocolError& e) {
        r = WorkResult::failure("malformed " + std::string(work_type) + ": " + e.what());
      } catch (const std::exception& e) {
        r = WorkResult::failure(std::string("internal error: ") + e.what());
      }
      {
        std::lock_guard lock(mutex);
        result = std::move(r);
      }
      uint64_t one = 1;
      if (::write(event_fd, &one, sizeof one) != sizeof one) std::abort();  // cannot happen: counter far from overflow
    }
  }

  // Handles one decoded message. Returns an exit code to stop the loop.
  std::optional<int> handle(const Message& m) {
    std::string t = type_of(m);
    if (t == kHeartbeat) return std::nullopt;
    if (t == kShutdown) {
      if (opt.fault.kind == TestFault::Kind::kIgnoreStop) {
        log("ZKFARM_FAULT=ignore_stop: SHUTDOWN ignored");
        return std::nullopt;
      }
      if (!current) {
        log("SHUTDOWN: exiting");
        return kExitOk;
      }
      log("SHUTDOWN: finishing the partition in progress and the %zu waiting first", waiting.size());
      draining = true;
      return std::nullopt;
    }
    if (t == kAbort) {
      // Only an ABORT naming a request we hold counts (same slot and generation).
      auto same = [&](const Message& r) {
        return get_u64(m, "job") == get_u64(r, "job") && get_u32(m, "partition") == get_u32(r, "partition") &&
               get_u32(m, "slot") == get_u32(r, "slot") && get_u64(m, "generation") == get_u64(r, "generation");
      };
      if (current && same(*current)) {
        log("ABORT: abandoning job %llu partition %u", (unsigned long long)get_u64(m, "job"), get_u32(m, "partition"));
        g_abort = true;
      } else if (auto it = std::find_if(waiting.begin(), waiting.end(), same); it != waiting.end()) {
        log("ABORT: withdrew job %llu partition %u before it started", (unsigned long long)get_u64(m, "job"),
            get_u32(m, "partition"));
        send(reply(*it, WorkResult::failure("aborted before it started")));
        waiting.erase(it);
      }
      return std::nullopt;
    }
    if (t != kSynth && t != kProve) {
      log("dropped unexpected %s message", t.c_str());
      return std::nullopt;
    }
    // The ids a reply must echo; without them there is nobody to answer.
    get_u64(m, "job");
    get_u32(m, "partition");
    get_u32(m, "slot");
    get_u64(m, "generation");
    if (t != work_type) {
      send(reply(m, WorkResult::failure("this " + opt.kind + " worker does not take " + t)));
      return std::nullopt;
    }
    if (draining || (current && waiting.size() >= opt.max_queued)) {
      send(reply(m, WorkResult::failure(draining ? "shutting down" : "busy")));
      return std::nullopt;
    }
    if (opt.fault.kind == TestFault::Kind::kHang) {
      log("ZKFARM_FAULT=hang: no more heartbeats or answers");
      hung = true;
      return std::nullopt;
    }
    if (current) {
      // Behind every waiting request of at least its priority.
      const uint64_t p = priority(m);
      auto at = std::find_if(waiting.begin(), waiting.end(), [&](const Message& r) { return priority(r) < p; });
      waiting.insert(at, m);
      return std::nullopt;
    }
    start(m);
    return std::nullopt;
  }

  static uint64_t priority(const Message& m) {
    auto it = m.find("priority");
    return it != m.end() && it->is_number_unsigned() ? it->get<uint64_t>() : 0;
  }

  // Hands `m` to the compute thread and says so: the supervisor then knows
  // which of the partitions it queued here is computing (a crash counts
  // against that one only) and when its compute began.
  void start(const Message& m) {
    Message started = make(kStarted);
    for (const char* f : {"job", "partition", "slot", "generation"}) started[f] = m.at(f);
    send(started);
    current = m;
    g_abort = false;
    {
      std::lock_guard lock(mutex);
      pending = m;
    }
    wake.notify_one();
  }

  // Leaves the loop with `code`; a running partition cannot be interrupted, so
  // then the process ends here.
  int finish(int code) {
    if (current) {
      std::fflush(stderr);
      std::_Exit(code);
    }
    return code;
  }

  int run() {
    Message ready = make(kReady);
    ready["worker"] = opt.worker_id;
    ready["kind"] = opt.kind;
    // Upgrade tests run the same binary under another version.
    const char* test_version = std::getenv("ZKFARM_TEST_VERSION");
    ready["version"] = test_version && *test_version ? std::string(test_version) : opt.version;
    ready["pid"] = int64_t(getpid());
    ready["backend"] = opt.backend;
    send(ready);

    auto now = Clock::now();
    auto last_heard = now;
    auto next_beat = now + opt.heartbeat;
    const milliseconds max_wait = std::min(opt.heartbeat, milliseconds(100));
    std::vector<zmq::message_t> parts;

    for (;;) {
      zmq_pollitem_t items[] = {{sock.handle(), 0, ZMQ_POLLIN, 0},
                                {nullptr, signal_fd, ZMQ_POLLIN, 0},
                                {nullptr, event_fd, ZMQ_POLLIN, 0}};
      // While hung only the signals count: no answers, no heartbeats, no timeout.
      auto wait = hung ? milliseconds(200)
                       : std::clamp(std::chrono::duration_cast<milliseconds>(next_beat - Clock::now()),
                                    milliseconds(0), max_wait);
      zmq::poll(hung ? items + 1 : items, hung ? 1 : 3, wait);
      now = Clock::now();

      // The parent first: the kernel reparents us before it sends the death
      // signal, so a SIGTERM caused by the parent's death reads as that.
      if (g_parent != 0 && getppid() != g_parent) {
        log("parent %d died: exiting", int(g_parent));
        return finish(kExitSupervisorLost);
      }
      if (items[1].revents & ZMQ_POLLIN) {
        signalfd_siginfo si{};
        if (::read(signal_fd, &si, sizeof si) == sizeof si) {
          if (opt.fault.kind == TestFault::Kind::kIgnoreStop) {
            log("ZKFARM_FAULT=ignore_stop: signal %u ignored", si.ssi_signo);
          } else {
            log("signal %u: exiting", si.ssi_signo);
            return finish(kExitOk);
          }
        }
      }
      if (hung) continue;

      if (items[2].revents & ZMQ_POLLIN) {
        uint64_t n;
        if (::read(event_fd, &n, sizeof n) == sizeof n) {
          std::optional<WorkResult> r;
          {
            std::lock_guard lock(mutex);
            r.swap(result);
          }
          if (r && current) {
            send(reply(*current, *r));
            current.reset();
            if (!waiting.empty()) {
              Message next = std::move(waiting.front());
              waiting.pop_front();
              start(next);
            } else if (draining) {
              log("SHUTDOWN: partitions answered, exiting");
              return kExitOk;
            }
          }
        }
      }

      // Every frame counts as a sign of life, even one we cannot decode.
      while (true) {
        parts.clear();
        zmq::message_t msg;
        if (!sock.recv(msg, zmq::recv_flags::dontwait)) break;
        last_heard = now;
        bool more = msg.more();
        parts.push_back(std::move(msg));
        while (more) {
          zmq::message_t next;
          (void)sock.recv(next);  // the rest of a multipart message is already here
          more = next.more();
          parts.push_back(std::move(next));
        }
        if (parts.size() != 1) {
          log("dropped a message of %zu frames (expected 1)", parts.size());
          continue;
        }
        try {
          Message m = decode(parts[0].to_string_view());
          if (auto code = handle(m)) return *code;  // only when idle: finish() not needed
          if (hung) break;
        } catch (const ProtocolError& e) {
          log("dropped malformed frame: %s", e.what());
        }
      }
      if (hung) continue;

      if (now >= next_beat) {
        Message hb = make(kHeartbeat);
        hb["worker"] = opt.worker_id;
        send(hb);
        next_beat = now + opt.heartbeat;
      }
      if (now - last_heard > opt.heartbeat_timeout) {
        log("nothing from the supervisor for %lld ms: exiting",
            (long long)std::chrono::duration_cast<milliseconds>(now - last_heard).count());
        return finish(kExitSupervisorLost);
      }
    }
  }
};

WorkerChannel::WorkerChannel(WorkerOptions options, WorkHandler handler) : impl_(std::make_unique<Impl>()) {
  Impl& d = *impl_;
  d.opt = std::move(options);
  d.handler = std::move(handler);
  d.log_name = "zkfarm-" + d.opt.kind + "[" + d.opt.worker_id + "]";
  bool synth = d.opt.kind == "synth";
  d.work_type = synth ? kSynth : kProve;

  d.event_fd = eventfd(0, EFD_CLOEXEC | EFD_NONBLOCK);
  if (d.event_fd < 0) throw ChannelError(std::string("eventfd: ") + std::strerror(errno));
  sigset_t set = stop_signals();
  d.signal_fd = signalfd(-1, &set, SFD_CLOEXEC | SFD_NONBLOCK);
  if (d.signal_fd < 0) {
    ::close(d.event_fd);
    throw ChannelError(std::string("signalfd: ") + std::strerror(errno));
  }
  try {
    d.sock = zmq::socket_t(d.ctx, zmq::socket_type::dealer);
    d.sock.set(zmq::sockopt::routing_id, worker_route(d.opt.worker_id, long(::getpid())));
    d.sock.set(zmq::sockopt::linger, 0);
    d.sock.connect(d.opt.endpoint);
  } catch (const zmq::error_t& e) {
    ::close(d.event_fd);
    ::close(d.signal_fd);
    throw ChannelError("cannot connect to " + d.opt.endpoint + ": " + e.what());
  }
  d.compute = std::thread([&d] { d.compute_loop(); });
}

WorkerChannel::~WorkerChannel() {
  Impl& d = *impl_;
  {
    std::lock_guard lock(d.mutex);
    d.stop = true;
  }
  d.wake.notify_one();
  if (d.compute.joinable()) d.compute.join();
  d.sock.close();
  ::close(d.event_fd);
  ::close(d.signal_fd);
}

int WorkerChannel::run() {
  int code = impl_->run();
  // A clean stop delivers what is queued (the last answer); a lost supervisor
  // would make the close wait for nobody.
  impl_->sock.set(zmq::sockopt::linger, code == kExitOk ? 2000 : 0);
  return code;
}

}  // namespace zkfarm::protocol
