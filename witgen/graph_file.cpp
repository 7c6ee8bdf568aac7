#include "witgen/graph_file.hpp"

#include <fcntl.h>
#include <sys/mman.h>
#include <sys/stat.h>
#include <unistd.h>

#include <algorithm>
#include <cerrno>
#include <cstring>

#include <filesystem>

#include "files/file_error.hpp"
#include "files/safe_write.hpp"
#include "files/sha256.hpp"
#include "files/unique_fd.hpp"
#include "groth16/curve_list.hpp"
#include "witgen/graph_format.hpp"
#include "witgen/graph_reader.hpp"

namespace zkfarm::witgen::graph {


std::optional<CurveId> graph_curve_id(uint32_t curve) {
  std::optional<CurveId> id;
  for_each_curve([&]<class C>(std::type_identity<C>) {
    if (graph_curve_number(C::kId) == curve) id = C::kId;
  });
  return id;
}

const uint64_t* curve_modulus(uint32_t curve) {
  const std::optional<CurveId> id = graph_curve_id(curve);
  if (!id) return nullptr;
  return with_curve(*id, []<class C>(std::type_identity<C>) -> const uint64_t* { return C::Fr::Params::kModulus; });
}

std::vector<uint8_t> curve_prime_le(uint32_t curve) {
  const uint64_t* m = curve_modulus(curve);
  if (!m) return {};
  std::vector<uint8_t> le(32);
  std::memcpy(le.data(), m, 32);
  return le;
}

const char* curve_name(uint32_t curve) {
  const std::optional<CurveId> id = graph_curve_id(curve);
  return id ? zkfarm::curve_name(*id) : "unknown";
}

void read_graph_head(Reader& r, Graph& g) {
  g.curve = r.u32("the curve");
  const uint64_t* p = curve_modulus(g.curve);
  if (!p) throw GraphError("unknown curve " + std::to_string(g.curve));
  g.input_values = r.u32("the input count");
  g.witness_size = r.u32("the witness size");
  if (g.input_values > kIndexMask || g.witness_size > kIndexMask) throw GraphError("input or witness count too large");

  const uint32_t n_signals = r.count(16, "the input signals");
  g.signals.resize(n_signals);
  for (auto& s : g.signals) {
    s.hash = r.u64("a signal's hash");
    s.offset = r.u32("a signal's offset");
    s.size = r.u32("a signal's size");
    if (uint64_t(s.offset) + s.size > g.input_values)
      throw GraphError("input signal at byte " + std::to_string(r.at() - 16) + " lies past the input values");
  }
  const uint32_t n_strings = r.count(4, "the strings");
  g.strings.resize(n_strings);
  for (auto& s : g.strings) {
    const uint32_t len = r.u32("a string's length");
    if (len > kMaxString) throw GraphError("a string of " + std::to_string(len) + " bytes at byte " + std::to_string(r.at()));
    const uint8_t* b = r.bytes(len, "a string");
    s.assign(reinterpret_cast<const char*>(b), len);
  }
  const uint32_t n_consts = r.count(32, "the constants");
  g.consts.resize(n_consts);
  for (auto& c : g.consts) {
    std::memcpy(c.data(), r.bytes(32, "a constant"), 32);
    bool below = false;
    for (int i = 3; i >= 0; --i)
      if (c[i] != p[i]) {
        below = c[i] < p[i];
        break;
      }
    if (!below) throw GraphError("constant at byte " + std::to_string(r.at() - 32) + " is not below the prime");
  }
}

std::vector<uint8_t> live_nodes(const Graph& g) {
  const uint32_t n = uint32_t(g.nodes.size());
  std::vector<uint8_t> live(n, 0);
  for (uint32_t w : g.witness)
    if (ref_kind(w) == RefKind::kNode) live[ref_index(w)] = 1;
  for (uint32_t k = n; k-- > 0;) {  // backwards: a node's readers come after it
    if (!has_value(g.nodes[k].op)) live[k] = 1;
    if (live[k])
      for_each_ref(g.nodes[k], [&](uint32_t ref, int) {
        if (ref_kind(ref) == RefKind::kNode) live[ref_index(ref)] = 1;
      });
  }
  return live;
}

Graph parse_graph(const uint8_t* data, size_t size, uint64_t max_nodes) {
  Reader r(data, size);
  Graph g;
  if (std::memcmp(r.bytes(8, "the magic"), kMagic, 8) != 0) throw GraphError("not a witness graph (no ZKWGRAPH magic)");
  const uint32_t version = r.u32("the version");
  if (version != kVersion)
    throw GraphError("graph version " + std::to_string(version) + ", this zkfarm reads " + std::to_string(kVersion));
  read_graph_head(r, g);
  const uint32_t n_strings = uint32_t(g.strings.size()), n_consts = uint32_t(g.consts.size());
  const uint32_t n_nodes = r.count(13, "the nodes");
  if (n_nodes > max_nodes)
    throw GraphError("the graph has " + std::to_string(n_nodes) + " nodes, the limit is " + std::to_string(max_nodes));
  g.nodes.resize(n_nodes);
  // A reference read at node `at` (or from the witness when at = n_nodes).
  auto check_ref = [&](uint32_t ref, uint32_t at) {
    const uint32_t i = ref_index(ref);
    switch (ref_kind(ref)) {
      case RefKind::kNode:
        if (i < at && has_value(g.nodes[i].op)) return;
        break;
      case RefKind::kConst:
        if (i < n_consts) return;
        break;
      case RefKind::kInput:
        if (i < g.input_values) return;
        break;
      default:
        break;
    }
    throw GraphError("node " + std::to_string(at) + " reads reference " + std::to_string(ref) +
                     ", which names nothing before it");
  };
  for (uint32_t k = 0; k < n_nodes; ++k) {
    Node& n = g.nodes[k];
    const uint8_t op = r.u8("a node");
    if (op < uint8_t(Op::kAdd) || op > uint8_t(Op::kLast))
      throw GraphError("node " + std::to_string(k) + " has unknown operation " + std::to_string(op));
    n.op = Op(op);
    n.a = r.u32("a node");
    n.b = r.u32("a node");
    n.c = r.u32("a node");
    const int ar = arity(n.op);
    check_ref(n.a, k);
    if (n.op == Op::kLogText) {
      if (n.b >= n_strings) throw GraphError("node " + std::to_string(k) + " logs string " + std::to_string(n.b) + " of " + std::to_string(n_strings));
    } else if (ar >= 2) {
      check_ref(n.b, k);
    } else if (n.b != 0) {
      throw GraphError("node " + std::to_string(k) + " has an operand its operation does not read");
    }
    if (ar == 3) check_ref(n.c, k);
    else if (n.c != 0) throw GraphError("node " + std::to_string(k) + " has an operand its operation does not read");
  }
  r.need(uint64_t(g.witness_size) * 4, "the witness");  // before any memory is taken for it
  g.witness.resize(g.witness_size);
  for (auto& w : g.witness) {
    w = r.u32("the witness");
    check_ref(w, n_nodes);
  }
  if (r.left() != 0) throw GraphError(std::to_string(r.left()) + " bytes after the graph's end");
  return g;
}

std::string write_graph_file(const std::string& path, const std::vector<uint8_t>& raw) {
  files::Sha256 h;
  h.add(raw.data(), raw.size());
  const std::string digest = h.hex_digest();
  std::string content(reinterpret_cast<const char*>(raw.data()), raw.size());
  content += digest;
  const std::filesystem::path p(path);
  try {  // a new file fsynced and renamed into place: a reader never sees half a graph
    files::write_file_safe(p.parent_path().string(), p.filename().string(), content);
  } catch (const files::FileError& e) {
    throw GraphError(e.what());
  }
  return digest;
}

namespace {

// Memory for a file's bytes, not zeroed first; a large one in 2 MiB pages
// where the kernel gives them (transparent huge pages on madvise): a plan of
// tens of megabytes then takes a few page faults instead of thousands.
std::shared_ptr<uint8_t[]> file_buffer(size_t n) {
  constexpr size_t kHuge = size_t(2) << 20;
  if (n >= 2 * kHuge) {
    const size_t len = (n + kHuge - 1) / kHuge * kHuge + kHuge;  // room to start at a 2 MiB boundary
    void* base = ::mmap(nullptr, len, PROT_READ | PROT_WRITE, MAP_PRIVATE | MAP_ANONYMOUS, -1, 0);
    if (base != MAP_FAILED) {
      uint8_t* at = reinterpret_cast<uint8_t*>((reinterpret_cast<uintptr_t>(base) + kHuge - 1) & ~(kHuge - 1));
      ::madvise(at, len - size_t(at - static_cast<uint8_t*>(base)), MADV_HUGEPAGE);  // advice: may be ignored
      return std::shared_ptr<uint8_t[]>(at, [base, len](uint8_t*) { ::munmap(base, len); });
    }
  }
  return std::shared_ptr<uint8_t[]>(new uint8_t[n]);
}

// `path` opened without following a link or blocking on a FIFO, a plain
// file of min_bytes to max_bytes; its size through `size`.
files::UniqueFd open_graph_file(const std::string& path, uint64_t max_bytes, uint64_t min_bytes, size_t& size) {
  files::UniqueFd file(::open(path.c_str(), O_RDONLY | O_NOFOLLOW | O_CLOEXEC | O_NONBLOCK));
  if (!file) throw GraphError(path + ": cannot open: " + std::strerror(errno));
  struct stat st{};
  if (::fstat(file.get(), &st) != 0 || !S_ISREG(st.st_mode)) throw GraphError(path + ": not a plain file");
  if (uint64_t(st.st_size) > max_bytes || uint64_t(st.st_size) < min_bytes)
    throw GraphError(path + ": size " + std::to_string(st.st_size) + " is not a graph's");
  size = size_t(st.st_size);
  return file;
}

}  // namespace

FileBytes read_file_bytes(const std::string& path, uint64_t max_bytes, uint64_t min_bytes) {
  size_t size = 0;
  const files::UniqueFd file = open_graph_file(path, max_bytes, min_bytes, size);
  const int fd = file.get();
  FileBytes buf{file_buffer(size), size};
  size_t got = 0;
  while (got < buf.size) {
    const ssize_t n = ::read(fd, buf.data.get() + got, buf.size - got);
    if (n < 0 && errno == EINTR) continue;
    if (n <= 0) throw GraphError(path + ": cannot read: " + (n < 0 ? std::strerror(errno) : "shorter than it was"));
    got += size_t(n);
  }
  return buf;
}

FileBytes map_file_bytes(const std::string& path, uint64_t max_bytes, uint64_t min_bytes) {
  size_t n = 0;
  const files::UniqueFd file = open_graph_file(path, max_bytes, std::max<uint64_t>(min_bytes, 1), n);  // mmap of 0 bytes fails
  void* p = ::mmap(nullptr, n, PROT_READ, MAP_PRIVATE | MAP_POPULATE, file.get(), 0);
  if (p == MAP_FAILED) throw GraphError(path + ": cannot map: " + std::strerror(errno));
  return FileBytes{std::shared_ptr<uint8_t[]>(static_cast<uint8_t*>(p), [n](uint8_t* q) { ::munmap(q, n); }), n};
}

FileBytes read_checked_file(const std::string& path, uint64_t max_bytes) {
  FileBytes buf = read_file_bytes(path, max_bytes, 64);
  const size_t body = buf.size - 64;
  files::Sha256 h;
  h.add(buf.begin(), body);
  const std::string digest = h.hex_digest();
  if (std::memcmp(digest.data(), buf.begin() + body, 64) != 0)
    throw GraphError(path + ": its SHA-256 does not match its content (corrupted)");
  return buf;
}

namespace {

// 13 bytes a node plus constants and witness: far below this for any graph within max_nodes.
uint64_t graph_bytes_limit(uint64_t max_nodes) { return max_nodes * 13 + (uint64_t(1) << 34); }

}  // namespace

std::string graph_file_sha256(const std::string& path) {
  const FileBytes buf = read_checked_file(path, graph_bytes_limit(uint64_t(1) << 40));
  return std::string(buf.end() - 64, buf.end());
}

Graph read_graph_file(const std::string& path, uint64_t max_nodes, const std::string& expected_sha256) {
  const FileBytes buf = read_checked_file(path, graph_bytes_limit(max_nodes));
  const size_t body = buf.size - 64;
  if (!expected_sha256.empty() && std::string(buf.end() - 64, buf.end()) != expected_sha256)
    throw GraphError(path + ": its SHA-256 is not the one recorded when the circuit was added (the file was "
                     "replaced or rewritten since)");
  try {
    return parse_graph(buf.begin(), body, max_nodes);
  } catch (const GraphError& e) {
    throw GraphError(path + ": " + e.what());
  }
}

}  // namespace zkfarm::witgen::graph
