#pragma once
// One witness from one input, by whichever engine the circuit has: its
// witness graph (graph_eval.hpp), evaluated in this process, or its
// generator (generator_run.hpp), in a process of its own. The graph is used
// where it was built and the caller allows it; an input the graph fails (an
// assert, a division by zero) goes to the generator, so a failure always
// carries circom's own words and never differs from the generator's verdict.
#include <memory>
#include <string>
#include <vector>

#include "files/unique_fd.hpp"
#include "witgen/generator_run.hpp"
#include "witgen/graph_eval.hpp"

namespace zkfarm::witgen {

/// Which engine makes witnesses: `--witness-engine` and `witness_engine`.
enum class WitnessEngine {
  kAuto,       ///< the graph where the circuit has one, else the generator
  kGraph,      ///< the graph; an error for a circuit without one
  kGenerator,  ///< the generator (native or wasm, as the circuit was given)
};
/// "auto", "graph", "native"/"wasm"/"generator" -> the engine; nullopt otherwise.
bool parse_witness_engine(const std::string& s, WitnessEngine& out);

/// What a built generator's folder says of its graph: DIR/graph, or why not.
struct GraphState {
  bool present = false;
  std::string path;    ///< DIR/graph
  std::string reason;  ///< when absent: DIR/graph.refused's line, or "no graph was built"
  /// Present but measured slower than the generator at its build
  /// (DIR/graph.slower, whose line `reason` then holds): `auto` keeps the
  /// generator, `graph` still takes it.
  bool slower = false;
  /// Slower one at a time, faster in batches (graph.slower's second line
  /// "batches: faster"): a synthesis worker's batch still takes it.
  bool batches_faster = false;
};
GraphState graph_state(const std::string& generator_exe);

/// graph.slower's text for `st` (its reason line and its batches line), or
/// "" when the graph is not marked slower: what a shared queue carries to
/// the other hosts, which write it back beside the graph they fetch.
std::string graph_slower_text(const GraphState& st);

/// How a circuit's witnesses are made by `auto`, for status and `circuit
/// add`: "graph" or "native (REASON)" / "wasm (REASON)", REASON also a
/// graph measured slower than the generator.
std::string witness_engine_line(const std::string& generator_exe, const std::string& kind);

/// The evaluator of the graph file `path`, read, checked and planned once
/// per process (kept by path and expected digest; a file that changed under
/// the same path after its load is not noticed: the cache folder is zkfarm's
/// own and written once). With `expected_sha256`, a file of another digest
/// is refused (graph::read_graph_file). Throws graph::GraphError; a refusal
/// is kept too and thrown again without reading the file (the generator
/// serves that circuit until the worker restarts). `own_cache`: the graph
/// lies in the calling user's own generator cache (a one-shot zkfarm-prove),
/// so its plan is mapped instead of read (graph::map_file_bytes) and a plan
/// that cannot be used is replaced by the one made now; elsewhere (a
/// synthesis worker on zkfarmd's build folder) the plan is read and nothing
/// is written.
std::shared_ptr<const graph::Evaluator> load_graph(const std::string& path, const std::string& expected_sha256 = {},
                                                   bool own_cache = false);

/// The witness of the input in `input_fd` (read from its start, at most
/// kMaxInputBytes) as a .wtns in a memfd. With the graph when `engine`
/// allows and the circuit has one (then *used_graph is set), else with
/// the generator `exe`. Throws GenerateError as generate_witness does.
files::UniqueFd make_witness(const std::string& exe, int input_fd, const GeneratorInfo& info,
                             const GenerateOptions& opt, WitnessEngine engine, bool* used_graph = nullptr);

/// The witness of the input in `input_fd` (read from its start) from the
/// circuit's graph alone, as a .wtns in a memfd, when `engine` allows and
/// the graph serves it (present, usable, and under kAuto not measured
/// slower): its curve and size are the graph's, checked against the
/// generator when the graph was built, so no generator process is started
/// (a one-shot witness's --info). Null otherwise, and for an input the graph
/// fails: the caller goes on with generator_info and make_witness. Throws
/// GenerateError (input_fault) for an input of the wrong shape. For a
/// one-shot process on its user's own generator cache (load_graph's own_cache).
files::UniqueFd graph_witness_alone(const std::string& exe, int input_fd, WitnessEngine engine);

/// The witness of the input in `input_fd` evaluated from the circuit's
/// graph straight into `out` (witness_size × 32 bytes, canonical
/// little-endian: an arena slot's layout) when `engine` allows, the circuit
/// has a graph of `witness_size` values on `curve`, and the input passes
/// its asserts; true then. False when the graph is not to be or cannot be
/// used, or the input fails in it: the caller asks the generator
/// (make_witness with kGenerator), which says why in circom's words. Throws
/// GenerateError (input_fault) for an input of the wrong shape, and for
/// engine kGraph when the circuit has no usable graph.
/// `graph_sha256`: the digest recorded for the circuit's graph at `circuit
/// add` ("" : none recorded, any valid graph file is used); a graph file of
/// another digest is not used, and `*refused` (when given) says why.
bool graph_witness_into(const std::string& exe, int input_fd, WitnessEngine engine, uint32_t curve,
                        uint32_t witness_size, uint8_t* out, const std::string& graph_sha256 = {},
                        std::string* refused = nullptr);

/// The input in `input_fd` (read from its start, at most kMaxInputBytes)
/// as `ev`'s input values, in the circuit's order. Throws GenerateError
/// (input_fault) for an input that is not JSON or not of the circuit's shape.
std::vector<U256> graph_input_values(const graph::Evaluator& ev, int input_fd);

/// A .wtns built in place in a memfd: the header written at construction,
/// the values area (count × 32 bytes, canonical little-endian, of the
/// curve's scalar field; zero until written) handed to the evaluator, and
/// the descriptor at offset 0 from finish(). Nothing is copied: a
/// 1M-constraint circuit's witness is 32 MB, and the one-shot path used to
/// copy it four times. Throws GenerateError when the memfd cannot be made.
class WtnsMemfd {
 public:
  WtnsMemfd(uint32_t curve, uint32_t count);
  ~WtnsMemfd();
  WtnsMemfd(const WtnsMemfd&) = delete;
  WtnsMemfd& operator=(const WtnsMemfd&) = delete;
  uint8_t* values() { return map_ + values_at_; }
  /// Unmaps and returns the descriptor, at offset 0.
  files::UniqueFd finish();

 private:
  files::UniqueFd fd_;
  uint8_t* map_ = nullptr;
  size_t size_ = 0, values_at_ = 0;
};

}  // namespace zkfarm::witgen
