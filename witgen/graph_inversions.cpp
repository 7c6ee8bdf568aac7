// Grouped inversions (graph_inversions.hpp): depth, levels, then the
// reordered program with each shared level's Montgomery block in front of
// the nodes of its depth.
#include "witgen/graph_inversions.hpp"

#include <algorithm>
#include <cstdint>
#include <vector>

#include "witgen/graph_format.hpp"

namespace zkfarm::witgen::graph {

namespace {

constexpr uint32_t kNoLevel = ~uint32_t(0);

bool is_log(Op op) { return op == Op::kLogText || op == Op::kLogValue; }

// The reference of constant `v` in g.consts, or kNoLevel when the graph has
// none (the consts are the graph file's: a plan made from this graph is
// read back beside that file, so nothing is added to them).
uint32_t find_const(const Graph& g, uint64_t v) {
  const U256 want{v, 0, 0, 0};
  for (size_t i = 0; i < g.consts.size(); ++i)
    if (g.consts[i] == want) return make_ref(RefKind::kConst, uint32_t(i));
  return kNoLevel;
}

}  // namespace

size_t share_inversions(Graph& g, uint32_t level_members) {
  const uint32_t n = uint32_t(g.nodes.size());
  if (level_members < 2) level_members = 2;
  // Most graphs (SHA-256, Poseidon) have no two inversions: nothing to
  // allocate for them.
  if (std::count_if(g.nodes.begin(), g.nodes.end(), [](const Node& nd) {
        return nd.op == Op::kInv || nd.op == Op::kDiv;
      }) < 2)
    return 0;
  // Only live inversions share (live_nodes: as the planner counts them): a
  // dead one in a block would make its divisor's cone live, and a dead
  // x \ 0 there would fail inputs it never failed.
  const std::vector<uint8_t> live = live_nodes(g);
  // Depths (counted from the window's start: a value of an earlier window is
  // there already) and inversion levels, in one forward pass (nodes are
  // topological). A window closes once one of its levels holds
  // level_members inversions: the reorder never crosses a window, so a
  // level's block keeps at most about three values a member alive, however
  // many independent inversions a circuit has (values of a low depth that
  // the reorder moves up still live until their readers run).
  std::vector<uint32_t> depth(n, 0), level(n, kNoLevel);
  uint32_t window_start = 0;
  auto depth_of = [&](uint32_t ref) {
    if (ref_kind(ref) != RefKind::kNode || ref_index(ref) < window_start) return 0u;
    return depth[ref_index(ref)];
  };
  struct Window {
    uint32_t start, end, max_depth;
  };
  std::vector<Window> windows;
  std::vector<uint32_t> level_count;
  size_t saved = 0, members = 0;
  uint32_t max_depth = 0, log_depth = 0;
  auto close_window = [&](uint32_t end) {
    for (uint32_t c : level_count)
      if (c >= 2) saved += c - 1;
    windows.push_back({window_start, end, max_depth});
    window_start = end;
    level_count.clear();
    max_depth = log_depth = 0;
  };
  for (uint32_t k = 0; k < n; ++k) {
    const Node& nd = g.nodes[k];
    uint32_t d = 0;
    for_each_ref(nd, [&](uint32_t ref, int) { d = std::max(d, depth_of(ref)); });
    if (!live[k]) {
      // no level: left as it is (the planner drops it)
    } else if (nd.op == Op::kInv) {
      level[k] = d + 1;
      d = level[k];
    } else if (nd.op == Op::kDiv) {
      level[k] = depth_of(nd.b) + 1;
      d = std::max(level[k], depth_of(nd.a));
    }
    if (is_log(nd.op)) log_depth = d = std::max(d, log_depth);  // logs stay in order
    depth[k] = d;
    max_depth = std::max(max_depth, d);
    if (level[k] != kNoLevel) {
      ++members;
      if (level_count.size() <= level[k]) level_count.resize(size_t(level[k]) + 1, 0);
      if (++level_count[level[k]] == level_members) close_window(k + 1);
    }
  }
  if (window_start < n) close_window(n);
  if (saved == 0) return 0;  // nothing shared: the program keeps its order
  // At most 8 nodes a shared member (eq, select, two products, the result's
  // select and product, its level's inversion; two more once for 0 and 1): a
  // graph that could grow past kMaxRewrittenNodes is left as it was, so the
  // rewrite never multiplies a large graph's memory.
  if (uint64_t(n) + 8 * members + 2 > kMaxRewrittenNodes) return 0;

  std::vector<Node> out;
  out.reserve(size_t(n) + 7 * saved + 2);
  auto emit = [&](Op op, uint32_t a, uint32_t b = 0, uint32_t c = 0) {
    out.push_back(Node{op, a, b, c});
    return make_ref(RefKind::kNode, uint32_t(out.size() - 1));
  };
  // 0 and 1: the graph's constants, or else two nodes made once, before the
  // first block, from its first divisor (d ≠ d is 0, d == d is 1).
  const uint32_t const_one = find_const(g, 1);
  uint32_t zero = find_const(g, 0), one = const_one;
  auto need_zero_one = [&](uint32_t d) {
    if (zero == kNoLevel) zero = emit(Op::kNeq, d, d);
    if (one == kNoLevel) one = emit(Op::kEq, d, d);
  };
  std::vector<uint32_t> new_ref(n, 0), zero_of(n, 0), inverse_of(n, 0);
  auto remap = [&](uint32_t ref) { return ref_kind(ref) == RefKind::kNode ? new_ref[ref_index(ref)] : ref; };
  // Each window's nodes by depth and its inversions by level: counting sorts
  // (stable, so each list keeps the program's order), flat arrays.
  std::vector<uint32_t> depth_start, by_depth, level_start, by_level, cursor;
  auto sort_by = [&](const Window& w, const std::vector<uint32_t>& key, std::vector<uint32_t>& start,
                     std::vector<uint32_t>& sorted) {
    start.assign(size_t(w.max_depth) + 2, 0);
    for (uint32_t k = w.start; k < w.end; ++k)
      if (key[k] != kNoLevel) ++start[key[k] + 1];
    for (size_t i = 1; i < start.size(); ++i) start[i] += start[i - 1];
    sorted.resize(start.back());
    cursor.assign(start.begin(), start.end() - 1);
    for (uint32_t k = w.start; k < w.end; ++k)
      if (key[k] != kNoLevel) sorted[cursor[key[k]]++] = k;
  };
  std::vector<uint32_t> d_or_one, prefix;
  for (const Window& w : windows) {
    sort_by(w, depth, depth_start, by_depth);
    sort_by(w, level, level_start, by_level);
    auto level_size = [&](uint32_t L) { return level_start[L + 1] - level_start[L]; };
    for (uint32_t L = 0; L <= w.max_depth; ++L) {
      // Level L's block: its divisors are all of depth < L, already emitted.
      if (const uint32_t m = level_size(L); m >= 2) {
        const uint32_t* member = by_level.data() + level_start[L];
        d_or_one.clear();
        prefix.clear();
        for (uint32_t j = 0; j < m; ++j) {
          const uint32_t k = member[j];
          const Node& nd = g.nodes[k];
          const uint32_t d = remap(nd.op == Op::kInv ? nd.a : nd.b);
          need_zero_one(d);
          zero_of[k] = emit(Op::kEq, d, zero);
          d_or_one.push_back(emit(Op::kSelect, zero_of[k], one, d));
          prefix.push_back(prefix.empty() ? d_or_one.back() : emit(Op::kMul, prefix.back(), d_or_one.back()));
        }
        uint32_t inv = emit(Op::kInv, prefix.back());  // (Π d'_j)⁻¹
        for (uint32_t j = m; j-- > 1;) {
          inverse_of[member[j]] = emit(Op::kMul, inv, prefix[j - 1]);
          inv = emit(Op::kMul, inv, d_or_one[j]);
        }
        inverse_of[member[0]] = inv;
      }
      for (uint32_t i = depth_start[L]; i < depth_start[L + 1]; ++i) {
        const uint32_t k = by_depth[i];
        Node nd = g.nodes[k];
        if (level[k] != kNoLevel && level_size(level[k]) >= 2) {  // a member of a shared level
          uint32_t q = inverse_of[k];
          if (nd.op == Op::kDiv && remap(nd.a) != const_one) q = emit(Op::kMul, remap(nd.a), q);
          new_ref[k] = emit(Op::kSelect, zero_of[k], zero, q);
          continue;
        }
        const int ar = nd.op == Op::kLogText ? 1 : arity(nd.op);
        nd.a = remap(nd.a);
        if (ar >= 2) nd.b = remap(nd.b);
        if (ar >= 3) nd.c = remap(nd.c);
        new_ref[k] = emit(nd.op, nd.a, nd.b, nd.c);
      }
    }
  }
  for (uint32_t& w : g.witness) w = remap(w);
  g.nodes = std::move(out);
  return saved;
}

}  // namespace zkfarm::witgen::graph
