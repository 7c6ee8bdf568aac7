#pragma once
// Range analysis of a witness graph: for each node, an interval of integers
// that holds its value for every input, where one can be proved. The
// evaluator (graph_eval.cpp) keeps a node whose interval is narrow as a
// signed machine integer per input instead of a 4-limb field element: SHA-256's
// bits, its word sums and byte packing, counters, comparison results.
//
// A field element x "is" the integer v when x = v mod p; v ∈ [lo, hi] with
// |lo|, |hi| ≤ kNarrowLimit (2^62) is narrow. Since 2^62 < (p − 1)/2 for both
// scalar fields, a narrow value's signed reading (graph_ops.hpp: val(x) = x − p
// above (p − 1)/2) is v itself, so relations on narrow values are integer
// comparisons, and sums and products of narrow values whose interval stays
// narrow never wrap mod p: the int64 arithmetic is the field's exactly.
//
// Sound by construction: inputs are unknown (any residue), and each
// operation's rule bounds its result from its operands' bounds alone (interval
// arithmetic for + − ×, max/min for selects and bitwise operations, the
// width of p for shifts of unknown values, {0, 1} for relations and
// booleans); an operation with no rule is not narrow. The witness graph's
// byte-for-byte check against the circuit's own generator (graph_build.cpp)
// still runs over every graph.
#include <cstdint>
#include <vector>

#include "witgen/graph_file.hpp"

namespace zkfarm::witgen::graph {

/// The largest magnitude a narrow value may have.
inline constexpr int64_t kNarrowLimit = int64_t(1) << 62;

/// A node's proven range: v ∈ [lo, hi] when narrow; nothing known otherwise.
struct Range {
  bool narrow = false;
  int64_t lo = 0, hi = 0;
  bool non_negative() const { return narrow && lo >= 0; }
};

/// The range of a graph reference (graph_format.hpp): a node's or a
/// constant's from the tables value_ranges() gives; an input's is unknown.
Range ref_range(uint32_t ref, const std::vector<Range>& nodes, const std::vector<Range>& consts);

/// The range of each node of `g` (entries of nodes without a value stay not
/// narrow), and of each constant in `const_ranges`. Linear in the graph.
std::vector<Range> value_ranges(const Graph& g, std::vector<Range>& const_ranges);

}  // namespace zkfarm::witgen::graph
