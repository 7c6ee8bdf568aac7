#pragma once
// What the graph file's reader shares with the plan file's (graph_plan.cpp):
// little-endian fields read without passing the end, the head both files
// carry, and a file read whole with its trailing SHA-256 checked.
#include <cstdint>
#include <cstring>
#include <memory>
#include <string>
#include <vector>

#include "witgen/graph_file.hpp"

namespace zkfarm::witgen::graph {

// Reads little-endian fields, refusing to read past the end.
class Reader {
 public:
  Reader(const uint8_t* p, size_t n) : p_(p), n_(n) {}
  size_t at() const { return at_; }
  size_t left() const { return n_ - at_; }
  void need(uint64_t bytes, const char* what) const {
    if (bytes > left())
      throw GraphError(std::string(what) + " at byte " + std::to_string(at_) + " needs " + std::to_string(bytes) +
                       " bytes, " + std::to_string(left()) + " are left");
  }
  /// A little-endian integer field of T's size.
  template <class T>
  T get(const char* what) {
    need(sizeof(T), what);
    T v;
    std::memcpy(&v, p_ + at_, sizeof(T));
    at_ += sizeof(T);
    return v;
  }
  uint32_t u32(const char* what) { return get<uint32_t>(what); }
  uint64_t u64(const char* what) { return get<uint64_t>(what); }
  uint8_t u8(const char* what) { return get<uint8_t>(what); }
  const uint8_t* bytes(size_t n, const char* what) {
    need(n, what);
    const uint8_t* r = p_ + at_;
    at_ += n;
    return r;
  }
  /// A count of records of `each` bytes that must fit in what is left.
  uint32_t count(uint64_t each, const char* what) {
    const uint32_t n = u32(what);
    need(uint64_t(n) * each, what);
    return n;
  }

 private:
  const uint8_t* p_;
  size_t n_;
  size_t at_ = 0;
};


/// A graph file's head after its version: curve, input and witness counts,
/// input signals, strings, constants (graph_format.hpp), each checked (a
/// known curve, signals within the inputs, constants below the prime).
/// Throws GraphError.
void read_graph_head(Reader& r, Graph& g);

/// A file's bytes, read whole into memory that was not zeroed first (a plan
/// of a large circuit is hundreds of megabytes: touching them twice is
/// most of a one-shot witness's time). Aligned for any scalar type.
struct FileBytes {
  std::shared_ptr<uint8_t[]> data;
  size_t size = 0;
  const uint8_t* begin() const { return data.get(); }
  const uint8_t* end() const { return data.get() + size; }
};

/// The bytes of `path`: opened without following a link, a plain file of
/// `min_bytes` to `max_bytes`, read whole. Throws GraphError naming the file.
FileBytes read_file_bytes(const std::string& path, uint64_t max_bytes, uint64_t min_bytes);

/// The bytes of `path` as read_file_bytes checks them, mapped read-only
/// (MAP_PRIVATE, populated) instead of copied: no fresh memory to zero and
/// no copy of a file of hundreds of megabytes. Only for a file that nobody
/// but its reader's own user can write (a one-shot `zkfarm-prove`'s plan in
/// its user's generator cache, beside the generator it runs): a mapping
/// shows a later change of the file, so another writer could change what
/// was checked. Throws GraphError naming the file.
FileBytes map_file_bytes(const std::string& path, uint64_t max_bytes, uint64_t min_bytes);

/// read_file_bytes, its last 64 bytes the hex SHA-256 of the rest, checked.
/// Throws GraphError naming the file.
FileBytes read_checked_file(const std::string& path, uint64_t max_bytes);

}  // namespace zkfarm::witgen::graph
