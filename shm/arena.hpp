#pragma once
// The shared-memory arena: one POSIX shared-memory segment per zkfarmd
// instance (/dev/shm/zkfarm-<hash of the state dir>), mode 0600, through which
// partitions move between synthesis and GPU workers. The supervisor creates
// and unlinks it and owns all allocation (slots.hpp); workers attach and use
// the byte ranges a message names.
//
// Layout: a header page {magic "ZKFARENA", layout version, header bytes, total
// bytes, creator pid}, then the slot space. Attaching to a segment with another
// magic or layout version is refused.
#include <cstdint>
#include <memory>
#include <stdexcept>
#include <string>

namespace zkfarm::shm {

/// Increment whenever the header or slot layout changes. 2: a slot carries the
/// witness only (n_vars·32 bytes); 1 held a, b, c before it. A worker of one
/// version refuses an arena of another at attach (exit 3), so a rolling
/// upgrade across the change stops and keeps the old binaries.
inline constexpr uint32_t kArenaLayoutVersion = 2;
/// Bytes before the slot space (one page, so slots are page-aligned).
inline constexpr uint64_t kArenaHeaderBytes = 4096;

class ArenaError : public std::runtime_error {
 public:
  using std::runtime_error::runtime_error;
};

class Arena {
 public:
  /// The segment name of the instance whose state dir is `state_dir`
  /// ("zkfarm-" + 16 hex digits of a hash of its absolute path).
  static std::string name_for(const std::string& state_dir);

  /// Creates the segment with `slot_bytes` of slot space (rounded up to 4 KiB),
  /// mode 0600. Throws ArenaError if it exists or cannot be made (no space in
  /// /dev/shm, permissions).
  static Arena create(const std::string& name, uint64_t slot_bytes);
  /// Maps an existing segment read-write and checks its header. Throws ArenaError.
  static Arena attach(const std::string& name);
  /// Unlinks the segment; true if it existed.
  static bool remove(const std::string& name);

  Arena(Arena&&) noexcept;
  Arena& operator=(Arena&&) noexcept;
  ~Arena();

  const std::string& name() const { return name_; }
  /// Bytes of slot space (after the header).
  uint64_t capacity() const { return capacity_; }
  /// The slot space's first byte (page-aligned); the whole mapping starts one header before.
  uint8_t* slots() const { return base_ + kArenaHeaderBytes; }
  /// The whole mapping (header included) and its size, e.g. to pin it with cudaHostRegister.
  uint8_t* mapping() const { return base_; }
  uint64_t mapping_bytes() const { return capacity_ + kArenaHeaderBytes; }
  /// slots() + offset, after checking [offset, offset + size) lies in the slot
  /// space; throws ArenaError otherwise (a corrupt or stale message).
  uint8_t* at(uint64_t offset, uint64_t size) const;

 private:
  Arena() = default;
  struct Impl;
  std::unique_ptr<Impl> impl_;
  std::string name_;
  uint8_t* base_ = nullptr;
  uint64_t capacity_ = 0;
};

}  // namespace zkfarm::shm
