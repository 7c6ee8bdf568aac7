#include "protocol/worker_channel.hpp"

#include <poll.h>
#include <signal.h>
#include <sys/eventfd.h>
#include <sys/prctl.h>
#include <sys/signalfd.h>
#include <unistd.h>

#include <algorithm>
#include <array>
#include <atomic>
#include <condition_variable>
#include <cstring>
#include <cstdio>
#include <cstdlib>
#include <deque>
#include <mutex>
#include <optional>
#include <string_view>
#include <thread>
#include <variant>
#include <vector>
#include <zmq.hpp>

namespace zkfarm::protocol {

namespace {
// Threads other than a lane's compute thread read a flag that never rises.
std::atomic<bool> g_no_abort{false};
// The abort flag of the lane this thread computes for (compute threads only).
thread_local std::atomic<bool>* t_abort = nullptr;
}  // namespace

const std::atomic<bool>& abort_flag() { return t_abort ? *t_abort : g_no_abort; }


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

namespace {

// A request this worker took: waiting in its queue, or computing.
using WorkRequest = std::variant<Synth, Prove>;

const WorkRef& ref_of(const WorkRequest& r) {
  return std::visit([](const auto& m) -> const WorkRef& { return m.ref; }, r);
}

const char* request_type(const WorkRequest& r) { return std::holds_alternative<Prove>(r) ? kProve : kSynth; }

// A SYNTH has none: one at a time.
uint64_t priority_of(const WorkRequest& r) {
  const Prove* p = std::get_if<Prove>(&r);
  return p ? p->priority : 0;
}

}  // namespace

struct WorkerChannel::Impl {
  WorkerOptions opt;
  WorkHandler handler;
  std::string log_name;  // "zkfarm-synth[synth-0]"
  const char* work_type;  // SYNTH or PROVE: the handler's

  zmq::context_t ctx{1};
  zmq::socket_t sock;
  int event_fd = -1;
  int signal_fd = -1;

  // One lane per compute thread (options.lanes): each computes one request
  // at a time, or one batch of SYNTHs of a job (options.batch). `mutex`
  // guards the hand-offs (pending, results, stop).
  struct Lane {
    std::thread thread;
    std::vector<WorkRequest> pending;  // requests for the lane's compute thread (empty: none)
    std::atomic<bool> abort{false};    // every request it computes was ABORTed (abort_flag() on its thread)
    std::array<std::atomic<bool>, kMaxSynthBatch> aborted{};  // per request of a batch
    std::vector<WorkRequest> running;  // requests being computed (loop thread only; empty: free)
  };
  std::vector<std::unique_ptr<Lane>> lanes;
  std::mutex mutex;
  std::condition_variable wake;
  std::deque<std::pair<size_t, std::vector<WorkResult>>> results;  // (lane, its answers), in the order they finished
  bool stop = false;

  // Loop state (loop thread only).
  std::deque<WorkRequest> waiting;     // accepted, not started: highest priority first, then arrival
  bool draining = false;               // SHUTDOWN received while busy
  bool hung = false;                   // ZKFARM_FAULT=hang triggered
  std::optional<std::chrono::steady_clock::time_point> linger_until;  // waiting for the rest of a batch
  std::atomic<uint64_t> started{0};    // partitions started (compute threads)

  // Lanes computing now, and the first free one (nullopt: all busy).
  size_t running() const {
    return size_t(std::count_if(lanes.begin(), lanes.end(), [](const auto& l) { return !l->running.empty(); }));
  }
  std::optional<size_t> free_lane() const {
    for (size_t i = 0; i < lanes.size(); ++i)
      if (lanes[i]->running.empty()) return i;
    return std::nullopt;
  }
  // Requests this worker accepts beyond those computing: what its free lanes
  // take at their next start, and max_queued behind them.
  size_t capacity() const {
    return (lanes.size() - running()) * std::max<size_t>(1, opt.batch) + opt.max_queued;
  }

  // One line to stderr, written at once so that workers sharing a terminal
  // do not interleave mid-line.
  template <class... A>
  void log(const char* fmt, A... args) {
    char text[1024];
    std::snprintf(text, sizeof text, fmt, args...);
    std::string line = log_name + ": " + text + "\n";
    std::fwrite(line.data(), 1, line.size(), stderr);
  }

  // `frame`: an encoded message of type `type` (for the log).
  void send(const std::string& frame, const char* type) {
    // Never block the loop: with no supervisor the queue fills, and a worker
    // that cannot deliver is about to time out anyway.
    auto r = sock.send(zmq::buffer(frame), zmq::send_flags::dontwait);
    if (!r) log("cannot send %s (queue full): dropped", type);
  }

  // The answer to the request of type `type` under `ref`, of the type
  // matching it (SYNTH → SYNTH_DONE, PROVE → PROVE_DONE), whatever this worker takes.
  void answer(const char* type, const WorkRef& ref, const WorkResult& r) {
    if (std::string_view(type) == kProve) {
      send(encode(ProveDone{ref, r}), kProveDone);
    } else {
      send(encode(SynthDone{ref, r}), kSynthDone);
    }
  }

  // Only a request of work_type is ever taken, so the handler is the one it
  // needs; a batch (SYNTHs only) goes to a SynthBatchHandler whole.
  std::vector<WorkResult> run_handler(const std::vector<WorkRequest>& reqs, Lane& me) {
    if (const auto* batch = std::get_if<SynthBatchHandler>(&handler)) {
      std::vector<Synth> synths;
      std::vector<const std::atomic<bool>*> aborted;
      for (size_t i = 0; i < reqs.size(); ++i) {
        synths.push_back(std::get<Synth>(reqs[i]));
        aborted.push_back(&me.aborted[i]);
      }
      return (*batch)(synths, aborted);
    }
    if (const Synth* s = std::get_if<Synth>(&reqs.front())) return {std::get<SynthHandler>(handler)(*s)};
    return {std::get<ProveHandler>(handler)(std::get<Prove>(reqs.front()))};
  }

  void compute_loop(size_t lane) {
    Lane& me = *lanes[lane];
    t_abort = &me.abort;
    for (;;) {
      std::vector<WorkRequest> reqs;
      {
        std::unique_lock lock(mutex);
        wake.wait(lock, [&] { return stop || !me.pending.empty(); });
        if (stop) return;
        reqs.swap(me.pending);
      }
      const uint64_t n = started.fetch_add(reqs.size());
      if (opt.fault.kind == TestFault::Kind::kCrashAfter && n + reqs.size() > opt.fault.n) {
        log("ZKFARM_FAULT=crash_after:%llu: aborting at partition %llu", (unsigned long long)opt.fault.n,
            (unsigned long long)opt.fault.n + 1);
        std::abort();
      }
      // Once a start (a batch is one computation).
      if (opt.fault.kind == TestFault::Kind::kSlow) std::this_thread::sleep_for(milliseconds(opt.fault.n));
      std::vector<WorkResult> r;
      try {
        r = run_handler(reqs, me);
      } catch (const ProtocolError& e) {
        r.assign(reqs.size(), WorkResult::failure("malformed " + std::string(work_type) + ": " + e.what()));
      } catch (const std::exception& e) {
        r.assign(reqs.size(), WorkResult::failure(std::string("internal error: ") + e.what()));
      }
      r.resize(reqs.size(), WorkResult::failure("internal error: the batch gave no answer for it"));
      {
        std::lock_guard lock(mutex);
        results.emplace_back(lane, std::move(r));
      }
      uint64_t one = 1;
      if (::write(event_fd, &one, sizeof one) != sizeof one) std::abort();  // cannot happen: counter far from overflow
    }
  }

  // Handles one decoded message. Returns an exit code to stop the loop.
  std::optional<int> handle(const FromSupervisor& m) {
    if (std::holds_alternative<Heartbeat>(m)) return std::nullopt;
    if (std::holds_alternative<Shutdown>(m)) {
      if (opt.fault.kind == TestFault::Kind::kIgnoreStop) {
        log("ZKFARM_FAULT=ignore_stop: SHUTDOWN ignored");
        return std::nullopt;
      }
      if (!running() && waiting.empty()) {
        log("SHUTDOWN: exiting");
        return kExitOk;
      }
      log("SHUTDOWN: finishing what computes (%zu) and what waits (%zu) first", running(), waiting.size());
      draining = true;
      return std::nullopt;
    }
    if (const Abort* a = std::get_if<Abort>(&m)) {
      withdraw(a->ref);
      return std::nullopt;
    }
    if (const Synth* s = std::get_if<Synth>(&m)) {
      take(*s);
    } else {
      take(std::get<Prove>(m));
    }
    return std::nullopt;
  }

  // ABORT: only one naming a request we hold counts (same slot and generation).
  void withdraw(const WorkRef& ref) {
    for (auto& l : lanes) {
      auto it = std::find_if(l->running.begin(), l->running.end(), [&](const WorkRequest& r) { return ref_of(r) == ref; });
      if (it == l->running.end()) continue;
      log("ABORT: abandoning job %llu partition %u", (unsigned long long)ref.job, ref.partition);
      l->aborted[size_t(it - l->running.begin())] = true;
      bool all = true;
      for (size_t i = 0; i < l->running.size(); ++i) all = all && l->aborted[i].load();
      if (all) l->abort = true;
      return;
    }
    if (auto it = std::find_if(waiting.begin(), waiting.end(),
                                      [&](const WorkRequest& r) { return ref_of(r) == ref; });
               it != waiting.end()) {
      log("ABORT: withdrew job %llu partition %u before it started", (unsigned long long)ref.job, ref.partition);
      answer(request_type(*it), ref, WorkResult::failure("aborted before it started"));
      waiting.erase(it);
    }
  }

  // The refusals every request with ids meets before it is taken, decoded or
  // not: another worker's request, a draining worker, a full queue. True
  // when `type`'s request under `ref` was answered so.
  bool refused(const char* type, const WorkRef& ref) {
    if (std::string_view(type) != work_type) {
      answer(type, ref, WorkResult::failure("this " + opt.kind + " worker does not take " + type));
      return true;
    }
    if (draining || waiting.size() >= capacity()) {
      answer(type, ref, WorkResult::failure(draining ? "shutting down" : "busy"));
      return true;
    }
    return false;
  }

  // ZKFARM_FAULT=hang: the first request that gets this far stops everything.
  bool hang_now() {
    if (opt.fault.kind != TestFault::Kind::kHang) return false;
    log("ZKFARM_FAULT=hang: no more heartbeats or answers");
    hung = true;
    return true;
  }

  // Started at once on a free lane; else queued behind every waiting
  // request of at least its priority. A batch worker queues it either way
  // and start_waiting() starts it once the frames at hand are read, so that
  // SYNTHs sent together start as one batch.
  void take(WorkRequest req) {
    if (refused(request_type(req), ref_of(req)) || hang_now()) return;
    if (!std::holds_alternative<SynthBatchHandler>(handler) && free_lane()) {
      std::vector<WorkRequest> one;
      one.push_back(std::move(req));
      start(std::move(one));
      return;
    }
    const uint64_t p = priority_of(req);
    auto at = std::find_if(waiting.begin(), waiting.end(), [&](const WorkRequest& r) { return priority_of(r) < p; });
    waiting.insert(at, std::move(req));
  }

  // A batch worker whose first waiting SYNTH was sent with others of its job
  // (Synth::batch_of) holds it until they are here too, or batch_linger has
  // passed since it began waiting (one of them lost or refused must not stall it).
  bool batch_incomplete() {
    if (!std::holds_alternative<SynthBatchHandler>(handler) || !std::holds_alternative<Synth>(waiting.front())) return false;
    const Synth& first = std::get<Synth>(waiting.front());
    const uint64_t want = std::min<uint64_t>({first.batch_of, std::max<size_t>(1, opt.batch), kMaxSynthBatch});
    const size_t have = size_t(std::count_if(waiting.begin(), waiting.end(), [&](const WorkRequest& r) {
      return std::holds_alternative<Synth>(r) && ref_of(r).job == first.ref.job;
    }));
    const auto now = std::chrono::steady_clock::now();
    if (have >= want || (linger_until && now >= *linger_until)) {
      linger_until.reset();
      return false;
    }
    if (!linger_until) linger_until = now + opt.batch_linger;
    return true;
  }

  // Free lanes take the first waiting request each, and with it (a batch
  // worker) the waiting SYNTHs of the same job, up to options.batch.
  void start_waiting() {
    while (!waiting.empty() && free_lane()) {
      if (batch_incomplete()) return;  // the rest of its batch is on its way
      std::vector<WorkRequest> batch;
      batch.push_back(std::move(waiting.front()));
      waiting.pop_front();
      const size_t most = std::min(std::max<size_t>(1, opt.batch), kMaxSynthBatch);
      if (std::holds_alternative<SynthBatchHandler>(handler) && std::holds_alternative<Synth>(batch.front())) {
        const uint64_t job = ref_of(batch.front()).job;
        for (auto it = waiting.begin(); it != waiting.end() && batch.size() < most;) {
          if (std::holds_alternative<Synth>(*it) && ref_of(*it).job == job) {
            batch.push_back(std::move(*it));
            it = waiting.erase(it);
          } else {
            ++it;
          }
        }
      }
      start(std::move(batch));
    }
  }

  // A request with its ids but a field that does not decode: refused as any
  // other would be, else answered ok:false at once (it cannot be computed).
  void take_malformed(const MalformedRequest& e) {
    if (refused(e.type(), e.ref()) || hang_now()) return;
    answer(e.type(), e.ref(), WorkResult::failure("malformed " + std::string(e.type()) + ": " + e.what()));
  }

  // Hands `req` to a free lane's compute thread and says so: the supervisor
  // then knows which of the partitions it queued here are computing (a crash
  // counts against those only) and when their compute began.
  void start(std::vector<WorkRequest> reqs) {
    Lane& lane = *lanes[*free_lane()];
    for (size_t i = 0; i < reqs.size(); ++i) {
      send(encode(Started{ref_of(reqs[i])}), kStarted);
      lane.aborted[i] = false;
    }
    lane.running = reqs;
    lane.abort = false;
    {
      std::lock_guard lock(mutex);
      lane.pending = std::move(reqs);
    }
    wake.notify_all();
  }

  // Leaves the loop with `code`; a running partition cannot be interrupted, so
  // then the process ends here.
  int finish(int code) {
    if (running()) {
      std::fflush(stderr);
      std::_Exit(code);
    }
    return code;
  }

  int run() {
    // Upgrade tests run the same binary under another version.
    const char* test_version = std::getenv("ZKFARM_TEST_VERSION");
    send(encode(Ready{opt.worker_id, opt.kind, test_version && *test_version ? std::string(test_version) : opt.version,
                      uint64_t(getpid()), opt.backend}),
         kReady);

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
      if (!hung && linger_until)  // wake when a lingering batch must start (+1: the deadline passed)
        wait = std::min(wait, std::max(milliseconds(0), std::chrono::duration_cast<milliseconds>(
                                                            *linger_until - Clock::now()) + milliseconds(1)));
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
          std::deque<std::pair<size_t, std::vector<WorkResult>>> done;
          {
            std::lock_guard lock(mutex);
            done.swap(results);
          }
          for (auto& [i, r] : done) {
            std::vector<WorkRequest>& reqs = lanes[i]->running;
            for (size_t k = 0; k < reqs.size() && k < r.size(); ++k) answer(request_type(reqs[k]), ref_of(reqs[k]), r[k]);
            reqs.clear();
          }
          start_waiting();
          if (draining && !running()) {
            log("SHUTDOWN: partitions answered, exiting");
            return kExitOk;
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
          // Decoded once, here: past this point the loop holds typed messages only.
          const FromSupervisor m = decode_from_supervisor(parts[0].to_string_view());
          if (auto code = handle(m)) return *code;  // only when idle: finish() not needed
          if (hung) break;
        } catch (const MalformedRequest& e) {
          take_malformed(e);
          if (hung) break;
        } catch (const ProtocolError& e) {
          log("dropped malformed frame: %s", e.what());
        }
      }
      if (hung) continue;
      start_waiting();

      if (now >= next_beat) {
        send(encode(Heartbeat{opt.worker_id}), kHeartbeat);
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
  d.work_type = std::holds_alternative<ProveHandler>(d.handler) ? kProve : kSynth;

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
  for (size_t i = 0; i < std::max<size_t>(1, d.opt.lanes); ++i) d.lanes.push_back(std::make_unique<Impl::Lane>());
  try {
    for (size_t i = 0; i < d.lanes.size(); ++i) d.lanes[i]->thread = std::thread([&d, i] { d.compute_loop(i); });
  } catch (const std::system_error& e) {
    {
      std::lock_guard lock(d.mutex);
      d.stop = true;
    }
    d.wake.notify_all();
    for (auto& l : d.lanes)
      if (l->thread.joinable()) l->thread.join();
    ::close(d.event_fd);
    ::close(d.signal_fd);
    throw ChannelError(std::string("cannot start a compute thread: ") + e.what());
  }
}

WorkerChannel::~WorkerChannel() {
  Impl& d = *impl_;
  {
    std::lock_guard lock(d.mutex);
    d.stop = true;
  }
  d.wake.notify_all();
  for (auto& l : d.lanes)
    if (l->thread.joinable()) l->thread.join();
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
