#pragma once
// The farm's last gate, off the loop thread: every proof a worker returns is
// verified here before the loop journals or publishes it. A verification
// costs about 1.3 ms on one core for BN254 and 8–20 ms for BLS12-381, so on
// the loop it capped a farm of small proofs (issue 36); here it runs on its
// own threads, and the proofs of one key that wait together are verified in
// one batch (ProofVerifier::check_batch: a random linear combination, split
// down to the bad proof when it fails), 3–4× cheaper a proof at 64.
#include <condition_variable>
#include <cstdint>
#include <deque>
#include <functional>
#include <mutex>
#include <string>
#include <thread>
#include <vector>

#include "groth16/field.hpp"
#include "supervisor/pipeline/verifying_keys.hpp"

namespace zkfarm::supervisor {

/// Threads that verify proofs in batches by key. The verdict of each request
/// comes back through its `done`, on a checking thread (post it to the loop).
class ProofChecks {
 public:
  /// One proof to verify.
  struct Request {
    std::string key_id;  ///< VerifyingKeys::key_id of its job: requests of one key_id are batched
    std::string zkey;    ///< zkfarmd's private copy of the key, read when key_id's data is not kept
    std::string proof;   ///< groth16/proof_codec.hpp's encoding, as the worker sent it
    std::vector<U256> public_values;  ///< its public signals, or empty and…
    std::string public_json;          ///< …its public.json (public_signals_from)
    uint32_t n_public = 0;
    /// Called once with "" (verified) or why not, in words, on a checking
    /// thread. Never called for requests still waiting when the checks end.
    std::function<void(std::string verdict)> done;
  };

  /// What was verified so far (for /metrics): proofs, and the batches they
  /// went in (proofs / batches is the mean batch size).
  struct Counts {
    uint64_t proofs = 0, batches = 0;
  };

  /// Starts `threads` (≥ 1) checking threads over `keys`; a batch holds at
  /// most `max_batch` (≥ 1) proofs. Throws std::system_error when a thread
  /// cannot be made (at start-up).
  ProofChecks(VerifyingKeys& keys, unsigned threads, size_t max_batch);
  /// Lets the running batches finish (their `done` is called) and drops the
  /// waiting ones: their partitions are still in flight in the journal, so a
  /// restart proves them again.
  ~ProofChecks();
  ProofChecks(const ProofChecks&) = delete;
  ProofChecks& operator=(const ProofChecks&) = delete;

  /// Queues `r` (never blocks, never refuses: what waits is bounded by the
  /// partitions in flight, each of which holds a slot of the arena).
  void submit(Request r);
  /// Requests waiting, not yet taken by a thread.
  size_t waiting() const;
  Counts counts() const;

 private:
  void run();
  /// Verifies `batch` (one key) and calls each request's done.
  void check(std::vector<Request>& batch);

  VerifyingKeys& keys_;
  const size_t max_batch_;
  mutable std::mutex mutex_;
  std::condition_variable wake_;
  std::deque<Request> queue_;
  Counts counts_;
  bool stop_ = false;
  std::vector<std::thread> threads_;
};

}  // namespace zkfarm::supervisor
