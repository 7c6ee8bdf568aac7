// The verbs of zkfarmctl that wait for something to happen in zkfarmd: a job
// to end (wait), the farm to be ready (ready), a stop to complete, a rolling
// restart or upgrade to end, in-flight partitions to finish (drain). Each
// shows progress on stderr (ProgressLine) and ends with an exit code of the
// one table in ctl/exit_codes.hpp: 0 it happened, 1 it failed (with the
// reason), 3 zkfarmd is not there or went away, 4 the timeout passed first.
#include <unistd.h>

#include <chrono>
#include <iostream>
#include <memory>
#include <thread>

#include "protocol/control_requests.hpp"
#include "ctl/exit_watch.hpp"
#include "ctl/progress.hpp"
#include "ctl/render.hpp"
#include "ctl/results.hpp"
#include "ctl/verbs.hpp"
#include "protocol/control_verbs.hpp"

namespace zkfarm::ctl {

namespace {
using protocol::Message;
using protocol::ProtocolError;
using Clock = std::chrono::steady_clock;

/// A deadline from a timeout in seconds (< 0: none).
class Deadline {
 public:
  explicit Deadline(double timeout_s) : bounded_(timeout_s >= 0), timeout_s_(timeout_s) {
    // Clamped to 10^9 s (32 years): a larger double would overflow the clock's
    // 64-bit nanoseconds (undefined behaviour); NaN is < 0 nowhere and unbounded here.
    if (bounded_)
      at_ = Clock::now() + std::chrono::duration_cast<Clock::duration>(
                               std::chrono::duration<double>(std::min(timeout_s, 1e9)));
  }
  bool passed() const { return bounded_ && Clock::now() >= at_; }
  /// Milliseconds left, at most `cap`; `cap` when unbounded.
  int64_t left_ms(int64_t cap) const {
    if (!bounded_) return cap;
    return std::clamp<int64_t>(std::chrono::duration_cast<std::chrono::milliseconds>(at_ - Clock::now()).count(), 0, cap);
  }
  /// -1 when unbounded: for Client::call_waiting.
  int64_t wait_ms() const { return bounded_ ? left_ms(INT64_MAX) : -1; }
  double seconds() const { return timeout_s_; }

 private:
  bool bounded_;
  double timeout_s_;
  Clock::time_point at_{};
};

const Message& object_field(const Message& m, const char* key) {
  auto it = m.find(key);
  if (it == m.end() || !it->is_object()) throw ProtocolError(std::string("field \"") + key + "\" is missing or not an object");
  return *it;
}

/// The status object, from a Client made for this one call (a watcher
/// beside a held call, or a poll that must survive zkfarmd coming and going).
Message status_of(const std::string& state_dir, int timeout_ms) {
  Client c(state_dir, timeout_ms);
  return object_field(c.call(protocol::make(protocol::Verb::kStatus)), "status");
}

// Why a status is not ready, in words ("" when it is).
std::string not_ready_reason(const Message& st) {
  const std::string state = st.value("state", "");
  const std::string intake = st.value("intake", "");
  if (state == "stopping") return "zkfarmd is stopping";
  if (intake == "draining") return "drained (`zkfarmctl resume` takes partitions again)";
  if (intake == "refusing") return "refusing jobs: " + st.value("intake_fault", std::string("a fault"));
  std::string waiting;
  if (auto w = st.find("workers"); w != st.end() && w->is_array()) {
    for (const auto& worker : *w) {
      const std::string s = worker.value("state", "");
      if (s == "idle" || s == "busy") continue;
      waiting += (waiting.empty() ? "" : ", ") + worker.value("id", std::string("?")) + " " + s;
    }
  }
  if (!waiting.empty()) return "workers not READY: " + waiting;
  auto r = st.find("ready");
  if (r != st.end() && r->is_boolean() && !r->get<bool>()) return "not ready";
  return "";
}

// The workers failed for good, with their reasons ("" when none): they stay
// failed until `zkfarmctl restart WORKER`, so waiting for READY is pointless.
std::string failed_workers(const Message& st) {
  std::string out;
  if (auto w = st.find("workers"); w != st.end() && w->is_array()) {
    for (const auto& worker : *w) {
      if (!worker.is_object() || worker.value("state", "") != "failed") continue;
      const std::string id = worker.value("id", std::string("?"));
      const std::string reason = worker.value("failed_reason", std::string());
      out += (out.empty() ? "" : "; ") + id + " failed" + (reason.empty() ? "" : ": " + reason) +
             " (`zkfarmctl restart " + id + "` once fixed)";
    }
  }
  return out;
}

bool is_ready(const Message& st) {
  auto r = st.find("ready");
  if (r != st.end() && r->is_boolean()) return r->get<bool>();
  return not_ready_reason(st).empty();  // an older zkfarmd: from intake and the workers
}

// One line on a stop in progress.
std::string stop_progress(const Message& st) {
  uint64_t in_flight = 0;
  if (auto f = st.find("in_flight"); f != st.end() && f->is_number_unsigned()) in_flight = f->get<uint64_t>();
  std::string line = "stopping: " + plural(in_flight, "partition") + " in flight";
  size_t alive = 0;
  std::string releasing;
  if (auto w = st.find("workers"); w != st.end() && w->is_array()) {
    for (const auto& worker : *w) {
      if (worker.value("pid", 0) > 0) ++alive;
      if (worker.value("state", "") == "releasing") releasing += "; " + worker.value("id", std::string("?")) + " " + format_worker_activity(worker);
    }
  }
  return line + ", " + plural(alive, "worker") + " running" + releasing;
}

// Its phase (ProgressLine): the counts and who is releasing, not how long.
std::string stop_phase(const Message& st) {
  std::string phase = cell(st, "in_flight");
  if (auto w = st.find("workers"); w != st.end() && w->is_array())
    for (const auto& worker : *w)
      phase += " " + cell(worker, "id") + ":" + (worker.value("pid", 0) > 0 ? "up" : "down") + ":" + cell(worker, "state");
  return phase;
}

}  // namespace

int run_wait(Caller& client, const WaitOptions& opt) {
  const Deadline deadline(opt.timeout_s);
  ProgressLine progress(opt.quiet);
  std::string seen_state;
  uint64_t seen_done = UINT64_MAX, done = 0, total = 0;
  bool contact = false;
  const int reply_ms = client.timeout_ms();  // --timeout-ms: how long zkfarmd may take beyond a hold
  try {
    for (;;) {
      // A long poll: zkfarmd answers when the job differs from what was seen,
      // after wait_ms, or as it exits; so the end of a job is never missed
      // because zkfarmd stopped right after it.
      protocol::JobQuery query{.job = opt.job};
      // The first request is answered at once (nothing seen yet), so a
      // supervisor that never answers is found within --timeout-ms.
      const int64_t hold = contact ? deadline.left_ms(30000) : 0;
      if (hold > 0) {
        query.wait_ms = uint64_t(hold);
        query.seen_state = seen_state;
        if (seen_done != UINT64_MAX) query.seen_done = seen_done;
      }
      const Message req = protocol::to_message(query);
      const auto asked = Clock::now();
      client.set_timeout_ms(int(hold) + reply_ms);
      Message reply = client.call(req);
      contact = true;
      const Message& job = object_field(reply, "job");
      const std::string state = protocol::get_str(job, "state");
      done = protocol::get_u64(job, "done");
      total = protocol::get_u64(job, "partitions");
      if (state != "queued" && state != "running" && state != "done" && state != "failed" && state != "cancelled")
        throw ProtocolError("unknown job state \"" + state + "\"");
      // Off a terminal a line per state, and per count at most every few seconds.
      progress.show(progress.tty() ? progress_bar(done, total) + (state == "running" ? "" : "  (" + state + ")")
                                   : "job " + std::to_string(opt.job) + ": " + std::to_string(done) + "/" +
                                         plural(total, "partition") + " (" + state + ")",
                    state);
      if (state == "done") {
        progress.end();
        const std::string out = protocol::find_str(job, "out").value_or("-");
        if (protocol::find_str(job, "delivery").value_or("zkfarmd") == "client") {
          // zkfarmd cannot write as the submitter: the submitter's zkfarmctl does.
          auto owner = job.find("owner_uid");
          if (owner != job.end() && owner->is_number_unsigned() && owner->get<uint64_t>() != uint64_t(::getuid())) {
            std::cout << "job " << opt.job << " done: " << plural(done, "proof") << " in zkfarmd's journal ("
                      << user_name(owner->get<uint64_t>()) << " writes them with `zkfarmctl result " << opt.job
                      << " --out DIR`)\n";
            return kExitOk;
          }
          if (out.empty() || out == "-") {  // submitted without an output folder (zkfarm-api's clients may)
            std::cout << "job " << opt.job << " done: " << plural(done, "proof") << " kept by the farm (`zkfarmctl result "
                      << opt.job << " --out DIR` writes them)\n";
            return kExitOk;
          }
          client.set_timeout_ms(60000);
          // A shared queue restarting is ridden through within what is left
          // of --timeout (at least a minute; ten when waiting for ever).
          const uint64_t n = write_results(client, opt.job, out, std::max<int64_t>(deadline.left_ms(600000), 60000));
          std::cout << "job " << opt.job << " done: " << plural(n, "proof") << " written to " << out << "\n";
          return kExitOk;
        }
        std::cout << "job " << opt.job << " done: " << plural(done, "proof") << " in " << out << "\n";
        return kExitOk;
      }
      if (state == "failed") {
        progress.end();
        std::cerr << "zkfarmctl: job " << opt.job << " failed: " << protocol::find_str(job, "error").value_or("(no error given)")
                  << "\n";
        return kExitFailed;
      }
      if (state == "cancelled") {
        progress.end();
        std::cerr << "zkfarmctl: job " << opt.job << " was cancelled (" << done << "/" << plural(total, "partition") << " proved)\n";
        return kExitFailed;
      }
      if (protocol::find_str(reply, "supervisor").value_or("") == "exiting") {
        progress.end();
        std::cerr << "zkfarmctl: zkfarmd stopped before job " << opt.job << " ended (" << state << ", " << done << "/"
                  << plural(total, "partition") << " proved); the job is kept in the journal and goes on when zkfarmd starts again\n";
        return kExitNoSupervisor;
      }
      if (deadline.passed()) {
        progress.end();
        std::cerr << "zkfarmctl: job " << opt.job << " not finished after " << opt.timeout_s << " s (" << state << ", "
                  << done << "/" << plural(total, "partition") << ")\n";
        return kExitTimeout;
      }
      // An unchanged answer that came at once: a zkfarmd that does not hold
      // replies (an older version); poll gently instead.
      if (state == seen_state && done == seen_done && Clock::now() - asked < std::chrono::milliseconds(50))
        std::this_thread::sleep_for(std::chrono::milliseconds(std::min<int64_t>(100, deadline.left_ms(100))));
      seen_state = state;
      seen_done = done;
    }
  } catch (const NoSupervisor& e) {
    progress.end();
    if (!contact) throw;
    std::cerr << "zkfarmctl: zkfarmd went away before job " << opt.job << " ended (" << done << "/"
              << plural(total, "partition") << " proved); an accepted job is kept in the journal and goes on when zkfarmd starts again ("
              << e.what() << ")\n";
    return kExitNoSupervisor;
  }
}

int run_stop(Client& client, std::optional<uint64_t> drain_timeout_s, bool now, bool wait, const WaitLimit& limit) {
  protocol::Stop stop{.timeout_s = drain_timeout_s, .now = now};
  const std::string dir = client.state_dir();
  if (!wait) {
    client.call(protocol::to_message(stop));
    if (now)
      std::cout << "zkfarmd at " << dir << " is stopping now (workers killed; the journal keeps every job)\n";
    else
      std::cout << "zkfarmd at " << dir << " is stopping"
                << (drain_timeout_s ? " (in-flight partitions get " + plural(*drain_timeout_s, "second") + ")" : "")
                << "; `zkfarmctl stop --wait` waits for the end\n";
    return kExitOk;
  }
  // The watch on zkfarmd's process and state lock is set up now, while it
  // surely runs (ctl/exit_watch.hpp), on the process that answers here.
  const Message before = object_field(client.call(protocol::make(protocol::Verb::kStatus)), "status");
  ExitWatch watch(client.peer_pid(), dir);
  if (auto p = before.find("pid"); p != before.end() && p->is_number_integer()) watch.answered_by(p->get<int>());
  stop.wait = true;  // the reply comes as zkfarmd exits, with its exit code
  const Message req = protocol::to_message(stop);
  const Deadline deadline(limit.timeout_s);
  ProgressLine progress(limit.quiet);
  auto show = [&] {
    try {
      const Message st = status_of(dir, 2000);
      progress.show(stop_progress(st), stop_phase(st));
    } catch (const CtlError&) {  // exiting: no status any more
    }
  };
  // After the reply (or the connection's end): the process itself must be
  // gone and its state lock free before a new zkfarmd may start here.
  auto await_exit = [&]() -> int {
    if (!watch.how().empty()) progress.show("zkfarmd has answered; waiting for its process to exit (" + watch.how() + ")");
    const ExitWatch::Result r = watch.wait(deadline.wait_ms());
    progress.end();
    if (r == ExitWatch::Result::kTimeout) {
      std::cerr << "zkfarmctl: zkfarmd at " << dir << " answered that it stopped but its process is still there after "
                << deadline.seconds() << " s\n";
      return kExitTimeout;
    }
    if (r == ExitWatch::Result::kUnwatchable)
      note("cannot watch zkfarmd's process end (" + watch.why_not() + "); it may still be closing for a moment");
    return kExitOk;
  };
  std::optional<Message> reply;
  try {
    reply = client.call_waiting(req, deadline.wait_ms(), show, 500);
  } catch (const NoSupervisor& e) {
    if (std::string(e.what()).find("closed the connection") == std::string::npos) throw;
    const int waited = await_exit();
    std::cerr << "zkfarmctl: zkfarmd at " << dir << " ended without reporting how its stop went (killed?); see its log\n";
    return waited == kExitTimeout ? kExitTimeout : kExitFailed;
  } catch (const Refused& e) {
    // It stopped, badly (GPU memory not released: the held reply's error,
    // supervisor/control/control_api.cpp answer_held): still gone before the
    // verdict. Any other refusal (permission denied) stopped nothing: at once.
    if (std::string(e.what()).rfind("zkfarmd stopped with exit code", 0) == 0 && await_exit() == kExitTimeout)
      return kExitTimeout;
    throw;
  }
  if (!reply) {
    progress.end();
    std::cerr << "zkfarmctl: zkfarmd at " << dir << " is still stopping after " << deadline.seconds() << " s\n";
    return kExitTimeout;
  }
  if (const int waited = await_exit(); waited != kExitOk) return waited;
  std::cout << "zkfarmd at " << dir << " stopped (pid " << reply->value("pid", 0) << ", exit code 0)"
            << (now ? ": workers killed" : ": every worker reaped") << ", its memory released\n";
  return kExitOk;
}

int run_drain(Caller& client, const std::string& farm, bool wait, double timeout_s) {
  Message reply = client.call(protocol::make(protocol::Verb::kDrain));
  if (!quiet())
    std::cerr << farm << " is draining: "
              << plural(reply.value("in_flight", uint64_t(0)), "partition") << " in flight\n";
  if (!wait) return kExitOk;
  const Deadline deadline(timeout_s);
  ProgressLine progress;
  for (;;) {
    const Message st = object_field(client.call(protocol::make(protocol::Verb::kStatus)), "status");
    const uint64_t n = protocol::get_u64(st, "in_flight");
    progress.show("in flight: " + plural(n, "partition"), "draining");
    if (n == 0) {
      progress.end();
      std::cout << "drained: no partition in flight\n";
      return kExitOk;
    }
    if (deadline.passed()) {
      progress.end();
      std::cerr << "zkfarmctl: still " << plural(n, "partition") << " in flight after " << timeout_s << " s\n";
      return kExitTimeout;
    }
    std::this_thread::sleep_for(std::chrono::milliseconds(100));
  }
}

namespace {

// Follows rolling operation `id` in status until it ends.
int follow_rolling(Client& client, uint64_t id, const std::string& what, const WaitLimit& limit) {
  const Deadline deadline(limit.timeout_s);
  ProgressLine progress(limit.quiet);
  try {
    for (;;) {
      const Message st = object_field(client.call(protocol::make(protocol::Verb::kStatus)), "status");
      auto r = st.find("rolling");
      if (r != st.end() && r->is_object() && r->value("id", uint64_t(0)) == id) {
        const std::string result = r->value("result", "");
        std::string line = format_rolling(*r);
        // The phase: the operation's line and the current worker's step and
        // state, not the countdowns and elapsed times its activity shows.
        std::string phase = line;
        if (auto cur = r->find("current"); cur != r->end() && cur->is_string()) {
          if (auto ws = st.find("workers"); ws != st.end() && ws->is_array())
            for (const auto& w : *ws)
              if (w.value("id", "") == cur->get<std::string>()) {
                line += ": " + format_worker_activity(w);
                phase += " " + cell(w, "state") + " " + cell(w, "rolling_step");
              }
        }
        progress.show(line, phase);
        if (result == "done") {
          progress.end();
          std::cout << what << " " << id << " done: " << plural(r->value("replaced", uint64_t(0)), "worker") << " replaced\n";
          return kExitOk;
        }
        if (result == "failed") {
          progress.end();
          std::cerr << "zkfarmctl: " << what << " " << id << " failed: " << r->value("error", std::string("?")) << "\n";
          return kExitFailed;
        }
      }
      if (deadline.passed()) {
        progress.end();
        std::cerr << "zkfarmctl: " << what << " " << id << " still running after " << limit.timeout_s << " s\n";
        return kExitTimeout;
      }
      std::this_thread::sleep_for(std::chrono::milliseconds(200));
    }
  } catch (const NoSupervisor&) {
    progress.end();
    std::cerr << "zkfarmctl: zkfarmd went away before the " << what << " ended\n";
    return kExitNoSupervisor;
  }
}

int started_rolling(Client& client, const Message& reply, const std::string& what, bool wait, const WaitLimit& limit) {
  const size_t n = reply.value("workers", Message::array()).size();
  const uint64_t id = reply.value("rolling_id", uint64_t(0));
  if (!wait || id == 0) {
    std::cout << "rolling " << what << " of " << plural(n, "worker") << " started; `zkfarmctl " << what
              << " … --wait` follows it to its end, `zkfarmctl status` shows it\n";
    return kExitOk;
  }
  if (!quiet()) std::cerr << "rolling " << what << " " << id << " of " << plural(n, "worker") << " started\n";
  return follow_rolling(client, id, what, limit);
}

}  // namespace

int run_restart(Client& client, const std::string& target, bool wait, const WaitLimit& limit) {
  return started_rolling(client, client.call(protocol::to_message(protocol::Rolling{.target = target})), "restart", wait,
                         limit);
}

int run_upgrade(Client& client, const std::string& synth, const std::string& gpu, bool wait, const WaitLimit& limit) {
  protocol::Rolling upgrade{.upgrade = true};
  if (!synth.empty()) upgrade.synth = absolute_path(synth);
  if (!gpu.empty()) upgrade.gpu = absolute_path(gpu);
  return started_rolling(client, client.call(protocol::to_message(upgrade)), "upgrade", wait, limit);
}

int run_ready(const std::string& state_dir, int timeout_ms, bool wait, const WaitLimit& limit) {
  const Deadline deadline(limit.timeout_s);
  ProgressLine progress(limit.quiet || !wait);
  std::string why;
  for (;;) {
    try {
      const Message st = status_of(state_dir, timeout_ms);
      if (is_ready(st)) {
        progress.end();
        std::cout << "ready\n";
        return kExitOk;
      }
      why = not_ready_reason(st);
      const std::string failed = failed_workers(st);
      if (!wait || !failed.empty()) {
        progress.end();
        std::cerr << "zkfarmctl: not ready: " << (failed.empty() ? why : failed) << "\n";
        return kExitFailed;
      }
    } catch (const NoSupervisor& e) {
      if (!wait) throw;
      why = e.what();  // not started yet, or starting: keep waiting
    }
    progress.show("not ready: " + why);
    if (deadline.passed()) {
      progress.end();
      std::cerr << "zkfarmctl: not ready after " << limit.timeout_s << " s: " << why << "\n";
      return kExitTimeout;
    }
    std::this_thread::sleep_for(std::chrono::milliseconds(std::min<int64_t>(100, std::max<int64_t>(1, deadline.left_ms(100)))));
  }
}

}  // namespace zkfarm::ctl
