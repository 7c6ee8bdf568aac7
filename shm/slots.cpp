#include "shm/slots.hpp"

namespace zkfarm::shm {

SlotAllocator::SlotAllocator(uint64_t capacity) : capacity_(capacity & ~uint64_t(4095)) {
  if (capacity_ > 0) free_[0] = capacity_;
}

std::optional<Slot> SlotAllocator::allocate(uint64_t bytes) {
  if (bytes == 0) bytes = 1;
  if (bytes > capacity_) return std::nullopt;
  bytes = (bytes + 4095) & ~uint64_t(4095);
  for (auto it = free_.begin(); it != free_.end(); ++it) {
    if (it->second < bytes) continue;
    const uint64_t offset = it->first, rest = it->second - bytes;
    free_.erase(it);
    if (rest > 0) free_[offset + bytes] = rest;
    // Reuse a free table entry so ids stay few.
    uint32_t id = 0;
    while (id < table_.size() && table_[id].in_use) ++id;
    if (id == table_.size()) table_.push_back({});
    Entry& e = table_[id];
    e.offset = offset;
    e.size = bytes;
    e.in_use = true;
    used_ += bytes;
    return Slot{id, offset, bytes, e.generation};
  }
  return std::nullopt;
}

bool SlotAllocator::free(uint32_t id) {
  if (id >= table_.size() || !table_[id].in_use) return false;
  Entry& e = table_[id];
  e.in_use = false;
  ++e.generation;
  used_ -= e.size;
  uint64_t offset = e.offset, size = e.size;
  // Coalesce with the neighbours.
  auto next = free_.lower_bound(offset);
  if (next != free_.end() && offset + size == next->first) {
    size += next->second;
    next = free_.erase(next);
  }
  if (next != free_.begin()) {
    auto prev = std::prev(next);
    if (prev->first + prev->second == offset) {
      prev->second += size;
      return true;
    }
  }
  free_[offset] = size;
  return true;
}

std::optional<Slot> SlotAllocator::renew(uint32_t id) {
  if (id >= table_.size() || !table_[id].in_use) return std::nullopt;
  Entry& e = table_[id];
  ++e.generation;
  return Slot{id, e.offset, e.size, e.generation};
}

bool SlotAllocator::is_current(uint32_t id, uint64_t generation) const {
  return id < table_.size() && table_[id].in_use && table_[id].generation == generation;
}

size_t SlotAllocator::slots_in_use() const {
  size_t n = 0;
  for (const auto& e : table_) n += e.in_use;
  return n;
}

}  // namespace zkfarm::shm
