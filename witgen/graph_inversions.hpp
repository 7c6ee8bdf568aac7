#pragma once
// One inversion for many: a graph's field inversions and divisions (kInv,
// kDiv) grouped by inversion depth and rewritten into Montgomery's trick
// across nodes, so that one witness pays one modular inversion per group
// instead of one per node (issue 46: the IsEqual-heavy circuits of zk-email
// spend 45 % of a one-shot witness in ~5,400 separate inversions, EdDSA 37 %).
//
// Inversion depth: an inversion or division sits one level above its
// divisor's depth; any other node at the largest depth of its operands. The
// divisors of all inversions of level L are known once every node of depth
// below L is, so the program is reordered by depth (a stable sort: the
// original, topological order within a depth) and each level's divisors are
// inverted together:
//   z_j = (d_j == 0), d'_j = z_j ? 1 : d_j          (circom's 0⁻¹ = 0)
//   p_1 = d'_1, p_j = p_(j−1)·d'_j,  I = p_m⁻¹
//   backwards: d_j⁻¹ = I_j·p_(j−1), I_(j−1) = I_j·d'_j
//   x⁻¹ = z ? 0 : d⁻¹;  a / d = z ? 0 : a·d⁻¹
// (Montgomery, "Speeding the Pollard and elliptic curve methods of
// factorization", Math. Comp. 48 (1987), the simultaneous inversion.)
// Every result is the same field element as before, so witnesses stay byte
// for byte the same (the graph build still holds them to the generator).
// Logs keep their order: a log never moves before an earlier log. Dead
// inversions are not shared (that would make their cones live). Reordering
// happens inside windows, each closed once one of its levels holds
// kInversionWindow inversions.
#include <cstddef>
#include <cstdint>

#include "witgen/graph_file.hpp"

namespace zkfarm::witgen::graph {

/// Inversions a window of the program holds (the reorder never crosses a
/// window): enough to share nearly all of an inversion's cost at one
/// witness, few enough that the values kept alive stay in cache for a batch
/// of 64 (measured: docs/performance.md, 2026-12-06 session 7).
inline constexpr uint32_t kInversionWindow = 256;

/// The most nodes a rewritten graph may have (the default of
/// witness_graph_max_nodes, the recorder's limit): a graph that could grow
/// past it is not rewritten.
inline constexpr uint64_t kMaxRewrittenNodes = uint64_t(1) << 26;

/// Rewrites `g` (its nodes and witness references; its constants, strings
/// and inputs stay as they are, so a plan made from the result is read back
/// beside the graph file) so that live inversions and divisions of one
/// depth share one inversion; dead ones are left alone, so which nodes are
/// live, and which inputs fail, does not change. A graph with no level of
/// two or more, or one that could grow past kMaxRewrittenNodes, is left
/// exactly as it was. Returns the number of inversions the rewrite saved (members of
/// shared levels minus the levels). Evaluator(Graph) calls it unless
/// ZKFARM_NO_SHARED_INVERSIONS is set in the environment.
size_t share_inversions(Graph& g, uint32_t level_members = kInversionWindow);

}  // namespace zkfarm::witgen::graph
