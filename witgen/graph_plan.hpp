#pragma once
// A prepared graph: the evaluator's plan (graph_eval.hpp) kept on disk beside
// the graph it was made from, so a process that evaluates a few witnesses
// (a one-shot `zkfarm-prove witness`, a freshly started synthesis worker)
// reads it instead of planning again: dead-code removal, range analysis,
// forms and slots take most of a one-shot run's time on SHA-256.
//
// File layout (little-endian; graph_format.hpp for the shared head):
//   "ZKWPLAN\0" · u32 version (kPlanVersion) · the graph file's SHA-256
//   (64 hex digits: the graph this plan was made from) · the graph's head
//   (curve … constants, as in the graph file) · u32 witness size + one
//   reference each · u32 field slots · u32 integer slots · u32 count ·
//   zeros to a multiple of 8 · instructions (16 bytes each, Evaluator::Instr's bytes) · u32 count +
//   witness indices (a long group after its count) · u32 count + the selects'
//   third operands · one i64 per constant (its integer) · XXH3-128 of all
//   of the above (32 hex digits: a checksum against damage, graph_plan.cpp).
// A plan is zkfarm's own output (written by the process that built and
// checked the graph, in zkfarm's cache), but it is read as the graph is:
// digest checked, every count against the bytes left, every instruction
// against what it indexes (Evaluator(Graph, Plan)).
#include <memory>
#include <string>

#include "witgen/graph_eval.hpp"
#include "witgen/graph_reader.hpp"

namespace zkfarm::witgen::graph {

/// Bumped whenever the planner's operations, their meaning or Instr's layout
/// change: a plan of another version is not used (the graph is planned again).
inline constexpr uint32_t kPlanVersion = 4;  // 3: 16-byte instructions, side streams; 4: shared inversions

/// A plan file's trailer for `n` bytes of body: XXH3-128, 32 hex digits.
std::string plan_checksum(const void* p, size_t n);

/// The plan file kept beside a graph file: GRAPH.plan.
std::string plan_path(const std::string& graph_path);

/// Writes `ev`'s plan to `path` (a new file fsynced and renamed into place,
/// no link followed), bound to the graph file of digest `graph_sha256`.
/// Throws GraphError.
void write_plan_file(const std::string& path, const Evaluator& ev, const std::string& graph_sha256);

/// The evaluator kept in `path`, when it was made from the graph of digest
/// `graph_sha256`. Throws GraphError naming the file and the fault (damaged,
/// another version, another graph). `map`: the file mapped, not read
/// (map_file_bytes, graph_reader.hpp: only for a plan no other user can write).
std::unique_ptr<Evaluator> read_plan_file(const std::string& path, const std::string& graph_sha256, bool map = false);

/// The same from a plan file's bytes (checksum included), which the
/// evaluator keeps (it points into them). Throws GraphError naming the fault.
std::unique_ptr<Evaluator> parse_plan(const FileBytes& bytes, const std::string& graph_sha256);

/// The SHA-256 a graph file's last 64 bytes claim (not checked against its
/// content: enough to tell which graph a plan belongs to). Throws GraphError.
std::string claimed_graph_sha256(const std::string& graph_path);

}  // namespace zkfarm::witgen::graph
