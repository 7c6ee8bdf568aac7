// Control requests as types (control_requests.hpp).
#include "protocol/control_requests.hpp"
#include "protocol/control_verbs.hpp"

namespace zkfarm::protocol {

namespace {

// A list of strings under `field`; missing or not a list: empty.
std::vector<std::string> string_list(const Message& req, const char* field) {
  std::vector<std::string> out;
  auto it = req.find(field);
  if (it == req.end() || !it->is_array()) return out;
  out.reserve(it->size());
  for (const auto& v : *it) {
    if (!v.is_string()) throw ProtocolError(std::string(field) + " must be a list of paths");
    out.push_back(v.get<std::string>());
  }
  return out;
}

Message string_array(const std::vector<std::string>& v) {
  Message a = Message::array();
  for (const auto& s : v) a.push_back(s);
  return a;
}

std::optional<uint64_t> find_u64(const Message& req, const char* field) {
  if (!req.contains(field)) return std::nullopt;
  return get_u64(req, field);
}

}  // namespace

Message to_message(const Submit& s) {
  Message m = make(Verb::kSubmit);
  if (s.circuit) {
    m["circuit"] = *s.circuit;
    m["inputs"] = string_array(s.inputs);
  } else {
    m["zkey"] = s.zkey;
    m["wtns"] = string_array(s.wtns);
  }
  m["priority"] = s.priority;
  if (!s.out.empty()) m["out"] = s.out;
  if (!s.idempotency_key.empty()) m["idempotency_key"] = s.idempotency_key;
  return m;
}

Submit decode_submit(const Message& req) {
  Submit s;
  s.out = find_str(req, "out").value_or("");
  s.priority = find_str(req, "priority").value_or("normal");
  s.idempotency_key = find_str(req, "idempotency_key").value_or("");
  if (req.contains("circuit")) {
    s.circuit = get_str(req, "circuit");
    s.inputs = string_list(req, "inputs");
  } else {
    s.wtns = string_list(req, "wtns");
    s.zkey = get_str(req, "zkey");
  }
  return s;
}

Message to_message(const Result& r) {
  Message m = make(Verb::kResult);
  m["job"] = r.job;
  m["from"] = r.from;
  return m;
}

Result decode_result(const Message& req) {
  Result r;
  r.job = get_u64(req, "job");
  r.from = req.contains("from") ? get_u64(req, "from") : 0;
  return r;
}

Message to_message(const JobQuery& q) {
  Message m = make(Verb::kJob);
  m["job"] = q.job;
  if (q.wait_ms) m["wait_ms"] = q.wait_ms;
  if (q.seen_state) m["seen_state"] = *q.seen_state;
  if (q.seen_done) m["seen_done"] = *q.seen_done;
  return m;
}

JobQuery decode_job(const Message& req) {
  JobQuery q;
  q.job = get_u64(req, "job");
  q.wait_ms = find_u64(req, "wait_ms").value_or(0);
  q.seen_state = find_str(req, "seen_state");
  q.seen_done = find_u64(req, "seen_done");
  return q;
}

Message to_message(const JobsPage& q) {
  Message m = make(Verb::kJobs);
  if (q.state) m["state"] = *q.state;
  if (q.limit) m["limit"] = *q.limit;
  if (q.before) m["before"] = *q.before;
  if (q.since_ms) m["since_ms"] = *q.since_ms;
  return m;
}

JobsPage decode_jobs(const Message& req) {
  JobsPage q;
  q.state = find_str(req, "state");
  q.limit = find_u64(req, "limit");
  q.before = find_u64(req, "before");
  q.since_ms = find_u64(req, "since_ms");
  return q;
}

Message to_message(const Cancel& c) {
  Message m = make(Verb::kCancel);
  m["job"] = c.job;
  return m;
}

Cancel decode_cancel(const Message& req) { return Cancel{get_u64(req, "job")}; }

Message to_message(const Stop& s) {
  Message m = make(Verb::kStop);
  if (s.timeout_s) m["timeout_s"] = *s.timeout_s;
  if (s.wait) m["wait"] = true;
  if (s.now) m["now"] = true;
  return m;
}

Stop decode_stop(const Message& req) {
  Stop s;
  s.timeout_s = find_u64(req, "timeout_s");
  s.wait = req.contains("wait") && get_bool(req, "wait");
  s.now = req.contains("now") && get_bool(req, "now");
  return s;
}

Message to_message(const KillWorker& k) {
  Message m = make(Verb::kKillWorker);
  m["worker"] = k.worker;
  return m;
}

KillWorker decode_kill_worker(const Message& req) { return KillWorker{get_str(req, "worker")}; }

Message to_message(const Rolling& r) {
  Message m = make(r.upgrade ? Verb::kUpgrade : Verb::kRestart);
  if (!r.upgrade) m["target"] = r.target;
  if (r.synth) m["synth"] = *r.synth;
  if (r.gpu) m["gpu"] = *r.gpu;
  return m;
}

Rolling decode_rolling(const Message& req) {
  Rolling r;
  r.upgrade = type_of(req) == "upgrade";
  if (!r.upgrade) {
    r.target = get_str(req, "target");
  } else {
    r.synth = find_str(req, "synth");
    r.gpu = find_str(req, "gpu");
  }
  return r;
}

Message to_message(const CircuitAdd& c) {
  Message m = make(Verb::kCircuitAdd);
  m["name"] = c.name;
  m["zkey"] = c.zkey;
  if (c.wasm) m["wasm"] = *c.wasm;
  if (c.c_dir) m["c_dir"] = *c.c_dir;
  if (c.submitter) m["submitter"] = *c.submitter;
  if (!c.test_inputs.empty()) m["test_inputs"] = string_array(c.test_inputs);
  return m;
}

CircuitAdd decode_circuit_add(const Message& req) {
  CircuitAdd c;
  c.name = get_str(req, "name");
  c.zkey = get_str(req, "zkey");
  c.wasm = find_str(req, "wasm");
  c.c_dir = find_str(req, "c_dir");
  c.submitter = find_str(req, "submitter");
  if (auto t = req.find("test_inputs"); t != req.end()) {
    if (!t->is_array()) throw ProtocolError("test_inputs must be a list of paths");
    c.test_inputs = string_list(req, "test_inputs");
  }
  return c;
}

Message to_message(const CircuitRemove& c) {
  Message m = make(Verb::kCircuitRemove);
  m["name"] = c.name;
  return m;
}

CircuitRemove decode_circuit_remove(const Message& req) { return CircuitRemove{get_str(req, "name")}; }

}  // namespace zkfarm::protocol
