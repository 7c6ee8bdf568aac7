#include "witgen/graph_eval.hpp"

#include <emmintrin.h>

#include <algorithm>
#include <cstdlib>
#include <unordered_map>

#include "groth16/curve_list.hpp"
#include "groth16/mont_mul_lanes.hpp"
#include "witgen/graph_format.hpp"
#include "witgen/graph_inversions.hpp"
#include "witgen/graph_range.hpp"

namespace zkfarm::witgen::graph {

namespace {

constexpr uint32_t kNone = UINT32_MAX;
constexpr uint32_t kMaxIndex = uint32_t(1) << 29;  // an index in a packed operand

std::string decimal(U256 x) {
  if ((x[0] | x[1] | x[2] | x[3]) == 0) return "0";
  std::string s;
  while (x[0] | x[1] | x[2] | x[3]) {  // divide by 10, most significant limb first
    unsigned __int128 rem = 0;
    for (int i = 3; i >= 0; --i) {
      const unsigned __int128 cur = (rem << 64) | x[i];
      x[i] = uint64_t(cur / 10);
      rem = cur % 10;
    }
    s.push_back(char('0' + int(rem)));
  }
  std::reverse(s.begin(), s.end());
  return s;
}

// r[i] = a[i] ± b[i] mod p for 4-limb elements, i < n (strides as Lanes:
// 0 repeats element 0), each lane's limbs in locals and written once into
// r[i]; r may be a or b. Fp's operators return a temporary that GCC kept on
// the stack and reloaded 16 bytes at a time right after four 8-byte stores:
// a store-forwarding stall on every lane (perf annotate of the long Poseidon
// chain), and its a + b chose the reduction by a jump on the borrow. The
// same values as Fp's, reduced by masks.
template <class F, bool kSubtract>
void add_sub_lanes(const F* a, size_t as, const F* b, size_t bs, F* r, size_t n) {
  static_assert(F::N == 4);
  const uint64_t* p = F::Params::kModulus;
  for (size_t i = 0; i < n; ++i) {
    const uint64_t* x = a[i * as].v;
    const uint64_t* y = b[i * bs].v;
    unsigned long long t0, t1, t2, t3, s0, s1, s2, s3;
    if constexpr (kSubtract) {
      unsigned char c = _subborrow_u64(0, x[0], y[0], &t0);
      c = _subborrow_u64(c, x[1], y[1], &t1);
      c = _subborrow_u64(c, x[2], y[2], &t2);
      c = _subborrow_u64(c, x[3], y[3], &t3);
      const uint64_t m = 0 - uint64_t(c);  // borrowed: add p back
      c = _addcarry_u64(0, t0, p[0] & m, &s0);
      c = _addcarry_u64(c, t1, p[1] & m, &s1);
      c = _addcarry_u64(c, t2, p[2] & m, &s2);
      _addcarry_u64(c, t3, p[3] & m, &s3);
      r[i].v[0] = s0, r[i].v[1] = s1, r[i].v[2] = s2, r[i].v[3] = s3;
    } else {
      unsigned char c = _addcarry_u64(0, x[0], y[0], &t0);  // < 2p < 2^256: no carry out
      c = _addcarry_u64(c, x[1], y[1], &t1);
      c = _addcarry_u64(c, x[2], y[2], &t2);
      _addcarry_u64(c, x[3], y[3], &t3);
      c = _subborrow_u64(0, t0, p[0], &s0);
      c = _subborrow_u64(c, t1, p[1], &s1);
      c = _subborrow_u64(c, t2, p[2], &s2);
      c = _subborrow_u64(c, t3, p[3], &s3);
      const uint64_t keep = 0 - uint64_t(c);  // t < p: keep t
      r[i].v[0] = (t0 & keep) | (s0 & ~keep), r[i].v[1] = (t1 & keep) | (s1 & ~keep);
      r[i].v[2] = (t2 & keep) | (s2 & ~keep), r[i].v[3] = (t3 & keep) | (s3 & ~keep);
    }
  }
}

}  // namespace

// The planner's own operations (never in a graph file).
constexpr Op kToMont = Op(100);     ///< a canonical -> Montgomery
constexpr Op kToCanon = Op(101);    ///< a Montgomery -> canonical
constexpr Op kMulMixed = Op(102);   ///< a canonical × b Montgomery -> the canonical product (one multiplication)
constexpr Op kSmallToMont = Op(103);   ///< an integer -> Montgomery
constexpr Op kSmallToCanon = Op(104);  ///< an integer -> canonical
// On integers (narrow values, graph_range.hpp); the result is an integer.
constexpr Op kSAdd = Op(110), kSSub = Op(111), kSNeg = Op(112), kSMul = Op(113);
constexpr Op kSSelect = Op(114);       ///< (c, a, b): c in any form, a and b integers
constexpr Op kSCanon = Op(115);        ///< Instr::sub, a canonical_op, on integer operands
constexpr Op kCanonToSmall = Op(116);  ///< Instr::sub, a canonical_op, on canonical operands

/// A canonical_op on integer lanes x, y (graph_range.hpp's rules hold: the
/// operands of |, ^, >>, <<, \ and % are ≥ 0, a shift's amount too, and the
/// result is narrow). p0: the prime's lowest limb, for a negative operand of
/// &, whose residue p + v has p0 + v as its lowest limb.
template <class L>
void small_canonical(Op op, const L& x, const L& y, int64_t* r, size_t B, uint64_t p0, std::vector<uint8_t>& fault) {
  auto low = [p0](int64_t v) { return uint64_t(v) + (v < 0 ? p0 : 0); };
  switch (op) {
    case Op::kEq: for (size_t i = 0; i < B; ++i) r[i] = x[i] == y[i]; break;
    case Op::kNeq: for (size_t i = 0; i < B; ++i) r[i] = x[i] != y[i]; break;
    case Op::kLt: for (size_t i = 0; i < B; ++i) r[i] = x[i] < y[i]; break;
    case Op::kGt: for (size_t i = 0; i < B; ++i) r[i] = x[i] > y[i]; break;
    case Op::kLeq: for (size_t i = 0; i < B; ++i) r[i] = x[i] <= y[i]; break;
    case Op::kGeq: for (size_t i = 0; i < B; ++i) r[i] = x[i] >= y[i]; break;
    case Op::kLand: for (size_t i = 0; i < B; ++i) r[i] = x[i] != 0 && y[i] != 0; break;
    case Op::kLor: for (size_t i = 0; i < B; ++i) r[i] = x[i] != 0 || y[i] != 0; break;
    case Op::kLnot: for (size_t i = 0; i < B; ++i) r[i] = x[i] == 0; break;
    case Op::kBand: for (size_t i = 0; i < B; ++i) r[i] = int64_t(low(x[i]) & low(y[i])); break;
    case Op::kBor: for (size_t i = 0; i < B; ++i) r[i] = x[i] | y[i]; break;
    case Op::kBxor: for (size_t i = 0; i < B; ++i) r[i] = x[i] ^ y[i]; break;
    // The guards cost nothing a planned program needs (its amounts are small
    // and ≥ 0) and keep a damaged plan from undefined shifts.
    case Op::kShr: for (size_t i = 0; i < B; ++i) r[i] = uint64_t(y[i]) >= 63 ? 0 : x[i] >> y[i]; break;
    case Op::kShl: for (size_t i = 0; i < B; ++i) r[i] = uint64_t(y[i]) >= 63 ? 0 : int64_t(uint64_t(x[i]) << y[i]); break;
    case Op::kIdiv:
    case Op::kMod:
      for (size_t i = 0; i < B; ++i) {
        if (y[i] <= 0) {  // 0: circom's native code dies of SIGFPE, a fault of the input (< 0: never planned)
          fault[i] = 1;
          r[i] = 0;
        } else {
          r[i] = op == Op::kIdiv ? x[i] / y[i] : x[i] % y[i];
        }
      }
      break;
    default: break;  // the planner sends no other operation here
  }
}

// The integer instructions' arithmetic: wrapping, so defined for any
// operands (a damaged plan's too); the same for a batch's lanes and for one
// witness's fast path in run().
inline int64_t small_add(int64_t x, int64_t y) { return int64_t(uint64_t(x) + uint64_t(y)); }
inline int64_t small_sub(int64_t x, int64_t y) { return int64_t(uint64_t(x) - uint64_t(y)); }
inline int64_t small_mul(int64_t x, int64_t y) { return int64_t(uint64_t(x) * uint64_t(y)); }
inline int64_t small_neg(int64_t x, int64_t) { return int64_t(0 - uint64_t(x)); }

bool is_linear(Op op) { return op == Op::kAdd || op == Op::kSub || op == Op::kNeg || op == Op::kSelect; }

Evaluator::Evaluator(Graph g) : g_(std::move(g)) {
  // Before anything is planned: one inversion per depth, not per node.
  // ZKFARM_NO_SHARED_INVERSIONS plans as before (to compare, or to rule it out).
  if (!std::getenv("ZKFARM_NO_SHARED_INVERSIONS")) share_inversions(g_);
  const uint32_t n = uint32_t(g_.nodes.size());
  // Dead code: what no witness value, assert or log reaches.
  const std::vector<uint8_t> live = live_nodes(g_);
  std::vector<uint32_t> votes_canon(n, 0), votes_mont(n, 0);
  for (uint32_t w : g_.witness)
    if (ref_kind(w) == RefKind::kNode) ++votes_canon[ref_index(w)];  // the witness is written canonical
  // Backwards: the form each value's readers want (a reader that only adds
  // passes on the form its own readers want).
  std::vector<uint8_t> pref(n, kMont);
  for (uint32_t k = n; k-- > 0;) {
    const Node& nd = g_.nodes[k];
    if (!live[k]) continue;
    pref[k] = votes_canon[k] > votes_mont[k] ? kCanon : kMont;
    for_each_ref(nd, [&](uint32_t ref, int which) {
      if (ref_kind(ref) != RefKind::kNode) return;
      const uint32_t src = ref_index(ref);
      if (canonical_op(nd.op) || nd.op == Op::kLogValue) ++votes_canon[src];
      else if (is_linear(nd.op) && !(nd.op == Op::kSelect && which == 0)) ++(pref[k] == kCanon ? votes_canon : votes_mont)[src];
      else if (nd.op != Op::kAssert && nd.op != Op::kSelect && nd.op != Op::kLogText) ++votes_mont[src];
    });
  }
  // Each live node's last reader (an instruction index).
  std::vector<uint32_t> instr_of(n, kNone), last_use(n, kNone);
  uint32_t count = 0;
  for (uint32_t k = 0; k < n; ++k)
    if (live[k]) instr_of[k] = count++;
  for (uint32_t k = 0; k < n; ++k)
    if (live[k]) for_each_ref(g_.nodes[k], [&](uint32_t ref, int) {
      if (ref_kind(ref) == RefKind::kNode) last_use[ref_index(ref)] = instr_of[k];
    });
  // Witness entries by node (counting sort: a node's entries side by side, in witness order).
  std::vector<uint32_t> out_start(size_t(n) + 1, 0), out_list;
  for (uint32_t w : g_.witness)
    if (ref_kind(w) == RefKind::kNode) ++out_start[ref_index(w) + 1];
  for (uint32_t k = 0; k < n; ++k) out_start[k + 1] += out_start[k];
  out_list.resize(out_start[n]);
  {
    std::vector<uint32_t> fill(out_start.begin(), out_start.end() - 1);
    for (uint32_t w = 0; w < g_.witness.size(); ++w)
      if (ref_kind(g_.witness[w]) == RefKind::kNode) out_list[fill[ref_index(g_.witness[w])]++] = w;
  }

  // Narrow values (graph_range.hpp): kept as integers, whatever their readers want.
  std::vector<Range> const_range;
  const std::vector<Range> range = value_ranges(g_, const_range);
  p_.small_consts.assign(g_.consts.size(), 0);
  for (size_t i = 0; i < g_.consts.size(); ++i)
    if (const_range[i].narrow) p_.small_consts[i] = const_range[i].lo;

  // Forwards: forms, conversions and slots (free lists, one for field slots
  // and one for integer slots; an operand's slot is free once its last
  // reader has read it).
  std::vector<uint32_t> slot_of(n, kNone), free_slots, free_small;
  std::vector<uint8_t> form_of(n, kMont);
  auto new_slot = [&](uint8_t form) {
    std::vector<uint32_t>& list = form == kSmall ? free_small : free_slots;
    if (list.empty()) list.push_back(form == kSmall ? p_.small_slots++ : p_.slots++);
    const uint32_t s = list.back();
    list.pop_back();
    return s;
  };
  auto free_slot = [&](uint8_t form, uint32_t s) { (form == kSmall ? free_small : free_slots).push_back(s); };
  p_.code.reserve(count);
  for (uint32_t k = 0; k < n; ++k) {
    if (!live[k]) continue;
    const Node& nd = g_.nodes[k];
    Instr in{};
    in.op = nd.op;
    Operand ops[3];
    int flexible[3] = {1, 1, 1};  // a constant or an input: read in whichever form is wanted
    uint8_t have[3] = {kMont, kMont, kMont};
    bool readable_small[3] = {false, false, false};  // an integer slot or a narrow constant
    for_each_ref(nd, [&](uint32_t ref, int which) {
      Operand& o = ops[which];
      o.index = ref_index(ref);
      switch (ref_kind(ref)) {
        case RefKind::kNode:
          o.kind = form_of[o.index] == kSmall ? 3 : 0;
          have[which] = form_of[o.index];
          readable_small[which] = have[which] == kSmall;
          o.index = slot_of[o.index];
          flexible[which] = 0;
          break;
        case RefKind::kConst:
          o.kind = 1;
          readable_small[which] = const_range[o.index].narrow;
          break;
        default: o.kind = 2; break;
      }
      o.form = have[which] == kSmall ? kMont : have[which];  // an integer slot's form bit is unused
    });
    if (nd.op == Op::kLogText) ops[1] = Operand{1, kCanon, nd.b};
    for (const Operand& o : ops)
      if (o.index >= kMaxIndex) throw GraphError("the graph is too large to plan (an index past 2^29)");
    // The form each operand must be read in, and the result's.
    uint8_t want[3] = {kMont, kMont, kMont};
    const int ar = nd.op == Op::kLogText ? 1 : arity(nd.op);
    if (has_value(nd.op) && range[k].narrow) {
      // An integer result: from integer operands where the operation allows
      // (graph_range.hpp), else a canonical operation on canonical operands.
      in.form = kSmall;
      in.sub = nd.op;
      const int first = nd.op == Op::kSelect ? 1 : 0;
      bool all_small = true;
      for (int i = first; i < ar; ++i) all_small = all_small && readable_small[i];
      // Shifts right and moduli of a possibly negative integer read its residue p + v: canonical.
      if ((nd.op == Op::kShr || nd.op == Op::kMod) && !ref_range(nd.a, range, const_range).non_negative()) all_small = false;
      if (all_small) {
        switch (nd.op) {
          case Op::kAdd: in.op = kSAdd; break;
          case Op::kSub: in.op = kSSub; break;
          case Op::kNeg: in.op = kSNeg; break;
          case Op::kMul: in.op = kSMul; break;
          case Op::kSelect: in.op = kSSelect; break;
          default: in.op = kSCanon; break;
        }
        for (int i = first; i < ar; ++i) want[i] = kSmall;
        if (nd.op == Op::kSelect) want[0] = have[0];  // only its zero-ness is read
      } else {
        if (!canonical_op(nd.op)) throw GraphError("internal: a narrow value without an integer rule");
        in.op = kCanonToSmall;
        want[0] = want[1] = kCanon;
      }
    } else if (canonical_op(nd.op)) {
      want[0] = want[1] = kCanon;
      in.form = kCanon;
    } else if (nd.op == Op::kMul) {
      const bool a_c = !flexible[0] && have[0] == kCanon, b_c = !flexible[1] && have[1] == kCanon;
      const bool a_m = !flexible[0] && have[0] == kMont, b_m = !flexible[1] && have[1] == kMont;
      if (pref[k] == kMont || (a_m && b_m)) {
        in.form = kMont;  // plain Montgomery product
      } else {  // a canonical product: one operand canonical, the other Montgomery
        in.op = kMulMixed;
        in.form = kCanon;
        // The canonical one (or a constant or input, read canonical) first, the Montgomery one second.
        if ((b_c && !a_c) || (a_m && !b_m)) {
          std::swap(ops[0], ops[1]);
          std::swap(flexible[0], flexible[1]);
          std::swap(have[0], have[1]);
        }
        want[0] = kCanon;
        want[1] = kMont;
      }
    } else if (is_linear(nd.op)) {
      const int first = nd.op == Op::kSelect ? 1 : 0, last = nd.op == Op::kSelect ? 2 : ar - 1;
      int canon = 0, mont = 0;
      for (int i = first; i <= last; ++i)
        if (!flexible[i] && have[i] != kSmall) ++(have[i] == kCanon ? canon : mont);
      in.form = canon && !mont ? kCanon : mont && !canon ? kMont : pref[k];
      for (int i = first; i <= last; ++i) want[i] = in.form;
      if (nd.op == Op::kSelect) want[0] = have[0];  // only its zero-ness is read
    } else if (nd.op == Op::kAssert || nd.op == Op::kLogText) {
      want[0] = have[0];
      want[1] = have[1];
    } else if (nd.op == Op::kLogValue) {
      want[0] = have[0];
      want[1] = kCanon;
    }  // div, inv, pow: Montgomery throughout
    // Conversions of slots read in the other form, into temporary slots (a
    // flexible operand is read as it is wanted: constants in every form,
    // inputs as field elements only, never wanted as integers).
    uint32_t temps[3];
    int n_temps = 0;
    for (int i = 0; i < ar; ++i) {
      if (want[i] == kSmall) continue;  // an integer operand: an integer slot or a narrow constant
      if (flexible[i] || have[i] == want[i]) {
        ops[i].form = want[i];
        continue;
      }
      Instr cv{};
      cv.op = have[i] == kSmall ? (want[i] == kMont ? kSmallToMont : kSmallToCanon) : want[i] == kMont ? kToMont : kToCanon;
      cv.form = want[i];
      cv.a = ops[i].packed();
      cv.dst = new_slot(want[i]);
      p_.code.push_back(cv);
      temps[n_temps++] = cv.dst;
      ops[i] = Operand{0, want[i], cv.dst};
    }
    in.a = ops[0].packed();
    in.b = ops[1].packed();
    if (ar == 3) p_.thirds.push_back(ops[2].packed());  // a select's, kSelect or kSSelect
    const uint32_t here = instr_of[k];
    for_each_ref(nd, [&](uint32_t ref, int) {
      if (ref_kind(ref) != RefKind::kNode) return;
      const uint32_t src = ref_index(ref);
      if (last_use[src] == here && slot_of[src] != kNone) {
        free_slot(form_of[src], slot_of[src]);
        slot_of[src] = kNone;  // released once even when read twice here
      }
    });
    for (int t = 0; t < n_temps; ++t) free_slot(kMont, temps[t]);
    if (has_value(nd.op)) {
      // Reusing a slot just read is safe: each lane reads its operands before writing.
      in.dst = new_slot(in.form);
      slot_of[k] = in.dst;
      form_of[k] = in.form;
      const uint32_t n_outs = out_start[k + 1] - out_start[k];
      in.outs = uint8_t(std::min<uint32_t>(n_outs, kOutsEscape));
      if (n_outs >= kOutsEscape) p_.outs.push_back(n_outs);  // the long group's count, before it
      p_.outs.insert(p_.outs.end(), out_list.begin() + out_start[k], out_list.begin() + out_start[k + 1]);
      if (last_use[k] == kNone) {  // a witness value nobody reads: its slot is free again at once
        free_slot(in.form, in.dst);
        slot_of[k] = kNone;
      }
      if (in.form == kSmall) ++p_.small_instructions;
    }
    p_.code.push_back(in);
  }
  if (p_.slots >= kMaxIndex || p_.small_slots >= kMaxIndex) throw GraphError("the graph is too large to plan (2^29 live values)");
  code_ = p_.code;
  outs_ = p_.outs;
  thirds_ = p_.thirds;
}

size_t Evaluator::instructions() const { return code_.size(); }
uint32_t Evaluator::slots() const { return p_.slots; }
uint32_t Evaluator::small_slots() const { return p_.small_slots; }
size_t Evaluator::small_instructions() const { return size_t(p_.small_instructions); }
size_t Evaluator::inversions() const {
  return size_t(std::count_if(code_.begin(), code_.end(), [](const Instr& in) { return in.op == Op::kInv || in.op == Op::kDiv; }));
}

namespace {

// Operand kinds, as packed in an operand's top two bits (Operand::packed):
// bit k of a mask allows kind k.
constexpr uint8_t kFieldKinds = 0b0111;    // a field slot, a constant or an input
constexpr uint8_t kIntegerKinds = 0b1010;  // an integer slot or a constant (its small_consts entry)
constexpr uint8_t kEitherKinds = 0b1111;   // either of the two (a select's or an assert's condition)
constexpr uint8_t kStringKind = 0b0010;    // kLogText's b: kind 1, an index into the strings

// What the plan check requires of one operation's instructions.
struct OpRule {
  bool known = false;       ///< an operation run() has a case for
  uint8_t a = 0, b = 0, c = 0;  ///< operand kinds allowed; 0: the operand is not read
  bool b_if_sub_binary = false;  ///< b read only when Instr::sub takes two operands
  bool b_string = false;     ///< b indexes the strings
  bool canonical_sub = false;  ///< Instr::sub must be a canonical_op
  bool small_result = false;  ///< writes an integer slot (form kSmall)
  bool has_value = false;     ///< writes a slot (else it fills no witness entry)
};
struct PlanRules {
  OpRule op[256];
  bool sub_binary[256];     ///< arity(sub) >= 2
  bool sub_canonical[256];  ///< canonical_op(sub)
};

const PlanRules& plan_rules() {
  static const PlanRules rules = [] {
    PlanRules t{};
    for (int i = 0; i < 256; ++i) {
      t.sub_binary[i] = arity(Op(i)) >= 2;
      t.sub_canonical[i] = canonical_op(Op(i));
    }
    auto set = [&](Op op, uint8_t a, uint8_t b, uint8_t c, bool small) {
      OpRule& r = t.op[uint8_t(op)];
      r.known = true;
      r.a = a, r.b = b, r.c = c;
      r.small_result = small;
      r.has_value = has_value(op);
    };
    for (int i = int(Op::kAdd); i <= int(Op::kLast); ++i)
      set(Op(i), kFieldKinds, arity(Op(i)) >= 2 ? kFieldKinds : 0, 0, false);
    set(Op::kSelect, kEitherKinds, kFieldKinds, kFieldKinds, false);
    set(Op::kAssert, kEitherKinds, kEitherKinds, 0, false);
    set(Op::kLogValue, kEitherKinds, kFieldKinds, 0, false);
    set(Op::kLogText, kEitherKinds, kStringKind, 0, false);
    t.op[uint8_t(Op::kLogText)].b_string = true;
    set(kToMont, kFieldKinds, 0, 0, false);
    set(kToCanon, kFieldKinds, 0, 0, false);
    set(kMulMixed, kFieldKinds, kFieldKinds, 0, false);
    set(kSmallToMont, kIntegerKinds, 0, 0, false);
    set(kSmallToCanon, kIntegerKinds, 0, 0, false);
    set(kSAdd, kIntegerKinds, kIntegerKinds, 0, true);
    set(kSSub, kIntegerKinds, kIntegerKinds, 0, true);
    set(kSMul, kIntegerKinds, kIntegerKinds, 0, true);
    set(kSNeg, kIntegerKinds, 0, 0, true);
    set(kSSelect, kEitherKinds, kIntegerKinds, kIntegerKinds, true);
    set(kSCanon, kIntegerKinds, kIntegerKinds, 0, true);
    set(kCanonToSmall, kFieldKinds, kFieldKinds, 0, true);
    for (Op op : {kSCanon, kCanonToSmall}) {
      t.op[uint8_t(op)].b_if_sub_binary = true;
      t.op[uint8_t(op)].canonical_sub = true;
    }
    return t;
  }();
  return rules;
}

// Why the plan check refused an instruction (its rule given; the cold path).
std::string plan_fault(const Evaluator::Instr& in, const OpRule& rule, const uint32_t* limits) {
  if (!rule.known) return "unknown operation";
  if (rule.canonical_sub && !canonical_op(in.sub)) return "its integer operation is not a canonical one";
  if (rule.small_result != (in.form == Evaluator::kSmall) || in.form > Evaluator::kSmall)
    return "its form is not its operation's";
  if (rule.has_value ? in.dst >= (rule.small_result ? limits[3] : limits[0]) : in.outs != 0)
    return "its result lies outside the slots";
  return "an operand names nothing the evaluation holds";
}

}  // namespace

Evaluator::Evaluator(Graph g, PlanView v)
    : g_(std::move(g)), code_(v.code), outs_(v.outs), thirds_(v.thirds), backing_(std::move(v.backing)) {
  g_.nodes.clear();
  g_.nodes.shrink_to_fit();
  p_.small_consts = std::move(v.small_consts);
  p_.slots = v.slots;
  p_.small_slots = v.small_slots;
  if (p_.slots >= kMaxIndex || p_.small_slots >= kMaxIndex) throw GraphError("the plan has 2^29 slots or more");
  if (p_.small_consts.size() != g_.consts.size()) throw GraphError("the plan's integer constants are not the graph's");
  // Every instruction is checked before run() trusts it (a damaged plan
  // with a valid checksum stays in bounds): by the table of plan_rules()
  // instead of a switch, since a one-shot witness of a 2^20-constraint
  // circuit checks 9 million of them a process (the switch was 18 % of that
  // process; a fully branch-free check was slower still: docs/decisions.md).
  // An instruction the table refuses is explained by plan_fault().
  const uint32_t limits[4] = {p_.slots, uint32_t(g_.consts.size()), g_.input_values, p_.small_slots};
  const uint32_t string_limits[4] = {0, uint32_t(g_.strings.size()), 0, 0};
  const PlanRules& rules = plan_rules();
  auto fits = [](uint32_t packed, uint8_t kinds, const uint32_t* lim) {
    const uint32_t kind = packed >> 30;
    return ((kinds >> kind) & 1) & ((packed & (kMaxIndex - 1)) < lim[kind]);
  };
  uint64_t small = 0;
  size_t next_out = 0, next_third = 0;  // the side streams, read in program order as run() reads them
  for (size_t k = 0; k < code_.size(); ++k) {
    const Instr& in = code_[k];
    const OpRule& rule = rules.op[uint8_t(in.op)];
    const bool read_b = rule.b && (!rule.b_if_sub_binary || rules.sub_binary[uint8_t(in.sub)]);
    bool ok = rule.known;
    ok &= !rule.a || fits(in.a, rule.a, limits);
    ok &= !read_b || fits(in.b, rule.b, rule.b_string ? string_limits : limits);
    if (rule.c) {
      if (next_third >= thirds_.size()) throw GraphError("plan instruction " + std::to_string(k) + ": a select past the third operands");
      ok &= fits(thirds_[next_third++], rule.c, limits);
    }
    ok &= !rule.canonical_sub || rules.sub_canonical[uint8_t(in.sub)];
    ok &= (rule.small_result == (in.form == kSmall)) & (in.form <= kSmall);
    ok &= rule.has_value ? in.dst < (rule.small_result ? p_.small_slots : p_.slots) : in.outs == 0;
    if (!ok) throw GraphError("plan instruction " + std::to_string(k) + ": " + plan_fault(in, rule, limits));
    small += rule.small_result;
    if (!in.outs) continue;
    uint64_t n = in.outs;
    if (in.outs == kOutsEscape) {
      if (next_out >= outs_.size() || outs_[next_out] < kOutsEscape)
        throw GraphError("plan instruction " + std::to_string(k) + ": its witness entries' count is missing");
      n = outs_[next_out++];
    }
    if (n > outs_.size() - next_out) throw GraphError("the plan's witness entries do not add up");
    for (const uint64_t end = next_out + n; next_out < end; ++next_out)
      if (outs_[next_out] >= g_.witness_size)
        throw GraphError("the plan fills witness entry " + std::to_string(outs_[next_out]) + " of " +
                         std::to_string(g_.witness_size));
  }
  if (next_out != outs_.size()) throw GraphError("the plan's witness entries do not add up");
  if (next_third != thirds_.size()) throw GraphError("the plan's third operands do not add up");
  if (g_.witness.size() != g_.witness_size) throw GraphError("the plan's witness is not of the graph's size");
  for (uint32_t ref : g_.witness) {  // run() copies the constants and inputs among them
    const uint32_t i = ref_index(ref);
    if (ref_kind(ref) == RefKind::kConst ? i >= g_.consts.size()
        : ref_kind(ref) == RefKind::kInput ? i >= g_.input_values
                                           : ref_kind(ref) != RefKind::kNode)
      throw GraphError("the plan's witness names " + std::to_string(ref) + ", which is nothing");
  }
  p_.small_instructions = small;
}

std::vector<U256> Evaluator::arrange(const std::vector<InputSignal>& input) const {
  std::vector<U256> values(g_.input_values);
  std::unordered_map<uint64_t, const InputSignalSlot*> by_hash;
  for (const auto& s : g_.signals) by_hash.emplace(s.hash, &s);
  uint64_t given = 0;
  for (const auto& s : input) {
    auto it = by_hash.find(s.hash);
    if (it == by_hash.end()) throw InputFault("signal " + s.name + " is not an input of the circuit");
    if (s.values.size() != it->second->size)
      throw InputFault("signal " + s.name + " has " + std::to_string(s.values.size()) + " values, the circuit's has " +
                       std::to_string(it->second->size));
    given += it->second->size;
  }
  if (given != g_.input_values)
    throw InputFault("the input sets " + std::to_string(given) + " of the circuit's " + std::to_string(g_.input_values) +
                     " input values: " + (given < g_.input_values ? "a signal is missing" : "a signal is given twice"));
  for (const auto& s : input) {
    const InputSignalSlot& slot = *by_hash.at(s.hash);
    for (uint32_t i = 0; i < slot.size; ++i) {
      U256 v{};
      std::memcpy(v.data(), s.values[i].data(), std::min<size_t>(32, s.values[i].size()));
      values[slot.offset + i] = v;
    }
  }
  return values;
}

template <class F, bool kOne>
void Evaluator::run(const std::vector<const std::vector<U256>*>& inputs, const std::vector<uint8_t*>& out,
                    std::vector<InputOutcome>& outcomes) const {
  using Ops = FieldOps<F>;
  const size_t B = inputs.size();
  // Constants and inputs in both forms (a canonical value kept in an F's limbs).
  auto canon = [](const U256& x) { return F::from_mont(x); };
  std::vector<F> consts[2];
  for (const U256& c : g_.consts) {
    consts[kMont].push_back(F::from_int(c));
    consts[kCanon].push_back(canon(c));
  }
  std::vector<F> in[2] = {std::vector<F>(size_t(g_.input_values) * B), std::vector<F>(size_t(g_.input_values) * B)};
  for (size_t b = 0; b < B; ++b)
    for (size_t k = 0; k < g_.input_values; ++k) {
      in[kMont][k * B + b] = F::from_int((*inputs[b])[k]);
      in[kCanon][k * B + b] = canon((*inputs[b])[k]);
    }
  std::vector<F> slot(size_t(p_.slots) * B);
  std::vector<int64_t> small(size_t(p_.small_slots) * B);
  std::vector<uint8_t> nonzero_lanes[2] = {std::vector<uint8_t>(B), std::vector<uint8_t>(B)};  // zero tests' lanes
  std::vector<F> prefix;  // Montgomery's trick's running products (kInv, kDiv)
  std::vector<uint8_t> fault(B, 0);
  outcomes.assign(B, InputOutcome{});

  // An operand's lanes: a base and a stride (0 for a constant).
  struct Lanes {
    const F* p;
    size_t s;
    const F& operator[](size_t i) const { return p[i * s]; }
  };
  auto lanes = [&](uint32_t packed) -> Lanes {
    const uint32_t kind = packed >> 30, form = (packed >> 29) & 1, index = packed & (kMaxIndex - 1);
    if (kind == 0) return {slot.data() + size_t(index) * B, 1};
    if (kind == 1) return {consts[form].data() + index, 0};
    return {in[form].data() + size_t(index) * B, 1};
  };
  // An integer operand's lanes: an integer slot, or a narrow constant.
  struct SmallLanes {
    const int64_t* p;
    size_t s;
    int64_t operator[](size_t i) const { return p[i * s]; }
  };
  auto small_lanes = [&](uint32_t packed) -> SmallLanes {
    const uint32_t kind = packed >> 30, index = packed & (kMaxIndex - 1);
    if (kind == 3) return {small.data() + size_t(index) * B, 1};
    return {p_.small_consts.data() + index, 0};
  };
  // Which lanes of an operand, in any form, are nonzero (0 is 0 in every form).
  auto nonzero = [&](uint32_t packed, int buffer = 0) -> const uint8_t* {
    uint8_t* nz = nonzero_lanes[buffer].data();
    if (packed >> 30 == 3) {
      const SmallLanes v = small_lanes(packed);
      for (size_t i = 0; i < B; ++i) nz[i] = v[i] != 0;
    } else {
      const Lanes v = lanes(packed);
      for (size_t i = 0; i < B; ++i) nz[i] = !v[i].is_zero();
    }
    return nz;
  };
  // An integer instruction of one or two operands (f(x, y); y = x for one).
  auto small_binary = [&](const Instr& ins, auto f) {
    const SmallLanes x = small_lanes(ins.a), y = ins.op == kSNeg ? x : small_lanes(ins.b);
    int64_t* rs = small.data() + size_t(ins.dst) * B;
    for (size_t i = 0; i < B; ++i) rs[i] = f(x[i], y[i]);
  };
  // An integer's canonical residue: v, or p − |v| for v < 0.
  const U256 prime = Ops::modulus();
  auto canonical_of = [&](int64_t v) -> U256 {
    if (v >= 0) return U256{uint64_t(v), 0, 0, 0};
    return u256::sub(prime, U256{uint64_t(0) - uint64_t(v), 0, 0, 0});
  };
  // Witness values are staged and written lane by lane: written as they come,
  // the B lanes' stores land at one offset of B buffers that are each
  // megabytes long, the same cache set for every lane (measured: over half the
  // time on SHA-256 at batch 64).
  constexpr size_t kStaged = 128;
  std::vector<U256> staged(kStaged * B);
  std::vector<uint32_t> staged_index(kStaged);
  std::vector<U256> value(B);
  size_t n_staged = 0;
  // Large batches write with non-temporal stores: B witnesses of tens of
  // megabytes each do not fit any cache, and a plain store first reads the
  // line it lands in (measured: the flush was half of SHA-256's time at batch
  // 64). One witness, or one small enough to stay in cache, stores plainly.
  bool stream = B > 1 && size_t(g_.witness_size) * 32 * B > (size_t(32) << 20);
  for (size_t i = 0; i < B && stream; ++i) stream = reinterpret_cast<uintptr_t>(out[i]) % 16 == 0;
  auto flush = [&] {
    for (size_t i = 0; i < B; ++i) {
      if (stream) {
        for (size_t j = 0; j < n_staged; ++j) {
          auto* dst = reinterpret_cast<__m128i*>(out[i] + size_t(staged_index[j]) * 32);
          const auto* src = reinterpret_cast<const __m128i*>(staged[j * B + i].data());
          _mm_stream_si128(dst, _mm_loadu_si128(src));
          _mm_stream_si128(dst + 1, _mm_loadu_si128(src + 1));
        }
      } else {
        for (size_t j = 0; j < n_staged; ++j) std::memcpy(out[i] + size_t(staged_index[j]) * 32, staged[j * B + i].data(), 32);
      }
    }
    n_staged = 0;
  };
  const uint32_t* next_out = outs_.data();
  const uint32_t* next_third = thirds_.data();  // the selects' third operands, in program order
  static_assert(sizeof(F) == F::N * 8, "lanes of F are limbs side by side");
  const bool ifma = ifma_lanes_available();
  auto int_of = [](const F& v) { return v.mont(); };  // a canonical value's limbs
  // Witness values that are constants or inputs.
  for (uint32_t w = 0; w < g_.witness.size(); ++w) {
    const uint32_t ref = g_.witness[w];
    if (ref_kind(ref) == RefKind::kConst)
      for (size_t b = 0; b < B; ++b) std::memcpy(out[b] + size_t(w) * 32, g_.consts[ref_index(ref)].data(), 32);
    else if (ref_kind(ref) == RefKind::kInput)
      for (size_t b = 0; b < B; ++b) std::memcpy(out[b] + size_t(w) * 32, (*inputs[b])[ref_index(ref)].data(), 32);
  }
  // One witness (a one-shot, a lone partition): the commonest integer
  // instructions straight on their slots, without lanes, lambdas or a second
  // dispatch (at batch 1 the interpreter's overhead is the time; SHA-256 is
  // 85 % integer instructions).
  auto one_value = [&](uint32_t packed) -> int64_t {
    const uint32_t index = packed & (kMaxIndex - 1);
    return packed >> 30 == 3 ? small[index] : p_.small_consts[index];
  };
  for (const Instr& ins : code_) {
    F* r = has_value(ins.op) && ins.form != kSmall ? slot.data() + size_t(ins.dst) * B : nullptr;
    if constexpr (kOne) {
      if (ins.form == kSmall) {
        int64_t* rs = small.data() + ins.dst;
        bool done = true;
        switch (ins.op) {
          case kSAdd: *rs = small_add(one_value(ins.a), one_value(ins.b)); break;
          case kSSub: *rs = small_sub(one_value(ins.a), one_value(ins.b)); break;
          case kSMul: *rs = small_mul(one_value(ins.a), one_value(ins.b)); break;
          case kSNeg: *rs = small_neg(one_value(ins.a), 0); break;
          default: done = false; break;
        }
        if (done) goto witness_entries;
      }
    }
    {
    const Lanes a = lanes(ins.a);
    switch (ins.op) {
      case Op::kAdd: {
        const Lanes b = lanes(ins.b);
        if constexpr (F::N == 4) add_sub_lanes<F, false>(a.p, a.s, b.p, b.s, r, B);
        else for (size_t i = 0; i < B; ++i) r[i] = a[i] + b[i];
        break;
      }
      case Op::kSub: {
        const Lanes b = lanes(ins.b);
        if constexpr (F::N == 4) add_sub_lanes<F, true>(a.p, a.s, b.p, b.s, r, B);
        else for (size_t i = 0; i < B; ++i) r[i] = a[i] - b[i];
        break;
      }
      case Op::kNeg:
        for (size_t i = 0; i < B; ++i) r[i] = -a[i];
        break;
      case Op::kMul:
      case kMulMixed: {  // Montgomery × Montgomery, or canonical × Montgomery = the canonical product
        const Lanes b = lanes(ins.b);
        size_t i = 0;
        if constexpr (F::N == 4) {
          if (ifma && B >= 8) {  // 8 lanes a step (groth16/mont_mul_lanes.hpp), the same products
            i = B & ~size_t(7);
            mont_mul_lanes_ifma(a.p->v, a.s, b.p->v, b.s, r->v, i, F::Params::kModulus, F::Params::kInv);
          }
        }
        for (; i < B; ++i) r[i] = a[i] * b[i];
        break;
      }
      case kToMont:
        for (size_t i = 0; i < B; ++i) r[i] = F::from_int(int_of(a[i]));
        break;
      case kToCanon:  // Montgomery's reduction alone (Fp::to_int), not a product by 1
        for (size_t i = 0; i < B; ++i) r[i] = F::from_mont(a[i].to_int());
        break;
      case Op::kInv:
      case Op::kDiv: {
        // Montgomery's trick across the batch: one inversion for every
        // lane's divisor (a for inv, b for div), then three products a lane.
        // A zero divisor counts as one in the product and gives 0 (circom's
        // 0⁻¹ = 0), chosen by masks: witness values are secret. Each lane's
        // operands are read before its result is written (the result's slot
        // may be an operand's).
        const Lanes d = ins.op == Op::kDiv ? lanes(ins.b) : a;
        const F one = F::one();
        auto or_one = [&](const F& z, uint64_t zero_mask) {
          F o;
          for (size_t k = 0; k < F::N; ++k) o.v[k] = (z.v[k] & ~zero_mask) | (one.v[k] & zero_mask);
          return o;
        };
        prefix.resize(B);
        F acc = one;
        for (size_t i = 0; i < B; ++i) {
          prefix[i] = acc;
          acc *= or_one(d[i], 0 - uint64_t(d[i].is_zero()));
        }
        F inv = acc.inv();
        for (size_t i = B; i-- > 0;) {
          const F z = d[i];
          const uint64_t zero_mask = 0 - uint64_t(z.is_zero());
          const F zi = inv * prefix[i];  // z⁻¹ (or 1 for a zero lane)
          inv *= or_one(z, zero_mask);
          const F q = ins.op == Op::kDiv ? a[i] * zi : zi;
          for (size_t k = 0; k < F::N; ++k) r[i].v[k] = q.v[k] & ~zero_mask;
        }
        break;
      }
      case Op::kSelect: {
        const Lanes b = lanes(ins.b), c = lanes(*next_third++);
        const uint8_t* cond = nonzero(ins.a);
        for (size_t i = 0; i < B; ++i) r[i] = cond[i] ? b[i] : c[i];
        break;
      }
      case Op::kAssert: {
        const uint8_t *path = nonzero(ins.a, 0), *holds = nonzero(ins.b, 1);
        for (size_t i = 0; i < B; ++i)
          if (path[i] && !holds[i]) outcomes[i].ok = false;
        break;
      }
      case Op::kLogValue: {
        const Lanes v = lanes(ins.b);
        const uint8_t* path = nonzero(ins.a);
        for (size_t i = 0; i < B; ++i)
          if (path[i]) outcomes[i].log += decimal(int_of(v[i]));
        break;
      }
      case Op::kLogText: {
        const std::string& s = g_.strings[ins.b & (kMaxIndex - 1)];
        const uint8_t* path = nonzero(ins.a);
        for (size_t i = 0; i < B; ++i)
          if (path[i]) outcomes[i].log += s;
        break;
      }
      case kSmallToMont: {
        const SmallLanes v = small_lanes(ins.a);
        for (size_t i = 0; i < B; ++i) r[i] = F::from_int(canonical_of(v[i]));
        break;
      }
      case kSmallToCanon: {
        const SmallLanes v = small_lanes(ins.a);
        for (size_t i = 0; i < B; ++i) r[i] = F::from_mont(canonical_of(v[i]));
        break;
      }
      // Integers: exact, since range analysis bounds every result below 2^62
      // (computed as unsigned, so even a damaged plan's overflow is defined).
      // Lambdas, not the functions themselves: a function pointer was called
      // once a lane (batch 64 half as fast).
      case kSAdd: small_binary(ins, [](int64_t x, int64_t y) { return small_add(x, y); }); break;
      case kSSub: small_binary(ins, [](int64_t x, int64_t y) { return small_sub(x, y); }); break;
      case kSMul: small_binary(ins, [](int64_t x, int64_t y) { return small_mul(x, y); }); break;
      case kSNeg: small_binary(ins, [](int64_t x, int64_t y) { return small_neg(x, y); }); break;
      case kSSelect: {
        const uint8_t* cond = nonzero(ins.a);
        const SmallLanes x = small_lanes(ins.b), y = small_lanes(*next_third++);
        int64_t* rs = small.data() + size_t(ins.dst) * B;
        for (size_t i = 0; i < B; ++i) rs[i] = cond[i] ? x[i] : y[i];
        break;
      }
      case kSCanon: {
        const SmallLanes x = small_lanes(ins.a), y = arity(ins.sub) >= 2 ? small_lanes(ins.b) : x;
        small_canonical(ins.sub, x, y, small.data() + size_t(ins.dst) * B, B, prime[0], fault);
        break;
      }
      case kCanonToSmall: {
        const Lanes x = lanes(ins.a), y = arity(ins.sub) >= 2 ? lanes(ins.b) : x;
        int64_t* rs = small.data() + size_t(ins.dst) * B;
        for (size_t i = 0; i < B; ++i) {
          bool f = false;
          rs[i] = int64_t(Ops::canonical(ins.sub, int_of(x[i]), int_of(y[i]), f)[0]);  // below 2^62: one limb
          fault[i] |= f;
        }
        break;
      }
      default: {
        const Lanes b = ins.op == Op::kLogText || arity(ins.op) < 2 ? a : lanes(ins.b);
        if (canonical_op(ins.op)) {
          for (size_t i = 0; i < B; ++i) {
            bool f = false;
            r[i] = F::from_mont(Ops::canonical(ins.op, int_of(a[i]), int_of(b[i]), f));
            fault[i] |= f;
          }
        } else {  // pow: Montgomery
          for (size_t i = 0; i < B; ++i) {
            bool f = false;
            r[i] = Ops::apply(ins.op, a[i], b[i], f);
            fault[i] |= f;
          }
        }
        break;
      }
    }
    }
  witness_entries:
    if (ins.outs) {
      const uint32_t n_outs = ins.outs == kOutsEscape ? *next_out++ : ins.outs;  // a long group: its count first
      // A value that fills one witness entry is converted straight into its
      // staging row; Montgomery values 8 lanes a step (Montgomery's
      // reduction alone, the same bytes as to_int): done one lane at a time,
      // this conversion was most of a long Poseidon chain's time outside
      // the products.
      const bool direct = B > 1 && n_outs == 1;
      U256* v = direct ? staged.data() + n_staged * B : value.data();
      size_t i = 0;
      if constexpr (F::N == 4) {
        if (ins.form == kMont && ifma && B >= 8) {
          i = B & ~size_t(7);
          mont_reduce_lanes_ifma(r->v, v->data(), i, F::Params::kModulus, F::Params::kInv);
        }
      }
      for (; i < B; ++i)
        v[i] = ins.form == kSmall ? canonical_of(small[size_t(ins.dst) * B + i])
               : ins.form == kCanon ? int_of(r[i])
                                    : r[i].to_int();
      if (direct) {
        staged_index[n_staged++] = *next_out++;
        if (n_staged == kStaged) flush();
        continue;
      }
      for (uint32_t o = 0; o < n_outs; ++o) {  // a value may fill several witness entries
        if (B == 1) {  // one buffer: nothing to stage
          std::memcpy(out[0] + size_t(*next_out++) * 32, value[0].data(), 32);
          continue;
        }
        std::copy(value.begin(), value.end(), staged.begin() + ptrdiff_t(n_staged * B));
        staged_index[n_staged++] = *next_out++;
        if (n_staged == kStaged) flush();
      }
    }
  }
  flush();
  if (stream) _mm_sfence();  // the streamed stores are visible to whoever reads the witnesses next
  for (size_t i = 0; i < B; ++i)
    if (fault[i]) outcomes[i].ok = false;
}

void Evaluator::evaluate(const std::vector<const std::vector<U256>*>& inputs, const std::vector<uint8_t*>& out,
                         std::vector<InputOutcome>& outcomes) const {
  // One input gets its own instantiation: its fast path in the batch's loop
  // made GCC compile batches of 64 half as fast (SHA-256 35 blocks 28 → 44–49 ms a witness).
  const bool one = inputs.size() == 1;
  // The graph's curve was checked at load (read_graph_head); a number of no
  // curve here is a bug, refused rather than evaluated over another field.
  const std::optional<CurveId> id = graph_curve_id(g_.curve);
  if (!id) throw GraphError("a graph of unknown curve " + std::to_string(g_.curve) + " reached the evaluator");
  with_curve(*id, [&]<class C>(std::type_identity<C>) {
    using F = typename C::Fr;
    one ? run<F, true>(inputs, out, outcomes) : run<F, false>(inputs, out, outcomes);
  });
}

}  // namespace zkfarm::witgen::graph
