// ClusterMirror (cluster_mirror.hpp): this host's side of a shared queue.
#include <algorithm>
#include <filesystem>

#include <set>
#include <thread>

#include "supervisor/clock.hpp"
#include "supervisor/cluster/cluster_mirror.hpp"

namespace zkfarm::supervisor {

using nlohmann::json;

namespace {
constexpr int64_t kSyncMs = 1000;      // the mirror's poll (NOTIFY makes it sooner)
constexpr int64_t kViewMs = 3000;      // hosts and counts for status
constexpr int64_t kCircuitsMs = 5000;  // the circuits table (NOTIFY 'circuit' makes it sooner)
constexpr int64_t kHostFaultPauseMs = 30000;  // no claims after this host's shared mount failed
}  // namespace

ClusterMirror::ClusterMirror(const Config& cfg, std::shared_ptr<spdlog::logger> log, std::string where,
                             JournalLane& journal, LoopInbox& inbox, JobTable& jobs, const WorkerTable& workers,
                             const Lifecycle& lifecycle, Pipeline& pipeline, CircuitRegistry& circuits,
                             const Intake& intake, EventBus& bus)
    : cfg_(cfg),
      log_(std::move(log)),
      where_(std::move(where)),
      journal_(journal),
      inbox_(inbox),
      jobs_(jobs),
      workers_(workers),
      lifecycle_(lifecycle),
      pipeline_(pipeline),
      circuits_(circuits),
      intake_(intake),
      bus_(bus) {
  prep_pool_ = std::make_unique<CheckPool>(2, 1024);
  listener_ = std::make_unique<PgListener>(cfg_.queue_url, [this](const std::string& payload) {
    if (payload == "circuit" || payload == "connected") notified_.circuits = true;
    notified_.any = true;
    inbox_.post([] {});  // wakes the loop's poll
  });
  bus_.on<LedgerReach>([this](const LedgerReach& e) { reached(e.reached, e.why); });
  bus_.on<ClaimsToHandBack>([this](const ClaimsToHandBack& e) { release_queued_claims(e.why); });
  bus_.on<SharedProofVerified>([this](const SharedProofVerified& e) { store_proof(e.ref, e.rec); });
}

void ClusterMirror::leave() {
  std::vector<uint64_t> left;
  for (const auto& [ref, token] : jobs_.leases()) left.push_back(token);
  on_queue([this, left](Ledger&, SharedQueue& queue) {
    try {
      if (!left.empty()) queue.release(left);
      queue.deregister();
    } catch (const std::exception& e) {
      inbox_.post([this, what = std::string(e.what())] { log_->warn("queue: at exit: {}", what); });
    }
  });
  listener_.reset();
}

void ClusterMirror::on_queue(std::function<void(Ledger&, SharedQueue&)> task) {
  journal_.post([task = std::move(task)](Ledger& ledger) { task(ledger, *ledger.queue()); });
}

void ClusterMirror::release_quietly(uint64_t token) {
  on_queue([this, token](Ledger&, SharedQueue& queue) {
    try {
      queue.release({token});
    } catch (const std::exception&) {
    }
  });
}

ClaimDirs ClusterMirror::claim_dirs() const {
  return {cfg_.shared_dir, cfg_.state_dir + "/inputs/keys", cfg_.state_dir + "/inputs/claims"};
}

void ClusterMirror::reached(bool ok, const std::string& why) {
  if (ok) {
    if (!reach_.reachable) log_->info("queue: reachable again ({})", where_);
    reach_.reachable = true;
    reach_.fault.clear();
    return;
  }
  if (reach_.reachable) {
    log_->error("queue: {}; holding on to the work this host has, claiming nothing until it answers", why);
    reach_.since_wall_ms = wall_ms();
  }
  reach_.reachable = false;
  reach_.fault = why;
}

void ClusterMirror::tick() {
  const int64_t now = steady_ms();
  const bool woken = notified_.any.exchange(false);
  const int64_t lease_ms = int64_t(cfg_.lease_seconds) * 1000;

  // sync: the mirror follows the queue's job rows.
  if (!sync_.in_flight && (woken || now >= sync_.next_ms)) {
    sync_.in_flight = true;
    sync_.next_ms = now + kSyncMs;
    // Circuits: added or removed on any host (NOTIFY 'circuit'), else every few seconds.
    const bool circuits = notified_.circuits.exchange(false) || now >= feed_.next_circuits_ms;
    if (circuits) feed_.next_circuits_ms = now + kCircuitsMs;
    on_queue([this, since = feed_.cursor, wall = wall_ms(), circuits](Ledger& ledger, SharedQueue& queue) {
      try {
        queue.sweep(wall);  // progress of every job, once a second over all hosts
        Changes c = queue.changes_since(since);
        std::optional<std::vector<CircuitRecord>> cs;
        if (circuits) cs = ledger.circuits();
        inbox_.post([this, c = std::move(c), cs = std::move(cs)]() mutable {
          sync_.in_flight = false;
          reached(true, "");
          apply_changes(std::move(c));
          if (cs) circuits_.replace_all(std::move(*cs));
        });
      } catch (const std::exception& e) {
        inbox_.post([this, what = std::string(e.what())] {
          sync_.in_flight = false;
          reached(false, what);
        });
      }
    });
  }

  // renew: the leases held, with this host's heartbeat.
  if (!renew_.in_flight && now >= renew_.next_ms) {
    renew_.in_flight = true;
    renew_.next_ms = now + std::max<int64_t>(lease_ms / 3, 1000);
    std::vector<uint64_t> tokens;
    for (const auto& [ref, token] : jobs_.leases()) tokens.push_back(token);
    const std::string state = lifecycle_.run_state();
    on_queue([this, tokens, state, sent = now](Ledger&, SharedQueue& queue) {
      try {
        std::vector<uint64_t> held = queue.renew(tokens, state);
        inbox_.post([this, tokens, held = std::move(held), sent] {
          renew_.in_flight = false;
          reached(true, "");
          on_renewed(tokens, held, sent);
        });
      } catch (const std::exception& e) {
        inbox_.post([this, what = std::string(e.what())] {
          renew_.in_flight = false;
          reached(false, what);
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
  if (reach_.reachable && !expire_.in_flight && now >= expire_.next_ms) {
    expire_.in_flight = true;
    expire_.next_ms = now + std::max<int64_t>(lease_ms / 2, 1000);
    on_queue([this](Ledger&, SharedQueue& queue) {
      try {
        const size_t n = queue.expire_leases();
        inbox_.post([this, n] {
          expire_.in_flight = false;
          if (n) log_->warn("queue: {} expired leases went back to the queue (or failed: max_attempts)", n);
        });
      } catch (const std::exception& e) {
        inbox_.post([this, what = std::string(e.what())] {
          expire_.in_flight = false;
          reached(false, what);
        });
      }
    });
  }

  // claim: while there is room for more, this host asks for work. Room: every
  // synthesis worker busy and one more queued each, every GPU worker's queue.
  PerKind<size_t> count{};
  for (const auto& [id, w] : workers_.all()) ++count[size_t(w.kind)];
  const size_t target = 2 * count[size_t(WorkerKind::kSynth)] + count[size_t(WorkerKind::kGpu)] * cfg_.gpu_queue_depth;
  const size_t held = jobs_.leases().size() + claim_.preparing;
  const bool may_claim = feed_.synced && reach_.reachable && !lifecycle_.stopping() && !lifecycle_.draining() && journal_.intake_fault().empty() &&
                         now >= claim_.paused_until_ms && workers_.ready() > 0;
  if (may_claim && !claim_.in_flight && held < target && (woken || now >= claim_.next_ms)) {
    claim_.in_flight = true;
    const unsigned n = unsigned(target - held);
    on_queue([this, n](Ledger&, SharedQueue& queue) {
      try {
        auto claims = queue.claim(n);
        inbox_.post([this, claims = std::move(claims)]() mutable {
          claim_.in_flight = false;
          reached(true, "");
          // Nothing there: ask again after the poll interval (a NOTIFY sooner).
          claim_.next_ms = claims.empty() ? steady_ms() + cfg_.claim_poll_ms : 0;
          on_claimed(std::move(claims));
        });
      } catch (const std::exception& e) {
        inbox_.post([this, what = std::string(e.what())] {
          claim_.in_flight = false;
          claim_.next_ms = steady_ms() + cfg_.claim_poll_ms;
          reached(false, what);
        });
      }
    });
  }

  // view: hosts and counts for status.
  if (!view_step_.in_flight && now >= view_step_.next_ms) {
    view_step_.in_flight = true;
    view_step_.next_ms = now + kViewMs;
    on_queue([this](Ledger&, SharedQueue& queue) {
      try {
        ClusterView v = queue.cluster();
        inbox_.post([this, v = std::move(v)]() mutable {
          view_step_.in_flight = false;
          view_.rows = std::move(v);
          view_.wall_ms = wall_ms();
        });
      } catch (const std::exception& e) {
        inbox_.post([this, what = std::string(e.what())] {
          view_step_.in_flight = false;
          reached(false, what);
        });
      }
    });
  }
}

void ClusterMirror::apply_changes(Changes changes) {
  if (changes.snapshot.empty()) return;
  feed_.cursor = std::move(changes.snapshot);
  feed_.last_sync_ms = steady_ms();
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
        on_queue([this, id = j.id](Ledger& ledger, SharedQueue&) {
          try {
            ledger.finish_job(id, JobState::kFailed, "the job's row names its key or generator by something that is "
                                                   "not a SHA-256 (written by hand?)", 0);
          } catch (const std::exception& e) {
            inbox_.post([this, what = std::string(e.what())] { reached(false, what); });
          }
        });
      }
      continue;
    }
    // Where this host keeps (or will keep) the job's files.
    j.zkey = cfg_.state_dir + "/inputs/keys/" + j.zkey_sha256 + ".zkey";
    if (!j.generator.empty()) j.generator = circuits_.generator_path(j.generator);
    const Job* before = jobs_.find(j.id);
    const bool was_live = before && !before->terminal();
    std::vector<uint64_t> held;  // this host's leases on it: their private copies go if it ends
    if (was_live)
      for (const Partition& p : before->parts)
        if (p.lease) held.push_back(p.lease);
    pipeline_.free_slots(jobs_.mirror(j));
    const Job* after = jobs_.find(j.id);
    if (was_live && after && after->terminal()) {
      // Ended by the queue: a worker still on one of its partitions stops at
      // its next stage boundary; the answer is then dropped. A worker that
      // has the copy open keeps reading it; housekeeping would remove the
      // copies too, but only at its next pass.
      pipeline_.abort_in_flight(j.id);
      for (uint64_t token : held) remove_claim_files(claim_dirs(), token);
      bus_.emit(JobEnded{*after});
      log_->info("job {}: {} (in the queue){}", j.id, job_state_name(after->state),
                 after->error.empty() ? "" : ": " + after->error);
    }
  }
  if (!feed_.synced) {
    feed_.synced = true;
    log_->info("queue: {} jobs mirrored from {}", jobs_.all().size(), where_);
  }
}

void ClusterMirror::on_claimed(std::vector<ClaimedPartition> claims) {
  for (ClaimedPartition& c : claims) {
    const Job* job = jobs_.find(c.lease.job);
    if (!job) {
      // Claimed before this host mirrored its job (the sync runs every
      // second), or a job this host cannot mirror: give it back, sync, and
      // claim again only after a pause (never a claim/release spin).
      release_quietly(c.lease.token);
      sync_.next_ms = 0;
      claim_.paused_until_ms = std::max(claim_.paused_until_ms, steady_ms() + 1000);
      continue;
    }
    ++claim_.preparing;
    GeneratorFiles gen;
    if (job->inputs())
      gen = {job->generator, job->generator_exe_sha256, job->generator_dat_sha256, job->generator_graph_sha256,
             job->generator_graph_slower};
    const bool queued = prep_pool_->post([this, c, sha = job->zkey_sha256, dirs = claim_dirs(), keys = intake_.checked_keys(), gen] {
      PreparedClaim p = prepare_claim(c, sha, dirs, *keys, gen);
      inbox_.post([this, p = std::move(p)]() mutable { on_prepared(std::move(p)); });
    });
    if (!queued) {
      --claim_.preparing;
      release_quietly(c.lease.token);
    }
  }
}

void ClusterMirror::on_prepared(PreparedClaim p) {
  --claim_.preparing;
  const Lease& l = p.claim.lease;
  const PartRef ref{l.job, l.index};
  if (!p.error.empty()) {
    log_->error("job {} partition {}: cannot make it ready on this host: {}", ref.job, ref.index, p.error);
    remove_claim_files(claim_dirs(), l.token);
    if (p.host_fault) claim_.paused_until_ms = steady_ms() + kHostFaultPauseMs;
    on_queue([this, l, error = p.error, host = p.host_fault](Ledger&, SharedQueue& queue) {
      try {
        if (host) queue.release({l.token});  // this host's fault: not counted against the partition
        else queue.give_back(l.token, error);
      } catch (const std::exception&) {
      }
    });
    return;
  }
  if (p.key.vk) pipeline_.keys().remember(p.zkey_sha256, p.key.vk);
  const int64_t until = steady_ms() + int64_t(cfg_.lease_seconds) * 1000 - 1000;  // a second's margin for the claim's trip
  if (!jobs_.hold(ref, l.token, until, p.wtns, p.input, p.claim.input_name, std::move(p.public_json),
                  std::move(p.public_values), steady_ms())) {
    // Its job ended meanwhile (or the partition is no longer ours to hold).
    remove_claim_files(claim_dirs(), l.token);
    release_quietly(l.token);
    return;
  }
  log_->debug("job {} partition {}: claimed (lease {}, claim {})", ref.job, ref.index, l.token, l.attempts);
}

void ClusterMirror::on_renewed(const std::vector<uint64_t>& sent, const std::vector<uint64_t>& held, int64_t sent_ms) {
  jobs_.renewed(held, sent_ms + int64_t(cfg_.lease_seconds) * 1000);
  std::set<uint64_t> kept(held.begin(), held.end());
  for (const auto& [ref, token] : jobs_.leases()) {
    // Only what was sent can be missing from the answer (a lease claimed
    // since is renewed next time).
    if (kept.count(token) || std::find(sent.begin(), sent.end(), token) == sent.end()) continue;
    drop_lease(ref, "the queue did not renew its lease (expired, taken over, or its job ended)");
  }
}

void ClusterMirror::drop_lease(const PartRef& ref, const std::string& why) {
  const Partition* p = jobs_.find(ref);
  if (!p || !p->lease) return;
  const uint64_t token = p->lease;
  const bool in_worker = p->state == PartState::kSynthesizing || p->state == PartState::kProving;
  ++counts_.lost;
  log_->warn("job {} partition {}: lease {} dropped: {}{}", ref.job, ref.index, token, why,
             in_worker ? "; its worker is told to stop" : "");
  if (in_worker) pipeline_.abort_partition(ref);
  pipeline_.free_slot(jobs_.lose_lease(ref));
  remove_claim_files(claim_dirs(), token);
}

void ClusterMirror::release_queued_claims(const std::string& why) {
  std::vector<uint64_t> tokens = jobs_.release_queued();
  if (tokens.empty()) return;
  counts_.released += tokens.size();
  for (uint64_t t : tokens) remove_claim_files(claim_dirs(), t);
  log_->info("queue: handing back {} claimed partitions not yet started ({})", tokens.size(), why);
  on_queue([this, tokens](Ledger&, SharedQueue& queue) {
    try {
      queue.release(tokens);
    } catch (const std::exception& e) {
      // Unreachable: they expire after lease_seconds and go back then.
      inbox_.post([this, what = std::string(e.what())] { reached(false, what); });
    }
  });
}

void ClusterMirror::store_proof(const PartRef& ref, ProofRecord rec) {
  on_queue([this, ref, rec](Ledger& ledger, SharedQueue&) {
    CompleteResult r;
    std::string error;
    // A store that cannot reach the queue is tried again (with backoff)
    // while its lease may still be good; past that it would be refused anyway.
    const auto give_up = std::chrono::steady_clock::now() + std::chrono::seconds(cfg_.lease_seconds);
    for (;;) {
      try {
        r = ledger.complete(ref.job, ref.index, rec);
        error.clear();
        break;
      } catch (const JournalError& e) {
        error = e.what();
        if (!e.storage_fault() || journal_.giving_up() || std::chrono::steady_clock::now() > give_up) break;
        inbox_.post([this, error] { reached(false, error); });
        std::this_thread::sleep_for(std::chrono::milliseconds(250));
      }
    }
    inbox_.post([this, ref, r, error, token = rec.lease_token] {
      remove_claim_files(claim_dirs(), token);
      // The lease the proof was made under is over; the partition's lease is
      // dropped only if it is still that one (it may have been claimed again
      // here since, under a new token, which stays held).
      auto drop_if_same_lease = [&] {
        const Partition* p = jobs_.find(ref);
        if (p && p->lease == token) pipeline_.free_slot(jobs_.lose_lease(ref));
      };
      if (!error.empty()) {
        ++counts_.fenced;
        log_->error("job {} partition {}: proof not stored ({}); another host proves it once the lease expires",
                    ref.job, ref.index, error);
        drop_if_same_lease();
        return;
      }
      reached(true, "");
      if (r.stored == ProofStored::kStored) {
        ++counts_.stored;
        jobs_.lease_spent(ref);
        log_->info("job {} partition {}: proof stored in the queue (lease {}){}", ref.job, ref.index, token,
                   r.job_done ? "; the job is done" : "");
        if (r.job_done) notified_.any = true;  // the mirror hears it now
      } else {
        ++counts_.fenced;
        log_->warn("job {} partition {}: proof dropped, {} (lease {})", ref.job, ref.index, r.why, token);
        drop_if_same_lease();
      }
    });
  });
}

nlohmann::json ClusterMirror::status() const {
  json hosts = json::array();
  for (const HostRow& h : view_.rows.hosts)
    hosts.push_back({{"host_id", h.host_id},
                     {"alive", h.alive},
                     {"state", h.state},
                     {"heartbeat_age_s", h.heartbeat_age_s},
                     {"leases", h.leases},
                     {"version", h.version},
                     {"devices", h.devices},
                     {"pid", h.pid}});
  json c = {{"queue", where_},
            {"host_id", cfg_.host_id},
            {"reachable", reach_.reachable},
            {"lease_seconds", cfg_.lease_seconds},
            {"hosts", std::move(hosts)},
            {"partitions", {{"queued", view_.rows.queued},
                            {"leased", view_.rows.leased},
                            {"done", view_.rows.done},
                            {"failed", view_.rows.failed}}},
            {"live_jobs", view_.rows.live_jobs},
            {"held_here", jobs_.leases().size()},
            {"preparing", claim_.preparing},
            {"proofs_stored", counts_.stored},
            {"proofs_dropped", counts_.fenced},
            {"leases_lost", counts_.lost},
            {"leases_released", counts_.released},
            {"view_ms", view_.wall_ms}};
  if (!reach_.reachable) {
    c["fault"] = reach_.fault;
    c["unreachable_since_ms"] = reach_.since_wall_ms;
  }
  return c;
}

}  // namespace zkfarm::supervisor
