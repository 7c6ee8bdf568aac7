// Control requests as types (control_requests.hpp).
#include "protocol/control_requests.hpp"

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

}  // namespace

Message to_message(const Submit& s) {
  Message m = make("submit");
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
  Message m = make("result");
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

}  // namespace zkfarm::protocol
