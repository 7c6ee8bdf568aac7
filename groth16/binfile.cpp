// snarkjs binary container: mapping, header and section table checks.
#include "groth16/binfile.hpp"

#include <fcntl.h>
#include <sys/mman.h>
#include <sys/stat.h>
#include <unistd.h>

#include <algorithm>
#include <cerrno>
#include <cstring>
#include <vector>

#include "groth16/errors.hpp"

namespace zkfarm {
namespace {

constexpr uint64_t kHeaderBytes = 12;         // magic, version, section count
constexpr uint64_t kSectionHeaderBytes = 12;  // u32 type, u64 size

[[noreturn]] void throw_at(const std::string& path, const std::string& fault) {
  throw InputError(path + ": " + fault);
}

// The magics of snarkjs's containers, to name the kind of file someone passed
// by mistake (a witness given as a key). Only these constants are ever shown:
// an error must not echo the file's own bytes (it might be any file the
// process can read, and the message goes back to whoever submitted the path).
constexpr std::string_view kKnownMagics[][2] = {
    {"zkey", "a snarkjs proving key (.zkey)"},
    {"wtns", "a witness (.wtns)"},
    {"r1cs", "a constraint system (.r1cs)"},
    {"ptau", "a powers-of-tau file (.ptau)"},
};

std::string describe_wrong_magic(const uint8_t* p, std::string_view expected) {
  std::string s = "bad magic: not a '" + std::string(expected) + "' file";
  for (const auto& [magic, what] : kKnownMagics) {
    if (std::memcmp(p, magic.data(), 4) == 0) return s + " (its header is that of " + std::string(what) + ")";
  }
  return s + " (its first 4 bytes are not the magic '" + std::string(expected) + "')";
}

// Closes the descriptor on every path out of the constructor.
struct Fd {
  int fd;
  ~Fd() {
    if (fd >= 0) ::close(fd);
  }
};

}  // namespace

namespace {
void release(const uint8_t* data, uint64_t size, bool heap) {
  if (!data) return;
  if (heap) {
    delete[] data;
  } else {
    ::munmap(const_cast<uint8_t*>(data), size);
  }
}
}  // namespace

BinFile::Mapping& BinFile::Mapping::operator=(Mapping&& o) noexcept {
  if (this != &o) {
    release(data, size, heap);
    data = std::exchange(o.data, nullptr);
    size = std::exchange(o.size, 0);
    heap = o.heap;
  }
  return *this;
}

BinFile::Mapping::~Mapping() { release(data, size, heap); }

BinFile::BinFile(const std::string& path, std::string_view magic, uint32_t max_version)
    : path_(path) {
  Fd fd{::open(path.c_str(), O_RDONLY | O_CLOEXEC)};
  if (fd.fd < 0) throw_at(path, std::string("cannot open: ") + std::strerror(errno));
  struct stat st {};
  if (::fstat(fd.fd, &st) != 0) throw_at(path, std::string("cannot stat: ") + std::strerror(errno));
  if (S_ISDIR(st.st_mode)) throw_at(path, "is a directory");
  if (!S_ISREG(st.st_mode)) throw_at(path, "not a regular file");
  // mmap of 0 bytes fails with EINVAL; say what is actually wrong instead.
  if (st.st_size == 0) throw_at(path, "empty file");
  const uint64_t size = static_cast<uint64_t>(st.st_size);
  if (size < kHeaderBytes) {
    throw_at(path, "truncated: header needs " + std::to_string(kHeaderBytes) + " bytes, file has " +
                       std::to_string(size));
  }
#ifdef FUZZING_BUILD_MODE_UNSAFE_FOR_PRODUCTION
  {
    auto* copy = new uint8_t[size];
    map_ = Mapping(copy, size, true);
    for (uint64_t got = 0; got < size;) {
      const ssize_t n = ::pread(fd.fd, copy + got, size - got, static_cast<off_t>(got));
      if (n <= 0) throw_at(path, "cannot read");
      got += static_cast<uint64_t>(n);
    }
  }
#else
  void* p = ::mmap(nullptr, size, PROT_READ, MAP_PRIVATE, fd.fd, 0);
  if (p == MAP_FAILED) throw_at(path, std::string("cannot map: ") + std::strerror(errno));
  map_ = Mapping(static_cast<const uint8_t*>(p), size);
#endif
  const uint8_t* d = map_.data;

  if (magic.size() != 4 || std::memcmp(d, magic.data(), 4) != 0) {
    throw_at(path, describe_wrong_magic(d, magic));
  }
  version_ = read_u32(d + 4);
  if (version_ < 1 || version_ > max_version) {
    throw_at(path, "unsupported version " + std::to_string(version_) + ", zkfarm reads " +
                       (max_version == 1 ? std::string("1") : "1.." + std::to_string(max_version)));
  }
  const uint32_t n_sections = read_u32(d + 8);

  // Each section header needs 12 bytes, so the loop is bounded by the file
  // size whatever n_sections claims.
  uint64_t off = kHeaderBytes;
  for (uint32_t i = 0; i < n_sections; ++i) {
    if (size - off < kSectionHeaderBytes) {
      throw_at(path, "truncated: section header " + std::to_string(i) + " of " +
                         std::to_string(n_sections) + " at offset " + std::to_string(off) +
                         " needs 12 bytes, file has " + std::to_string(size - off) + " left");
    }
    const uint32_t type = read_u32(d + off);
    const uint64_t sz = read_u64(d + off + 4);
    const uint64_t payload = off + kSectionHeaderBytes;
    // Compare against what is left rather than computing payload + sz: a
    // corrupt size near 2^64 would wrap the sum.
    if (sz > size - payload) {
      throw_at(path, "section " + std::to_string(type) + ": truncated: size " + std::to_string(sz) +
                         " bytes at offset " + std::to_string(payload) + " runs past the end of the file (" +
                         std::to_string(size - payload) + " bytes left)");
    }
    if (const Section* prev = find(type)) {
      throw_at(path, "section " + std::to_string(type) + ": duplicate section (at offsets " +
                         std::to_string(prev->offset) + " and " + std::to_string(payload) + ")");
    }
    sections_.emplace(type, Section{payload, sz});
    off = payload + sz;
  }
  // snarkjs never writes past its last section; bytes there mean a wrong
  // section count or a damaged file.
  if (off != size) {
    throw_at(path, std::to_string(size - off) + " trailing bytes after the last of " +
                       std::to_string(n_sections) + " sections (offset " + std::to_string(off) + ")");
  }
}

const BinFile::Section* BinFile::find(uint32_t type) const {
  const auto it = sections_.find(type);
  return it == sections_.end() ? nullptr : &it->second;
}

bool BinFile::has_section(uint32_t type) const { return find(type) != nullptr; }

std::span<const uint8_t> BinFile::section(uint32_t type) const {
  const Section* s = find(type);
  if (!s) throw_at(path_, "section " + std::to_string(type) + " missing");
  return {map_.data + s->offset, static_cast<size_t>(s->size)};
}

uint64_t BinFile::section_offset(uint32_t type) const {
  const Section* s = find(type);
  if (!s) throw_at(path_, "section " + std::to_string(type) + " missing");
  return s->offset;
}

void BinFile::fail(uint32_t section, const std::string& fault) const {
  throw_at(path_, "section " + std::to_string(section) + ": " + fault);
}

void BinFile::fail_file(const std::string& fault) const { throw_at(path_, fault); }

uint32_t read_u32(const uint8_t* p) {
  return uint32_t{p[0]} | uint32_t{p[1]} << 8 | uint32_t{p[2]} << 16 | uint32_t{p[3]} << 24;
}

uint64_t read_u64(const uint8_t* p) { return uint64_t{read_u32(p)} | uint64_t{read_u32(p + 4)} << 32; }

U256 read_u256(const uint8_t* p) { return {read_u64(p), read_u64(p + 8), read_u64(p + 16), read_u64(p + 24)}; }

bool u256_less(const U256& a, const U256& b) {
  for (int i = 3; i >= 0; --i) {
    if (a[i] != b[i]) return a[i] < b[i];
  }
  return false;
}

bool le_less(std::span<const uint8_t> a, std::span<const uint8_t> b) {
  for (size_t i = a.size(); i-- > 0;) {
    if (a[i] != b[i]) return a[i] < b[i];
  }
  return false;
}

std::string le_to_decimal(std::span<const uint8_t> le) {
  // Schoolbook division by 10, most significant byte first; only for
  // messages and tests, so quadratic time is fine.
  std::vector<uint8_t> n(le.rbegin(), le.rend());
  std::string digits;
  bool nonzero = true;
  while (nonzero) {
    unsigned rem = 0;
    nonzero = false;
    for (uint8_t& byte : n) {
      const unsigned cur = rem * 256 + byte;
      byte = static_cast<uint8_t>(cur / 10);
      rem = cur % 10;
      nonzero |= byte != 0;
    }
    digits += static_cast<char>('0' + rem);
  }
  std::reverse(digits.begin(), digits.end());
  return digits;
}

SectionReader::SectionReader(const BinFile& file, uint32_t type)
    : file_(file), type_(type), data_(file.section(type)) {}

const uint8_t* SectionReader::take(uint64_t n, const char* what) {
  if (n > remaining()) {
    file_.fail(type_, std::string("truncated: ") + what + " needs " + std::to_string(n) +
                          " bytes at offset " + std::to_string(pos_) + ", section has " +
                          std::to_string(data_.size()));
  }
  const uint8_t* p = data_.data() + pos_;
  pos_ += n;
  return p;
}

uint32_t SectionReader::u32(const char* what) { return read_u32(take(4, what)); }

uint64_t SectionReader::u64(const char* what) { return read_u64(take(8, what)); }

std::span<const uint8_t> SectionReader::bytes(uint64_t n, const char* what) {
  return {take(n, what), static_cast<size_t>(n)};
}

}  // namespace zkfarm
