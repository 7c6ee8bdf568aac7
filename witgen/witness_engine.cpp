#include "witgen/witness_engine.hpp"

#include <sys/mman.h>
#include <sys/stat.h>
#include <unistd.h>

#include <cerrno>
#include <cstdio>
#include <cstring>
#include <filesystem>
#include <fstream>
#include <map>
#include <mutex>
#include <optional>

#include "groth16/bls12_381.hpp"
#include "groth16/bn254.hpp"
#include "witgen/generator_host.hpp"
#include "witgen/graph_build.hpp"
#include "witgen/graph_format.hpp"
#include "witgen/graph_plan.hpp"
#include "witgen/input_json.hpp"
#include "witgen/wtns_writer.hpp"

namespace zkfarm::witgen {

namespace fs = std::filesystem;

namespace {

std::string read_fd(int fd) {
  if (::lseek(fd, 0, SEEK_SET) < 0) throw GenerateError(std::string("cannot read the input: ") + std::strerror(errno), false);
  std::string text;
  char buf[1 << 16];
  for (;;) {
    const ssize_t n = ::read(fd, buf, sizeof buf);
    if (n < 0 && errno == EINTR) continue;
    if (n < 0) throw GenerateError(std::string("cannot read the input: ") + std::strerror(errno), false);
    if (n == 0) break;
    text.append(buf, size_t(n));
    if (text.size() > kMaxInputBytes) throw GenerateError("the input is larger than 256 MiB", true);
  }
  return text;
}

}  // namespace

bool parse_witness_engine(const std::string& s, WitnessEngine& out) {
  if (s == "auto") out = WitnessEngine::kAuto;
  else if (s == "graph") out = WitnessEngine::kGraph;
  else if (s == "native" || s == "wasm" || s == "generator") out = WitnessEngine::kGenerator;
  else return false;
  return true;
}

GraphState graph_state(const std::string& generator_exe) {
  GraphState st;
  const fs::path dir = fs::path(generator_exe).parent_path();
  st.path = (dir / "graph").string();
  std::error_code ec;
  if (fs::is_regular_file(fs::symlink_status(st.path, ec))) {
    st.present = true;
    std::ifstream slower(dir / "graph.slower");
    st.slower = std::getline(slower, st.reason) && !st.reason.empty();
    std::string batches;
    st.batches_faster = st.slower && std::getline(slower, batches) && batches == "batches: faster";
    if (st.reason.size() > 300) st.reason.resize(300);
    return st;
  }
  std::ifstream in(dir / "graph.refused");
  if (!std::getline(in, st.reason) || st.reason.empty()) st.reason = "no graph was built for it";
  if (st.reason.size() > 300) st.reason.resize(300);
  return st;
}

std::string graph_slower_text(const GraphState& st) {
  if (!st.present || !st.slower) return "";
  return st.reason + "\n" + (st.batches_faster ? "batches: faster" : "batches: slower") + "\n";
}

std::string witness_engine_line(const std::string& generator_exe, const std::string& kind) {
  const GraphState st = graph_state(generator_exe);
  if (st.present && st.slower && st.batches_faster) return "graph in batches, " + kind + " one at a time (" + st.reason + ")";
  return st.present && !st.slower ? "graph" : kind + " (" + st.reason + ")";
}

namespace {

// The graph's plan kept beside it (graph_plan.hpp), when there is one of this
// graph (the digest recorded for the circuit, or else the one the graph file
// claims); null when there is none or it cannot be used: the graph is then
// read and planned, so a damaged plan costs time, never a witness.
// `unusable` is set when a plan is there but cannot be used.
std::shared_ptr<const graph::Evaluator> read_prepared(const std::string& path, const std::string& expected_sha256,
                                                      bool map, bool& unusable) {
  const std::string plan = graph::plan_path(path);
  struct stat st{};
  if (::lstat(plan.c_str(), &st) != 0) return nullptr;
  try {
    const std::string digest = expected_sha256.empty() ? graph::claimed_graph_sha256(path) : expected_sha256;
    return graph::read_plan_file(plan, digest, map);
  } catch (const graph::GraphError& e) {
    std::fprintf(stderr, "zkfarm: the witness graph's plan is not used, the graph is planned again: %s\n", e.what());
    unusable = true;
    return nullptr;
  }
}

// A plan that could not be used (damaged, or of an older zkfarm's layout
// after an upgrade) replaced by the one just made from the checked graph, so
// only the first one-shot process after pays for planning. Only in the
// user's own cache (load_graph's own_cache): a synthesis worker never
// writes into zkfarmd's build folder, and plans once a process instead.
// Best effort: an unwritable folder means planning again next time.
void replace_plan(const std::string& path, const graph::Evaluator& ev, const std::string& expected_sha256) {
  try {
    const std::string digest = expected_sha256.empty() ? graph::claimed_graph_sha256(path) : expected_sha256;
    graph::write_plan_file(graph::plan_path(path), ev, digest);
  } catch (const graph::GraphError&) {
  }
}

}  // namespace

std::shared_ptr<const graph::Evaluator> load_graph(const std::string& path, const std::string& expected_sha256,
                                                   bool own_cache) {
  // A graph that was refused stays refused (its error kept): the file, up to
  // gigabytes, is not read and hashed again for every partition.
  struct Loaded {
    std::shared_ptr<const graph::Evaluator> ev;
    std::string refused;
  };
  static std::mutex m;
  static std::map<std::string, Loaded> loaded;
  std::lock_guard<std::mutex> lock(m);
  const std::string key = path + "\n" + expected_sha256;
  if (auto it = loaded.find(key); it != loaded.end()) {
    if (!it->second.ev) throw graph::GraphError(it->second.refused);
    return it->second.ev;
  }
  if (loaded.size() >= 16) loaded.erase(loaded.begin());  // a worker serves few circuits at once
  std::shared_ptr<const graph::Evaluator> ev;
  try {
    bool unusable = false;
    ev = read_prepared(path, expected_sha256, own_cache, unusable);
    if (!ev) {
      ev = std::make_shared<const graph::Evaluator>(graph::read_graph_file(path, graph::kIndexMask, expected_sha256));
      if (unusable && own_cache) replace_plan(path, *ev, expected_sha256);
    }
  } catch (const graph::GraphError& e) {
    loaded.emplace(key, Loaded{nullptr, e.what()});
    throw;
  }
  loaded.emplace(key, Loaded{ev, {}});
  return ev;
}

WtnsMemfd::WtnsMemfd(uint32_t curve, uint32_t count) {
  const std::vector<uint8_t> head = WtnsWriter::header(graph::curve_prime_le(curve), count);
  values_at_ = head.size();
  size_ = head.size() + size_t(count) * 32;
  fd_.reset(::memfd_create("zkfarm-witness", MFD_CLOEXEC));
  void* m = MAP_FAILED;
  if (fd_ && ::ftruncate(fd_.get(), off_t(size_)) == 0)
    m = ::mmap(nullptr, size_, PROT_READ | PROT_WRITE, MAP_SHARED, fd_.get(), 0);
  if (m == MAP_FAILED)
    throw GenerateError(std::string("cannot keep the witness in memory: ") + std::strerror(errno), false);
  map_ = static_cast<uint8_t*>(m);
  std::memcpy(map_, head.data(), head.size());
}

WtnsMemfd::~WtnsMemfd() {
  if (map_) ::munmap(map_, size_);
}

files::UniqueFd WtnsMemfd::finish() {
  if (map_) ::munmap(map_, size_);
  map_ = nullptr;
  return std::move(fd_);  // a fresh memfd's offset is 0: nothing was written through it
}

namespace {

// The input in `input_fd` evaluated into `out` (witness_size × 32 bytes);
// false when one of its asserts failed (the generator then says why).
bool evaluate_one(const graph::Evaluator& ev, int input_fd, uint8_t* out) {
  const std::vector<U256> values = graph_input_values(ev, input_fd);
  std::vector<graph::InputOutcome> outcome;
  ev.evaluate({&values}, {out}, outcome);
  return outcome[0].ok;
}

}  // namespace

std::vector<U256> graph_input_values(const graph::Evaluator& ev, int input_fd) {
  try {
    return ev.arrange(parse_input(read_fd(input_fd), graph::curve_prime_le(ev.graph().curve)));
  } catch (const InputFault& e) {
    throw GenerateError(e.what(), true);
  }
}

bool graph_witness_into(const std::string& exe, int input_fd, WitnessEngine engine, uint32_t curve,
                        uint32_t witness_size, uint8_t* out, const std::string& graph_sha256, std::string* refused) {
  if (engine == WitnessEngine::kGenerator) return false;
  const GraphState st = graph_state(exe);
  if (!st.present) {
    if (engine == WitnessEngine::kGraph) throw GenerateError("the circuit has no witness graph: " + st.reason, false);
    return false;
  }
  if (engine == WitnessEngine::kAuto && st.slower) return false;  // the generator was measured faster
  std::shared_ptr<const graph::Evaluator> ev;
  try {
    ev = load_graph(st.path, graph_sha256);
  } catch (const graph::GraphError& e) {
    if (engine == WitnessEngine::kGraph) throw GenerateError(e.what(), false);
    if (refused) *refused = e.what();
    return false;
  }
  const graph::Graph& g = ev->graph();
  if (g.curve != curve || g.witness_size != witness_size) {
    if (engine == WitnessEngine::kGraph) throw GenerateError("the circuit's witness graph is not of this key", false);
    return false;
  }
  return evaluate_one(*ev, input_fd, out);
}

files::UniqueFd graph_witness_alone(const std::string& exe, int input_fd, WitnessEngine engine) {
  if (engine == WitnessEngine::kGenerator) return {};
  const GraphState st = graph_state(exe);
  if (!st.present || (engine == WitnessEngine::kAuto && st.slower)) return {};
  std::shared_ptr<const graph::Evaluator> ev;
  try {
    ev = load_graph(st.path, {}, /*own_cache=*/true);
  } catch (const graph::GraphError&) {
    return {};  // make_witness says why (kGraph) or takes the generator
  }
  const graph::Graph& g = ev->graph();
  WtnsMemfd out(g.curve, g.witness_size);
  if (!evaluate_one(*ev, input_fd, out.values())) return {};
  return out.finish();
}

files::UniqueFd make_witness(const std::string& exe, int input_fd, const GeneratorInfo& info,
                             const GenerateOptions& opt, WitnessEngine engine, bool* used_graph) {
  if (used_graph) *used_graph = false;
  const uint32_t curve = graph_curve_of(info.prime);
  if (engine != WitnessEngine::kGenerator && (curve || engine == WitnessEngine::kGraph)) {
    // The memfd only where a graph may serve (a wasm circuit has none and
    // pays nothing); with no curve the graph knows, or no graph,
    // graph_witness_into refuses before it writes.
    std::optional<WtnsMemfd> out;
    if (curve && graph_state(exe).present) out.emplace(curve, info.witness_size);
    if (graph_witness_into(exe, input_fd, engine, curve, info.witness_size, out ? out->values() : nullptr)) {
      if (used_graph) *used_graph = true;
      return out->finish();
    }
  }
  return generate_witness(exe, input_fd, info, opt);
}

}  // namespace zkfarm::witgen
