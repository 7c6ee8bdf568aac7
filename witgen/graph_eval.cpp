#include "witgen/graph_eval.hpp"

#include <algorithm>
#include <unordered_map>

#include "groth16/scalar_fields.hpp"
#include "witgen/graph_format.hpp"

namespace zkfarm::witgen::graph {

namespace {

constexpr uint32_t kNone = UINT32_MAX;

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

}  // namespace

Evaluator::Evaluator(Graph g) : g_(std::move(g)) {
  const uint32_t n = uint32_t(g_.nodes.size());
  // Dead code: what no witness value, assert or log reaches.
  std::vector<uint8_t> live(n, 0);
  for (uint32_t w : g_.witness)
    if (ref_kind(w) == RefKind::kNode) live[ref_index(w)] = 1;
  for (uint32_t k = n; k-- > 0;) {
    const Node& nd = g_.nodes[k];
    if (!has_value(nd.op)) live[k] = 1;
    if (!live[k]) continue;
    auto mark = [&](uint32_t ref) {
      if (ref_kind(ref) == RefKind::kNode) live[ref_index(ref)] = 1;
    };
    mark(nd.a);
    if (nd.op != Op::kLogText && arity(nd.op) >= 2) mark(nd.b);
    if (arity(nd.op) == 3) mark(nd.c);
  }
  // Each live node's last reader (an instruction index).
  std::vector<uint32_t> instr_of(n, kNone), last_use(n, kNone);
  uint32_t count = 0;
  for (uint32_t k = 0; k < n; ++k)
    if (live[k]) instr_of[k] = count++;
  for (uint32_t k = 0; k < n; ++k) {
    if (!live[k]) continue;
    const Node& nd = g_.nodes[k];
    auto use = [&](uint32_t ref) {
      if (ref_kind(ref) == RefKind::kNode) last_use[ref_index(ref)] = instr_of[k];
    };
    use(nd.a);
    if (nd.op != Op::kLogText && arity(nd.op) >= 2) use(nd.b);
    if (arity(nd.op) == 3) use(nd.c);
  }
  // Witness indices per node.
  std::vector<std::vector<uint32_t>> outs_of_node;
  std::unordered_map<uint32_t, std::vector<uint32_t>> outs;
  for (uint32_t w = 0; w < g_.witness.size(); ++w)
    if (ref_kind(g_.witness[w]) == RefKind::kNode) outs[ref_index(g_.witness[w])].push_back(w);
  // Slots: a free list; an operand's slot is free once its last reader has read it.
  std::vector<uint32_t> slot_of(n, kNone), free_slots;
  code_.reserve(count);
  for (uint32_t k = 0; k < n; ++k) {
    if (!live[k]) continue;
    const Node& nd = g_.nodes[k];
    Instr in{};
    in.op = nd.op;
    auto operand = [&](uint32_t ref) {
      Operand o;
      o.index = ref_index(ref);
      switch (ref_kind(ref)) {
        case RefKind::kNode: o.kind = 0; o.index = slot_of[o.index]; break;
        case RefKind::kConst: o.kind = 1; break;
        default: o.kind = 2; break;
      }
      return o;
    };
    in.a = operand(nd.a);
    if (nd.op == Op::kLogText) in.b = Operand{1, nd.b};
    else if (arity(nd.op) >= 2) in.b = operand(nd.b);
    if (arity(nd.op) == 3) in.c = operand(nd.c);
    const uint32_t here = uint32_t(code_.size());
    auto release = [&](uint32_t ref) {
      if (ref_kind(ref) != RefKind::kNode) return;
      const uint32_t src = ref_index(ref);
      if (last_use[src] == here && slot_of[src] != kNone) {
        free_slots.push_back(slot_of[src]);
        slot_of[src] = kNone;  // released once even when read twice here
      }
    };
    release(nd.a);
    if (nd.op != Op::kLogText && arity(nd.op) >= 2) release(nd.b);
    if (arity(nd.op) == 3) release(nd.c);
    if (has_value(nd.op)) {
      // Reusing a slot just read is safe: each lane reads its operands before writing.
      if (free_slots.empty()) free_slots.push_back(slots_++);
      in.dst = free_slots.back();
      free_slots.pop_back();
      slot_of[k] = in.dst;
      if (auto it = outs.find(k); it != outs.end()) {
        in.out_begin = uint32_t(outs_.size());
        outs_.insert(outs_.end(), it->second.begin(), it->second.end());
        in.out_end = uint32_t(outs_.size());
      }
      if (last_use[k] == kNone) {  // a witness value nobody reads: its slot is free again at once
        free_slots.push_back(in.dst);
        slot_of[k] = kNone;
      }
    }
    code_.push_back(in);
  }
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

template <class F>
void Evaluator::run(const std::vector<const std::vector<U256>*>& inputs, const std::vector<uint8_t*>& out,
                    std::vector<InputOutcome>& outcomes) const {
  using Ops = FieldOps<F>;
  const size_t B = inputs.size();
  std::vector<F> consts(g_.consts.size());
  for (size_t i = 0; i < consts.size(); ++i) consts[i] = F::from_int(g_.consts[i]);
  std::vector<F> in(size_t(g_.input_values) * B);
  for (size_t b = 0; b < B; ++b)
    for (size_t k = 0; k < g_.input_values; ++k) in[k * B + b] = F::from_int((*inputs[b])[k]);
  std::vector<F> slot(size_t(slots_) * B);
  std::vector<uint8_t> fault(B, 0);
  outcomes.assign(B, InputOutcome{});

  // An operand's lanes: a base and a stride (0 for a constant).
  struct Lanes {
    const F* p;
    size_t s;
    const F& operator[](size_t i) const { return p[i * s]; }
  };
  auto lanes = [&](const Operand& o) -> Lanes {
    if (o.kind == 0) return {slot.data() + size_t(o.index) * B, 1};
    if (o.kind == 1) return {consts.data() + o.index, 0};
    return {in.data() + size_t(o.index) * B, 1};
  };
  auto store = [&](uint32_t w, size_t b, const F& v) {
    const U256 x = v.to_int();
    std::memcpy(out[b] + size_t(w) * 32, x.data(), 32);
  };
  // Witness values that are constants or inputs.
  for (uint32_t w = 0; w < g_.witness.size(); ++w) {
    const uint32_t ref = g_.witness[w];
    if (ref_kind(ref) == RefKind::kConst)
      for (size_t b = 0; b < B; ++b) std::memcpy(out[b] + size_t(w) * 32, g_.consts[ref_index(ref)].data(), 32);
    else if (ref_kind(ref) == RefKind::kInput)
      for (size_t b = 0; b < B; ++b) std::memcpy(out[b] + size_t(w) * 32, (*inputs[b])[ref_index(ref)].data(), 32);
  }
  for (const Instr& ins : code_) {
    const Lanes a = lanes(ins.a);
    F* r = has_value(ins.op) ? slot.data() + size_t(ins.dst) * B : nullptr;
    switch (ins.op) {
      case Op::kAdd: {
        const Lanes b = lanes(ins.b);
        for (size_t i = 0; i < B; ++i) r[i] = a[i] + b[i];
        break;
      }
      case Op::kSub: {
        const Lanes b = lanes(ins.b);
        for (size_t i = 0; i < B; ++i) r[i] = a[i] - b[i];
        break;
      }
      case Op::kMul: {
        const Lanes b = lanes(ins.b);
        for (size_t i = 0; i < B; ++i) r[i] = a[i] * b[i];
        break;
      }
      case Op::kSelect: {
        const Lanes b = lanes(ins.b), c = lanes(ins.c);
        for (size_t i = 0; i < B; ++i) r[i] = a[i].is_zero() ? c[i] : b[i];
        break;
      }
      case Op::kAssert: {
        const Lanes c = lanes(ins.b);
        for (size_t i = 0; i < B; ++i)
          if (!a[i].is_zero() && c[i].is_zero()) outcomes[i].ok = false;
        break;
      }
      case Op::kLogValue: {
        const Lanes v = lanes(ins.b);
        for (size_t i = 0; i < B; ++i)
          if (!a[i].is_zero()) outcomes[i].log += decimal(v[i].to_int());
        break;
      }
      case Op::kLogText: {
        const std::string& s = g_.strings[ins.b.index];
        for (size_t i = 0; i < B; ++i)
          if (!a[i].is_zero()) outcomes[i].log += s;
        break;
      }
      default: {
        const Lanes b = arity(ins.op) >= 2 ? lanes(ins.b) : a;
        for (size_t i = 0; i < B; ++i) {
          bool f = false;
          r[i] = Ops::apply(ins.op, a[i], b[i], f);
          fault[i] |= f;
        }
        break;
      }
    }
    for (uint32_t o = ins.out_begin; o < ins.out_end; ++o)
      for (size_t i = 0; i < B; ++i) store(outs_[o], i, r[i]);
  }
  for (size_t i = 0; i < B; ++i)
    if (fault[i]) outcomes[i].ok = false;
}

void Evaluator::evaluate(const std::vector<const std::vector<U256>*>& inputs, const std::vector<uint8_t*>& out,
                         std::vector<InputOutcome>& outcomes) const {
  if (g_.curve == kCurveBls12381) run<Fp<Bls12381FrParams>>(inputs, out, outcomes);
  else run<Fp<Bn254FrParams>>(inputs, out, outcomes);
}

}  // namespace zkfarm::witgen::graph
