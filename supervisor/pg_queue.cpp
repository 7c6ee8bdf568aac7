#include "supervisor/pg_queue.hpp"

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

#include "supervisor/pg_deadline.hpp"
#include "supervisor/pg_schema.hpp"

namespace zkfarm::supervisor {

namespace {

// A job state as the jobs table spells it.
const char* state_text(JobState s) { return job_state_name(s); }

std::optional<JobState> parse_job_state(const std::string& s) {
  for (JobState st : {JobState::kQueued, JobState::kRunning, JobState::kDone, JobState::kFailed, JobState::kCancelled})
    if (s == job_state_name(st)) return st;
  return std::nullopt;
}

// PostgreSQL's array literal of integers: {1,2,3}.
std::string int_array(const std::vector<uint64_t>& v) {
  std::string s = "{";
  for (size_t i = 0; i < v.size(); ++i) s += (i ? "," : "") + std::to_string(v[i]);
  return s + "}";
}

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

// A PGresult that frees itself.
class PgQueue::Result {
 public:
  explicit Result(PGresult* r) : r_(r) {}
  Result(Result&& o) noexcept : r_(o.r_) { o.r_ = nullptr; }
  ~Result() {
    if (r_) PQclear(r_);
  }
  int rows() const { return PQntuples(r_); }
  bool null(int row, int col) const { return PQgetisnull(r_, row, col); }
  std::string text(int row, int col) const { return std::string(PQgetvalue(r_, row, col), PQgetlength(r_, row, col)); }
  int64_t i64(int row, int col) const { return null(row, col) ? 0 : std::stoll(text(row, col)); }
  uint64_t u64(int row, int col) const { return null(row, col) ? 0 : std::stoull(text(row, col)); }
  double f64(int row, int col) const { return null(row, col) ? 0 : std::stod(text(row, col)); }
  // A bytea column (text format: \x followed by hex digits).
  std::string bytes(int row, int col) const {
    if (null(row, col)) return {};
    size_t n = 0;
    unsigned char* b = PQunescapeBytea(reinterpret_cast<const unsigned char*>(PQgetvalue(r_, row, col)), &n);
    if (!b) throw std::bad_alloc();
    std::string out(reinterpret_cast<const char*>(b), n);
    PQfreemem(b);
    return out;
  }

 private:
  PGresult* r_;
};

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
  exec("schema", "SELECT pg_advisory_lock(7262797346)");
  try {
    exec("schema", "CREATE TABLE IF NOT EXISTS zkfarm_meta (key text PRIMARY KEY, value text NOT NULL)");
    auto meta = [&](const char* key) {
      Result r = exec("schema", "SELECT value FROM zkfarm_meta WHERE key = $1", {std::string(key)});
      return r.rows() ? std::stoi(r.text(0, 0)) : 0;
    };
    const int version = meta("schema_version"), min_reader = meta("min_reader_version");
    const std::string verdict = pg_schema_verdict(kPgSchemaVersion, version, min_reader);
    if (!verdict.empty()) throw JournalError(safe_url_ + ": " + verdict);
    for (const PgMigration& m : pg_migrations()) {
      if (m.version <= version) continue;
      exec("schema", "BEGIN");
      try {
        exec("schema", m.sql);
        exec("schema",
             "INSERT INTO zkfarm_meta (key, value) VALUES ('schema_version', $1), ('min_reader_version', $2) "
             "ON CONFLICT (key) DO UPDATE SET value = EXCLUDED.value",
             {std::to_string(m.version), std::to_string(m.min_reader)});
        exec("schema", "COMMIT");
      } catch (...) {
        PQclear(PQexec(conn_, "ROLLBACK"));
        throw;
      }
    }
  } catch (...) {
    if (conn_) PQclear(PQexec(conn_, "SELECT pg_advisory_unlock(7262797346)"));
    throw;
  }
  exec("schema", "SELECT pg_advisory_unlock(7262797346)");
  if (opt_.register_host) register_host();
}

void PgQueue::register_host() {
  // One statement decides: a new row, or the row of a host that stopped, went
  // silent for a lease, or is this same instance (a restart) is taken over.
  Result r = exec("register",
                  "INSERT INTO zkfarm_hosts (host_id, version, devices, state, pid, instance) "
                  "VALUES ($1, $2, $3, 'running', $4, $5) "
                  "ON CONFLICT (host_id) DO UPDATE SET version = EXCLUDED.version, devices = EXCLUDED.devices, "
                  "state = 'running', pid = EXCLUDED.pid, instance = EXCLUDED.instance, started_at = now(), "
                  "heartbeat_at = now() "
                  "WHERE zkfarm_hosts.state = 'stopped' OR zkfarm_hosts.instance = EXCLUDED.instance "
                  "OR zkfarm_hosts.heartbeat_at < now() - make_interval(secs => $6) RETURNING 1",
                  {opt_.host_id, opt_.version, opt_.devices, std::to_string(::getpid()), opt_.instance,
                   std::to_string(opt_.lease_seconds)});
  if (!r.rows()) {
    Result who = exec("register",
                      "SELECT pid, instance, extract(epoch from now() - heartbeat_at) FROM zkfarm_hosts "
                      "WHERE host_id = $1",
                      {opt_.host_id});
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
  exec("register",
       "WITH r AS (UPDATE zkfarm_partitions SET state = 'queued', lease_token = NULL, lease_host = NULL, "
       "lease_expires = NULL, last_error = 'host ' || $1 || ' restarted while holding it' "
       "WHERE state = 'leased' AND lease_host = $1 RETURNING 1) "
       "SELECT count(*), pg_notify('zkfarm', 'work') FROM r",
       {opt_.host_id});
}

std::string PgQueue::queue_id(bool* created) {
  std::random_device rd;
  char id[40];
  std::snprintf(id, sizeof id, "%08x%08x%08x%08x", rd(), rd(), rd(), rd());
  Result r = exec("queue_id",
                  "WITH i AS (INSERT INTO zkfarm_meta (key, value) VALUES ('queue_id', $1) "
                  "  ON CONFLICT (key) DO NOTHING RETURNING value) "
                  "SELECT value, true FROM i UNION ALL "
                  "SELECT value, false FROM zkfarm_meta WHERE key = 'queue_id' AND NOT EXISTS (SELECT 1 FROM i)",
                  {std::string(id)});
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
  // A statement never waits long on a lock or a stuck server: a claim skips
  // locked rows, every other statement locks a few rows for milliseconds.
  bool timed_out = false;
  PGresult* r = pg_exec_deadline(conn_,
                                 "SET client_min_messages = warning; SET synchronous_commit = off; "
                                 "SET statement_timeout = '10s'; SET lock_timeout = '5s'; "
                                 "SET idle_in_transaction_session_timeout = '30s'",
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

uint64_t PgQueue::add_job(const Job& job) {
  exec("add_job", "BEGIN");
  try {
    // The client hears "accepted" once this commits: flushed to disk first.
    exec("add_job", "SET LOCAL synchronous_commit = on");
    Result r = exec("add_job",
                    "INSERT INTO zkfarm_jobs (priority, zkey_sha256, zkey_source, out_dir, owner_uid, owner_gid, "
                    "submitted_host, n_public, slot_bytes, circuit, generator, k, submitted_ms, files, generator_exe, "
                    "generator_dat) VALUES ($1, $2, $3, $4, $5, $6, $7, $8, $9, $10, $11, $12, $13, $14, $15, $16) "
                    "RETURNING id",
                    {std::to_string(int(job.priority)), job.zkey_sha256, job.zkey_source, job.out,
                     std::to_string(job.owner_uid), std::to_string(job.owner_gid), opt_.host_id,
                     std::to_string(job.n_public), std::to_string(job.slot_bytes), job.circuit, generator_name(job.generator),
                     std::to_string(job.parts.size()), std::to_string(job.submitted_ms), relative(job.files_dir),
                     job.generator_exe_sha256, job.generator_dat_sha256});
    const uint64_t id = r.u64(0, 0);
    // Witness partitions go in batches of 1000 rows (one statement each, from
    // arrays); a partition of inputs goes alone with its bytes.
    std::vector<uint32_t> batch;
    auto flush = [&] {
      if (batch.empty()) return;
      std::string idx = "{", wtns = "{", sha = "{", pub = "{";
      auto quote = [](const std::string& v) {
        std::string q = "\"";
        for (char ch : v) {
          if (ch == '"' || ch == '\\') q += '\\';
          q += ch;
        }
        return q + "\"";
      };
      for (size_t i = 0; i < batch.size(); ++i) {
        const Partition& p = job.parts[batch[i]];
        const char* sep = i ? "," : "";
        idx += sep + std::to_string(batch[i]);
        wtns += sep + quote(relative(p.wtns));
        sha += sep + quote(p.wtns_sha256);
        pub += sep + quote(p.public_json);
      }
      exec("add_job",
           "INSERT INTO zkfarm_partitions (job_id, idx, prio, wtns, wtns_sha256, public_json) "
           "SELECT $1, u.idx, $2, u.wtns, u.sha, u.pub "
           "FROM unnest($3::integer[], $4::text[], $5::text[], $6::text[]) AS u(idx, wtns, sha, pub)",
           {std::to_string(id), std::to_string(int(job.priority)), idx + "}", wtns + "}", sha + "}", pub + "}"});
      batch.clear();
    };
    for (uint32_t k = 0; k < job.parts.size(); ++k) {
      const Partition& p = job.parts[k];
      if (p.input.empty()) {
        batch.push_back(k);
        if (batch.size() == 1000) flush();
        continue;
      }
      std::ifstream in(p.input, std::ios::binary);
      if (!in) throw JournalError(safe_url_ + ": add_job: cannot read " + p.input);
      const std::string input(std::istreambuf_iterator<char>(in), {});
      exec("add_job",
           "INSERT INTO zkfarm_partitions (job_id, idx, prio, input, input_name, public_json) "
           "VALUES ($1, $2, $3, $4, $5, $6)",
           {std::to_string(id), std::to_string(k), std::to_string(int(job.priority)), input, p.input_source,
            p.public_json},
           {false, false, false, true, false, false});
    }
    flush();
    exec("add_job", "SELECT pg_notify('zkfarm', 'work')");
    exec("add_job", "COMMIT");
    return id;
  } catch (const JournalError& e) {
    if (conn_) PQclear(PQexec(conn_, "ROLLBACK"));
    throw;
  }
}

std::vector<ClaimedPartition> PgQueue::claim(unsigned n) {
  if (n == 0) return {};
  // SKIP LOCKED: a row another host is claiming right now is passed over,
  // never waited for. The jobs of what was claimed become running.
  Result r = exec("claim",
                  "WITH c AS (SELECT job_id, idx FROM zkfarm_partitions WHERE state = 'queued' AND attempts < $4 "
                  "  ORDER BY prio DESC, job_id, idx LIMIT $1 FOR UPDATE SKIP LOCKED), "
                  "u AS (UPDATE zkfarm_partitions p SET state = 'leased', lease_token = nextval('zkfarm_lease_seq'), "
                  "  lease_host = $2, lease_expires = now() + make_interval(secs => $3), attempts = p.attempts + 1 "
                  "  FROM c WHERE p.job_id = c.job_id AND p.idx = c.idx "
                  "  RETURNING p.job_id, p.idx, p.lease_token, p.attempts, p.wtns, p.wtns_sha256, p.input, p.input_name), "
                  "j AS (UPDATE zkfarm_jobs SET state = 'running', txid = pg_current_xact_id() "
                  "  WHERE id IN (SELECT job_id FROM u) AND state = 'queued') "
                  "SELECT * FROM u",
                  {std::to_string(n), opt_.host_id, std::to_string(opt_.lease_seconds),
                   std::to_string(opt_.max_attempts)});
  std::vector<ClaimedPartition> out;
  for (int i = 0; i < r.rows(); ++i) {
    ClaimedPartition c;
    c.lease.job = r.u64(i, 0);
    c.lease.index = uint32_t(r.u64(i, 1));
    c.lease.token = r.u64(i, 2);
    c.lease.attempts = uint32_t(r.u64(i, 3));
    c.wtns = r.text(i, 4);
    c.wtns_sha256 = r.text(i, 5);
    c.input = r.bytes(i, 6);
    c.input_name = r.text(i, 7);
    out.push_back(std::move(c));
  }
  return out;
}

CompleteResult PgQueue::complete(uint64_t job, uint32_t index, const ProofRecord& proof) {
  // One statement: the partition is done only under its current, unexpired
  // lease; only then is the proof inserted. The job's row is not touched per
  // proof (with 100 hosts on one job it would be a hot row every complete
  // waits on: docs/scaling.md): the sweep counts progress once a second, and
  // the job ends here when no other partition is left (the statement sees the
  // others as of its start, so two last proofs at once both leave it to the
  // sweep, a second later). The hosts hear a job's end by NOTIFY.
  Result r = exec("complete",
                  "WITH p AS (UPDATE zkfarm_partitions SET state = 'done', lease_token = NULL, lease_host = NULL, "
                  "  lease_expires = NULL, proved_by = $5, synth_ms = $8, prove_ms = $9, "
                  "  public_json = CASE WHEN $6 = '' THEN public_json ELSE $6 END "
                  "  WHERE job_id = $1 AND idx = $2 AND lease_token = $3 AND state = 'leased' AND lease_expires > now() "
                  "  RETURNING job_id, idx, public_json, attempts), "
                  "ins AS (INSERT INTO zkfarm_proofs (job_id, idx, proof, public_json, proved_ms, host, lease_token) "
                  "  SELECT job_id, idx, $4, public_json, $7, $5, $3 FROM p RETURNING job_id), "
                  // Another unfinished partition: one probe of zkfarm_partitions_unfinished.
                  "j AS (UPDATE zkfarm_jobs SET done = k, txid = pg_current_xact_id(), state = 'done', finished_ms = $7, "
                  "  attempts = (SELECT sum(attempts) FROM zkfarm_partitions WHERE job_id = $1), "
                  "  synth_ms = $8 + (SELECT coalesce(sum(synth_ms), 0) FROM zkfarm_partitions WHERE job_id = $1 AND idx <> $2), "
                  "  prove_ms = $9 + (SELECT coalesce(sum(prove_ms), 0) FROM zkfarm_partitions WHERE job_id = $1 AND idx <> $2) "
                  "  WHERE id = (SELECT job_id FROM ins) AND state IN ('queued', 'running') AND NOT EXISTS "
                  "  (SELECT 1 FROM zkfarm_partitions q WHERE q.job_id = $1 AND q.idx <> $2 AND q.state <> 'done') "
                  "  RETURNING state) "
                  "SELECT (SELECT count(*) FROM ins), (SELECT state FROM j), "
                  "  (SELECT count(*) FROM (SELECT pg_notify('zkfarm', 'job') FROM j) n)",
                  {std::to_string(job), std::to_string(index), std::to_string(proof.lease_token), proof.proof,
                   opt_.host_id, proof.public_json, std::to_string(proof.proved_ms), std::to_string(proof.synth_ms),
                   std::to_string(proof.prove_ms)},
                  {false, false, false, true, false, false, false, false, false});
  CompleteResult out;
  if (r.u64(0, 0) == 1) {
    out.stored = ProofStored::kStored;
    out.job_done = !r.null(0, 1) && r.text(0, 1) == "done";
    return out;
  }
  Result why = exec("complete",
                    "SELECT state, coalesce(lease_token, 0), coalesce(lease_host, ''), "
                    "coalesce(lease_expires < now(), false), proved_by FROM zkfarm_partitions "
                    "WHERE job_id = $1 AND idx = $2",
                    {std::to_string(job), std::to_string(index)});
  if (!why.rows()) {
    out.why = "the job is no longer in the queue";
  } else if (why.text(0, 0) == "done") {
    out.stored = ProofStored::kDuplicate;
    out.why = "already proved by " + why.text(0, 4);
  } else if (why.text(0, 0) == "leased" && why.u64(0, 1) == proof.lease_token) {
    out.why = "its lease expired";
  } else if (why.text(0, 0) == "leased") {
    out.why = "its lease was taken over by " + why.text(0, 2);
  } else {
    out.why = "the partition is " + why.text(0, 0) + " now (lease " + std::to_string(proof.lease_token) + " ended)";
  }
  return out;
}

ProofStored PgQueue::add_proof(uint64_t job, uint32_t index, const ProofRecord& proof) {
  return complete(job, index, proof).stored;
}

std::vector<uint64_t> PgQueue::renew(const std::vector<uint64_t>& tokens, const std::string& state) {
  Result r = exec("renew",
                  "WITH r AS (UPDATE zkfarm_partitions SET lease_expires = now() + make_interval(secs => $3) "
                  "  WHERE lease_token = ANY($1::bigint[]) AND lease_host = $2 AND state = 'leased' "
                  "  AND lease_expires > now() RETURNING lease_token), "
                  "h AS (UPDATE zkfarm_hosts SET heartbeat_at = now(), state = $4 WHERE host_id = $2) "
                  "SELECT lease_token FROM r",
                  {int_array(tokens), opt_.host_id, std::to_string(opt_.lease_seconds), state});
  std::vector<uint64_t> held;
  for (int i = 0; i < r.rows(); ++i) held.push_back(r.u64(i, 0));
  return held;
}

size_t PgQueue::release(const std::vector<uint64_t>& tokens) {
  if (tokens.empty()) return 0;
  Result r = exec("release",
                  "WITH r AS (UPDATE zkfarm_partitions SET state = 'queued', lease_token = NULL, lease_host = NULL, "
                  "  lease_expires = NULL, attempts = greatest(attempts - 1, 0) "
                  "  WHERE lease_token = ANY($1::bigint[]) AND lease_host = $2 AND state = 'leased' RETURNING 1) "
                  "SELECT count(*), pg_notify('zkfarm', 'work') FROM r",
                  {int_array(tokens), opt_.host_id});
  return r.u64(0, 0);
}

bool PgQueue::give_back(uint64_t token, const std::string& error) {
  Result r = exec("give_back",
                  "WITH r AS (UPDATE zkfarm_partitions SET state = 'queued', lease_token = NULL, lease_host = NULL, "
                  "  lease_expires = NULL, last_error = $3 "
                  "  WHERE lease_token = $1 AND lease_host = $2 AND state = 'leased' RETURNING 1) "
                  "SELECT count(*), pg_notify('zkfarm', 'work') FROM r",
                  {std::to_string(token), opt_.host_id, error.substr(0, 2000)});
  return r.u64(0, 0) > 0;
}

size_t PgQueue::expire_leases() {
  // Back to the queue, or failed once its claims are spent; SKIP LOCKED, so
  // hosts expiring at once split the work.
  Result r = exec("expire",
                  "WITH e AS (SELECT job_id, idx FROM zkfarm_partitions WHERE state = 'leased' AND lease_expires < now() "
                  "  LIMIT 1000 FOR UPDATE SKIP LOCKED), "
                  "q AS (UPDATE zkfarm_partitions p SET "
                  "  state = CASE WHEN p.attempts >= $1 THEN 'failed' ELSE 'queued' END, "
                  "  last_error = 'the lease of host ' || p.lease_host || ' expired (claim ' || p.attempts || ')', "
                  "  lease_token = NULL, lease_host = NULL, lease_expires = NULL "
                  "  FROM e WHERE p.job_id = e.job_id AND p.idx = e.idx RETURNING p.job_id, p.idx, p.state, p.last_error) "
                  "SELECT job_id, idx, state, last_error, pg_notify('zkfarm', 'work') FROM q "
                  "UNION ALL "
                  "SELECT job_id, idx, 'failed', last_error, '' FROM zkfarm_partitions "
                  "  WHERE state = 'queued' AND attempts >= $1",
                  {std::to_string(opt_.max_attempts)});
  for (int i = 0; i < r.rows(); ++i) {
    if (r.text(i, 2) != "failed") continue;
    const std::string error = "partition " + r.text(i, 1) + ": claimed " + std::to_string(opt_.max_attempts) +
                              " times without a proof (max_attempts); last: " + r.text(i, 3);
    finish_job(r.u64(i, 0), JobState::kFailed, error, 0);
  }
  return size_t(r.rows());
}

bool PgQueue::sweep(int64_t now_ms) {
  // One host a second does it: the one whose update of swept_ms wins. The
  // gate runs on the database's clock: a host whose clock is ahead (or
  // jumped) must not hold every other host's sweep off until it is caught up.
  Result gate = exec("sweep",
                     "WITH t AS (SELECT (extract(epoch from clock_timestamp()) * 1000)::bigint AS now) "
                     "UPDATE zkfarm_meta SET value = t.now::text FROM t WHERE key = 'swept_ms' "
                     "AND value::bigint <= t.now - 1000 RETURNING 1");
  if (!gate.rows()) return false;
  // One scan of the live jobs' partitions: their progress into the jobs'
  // rows, and the queue's counts ("queued leased done failed") for every
  // host's status view, so that 100 hosts do not each count them.
  exec("sweep",
       "WITH s AS (SELECT p.job_id, count(*) FILTER (WHERE p.state = 'done') AS done, "
       "  count(*) FILTER (WHERE p.state = 'queued') AS queued, count(*) FILTER (WHERE p.state = 'leased') AS leased, "
       "  count(*) FILTER (WHERE p.state = 'failed') AS failed, sum(p.attempts) AS attempts, "
       "  sum(p.synth_ms) AS synth, sum(p.prove_ms) AS prove FROM zkfarm_partitions p "
       "  JOIN zkfarm_jobs j ON j.id = p.job_id WHERE j.state IN ('queued', 'running') GROUP BY p.job_id), "
       "u AS (UPDATE zkfarm_jobs j SET done = s.done, attempts = s.attempts, synth_ms = s.synth, prove_ms = s.prove, "
       "  state = CASE WHEN s.done >= j.k THEN 'done' ELSE j.state END, "
       "  finished_ms = CASE WHEN s.done >= j.k THEN $1 ELSE j.finished_ms END, txid = pg_current_xact_id() "
       "  FROM s WHERE j.id = s.job_id AND j.state IN ('queued', 'running') "
       "  AND (j.done <> s.done OR j.attempts <> s.attempts) RETURNING j.state), "
       "m AS (INSERT INTO zkfarm_meta (key, value) SELECT 'counts', concat_ws(' ', coalesce(sum(queued), 0), "
       "  coalesce(sum(leased), 0), coalesce(sum(done), 0), coalesce(sum(failed), 0)) FROM s "
       "  ON CONFLICT (key) DO UPDATE SET value = EXCLUDED.value) "
       "SELECT count(*) FROM (SELECT pg_notify('zkfarm', 'job') FROM u WHERE state = 'done') n",
       {std::to_string(now_ms)});
  return true;
}

bool PgQueue::fail_partition(uint64_t job, uint32_t index, uint64_t token, const std::string& error) {
  Result r = exec("fail_partition",
                  "UPDATE zkfarm_partitions SET state = 'failed', last_error = $4, lease_token = NULL, lease_host = NULL, "
                  "lease_expires = NULL WHERE job_id = $1 AND idx = $2 AND lease_token = $3 AND state = 'leased' "
                  "RETURNING 1",
                  {std::to_string(job), std::to_string(index), std::to_string(token), error});
  if (!r.rows()) return false;
  finish_job(job, JobState::kFailed, error, 0);
  return true;
}

void PgQueue::finish_job(uint64_t job, JobState state, const std::string& error, int64_t finished_ms) {
  // The job and every partition not proved end together; hosts holding one
  // hear it at their next renewal (their lease is gone) and drop it.
  const char* part_state = state == JobState::kCancelled ? "cancelled" : "failed";
  exec("finish_job", "BEGIN");
  try {
    exec("finish_job", "SET LOCAL synchronous_commit = on");
    exec("finish_job",
         "UPDATE zkfarm_jobs SET state = $2, error = $3, txid = pg_current_xact_id(), "
         "finished_ms = CASE WHEN $4::bigint > 0 THEN $4::bigint "
         "  ELSE (extract(epoch from clock_timestamp()) * 1000)::bigint END "
         "WHERE id = $1 AND state IN ('queued', 'running')",
         {std::to_string(job), std::string(state_text(state)), error, std::to_string(finished_ms)});
    if (state != JobState::kDone)
      exec("finish_job",
           "UPDATE zkfarm_partitions SET state = $2, lease_token = NULL, lease_host = NULL, lease_expires = NULL "
           "WHERE job_id = $1 AND state IN ('queued', 'leased')",
           {std::to_string(job), std::string(part_state)});
    exec("finish_job", "SELECT pg_notify('zkfarm', 'job')");
    exec("finish_job", "COMMIT");
  } catch (const JournalError&) {
    if (conn_) PQclear(PQexec(conn_, "ROLLBACK"));
    throw;
  }
}

bool PgQueue::cancel_job(uint64_t job) {
  Result r = exec("cancel", "SELECT 1 FROM zkfarm_jobs WHERE id = $1 AND state IN ('queued', 'running')",
                  {std::to_string(job)});
  if (!r.rows()) return false;
  finish_job(job, JobState::kCancelled, "", 0);
  return true;
}

void PgQueue::set_started(uint64_t job, int64_t started_ms) {
  exec("set_started",
       "UPDATE zkfarm_jobs SET started_ms = $2, txid = pg_current_xact_id() WHERE id = $1 AND started_ms = 0",
       {std::to_string(job), std::to_string(started_ms)});
}

std::optional<JournaledProof> PgQueue::proof(uint64_t job, uint32_t index) {
  Result r = exec("proof", "SELECT proof, public_json FROM zkfarm_proofs WHERE job_id = $1 AND idx = $2",
                  {std::to_string(job), std::to_string(index)});
  if (!r.rows()) return std::nullopt;
  return JournaledProof{r.bytes(0, 0), r.text(0, 1)};
}

size_t PgQueue::prune(int64_t cutoff_ms) {
  Result r = exec("prune",
                  "WITH d AS (DELETE FROM zkfarm_jobs WHERE state IN ('done', 'failed', 'cancelled') "
                  "AND finished_ms > 0 AND finished_ms < $1 RETURNING 1) SELECT count(*) FROM d",
                  {std::to_string(cutoff_ms)});
  // A host silent for a week is gone (it registers again if it comes back).
  exec("prune", "DELETE FROM zkfarm_hosts WHERE heartbeat_at < now() - interval '7 days'");
  return r.u64(0, 0);
}

void PgQueue::put_circuit(const CircuitRecord& c) {
  // The generator's inputs first: a circuit is never seen without them
  // (a failure here leaves at most a row of a generator no circuit names,
  // which is kept: a few hundred bytes, and removing it could race another
  // host's add of that generator).
  if (!c.inputs.empty())
    exec("put_circuit",
         "INSERT INTO zkfarm_generator_inputs (generator, inputs) VALUES ($1, $2) ON CONFLICT (generator) DO NOTHING",
         {c.generator, c.inputs});
  exec("put_circuit",
       "WITH u AS (INSERT INTO zkfarm_circuits (name, kind, generator, zkey_sha256, zkey_source, source, owner_uid, "
       "added_ms, n_vars, n_public, exe_sha256, dat_sha256) VALUES ($1, $2, $3, $4, $5, $6, $7, $8, $9, $10, $11, $12) "
       "ON CONFLICT (name) DO UPDATE SET "
       "kind = EXCLUDED.kind, generator = EXCLUDED.generator, zkey_sha256 = EXCLUDED.zkey_sha256, "
       "zkey_source = EXCLUDED.zkey_source, source = EXCLUDED.source, owner_uid = EXCLUDED.owner_uid, "
       "added_ms = EXCLUDED.added_ms, n_vars = EXCLUDED.n_vars, n_public = EXCLUDED.n_public, "
       "exe_sha256 = EXCLUDED.exe_sha256, dat_sha256 = EXCLUDED.dat_sha256 RETURNING 1) "
       "SELECT count(*), pg_notify('zkfarm', 'circuit') FROM u",
       {c.name, c.kind, c.generator, c.zkey_sha256, c.zkey_source, c.source, std::to_string(c.owner_uid),
        std::to_string(c.added_ms), std::to_string(c.n_vars), std::to_string(c.n_public), c.exe_sha256,
        c.dat_sha256});
}

bool PgQueue::remove_circuit(const std::string& name) {
  Result r = exec("remove_circuit",
                  "WITH d AS (DELETE FROM zkfarm_circuits WHERE name = $1 RETURNING 1) "
                  "SELECT count(*), pg_notify('zkfarm', 'circuit') FROM d",
                  {name});
  return r.u64(0, 0) > 0;
}

std::vector<CircuitRecord> PgQueue::circuits() {
  Result r = exec("circuits",
                  "SELECT name, kind, c.generator, zkey_sha256, zkey_source, source, owner_uid, added_ms, n_vars, "
                  "n_public, exe_sha256, dat_sha256, coalesce(g.inputs, '') FROM zkfarm_circuits c "
                  "LEFT JOIN zkfarm_generator_inputs g ON g.generator = c.generator ORDER BY name");
  std::vector<CircuitRecord> out;
  for (int i = 0; i < r.rows(); ++i) {
    CircuitRecord c;
    c.name = r.text(i, 0);
    c.kind = r.text(i, 1);
    c.generator = r.text(i, 2);
    c.zkey_sha256 = r.text(i, 3);
    c.zkey_source = r.text(i, 4);
    c.source = r.text(i, 5);
    c.owner_uid = uint32_t(r.u64(i, 6));
    c.added_ms = r.i64(i, 7);
    c.n_vars = uint32_t(r.u64(i, 8));
    c.n_public = uint32_t(r.u64(i, 9));
    c.exe_sha256 = r.text(i, 10);
    c.dat_sha256 = r.text(i, 11);
    c.inputs = r.text(i, 12);
    out.push_back(std::move(c));
  }
  return out;
}

bool PgQueue::writable() {
  try {
    exec("probe", "SELECT 1");
    return true;
  } catch (const JournalError&) {
    return false;
  }
}

Changes PgQueue::changes_since(const std::string& since) {
  Changes out;
  out.snapshot = exec("changes", "SELECT pg_current_snapshot()::text").text(0, 0);
  static const std::string cols =
      "SELECT id, priority, zkey_sha256, zkey_source, out_dir, owner_uid, owner_gid, submitted_host, n_public, "
      "slot_bytes, circuit, generator, k, done, attempts, synth_ms, prove_ms, state, error, submitted_ms, started_ms, "
      "finished_ms, files, generator_exe, generator_dat FROM zkfarm_jobs ";
  // Rows of transactions older than the last snapshot's xmin were all visible
  // in it: the index on txid bounds the scan to recent ones.
  Result r = since.empty()
                 ? exec("changes", cols + "WHERE pg_visible_in_snapshot(txid, $1::pg_snapshot) ORDER BY id",
                        {out.snapshot})
                 : exec("changes",
                        cols + "WHERE txid >= pg_snapshot_xmin($2::pg_snapshot) "
                               "AND pg_visible_in_snapshot(txid, $1::pg_snapshot) "
                               "AND NOT pg_visible_in_snapshot(txid, $2::pg_snapshot) ORDER BY id",
                        {out.snapshot, since});
  for (int i = 0; i < r.rows(); ++i) {
    JobRow row;
    Job& j = row.job;
    j.id = r.u64(i, 0);
    j.priority = Priority(std::clamp<int64_t>(r.i64(i, 1), 0, 3));
    j.zkey_sha256 = r.text(i, 2);
    j.zkey_source = r.text(i, 3);
    j.out = r.text(i, 4);
    j.owner_uid = uint32_t(r.u64(i, 5));
    j.owner_gid = uint32_t(r.u64(i, 6));
    row.submitted_host = r.text(i, 7);
    j.n_public = uint32_t(r.u64(i, 8));
    j.slot_bytes = r.u64(i, 9);
    j.circuit = r.text(i, 10);
    j.generator = r.text(i, 11);
    j.parts.resize(size_t(std::min<uint64_t>(r.u64(i, 12), 1u << 20)));
    for (uint32_t k = 0; k < j.parts.size(); ++k) {
      j.parts[k].index = k;
      j.parts[k].state = PartState::kElsewhere;
    }
    j.shared = true;
    j.shared_done = uint32_t(r.u64(i, 13));
    j.shared_attempts = r.u64(i, 14);
    j.shared_synth_ms = r.i64(i, 15);
    j.shared_prove_ms = r.i64(i, 16);
    j.state = parse_job_state(r.text(i, 17)).value_or(JobState::kFailed);
    j.error = r.text(i, 18);
    j.submitted_ms = r.i64(i, 19);
    j.started_ms = r.i64(i, 20);
    j.finished_ms = r.i64(i, 21);
    if (!r.text(i, 22).empty()) j.files_dir = shared_dir_ + "/" + r.text(i, 22);
    j.submitted_host = row.submitted_host;
    j.generator_exe_sha256 = r.text(i, 23);
    j.generator_dat_sha256 = r.text(i, 24);
    j.client_delivery = true;
    out.jobs.push_back(std::move(row));
  }
  return out;
}

ClusterView PgQueue::cluster() {
  ClusterView v;
  Result h = exec("cluster",
                  "SELECT h.host_id, h.version, h.devices, h.state, h.pid, "
                  "extract(epoch from now() - h.heartbeat_at), "
                  "(SELECT count(*) FROM zkfarm_partitions p WHERE p.state = 'leased' AND p.lease_host = h.host_id) "
                  "FROM zkfarm_hosts h ORDER BY h.host_id");
  for (int i = 0; i < h.rows(); ++i) {
    HostRow row;
    row.host_id = h.text(i, 0);
    row.version = h.text(i, 1);
    row.devices = h.text(i, 2);
    row.state = h.text(i, 3);
    row.pid = h.i64(i, 4);
    row.heartbeat_age_s = h.f64(i, 5);
    row.alive = row.state != "stopped" && row.heartbeat_age_s < 3.0 * opt_.lease_seconds;
    row.leases = h.u64(i, 6);
    v.hosts.push_back(std::move(row));
  }
  // Partitions by state: the last sweep's counts (at most a second old).
  Result q = exec("cluster", "SELECT value FROM zkfarm_meta WHERE key = 'counts'");
  if (q.rows()) {
    std::istringstream in(q.text(0, 0));
    in >> v.queued >> v.leased >> v.done >> v.failed;
  }
  Result j = exec("cluster", "SELECT count(*) FROM zkfarm_jobs WHERE state IN ('queued', 'running')");
  v.live_jobs = j.u64(0, 0);
  v.schema = kPgSchemaVersion;
  return v;
}

void PgQueue::deregister() {
  exec("deregister", "UPDATE zkfarm_hosts SET state = 'stopped', heartbeat_at = now() WHERE host_id = $1",
       {opt_.host_id});
}

}  // namespace zkfarm::supervisor
