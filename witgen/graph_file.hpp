#pragma once
// Reading a witness graph (graph_format.hpp) as hostile input: every count
// is checked against the bytes that are left, every reference against what
// precedes it, every constant against the prime, so a corrupted or crafted
// file is refused with what is wrong and where, never evaluated out of
// bounds. Graph files zkfarm keeps end in the SHA-256 of their content (64
// hex digits).
#include <cstdint>
#include <optional>
#include <stdexcept>
#include <string>
#include <vector>

#include "groth16/curve_id.hpp"
#include "groth16/field.hpp"
#include "witgen/graph_ops.hpp"

namespace zkfarm::witgen::graph {

/// A graph that cannot be used; what() names the fault and its byte offset.
struct GraphError : std::runtime_error {
  using std::runtime_error::runtime_error;
};

/// One input signal of the main component: circom's FNV-1a hash of its name
/// and its values' place among the input values.
struct InputSignalSlot {
  uint64_t hash = 0;
  uint32_t offset = 0;
  uint32_t size = 0;
};

/// One operation; operands are references (graph_format.hpp), or for
/// kLogText's second one a string index. Operands past the arity are 0.
struct Node {
  Op op = Op::kAdd;
  uint32_t a = 0, b = 0, c = 0;
};

/// f(reference, operand number) for each reference `nd` reads (kLogText's
/// second operand is a string index, not a reference).
template <class F>
void for_each_ref(const Node& nd, F&& f) {
  f(nd.a, 0);
  if (nd.op != Op::kLogText && arity(nd.op) >= 2) f(nd.b, 1);
  if (arity(nd.op) == 3) f(nd.c, 2);
}

/// A parsed graph, valid by construction (parse_graph's checks).
struct Graph {
  uint32_t curve = 0;         ///< kCurveBn254 or kCurveBls12381
  uint32_t input_values = 0;  ///< values of the inputs, flattened
  uint32_t witness_size = 0;
  std::vector<InputSignalSlot> signals;
  std::vector<std::string> strings;
  std::vector<U256> consts;   ///< canonical residues
  std::vector<Node> nodes;
  std::vector<uint32_t> witness;  ///< a reference per witness value
};

/// Which of g's nodes are live (1): those a witness value, an assert or a
/// log reaches; the planner drops the others. One byte a node.
std::vector<uint8_t> live_nodes(const Graph& g);

/// Parses a graph as the recorder writes it (no trailer). At most
/// `max_nodes` nodes. Throws GraphError.
Graph parse_graph(const uint8_t* data, size_t size, uint64_t max_nodes);

/// Writes `raw` (a graph as the recorder wrote it, already parsed) to
/// `path` with its SHA-256 (64 hex digits) appended: into a new file beside
/// it (O_EXCL, no link followed), fsynced, renamed into place.
/// Returns that digest. Throws GraphError.
std::string write_graph_file(const std::string& path, const std::vector<uint8_t>& raw);

/// Reads a file write_graph_file wrote (opened without following a link),
/// checks its SHA-256 and parses it. With `expected_sha256` (64 hex digits)
/// the file's digest must also be that one: the graph recorded when the
/// circuit was built and checked, not a file rewritten since with a digest
/// of its own. Throws GraphError naming the file.
Graph read_graph_file(const std::string& path, uint64_t max_nodes, const std::string& expected_sha256 = {});

/// The SHA-256 (64 hex digits) a graph file carries, checked against its
/// content (not parsed). Throws GraphError naming the file.
std::string graph_file_sha256(const std::string& path);

/// The curve of a graph file's curve number (graph_curve_number), or none
/// when no curve of the groth16 curve list has that number.
std::optional<CurveId> graph_curve_id(uint32_t curve);

/// The scalar field's prime of a graph curve (kCurveBn254, kCurveBls12381) as
/// 4 little-endian limbs, and as the 32 little-endian bytes a .wtns header and
/// parse_input take; nullptr / empty for another number.
const uint64_t* curve_modulus(uint32_t curve);
std::vector<uint8_t> curve_prime_le(uint32_t curve);

/// The decimal name of a curve for messages ("bn128", "bls12381": circom's --prime names).
const char* curve_name(uint32_t curve);

}  // namespace zkfarm::witgen::graph
