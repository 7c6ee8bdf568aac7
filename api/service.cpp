// Routing, authentication, roles, admission of bodies, the pools, and the
// small routes (whoami, health, the operator's farm routes). Jobs:
// job_routes.cpp; uploads and circuits: file_routes.cpp.
#include "api/call.hpp"
#include "api/service.hpp"
#include "api/operator_status.hpp"
#include "protocol/control_requests.hpp"

#include <sys/stat.h>
#include <unistd.h>

#include <charconv>
#include <filesystem>
#include <chrono>
#include <thread>
#include <vector>

namespace zkfarm::api {


namespace {


std::vector<std::string> segments(const std::string& path) {
  std::vector<std::string> out;
  size_t i = 0;
  while (i <= path.size()) {
    size_t j = path.find('/', i);
    if (j == std::string::npos) j = path.size();
    out.push_back(path.substr(i, j - i));
    i = j + 1;
  }
  return out;
}


bool is_upload_id(const std::string& s) {
  return s.size() == 32 && s.find_first_not_of("0123456789abcdef") == std::string::npos;
}

// Releases the bytes an upload reserved against its tenant's quota.
struct Reservation {
  std::mutex& m;
  std::map<std::string, uint64_t>& held;
  std::string tenant;
  uint64_t bytes;
  ~Reservation() {
    std::lock_guard<std::mutex> lock(m);
    auto it = held.find(tenant);
    if (it != held.end() && (it->second -= std::min(it->second, bytes)) == 0) held.erase(it);
  }
};

}  // namespace

std::optional<uint64_t> parse_u64(std::string_view s) {
  uint64_t v = 0;
  if (s.empty() || s.size() > 19 || s.find_first_not_of("0123456789") != std::string_view::npos) return std::nullopt;
  std::from_chars(s.data(), s.data() + s.size(), v);
  return v;
}

int64_t steady_ms() {
  using namespace std::chrono;
  return duration_cast<milliseconds>(steady_clock::now().time_since_epoch()).count();
}

bool has_body(const RequestHead& h) { return h.chunked || (h.content_length && *h.content_length > 0); }

Response health_reply(bool farm_ok) {
  return json_reply(farm_ok ? 200 : 503, {{"api", "ok"}, {"farm", farm_ok ? "ok" : "unavailable"}});
}

Response error_reply(unsigned status, const std::string& code, const std::string& message) {
  // Messages may quote a client's bytes: invalid UTF-8 is replaced, never thrown.
  Response r{status, json{{"error", {{"code", code}, {"message", message}}}}.dump(-1, ' ', false, json::error_handler_t::replace),
             "application/json", {}};
  if (status == 401) r.headers.emplace_back("WWW-Authenticate", "Bearer realm=\"zkfarm\"");
  if (status == 503 || status == 429) r.headers.emplace_back("Retry-After", "1");
  return r;
}

json parse_body(const std::string& text) {
  // Nesting is counted before parsing (outside strings), so that no document
  // deeper than kMaxDepth is ever built.
  constexpr int kMaxDepth = 64;
  int depth = 0;
  bool in_string = false, escaped = false;
  for (char ch : text) {
    if (in_string) {
      if (escaped) escaped = false;
      else if (ch == '\\') escaped = true;
      else if (ch == '"') in_string = false;
    } else if (ch == '"') {
      in_string = true;
    } else if (ch == '[' || ch == '{') {
      if (++depth > kMaxDepth) throw ApiError{400, "bad_request", "the JSON body is nested deeper than 64 levels"};
    } else if (ch == ']' || ch == '}') {
      --depth;
    }
  }
  json body = json::parse(text, nullptr, false);
  if (body.is_discarded()) throw ApiError{400, "bad_request", "the body is not JSON"};
  if (!body.is_object()) throw ApiError{400, "bad_request", "the body must be a JSON object"};
  return body;
}

Response json_reply(unsigned status, const json& body) {
  return Response{status, body.dump(-1, ' ', false, json::error_handler_t::replace), "application/json", {}};
}

Service::Service(ServiceOptions opts, Store& store, FarmLink farm)
    : opts_(std::move(opts)),
      store_(store),
      farm_(std::move(farm)),
      fast_(opts_.fast_workers, opts_.queue_max),
      slow_(opts_.slow_workers, opts_.queue_max),
      wait_(opts_.wait_workers, opts_.wait_workers) {}

Service::~Service() = default;

Response Service::too_large(const RequestHead& head, uint64_t limit) {
  return error_reply(413, "payload_too_large",
                     head.path + ": the body is over the limit of " + std::to_string(limit) + " bytes");
}

Response Service::refusal(Refusal why) {
  switch (why) {
    case Refusal::kMalformed: return error_reply(400, "bad_request", "malformed HTTP request");
    case Refusal::kHeadTooLarge: return error_reply(431, "header_too_large", "the request head is over 16 KiB");
    case Refusal::kBodyNotAllowed: return error_reply(413, "payload_too_large", "this request takes no body");
    case Refusal::kLengthRequired: return error_reply(411, "length_required", "an upload needs a Content-Length");
    case Refusal::kNoStorage: return error_reply(507, "insufficient_storage", "cannot store the upload");
    case Refusal::kDiskFull: return error_reply(507, "insufficient_storage", "the server's disk is full");
    case Refusal::kStoreFailed: return error_reply(500, "internal", "cannot store the upload");
    case Refusal::kInternal: break;
  }
  return error_reply(500, "internal", "internal error");
}

Admission Service::admit(const RequestHead& head) {
  Admission a;
  auto reject = [&](unsigned status, const std::string& code, const std::string& msg) {
    a.reject = error_reply(status, code, msg);
    return a;
  };
  if (head.query_malformed) return reject(400, "bad_request", "malformed query string");
  const auto seg = segments(head.path);
  auto call = std::make_shared<Call>();
  const std::string& m = head.method;
  // Route: /v1/...
  if (seg.size() < 3 || !seg[0].empty() || seg[1] != "v1") return reject(404, "not_found", "no such path");
  const std::string& top = seg[2];
  const size_t n = seg.size();
  Role need = Role::kRead;
  auto method = [&](const char* want) { return m == want; };
  bool known_path = true, ok = false;
  if (top == "health" && n == 3) {
    ok = method("GET"), call->route = Route::kHealth;
  } else if (top == "whoami" && n == 3) {
    ok = method("GET"), call->route = Route::kWhoami;
  } else if (top == "uploads" && n == 3) {
    if (method("POST")) ok = true, call->route = Route::kUploadCreate, need = Role::kSubmit;
    if (method("GET")) ok = true, call->route = Route::kUploadList;
  } else if (top == "uploads" && n == 4) {
    if (!is_upload_id(seg[3])) return reject(404, "not_found", "no upload '" + seg[3].substr(0, 64) + "'");
    call->id = seg[3];
    if (method("GET")) ok = true, call->route = Route::kUploadGet;
    if (method("DELETE")) ok = true, call->route = Route::kUploadDelete, need = Role::kSubmit;
  } else if (top == "circuits" && n == 3) {
    if (method("POST")) ok = true, call->route = Route::kCircuitCreate, need = Role::kSubmit;
    if (method("GET")) ok = true, call->route = Route::kCircuitList;
  } else if (top == "circuits" && n == 4) {
    if (!valid_circuit_name(seg[3])) return reject(404, "not_found", "no circuit '" + seg[3].substr(0, 64) + "'");
    call->id = seg[3];
    if (method("GET")) ok = true, call->route = Route::kCircuitGet;
    if (method("DELETE")) ok = true, call->route = Route::kCircuitDelete, need = Role::kSubmit;
  } else if (top == "jobs" && n == 3) {
    if (method("POST")) ok = true, call->route = Route::kJobCreate, need = Role::kSubmit;
    if (method("GET")) ok = true, call->route = Route::kJobList;
  } else if (top == "jobs" && n >= 4) {
    const auto id = parse_u64(seg[3]);
    if (!id) return reject(404, "not_found", "no job '" + seg[3].substr(0, 32) + "'");
    call->job = *id;
    if (n == 4) {
      ok = method("GET"), call->route = Route::kJobGet;
    } else if (n == 5 && seg[4] == "results") {
      ok = method("GET"), call->route = Route::kJobResults;
    } else if (n == 5 && seg[4] == "cancel") {
      ok = method("POST"), call->route = Route::kJobCancel, need = Role::kSubmit;
    } else if (n == 7 && seg[4] == "partitions" && parse_u64(seg[5]) && (seg[6] == "proof.json" || seg[6] == "public.json")) {
      ok = method("GET"), call->route = Route::kJobFile, call->partition = *parse_u64(seg[5]), call->file = seg[6];
    } else {
      known_path = false;
    }
  } else if (top == "farm" && n == 4 && (seg[3] == "status" || seg[3] == "drain" || seg[3] == "resume")) {
    need = Role::kOperator;
    if (seg[3] == "status") ok = method("GET"), call->route = Route::kFarmStatus;
    if (seg[3] == "drain") ok = method("POST"), call->route = Route::kFarmDrain;
    if (seg[3] == "resume") ok = method("POST"), call->route = Route::kFarmResume;
  } else {
    known_path = false;
  }
  if (!known_path) return reject(404, "not_found", "no such path");
  if (!ok) return reject(405, "method_not_allowed", m.substr(0, 16) + " is not allowed on " + head.path.substr(0, 128));
  // Health needs no token: it is answered from a result at most a second old,
  // so that nobody can make it a load on zkfarmd or on the read pool.
  if (call->route == Route::kHealth && steady_ms() - health_at_ms_.load() < 1000 && !has_body(head)) {
    a.reject = health_reply(health_ok_.load());
    return a;
  }

  // Who asks: every route but health needs a token.
  if (call->route != Route::kHealth) {
    const std::string auth = head.field("authorization");
    if (auth.size() < 7 || auth.compare(0, 7, "Bearer ") != 0)
      return reject(401, "unauthorized", "an API token is required: Authorization: Bearer TOKEN");
    std::optional<Principal> who;
    try {
      who = store_.authenticate(std::string_view(auth).substr(7));
    } catch (const StoreError& e) {
      if (opts_.log) opts_.log(std::string("token store: ") + e.what());
      return reject(503, "unavailable", "the token store cannot be read; retry later");
    }
    if (!who) return reject(401, "unauthorized", "the API token is unknown or revoked");
    if (!role_allows(who->role, need))
      return reject(403, "forbidden", std::string("this needs the ") + role_name(need) + " role; the token has " +
                                          role_name(who->role));
    call->who = *who;
  }

  switch (call->route) {
    case Route::kUploadCreate: {
      // Size limits first (413), then the tenant's quota (429): the bytes are
      // reserved now, so concurrent uploads cannot pass it together.
      if (!head.content_length) return reject(411, "length_required", "an upload needs a Content-Length");
      const uint64_t len = *head.content_length;
      if (len > opts_.max_upload_bytes) {
        a.reject = too_large(head, opts_.max_upload_bytes);
        return a;
      }
      // The stored bytes are read under m_, the lock that reservations are
      // taken and released under, so two uploads never both miss the other.
      std::lock_guard<std::mutex> lock(m_);
      uint64_t quota = 0, stored = 0;
      try {
        quota = max_stored(call->who.tenant);
        stored = store_.stored_bytes(call->who.tenant);
      } catch (const StoreError& e) {
        return reject(503, "unavailable", "the store cannot be read; retry later");
      }
      const auto it = reserved_bytes_.find(call->who.tenant);
      const uint64_t held = it == reserved_bytes_.end() ? 0 : it->second;
      if (stored + held + len > quota)
        return reject(429, "quota_exceeded",
                      "the upload of " + std::to_string(len) + " bytes would pass tenant '" + call->who.tenant +
                          "''s quota of " + std::to_string(quota) + " stored bytes (" + std::to_string(stored + held) +
                          " in use); delete uploads or ask the operator");
      reserved_bytes_[call->who.tenant] += len;
      call->reservation = std::shared_ptr<Reservation>(new Reservation{m_, reserved_bytes_, call->who.tenant, len});
      a.body = BodyKind::kUpload;
      a.limit = len;
      break;
    }
    case Route::kCircuitCreate:
    case Route::kJobCreate: {
      // JSON bodies are held in memory: their bytes in flight (the declared
      // length, or the limit for a chunked body) are capped over all connections.
      const uint64_t len = std::min<uint64_t>(head.content_length.value_or(opts_.max_json_bytes), opts_.max_json_bytes);
      std::lock_guard<std::mutex> lock(m_);
      if (json_in_flight_ + len > opts_.max_json_in_flight)
        return reject(503, "busy", "the API holds too many request bodies; retry later");
      json_in_flight_ += len;
      call->reservation = std::shared_ptr<void>(nullptr, [this, len](void*) {
        std::lock_guard<std::mutex> l(m_);
        json_in_flight_ -= len;
      });
      a.body = BodyKind::kJson;
      a.limit = opts_.max_json_bytes;
      break;
    }
    default:
      a.body = BodyKind::kNone;
  }
  a.context = call;
  return a;
}

void Service::handle(Request request, std::function<void(Response)> done) {
  auto call = std::static_pointer_cast<Call>(request.context);
  auto req = std::make_shared<Request>(std::move(request));
  req->context.reset();
  auto task = [this, call, req, done](bool hold) {
    Response r;
    try {
      if (call->route == Route::kJobGet)
        r = job_get(*call, req->head, hold);
      else
        r = run(*call, *req);
    } catch (const ApiError& e) {
      r = error_reply(e.status, e.code, e.message);
    } catch (const FarmUnavailable& e) {
      if (opts_.log) opts_.log(std::string("zkfarmd: ") + e.what());
      r = error_reply(503, "farm_unavailable", "the farm does not answer; retry later");
    } catch (const StoreError& e) {
      if (opts_.log) opts_.log(std::string("store: ") + e.what());
      r = error_reply(503, "unavailable", "the API's store failed; retry later");
    } catch (const std::exception& e) {
      if (opts_.log) opts_.log(std::string("internal error: ") + e.what());
      r = error_reply(500, "internal", "internal error");
    }
    if (!req->upload_path.empty()) ::unlink(req->upload_path.c_str());  // not taken by the route
    call->reservation.reset();
    done(std::move(r));
  };
  bool queued = false;
  switch (call->route) {
    case Route::kJobGet:
      // A long poll holds a wait thread; with none free it is answered at once.
      if (req->head.query.count("wait_ms") && waiting_.load() < opts_.wait_workers) {
        ++waiting_;
        queued = wait_.post([this, task] {
          task(true);
          --waiting_;
        });
        if (!queued) --waiting_;
      }
      if (!queued) queued = fast_.post([task] { task(false); });
      break;
    case Route::kJobCreate:
    case Route::kCircuitCreate: {
      // A registration (zkfarmd builds a generator: minutes) takes at most
      // half the submit threads, and one per tenant, so registrations never
      // hold every thread that submits need.
      const std::string tenant = call->route == Route::kCircuitCreate ? call->who.tenant : std::string();
      if (!tenant.empty()) {
        std::string refusal;
        {
          std::lock_guard<std::mutex> lock(m_);
          if (registering_.count(tenant))
            refusal = "tenant '" + tenant + "' has a circuit registration in progress; retry when it ends";
          else if (registering_.size() >= std::max(1u, opts_.slow_workers / 2))
            refusal = "the farm is building other circuits; retry later";
          else
            registering_.insert(tenant);
        }
        if (!refusal.empty()) return done(error_reply(429, "too_many_requests", refusal));
      }
      auto release = [this, tenant] {
        if (tenant.empty()) return;
        std::lock_guard<std::mutex> lock(m_);
        registering_.erase(tenant);
      };
      ++submitting_;
      queued = slow_.post([this, task, release] {
        task(false);
        release();
        --submitting_;
      });
      if (!queued) {
        release();
        --submitting_;
      }
      break;
    }
    default:
      queued = fast_.post([task] { task(false); });
  }
  if (!queued) {
    if (!req->upload_path.empty()) ::unlink(req->upload_path.c_str());
    done(error_reply(503, "busy", "the API is busy; retry later"));
  }
}

bool Service::wait_for_submits(int64_t timeout_ms) {
  const auto end = std::chrono::steady_clock::now() + std::chrono::milliseconds(timeout_ms);
  while (submitting_.load() > 0) {
    if (std::chrono::steady_clock::now() >= end) return false;
    std::this_thread::sleep_for(std::chrono::milliseconds(20));
  }
  return true;
}

Response Service::run(Call& c, Request& req) {
  switch (c.route) {
    case Route::kHealth: {
      bool farm_ok = true;
      try {
        // `jobs` of one: the cheapest request every zkfarmd answers.
        farm_.call(protocol::to_message(protocol::JobsPage{.limit = 1}), 5000);
      } catch (const FarmRefused&) {
        // zkfarmd answered (it runs): that is what health asks.
      } catch (const std::exception&) {
        farm_ok = false;
      }
      health_ok_ = farm_ok;
      health_at_ms_ = steady_ms();
      return health_reply(farm_ok);
    }
    case Route::kWhoami: return whoami(c);
    case Route::kUploadCreate: return upload_create(c, req);
    case Route::kUploadList: return upload_list(c);
    case Route::kUploadGet: return upload_get(c);
    case Route::kUploadDelete: return upload_delete(c);
    case Route::kCircuitCreate: return circuit_create(c, req);
    case Route::kCircuitList: return circuit_list(c);
    case Route::kCircuitGet: return circuit_get(c);
    case Route::kCircuitDelete: return circuit_delete(c);
    case Route::kJobCreate: return job_create(c, req);
    case Route::kJobList: return job_list(c, req.head);
    case Route::kJobGet: return job_get(c, req.head, false);
    case Route::kJobResults: return job_results(c, req.head);
    case Route::kJobFile: return job_file(c);
    case Route::kJobCancel: return job_cancel(c);
    case Route::kFarmStatus: return farm_request(c, protocol::Verb::kStatus);
    case Route::kFarmDrain: return farm_request(c, protocol::Verb::kDrain);
    case Route::kFarmResume: return farm_request(c, protocol::Verb::kResume);
  }
  return error_reply(404, "not_found", "no such path");
}

Response Service::whoami(Call& c) {
  return json_reply(200, {{"tenant", c.who.tenant},
                          {"role", role_name(c.who.role)},
                          {"token", c.who.token_id},
                          {"quotas",
                           {{"max_queued_partitions", max_queued(c.who.tenant)},
                            {"max_stored_bytes", max_stored(c.who.tenant)},
                            {"stored_bytes", store_.stored_bytes(c.who.tenant)}}}});
}

// The operator role's farm routes. The status is rebuilt from the fields that
// name nothing of the host (operator_status.hpp).
Response Service::farm_request(Call& c, protocol::Verb verb) {
  const char* type = protocol::verb_info(verb).type;
  json reply;
  try {
    reply = farm_.call(protocol::make(verb));
  } catch (const FarmRefused& e) {
    return error_reply(409, "refused", tenant_text(e.what()));
  }
  if (opts_.log && verb != protocol::Verb::kStatus)
    opts_.log(std::string("farm ") + type + " by tenant " + c.who.tenant + " (token " + c.who.token_id + ")");
  if (verb != protocol::Verb::kStatus) {
    json out = {{"ok", true}};
    if (reply.contains("in_flight")) out["in_flight"] = reply["in_flight"];  // a drain's: what it waits for
    return json_reply(200, out);
  }
  return json_reply(200, operator_status(reply.value("status", json::object())));
}

uint64_t Service::max_queued(const std::string& tenant) {
  return store_.quotas(tenant).max_queued_partitions.value_or(opts_.default_max_queued_partitions);
}
uint64_t Service::max_stored(const std::string& tenant) {
  return store_.quotas(tenant).max_stored_bytes.value_or(opts_.default_max_stored_bytes);
}

std::mutex& Service::tenant_lock(const std::string& tenant) {
  std::lock_guard<std::mutex> lock(m_);
  auto& p = tenant_locks_[tenant];
  if (!p) p = std::make_unique<std::mutex>();
  return *p;
}

std::string Service::tenant_text(std::string text) const {
  // "API_DIR/uploads/ID" → "upload ID"; "API_DIR/tmp/X/K.json" → "input K.json" (the K-th input).
  auto replace_all = [&](const std::string& from, const std::string& to) {
    for (size_t at = text.find(from); at != std::string::npos; at = text.find(from, at + to.size()))
      text.replace(at, from.size(), to);
  };
  replace_all(opts_.api_dir + "/uploads/", "upload ");
  const std::string tmp = opts_.api_dir + "/tmp/";
  for (size_t at = text.find(tmp); at != std::string::npos; at = text.find(tmp, at)) {
    size_t end = text.find('/', at + tmp.size());
    if (end == std::string::npos) break;
    text.replace(at, end + 1 - at, "input ");
  }
  replace_all(opts_.api_dir, "(api)");
  return text;
}

void Service::sweep(int64_t now_ms) {
  for (const auto& u : store_.expired_uploads(now_ms - opts_.upload_ttl_ms)) {
    ::unlink(upload_path(u.id).c_str());
    store_.forget_upload(u.id);
  }
  // Partial uploads and inputs of a crashed run: older than an hour. Both
  // folders are zkfarm-api's own (0700); remove_all never follows a link.
  namespace fs = std::filesystem;
  auto stale = [&](const fs::directory_entry& e) {
    struct stat st {};
    return ::lstat(e.path().c_str(), &st) == 0 && now_ms - int64_t(st.st_mtime) * 1000 >= 3600 * 1000;
  };
  std::error_code ec;
  for (const auto& e : fs::directory_iterator(opts_.api_dir + "/uploads", ec))
    if (e.path().filename().string().rfind(".partial-", 0) == 0 && stale(e)) fs::remove(e.path(), ec);
  for (const auto& e : fs::directory_iterator(opts_.api_dir + "/tmp", ec))
    if (stale(e)) fs::remove_all(e.path(), ec);
}

}  // namespace zkfarm::api
