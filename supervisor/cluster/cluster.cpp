// A host of a shared queue (docs/cluster.md). With queue_url set, the
// ledger is a PostgreSQL queue several zkfarmd share, and each pass of the
// loop runs cluster_tick():
//   sync    the job rows that changed (Ledger::changes_since) → the mirror
//           in the job table: every host shows every job, and ends its own
//           work on a job another host failed or a client cancelled;
//   renew   every third of lease_seconds: the leases this host holds, with
//           its heartbeat; a lease not renewed is dropped here;
//   expire  every half lease: expired leases of any host go back (or fail),
//           done by the one host holding the maintenance turn (docs/cluster.md);
//   claim   while this host has room: partitions into leases, then their
//           files are made ready (claim_prep.hpp) and they join the local
//           queue, where dispatch() takes them as on one host;
//   view    every few seconds: hosts and queue counts for status.
// A NOTIFY (PgListener) makes sync and claim run at once. Every queue call
// runs on the journal thread; while the queue cannot be reached, held work
// goes on, nothing is claimed, and status says so. Times: monotonic.
#include <algorithm>
#include <filesystem>

#include <set>
#include <thread>

#include "protocol/worker_messages.hpp"
#include "supervisor/supervisor.hpp"

namespace zkfarm::supervisor {

using nlohmann::json;

namespace {
constexpr int64_t kSyncMs = 1000;      // the mirror's poll (NOTIFY makes it sooner)
constexpr int64_t kViewMs = 3000;      // hosts and counts for status
constexpr int64_t kCircuitsMs = 5000;  // the circuits table (NOTIFY 'circuit' makes it sooner)
constexpr int64_t kHostFaultPauseMs = 30000;  // no claims after this host's shared mount failed
}  // namespace

ClaimDirs Supervisor::claim_dirs() const {
  return {cfg_.shared_dir, cfg_.state_dir + "/inputs/keys", cfg_.state_dir + "/inputs/claims"};
}

void Supervisor::queue_call_failed(const std::string& what) {
  if (cluster_.reachable) {
    log_->error("queue: {}; holding on to the work this host has, claiming nothing until it answers", what);
    cluster_.unreachable_since_ms = wall_ms();
  }
  cluster_.reachable = false;
  cluster_.fault = what;
}

void Supervisor::queue_call_worked() {
  if (!cluster_.reachable) log_->info("queue: reachable again ({})", ledger_->where());
  cluster_.reachable = true;
  cluster_.fault.clear();
}

void Supervisor::cluster_tick() {
  if (!ledger_->shared()) return;
  const int64_t now = now_ms();
  const bool woken = cluster_.woken.exchange(false);
  const int64_t lease_ms = int64_t(cfg_.lease_seconds) * 1000;

  // sync: the mirror follows the queue's job rows.
  if (!cluster_.sync_in_flight && (woken || now >= cluster_.next_sync_ms)) {
    cluster_.sync_in_flight = true;
    cluster_.next_sync_ms = now + kSyncMs;
    // Circuits: added or removed on any host (NOTIFY 'circuit'), else every few seconds.
    const bool circuits = cluster_.circuits_changed.exchange(false) || now >= cluster_.next_circuits_ms;
    if (circuits) cluster_.next_circuits_ms = now + kCircuitsMs;
    journal_->post([this, since = cluster_.snapshot, wall = wall_ms(), circuits] {
      try {
        ledger_->sweep(wall);  // progress of every job, once a second over all hosts
        Changes c = ledger_->changes_since(since);
        std::optional<std::vector<CircuitRecord>> cs;
        if (circuits) cs = ledger_->circuits();
        inbox_.post([this, c = std::move(c), cs = std::move(cs)]() mutable {
          cluster_.sync_in_flight = false;
          queue_call_worked();
          apply_changes(std::move(c));
          if (cs) circuits_->replace_all(std::move(*cs));
        });
      } catch (const std::exception& e) {
        inbox_.post([this, what = std::string(e.what())] {
          cluster_.sync_in_flight = false;
          queue_call_failed(what);
        });
      }
    });
  }

  // renew: the leases held, with this host's heartbeat.
  if (!cluster_.renew_in_flight && now >= cluster_.next_renew_ms) {
    cluster_.renew_in_flight = true;
    cluster_.next_renew_ms = now + std::max<int64_t>(lease_ms / 3, 1000);
    std::vector<uint64_t> tokens;
    for (const auto& [ref, token] : jobs_.leases()) tokens.push_back(token);
    const std::string state = lifecycle_->run_state();
    journal_->post([this, tokens, state, sent = now] {
      try {
        std::vector<uint64_t> held = ledger_->renew(tokens, state);
        inbox_.post([this, tokens, held = std::move(held), sent] {
          cluster_.renew_in_flight = false;
          queue_call_worked();
          on_renewed(tokens, held, sent);
        });
      } catch (const std::exception& e) {
        inbox_.post([this, what = std::string(e.what())] {
          cluster_.renew_in_flight = false;
          queue_call_failed(what);
        });
      }
    });
  }

  // Leases this host counts as expired (no renewal reached the queue in a
  // lease's time) are given up here too: what it proves for them would be refused.
  for (const auto& [ref, token] : jobs_.leases()) {
    const Partition* p = jobs_.find(ref);
    if (p && p->lease_until_ms && now > p->lease_until_ms)
      drop_lease(ref, "its lease expired (no renewal reached the queue since " +
                          std::to_string((now - p->lease_until_ms + lease_ms) / 1000) + " s)");
  }

  // expire: the host holding the maintenance turn returns what dead hosts held
  // (the others' passes only check the turn).
  if (cluster_.reachable && !cluster_.expire_in_flight && now >= cluster_.next_expire_ms) {
    cluster_.expire_in_flight = true;
    cluster_.next_expire_ms = now + std::max<int64_t>(lease_ms / 2, 1000);
    journal_->post([this] {
      try {
        const size_t n = ledger_->expire_leases();
        inbox_.post([this, n] {
          cluster_.expire_in_flight = false;
          if (n) log_->warn("queue: {} expired leases went back to the queue (or failed: max_attempts)", n);
        });
      } catch (const std::exception& e) {
        inbox_.post([this, what = std::string(e.what())] {
          cluster_.expire_in_flight = false;
          queue_call_failed(what);
        });
      }
    });
  }

  // claim: while there is room for more, this host asks for work. Room: every
  // synthesis worker busy and one more queued each, every GPU worker's queue.
  size_t synth = 0, gpu = 0;
  for (const auto& [id, w] : workers_->all()) (w.kind == WorkerKind::kSynth ? synth : gpu) += 1;
  const size_t target = 2 * synth + gpu * cfg_.gpu_queue_depth;
  const size_t held = jobs_.leases().size() + cluster_.preparing;
  const bool may_claim = cluster_.synced && cluster_.reachable && !lifecycle_->stopping() && !lifecycle_->draining() && journal_->intake_fault().empty() &&
                         now >= cluster_.claim_paused_until_ms && workers_->ready() > 0;
  if (may_claim && !cluster_.claim_in_flight && held < target && (woken || now >= cluster_.next_claim_ms)) {
    cluster_.claim_in_flight = true;
    const unsigned n = unsigned(target - held);
    journal_->post([this, n] {
      try {
        auto claims = ledger_->claim(n);
        inbox_.post([this, claims = std::move(claims)]() mutable {
          cluster_.claim_in_flight = false;
          queue_call_worked();
          // Nothing there: ask again after the poll interval (a NOTIFY sooner).
          cluster_.next_claim_ms = claims.empty() ? now_ms() + cfg_.claim_poll_ms : 0;
          on_claimed(std::move(claims));
        });
      } catch (const std::exception& e) {
        inbox_.post([this, what = std::string(e.what())] {
          cluster_.claim_in_flight = false;
          cluster_.next_claim_ms = now_ms() + cfg_.claim_poll_ms;
          queue_call_failed(what);
        });
      }
    });
  }

  // view: hosts and counts for status.
  if (!cluster_.view_in_flight && now >= cluster_.next_view_ms) {
    cluster_.view_in_flight = true;
    cluster_.next_view_ms = now + kViewMs;
    journal_->post([this] {
      try {
        ClusterView v = ledger_->cluster();
        inbox_.post([this, v = std::move(v)]() mutable {
          cluster_.view_in_flight = false;
          cluster_.view = std::move(v);
          cluster_.view_wall_ms = wall_ms();
        });
      } catch (const std::exception& e) {
        inbox_.post([this, what = std::string(e.what())] {
          cluster_.view_in_flight = false;
          queue_call_failed(what);
        });
      }
    });
  }
}

void Supervisor::apply_changes(Changes changes) {
  if (changes.snapshot.empty()) return;
  cluster_.snapshot = std::move(changes.snapshot);
  cluster_.last_sync_ms = now_ms();
  for (JobRow& row : changes.jobs) {
    Job& j = row.job;
    // Names from the queue become paths here: only hashes pass (a row
    // written by hand, or by a hostile client of the database, cannot point
    // a path outside this host's state dir).
    const bool plain_generator =
        j.generator.empty() || (j.generator.size() <= 128 &&
                                j.generator.find_first_not_of("0123456789abcdef") == std::string::npos);
    if (!is_sha256(j.zkey_sha256) || !plain_generator) {
      // No host can prove it: fail it in the queue (else hosts would claim
      // and hand back its partitions forever).
      if (!j.terminal()) {
        log_->error("queue: job {} names its key or generator by something that is not a hash; failing it", j.id);
        journal_->post([this, id = j.id] {
          try {
            ledger_->finish_job(id, JobState::kFailed, "the job's row names its key or generator by something that is "
                                                   "not a SHA-256 (written by hand?)", 0);
          } catch (const std::exception& e) {
            inbox_.post([this, what = std::string(e.what())] { queue_call_failed(what); });
          }
        });
      }
      continue;
    }
    // Where this host keeps (or will keep) the job's files.
    j.zkey = cfg_.state_dir + "/inputs/keys/" + j.zkey_sha256 + ".zkey";
    if (!j.generator.empty()) j.generator = circuits_->generator_path(j.generator);
    const Job* before = jobs_.find(j.id);
    const bool was_live = before && !before->terminal();
    free_slots(jobs_.mirror(j));
    const Job* after = jobs_.find(j.id);
    if (was_live && after && after->terminal()) {
      // Ended by the queue: a worker still on one of its partitions stops at
      // its next stage boundary; the answer is then dropped.
      abort_in_flight(j.id);
      count_job_end(*after);
      log_->info("job {}: {} (in the queue){}", j.id, job_state_name(after->state),
                 after->error.empty() ? "" : ": " + after->error);
    }
  }
  if (!cluster_.synced) {
    cluster_.synced = true;
    log_->info("queue: {} jobs mirrored from {}", jobs_.all().size(), ledger_->where());
  }
}

void Supervisor::on_claimed(std::vector<ClaimedPartition> claims) {
  for (ClaimedPartition& c : claims) {
    const Job* job = jobs_.find(c.lease.job);
    if (!job) {
      // Claimed before this host mirrored its job (the sync runs every
      // second), or a job this host cannot mirror: give it back, sync, and
      // claim again only after a pause (never a claim/release spin).
      journal_->post([this, t = c.lease.token] {
        try {
          ledger_->release({t});
        } catch (const std::exception&) {
        }
      });
      cluster_.next_sync_ms = 0;
      cluster_.claim_paused_until_ms = std::max(cluster_.claim_paused_until_ms, now_ms() + 1000);
      continue;
    }
    ++cluster_.preparing;
    GeneratorFiles gen;
    if (job->inputs()) gen = {job->generator, job->generator_exe_sha256, job->generator_dat_sha256};
    const bool queued = cluster_.prep_pool->post([this, c, sha = job->zkey_sha256, dirs = claim_dirs(), keys = intake_->checked_keys(), gen] {
      PreparedClaim p = prepare_claim(c, sha, dirs, *keys, gen);
      inbox_.post([this, p = std::move(p)]() mutable { on_prepared(std::move(p)); });
    });
    if (!queued) {
      --cluster_.preparing;
      journal_->post([this, t = c.lease.token] {
        try {
          ledger_->release({t});
        } catch (const std::exception&) {
        }
      });
    }
  }
}

void Supervisor::on_prepared(PreparedClaim p) {
  --cluster_.preparing;
  const Lease& l = p.claim.lease;
  const PartRef ref{l.job, l.index};
  if (!p.error.empty()) {
    log_->error("job {} partition {}: cannot make it ready on this host: {}", ref.job, ref.index, p.error);
    remove_claim_files(claim_dirs(), l.token);
    if (p.host_fault) cluster_.claim_paused_until_ms = now_ms() + kHostFaultPauseMs;
    journal_->post([this, l, error = p.error, host = p.host_fault] {
      try {
        if (host) ledger_->release({l.token});  // this host's fault: not counted against the partition
        else ledger_->give_back(l.token, error);
      } catch (const std::exception&) {
      }
    });
    return;
  }
  if (p.key.vk) verifying_keys_[p.zkey_sha256] = p.key.vk;
  const int64_t until = now_ms() + int64_t(cfg_.lease_seconds) * 1000 - 1000;  // a second's margin for the claim's trip
  if (!jobs_.hold(ref, l.token, until, p.wtns, p.input, p.claim.input_name, std::move(p.public_json),
                  std::move(p.public_values), now_ms())) {
    // Its job ended meanwhile (or the partition is no longer ours to hold).
    remove_claim_files(claim_dirs(), l.token);
    journal_->post([this, t = l.token] {
      try {
        ledger_->release({t});
      } catch (const std::exception&) {
      }
    });
    return;
  }
  log_->debug("job {} partition {}: claimed (lease {}, claim {})", ref.job, ref.index, l.token, l.attempts);
}

void Supervisor::on_renewed(const std::vector<uint64_t>& sent, const std::vector<uint64_t>& held, int64_t sent_ms) {
  jobs_.renewed(held, sent_ms + int64_t(cfg_.lease_seconds) * 1000);
  std::set<uint64_t> kept(held.begin(), held.end());
  for (const auto& [ref, token] : jobs_.leases()) {
    // Only what was sent can be missing from the answer (a lease claimed
    // since is renewed next time).
    if (kept.count(token) || std::find(sent.begin(), sent.end(), token) == sent.end()) continue;
    drop_lease(ref, "the queue did not renew its lease (expired, taken over, or its job ended)");
  }
}

void Supervisor::drop_lease(const PartRef& ref, const std::string& why) {
  const Partition* p = jobs_.find(ref);
  if (!p || !p->lease) return;
  const uint64_t token = p->lease;
  const bool in_worker = p->state == PartState::kSynthesizing || p->state == PartState::kProving;
  ++cluster_.lost;
  log_->warn("job {} partition {}: lease {} dropped: {}{}", ref.job, ref.index, token, why,
             in_worker ? "; its worker is told to stop" : "");
  if (in_worker) {
    for (auto& [id, w] : workers_->all()) {
      for (const PartRef& r : w.assigned) {
        if (r.job != ref.job || r.index != ref.index || !p->slot) continue;
        send_to_worker(w, protocol::encode(protocol::Abort{{ref.job, ref.index, p->slot->id, p->slot->generation}}));
      }
    }
  }
  free_slot(jobs_.lose_lease(ref));
  remove_claim_files(claim_dirs(), token);
}

void Supervisor::release_queued_claims(const std::string& why) {
  if (!ledger_->shared()) return;
  std::vector<uint64_t> tokens = jobs_.release_queued();
  if (tokens.empty()) return;
  cluster_.released += tokens.size();
  for (uint64_t t : tokens) remove_claim_files(claim_dirs(), t);
  log_->info("queue: handing back {} claimed partitions not yet started ({})", tokens.size(), why);
  journal_->post([this, tokens] {
    try {
      ledger_->release(tokens);
    } catch (const std::exception& e) {
      // Unreachable: they expire after lease_seconds and go back then.
      inbox_.post([this, what = std::string(e.what())] { queue_call_failed(what); });
    }
  });
}

void Supervisor::store_shared_proof(const PartRef& ref, ProofRecord rec) {
  journal_->post([this, ref, rec] {
    CompleteResult r;
    std::string error;
    // A store that cannot reach the queue is tried again (with backoff)
    // while its lease may still be good; past that it would be refused anyway.
    const auto give_up = std::chrono::steady_clock::now() + std::chrono::seconds(cfg_.lease_seconds);
    for (;;) {
      try {
        r = ledger_->complete(ref.job, ref.index, rec);
        error.clear();
        break;
      } catch (const JournalError& e) {
        error = e.what();
        if (!e.storage_fault() || journal_->giving_up() || std::chrono::steady_clock::now() > give_up) break;
        inbox_.post([this, error] { queue_call_failed(error); });
        std::this_thread::sleep_for(std::chrono::milliseconds(250));
      }
    }
    inbox_.post([this, ref, r, error, token = rec.lease_token] {
      remove_claim_files(claim_dirs(), token);
      if (!error.empty()) {
        ++cluster_.fenced;
        log_->error("job {} partition {}: proof not stored ({}); another host proves it once the lease expires",
                    ref.job, ref.index, error);
        free_slot(jobs_.lose_lease(ref));
        return;
      }
      queue_call_worked();
      if (r.stored == ProofStored::kStored) {
        ++cluster_.stored;
        jobs_.lease_spent(ref);
        log_->info("job {} partition {}: proof stored in the queue (lease {}){}", ref.job, ref.index, token,
                   r.job_done ? "; the job is done" : "");
        if (r.job_done) cluster_.woken = true;  // the mirror hears it now
      } else {
        ++cluster_.fenced;
        log_->warn("job {} partition {}: proof dropped, {} (lease {})", ref.job, ref.index, r.why, token);
        free_slot(jobs_.lose_lease(ref));
      }
    });
  });
}

nlohmann::json Supervisor::cluster_status() const {
  if (!ledger_->shared()) return nullptr;
  json hosts = json::array();
  for (const HostRow& h : cluster_.view.hosts)
    hosts.push_back({{"host_id", h.host_id},
                     {"alive", h.alive},
                     {"state", h.state},
                     {"heartbeat_age_s", h.heartbeat_age_s},
                     {"leases", h.leases},
                     {"version", h.version},
                     {"devices", h.devices},
                     {"pid", h.pid}});
  json c = {{"queue", ledger_->where()},
            {"host_id", cfg_.host_id},
            {"reachable", cluster_.reachable},
            {"lease_seconds", cfg_.lease_seconds},
            {"hosts", std::move(hosts)},
            {"partitions", {{"queued", cluster_.view.queued},
                            {"leased", cluster_.view.leased},
                            {"done", cluster_.view.done},
                            {"failed", cluster_.view.failed}}},
            {"live_jobs", cluster_.view.live_jobs},
            {"held_here", jobs_.leases().size()},
            {"preparing", cluster_.preparing},
            {"proofs_stored", cluster_.stored},
            {"proofs_dropped", cluster_.fenced},
            {"leases_lost", cluster_.lost},
            {"leases_released", cluster_.released},
            {"view_ms", cluster_.view_wall_ms}};
  if (!cluster_.reachable) {
    c["fault"] = cluster_.fault;
    c["unreachable_since_ms"] = cluster_.unreachable_since_ms;
  }
  return c;
}

}  // namespace zkfarm::supervisor
