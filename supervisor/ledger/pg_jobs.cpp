// The shared queue's jobs, proofs and circuits, its change feed and its
// status (pg_queue.hpp); the statements are in sql/pg_queue.sql.
#include <libpq-fe.h>

#include <algorithm>
#include <fstream>
#include <iterator>
#include <sstream>

#include "supervisor/ledger/pg_result.hpp"
#include "supervisor/ledger/pg_schema.hpp"
#include "sql/pg_queue.sql.hpp"

namespace zkfarm::supervisor {

namespace {

// A job state as the jobs table spells it.
const char* state_text(JobState s) { return job_state_name(s); }

std::optional<JobState> parse_job_state(const std::string& s) {
  for (JobState st : {JobState::kQueued, JobState::kRunning, JobState::kDone, JobState::kFailed, JobState::kCancelled})
    if (s == job_state_name(st)) return st;
  return std::nullopt;
}

}  // namespace

uint64_t PgQueue::add_job(const Job& job) {
  exec("add_job", "BEGIN");
  try {
    // The client hears "accepted" once this commits: flushed to disk first.
    exec("add_job", sql::pg_queue::durable);
    Result r = exec("add_job", sql::pg_queue::insert_job,
                    {std::to_string(int(job.priority)), job.zkey_sha256, job.zkey_source, job.out,
                     std::to_string(job.owner_uid), std::to_string(job.owner_gid), opt_.host_id,
                     std::to_string(job.n_public), std::to_string(job.slot_bytes), job.circuit, generator_name(job.generator),
                     std::to_string(job.parts.size()), std::to_string(job.submitted_ms), relative(job.files_dir),
                     job.generator_exe_sha256, job.generator_dat_sha256, job.generator_graph_sha256,
                     job.generator_graph_slower});
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
      exec("add_job", sql::pg_queue::insert_witness_partitions,
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
      exec("add_job", sql::pg_queue::insert_input_partition,
           {std::to_string(id), std::to_string(k), std::to_string(int(job.priority)), input, p.input_source,
            p.public_json},
           {false, false, false, true, false, false});
    }
    flush();
    exec("add_job", sql::pg_queue::notify_work);
    exec("add_job", "COMMIT");
    return id;
  } catch (const JournalError& e) {
    if (conn_) PQclear(PQexec(conn_, "ROLLBACK"));
    throw;
  }
}

bool PgQueue::sweep(int64_t now_ms) {
  Result gate = exec("sweep", sql::pg_queue::sweep_gate);
  if (!gate.rows()) return false;
  exec("sweep", sql::pg_queue::sweep, {std::to_string(now_ms)});
  return true;
}

void PgQueue::finish_job(uint64_t job, JobState state, const std::string& error, int64_t finished_ms) {
  // The job and every partition not proved end together; hosts holding one
  // hear it at their next renewal (their lease is gone) and drop it.
  const char* part_state = state == JobState::kCancelled ? "cancelled" : "failed";
  exec("finish_job", "BEGIN");
  try {
    exec("finish_job", sql::pg_queue::durable);
    exec("finish_job", sql::pg_queue::finish_job,
         {std::to_string(job), std::string(state_text(state)), error, std::to_string(finished_ms)});
    if (state != JobState::kDone)
      exec("finish_job", sql::pg_queue::end_partitions, {std::to_string(job), std::string(part_state)});
    exec("finish_job", sql::pg_queue::notify_job);
    exec("finish_job", "COMMIT");
  } catch (const JournalError&) {
    if (conn_) PQclear(PQexec(conn_, "ROLLBACK"));
    throw;
  }
}

bool PgQueue::cancel_job(uint64_t job) {
  Result r = exec("cancel", sql::pg_queue::job_live, {std::to_string(job)});
  if (!r.rows()) return false;
  finish_job(job, JobState::kCancelled, "", 0);
  return true;
}

void PgQueue::set_started(uint64_t job, int64_t started_ms) {
  exec("set_started", sql::pg_queue::set_started, {std::to_string(job), std::to_string(started_ms)});
}

std::optional<JournaledProof> PgQueue::proof(uint64_t job, uint32_t index) {
  Result r = exec("proof", sql::pg_queue::proof, {std::to_string(job), std::to_string(index)});
  if (!r.rows()) return std::nullopt;
  auto ms = [&r](int col) { return r.null(0, col) ? std::nullopt : std::optional<int64_t>(r.i64(0, col)); };
  return JournaledProof{r.bytes(0, 0), r.text(0, 1), {ms(2), ms(3), ms(4), ms(5), std::nullopt}};
}

size_t PgQueue::prune(int64_t cutoff_ms) {
  // Only on the host holding the maintenance turn (sql/pg_queue.sql).
  Result r = exec("prune", sql::pg_queue::prune, {std::to_string(cutoff_ms), opt_.host_id});
  return r.u64(0, 0);
}

void PgQueue::put_circuit(const CircuitRecord& c) {
  // The generator's inputs first (sql/pg_queue.sql says why).
  if (!c.inputs.empty())
    exec("put_circuit", sql::pg_queue::put_generator_inputs, {c.generator, c.inputs});
  exec("put_circuit", sql::pg_queue::put_circuit,
       {c.name, c.kind, c.generator, c.zkey_sha256, c.zkey_source, c.source, std::to_string(c.owner_uid),
        std::to_string(c.added_ms), std::to_string(c.n_vars), std::to_string(c.n_public), c.exe_sha256,
        c.dat_sha256, c.graph_file_sha256, c.graph_slower});
}

bool PgQueue::remove_circuit(const std::string& name) {
  Result r = exec("remove_circuit", sql::pg_queue::remove_circuit, {name});
  return r.u64(0, 0) > 0;
}

std::vector<CircuitRecord> PgQueue::circuits() {
  Result r = exec("circuits", sql::pg_queue::circuits);
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
    c.graph_file_sha256 = r.text(i, 13);
    c.graph_slower = r.text(i, 14);
    out.push_back(std::move(c));
  }
  return out;
}

Changes PgQueue::changes_since(const std::string& since) {
  Changes out;
  out.snapshot = exec("changes", sql::pg_queue::snapshot).text(0, 0);
  Result r = since.empty() ? exec("changes", sql::pg_queue::all_jobs, {out.snapshot})
                           : exec("changes", sql::pg_queue::changed_jobs, {out.snapshot, since});
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
    j.generator_graph_sha256 = r.text(i, 25);
    j.generator_graph_slower = r.text(i, 26);
    j.client_delivery = true;
    out.jobs.push_back(std::move(row));
  }
  return out;
}

ClusterView PgQueue::cluster() {
  ClusterView v;
  Result h = exec("cluster", sql::pg_queue::hosts);
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
  Result q = exec("cluster", sql::pg_queue::counts);
  if (q.rows()) {
    std::istringstream in(q.text(0, 0));
    in >> v.queued >> v.leased >> v.done >> v.failed;
  }
  Result j = exec("cluster", sql::pg_queue::live_jobs);
  v.live_jobs = j.u64(0, 0);
  v.schema = kPgSchemaVersion;
  return v;
}

}  // namespace zkfarm::supervisor
