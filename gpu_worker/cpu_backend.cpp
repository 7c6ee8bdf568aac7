#include "gpu_worker/cpu_backend.hpp"

#include <sys/stat.h>

namespace zkfarm::gpu {

CpuBackend::CpuBackend(unsigned threads, size_t cached_keys) : pool_(threads), capacity_(cached_keys ? cached_keys : 1) {}

CpuBackend::FileId CpuBackend::file_id(const std::string& path) {
  struct stat st {};
  if (::stat(path.c_str(), &st) != 0) return {};
  return {st.st_dev, st.st_ino, st.st_size, int64_t(st.st_mtim.tv_sec) * 1000000000 + st.st_mtim.tv_nsec};
}

const Zkey& CpuBackend::load(const std::string& path) {
  FileId id = file_id(path);
  for (auto it = entries_.begin(); it != entries_.end(); ++it) {
    if (it->path == path && it->id == id) {
      entries_.splice(entries_.begin(), entries_, it);
      return *entries_.front().key;
    }
  }
  std::erase_if(entries_, [&](const Entry& e) { return e.path == path; });  // a stale version
  Entry e{path, id, std::make_unique<Zkey>(Zkey::open(path)), nullptr};
  e.prover = std::make_unique<Prover>(*e.key, pool_);
  entries_.push_front(std::move(e));
  while (entries_.size() > capacity_) entries_.pop_back();
  return *entries_.front().key;
}

Proof CpuBackend::prove(const Zkey& key, const PartitionBuffers& in, const U256& r, const U256& s,
                        const std::atomic<bool>* cancel) {
  for (auto& e : entries_) {
    if (e.key.get() == &key) return e.prover->prove(in, r, s, pool_, cancel);
  }
  Prover prover(key, pool_);  // a key from elsewhere: prepared for this proof only
  return prover.prove(in, r, s, pool_, cancel);
}

}  // namespace zkfarm::gpu
