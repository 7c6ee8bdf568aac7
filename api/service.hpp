#pragma once
// The API itself (docs/api.md): routes, authentication and roles, tenants'
// isolation and quotas, idempotent submits, and the translation of each
// operation into zkfarmd's control requests. HttpServer (http_server.hpp)
// brings complete requests; the work runs on three bounded pools so that one
// kind of request cannot starve another:
// - `fast`: reads, cancels, deletes (each one or a few quick zkfarmd calls);
// - `slow`: submits and circuit registrations (zkfarmd checks the files, builds
//   a generator: seconds to minutes);
// - `wait`: long polls of a job (each holds a thread while zkfarmd holds the
//   reply); when all are busy a long poll is answered at once instead.
// A full pool answers 503 with Retry-After.
#include <atomic>
#include <cstdint>
#include <map>
#include <memory>
#include <mutex>
#include <set>
#include <string>
#include <thread>

#include "api/farm_link.hpp"
#include "api/http_server.hpp"
#include "api/store.hpp"
#include "protocol/control_verbs.hpp"
#include "protocol/messages.hpp"
#include "supervisor/check_pool.hpp"

namespace zkfarm::api {

using nlohmann::json;

struct ServiceOptions {
  std::string api_dir;                           ///< holds api.sqlite, uploads/, tmp/
  uint64_t max_upload_bytes = 4ull << 30;        ///< one upload's body (413 past it)
  uint64_t max_json_bytes = 16ull << 20;         ///< one JSON body (413 past it)
  unsigned max_partitions = 10000;               ///< partitions of one job
  uint64_t default_max_queued_partitions = 10000;
  uint64_t default_max_stored_bytes = 16ull << 30;
  unsigned fast_workers = 8, slow_workers = 4, wait_workers = 64;
  unsigned queue_max = 1024;                     ///< tasks waiting per pool
  uint64_t max_json_in_flight = 256ull << 20;    ///< JSON bodies held at once, over all connections (503 past it)
  int64_t upload_ttl_ms = 24ll * 3600 * 1000;    ///< uploads no circuit uses are removed after this
  std::function<void(const std::string&)> log;   ///< one line per event worth an operator's eye
};

/// One route's identity, decided from the head (method and path).
enum class Route {
  kHealth, kWhoami,
  kUploadCreate, kUploadList, kUploadGet, kUploadDelete,
  kCircuitCreate, kCircuitList, kCircuitGet, kCircuitDelete,
  kJobCreate, kJobList, kJobGet, kJobResults, kJobFile, kJobCancel,
  kFarmStatus, kFarmDrain, kFarmResume,
};

class Service : public Handler {
 public:
  Service(ServiceOptions opts, Store& store, FarmLink farm);
  ~Service() override;

  Admission admit(const RequestHead& head) override;
  void handle(Request request, std::function<void(Response)> done) override;
  Response too_large(const RequestHead& head, uint64_t limit) override;
  /// The server's own refusals (bad HTTP, head too large, …) as API errors.
  Response refusal(Refusal why) override;

  /// Waits until no submit or circuit registration is in progress, or
  /// `timeout_ms` passes (zkfarm-api's stop: a job zkfarmd accepted is then
  /// recorded for its tenant before the process exits). True when idle.
  bool wait_for_submits(int64_t timeout_ms);

  /// Removes uploads past their time (no circuit using them) and partial
  /// files left by a crash; run once a minute by zkfarm-api's main loop.
  void sweep(int64_t now_ms);

  /// The request's context: who asks, which route, the path's ids.
  struct Call;

 private:
  Response run(Call& call, Request& req);
  // Routes (job_routes.cpp, file_routes.cpp, service.cpp).
  Response whoami(Call& c);
  Response farm_request(Call& c, protocol::Verb verb);
  Response upload_create(Call& c, Request& req);
  Response upload_list(Call& c);
  Response upload_get(Call& c);
  Response upload_delete(Call& c);
  Response circuit_create(Call& c, const Request& req);
  Response circuit_list(Call& c);
  Response circuit_get(Call& c);
  Response circuit_delete(Call& c);
  Response job_create(Call& c, const Request& req);
  Response job_list(Call& c, const RequestHead& head);
  Response job_get(Call& c, const RequestHead& head, bool hold);
  Response job_results(Call& c, const RequestHead& head);
  Response job_file(Call& c);
  Response job_cancel(Call& c);

  /// zkfarmd's job object as a tenant sees it (docs/api.md, "Job").
  json job_view(const json& farm_job, const JobRow& row) const;
  /// The job's row when it is the caller's; else throws a 404 ApiError.
  JobRow own_job(Call& c) const;
  /// A page of a finished job's results from zkfarmd (`result` from
  /// partition `from`); 409 not_ready when zkfarmd has none to give.
  json result_page(const JobRow& row, uint64_t from);
  /// zkfarmd's object of a job, noting in the store when it has ended.
  json farm_job(const JobRow& row, uint64_t wait_ms = 0, const std::string& seen_state = "", uint64_t seen_done = UINT64_MAX);
  /// Replaces the paths of zkfarm-api's own files in a zkfarmd message by what the tenant named.
  std::string tenant_text(std::string text) const;
  std::string upload_path(const std::string& id) const { return opts_.api_dir + "/uploads/" + id; }
  uint64_t max_queued(const std::string& tenant);
  uint64_t max_stored(const std::string& tenant);
  std::mutex& tenant_lock(const std::string& tenant);

  ServiceOptions opts_;
  Store& store_;
  FarmLink farm_;
  supervisor::CheckPool fast_, slow_, wait_;
  std::mutex m_;                                         // guards the maps below
  std::map<std::string, uint64_t> reserved_bytes_;       // uploads being received, per tenant
  std::map<std::string, std::unique_ptr<std::mutex>> tenant_locks_;  // one submit at a time per tenant
  std::atomic<unsigned> waiting_{0};                      // long polls held now
  std::atomic<unsigned> submitting_{0};                   // submits and registrations queued or running
  std::set<std::string> registering_;                    // tenants with a circuit registration in progress (m_)
  uint64_t json_in_flight_ = 0;                          // bytes of JSON bodies admitted and not yet done (m_)
  std::atomic<bool> health_ok_{false};                   // the last health check of zkfarmd
  std::atomic<int64_t> health_at_ms_{INT64_MIN / 2};     // when (steady ms)
};

/// A refusal with its HTTP status and error code (docs/api.md, "Errors").
struct ApiError {
  unsigned status;
  std::string code, message;
};

/// A request's JSON body as an object. Throws ApiError 400 when it is not
/// JSON, not an object, or nested deeper than 64 levels (a deeper document
/// would recurse that deep when it is written out again).
json parse_body(const std::string& text);

/// The JSON error body of docs/api.md.
Response error_reply(unsigned status, const std::string& code, const std::string& message);
/// A JSON reply.
Response json_reply(unsigned status, const json& body);
/// GET /v1/health's answer.
Response health_reply(bool farm_ok);
/// A decimal number of 1-19 digits (ids, query values); nullopt otherwise.
std::optional<uint64_t> parse_u64(std::string_view s);
/// Milliseconds of the steady clock.
int64_t steady_ms();
/// True when the head announces a body.
bool has_body(const RequestHead& head);

}  // namespace zkfarm::api
