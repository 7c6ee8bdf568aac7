#include "ctl/verbs.hpp"

#include <unistd.h>

#include <chrono>
#include <filesystem>
#include <iostream>
#include <thread>

#include "ctl/render.hpp"

namespace zkfarm::ctl {

namespace {
namespace fs = std::filesystem;
using protocol::Message;
using protocol::ProtocolError;

/// reply[key], which must be of the given kind.
const Message& reply_field(const Message& reply, const char* key, Message::value_t kind, const char* what) {
  auto it = reply.find(key);
  if (it == reply.end() || it->type() != kind) {
    throw ProtocolError(std::string("field \"") + key + "\" is missing or not " + what);
  }
  return *it;
}

/// Shows a job's progress on stderr: on a terminal one bar redrawn in place,
/// otherwise one line whenever it changes.
class Progress {
 public:
  Progress(uint64_t job, bool quiet) : job_(job), quiet_(quiet), tty_(isatty(STDERR_FILENO) == 1) {}
  ~Progress() { end(); }

  void show(uint64_t done, uint64_t total, const std::string& state) {
    if (quiet_) return;
    std::string line = progress_bar(done, total) + (state == "running" ? "" : "  (" + state + ")");
    if (line == last_) return;
    last_ = line;
    if (tty_) {
      std::cerr << "\r" << line << "\033[K" << std::flush;
      drawn_ = true;
    } else {
      std::cerr << "job " << job_ << ": " << done << "/" << total << " partitions (" << state << ")\n" << std::flush;
    }
  }

  /// Ends the bar's line so that what follows starts on a fresh one.
  void end() {
    if (drawn_) std::cerr << "\n" << std::flush;
    drawn_ = false;
  }

 private:
  uint64_t job_;
  bool quiet_;
  bool tty_;
  bool drawn_ = false;
  std::string last_;
};
}  // namespace

std::string absolute_path(const std::string& path) { return fs::absolute(path).lexically_normal().string(); }

int run_submit(Client& client, const SubmitOptions& opt) {
  Message req = protocol::make("submit");
  req["zkey"] = absolute_path(opt.zkey);
  Message wtns = Message::array();
  for (const auto& w : opt.wtns) wtns.push_back(absolute_path(w));
  req["wtns"] = wtns;
  req["priority"] = opt.priority;
  req["out"] = opt.out.empty() ? (fs::current_path() / "proofs").lexically_normal().string() : absolute_path(opt.out);
  // The supervisor checks the key and every witness before it answers: a large
  // key takes a while, so the reply gets at least 10 minutes.
  client.set_timeout_ms(std::max(client.timeout_ms(), 600000));
  Message reply = client.call(req);
  std::cout << protocol::get_u64(reply, "job") << "\n";
  return kExitOk;
}

int run_wait(Client& client, const WaitOptions& opt) {
  using clock = std::chrono::steady_clock;
  const bool bounded = opt.timeout_s >= 0;
  const auto deadline =
      clock::now() + std::chrono::duration_cast<clock::duration>(std::chrono::duration<double>(bounded ? opt.timeout_s : 0));
  Progress progress(opt.job, opt.quiet);
  Message req = protocol::make("job");
  req["job"] = opt.job;
  for (;;) {
    Message reply = client.call(req);
    const Message& job = reply_field(reply, "job", Message::value_t::object, "a job object");
    const std::string state = protocol::get_str(job, "state");
    const uint64_t done = protocol::get_u64(job, "done");
    const uint64_t total = protocol::get_u64(job, "partitions");
    if (state != "queued" && state != "running" && state != "done" && state != "failed" && state != "cancelled") {
      throw ProtocolError("unknown job state \"" + state + "\"");
    }
    progress.show(done, total, state);
    if (state == "done") {
      progress.end();
      std::cout << "job " << opt.job << " done: " << done << " proofs in " << protocol::find_str(job, "out").value_or("-")
                << "\n";
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
      std::cerr << "zkfarmctl: job " << opt.job << " was cancelled (" << done << "/" << total << " partitions proved)\n";
      return kExitFailed;
    }
    const auto now = clock::now();
    if (bounded && now >= deadline) {
      progress.end();
      std::cerr << "zkfarmctl: job " << opt.job << " not finished after " << opt.timeout_s << " s (" << state << ", "
                << done << "/" << total << " partitions)\n";
      return kExitTimeout;
    }
    auto pause = std::chrono::duration_cast<clock::duration>(std::chrono::milliseconds(100));
    if (bounded) pause = std::min(pause, deadline - now);
    std::this_thread::sleep_for(pause);
  }
}

int run_status(Client& client, bool json) {
  Message reply = client.call(protocol::make("status"));
  const Message& status = reply_field(reply, "status", Message::value_t::object, "an object");
  std::cout << (json ? to_json_text(status) + "\n" : format_status(status));
  return kExitOk;
}

int run_jobs(Client& client, bool json, const JobsOptions& opt) {
  Message req = protocol::make("jobs");
  if (!opt.state.empty()) req["state"] = opt.state;
  if (opt.limit) req["limit"] = opt.limit;
  if (opt.before) req["before"] = opt.before;
  Message reply = client.call(req);
  const Message& jobs = reply_field(reply, "jobs", Message::value_t::array, "a list");
  std::cout << (json ? to_json_text(jobs) + "\n" : format_jobs(jobs));
  auto next = reply.find("next_before");
  if (!json && next != reply.end() && next->is_number_unsigned())
    std::cout << "more: zkfarmctl jobs --before " << next->get<uint64_t>() << "\n";
  return kExitOk;
}

int run_cancel(Client& client, uint64_t job) {
  Message req = protocol::make("cancel");
  req["job"] = job;
  client.call(req);
  std::cout << "job " << job << " cancelled\n";
  return kExitOk;
}

int run_drain(Client& client, bool wait, double timeout_s) {
  Message reply = client.call(protocol::make("drain"));
  std::cerr << "zkfarmd at " << client.state_dir() << " is draining: " << reply.value("in_flight", 0)
            << " partitions in flight\n";
  if (!wait) return kExitOk;
  using clock = std::chrono::steady_clock;
  const auto deadline = clock::now() + std::chrono::duration_cast<clock::duration>(std::chrono::duration<double>(timeout_s));
  uint64_t last = UINT64_MAX;
  for (;;) {
    Message st = reply_field(client.call(protocol::make("status")), "status", Message::value_t::object, "a status object");
    const uint64_t n = protocol::get_u64(st, "in_flight");
    if (n != last) std::cerr << "in flight: " << n << "\n";
    last = n;
    if (n == 0) {
      std::cout << "drained: no partition in flight\n";
      return kExitOk;
    }
    if (timeout_s >= 0 && clock::now() >= deadline) {
      std::cerr << "zkfarmctl: still " << n << " partitions in flight after " << timeout_s << " s\n";
      return kExitTimeout;
    }
    std::this_thread::sleep_for(std::chrono::milliseconds(100));
  }
}

int run_resume(Client& client) {
  client.call(protocol::make("resume"));
  std::cout << "zkfarmd at " << client.state_dir() << " takes partitions again\n";
  return kExitOk;
}

int run_kill(Client& client) {
  client.call(protocol::make("kill"));
  std::cout << "zkfarmd at " << client.state_dir() << " is stopping now (workers killed)\n";
  return kExitOk;
}

int run_restart(Client& client, const std::string& target) {
  Message req = protocol::make("restart");
  req["target"] = target;
  Message reply = client.call(req);
  std::cout << "rolling restart of " << reply.value("workers", Message::array()).size()
            << " workers started; follow it with `zkfarmctl status`\n";
  return kExitOk;
}

int run_upgrade(Client& client, const std::string& synth, const std::string& gpu) {
  Message req = protocol::make("upgrade");
  if (!synth.empty()) req["synth"] = absolute_path(synth);
  if (!gpu.empty()) req["gpu"] = absolute_path(gpu);
  Message reply = client.call(req);
  std::cout << "rolling upgrade of " << reply.value("workers", Message::array()).size()
            << " workers started; follow it with `zkfarmctl status`\n";
  return kExitOk;
}

int run_stop_timeout(Client& client, uint64_t timeout_s) {
  Message req = protocol::make("stop");
  req["timeout_s"] = timeout_s;
  client.call(req);
  std::cout << "zkfarmd at " << client.state_dir() << " is stopping (in-flight partitions get " << timeout_s << " s)\n";
  return kExitOk;
}

int run_result(Client& client, uint64_t job, const std::string& out) {
  Message req = protocol::make("result");
  req["job"] = job;
  req["out"] = absolute_path(out);
  Message reply = client.call(req);
  std::cout << "job " << job << ": " << reply.value("written", 0) << " proofs written to " << reply.value("out", out)
            << "\n";
  return kExitOk;
}

int run_stop(Client& client) {
  client.call(protocol::make("stop"));
  std::cout << "zkfarmd at " << client.state_dir() << " is stopping\n";
  return kExitOk;
}

}  // namespace zkfarm::ctl
