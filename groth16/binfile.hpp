#pragma once
// Read-only view of a snarkjs binary container (.zkey, .wtns, .r1cs), the layout
// that ffjavascript/snarkjs binFileUtils write (createBinFile, startWriteSection):
//   magic[4] | u32 version | u32 nSections | nSections x { u32 type | u64 size | payload[size] }
// all little-endian. Sections are found by type, never by position: circom writes
// an r1cs's section 2 before its section 1.
//
// Also here: the byte-level readers every format parser shares (u32/u64/256-bit
// little-endian loads, a bounds-checked cursor over one section, big-number
// compare and decimal printing for error messages).
#include <array>
#include <cstddef>
#include <cstdint>
#include <span>
#include <string>
#include <string_view>
#include <unordered_map>
#include <utility>

namespace zkfarm {

/// A whole snarkjs container file, mapped read-only (mmap, MAP_PRIVATE) and
/// checked at construction: header present, magic and version right, every
/// section header inside the file, every section's payload inside the file, no
/// section type twice, no bytes after the last section. Section payloads are
/// not interpreted here; Zkey, Wtns and R1cs do that.
///
/// Movable, not copyable; the mapping lives as long as the object (spans handed
/// out by section() stay valid across moves, since moving keeps the mapping).
/// If the file is truncated by someone else while mapped, reads fault (SIGBUS):
/// the farm treats key and witness files as immutable once submitted.
class BinFile {
 public:
  /// Maps PATH and checks the container. MAGIC is the 4-byte tag ("zkey",
  /// "wtns", "r1cs"); versions 1..MAX_VERSION are accepted (snarkjs 0.7 writes
  /// zkey 1, wtns 2, r1cs 1).
  /// Throws InputError "PATH: FAULT" for file-level faults (cannot open: No such
  /// file or directory / is a directory / not a regular file / empty file /
  /// "truncated: header needs 12 bytes, file has 5" / "bad magic: not a 'zkey'
  /// file (its header is that of a witness (.wtns))" or "... (its first 4 bytes
  /// are not the magic 'zkey')" (never the bytes found) /
  /// "unsupported version 3, zkfarm reads 1..2" /
  /// trailing bytes) and "PATH: section N: FAULT" for a section that runs past
  /// the end of the file or appears twice.
  BinFile(const std::string& path, std::string_view magic, uint32_t max_version);

  BinFile(BinFile&&) noexcept = default;
  BinFile& operator=(BinFile&&) noexcept = default;
  BinFile(const BinFile&) = delete;
  BinFile& operator=(const BinFile&) = delete;
  ~BinFile() = default;

  /// The path as given to the constructor; every error message starts with it.
  const std::string& path() const { return path_; }
  /// The container version from bytes 4..7 of the header.
  uint32_t version() const { return version_; }
  /// Size of the whole file in bytes.
  uint64_t file_size() const { return map_.size; }

  /// Whether a section of this type is present.
  bool has_section(uint32_t type) const;
  /// The payload of section TYPE (size bytes, without its 12-byte header).
  /// Throws InputError "PATH: section N missing" if absent.
  std::span<const uint8_t> section(uint32_t type) const;
  /// Byte offset of section TYPE's payload from the start of the file (for
  /// messages). Throws like section().
  uint64_t section_offset(uint32_t type) const;

  /// Throws InputError "PATH: section N: FAULT". For the format parsers, so
  /// that every message has the same shape.
  [[noreturn]] void fail(uint32_t section, const std::string& fault) const;
  /// Throws InputError "PATH: FAULT", for faults of the file as a whole.
  [[noreturn]] void fail_file(const std::string& fault) const;

 private:
  // Owns the mmap; unmaps in its destructor, so a constructor that throws
  // after mapping leaks nothing. In fuzzing builds (FUZZING_BUILD_MODE_UNSAFE_FOR_PRODUCTION,
  // fuzz/) the bytes are a heap copy of exactly the file's size instead
  // (heap = true), so that AddressSanitizer reports a read even one byte past
  // the end, which a mapping would answer with zeros up to the page's end.
  struct Mapping {
    const uint8_t* data = nullptr;
    uint64_t size = 0;
    bool heap = false;
    Mapping() = default;
    Mapping(const uint8_t* d, uint64_t n, bool h = false) : data(d), size(n), heap(h) {}
    Mapping(Mapping&& o) noexcept
        : data(std::exchange(o.data, nullptr)), size(std::exchange(o.size, 0)), heap(o.heap) {}
    Mapping& operator=(Mapping&& o) noexcept;
    ~Mapping();
  };
  struct Section {
    uint64_t offset;  // of the payload, from the start of the file
    uint64_t size;    // of the payload, bytes
  };
  const Section* find(uint32_t type) const;

  std::string path_;
  Mapping map_;
  uint32_t version_ = 0;
  // By type. A map, not a list: a hostile file may declare millions of
  // empty sections, and the duplicate check must not go quadratic.
  std::unordered_map<uint32_t, Section> sections_;
};

/// Little-endian loads from unaligned memory (mapped files have no alignment
/// guarantees: a zkey's section 4 records start at offset 4 of the payload).
uint32_t read_u32(const uint8_t* p);
/// 8 bytes, little-endian.
uint64_t read_u64(const uint8_t* p);

/// A 256-bit unsigned integer as 4 little-endian 64-bit limbs (limb 0 lowest).
using U256 = std::array<uint64_t, 4>;
/// Loads 32 bytes, little-endian (field elements and point coordinates as snarkjs stores them).
U256 read_u256(const uint8_t* p);
/// a < b as unsigned 256-bit integers.
bool u256_less(const U256& a, const U256& b);

/// a < b for two little-endian unsigned integers of the same byte length (any
/// length; for primes of other sizes than 32 bytes). Requires a.size() == b.size().
bool le_less(std::span<const uint8_t> a, std::span<const uint8_t> b);
/// Decimal digits of a little-endian unsigned integer of any length ("0" for
/// zero); as snarkjs prints field elements, so messages can be compared to its output.
std::string le_to_decimal(std::span<const uint8_t> le);

/// Bounds-checked cursor over one section's payload, for sequential headers and
/// records. Every read checks the remaining length first (64-bit arithmetic, so
/// a count times a record size cannot wrap) and throws InputError
/// "PATH: section N: truncated: WHAT needs K bytes at offset O, section has S"
/// instead of reading past the end.
class SectionReader {
 public:
  /// Cursor at the start of section TYPE of FILE; throws "section N missing" if absent.
  SectionReader(const BinFile& file, uint32_t type);
  /// Reads a u32 named WHAT (for the message).
  uint32_t u32(const char* what);
  /// Reads a u64 named WHAT.
  uint64_t u64(const char* what);
  /// Takes the next N bytes (N may be any 64-bit value; too large just fails).
  std::span<const uint8_t> bytes(uint64_t n, const char* what);
  /// Bytes consumed so far, from the start of the payload.
  uint64_t offset() const { return pos_; }
  /// Bytes left in the payload.
  uint64_t remaining() const { return data_.size() - pos_; }
  /// Section type this reader walks.
  uint32_t type() const { return type_; }

 private:
  const uint8_t* take(uint64_t n, const char* what);
  const BinFile& file_;
  uint32_t type_;
  std::span<const uint8_t> data_;
  uint64_t pos_ = 0;
};

}  // namespace zkfarm
