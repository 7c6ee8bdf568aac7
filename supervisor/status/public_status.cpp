#include "supervisor/status/public_status.hpp"

#include <map>
#include <nlohmann/json.hpp>

namespace zkfarm::http {

namespace {

using nlohmann::json;

// A name the status object uses for a state or a kind ("running", "idle",
// "synth"): copied to the output. Anything else becomes "other", so that the
// output cannot carry a path or free text even if the input changes shape.
std::string safe_name(const std::string& s) {
  if (s.empty() || s.size() > 24) return "other";
  for (char c : s)
    if (!((c >= 'a' && c <= 'z') || c == '_')) return "other";
  return s;
}

std::string safe_name(const json& v) { return v.is_string() ? safe_name(v.get_ref<const std::string&>()) : "other"; }

// The field `key` of the object `o`, or null.
const json& field(const json& o, const char* key) {
  static const json null_value;
  auto it = o.find(key);
  return it == o.end() ? null_value : *it;
}

// Copies the non-negative integer fields `keys` of `from` into a new object.
json counts(const json& from, std::initializer_list<const char*> keys) {
  json out = json::object();
  if (!from.is_object()) return out;
  for (const char* k : keys) {
    auto it = from.find(k);
    if (it != from.end() && it->is_number_unsigned()) out[k] = it->get<uint64_t>();
  }
  return out;
}

}  // namespace

std::optional<std::string> public_status(std::string_view status_json) {
  if (status_json.empty()) return std::nullopt;
  json s = json::parse(status_json.begin(), status_json.end(), nullptr, /*allow_exceptions=*/false);
  if (s.is_discarded() || !s.is_object()) return std::nullopt;
  json out = json::object();
  for (const char* k : {"state", "intake"})
    if (s.contains(k)) out[k] = safe_name(field(s, k));
  if (auto it = s.find("in_flight"); it != s.end() && it->is_number_unsigned()) out["in_flight"] = it->get<uint64_t>();
  if (s.contains("queue")) out["queue"] = counts(field(s, "queue"), {"synth", "prove"});
  if (auto it = s.find("workers"); it != s.end() && it->is_array()) {
    std::map<std::string, std::map<std::string, uint64_t>> by_kind;
    for (const auto& worker : *it)
      if (worker.is_object()) ++by_kind[safe_name(field(worker, "kind"))][safe_name(field(worker, "state"))];
    out["workers"] = json::object();
    for (const auto& [kind, states] : by_kind) out["workers"][kind] = states;
  }
  if (s.contains("arena")) out["arena"] = counts(field(s, "arena"), {"bytes", "used", "free", "slots"});
  // Jobs by state: `job_counts` covers every job (the list is bounded and
  // omits some); a status without it gets the list counted.
  std::optional<std::map<std::string, uint64_t>> by_state;
  if (auto it = s.find("job_counts"); it != s.end() && it->is_object()) {
    by_state.emplace();
    for (const auto& [state, n] : it->items())
      if (n.is_number_unsigned()) (*by_state)[safe_name(state)] += n.get<uint64_t>();
  } else if (auto list = s.find("jobs"); list != s.end() && list->is_array()) {
    by_state.emplace();
    for (const auto& job : *list)
      if (job.is_object()) ++(*by_state)[safe_name(field(job, "state"))];
  }
  if (by_state) {
    out["jobs"] = json::object();
    for (const auto& [state, n] : *by_state) out["jobs"][state] = n;
  }
  return out.dump();
}

}  // namespace zkfarm::http
