#include "api/store.hpp"

#include <fcntl.h>
#include <sqlite3.h>
#include <sys/stat.h>
#include <unistd.h>

#include <cerrno>
#include <cstring>

#include <nlohmann/json.hpp>

namespace zkfarm::api {

namespace {

[[noreturn]] void throw_store_error(const std::string& what, int) { throw StoreError(what); }

// A statement on the store's connection; its faults name the file.
sqlite::Stmt stmt(const sqlite::Db& db, const std::string& path, const char* sql) { return sqlite::Stmt(db, sql, path); }

const char* kSchema = R"sql(
CREATE TABLE IF NOT EXISTS tenants(name TEXT PRIMARY KEY, max_queued_partitions INTEGER, max_stored_bytes INTEGER);
CREATE TABLE IF NOT EXISTS tokens(id TEXT PRIMARY KEY, hash TEXT NOT NULL, tenant TEXT NOT NULL REFERENCES tenants(name),
                                  role TEXT NOT NULL, created_ms INTEGER NOT NULL, revoked_ms INTEGER);
CREATE TABLE IF NOT EXISTS uploads(id TEXT PRIMARY KEY, tenant TEXT NOT NULL, bytes INTEGER NOT NULL, sha256 TEXT NOT NULL,
                                   created_ms INTEGER NOT NULL);
CREATE INDEX IF NOT EXISTS uploads_by_tenant ON uploads(tenant);
CREATE TABLE IF NOT EXISTS circuits(tenant TEXT NOT NULL, name TEXT NOT NULL, zkey_upload TEXT NOT NULL, wasm_upload TEXT NOT NULL,
                                    farm_name TEXT NOT NULL, info TEXT NOT NULL, created_ms INTEGER NOT NULL,
                                    PRIMARY KEY(tenant, name));
CREATE TABLE IF NOT EXISTS jobs(id INTEGER PRIMARY KEY, tenant TEXT NOT NULL, circuit TEXT NOT NULL, idempotency_key TEXT,
                                request_sha256 TEXT NOT NULL, out TEXT NOT NULL, partitions INTEGER NOT NULL,
                                created_ms INTEGER NOT NULL, terminal INTEGER NOT NULL DEFAULT 0,
                                UNIQUE(tenant, idempotency_key));
CREATE INDEX IF NOT EXISTS jobs_by_tenant ON jobs(tenant, id);
CREATE TABLE IF NOT EXISTS job_input_names(job INTEGER PRIMARY KEY REFERENCES jobs(id), names TEXT NOT NULL);
)sql";

constexpr const char* kJobCols = "id, tenant, circuit, coalesce(idempotency_key, ''), request_sha256, out, partitions, created_ms, terminal";

JobRow read_job(sqlite::Stmt& s) {
  JobRow j;
  j.id = uint64_t(s.i64(0));
  j.tenant = s.text(1);
  j.circuit = s.text(2);
  j.idempotency_key = s.text(3);
  j.request_sha256 = s.text(4);
  j.out = s.text(5);
  j.partitions = uint64_t(s.i64(6));
  j.created_ms = s.i64(7);
  j.terminal = s.i64(8) != 0;
  return j;
}

constexpr const char* kCircuitCols = "tenant, name, zkey_upload, wasm_upload, farm_name, info, created_ms";

CircuitRow read_circuit(sqlite::Stmt& s) {
  return {s.text(0), s.text(1), s.text(2), s.text(3), s.text(4), s.text(5), s.i64(6)};
}

UploadRow read_upload(sqlite::Stmt& s) {
  UploadRow u;
  u.id = s.text(0);
  u.tenant = s.text(1);
  u.bytes = uint64_t(s.i64(2));
  u.sha256 = s.text(3);
  u.created_ms = s.i64(4);
  return u;
}

}  // namespace

Store::Store(const std::string& path, bool create) : path_(path) {
  if (create) {
    // Made here with 0600 before SQLite opens it, never through a symlink.
    const int fd = ::open(path.c_str(), O_RDWR | O_CREAT | O_NOFOLLOW | O_CLOEXEC, 0600);
    if (fd < 0) throw StoreError(path + ": cannot open: " + std::strerror(errno));
    ::close(fd);
  } else {
    struct stat st {};
    if (::lstat(path.c_str(), &st) != 0)
      throw StoreError(path + ": no token store (" + std::strerror(errno) +
                       "); zkfarm-api makes it when it starts: start it once, or name its folder with --api-dir");
    if (!S_ISREG(st.st_mode)) throw StoreError(path + ": not a regular file");
  }
  db_ = sqlite::Db(path, SQLITE_OPEN_READWRITE | SQLITE_OPEN_NOFOLLOW, "", 5000, &throw_store_error);
  exec("PRAGMA journal_mode=WAL");
  exec("PRAGMA synchronous=FULL");
  exec("PRAGMA foreign_keys=ON");
  exec(kSchema);
}

Store::~Store() = default;

void Store::exec(const char* sql) { db_.exec(sql, path_); }

NewToken Store::add_token(const std::string& tenant, Role role, int64_t now_ms) {
  if (!valid_tenant(tenant))
    throw StoreError("tenant '" + tenant.substr(0, 64) + "': 1-32 of a-z, 0-9, '_', '-', starting with a letter or digit");
  NewToken t = make_token();
  std::lock_guard<std::mutex> lock(m_);
  sqlite::Transaction tx(db_, path_);  // rolled back if either insert throws
  stmt(db_, path_, "INSERT OR IGNORE INTO tenants(name) VALUES(?)").bind(1, tenant).run();
  stmt(db_, path_, "INSERT INTO tokens(id, hash, tenant, role, created_ms) VALUES(?,?,?,?,?)")
      .bind(1, t.id)
      .bind(2, sha256_hex(t.text))
      .bind(3, tenant)
      .bind(4, std::string(role_name(role)))
      .bind(5, now_ms)
      .run();
  tx.commit();
  return t;
}

bool Store::revoke_token(const std::string& id, int64_t now_ms) {
  std::lock_guard<std::mutex> lock(m_);
  stmt(db_, path_, "UPDATE tokens SET revoked_ms = ? WHERE id = ? AND revoked_ms IS NULL").bind(1, now_ms).bind(2, id).run();
  return db_.changes() > 0;
}

std::vector<TokenRow> Store::tokens() {
  std::lock_guard<std::mutex> lock(m_);
  sqlite::Stmt s = stmt(db_, path_, "SELECT id, tenant, role, created_ms, revoked_ms FROM tokens ORDER BY tenant, created_ms");
  std::vector<TokenRow> out;
  while (s.step()) {
    TokenRow r;
    r.id = s.text(0);
    r.tenant = s.text(1);
    r.role = parse_role(s.text(2)).value_or(Role::kRead);
    r.created_ms = s.i64(3);
    if (!s.null(4)) r.revoked_ms = s.i64(4);
    out.push_back(std::move(r));
  }
  return out;
}

std::optional<Principal> Store::authenticate(std::string_view token_text) {
  const auto id = token_id(token_text);
  if (!id) return std::nullopt;
  const std::string hash = sha256_hex(token_text);
  std::lock_guard<std::mutex> lock(m_);
  sqlite::Stmt s = stmt(db_, path_, "SELECT hash, tenant, role FROM tokens WHERE id = ? AND revoked_ms IS NULL");
  s.bind(1, *id);
  if (!s.step() || !equal_constant_time(s.text(0), hash)) return std::nullopt;
  const auto role = parse_role(s.text(2));
  if (!role) return std::nullopt;
  return Principal{s.text(1), *role, *id};
}

void Store::set_quotas(const std::string& tenant, const TenantQuotas& q) {
  if (!valid_tenant(tenant)) throw StoreError("tenant '" + tenant.substr(0, 64) + "': not a valid tenant name");
  std::lock_guard<std::mutex> lock(m_);
  stmt(db_, path_, "INSERT OR IGNORE INTO tenants(name) VALUES(?)").bind(1, tenant).run();
  if (q.max_queued_partitions)
    stmt(db_, path_, "UPDATE tenants SET max_queued_partitions = ? WHERE name = ?").bind(1, q.max_queued_partitions).bind(2, tenant).run();
  if (q.max_stored_bytes)
    stmt(db_, path_, "UPDATE tenants SET max_stored_bytes = ? WHERE name = ?").bind(1, q.max_stored_bytes).bind(2, tenant).run();
}

TenantQuotas Store::quotas(const std::string& tenant) {
  std::lock_guard<std::mutex> lock(m_);
  sqlite::Stmt s = stmt(db_, path_, "SELECT max_queued_partitions, max_stored_bytes FROM tenants WHERE name = ?");
  s.bind(1, tenant);
  TenantQuotas q;
  if (s.step()) {
    if (!s.null(0)) q.max_queued_partitions = uint64_t(s.i64(0));
    if (!s.null(1)) q.max_stored_bytes = uint64_t(s.i64(1));
  }
  return q;
}

void Store::add_upload(const UploadRow& u) {
  std::lock_guard<std::mutex> lock(m_);
  stmt(db_, path_, "INSERT INTO uploads(id, tenant, bytes, sha256, created_ms) VALUES(?,?,?,?,?)")
      .bind(1, u.id)
      .bind(2, u.tenant)
      .bind(3, int64_t(u.bytes))
      .bind(4, u.sha256)
      .bind(5, u.created_ms)
      .run();
}

std::optional<UploadRow> Store::upload(const std::string& tenant, const std::string& id) {
  std::lock_guard<std::mutex> lock(m_);
  sqlite::Stmt s = stmt(db_, path_, "SELECT id, tenant, bytes, sha256, created_ms FROM uploads WHERE id = ? AND tenant = ?");
  s.bind(1, id).bind(2, tenant);
  if (!s.step()) return std::nullopt;
  return read_upload(s);
}

std::vector<UploadRow> Store::uploads(const std::string& tenant) {
  std::lock_guard<std::mutex> lock(m_);
  sqlite::Stmt s = stmt(db_, path_, "SELECT id, tenant, bytes, sha256, created_ms FROM uploads WHERE tenant = ? ORDER BY created_ms");
  s.bind(1, tenant);
  std::vector<UploadRow> out;
  while (s.step()) out.push_back(read_upload(s));
  return out;
}

bool Store::remove_upload(const std::string& tenant, const std::string& id) {
  std::lock_guard<std::mutex> lock(m_);
  stmt(db_, path_,
       "DELETE FROM uploads WHERE id = ?1 AND tenant = ?2 AND NOT EXISTS "
       "(SELECT 1 FROM circuits WHERE zkey_upload = ?1 OR wasm_upload = ?1)")
      .bind(1, id)
      .bind(2, tenant)
      .run();
  return db_.changes() > 0;
}

uint64_t Store::stored_bytes(const std::string& tenant) {
  std::lock_guard<std::mutex> lock(m_);
  sqlite::Stmt s = stmt(db_, path_, "SELECT coalesce(sum(bytes), 0) FROM uploads WHERE tenant = ?");
  s.bind(1, tenant);
  s.step();
  return uint64_t(s.i64(0));
}

std::vector<UploadRow> Store::expired_uploads(int64_t before_ms) {
  std::lock_guard<std::mutex> lock(m_);
  sqlite::Stmt s = stmt(db_, path_,
         "SELECT id, tenant, bytes, sha256, created_ms FROM uploads u WHERE created_ms < ? AND NOT EXISTS "
         "(SELECT 1 FROM circuits c WHERE c.zkey_upload = u.id OR c.wasm_upload = u.id) LIMIT 1000");
  s.bind(1, before_ms);
  std::vector<UploadRow> out;
  while (s.step()) out.push_back(read_upload(s));
  return out;
}

void Store::forget_upload(const std::string& id) {
  std::lock_guard<std::mutex> lock(m_);
  stmt(db_, path_, "DELETE FROM uploads WHERE id = ?").bind(1, id).run();
}

bool Store::add_circuit(const CircuitRow& c) {
  std::lock_guard<std::mutex> lock(m_);
  stmt(db_, path_,
       "INSERT OR IGNORE INTO circuits(tenant, name, zkey_upload, wasm_upload, farm_name, info, created_ms) "
       "VALUES(?,?,?,?,?,?,?)")
      .bind(1, c.tenant)
      .bind(2, c.name)
      .bind(3, c.zkey_upload)
      .bind(4, c.wasm_upload)
      .bind(5, c.farm_name)
      .bind(6, c.info_json)
      .bind(7, c.created_ms)
      .run();
  return db_.changes() > 0;
}

std::optional<CircuitRow> Store::circuit(const std::string& tenant, const std::string& name) {
  std::lock_guard<std::mutex> lock(m_);
  sqlite::Stmt s = stmt(db_, path_, (std::string("SELECT ") + kCircuitCols + " FROM circuits WHERE tenant = ? AND name = ?").c_str());
  s.bind(1, tenant).bind(2, name);
  if (!s.step()) return std::nullopt;
  return read_circuit(s);
}

std::vector<CircuitRow> Store::circuits(const std::string& tenant) {
  std::lock_guard<std::mutex> lock(m_);
  sqlite::Stmt s = stmt(db_, path_, (std::string("SELECT ") + kCircuitCols + " FROM circuits WHERE tenant = ? ORDER BY name").c_str());
  s.bind(1, tenant);
  std::vector<CircuitRow> out;
  while (s.step()) out.push_back(read_circuit(s));
  return out;
}

bool Store::remove_circuit(const std::string& tenant, const std::string& name) {
  std::lock_guard<std::mutex> lock(m_);
  stmt(db_, path_, "DELETE FROM circuits WHERE tenant = ? AND name = ?").bind(1, tenant).bind(2, name).run();
  return db_.changes() > 0;
}

void Store::add_job(const JobRow& j) {
  std::lock_guard<std::mutex> lock(m_);
  sqlite::Stmt s = stmt(db_, path_,
         "INSERT INTO jobs(id, tenant, circuit, idempotency_key, request_sha256, out, partitions, created_ms) "
         "VALUES(?,?,?,?,?,?,?,?)");
  s.bind(1, int64_t(j.id)).bind(2, j.tenant).bind(3, j.circuit);
  if (j.idempotency_key.empty())
    s.bind_null(4);
  else
    s.bind(4, j.idempotency_key);
  s.bind(5, j.request_sha256).bind(6, j.out).bind(7, int64_t(j.partitions)).bind(8, j.created_ms).run();
}

std::optional<JobRow> Store::job(uint64_t id) {
  std::lock_guard<std::mutex> lock(m_);
  sqlite::Stmt s = stmt(db_, path_, (std::string("SELECT ") + kJobCols + " FROM jobs WHERE id = ?").c_str());
  s.bind(1, int64_t(id));
  if (!s.step()) return std::nullopt;
  return read_job(s);
}

std::optional<JobRow> Store::job_by_key(const std::string& tenant, const std::string& key) {
  std::lock_guard<std::mutex> lock(m_);
  sqlite::Stmt s = stmt(db_, path_, (std::string("SELECT ") + kJobCols + " FROM jobs WHERE tenant = ? AND idempotency_key = ?").c_str());
  s.bind(1, tenant).bind(2, key);
  if (!s.step()) return std::nullopt;
  return read_job(s);
}

std::vector<JobRow> Store::jobs(const std::string& tenant, uint64_t before, unsigned limit) {
  std::lock_guard<std::mutex> lock(m_);
  sqlite::Stmt s = stmt(db_, path_,
         (std::string("SELECT ") + kJobCols + " FROM jobs WHERE tenant = ? AND id < ? ORDER BY id DESC LIMIT ?").c_str());
  s.bind(1, tenant).bind(2, before ? int64_t(before) : INT64_MAX).bind(3, int64_t(limit));
  std::vector<JobRow> out;
  while (s.step()) out.push_back(read_job(s));
  return out;
}

std::vector<JobRow> Store::live_jobs(const std::string& tenant) {
  std::lock_guard<std::mutex> lock(m_);
  sqlite::Stmt s = stmt(db_, path_, (std::string("SELECT ") + kJobCols + " FROM jobs WHERE tenant = ? AND terminal = 0").c_str());
  s.bind(1, tenant);
  std::vector<JobRow> out;
  while (s.step()) out.push_back(read_job(s));
  return out;
}

void Store::set_input_names(uint64_t job, const std::vector<std::string>& names) {
  std::lock_guard<std::mutex> lock(m_);
  stmt(db_, path_, "INSERT OR REPLACE INTO job_input_names(job, names) VALUES(?, ?)")
      .bind(1, int64_t(job))
      .bind(2, nlohmann::json(names).dump())
      .run();
}

std::vector<std::string> Store::input_names(uint64_t job) {
  std::lock_guard<std::mutex> lock(m_);
  sqlite::Stmt s = stmt(db_, path_, "SELECT names FROM job_input_names WHERE job = ?");
  s.bind(1, int64_t(job));
  if (!s.step()) return {};
  const nlohmann::json names = nlohmann::json::parse(s.text(0), nullptr, false);
  std::vector<std::string> out;
  if (names.is_array())
    for (const auto& n : names) out.push_back(n.is_string() ? n.get<std::string>() : std::string());
  return out;
}

void Store::mark_terminal(uint64_t id) {
  std::lock_guard<std::mutex> lock(m_);
  stmt(db_, path_, "UPDATE jobs SET terminal = 1 WHERE id = ?").bind(1, int64_t(id)).run();
}

}  // namespace zkfarm::api
