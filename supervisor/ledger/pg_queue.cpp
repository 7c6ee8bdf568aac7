#include "supervisor/ledger/pg_queue.hpp"

#include <libpq-fe.h>
#include <unistd.h>

#include <algorithm>
#include <cstdio>
#include <fstream>
#include <iterator>
#include <random>
#include <regex>
#include <sstream>
#include <thread>

#include "supervisor/ledger/pg_deadline.hpp"
#include "supervisor/ledger/pg_schema.hpp"
#include "supervisor/ledger/pg_result.hpp"
#include "sql/pg_queue.sql.hpp"

namespace zkfarm::supervisor {

namespace {

// Whether a failed call's SQLSTATE says the connection, not the request, failed:
// class 08 (connection exception), 57P01..03 (the server is shutting down,
// crashed, or not accepting connections yet), 53300 (too many connections).
bool connection_state(const char* sqlstate) {
  if (!sqlstate) return true;  // no SQLSTATE: libpq lost the connection
  const std::string s = sqlstate;
  return s.rfind("08", 0) == 0 || s == "57P01" || s == "57P02" || s == "57P03" || s == "53300";
}

}  // namespace

// How long a statement may go unanswered before the server counts as
// unreachable: above statement_timeout (10 s, set at connect), so a slow
// statement ends with the server's own error and only a server that does not
// answer at all reaches this.
constexpr std::chrono::milliseconds kAnswerDeadline{12000};

std::string redact_pg_url(const std::string& url) {
  // URI form: postgresql://user:PASSWORD@host...; keyword form: password=...
  std::string s = std::regex_replace(url, std::regex(R"(^(postgres(?:ql)?://[^:/@]*):[^@]*@)"), "$1:***@");
  s = std::regex_replace(s, std::regex(R"((^|[\s&?])password=[^\s&]*)"), "$1password=***");
  return s;
}

PgQueue::PgQueue(PgOptions opt) : opt_(std::move(opt)), safe_url_(redact_pg_url(opt_.url)) {
  try {
    open();
  } catch (...) {
    // A constructor that throws runs no destructor: the connection goes here.
    if (conn_) PQfinish(conn_);
    conn_ = nullptr;
    throw;
  }
}

void PgQueue::open() {
  connect();
  // The schema: migrated under an advisory lock (one host at a time), each
  // migration in one transaction with its meta update.
  exec("schema", sql::pg_queue::schema_lock);
  try {
    exec("schema", sql::pg_queue::meta_table);
    auto meta = [&](const char* key) {
      Result r = exec("schema", sql::pg_queue::meta_value, {std::string(key)});
      return r.rows() ? std::stoi(r.text(0, 0)) : 0;
    };
    const int version = meta("schema_version"), min_reader = meta("min_reader_version");
    const std::string verdict = schema_verdict("the queue", kPgSchemaVersion, version, min_reader);
    if (!verdict.empty()) throw JournalError(safe_url_ + ": " + verdict);
    for (const SchemaMigration& m : pg_migrations()) {
      if (m.version <= version) continue;
      exec("schema", "BEGIN");
      try {
        exec("schema", m.sql);
        exec("schema", sql::pg_queue::set_schema_version,
             {std::to_string(m.version), std::to_string(m.min_reader)});
        exec("schema", "COMMIT");
      } catch (...) {
        PQclear(PQexec(conn_, "ROLLBACK"));
        throw;
      }
    }
  } catch (...) {
    if (conn_) PQclear(PQexec(conn_, sql::pg_queue::schema_unlock));
    throw;
  }
  exec("schema", sql::pg_queue::schema_unlock);
  if (opt_.register_host) register_host();
}

void PgQueue::register_host() {
  Result r = exec("register", sql::pg_queue::register_host,
                  {opt_.host_id, opt_.version, opt_.devices, std::to_string(::getpid()), opt_.instance,
                   std::to_string(opt_.lease_seconds)});
  if (!r.rows()) {
    Result who = exec("register", sql::pg_queue::host_holder, {opt_.host_id});
    std::string holder = "another zkfarmd";
    if (who.rows()) {
      char age[32];
      std::snprintf(age, sizeof age, "%.0f", who.f64(0, 2));
      holder = "pid " + who.text(0, 0) + " of " + who.text(0, 1) + ", heartbeat " + age + " s ago";
    }
    throw std::runtime_error("host_id '" + opt_.host_id + "' is in use in the queue by a live host (" + holder +
                             "); give this zkfarmd a host_id of its own (host_id in the config, or --host-id)");
  }
  // What an earlier run of this host held is not held by this one: back to
  // the queue at once, its attempt counted (it may be what killed that run).
  exec("register", sql::pg_queue::release_previous_run, {opt_.host_id});
}

std::string PgQueue::queue_id(bool* created) {
  std::random_device rd;
  char id[40];
  std::snprintf(id, sizeof id, "%08x%08x%08x%08x", rd(), rd(), rd(), rd());
  Result r = exec("queue_id", sql::pg_queue::queue_id, {std::string(id)});
  *created = r.rows() && r.text(0, 1) == "t";
  return r.rows() ? r.text(0, 0) : std::string();
}

PgQueue::~PgQueue() {
  if (conn_) PQfinish(conn_);
}

void PgQueue::connect() {
  if (conn_) {
    PQfinish(conn_);
    conn_ = nullptr;
  }
  const std::string app = ("zkfarmd " + opt_.host_id).substr(0, 63);
  // Defaults first: what the URL says (expand_dbname) overrides them.
  const char* keys[] = {"connect_timeout", "keepalives",     "keepalives_idle", "keepalives_interval",
                        "keepalives_count", "tcp_user_timeout", "application_name", "dbname", nullptr};
  const char* values[] = {"5", "1", "10", "3", "3", "15000", app.c_str(), opt_.url.c_str(), nullptr};
  conn_ = PQconnectdbParams(keys, values, /*expand_dbname=*/1);
  if (!conn_ || PQstatus(conn_) != CONNECTION_OK) {
    std::string msg = conn_ ? PQerrorMessage(conn_) : "out of memory";
    while (!msg.empty() && (msg.back() == '\n' || msg.back() == ' ')) msg.pop_back();
    if (conn_) PQfinish(conn_);
    conn_ = nullptr;
    fault("connect", msg, true);
  }
  // The session's settings (sql/pg_queue.sql says why).
  bool timed_out = false;
  PGresult* r = pg_exec_deadline(conn_,
                                 sql::pg_queue::session,
                                 0, nullptr, nullptr, nullptr, kAnswerDeadline, &timed_out);
  const bool ok = r && PQresultStatus(r) == PGRES_COMMAND_OK;
  if (r) PQclear(r);
  if (!ok) fault("connect", timed_out ? "no answer within the deadline" : PQerrorMessage(conn_), true);
  reachable_ = true;
  backoff_ = std::chrono::milliseconds(250);
}

void PgQueue::ensure_connected(const char* op) {
  if (conn_ && PQstatus(conn_) == CONNECTION_OK) return;
  const auto now = std::chrono::steady_clock::now();
  if (now < reconnect_after_)
    throw JournalError::of_store(safe_url_ + ": " + op + ": the queue is unreachable (" + last_error_ +
                                     "); next try in a moment",
                                 true);
  connect();
}

void PgQueue::fault(const char* op, const std::string& message, bool connection) {
  std::string m = message;
  while (!m.empty() && (m.back() == '\n' || m.back() == ' ')) m.pop_back();
  if (connection) {
    reachable_ = false;
    if (conn_) {
      PQfinish(conn_);
      conn_ = nullptr;
    }
    reconnect_after_ = std::chrono::steady_clock::now() + backoff_;
    backoff_ = std::min(backoff_ * 2, std::chrono::milliseconds(8000));
  }
  last_error_ = std::string(op) + ": " + m;
  throw JournalError::of_store(safe_url_ + ": " + op + ": " + m, connection);
}

PgQueue::Result PgQueue::exec(const char* op, const std::string& sql,
                              const std::vector<std::optional<std::string>>& params, const std::vector<bool>& binary) {
  ensure_connected(op);
  std::vector<const char*> values(params.size());
  std::vector<int> lengths(params.size()), formats(params.size());
  for (size_t i = 0; i < params.size(); ++i) {
    values[i] = params[i] ? params[i]->data() : nullptr;
    lengths[i] = params[i] ? int(params[i]->size()) : 0;
    formats[i] = i < binary.size() && binary[i] ? 1 : 0;
  }
  bool timed_out = false;
  PGresult* r = pg_exec_deadline(conn_, sql, int(params.size()), values.data(), lengths.data(), formats.data(),
                                 kAnswerDeadline, &timed_out);
  if (timed_out)  // a server that does not answer: the connection is dropped, a reconnect follows with backoff
    fault(op, "no answer within " + std::to_string(kAnswerDeadline.count() / 1000) + " s", true);
  const ExecStatusType st = r ? PQresultStatus(r) : PGRES_FATAL_ERROR;
  if (st == PGRES_COMMAND_OK || st == PGRES_TUPLES_OK) {
    reachable_ = true;
    last_error_.clear();
    return Result(r);
  }
  const char* sqlstate = r ? PQresultErrorField(r, PG_DIAG_SQLSTATE) : nullptr;
  std::string msg = r ? PQresultErrorMessage(r) : PQerrorMessage(conn_);
  if (msg.empty()) msg = PQerrorMessage(conn_);
  const bool connection = PQstatus(conn_) != CONNECTION_OK || connection_state(sqlstate);
  if (r) PQclear(r);
  fault(op, msg, connection);
  throw std::logic_error("unreachable");
}

std::string PgQueue::generator_name(const std::string& generator) {
  // STATE/circuits/HASH/generator → HASH: each host has its own state dir.
  const size_t slash = generator.rfind('/');
  if (slash == std::string::npos || slash == 0) return generator;
  const size_t before = generator.rfind('/', slash - 1);
  return generator.substr(before == std::string::npos ? 0 : before + 1, slash - (before == std::string::npos ? 0 : before + 1));
}

std::string PgQueue::relative(const std::string& path) const {
  if (!shared_dir_.empty() && path.rfind(shared_dir_ + "/", 0) == 0) return path.substr(shared_dir_.size() + 1);
  return path;
}

bool PgQueue::writable() {
  try {
    exec("probe", sql::pg_queue::probe);
    return true;
  } catch (const JournalError&) {
    return false;
  }
}

void PgQueue::deregister() {
  exec("deregister", sql::pg_queue::deregister, {opt_.host_id});
}

std::string PgQueue::maintainer() {
  Result r = exec("maintainer", sql::pg_queue::maintainer);
  return r.rows() ? r.text(0, 0) : std::string();
}

}  // namespace zkfarm::supervisor
