// The job routes (docs/api.md, "Jobs"): submit with an idempotency key and the
// tenant's quota of queued partitions, status and long poll, results, cancel,
// list. zkfarmd proves; this file decides what a tenant may see and do.
#include <fcntl.h>
#include <sys/stat.h>
#include <unistd.h>

#include <chrono>
#include <cstring>
#include <filesystem>
#include <set>

#include "protocol/control_requests.hpp"
#include "api/call.hpp"
#include "api/input_names.hpp"
#include "api/service.hpp"
#include "supervisor/clock.hpp"

namespace zkfarm::api {


namespace {

using supervisor::wall_ms;

namespace fs = std::filesystem;

bool terminal_state(const std::string& s) { return s == "done" || s == "failed" || s == "cancelled"; }

// Writes `text` to a new file (0600, never through a link).
void write_new_file(const std::string& path, const std::string& text) {
  const int fd = ::open(path.c_str(), O_WRONLY | O_CREAT | O_EXCL | O_NOFOLLOW | O_CLOEXEC, 0600);
  if (fd < 0) throw std::runtime_error(path + ": cannot create: " + std::strerror(errno));
  size_t off = 0;
  while (off < text.size()) {
    const ssize_t w = ::write(fd, text.data() + off, text.size() - off);
    if (w < 0 && errno == EINTR) continue;
    if (w < 0) {
      const int err = errno;
      ::close(fd);
      throw std::runtime_error(path + ": cannot write: " + std::strerror(err));
    }
    off += size_t(w);
  }
  ::close(fd);
}

// The tenant's inputs, each written as a file zkfarmd reads, removed when the
// submit is answered (zkfarmd keeps its own copy of what it accepts).
struct InputFiles {
  std::string dir;
  std::vector<std::string> paths;
  ~InputFiles() {
    if (dir.empty()) return;
    std::error_code ec;
    fs::remove_all(dir, ec);
  }
};

ApiError bad(const std::string& msg) { return {400, "bad_request", msg}; }

// A numeric query value, or nullopt when the query does not have it; 400
// naming the key when it is not a number.
std::optional<uint64_t> query_number(const RequestHead& head, const char* key) {
  auto it = head.query.find(key);
  if (it == head.query.end()) return std::nullopt;
  auto v = parse_u64(it->second);
  if (!v) throw bad(std::string("'") + key + "' must be a number");
  return v;
}

}  // namespace

json Service::job_view(const json& j, const JobRow& row) const {
  json v = json::object();
  for (const char* k : {"id", "state", "priority", "partitions", "done", "submitted_ms", "finished_ms", "queue_wait_ms",
                        "synthesis_ms", "proving_ms", "total_ms"})
    if (j.contains(k)) v[k] = j[k];
  if (j.contains("error") && j["error"].is_string())
    v["error"] = with_input_names(tenant_text(j["error"].get<std::string>()), store_.input_names(row.id));
  v["circuit"] = row.circuit;
  v["idempotency_key"] = row.idempotency_key.empty() ? json(nullptr) : json(row.idempotency_key);
  // Results are read through the API (GET …/results); `out` is the client's
  // own folder, kept for zkfarmctl --api, which writes the proofs there.
  v["delivery"] = "client";
  v["out"] = row.out;
  return v;
}

JobRow Service::own_job(Call& c) const {
  auto row = store_.job(c.job);
  // Another tenant's job reads as no job at all: its existence is not told.
  if (!row || row->tenant != c.who.tenant) throw ApiError{404, "not_found", "no job " + std::to_string(c.job)};
  return *row;
}

json Service::farm_job(const JobRow& row, uint64_t wait_ms, const std::string& seen_state, uint64_t seen_done) {
  protocol::JobQuery query{.job = row.id};
  if (wait_ms) {
    query.wait_ms = wait_ms;
    query.seen_state = seen_state;
    if (seen_done != UINT64_MAX) query.seen_done = seen_done;
  }
  const json req = protocol::to_message(query);
  json reply;
  try {
    reply = farm_.call(req, int(wait_ms) + 15000);
  } catch (const FarmRefused& e) {
    throw ApiError{404, "not_found", "job " + std::to_string(row.id) + " is no longer kept by the farm"};
  }
  json job = reply.value("job", json::object());
  if (!row.terminal && terminal_state(job.value("state", ""))) store_.mark_terminal(row.id);
  return job;
}

Response Service::job_create(Call& c, const Request& req) {
  const json body = parse_body(req.body);
  for (const auto& [k, v] : body.items())
    if (k != "circuit" && k != "zkey" && k != "inputs" && k != "witnesses" && k != "priority" && k != "idempotency_key" &&
        k != "out" && k != "partition_names")
      throw ApiError{400, "unknown_field", "unknown field '" + k.substr(0, 64) + "'"};
  auto str = [&](const char* k) -> std::string {
    if (!body.contains(k)) return {};
    if (!body[k].is_string()) throw bad(std::string("'") + k + "' must be a string");
    return body[k].get<std::string>();
  };
  const std::string circuit = str("circuit"), zkey = str("zkey"), priority = str("priority"), out = str("out");
  std::string key = str("idempotency_key");
  if (const std::string h = req.head.field("idempotency-key"); !h.empty()) {
    if (!key.empty() && key != h) throw bad("the Idempotency-Key header and 'idempotency_key' differ");
    key = h;
  }
  if (key.size() > 255) throw bad("'idempotency_key' is longer than 255 characters");
  for (char ch : key)
    if (ch < 0x20 || ch > 0x7e) throw bad("'idempotency_key' must be printable ASCII");
  if (out.size() > 4096) throw bad("'out' is longer than 4096 characters");
  if (!priority.empty() && priority != "low" && priority != "normal" && priority != "high" && priority != "critical")
    throw bad("'priority' must be low, normal, high or critical");
  // zkfarm-api is an admin to zkfarmd, so the grant of critical (which jumps
  // every tenant's queue) is made here: operator tokens only.
  if (priority == "critical" && !role_allows(c.who.role, Role::kOperator))
    throw ApiError{403, "forbidden", "'priority' critical needs the operator role; the token has " +
                                         std::string(role_name(c.who.role))};
  const bool has_inputs = body.contains("inputs"), has_wtns = body.contains("witnesses");
  if (has_inputs == has_wtns) throw bad("give 'inputs' (circom inputs) or 'witnesses' (upload ids), not both, not neither");
  const json& list = has_inputs ? body["inputs"] : body["witnesses"];
  if (!list.is_array() || list.empty()) throw bad(std::string("'") + (has_inputs ? "inputs" : "witnesses") + "' must be a non-empty list");
  if (list.size() > opts_.max_partitions)
    throw ApiError{413, "payload_too_large", "a job has at most " + std::to_string(opts_.max_partitions) + " partitions"};
  if (has_inputs && circuit.empty()) throw bad("a job of inputs needs 'circuit'");
  // The client's names of its inputs (zkfarmctl sends the paths it read
  // them from): a failure after the submit names them instead of "input
  // K.json". Cosmetic, so not part of the idempotent request.
  std::vector<std::string> input_names;
  if (body.contains("partition_names")) {
    const json& names = body["partition_names"];
    if (!has_inputs) throw bad("'partition_names' names the inputs of a job of inputs");
    if (!names.is_array() || names.size() != list.size())
      throw bad("'partition_names' must be a list of " + std::to_string(list.size()) + " strings, one for each input");
    for (size_t k = 0; k < names.size(); ++k) {
      const std::string* name = names[k].is_string() ? &names[k].get_ref<const std::string&>() : nullptr;
      if (!name || name->empty() || name->size() > 1024)
        throw bad("partition_names[" + std::to_string(k) + "] must be a string of 1 to 1024 characters");
      for (unsigned char ch : *name)
        if (ch < 0x20 || ch == 0x7f) throw bad("partition_names[" + std::to_string(k) + "] has a control character");
      input_names.push_back(*name);
    }
  }
  if (has_wtns && circuit.empty() == zkey.empty()) throw bad("a job of witnesses needs 'circuit' or 'zkey' (an upload id), one of them");
  if (!circuit.empty() && !valid_circuit_name(circuit)) throw ApiError{404, "not_found", "no circuit '" + circuit.substr(0, 64) + "'"};

  // The request as canonical JSON (keys sorted), with the key: what an
  // idempotent retry must repeat. Uploads count by content (their SHA-256),
  // not by id, so a client that uploads the same files again and retries
  // (zkfarmctl --api does) gets its first job back.
  json canon = body;
  canon.erase("partition_names");  // names change no proof: a retry from another folder is the same request
  canon["idempotency_key"] = key;
  std::vector<std::string> wtns_ids;
  if (has_wtns) {
    json shas = json::array();
    std::set<std::string> seen;
    for (size_t k = 0; k < list.size(); ++k) {
      if (!list[k].is_string()) throw bad("witnesses[" + std::to_string(k) + "] must be an upload id (a string)");
      // zkfarmd keeps a copy of each partition's witness: one upload named
      // many times would make many copies from one quota charge.
      if (!seen.insert(list[k].get<std::string>()).second)
        throw bad("witnesses[" + std::to_string(k) + "] repeats an upload: each partition needs its own");
      std::optional<UploadRow> u = store_.upload(c.who.tenant, list[k].get<std::string>());
      if (!u) throw ApiError{404, "not_found", "witnesses[" + std::to_string(k) + "]: no such upload"};
      wtns_ids.push_back(u->id);
      shas.push_back(u->sha256);
    }
    canon["witnesses"] = shas;
    if (!zkey.empty()) {
      auto u = store_.upload(c.who.tenant, zkey);
      if (!u) throw ApiError{404, "not_found", "no upload '" + zkey.substr(0, 64) + "' (zkey)"};
      canon["zkey"] = u->sha256;
    }
  }
  const std::string request_sha = sha256_hex(canon.dump());

  std::lock_guard<std::mutex> tenant(tenant_lock(c.who.tenant));
  if (!key.empty()) {
    if (auto row = store_.job_by_key(c.who.tenant, key)) {
      if (row->request_sha256 != request_sha)
        throw ApiError{422, "idempotency_key_reused",
                       "idempotency key '" + key + "' was used for another request (job " + std::to_string(row->id) + ")"};
      Response r = json_reply(200, {{"job", job_view(farm_job(*row), *row)}});
      r.headers.emplace_back("Idempotent-Replayed", "true");
      return r;
    }
  }
  // The quota: partitions of the tenant's live jobs not yet proved. First
  // from the store alone (every partition of a job not yet seen ended counts):
  // within the quota so, no zkfarmd call is needed; only past it are the live
  // jobs asked about, each once, to count what is really left.
  const uint64_t quota = max_queued(c.who.tenant);
  auto live = store_.live_jobs(c.who.tenant);
  uint64_t queued = 0;
  for (const auto& row : live) queued += row.partitions;
  if (queued + list.size() > quota) queued = 0;
  else live.clear();
  for (const auto& row : live) {
    try {
      const json j = farm_job(row);
      if (!terminal_state(j.value("state", "")))
        queued += j.value("partitions", uint64_t(0)) - std::min(j.value("partitions", uint64_t(0)), j.value("done", uint64_t(0)));
    } catch (const ApiError&) {
      store_.mark_terminal(row.id);  // no longer kept by the farm
    }
  }
  if (queued + list.size() > quota)
    throw ApiError{429, "quota_exceeded",
                   "tenant '" + c.who.tenant + "' has " + std::to_string(queued) + " partitions queued; " +
                       std::to_string(list.size()) + " more would pass its quota of " + std::to_string(quota)};

  protocol::Submit submit;
  submit.priority = priority.empty() ? "normal" : priority;
  InputFiles files;
  if (has_inputs) {
    auto row = store_.circuit(c.who.tenant, circuit);
    if (!row) throw ApiError{404, "not_found", "no circuit '" + circuit + "'"};
    if (row->farm_name.empty())
      throw bad("circuit '" + circuit + "' has no witness generator (registered without 'wasm'): submit witnesses");
    files.dir = opts_.api_dir + "/tmp/" + random_hex(16);
    if (::mkdir(files.dir.c_str(), 0700) != 0) throw std::runtime_error(files.dir + ": cannot create: " + std::strerror(errno));
    for (size_t k = 0; k < list.size(); ++k) {
      if (!list[k].is_object()) throw bad("inputs[" + std::to_string(k) + "] must be a JSON object (circom's input.json)");
      const std::string p = files.dir + "/" + std::to_string(k) + ".json";
      write_new_file(p, list[k].dump());
      submit.inputs.push_back(p);
    }
    submit.circuit = row->farm_name;
  } else {
    std::string zkey_id = zkey;
    if (!circuit.empty()) {
      auto row = store_.circuit(c.who.tenant, circuit);
      if (!row) throw ApiError{404, "not_found", "no circuit '" + circuit + "'"};
      zkey_id = row->zkey_upload;
    }
    submit.zkey = upload_path(zkey_id);
    for (const auto& id : wtns_ids) submit.wtns.push_back(upload_path(id));
  }
  json reply;
  try {
    reply = farm_.call(protocol::to_message(submit), 600000);
  } catch (const FarmRefused& e) {
    throw ApiError{400, "rejected", with_input_names(tenant_text(e.what()), input_names)};
  }
  JobRow row;
  row.id = protocol::get_u64(reply, "job");
  row.tenant = c.who.tenant;
  row.circuit = circuit;
  row.idempotency_key = key;
  row.request_sha256 = request_sha;
  row.out = out;
  row.partitions = list.size();
  row.created_ms = wall_ms();
  try {
    store_.add_job(row);
  } catch (...) {
    // A job nobody can see must not run: cancelled, and the submit fails.
    try {
      farm_.call(protocol::to_message(protocol::Cancel{row.id}));
    } catch (const std::exception&) {
    }
    throw;
  }
  // Best effort: the names only reword errors, and the job is accepted.
  try {
    if (!input_names.empty()) store_.set_input_names(row.id, input_names);
  } catch (const std::exception& e) {
    if (opts_.log) opts_.log("job " + std::to_string(row.id) + ": its input names not kept: " + e.what());
  }
  if (opts_.log)
    opts_.log("job " + std::to_string(row.id) + ": " + std::to_string(row.partitions) + " partitions from tenant " +
              c.who.tenant + " (token " + c.who.token_id + ")");
  json view;
  try {
    view = job_view(farm_job(row), row);
  } catch (const ApiError&) {
    view = {{"id", row.id}, {"state", "queued"}, {"partitions", row.partitions}, {"done", 0}};
  }
  Response r = json_reply(201, {{"job", view}});
  r.headers.emplace_back("Location", "/v1/jobs/" + std::to_string(row.id));
  return r;
}

Response Service::job_get(Call& c, const RequestHead& head, bool hold) {
  const JobRow row = own_job(c);
  uint64_t wait_ms = 0, seen_done = UINT64_MAX;
  std::string seen_state;
  if (hold) {
    wait_ms = std::min<uint64_t>(query_number(head, "wait_ms").value_or(0), 30000);
    if (auto it = head.query.find("seen_state"); it != head.query.end()) seen_state = it->second.substr(0, 16);
    seen_done = query_number(head, "seen_done").value_or(UINT64_MAX);
  }
  return json_reply(200, {{"job", job_view(farm_job(row, wait_ms, seen_state, seen_done), row)}});
}

Response Service::job_list(Call& c, const RequestHead& head) {
  const uint64_t limit = query_number(head, "limit").value_or(100);
  if (limit < 1 || limit > 200) throw bad("'limit' must be 1 to 200");
  const uint64_t before = query_number(head, "before").value_or(0);
  std::string state;
  if (auto it = head.query.find("state"); it != head.query.end()) {
    state = it->second;
    if (state != "queued" && state != "running" && state != "done" && state != "failed" && state != "cancelled")
      throw bad("'state' must be queued, running, done, failed or cancelled");
  }
  json jobs = json::array();
  const auto rows = store_.jobs(c.who.tenant, before, unsigned(limit));
  for (const auto& row : rows) {
    json v;
    try {
      v = job_view(farm_job(row), row);
    } catch (const ApiError&) {
      v = {{"id", row.id}, {"state", "forgotten"}, {"partitions", row.partitions}, {"circuit", row.circuit}};
    }
    if (state.empty() || v.value("state", "") == state) jobs.push_back(v);
  }
  return json_reply(200, {{"jobs", jobs},
                          {"next_before", rows.size() == limit && !rows.empty() ? json(rows.back().id) : json(nullptr)}});
}

json Service::result_page(const JobRow& row, uint64_t from) {
  const json req = protocol::to_message(protocol::Result{.job = row.id, .from = from});
  try {
    return farm_.call(req, 60000);
  } catch (const FarmRefused& e) {
    // Transient (the shared queue restarting): 503 with Retry-After, and no
    // detail (zkfarmd's text names the database).
    if (e.retry_after_ms > 0) throw ApiError{503, "unavailable", "the farm cannot read the job's proofs now; retry later"};
    throw ApiError{409, "not_ready", tenant_text(e.what())};
  }
}

Response Service::job_results(Call& c, const RequestHead& head) {
  const JobRow row = own_job(c);
  const json reply = result_page(row, query_number(head, "from").value_or(0));
  return json_reply(200, {{"results", reply.value("results", json::array())},
                          {"partitions", reply.value("partitions", json(nullptr))},
                          {"next", reply.value("next", json(nullptr))}});
}

Response Service::job_file(Call& c) {
  const JobRow row = own_job(c);
  if (c.partition >= row.partitions)
    throw ApiError{404, "not_found", "job " + std::to_string(row.id) + " has " + std::to_string(row.partitions) + " partitions"};
  for (const auto& r : result_page(row, c.partition).value("results", json::array()))
    if (r.value("partition", UINT64_MAX) == c.partition) {
      const std::string text = r.value(c.file == "proof.json" ? "proof" : "public", std::string());
      return Response{200, text, "application/json", {}};
    }
  throw ApiError{409, "not_ready", "partition " + std::to_string(c.partition) + " of job " + std::to_string(row.id) + " is not proved"};
}

Response Service::job_cancel(Call& c) {
  const JobRow row = own_job(c);
  try {
    farm_.call(protocol::to_message(protocol::Cancel{row.id}));
  } catch (const FarmRefused& e) {
    throw ApiError{409, "conflict", tenant_text(e.what())};
  }
  if (opts_.log) opts_.log("job " + std::to_string(row.id) + ": cancelled by tenant " + c.who.tenant);
  return json_reply(200, {{"job", job_view(farm_job(row), row)}});
}

}  // namespace zkfarm::api
