// The shared queue's claims and leases (pg_queue.hpp, docs/cluster.md):
// claim, store under a lease, renew, hand back, expire; the statements are
// in sql/pg_queue.sql.
#include <libpq-fe.h>

#include "supervisor/ledger/pg_result.hpp"
#include "sql/pg_queue.sql.hpp"

namespace zkfarm::supervisor {

namespace {

// PostgreSQL's array literal of integers: {1,2,3}.
std::string int_array(const std::vector<uint64_t>& v) {
  std::string s = "{";
  for (size_t i = 0; i < v.size(); ++i) s += (i ? "," : "") + std::to_string(v[i]);
  return s + "}";
}

}  // namespace

std::vector<ClaimedPartition> PgQueue::claim(unsigned n) {
  if (n == 0) return {};
  Result r = exec("claim", sql::pg_queue::claim,
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
  // One statement (sql/pg_queue.sql says how): stored only under the
  // current, unexpired lease; the job ends with its last proof.
  Result r = exec("complete", sql::pg_queue::complete,
                  {std::to_string(job), std::to_string(index), std::to_string(proof.lease_token), proof.proof,
                   opt_.host_id, proof.public_json, std::to_string(proof.proved_ms), std::to_string(proof.synth_ms),
                   std::to_string(proof.prove_ms), std::to_string(proof.queue_ms), std::to_string(proof.verify_ms)},
                  {false, false, false, true, false, false, false, false, false, false, false});
  CompleteResult out;
  if (r.u64(0, 0) == 1) {
    out.stored = ProofStored::kStored;
    out.job_done = !r.null(0, 1) && r.text(0, 1) == "done";
    return out;
  }
  Result why = exec("complete", sql::pg_queue::why_not_stored, {std::to_string(job), std::to_string(index)});
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

std::vector<uint64_t> PgQueue::renew(const std::vector<uint64_t>& tokens, const std::string& state) {
  Result r = exec("renew", sql::pg_queue::renew,
                  {int_array(tokens), opt_.host_id, std::to_string(opt_.lease_seconds), state});
  std::vector<uint64_t> held;
  for (int i = 0; i < r.rows(); ++i) held.push_back(r.u64(i, 0));
  return held;
}

size_t PgQueue::release(const std::vector<uint64_t>& tokens) {
  if (tokens.empty()) return 0;
  Result r = exec("release", sql::pg_queue::release, {int_array(tokens), opt_.host_id});
  return r.u64(0, 0);
}

bool PgQueue::give_back(uint64_t token, const std::string& error) {
  Result r = exec("give_back", sql::pg_queue::give_back,
                  {std::to_string(token), opt_.host_id, error.substr(0, 2000)});
  return r.u64(0, 0) > 0;
}

size_t PgQueue::expire_leases() {
  // Only on the host holding the maintenance turn (taken or kept by the same
  // statement); elsewhere it returns no rows and changes nothing.
  Result r = exec("expire", sql::pg_queue::expire_leases,
                  {std::to_string(opt_.max_attempts), opt_.host_id, std::to_string(opt_.lease_seconds)});
  for (int i = 0; i < r.rows(); ++i) {
    if (r.text(i, 2) != "failed") continue;
    const std::string error = "partition " + r.text(i, 1) + ": claimed " + std::to_string(opt_.max_attempts) +
                              " times without a proof (max_attempts); last: " + r.text(i, 3);
    finish_job(r.u64(i, 0), JobState::kFailed, error, 0);
  }
  return size_t(r.rows());
}

bool PgQueue::fail_partition(uint64_t job, uint32_t index, uint64_t token, const std::string& error) {
  Result r = exec("fail_partition", sql::pg_queue::fail_partition,
                  {std::to_string(job), std::to_string(index), std::to_string(token), error});
  if (!r.rows()) return false;
  finish_job(job, JobState::kFailed, error, 0);
  return true;
}

}  // namespace zkfarm::supervisor
