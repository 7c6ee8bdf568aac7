#pragma once
// The supervisor's allocation of the arena's slot space: variable-size slots,
// first fit, 4 KiB aligned. The arena's size is the memory budget: allocate()
// returns nothing when a partition does not fit, and the partition waits.
// Each slot carries a generation, bumped whenever the slot is freed or renewed
// (its GPU worker died), so a late answer about an earlier use is recognised as stale.
#include <cstdint>
#include <map>
#include <optional>
#include <vector>

namespace zkfarm::shm {

struct Slot {
  uint32_t id = 0;          ///< index in the slot table, stable for the slot's life
  uint64_t offset = 0;      ///< bytes from the arena's slot space
  uint64_t size = 0;        ///< bytes, a multiple of 4096
  uint64_t generation = 0;  ///< bumped by free(); messages carry it
};

class SlotAllocator {
 public:
  /// Manages [0, capacity) bytes of slot space.
  explicit SlotAllocator(uint64_t capacity);

  /// A slot of at least `bytes` (rounded up to 4 KiB), or nullopt if no free
  /// range is large enough now.
  std::optional<Slot> allocate(uint64_t bytes);
  /// Returns the slot's range and bumps its generation. Unknown or already
  /// free ids are ignored (returns false).
  bool free(uint32_t id);
  /// Keeps the slot (and its bytes) in use under a new generation, so answers
  /// about its earlier handing-out are stale: a partition whose GPU worker
  /// died is proved again from the witness in its slot. Returns the slot as
  /// it now is; nullopt for unknown or free ids.
  std::optional<Slot> renew(uint32_t id);
  /// True if `id` is in use with this generation (a message about it is current).
  bool is_current(uint32_t id, uint64_t generation) const;

  uint64_t capacity() const { return capacity_; }
  uint64_t used() const { return used_; }
  size_t slots_in_use() const;

 private:
  struct Entry {
    uint64_t offset = 0, size = 0, generation = 0;
    bool in_use = false;
  };
  uint64_t capacity_, used_ = 0;
  std::map<uint64_t, uint64_t> free_;  // offset → size, coalesced
  std::vector<Entry> table_;
};

}  // namespace zkfarm::shm
