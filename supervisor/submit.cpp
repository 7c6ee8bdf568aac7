// Accepting a job. Its key and every witness are opened and checked against
// each other before anything is accepted (a bad file refuses the whole job,
// naming the file). That can take seconds for a large key, so it runs on a
// thread of its own while the loop keeps serving status and heartbeats; the
// loop then journals the job (durable before the client hears its id) and
// answers.
#include <filesystem>

#include "groth16/errors.hpp"
#include "groth16/proof_json.hpp"
#include "groth16/prover.hpp"

#include <cstring>
#include "protocol/messages.hpp"
#include "supervisor/supervisor.hpp"

namespace zkfarm::supervisor {

using nlohmann::json;

namespace {

// Runs on its own thread: reads only `req` and the files it names.
SubmitCheck check_submission(const json& req) {
  SubmitCheck out;
  try {
    Job job;
    job.zkey = protocol::get_str(req, "zkey");
    job.out = protocol::get_str(req, "out");
    auto prio = parse_priority(protocol::find_str(req, "priority").value_or("normal"));
    if (!prio) return {std::nullopt, "priority must be low, normal, high or critical"};
    job.priority = *prio;
    if (!req.contains("wtns") || !req["wtns"].is_array() || req["wtns"].empty())
      return {std::nullopt, "a job needs at least one witness"};
    for (const auto& p : {job.zkey, job.out})
      if (p.empty() || p[0] != '/') return {std::nullopt, "paths must be absolute: " + p};
    Zkey key = Zkey::open(job.zkey);
    for (const auto& w : req["wtns"]) {
      if (!w.is_string()) return {std::nullopt, "wtns must be a list of paths"};
      std::string path = w.get<std::string>();
      if (path.empty() || path[0] != '/') return {std::nullopt, "paths must be absolute: " + path};
      Wtns wtns = Wtns::open(path);
      check_witness_matches(key, wtns);
      Partition p;
      p.wtns = path;
      // public.json now, while the witness is open: the proof's arrival then
      // needs no file, and a witness removed after synthesis costs nothing.
      std::vector<U256> pub(size_t(key.n_public) + 1);
      std::memcpy(pub.data(), wtns.values.data(), pub.size() * 32);
      p.public_json = public_to_json(pub.data(), key.n_public);
      job.parts.push_back(p);
    }
    job.slot_bytes = PartitionBuffers::bytes_for(key);
    job.n_public = key.n_public;
    std::error_code ec;
    std::filesystem::create_directories(job.out, ec);
    if (ec) return {std::nullopt, "cannot create output folder " + job.out + ": " + ec.message()};
    out.job = std::move(job);
  } catch (const InputError& e) {
    out.error = e.what();
  } catch (const protocol::ProtocolError& e) {
    out.error = std::string("bad request: ") + e.what();
  } catch (const std::exception& e) {
    out.error = std::string("cannot check the job: ") + e.what();
  }
  return out;
}

}  // namespace

void Supervisor::start_submit(const std::string& identity, const json& req) {
  if (stopping_) {
    send_reply(identity, {{"ok", false}, {"error", "zkfarmd is draining: not accepting jobs"}});
    return;
  }
  pending_submits_.push_back({identity, std::async(std::launch::async, check_submission, req)});
}

void Supervisor::finish_submits() {
  for (auto it = pending_submits_.begin(); it != pending_submits_.end();) {
    if (it->check.wait_for(std::chrono::seconds(0)) != std::future_status::ready) {
      ++it;
      continue;
    }
    SubmitCheck c = it->check.get();
    const std::string identity = it->identity;
    it = pending_submits_.erase(it);
    if (!c.job) {
      send_reply(identity, {{"ok", false}, {"error", c.error}});
      continue;
    }
    Job& job = *c.job;
    if (stopping_) {
      send_reply(identity, {{"ok", false}, {"error", "zkfarmd is draining: not accepting jobs"}});
      continue;
    }
    if (job.slot_bytes > slots_.capacity()) {
      send_reply(identity, {{"ok", false},
                            {"error", job.zkey + ": a partition of this key needs " + std::to_string(job.slot_bytes) +
                                          " bytes of arena, the arena has " + std::to_string(slots_.capacity()) +
                                          " (raise arena_mib)"}});
      continue;
    }
    job.submitted_ms = wall_ms();
    try {
      job.id = journal_.add_job(job);  // durable before the client hears "accepted"
    } catch (const JournalError& e) {
      log_->error("submit refused: {}", e.what());
      send_reply(identity, {{"ok", false}, {"error", std::string("cannot journal the job: ") + e.what()}});
      continue;
    }
    const size_t k = job.parts.size();
    const std::string prio = priority_name(job.priority);
    const uint64_t id = jobs_.add(std::move(job));
    ++metrics_.jobs_accepted;
    log_->info("job {}: accepted, {} partitions, priority {}", id, k, prio);
    send_reply(identity, {{"ok", true}, {"job", id}});
  }
}

}  // namespace zkfarm::supervisor
