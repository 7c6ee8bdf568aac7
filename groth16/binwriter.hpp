#pragma once
// Writes the snarkjs binary container (the layout BinFile reads): 4-byte magic,
// u32 version, u32 section count, then sections {u32 type, u64 size, payload},
// little-endian. Sections are written whole, in the order given.
#include <cstdint>
#include <cstdio>
#include <string>
#include <string_view>
#include <vector>

#include "groth16/field.hpp"

namespace zkfarm {

class BinWriter {
 public:
  /// Creates `path` (truncating) and writes the header. Throws std::runtime_error
  /// naming the path on any I/O error.
  BinWriter(const std::string& path, std::string_view magic, uint32_t version, uint32_t n_sections);
  ~BinWriter();
  BinWriter(const BinWriter&) = delete;
  BinWriter& operator=(const BinWriter&) = delete;

  /// Starts section `type` whose payload will be exactly `size` bytes.
  void begin_section(uint32_t type, uint64_t size);
  void u32(uint32_t v);
  void u64(uint64_t v);
  /// 32 bytes, little-endian limbs (a canonical integer or Montgomery limbs alike).
  void u256(const U256& v);
  void bytes(const void* data, size_t n);
  /// Checks the last section got its declared size and the count matches; flushes and closes.
  void finish();

 private:
  std::string path_;
  FILE* f_ = nullptr;
  uint64_t section_left_ = 0;
  uint32_t sections_left_;
};

}  // namespace zkfarm
