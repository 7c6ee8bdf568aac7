#pragma once
// The last few opened proving keys, most recently used first, each with an
// optional prepared object (the CPU backend's Prover, a GPU backend's resident
// points). Opening a key checks every point coordinate, far too slow to repeat
// per partition. An entry is keyed by path and file identity (device, inode,
// size, mtime): a key replaced on disk under the same path is opened again.
#include <sys/stat.h>

#include <algorithm>
#include <cstdint>
#include <functional>
#include <list>
#include <memory>
#include <string>

#include "groth16/errors.hpp"
#include "groth16/zkey.hpp"

namespace zkfarm {

/// What identifies a file's contents for a cache.
struct FileId {
  dev_t dev = 0;
  ino_t ino = 0;
  off_t size = 0;
  int64_t mtime_ns = 0;
  bool operator==(const FileId&) const = default;

  /// All zero when the file cannot be stat'ed (Zkey::open then says why).
  static FileId of(const std::string& path) {
    struct stat st {};
    if (::stat(path.c_str(), &st) != 0) return {};
    return {st.st_dev, st.st_ino, st.st_size, int64_t(st.st_mtim.tv_sec) * 1000000000 + st.st_mtim.tv_nsec};
  }
};

template <class Prepared>
class KeyCache {
 public:
  struct Entry {
    std::string path;
    FileId id;
    std::unique_ptr<Zkey> key;            // owned here: a Prepared may keep a reference to it
    std::unique_ptr<Prepared> prepared;   // destroyed before key (declared after it)
  };
  using Prepare = std::function<std::unique_ptr<Prepared>(const Zkey&)>;
  /// Bytes the prepared form of a key takes (e.g. its points on a GPU).
  using Bytes = std::function<size_t(const Zkey&)>;

  /// capacity ≥ 1 keys; prepare (may be empty) makes an entry's Prepared. With
  /// `bytes`, the entries also stay within `budget` bytes in all: the least
  /// recently used leave before a new key is prepared, and a key larger than
  /// the whole budget is refused (InputError naming `budget_name`).
  explicit KeyCache(size_t capacity, Prepare prepare = {}, Bytes bytes = {}, size_t budget = SIZE_MAX,
                    std::string budget_name = {})
      : capacity_(std::max<size_t>(1, capacity)),
        prepare_(prepare),
        bytes_(bytes),
        budget_(budget),
        budget_name_(std::move(budget_name)) {}

  /// The entry of the key at `path`, opened (and prepared) or found; valid
  /// until the next get(). Throws InputError for a bad key or one over the
  /// budget; whatever `prepare` throws.
  Entry& get(const std::string& path) {
    FileId id = FileId::of(path);
    for (auto it = entries_.begin(); it != entries_.end(); ++it) {
      if (it->path == path && it->id == id) {
        entries_.splice(entries_.begin(), entries_, it);
        return entries_.front();
      }
    }
    std::erase_if(entries_, [&](const Entry& e) { return e.path == path; });  // a stale version
    Entry e{path, id, std::make_unique<Zkey>(Zkey::open(path)), nullptr};
    if (bytes_) make_room(*e.key);
    if (prepare_) e.prepared = prepare_(*e.key);
    entries_.push_front(std::move(e));
    while (entries_.size() > capacity_) entries_.pop_back();
    return entries_.front();
  }

  /// Whether get(path) would find the key ready (same path, file unchanged).
  bool contains(const std::string& path) const {
    const FileId id = FileId::of(path);
    for (const auto& e : entries_)
      if (e.path == path && e.id == id) return true;
    return false;
  }

  /// The entry holding `key`, or nullptr.
  Entry* find(const Zkey* key) {
    for (auto& e : entries_)
      if (e.key.get() == key) return &e;
    return nullptr;
  }

 private:
  void make_room(const Zkey& key) {
    const size_t need = bytes_(key);
    if (need > budget_) {
      throw InputError(key.path + ": needs " + std::to_string(need >> 20) + " MiB, more than the " +
                       std::to_string(budget_ >> 20) + " MiB " + budget_name_);
    }
    auto used = [&] {
      size_t b = 0;
      for (const auto& e : entries_) b += bytes_(*e.key);
      return b;
    };
    while (!entries_.empty() && used() + need > budget_) entries_.pop_back();
  }

  size_t capacity_;
  Prepare prepare_;
  Bytes bytes_;
  size_t budget_;
  std::string budget_name_;
  std::list<Entry> entries_;
};

}  // namespace zkfarm
