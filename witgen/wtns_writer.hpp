#pragma once
// A witness as snarkjs writes it (.wtns, version 2): "wtns", u32 version 2,
// u32 2 sections; section 1: u32 id 1, u64 length 8 + n8, u32 n8, the prime
// (n8 bytes, little-endian), u32 the number of values; section 2: u32 id 2,
// u64 length n8·count, each value n8 bytes little-endian, plain (not
// Montgomery) form. Byte for byte what circom_runtime's calculateWTNSBin and
// circom's C++ writeBinWitness produce. Header-only: both generator hosts
// compile it into each circuit's generator.
#include <unistd.h>

#include <cerrno>
#include <cstdint>
#include <cstring>
#include <string>
#include <vector>

namespace zkfarm::witgen {

/// Collects a witness and writes it to a descriptor in one go.
class WtnsWriter {
 public:
  /// `prime_le`: n8 bytes; `count`: the number of witness values to come.
  WtnsWriter(const std::vector<uint8_t>& prime_le, uint32_t count)
      : n8_(uint32_t(prime_le.size())), out_(header(prime_le, count)) {
    at_ = out_.size();
    out_.resize(at_ + size_t(n8_) * count, 0);
  }
  /// The bytes before the first value (44 + n8): both sections' headers.
  static std::vector<uint8_t> header(const std::vector<uint8_t>& prime_le, uint32_t count) {
    const uint32_t n8 = uint32_t(prime_le.size());
    std::vector<uint8_t> h(kHeader + n8 + 16, 0);
    auto put = [&](size_t at, uint64_t v, int bytes) {
      for (int i = 0; i < bytes; ++i) h[at + size_t(i)] = uint8_t(v >> (8 * i));
    };
    std::memcpy(h.data(), "wtns", 4);
    put(4, 2, 4);   // version
    put(8, 2, 4);   // sections
    put(12, 1, 4);  // section 1: the header
    put(16, 8 + n8, 8);
    put(24, n8, 4);
    std::memcpy(h.data() + 28, prime_le.data(), n8);
    put(28 + n8, count, 4);
    put(32 + n8, 2, 4);  // section 2: the values
    put(36 + n8, uint64_t(n8) * count, 8);
    return h;
  }
  /// The next value, n8 bytes little-endian (fewer are padded with zeros).
  void value(const uint8_t* le, size_t n) {
    std::memcpy(out_.data() + at_, le, n < n8_ ? n : n8_);
    at_ += n8_;
  }
  /// Writes everything to `fd`; false (errno set) when a write fails.
  bool write_to(int fd) const {
    size_t done = 0;
    while (done < out_.size()) {
      const ssize_t w = ::write(fd, out_.data() + done, out_.size() - done);
      if (w < 0 && errno == EINTR) continue;
      if (w <= 0) return false;
      done += size_t(w);
    }
    return true;
  }

 private:
  static constexpr size_t kHeader = 28;  // magic, version, sections, id, length, n8
  uint32_t n8_;
  std::vector<uint8_t> out_;
  size_t at_ = 0;
};

}  // namespace zkfarm::witgen
