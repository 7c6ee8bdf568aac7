#pragma once
// The last few opened proving keys, most recently used first, each with an
// optional prepared object (the CPU backend's Prover, a GPU backend's resident
// points). Opening a key checks every point coordinate, far too slow to repeat
// per partition. An entry is keyed by path and file identity (device, inode,
// size, mtime): a key replaced on disk under the same path is opened again.
// No entry ever holds a key that failed a check: with the content checks
// alongside the preparation, a key is stored only once both have finished.
#include <sys/stat.h>

#include <algorithm>
#include <chrono>
#include <cstdint>
#include <exception>
#include <functional>
#include <future>
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

/// When KeyCache runs a new key's content checks (Zkey::check_contents, the
/// slow part of Zkey::open): before `prepare`, or on a thread of their own
/// while `prepare` runs. The second is only for a prepare that is safe on any
/// section contents (the CUDA backend's upload, whose device-side build reads
/// records without trusting them) and whose result means nothing until the
/// checks pass: the cache drops it when they fail.
enum class ContentChecks { before_prepare, alongside_prepare };

/// How long a key's load took, ms (for the log).
struct KeyLoadTimes {
  double open = 0;      // mapping and the structure checks
  double contents = 0;  // the content checks (alongside `prepare` or before it)
  double prepare = 0;   // the backend's preparation
  double total = 0;     // the whole get(), including the wait for whichever finished last
};

template <class Prepared>
class KeyCache {
 public:
  struct Entry {
    std::string path;
    FileId id;
    std::unique_ptr<Zkey> key;            // owned here: a Prepared may keep a reference to it
    std::unique_ptr<Prepared> prepared;   // destroyed before key (declared after it)
    KeyLoadTimes times;
  };
  using Prepare = std::function<std::unique_ptr<Prepared>(const Zkey&)>;
  /// Bytes the prepared form of a key takes (e.g. its points on a GPU).
  using Bytes = std::function<size_t(const Zkey&)>;

  /// capacity ≥ 1 keys; prepare (may be empty) makes an entry's Prepared. With
  /// `bytes`, the entries also stay within `budget` bytes in all: the least
  /// recently used leave before a new key is prepared, and a key larger than
  /// the whole budget is refused (InputError naming `budget_name`). `checks`
  /// says when a new key's contents are checked (see ContentChecks).
  explicit KeyCache(size_t capacity, Prepare prepare = {}, Bytes bytes = {}, size_t budget = SIZE_MAX,
                    std::string budget_name = {}, ContentChecks checks = ContentChecks::before_prepare)
      : capacity_(std::max<size_t>(1, capacity)),
        prepare_(prepare),
        bytes_(bytes),
        budget_(budget),
        budget_name_(std::move(budget_name)),
        checks_(checks) {}

  /// The entry of the key at `path`, opened (and prepared) or found; valid
  /// until the next get(). Throws InputError for a bad key (the same one
  /// Zkey::open throws, whichever ContentChecks: a fault of the key comes
  /// before anything `prepare` threw) or one over the budget; otherwise
  /// whatever `prepare` throws.
  Entry& get(const std::string& path) {
    FileId id = FileId::of(path);
    for (auto it = entries_.begin(); it != entries_.end(); ++it) {
      if (it->path == path && it->id == id) {
        entries_.splice(entries_.begin(), entries_, it);
        return entries_.front();
      }
    }
    std::erase_if(entries_, [&](const Entry& e) { return e.path == path; });  // a stale version
    const auto t0 = Clock::now();
    Entry e{path, id, std::make_unique<Zkey>(Zkey::open(path, ZkeyContents::unchecked)), nullptr, {}};
    e.times.open = ms_since(t0);
    if (prepare_ && checks_ == ContentChecks::alongside_prepare) {
      // Room first: the preparation starts at once. A key that then fails
      // its checks may have cost older entries their place.
      if (bytes_) {
        try {
          make_room(*e.key);
        } catch (...) {
          e.key->check_contents();  // a fault of the key still comes first
          throw;
        }
      }
      e.prepared = prepare_alongside_checks(*e.key, e.times);
    } else {
      timed(e.times.contents, [&] { e.key->check_contents(); });
      if (bytes_) make_room(*e.key);
      if (prepare_) timed(e.times.prepare, [&] { e.prepared = prepare_(*e.key); });
    }
    e.times.total = ms_since(t0);
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

  /// The entry of `path` when get(path) would find it (same path, file
  /// unchanged), made the most recently used; nullptr otherwise. Opens,
  /// prepares and evicts nothing.
  Entry* find_ready(const std::string& path) {
    const FileId id = FileId::of(path);
    for (auto it = entries_.begin(); it != entries_.end(); ++it) {
      if (it->path == path && it->id == id) {
        entries_.splice(entries_.begin(), entries_, it);
        return &entries_.front();
      }
    }
    return nullptr;
  }

  /// The entry holding `key`, or nullptr.
  Entry* find(const Zkey* key) {
    for (auto& e : entries_)
      if (e.key.get() == key) return &e;
    return nullptr;
  }

 private:
  using Clock = std::chrono::steady_clock;
  static double ms_since(Clock::time_point t) {
    return std::chrono::duration<double, std::milli>(Clock::now() - t).count();
  }
  template <class F>
  static void timed(double& ms, F&& f) {
    const auto t = Clock::now();
    f();
    ms = ms_since(t);
  }

  // The checks on a thread of their own, `prepare` on this one; the checks'
  // fault wins over prepare's, as if they had run first, and a prepared form
  // of a key that failed them is dropped here, never stored.
  std::unique_ptr<Prepared> prepare_alongside_checks(const Zkey& key, KeyLoadTimes& times) {
    auto checks = std::async(std::launch::async, [&] { timed(times.contents, [&] { key.check_contents(); }); });
    std::unique_ptr<Prepared> prepared;
    std::exception_ptr failed;
    try {
      timed(times.prepare, [&] { prepared = prepare_(key); });
    } catch (...) {
      failed = std::current_exception();
    }
    checks.get();  // rethrows the key's InputError
    if (failed) std::rethrow_exception(failed);
    return prepared;
  }

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
  ContentChecks checks_;
  std::list<Entry> entries_;
};

}  // namespace zkfarm
