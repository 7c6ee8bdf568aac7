#pragma once
// zkfarm-api's own state, in SQLite (API_DIR/api.sqlite, WAL): tenants and
// their quotas, tokens (hashed), uploads, circuits, and the jobs each tenant
// submitted (the job ids are zkfarmd's). zkfarmd knows nothing of tenants: it
// sees one client, zkfarm-api, and this store is what keeps tenants apart.
// zkfarmctl's `token` and `tenant` verbs write the same file (another
// process; SQLite's locking and busy_timeout serialize them).
//
// Every method is thread-safe (one connection behind a mutex) and throws
// StoreError naming the file and SQLite's message on a fault.
#include <cstdint>
#include <mutex>
#include <optional>
#include <stdexcept>
#include <string>
#include <vector>

#include "api/credentials.hpp"
#include "sqlite/db.hpp"

namespace zkfarm::api {

class StoreError : public std::runtime_error {
 public:
  using std::runtime_error::runtime_error;
};

/// Who a request comes from, once its token is checked.
struct Principal {
  std::string tenant;
  Role role = Role::kRead;
  std::string token_id;
};

/// A token as listed (never its secret).
struct TokenRow {
  std::string id, tenant;
  Role role = Role::kRead;
  int64_t created_ms = 0;
  std::optional<int64_t> revoked_ms;
};

/// A tenant's limits; nullopt: the server's default.
struct TenantQuotas {
  std::optional<uint64_t> max_queued_partitions;  ///< partitions of its live jobs not yet proved
  std::optional<uint64_t> max_stored_bytes;       ///< bytes of its uploads kept
};

/// One uploaded file: API_DIR/uploads/ID.
struct UploadRow {
  std::string id, tenant, sha256;
  uint64_t bytes = 0;
  int64_t created_ms = 0;
};

/// A circuit as its tenant named it; `farm_name` is zkfarmd's ("TENANT.NAME",
/// empty for a circuit registered without a generator: witnesses only).
struct CircuitRow {
  std::string tenant, name, zkey_upload, wasm_upload, farm_name, info_json;
  int64_t created_ms = 0;
};

/// A job a tenant submitted.
struct JobRow {
  uint64_t id = 0;  ///< zkfarmd's job id
  std::string tenant, circuit, idempotency_key, request_sha256, out;
  uint64_t partitions = 0;
  int64_t created_ms = 0;
  bool terminal = false;  ///< seen done, failed or cancelled
};

class Store {
 public:
  /// Opens API_DIR/api.sqlite. `create`: make it (mode 0600) and its schema
  /// when absent (zkfarm-api); otherwise an absent file is an error that says
  /// to start zkfarm-api once (zkfarmctl, so that a root operator never
  /// creates a store the service user cannot write).
  Store(const std::string& path, bool create);
  ~Store();
  Store(const Store&) = delete;
  Store& operator=(const Store&) = delete;

  const std::string& path() const { return path_; }

  // Tokens and tenants.
  /// A new token for `tenant` (made if new) with `role`; the text is returned once.
  NewToken add_token(const std::string& tenant, Role role, int64_t now_ms);
  /// Revokes by id; false when no such unrevoked token exists.
  bool revoke_token(const std::string& id, int64_t now_ms);
  std::vector<TokenRow> tokens();
  /// The principal of a token text, or nullopt (malformed, unknown, revoked).
  std::optional<Principal> authenticate(std::string_view token_text);
  /// Sets a tenant's quotas (fields left nullopt are unchanged); makes the tenant if new.
  void set_quotas(const std::string& tenant, const TenantQuotas& q);
  TenantQuotas quotas(const std::string& tenant);

  // Uploads.
  void add_upload(const UploadRow& u);
  std::optional<UploadRow> upload(const std::string& tenant, const std::string& id);
  std::vector<UploadRow> uploads(const std::string& tenant);
  /// Forgets an upload; false if it is not the tenant's, or a circuit uses it.
  bool remove_upload(const std::string& tenant, const std::string& id);
  uint64_t stored_bytes(const std::string& tenant);
  /// Uploads older than `before_ms` that no circuit uses (removed by the caller).
  std::vector<UploadRow> expired_uploads(int64_t before_ms);
  void forget_upload(const std::string& id);

  // Circuits.
  /// False when the tenant already has a circuit of that name.
  bool add_circuit(const CircuitRow& c);
  std::optional<CircuitRow> circuit(const std::string& tenant, const std::string& name);
  std::vector<CircuitRow> circuits(const std::string& tenant);
  bool remove_circuit(const std::string& tenant, const std::string& name);

  // Jobs.
  void add_job(const JobRow& j);
  std::optional<JobRow> job(uint64_t id);
  std::optional<JobRow> job_by_key(const std::string& tenant, const std::string& key);
  /// The tenant's jobs with id < before (0: all), newest first, at most `limit`.
  std::vector<JobRow> jobs(const std::string& tenant, uint64_t before, unsigned limit);
  std::vector<JobRow> live_jobs(const std::string& tenant);
  void mark_terminal(uint64_t id);
  /// The client's names of a job's inputs, in order (`partition_names` of
  /// POST /v1/jobs): its error texts name them instead of "input K.json".
  void set_input_names(uint64_t job, const std::vector<std::string>& names);
  /// …and read back; empty when the client gave none.
  std::vector<std::string> input_names(uint64_t job);

 private:
  void exec(const char* sql);

  std::string path_;
  sqlite::Db db_;
  std::mutex m_;
};

}  // namespace zkfarm::api
