#include "groth16/binwriter.hpp"

#include <cerrno>
#include <cstring>
#include <stdexcept>

namespace zkfarm {

BinWriter::BinWriter(const std::string& path, std::string_view magic, uint32_t version, uint32_t n_sections)
    : path_(path), sections_left_(n_sections) {
  if (magic.size() != 4) throw std::invalid_argument("magic must be 4 bytes");
  f_ = std::fopen(path.c_str(), "wb");
  if (!f_) throw std::runtime_error(path + ": cannot create: " + std::strerror(errno));
  std::setvbuf(f_, nullptr, _IOFBF, 1 << 20);
  bytes(magic.data(), 4);
  u32(version);
  u32(n_sections);
}

BinWriter::~BinWriter() {
  if (f_) std::fclose(f_);
}

void BinWriter::begin_section(uint32_t type, uint64_t size) {
  if (section_left_ != 0) throw std::logic_error(path_ + ": previous section is short by " + std::to_string(section_left_));
  if (sections_left_ == 0) throw std::logic_error(path_ + ": more sections than declared");
  --sections_left_;
  u32(type);
  u64(size);
  section_left_ = size;
}

void BinWriter::bytes(const void* data, size_t n) {
  if (std::fwrite(data, 1, n, f_) != n) throw std::runtime_error(path_ + ": write failed: " + std::strerror(errno));
  if (section_left_) {
    if (n > section_left_) throw std::logic_error(path_ + ": section overflows its declared size");
    section_left_ -= n;
  }
}

void BinWriter::u32(uint32_t v) { bytes(&v, 4); }  // x86-64 is little-endian
void BinWriter::u64(uint64_t v) { bytes(&v, 8); }
void BinWriter::u256(const U256& v) { bytes(v.data(), 32); }

void BinWriter::finish() {
  if (section_left_ != 0 || sections_left_ != 0) throw std::logic_error(path_ + ": sections incomplete");
  if (std::fclose(f_) != 0) {
    f_ = nullptr;
    throw std::runtime_error(path_ + ": close failed: " + std::strerror(errno));
  }
  f_ = nullptr;
}

}  // namespace zkfarm
