// operator_status (operator_status.hpp): the farm's status, host details withheld.
#include "api/operator_status.hpp"

#include <initializer_list>

namespace zkfarm::api {

using nlohmann::json;

namespace {

// Copies the listed keys of `from` (an object) into a new object.
json pick(const json& from, std::initializer_list<const char*> keys) {
  json out = json::object();
  if (!from.is_object()) return out;
  for (const char* k : keys)
    if (auto it = from.find(k); it != from.end()) out[k] = *it;
  return out;
}

// Free text that may name a path or a pid: shown as a fixed word when present.
void withhold_text(json& out, const json& from, const char* key) {
  if (from.is_object() && from.contains(key) && !from[key].is_null() &&
      !(from[key].is_string() && from[key].get<std::string>().empty()))
    out[key] = "withheld (see zkfarmctl status on the farm's host)";
}

}  // namespace

json operator_status(const json& status) {
  json out = pick(status, {"version", "state", "intake", "ready", "started_ms", "uptime_s", "in_flight", "partitions",
                           "queue", "connections", "job_counts", "jobs_omitted"});
  withhold_text(out, status, "intake_fault");
  if (status.is_object() && status.contains("arena")) out["arena"] = pick(status["arena"], {"kind", "bytes", "used", "slots"});
  if (status.is_object() && status.contains("rolling")) {
    const json& r = status["rolling"];
    if (r.is_object()) {
      out["rolling"] = pick(r, {"id", "what", "result", "current", "queued", "replaced", "total", "started_ms", "finished_ms"});
      withhold_text(out["rolling"], r, "error");
    } else {
      out["rolling"] = nullptr;
    }
  }
  if (status.is_object() && status.contains("workers") && status["workers"].is_array()) {
    json workers = json::array();
    for (const json& w : status["workers"]) {
      json o = pick(w, {"id", "kind", "state", "version", "backend", "device", "partition", "job", "partition_index",
                        "held", "restarts", "retiring", "uptime_s", "rolling_step", "restart_in_ms"});
      withhold_text(o, w, "release");
      withhold_text(o, w, "failed_reason");
      workers.push_back(std::move(o));
    }
    out["workers"] = std::move(workers);
  }
  if (status.is_object() && status.contains("cluster")) {
    const json& c = status["cluster"];
    if (c.is_object()) {
      // Host ids are left out too: the default one is "HOSTNAME:STATE_DIR".
      json o = pick(c, {"reachable", "lease_seconds", "partitions", "live_jobs", "held_here", "preparing",
                        "proofs_stored", "proofs_dropped", "leases_lost", "leases_released", "view_ms",
                        "unreachable_since_ms"});
      withhold_text(o, c, "fault");
      json hosts = json::array();
      if (c.contains("hosts") && c["hosts"].is_array())
        for (const json& h : c["hosts"])
          hosts.push_back(pick(h, {"alive", "state", "heartbeat_age_s", "leases", "version", "devices"}));
      o["hosts"] = std::move(hosts);
      out["cluster"] = std::move(o);
    } else {
      out["cluster"] = nullptr;
    }
  }
  return out;
}

}  // namespace zkfarm::api
