#include "supervisor/intake/intake.hpp"

namespace zkfarm::supervisor {

Intake::Intake(const Config& cfg, bool shared)
    : cfg_(cfg),
      shared_(shared),
      submit_pool_(cfg.submit_checks, cfg.submit_queue),
      // Room for every witness of the submits being checked (each job at most 100000).
      copy_pool_(std::make_shared<CheckPool>(cfg.submit_copies, size_t(cfg.submit_checks) * 100000)) {}

SubmitContext Intake::context() const {
  SubmitContext ctx{shared_ ? cfg_.shared_dir : cfg_.state_dir + "/inputs", random_token(), key_hashes_,
                    checked_keys_, copy_pool_, std::nullopt};
  ctx.input_max_bytes = cfg_.input_max_bytes;
  ctx.input_max_signals = cfg_.input_max_signals;
  ctx.input_max_values = cfg_.input_max_values;
  ctx.job_input_max_bytes = cfg_.job_input_max_bytes;
  ctx.shared = shared_;
  return ctx;
}

bool Intake::start(const std::string& identity, const protocol::Submit& req, const Peer& peer, SubmitContext ctx,
                   int64_t now) {
  auto check = submit_pool_.run([req, peer, ctx] { return check_submission(req, peer, ctx); });
  if (!check) return false;
  pending_.push_back({identity, std::move(*check), now + int64_t(cfg_.submit_timeout_ms), ctx.token, false, ctx.cancel});
  return true;
}

std::vector<Intake::Finished> Intake::take_finished(int64_t now,
                                                    const std::function<void(const std::string&)>& on_timeout) {
  std::vector<Finished> out;
  for (auto it = pending_.begin(); it != pending_.end();) {
    if (it->check.wait_for(std::chrono::seconds(0)) != std::future_status::ready) {
      if (!it->answered && now >= it->deadline_ms) {
        // The client hears "refused" now and the check is told to stop; its
        // thread may still be reading, so the entry stays until it ends and
        // then its copies go.
        on_timeout(it->identity);
        it->answered = true;
        it->cancel->store(true);
      }
      ++it;
      continue;
    }
    Finished f{it->identity, {}, it->answered};
    try {
      f.check = it->check.get();
    } catch (const std::exception& e) {
      f.check.error = std::string("cannot accept the job: ") + e.what();
    }
    it = pending_.erase(it);
    out.push_back(std::move(f));
  }
  return out;
}

std::set<std::string> Intake::live_tokens() const {
  std::set<std::string> out(journaling_.begin(), journaling_.end());
  for (const auto& p : pending_) out.insert(p.token);
  return out;
}

}  // namespace zkfarm::supervisor
