// ProofChecks (proof_checks.hpp): proofs verified in batches, off the loop.
#include "supervisor/pipeline/proof_checks.hpp"

#include <algorithm>

namespace zkfarm::supervisor {

ProofChecks::ProofChecks(VerifyingKeys& keys, unsigned threads, size_t max_batch)
    : keys_(keys), max_batch_(std::max<size_t>(1, max_batch)) {
  try {
    for (unsigned i = 0; i < std::max(1u, threads); ++i) threads_.emplace_back([this] { run(); });
  } catch (...) {
    {
      std::lock_guard lock(mutex_);
      stop_ = true;
    }
    wake_.notify_all();
    for (auto& t : threads_) t.join();
    throw;
  }
}

ProofChecks::~ProofChecks() {
  {
    std::lock_guard lock(mutex_);
    stop_ = true;
    queue_.clear();
  }
  wake_.notify_all();
  for (auto& t : threads_) t.join();
}

void ProofChecks::submit(Request r) {
  {
    std::lock_guard lock(mutex_);
    queue_.push_back(std::move(r));
  }
  wake_.notify_one();
}

size_t ProofChecks::waiting() const {
  std::lock_guard lock(mutex_);
  return queue_.size();
}

ProofChecks::Counts ProofChecks::counts() const {
  std::lock_guard lock(mutex_);
  return counts_;
}

void ProofChecks::run() {
  for (;;) {
    std::vector<Request> batch;
    bool more = false;
    {
      std::unique_lock lock(mutex_);
      wake_.wait(lock, [&] { return stop_ || !queue_.empty(); });
      if (stop_) return;
      // The oldest request's key, with every request of that key waiting
      // behind it (up to max_batch): the others keep their order.
      const std::string key = queue_.front().key_id;
      for (auto it = queue_.begin(); it != queue_.end() && batch.size() < max_batch_;) {
        if (it->key_id == key) {
          batch.push_back(std::move(*it));
          it = queue_.erase(it);
        } else {
          ++it;
        }
      }
      ++counts_.batches;
      counts_.proofs += batch.size();
      more = !queue_.empty();
    }
    if (more) wake_.notify_one();  // another key waits: another thread may take it
    check(batch);
  }
}

void ProofChecks::check(std::vector<Request>& batch) {
  std::vector<std::string> verdicts(batch.size());
  try {
    std::shared_ptr<const ProofVerifier> vk;
    try {
      vk = keys_.get(batch.front().key_id, batch.front().zkey);
    } catch (const std::exception& e) {
      for (auto& v : verdicts) v = std::string("cannot read the key's verification data: ") + e.what();
    }
    if (vk) {
      std::vector<std::vector<U256>> signals(batch.size());
      std::vector<size_t> at;  // the requests whose signals were read
      for (size_t i = 0; i < batch.size(); ++i) {
        auto s = public_signals_from(std::move(batch[i].public_values), batch[i].public_json, batch[i].n_public);
        if (!s) {
          verdicts[i] = "the partition's public.json cannot be read back";
          continue;
        }
        signals[i] = std::move(*s);
        at.push_back(i);
      }
      std::vector<std::string_view> proofs;
      std::vector<std::span<const U256>> spans;
      for (size_t i : at) {
        proofs.push_back(batch[i].proof);
        spans.push_back(signals[i]);
      }
      const std::vector<std::string> got = vk->check_batch(proofs, spans);
      for (size_t k = 0; k < at.size(); ++k) verdicts[at[k]] = got[k];
    }
  } catch (const std::exception& e) {  // memory, or getrandom failing: nothing passes unverified
    for (auto& v : verdicts) v = std::string("cannot verify: ") + e.what();
  }
  for (size_t i = 0; i < batch.size(); ++i) batch[i].done(std::move(verdicts[i]));
}

}  // namespace zkfarm::supervisor
