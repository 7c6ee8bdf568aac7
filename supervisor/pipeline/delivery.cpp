// Delivery (delivery.hpp): output files off the loop, and `result` pages.
#include <sys/stat.h>
#include <unistd.h>

#include <algorithm>
#include <chrono>
#include <cstdlib>
#include <cstring>
#include <thread>

#include "files/file_error.hpp"
#include "supervisor/pipeline/pipeline.hpp"
#include "files/fs_credentials.hpp"
#include "files/safe_write.hpp"
#include "groth16/proof_json.hpp"
#include "protocol/messages.hpp"
#include "groth16/proof_codec.hpp"
#include "supervisor/clock.hpp"
#include "supervisor/pipeline/delivery.hpp"

namespace zkfarm::supervisor {

namespace {

// When zkfarmd is not root it cannot take a client's rights; it then writes
// only into folders that client owns (judged on the folder opened, not on a
// second lookup of its path), and never into its own state dir.
std::string unprivileged_refusal(const std::string& out, int dir_fd, const Peer& as, const std::string& state_dir) {
  if (::geteuid() == 0 || as.uid == ::geteuid()) return {};
  if (out == state_dir || out.rfind(state_dir + "/", 0) == 0) return out + ": inside zkfarmd's state dir";
  struct stat st {};
  if (::fstat(dir_fd, &st) != 0) return out + ": cannot stat: " + std::strerror(errno);
  if (st.st_uid != as.uid) return out + ": not owned by uid " + std::to_string(as.uid) + " (zkfarmd runs unprivileged: it writes only into the submitter's own folders)";
  return {};
}

// Writes partition `index`'s public.json and proof.json (from the encoded
// `proof`) into `out` as `as`; with only_missing, a pair already there is left
// alone. `out` is the folder as submit resolved it: it is walked with no
// symlink allowed on the way (files::LinksOnTheWay::kRefuse), so a folder of
// the path swapped for a link since then fails the write instead of moving it.
// When zkfarmd is unprivileged and the folder is missing, it is not created
// (it could not be made as the submitter). Returns "" or the error. Any
// thread: touches nothing of the loop's.
std::string write_result(const std::string& out, const Peer& as, uint32_t index, const std::string& proof,
                         const std::string& public_json, bool only_missing, const std::string& state_dir) {
  const std::string k = std::to_string(index);
  try {
    const bool unprivileged = ::geteuid() != 0 && as.uid != ::geteuid();
    if (unprivileged && ::access(out.c_str(), F_OK) != 0)
      throw files::FileError(out, ENOENT, out + ": does not exist (zkfarmd runs unprivileged and cannot create it as uid " +
                                              std::to_string(as.uid) + ")");
    files::FsCredentials creds(as.uid, as.gid);
    files::UniqueFd dir = files::create_dir_safe(out, 0755, files::LinksOnTheWay::kRefuse);
    if (auto why = unprivileged_refusal(out, dir.get(), as, state_dir); !why.empty())
      throw files::FileError(out, EACCES, why);
    if (only_missing && files::exists_nofollow(dir.get(), out, k + ".proof.json") &&
        files::exists_nofollow(dir.get(), out, k + ".public.json"))
      return {};
    files::write_file_safe(dir.get(), out, k + ".public.json", public_json, 0644);
    files::write_file_safe(dir.get(), out, k + ".proof.json", proof_json_of(proof), 0644);
    return {};
  } catch (const std::exception& e) {
    return e.what();
  }
}

// Partitions a `result` page looks at, at most (it then holds fewer if their
// texts would pass half a frame).
constexpr size_t kResultPageMax = 256;

// A `result` the journal or shared queue could not answer now (a database
// restart, a full disk) says when to ask again; zkfarmctl and zkfarm-api retry.
constexpr int64_t kResultRetryAfterMs = 1000;

// One proved partition of `job`, its proof from this instance or the journal.
struct ToWrite {
  uint32_t index;
  std::string proof, public_json;
  PartitionTiming timing;
};

// Tests only: ZKFARM_TEST_DELIVERY_DELAY_MS makes every output write that
// slow (a disk that cannot keep up), to show that proving does not wait.
int delivery_delay_ms() {
  static const int ms = [] {
    const char* v = std::getenv("ZKFARM_TEST_DELIVERY_DELAY_MS");
    return v ? std::clamp(std::atoi(v), 0, 60000) : 0;
  }();
  return ms;
}

}  // namespace

Delivery::Delivery(const Config& cfg, std::shared_ptr<spdlog::logger> log, JobTable& jobs, JournalLane& journal,
                   LoopInbox& inbox, EventBus& bus)
    : cfg_(cfg), log_(std::move(log)), jobs_(jobs), journal_(journal), inbox_(inbox), bus_(bus) {
  bus_.on<PartitionProved>([this](const PartitionProved& e) { publish(e.job, e.index); });
}

void Delivery::finish() { thread_.finish(); }

size_t Delivery::deliver(Ledger& ledger, const Job& job, const std::string& out, const Peer& as, bool only_missing,
                         std::string* error) {
  size_t written = 0;
  for (const auto& p : job.parts) {
    if (p.state != PartState::kDone) continue;
    std::string proof = p.proof, public_json = p.public_json, e;
    if (proof.empty()) {  // proved by an earlier instance: the journal has it
      if (auto jp = ledger.proof(job.id, p.index)) {
        proof = jp->proof;
        public_json = jp->public_json;
      } else {
        e = "partition " + std::to_string(p.index) + ": no proof in the journal";
      }
    }
    if (e.empty()) e = write_result(out, as, p.index, proof, public_json, only_missing, cfg_.state_dir);
    if (e.empty()) {
      ++written;
    } else {
      log_->error("job {} partition {}: cannot write the result into {}: {}", job.id, p.index, out, e);
      if (error && error->empty()) *error = e;
    }
  }
  return written;
}

void Delivery::publish(const Job& job, uint32_t index) {
  const Partition& p = job.parts.at(index);
  if (job.client_delivery) {  // zkfarmctl writes it, as the submitter: the proof is journaled
    on_published({job.id, index}, "");
    return;
  }
  thread_.post([this, ref = PartRef{job.id, index}, out = job.out, as = Peer{job.owner_uid, job.owner_gid, 0},
                          proof = p.proof, public_json = p.public_json] {
    if (int ms = delivery_delay_ms()) std::this_thread::sleep_for(std::chrono::milliseconds(ms));
    std::string error = write_result(out, as, ref.index, proof, public_json, false, cfg_.state_dir);
    inbox_.post([this, ref, error] { on_published(ref, error); });
  });
}

void Delivery::on_published(const PartRef& ref, const std::string& error) {
  const Job* job = jobs_.find(ref.job);
  if (!job) return;
  std::string why;
  if (!error.empty()) {
    log_->error("job {} partition {}: cannot write the result into {}: {}", ref.job, ref.index, job->out, error);
    why = "partition " + std::to_string(ref.index) + " was proved, but its result cannot be written: " + error +
          "; every proof is kept in the journal (`zkfarmctl result " + std::to_string(ref.job) +
          " --out DIR` writes them elsewhere)";
  }
  if (!jobs_.mark_delivered(ref, steady_ms(), wall_ms(), why)) return;
  bus_.emit(JobEnded{*job});
  if (job->state == JobState::kDone && !job->client_delivery) {
    std::vector<DeliveryTime> times;
    for (const Partition& p : job->parts)
      if (p.delivery_ms) times.push_back({p.index, *p.delivery_ms});
    journal_.record_deliveries(ref.job, std::move(times));
  }
  journal_.finish_job(ref.job, job->state, job->error, job->finished_ms);
  if (job->state == JobState::kFailed)
    log_->error("job {}: failed: {}", ref.job, job->error);
  else if (job->client_delivery)
    log_->info("job {}: done, {} proofs in the journal (the client writes them into {})", ref.job, job->parts.size(),
               job->out);
  else
    log_->info("job {}: done, {} proofs in {}", ref.job, job->parts.size(), job->out);
}

// `zkfarmctl result` (and `wait` for a job the client delivers): the proofs
// of a finished job as proof.json and public.json texts, a page at a time, for
// the client to write with its own rights. This instance's proofs come from
// memory, older ones from the journal on its thread; nothing is written here.
void Delivery::start_result(const std::string& identity, const protocol::Result& req, const Peer& peer, Role role) {
  const uint64_t id = req.job;
  const uint64_t from = req.from;
  const Job* job = jobs_.find(id);
  if (job && role != Role::kAdmin && job->owner_uid != peer.uid) job = nullptr;  // another's job is "no job"
  if (!job) return reply(identity, {{"ok", false}, {"error", "no job " + std::to_string(id) + " in the journal"}});
  if (job->done_count() != job->parts.size())
    return reply(identity, {{"ok", false},
                                 {"error", "job " + std::to_string(id) + " is " + job_state_name(job->state) +
                                               ": not every partition is proved"}});
  if (from >= job->parts.size())
    return reply(identity, {{"ok", false}, {"error", "job " + std::to_string(id) + " has " +
                                                              std::to_string(job->parts.size()) + " partitions"}});
  // A page: as many partitions as fit in half a frame (a public.json grows
  // with the circuit's public signals), at least one.
  auto parts = std::make_shared<std::vector<ToWrite>>();
  for (size_t k = from; k < job->parts.size() && parts->size() < kResultPageMax; ++k)
    // A shared queue's proofs are read from the queue (this host may hold none of them).
    parts->push_back({job->parts[k].index, job->shared ? std::string() : job->parts[k].proof,
                      job->parts[k].public_json, job->parts[k].timing()});
  journal_.post([this, identity, id, parts, total = job->parts.size()](Ledger& ledger) {
    std::string error;
    bool transient = false;  // the journal or queue cannot be reached now: the client asks again
    for (auto& w : *parts) {
      if (!w.proof.empty()) continue;
      try {
        if (auto jp = ledger.proof(id, w.index)) {
          w.proof = jp->proof;
          w.public_json = jp->public_json;
          w.timing = jp->timing;
        }
      } catch (const JournalError& e) {
        if (error.empty()) error = e.what();
        transient = transient || e.storage_fault();
      } catch (const std::exception& e) {
        if (error.empty()) error = e.what();
      }
    }
    nlohmann::json results = nlohmann::json::array();
    size_t bytes = 0;
    // The next page starts after what this one holds (null: this was the last).
    uint64_t next = parts->empty() ? total : parts->back().index + 1;
    for (const auto& w : *parts) {
      if (w.proof.empty()) {
        if (error.empty()) error = "partition " + std::to_string(w.index) + ": no proof in the journal";
        break;
      }
      std::string proof_json = proof_json_of(w.proof);
      const size_t n = proof_json.size() + w.public_json.size() + 256;  // with its keys and timing
      if (!results.empty() && bytes + n > protocol::kMaxFrameBytes / 2) {
        next = w.index;
        break;
      }
      bytes += n;
      results.push_back({{"partition", w.index},
                         {"proof", std::move(proof_json)},
                         {"public", w.public_json},
                         {"timing", w.timing.to_json()}});
    }
    inbox_.post([this, identity, id, results = std::move(results), next, total, error, transient]() mutable {
      if (!error.empty()) {
        nlohmann::json r = {{"ok", false}, {"error", "job " + std::to_string(id) + ": " + error}};
        if (transient) r["retry_after_ms"] = kResultRetryAfterMs;
        return reply(identity, r);
      }
      reply(identity, {{"ok", true},
                            {"job", id},
                            {"partitions", total},
                            {"results", std::move(results)},
                            {"next", next < total ? nlohmann::json(next) : nlohmann::json(nullptr)}});
    });
  });
}

}  // namespace zkfarm::supervisor
