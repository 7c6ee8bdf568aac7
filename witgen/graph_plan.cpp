#include "witgen/graph_plan.hpp"

#include <fcntl.h>
#include <sys/stat.h>
#include <unistd.h>

#include <bit>
#include <cstdio>
#include <cerrno>
#include <cstring>
#include <filesystem>

#include "files/file_error.hpp"
#include "files/safe_write.hpp"
#include "files/unique_fd.hpp"
#include "witgen/graph_format.hpp"
#include "witgen/graph_reader.hpp"

// Header-only (Debian's libxxhash-dev): nothing to link, nothing to ship with the binaries.
#define XXH_INLINE_ALL
#include <xxhash.h>

namespace zkfarm::witgen::graph {

static_assert(std::endian::native == std::endian::little, "plan files keep Instr's bytes: little-endian only");
static_assert(sizeof(Evaluator::Instr) == 16 && std::is_trivially_copyable_v<Evaluator::Instr>,
              "Instr's bytes are the plan file's: change kPlanVersion with its layout");

namespace {

constexpr char kPlanMagic[8] = {'Z', 'K', 'W', 'P', 'L', 'A', 'N', '\0'};
constexpr size_t kTrailer = 32;  // XXH3-128 in hex

}  // namespace

// XXH3-128 (xxHash), tens of GB/s. It detects damage; SHA-256 would cost a
// one-shot witness a third of its time and protect nothing more (whoever
// can write the plan can write its digest too).
std::string plan_checksum(const void* p, size_t n) {
  const XXH128_hash_t h = XXH3_128bits(p, n);
  char hex[kTrailer + 1];
  std::snprintf(hex, sizeof hex, "%016llx%016llx", static_cast<unsigned long long>(h.high64),
                static_cast<unsigned long long>(h.low64));
  return std::string(hex, kTrailer);
}

namespace {

void put(std::string& out, const void* p, size_t n) {
  if (n) out.append(static_cast<const char*>(p), n);  // an empty vector's data() may be null
}
// memcpy of n bytes, none for n = 0 (whose empty vector's data() may be null: undefined for memcpy).
void copy_bytes(void* to, const void* from, size_t n) {
  if (n) std::memcpy(to, from, n);
}
void put32(std::string& out, uint32_t v) { put(out, &v, 4); }

}  // namespace

std::string plan_path(const std::string& graph_path) { return graph_path + ".plan"; }

void write_plan_file(const std::string& path, const Evaluator& ev, const std::string& graph_sha256) {
  if (graph_sha256.size() != 64) throw GraphError("a plan names its graph by a SHA-256");
  const Graph& g = ev.graph();
  const std::span<const Evaluator::Instr> code = ev.code();
  const std::span<const uint32_t> outs = ev.witness_indices();
  std::string out;
  out.reserve(code.size() * sizeof(Evaluator::Instr) + (outs.size() + ev.third_operands().size()) * 4 +
              g.consts.size() * 40 + 4096);
  put(out, kPlanMagic, 8);
  put32(out, kPlanVersion);
  out += graph_sha256;
  put32(out, g.curve);
  put32(out, g.input_values);
  put32(out, g.witness_size);
  put32(out, uint32_t(g.signals.size()));
  for (const auto& s : g.signals) {
    put(out, &s.hash, 8);
    put32(out, s.offset);
    put32(out, s.size);
  }
  put32(out, uint32_t(g.strings.size()));
  for (const auto& s : g.strings) {
    put32(out, uint32_t(s.size()));
    out += s;
  }
  put32(out, uint32_t(g.consts.size()));
  for (const auto& c : g.consts) put(out, c.data(), 32);
  put32(out, uint32_t(g.witness.size()));
  put(out, g.witness.data(), g.witness.size() * 4);
  put32(out, ev.slots());
  put32(out, ev.small_slots());
  put32(out, uint32_t(code.size()));
  out.append((8 - out.size() % 8) % 8, '\0');  // the instructions at a multiple of 8: read in place
  put(out, code.data(), code.size() * sizeof(Evaluator::Instr));
  put32(out, uint32_t(outs.size()));
  put(out, outs.data(), outs.size() * 4);
  const std::span<const uint32_t> thirds = ev.third_operands();
  put32(out, uint32_t(thirds.size()));
  put(out, thirds.data(), thirds.size() * 4);
  put(out, ev.small_consts().data(), ev.small_consts().size() * 8);
  out += plan_checksum(out.data(), out.size());
  const std::filesystem::path fp(path);
  try {
    files::write_file_safe(fp.parent_path().string(), fp.filename().string(), out);
  } catch (const files::FileError& e) {
    throw GraphError(e.what());
  }
}

std::unique_ptr<Evaluator> read_plan_file(const std::string& path, const std::string& graph_sha256, bool map) {
  // 16 bytes an instruction, at most a few per node: within 2^40 bytes.
  const FileBytes buf = map ? map_file_bytes(path, uint64_t(1) << 40, kTrailer) : read_file_bytes(path, uint64_t(1) << 40, kTrailer);
  try {
    return parse_plan(buf, graph_sha256);
  } catch (const GraphError& e) {
    throw GraphError(path + ": " + e.what());
  }
}

std::unique_ptr<Evaluator> parse_plan(const FileBytes& buf, const std::string& graph_sha256) {
  if (buf.size < kTrailer) throw GraphError("shorter than a plan's checksum");
  const size_t body = buf.size - kTrailer;
  if (plan_checksum(buf.begin(), body) != std::string(buf.end() - kTrailer, buf.end()))
    throw GraphError("its checksum does not match its content (corrupted)");
  Reader r(buf.begin(), body);
  if (std::memcmp(r.bytes(8, "the magic"), kPlanMagic, 8) != 0) throw GraphError("not a graph plan (no ZKWPLAN magic)");
  const uint32_t version = r.u32("the version");
  if (version != kPlanVersion)
    throw GraphError("plan version " + std::to_string(version) + ", this zkfarm reads " + std::to_string(kPlanVersion));
  if (graph_sha256.size() != 64 || std::memcmp(r.bytes(64, "the graph's digest"), graph_sha256.data(), 64) != 0)
    throw GraphError("made from another graph than the one beside it");
  Graph g;
  read_graph_head(r, g);
  const uint32_t n_witness = r.count(4, "the witness");
  g.witness.resize(n_witness);
  copy_bytes(g.witness.data(), r.bytes(size_t(n_witness) * 4, "the witness"), size_t(n_witness) * 4);
  Evaluator::PlanView v;
  v.slots = r.u32("the field slots");
  v.small_slots = r.u32("the integer slots");
  const uint32_t n_code = r.count(sizeof(Evaluator::Instr), "the instructions");
  const uint8_t* pad = r.bytes((8 - r.at() % 8) % 8, "the instructions' alignment");
  for (const uint8_t* q = pad; q != buf.begin() + r.at(); ++q)
    if (*q != 0) throw GraphError("the instructions' alignment is not zeros");
  const uint8_t* code = r.bytes(size_t(n_code) * sizeof(Evaluator::Instr), "the instructions");
  v.code = {reinterpret_cast<const Evaluator::Instr*>(code), n_code};
  const uint32_t n_outs = r.count(4, "the witness indices");
  const uint8_t* outs = r.bytes(size_t(n_outs) * 4, "the witness indices");
  v.outs = {reinterpret_cast<const uint32_t*>(outs), n_outs};  // at a multiple of 4: after the 16-byte instructions
  const uint32_t n_thirds = r.count(4, "the third operands");
  const uint8_t* thirds = r.bytes(size_t(n_thirds) * 4, "the third operands");
  v.thirds = {reinterpret_cast<const uint32_t*>(thirds), n_thirds};
  v.small_consts.resize(g.consts.size());
  copy_bytes(v.small_consts.data(), r.bytes(g.consts.size() * 8, "the integer constants"), g.consts.size() * 8);
  v.backing = buf.data;
  if (r.left() != 0) throw GraphError(std::to_string(r.left()) + " bytes after the plan's end");
  return std::make_unique<Evaluator>(std::move(g), std::move(v));
}

std::string claimed_graph_sha256(const std::string& graph_path) {
  const files::UniqueFd fd(::open(graph_path.c_str(), O_RDONLY | O_NOFOLLOW | O_CLOEXEC | O_NONBLOCK));
  struct stat st{};
  if (!fd || ::fstat(fd.get(), &st) != 0 || !S_ISREG(st.st_mode) || st.st_size < 64)
    throw GraphError(graph_path + ": not a graph file");
  char digest[64];
  if (::pread(fd.get(), digest, 64, st.st_size - 64) != 64) throw GraphError(graph_path + ": cannot read its digest");
  return std::string(digest, 64);
}

}  // namespace zkfarm::witgen::graph
