// The one-request verbs of zkfarmctl: submit, status, logs, jobs, cancel,
// result, resume, kill. The verbs that wait are in waiting.cpp.
#include "ctl/verbs.hpp"

#include <unistd.h>

#include <algorithm>
#include <charconv>
#include <chrono>
#include <ctime>
#include <filesystem>
#include <iostream>
#include <random>
#include <thread>

#include "protocol/control_requests.hpp"
#include "ctl/log_view.hpp"
#include "ctl/progress.hpp"
#include "ctl/render.hpp"
#include "ctl/results.hpp"
#include "ctl/suggest.hpp"
#include "files/file_error.hpp"
#include "files/safe_write.hpp"
#include "protocol/control_verbs.hpp"

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

int64_t now_unix_ms() {
  using namespace std::chrono;
  return duration_cast<milliseconds>(system_clock::now().time_since_epoch()).count();
}
}  // namespace

std::string absolute_path(const std::string& path) { return fs::absolute(path).lexically_normal().string(); }

int run_submit(Caller& client, const SubmitOptions& opt) {
  protocol::Submit submit;
  if (!opt.circuit.empty()) {
    submit.circuit = opt.circuit;
    for (const auto& i : opt.inputs) submit.inputs.push_back(absolute_path(i));
  } else {
    submit.zkey = absolute_path(opt.zkey);
    for (const auto& w : opt.wtns) submit.wtns.push_back(absolute_path(w));
  }
  submit.priority = opt.priority;
  submit.idempotency_key = opt.idempotency_key;
  const std::string out =
      opt.out.empty() ? (fs::current_path() / "proofs").lexically_normal().string() : absolute_path(opt.out);
  submit.out = out;
  // The output folder is the caller's: made now with its own rights, so a
  // folder it cannot create is refused before anything is sent (zkfarmd,
  // when it writes the results itself, makes it again as the submitter).
  try {
    files::create_dir_safe(out, 0755);
  } catch (const files::FileError& e) {
    throw CtlError(kExitFailed, std::string("--out: ") + e.what());
  }
  // The supervisor checks the key and every witness before it answers: a large
  // key takes a while, so the reply gets at least 10 minutes.
  client.set_timeout_ms(std::max(client.timeout_ms(), 600000));
  // "Busy" is not "bad": the same submit again after a backoff (0.2 s,
  // doubling to 2 s, with jitter), for --busy-timeout, before exit 75.
  const auto give_up = std::chrono::steady_clock::now() +
                       std::chrono::milliseconds(int64_t(std::clamp(opt.busy_timeout_s, 0.0, 86400.0) * 1000));
  int64_t backoff_ms = 200;
  std::minstd_rand jitter{std::random_device{}()};
  Message reply;
  for (;;) {
    try {
      reply = client.call(protocol::to_message(submit));
      break;
    } catch (const Refused& e) {
      if (!e.busy) throw;
      const int64_t pause = std::max<int64_t>(e.retry_after_ms, backoff_ms) + int64_t(jitter() % 100);
      if (std::chrono::steady_clock::now() + std::chrono::milliseconds(pause) > give_up)
        throw CtlError(kExitBusy, std::string(e.what()) + " (retried for " + std::to_string(int64_t(opt.busy_timeout_s)) +
                                      " s; exit 75: retry later)");
      std::this_thread::sleep_for(std::chrono::milliseconds(pause));
      backoff_ms = std::min<int64_t>(backoff_ms * 2, 2000);
    }
  }
  const uint64_t job = protocol::get_u64(reply, "job");
  std::cout << job << "\n";
  if (protocol::find_str(reply, "delivery").value_or("zkfarmd") == "client" && !quiet()) {
    // Why: a farm of several hosts keeps proofs in its queue; a lone zkfarmd
    // running as another user may not write where the submitter may.
    const std::string reason = protocol::find_str(reply, "delivery_reason").value_or("");
    if (reason == "api")
      std::cerr << "zkfarmctl: the farm keeps the proofs; `zkfarmctl --api … wait " << job << "` writes them into " << out
                << " when the job is done (or `zkfarmctl --api … result " << job << " --out DIR` later)\n";
    else if (reason == "queue")
      std::cerr << "zkfarmctl: the farm keeps the proofs in its shared queue; `zkfarmctl wait " << job
                << "` (on any of its hosts) writes them into " << out << " when the job is done (or `zkfarmctl result "
                << job << " --out DIR` later)\n";
    else
      std::cerr << "zkfarmctl: zkfarmd runs as another user and does not write into " << out << "; `zkfarmctl wait "
                << job << "` writes the proofs there when the job is done (or `zkfarmctl result " << job
                << " --out DIR` later)\n";
  }
  return kExitOk;
}

int run_status(Caller& client, bool json, const std::string& worker, size_t log_lines) {
  Message reply = client.call(protocol::make(protocol::Verb::kStatus));
  const Message& status = reply_field(reply, "status", Message::value_t::object, "an object");
  if (worker.empty()) {
    std::cout << (json ? to_json_text(status) + "\n" : format_status(status));
    return kExitOk;
  }
  const Message* found = nullptr;
  std::vector<std::string> ids;
  if (auto ws = status.find("workers"); ws != status.end() && ws->is_array()) {
    for (const auto& w : *ws) {
      ids.push_back(w.value("id", std::string()));
      if (ids.back() == worker) found = &w;
    }
  }
  if (!found) {
    const std::string hint = closest(worker, ids);
    throw CtlError(kExitFailed, "no worker '" + worker + "'" + (hint.empty() ? "" : "; did you mean '" + hint + "'?") +
                                    " (zkfarmctl status lists them)");
  }
  if (json) {
    std::cout << to_json_text(*found) << "\n";
    return kExitOk;
  }
  std::cout << format_worker(*found);
  if (log_lines == 0) return kExitOk;
  // Its last lines in zkfarmd's log, as `systemctl status` shows the journal's.
  const std::string log = protocol::find_str(status, "log_file").value_or("");
  if (log.empty()) {
    std::cout << "\n(this zkfarmd names no log file)\n";
    return kExitOk;
  }
  std::cout << "\n";
  try {
    for (const auto& l : last_lines(log, log_lines, worker_lines(worker))) std::cout << l << "\n";
  } catch (const CtlError& e) {
    std::cout << "(" << e.what() << ")\n";  // the worker is shown; its log may be another user's
  }
  return kExitOk;
}

int run_logs(Caller& client, long lines, bool follow_it) {
  Message reply = client.call(protocol::make(protocol::Verb::kStatus));
  const Message& status = reply_field(reply, "status", Message::value_t::object, "an object");
  const std::string log = protocol::find_str(status, "log_file").value_or("");
  if (log.empty()) throw CtlError(kExitFailed, "this zkfarmd names no log file in its status (log_file)");
  // Without -n: all of it, or with -f the last 10 lines first (as tail -f).
  const size_t n = lines >= 0 ? size_t(lines) : follow_it ? 10 : SIZE_MAX;
  const uint64_t size = file_size(log);
  if (!follow_it && lines < 0) {
    print_all(log, std::cout);
    return kExitOk;
  }
  for (const auto& l : last_lines(log, n)) std::cout << l << "\n";
  std::cout << std::flush;
  if (follow_it) follow(log, size, std::cout);
  return kExitOk;
}

uint64_t parse_since(const std::string& text) {
  auto bad = [&] {
    return CtlError(kExitUsage, "--since " + text +
                                    ": expected a duration before now (90s, 30m, 2h, 7d), a date or time "
                                    "(2026-12-01, 2026-12-01T10:00, 2026-12-01T10:00:00Z) or Unix ms");
  };
  if (text.empty()) throw bad();
  // A duration: digits and a unit.
  const char unit = text.back();
  if (std::string("smhd").find(unit) != std::string::npos && text.size() > 1) {
    uint64_t n = 0;
    auto [p, ec] = std::from_chars(text.data(), text.data() + text.size() - 1, n);
    if (ec == std::errc() && p == text.data() + text.size() - 1) {
      const uint64_t per = unit == 's' ? 1000 : unit == 'm' ? 60000 : unit == 'h' ? 3600000 : 86400000;
      if (n > uint64_t(now_unix_ms()) / per) return 0;
      return uint64_t(now_unix_ms()) - n * per;
    }
  }
  // Unix ms: digits only (at least 10, so "2026" is not read as ms).
  if (text.size() >= 10 && text.find_first_not_of("0123456789") == std::string::npos) {
    uint64_t n = 0;
    auto [p, ec] = std::from_chars(text.data(), text.data() + text.size(), n);
    if (ec == std::errc()) return n;
  }
  // A date, a date-time (minutes or seconds), local time or UTC with Z.
  std::tm tm{};
  const bool utc = text.back() == 'Z';
  const std::string t = utc ? text.substr(0, text.size() - 1) : text;
  const char* formats[] = {"%Y-%m-%dT%H:%M:%S", "%Y-%m-%dT%H:%M", "%Y-%m-%d %H:%M:%S", "%Y-%m-%d %H:%M", "%Y-%m-%d"};
  for (const char* f : formats) {
    tm = {};
    const char* end = strptime(t.c_str(), f, &tm);
    if (!end || *end) continue;
    tm.tm_isdst = -1;
    const std::time_t s = utc ? timegm(&tm) : mktime(&tm);
    if (s < 0) throw bad();
    return uint64_t(s) * 1000;
  }
  throw bad();
}

int run_jobs(Caller& client, bool json, const JobsOptions& opt) {
  protocol::JobsPage page;
  if (!opt.state.empty()) page.state = opt.state;
  if (opt.limit) page.limit = opt.limit;
  if (opt.before) page.before = opt.before;
  if (!opt.since.empty()) page.since_ms = parse_since(opt.since);
  Message reply = client.call(protocol::to_message(page));
  const Message& jobs = reply_field(reply, "jobs", Message::value_t::array, "a list");
  std::cout << (json ? to_json_text(jobs) + "\n" : format_jobs(jobs));
  auto next = reply.find("next_before");
  if (!json && next != reply.end() && next->is_number_unsigned())
    std::cout << "more: zkfarmctl jobs --before " << next->get<uint64_t>() << "\n";
  return kExitOk;
}

int run_cancel(Caller& client, uint64_t job) {
  client.call(protocol::to_message(protocol::Cancel{job}));
  std::cout << "job " << job << " cancelled\n";
  return kExitOk;
}

int run_resume(Caller& client, const std::string& farm) {
  client.call(protocol::make(protocol::Verb::kResume));
  std::cout << farm << " takes partitions again\n";
  return kExitOk;
}

int run_kill(Client& client, const std::string& worker) {
  if (worker.empty()) {
    // The old spelling of `stop --now`, kept so that scripts go on working.
    note("`kill` without a worker is `stop --now` (kill WORKER kills one worker)");
    client.call(protocol::make(protocol::Verb::kKill));
    std::cout << "zkfarmd at " << client.state_dir() << " is stopping now (workers killed)\n";
    return kExitOk;
  }
  Message reply = client.call(protocol::to_message(protocol::KillWorker{worker}));
  std::cout << "worker " << worker << " (pid " << cell(reply, "pid")
            << ") killed; zkfarmd requeues its partitions and restarts it after its backoff\n";
  return kExitOk;
}

int run_circuit_add(Caller& client, const CircuitAddOptions& opt) {
  protocol::CircuitAdd add;
  add.name = opt.name;
  add.zkey = absolute_path(opt.zkey);
  if (!opt.wasm.empty()) add.wasm = absolute_path(opt.wasm);
  if (!opt.c_dir.empty()) add.c_dir = absolute_path(opt.c_dir);
  for (const auto& t : opt.test_inputs) add.test_inputs.push_back(absolute_path(t));
  note("adding circuit " + opt.name + ": zkfarmd copies the files and builds the witness generator "
       "(once per content; a large circuit takes minutes)");
  client.set_timeout_ms(std::max(client.timeout_ms(), 30 * 60 * 1000 + 60000));
  Message reply = client.call(protocol::to_message(add));
  const Message& c = reply_field(reply, "circuit", Message::value_t::object, "a circuit");
  std::cout << "circuit " << cell(c, "name") << " added: " << cell(c, "kind") << " generator "
            << cell(c, "generator").substr(0, 16) << ", key " << cell(c, "zkey") << " (" << cell(c, "n_vars")
            << " signals, " << cell(c, "n_public") << " public)\n"
            << "witness: " << (c.contains("witness") ? cell(c, "witness") : std::string("-")) << "\n";
  return kExitOk;
}

int run_circuit_list(Caller& client, bool json) {
  Message reply = client.call(protocol::make(protocol::Verb::kCircuitList));
  const Message& list = reply_field(reply, "circuits", Message::value_t::array, "a list");
  if (json) {
    std::cout << to_json_text(list) << "\n";
    return kExitOk;
  }
  if (list.empty()) {
    std::cout << "no circuits (zkfarmctl circuit add NAME --zkey KEY --wasm FILE | --c DIR)\n";
    return kExitOk;
  }
  std::vector<std::vector<std::string>> rows;
  for (const auto& c : list)
    rows.push_back({cell(c, "name"), cell(c, "kind"), c.contains("witness") ? cell(c, "witness") : "-", cell(c, "n_vars"), cell(c, "n_public"), user_name(c.contains("owner_uid") ? c["owner_uid"] : Message()),
                    format_time_ms(c.contains("added_ms") ? c["added_ms"] : Message()), cell(c, "zkey"),
                    cell(c, "source")});
  std::cout << format_table({"NAME", "KIND", "WITNESS", "SIGNALS", "PUBLIC", "OWNER", "ADDED", "KEY", "GENERATOR FROM"}, rows);
  return kExitOk;
}

int run_circuit_remove(Caller& client, const std::string& name) {
  client.call(protocol::to_message(protocol::CircuitRemove{name}));
  std::cout << "circuit " << name << " removed (jobs accepted with it go on)\n";
  return kExitOk;
}

int run_result(Caller& client, uint64_t job, const std::string& out, bool json) {
  // No --out: $PWD/proofs, as submit.
  const std::string dir = out.empty() ? (fs::current_path() / "proofs").lexically_normal().string() : absolute_path(out);
  nlohmann::json listing = nlohmann::json::array();
  const uint64_t n = write_results(client, job, dir, 60000, json ? &listing : nullptr);
  if (json)
    std::cout << nlohmann::json{{"job", job}, {"out", dir}, {"results", std::move(listing)}}.dump(2) << "\n";
  else
    std::cout << "job " << job << ": " << plural(n, "proof") << " written to " << dir << "\n";
  return kExitOk;
}

}  // namespace zkfarm::ctl
