#pragma once
// The CPU backend: groth16::Prover on a ThreadPool, with the last two keys
// kept prepared (their twiddle tables built, points checked on their curves).
#include <sys/types.h>

#include <list>
#include <memory>

#include "gpu_worker/backend.hpp"

namespace zkfarm::gpu {

class CpuBackend final : public ProveBackend {
 public:
  /// threads: proving threads (0: all cores).
  explicit CpuBackend(unsigned threads, size_t cached_keys = 2);

  std::string name() const override { return "cpu"; }
  const Zkey& load(const std::string& path) override;
  Proof prove(const Zkey& key, const PartitionBuffers& in, const U256& r, const U256& s,
              const std::atomic<bool>* cancel) override;

 private:
  // Identifies a key file's contents: replaced on disk → opened again.
  struct FileId {
    dev_t dev = 0;
    ino_t ino = 0;
    off_t size = 0;
    int64_t mtime_ns = 0;
    bool operator==(const FileId&) const = default;
  };
  struct Entry {
    std::string path;
    FileId id;
    std::unique_ptr<Zkey> key;        // owned here: Prover keeps a reference to it
    std::unique_ptr<Prover> prover;   // destroyed before key (declared after it)
  };
  static FileId file_id(const std::string& path);

  ThreadPool pool_;
  size_t capacity_;
  std::list<Entry> entries_;  // most recently used first
};

}  // namespace zkfarm::gpu
