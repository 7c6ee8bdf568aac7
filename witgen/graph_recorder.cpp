// The witness graph recorder: circom's C++ output (`circom --c`), rewritten
// by graph_rewrite.cpp, linked with this file in place of circom's field
// runtime (fr.cpp, fr.asm) and main. Run once per circuit, it executes the
// circuit's witness code with every input a symbol: an operation whose
// operands are all constants is computed (folded, graph_ops.hpp), any other
// becomes a node of the graph, so the run writes the whole witness
// computation as a straight-line program (graph_format.hpp). zkfarm builds
// and runs it confined, like any circuit code (witgen/graph_build.cpp).
//
// Where the circuit's code looks at a value that depends on an input:
//   - `if` (circom's ternaries and ifs over signals, e.g. IsZero's
//     `in != 0 ? 1/in : 0`): both branches are run, each writing into a
//     log of what it changed; afterwards every changed element becomes
//     select(cond, value after the then-branch, value after the else-branch);
//     asserts and logs inside a branch hold only on its path;
//   - an assert (`===`, `assert`): an assert node (the input fails there);
//   - a log: log nodes (the input's log lines);
//   - a loop condition, an array index, any other conversion to an integer:
//     the circuit cannot be a static graph; the recorder says where on stdout
//     ("input-dependent loop condition at template Foo line 12") and exits
//     with graph::kExitNotStatic. zkfarm then keeps the circuit on its
//     generator.
// Usage: RECORDER CIRCUIT.dat OUT.graph MAX_NODES
// Compiled with -DZKG_CURVE=1 (BN254) or 2 (BLS12-381) and -I the --c folder
// and -I zkfarm's sources (witgen/, and groth16/'s curve headers for the field).
#include <gmp.h>
#include <unistd.h>

#include <cstdarg>
#include <cstdio>
#include <cstdlib>
#include <cstring>
#include <string>
#include <unordered_map>
#include <vector>

#include "calcwit.hpp"
#include "circom.hpp"
#include "fr.hpp"
#if ZKG_CURVE == 2
#include "groth16/bls12_381.hpp"
#elif ZKG_CURVE == 1
#include "groth16/bn254.hpp"
#else
#error "ZKG_CURVE must be a graph curve number (witgen/graph_format.hpp): 1 BN254, 2 BLS12-381"
#endif
#include "witgen/graph_format.hpp"
#include "witgen/graph_hooks.hpp"
#include "witgen/graph_ops.hpp"

// From circom's main.cpp (compiled beside this file, its main renamed).
Circom_Circuit* loadCircuit(std::string const& datFileName);
uint get_main_input_signal_start();
uint get_main_input_signal_no();
uint get_size_of_input_hashmap();
uint get_size_of_witness();
uint get_total_signal_no();

namespace g = zkfarm::witgen::graph;

#if ZKG_CURVE == 2
using F = zkfarm::bls12_381::Fr;
static constexpr uint32_t kCurve = g::kCurveBls12381;
#elif ZKG_CURVE == 1
using F = zkfarm::Fr;
static constexpr uint32_t kCurve = g::kCurveBn254;
#endif
using Ops = g::FieldOps<F>;
using g::Op;

// Globals circom's headers declare (the real ones live in fr.asm).
FrElement Fr_q = {0, Fr_LONG, {F::Params::kModulus[0], F::Params::kModulus[1], F::Params::kModulus[2], F::Params::kModulus[3]}};
FrElement Fr_R3 = {0, Fr_LONG, {0, 0, 0, 0}};
FrRawElement Fr_rawq = {F::Params::kModulus[0], F::Params::kModulus[1], F::Params::kModulus[2], F::Params::kModulus[3]};
FrRawElement Fr_rawR3 = {0, 0, 0, 0};

// The element types: circom's (fr.hpp) and two of the recorder's own.
constexpr uint32_t kShortMontgomery = 0x40000000;
constexpr uint32_t kSymbol = 0x20000000;  ///< longVal[0]: a reference (graph_format.hpp)

// Where the circuit's code is, for messages (graph_rewrite.cpp inserts the updates).
thread_local int zkg_line = 0;
thread_local const char* zkg_where = "the circuit";

namespace {

[[noreturn]] void not_static(const char* what) {
  std::printf("%s at %s line %d\n", what, zkg_where, zkg_line);
  std::fflush(stdout);
  std::_Exit(g::kExitNotStatic);
}
[[noreturn]] void fatal(const std::string& what) {
  std::fprintf(stderr, "graph recorder: %s\n", what.c_str());
  std::_Exit(4);
}

// A value: a constant (Montgomery form) or a reference to a node or input.
struct Val {
  bool known = true;
  F c{};
  uint32_t ref = 0;
};

struct Node {
  uint8_t op;
  uint32_t a, b, c;
};

struct LimbsHash {
  size_t operator()(const zkfarm::Limbs<4>& x) const { return size_t(x[0] ^ (x[1] * 31) ^ (x[2] * 131) ^ (x[3] * 1031)); }
};

std::vector<Node> nodes;
uint64_t max_nodes = 0;
std::vector<zkfarm::Limbs<4>> consts;
std::unordered_map<zkfarm::Limbs<4>, uint32_t, LimbsHash> const_index;
std::vector<std::string> strings;
std::unordered_map<std::string, uint32_t> string_index;

uint32_t const_ref(const F& c) {
  const zkfarm::Limbs<4> x = c.to_int();
  auto [it, fresh] = const_index.emplace(x, uint32_t(consts.size()));
  if (fresh) {
    if (consts.size() >= g::kIndexMask) std::_Exit(g::kExitTooLarge);
    consts.push_back(x);
  }
  return g::make_ref(g::RefKind::kConst, it->second);
}
uint32_t ref_of(const Val& v) { return v.known ? const_ref(v.c) : v.ref; }

uint32_t emit(Op op, uint32_t a, uint32_t b = 0, uint32_t c = 0) {
  if (nodes.size() >= max_nodes || nodes.size() >= g::kIndexMask) {
    std::printf("the graph passed its limit of %llu nodes\n", (unsigned long long)max_nodes);
    std::fflush(stdout);
    std::_Exit(g::kExitTooLarge);
  }
  nodes.push_back({uint8_t(op), a, b, c});
  return g::make_ref(g::RefKind::kNode, uint32_t(nodes.size() - 1));
}

bool valid_element(const FrElement* e) {
  const uint32_t t = e->type;
  if (t == kSymbol) return true;
  return t == Fr_SHORT || t == kShortMontgomery || t == Fr_LONG || t == Fr_LONGMONTGOMERY;
}

Val get(const FrElement* e) {
  Val v;
  switch (e->type) {
    case kSymbol:
      v.known = false;
      v.ref = uint32_t(e->longVal[0]);
      return v;
    case Fr_LONGMONTGOMERY:
      v.c = F::from_mont({e->longVal[0], e->longVal[1], e->longVal[2], e->longVal[3]});
      return v;
    case Fr_LONG: {
      zkfarm::Limbs<4> x{e->longVal[0], e->longVal[1], e->longVal[2], e->longVal[3]};
      if (!zkfarm::is_canonical<F::Params>(x)) fatal("a long constant is not below the prime");
      v.c = F::from_int(x);
      return v;
    }
    case Fr_SHORT:
    case kShortMontgomery: {
      const int64_t s = e->shortVal;
      v.c = s >= 0 ? F::from_u64(uint64_t(s)) : -F::from_u64(uint64_t(-s));
      return v;
    }
    default:
      not_static("a value read before it was set");
  }
}

// ---- Branches over input-dependent conditions --------------------------------------------------

// One `if` whose condition is a symbol: what each pass changed.
struct Branch {
  uint32_t cond;        // the condition's reference
  uint32_t path_then;   // the path condition of each pass (0: not made yet)
  uint32_t path_else;
  int pass = 1;         // 1 then, 0 else
  char* stack_mark;     // below this, the stack is dead callees' frames
  std::vector<FrElement*> order;                      // addresses in first-write order
  std::unordered_map<FrElement*, FrElement> before;   // value before the if
  std::unordered_map<FrElement*, FrElement> after_then;
  bool written_then(FrElement* p) const { return after_then.count(p) != 0; }
};
std::vector<Branch> branches;
uint32_t kTrueRef = 0;  // const_ref(1), set in main

// The path condition inside the innermost branch: a reference whose value is
// nonzero exactly on the path taken (kTrueRef outside every branch).
uint32_t path_ref() {
  uint32_t path = kTrueRef;
  for (auto& b : branches) {
    uint32_t& cached = b.pass == 1 ? b.path_then : b.path_else;
    if (!cached) {
      const uint32_t here = b.pass == 1 ? b.cond : emit(Op::kLnot, b.cond);
      cached = path == kTrueRef ? here : emit(Op::kLand, path, here);
    }
    path = cached;
  }
  return path;
}

bool in_dead_stack(const void* p, const char* mark) {
  const char* c = static_cast<const char*>(p);
  return c < mark && c > mark - (size_t(1) << 30);
}

// Every write of an element goes through here, so a branch can be undone.
void note_write(FrElement* r) {
  if (branches.empty()) return;
  Branch& b = branches.back();
  if (in_dead_stack(r, b.stack_mark)) return;
  if (b.before.count(r)) return;
  b.before.emplace(r, *r);
  b.order.push_back(r);
}

void put(FrElement* r, const Val& v) {
  note_write(r);
  if (v.known) {
    r->shortVal = 0;
    r->type = Fr_LONGMONTGOMERY;
    for (int i = 0; i < 4; ++i) r->longVal[i] = v.c.v[i];
  } else {
    r->shortVal = 0;
    r->type = kSymbol;
    r->longVal[0] = v.ref;
    r->longVal[1] = r->longVal[2] = r->longVal[3] = 0;
  }
}

Val symbol(uint32_t ref) {
  Val v;
  v.known = false;
  v.ref = ref;
  return v;
}

void binary(Op op, PFrElement r, PFrElement a, PFrElement b) {
  const Val x = get(a), y = get(b);
  if (x.known && y.known) {
    bool fault = false;
    Val v;
    v.c = Ops::apply(op, x.c, y.c, fault);
    if (fault) not_static("an integer division by zero in the circuit's own constants");
    put(r, v);
    return;
  }
  put(r, symbol(emit(op, ref_of(x), ref_of(y))));
}

void unary(Op op, PFrElement r, PFrElement a) {
  const Val x = get(a);
  if (x.known) {
    bool fault = false;
    Val v;
    v.c = Ops::apply(op, x.c, x.c, fault);
    put(r, v);
    return;
  }
  put(r, symbol(emit(op, ref_of(x))));
}

std::string decimal(const F& c) {
  const zkfarm::Limbs<4> x = c.to_int();
  mpz_t m;
  mpz_init(m);
  mpz_import(m, 4, -1, 8, 0, 0, x.data());
  char* s = mpz_get_str(nullptr, 10, m);
  std::string out(s);
  void (*freefunc)(void*, size_t);
  mp_get_memory_functions(nullptr, nullptr, &freefunc);
  freefunc(s, std::strlen(s) + 1);
  mpz_clear(m);
  return out;
}

uint32_t string_ref(const std::string& s) {
  auto [it, fresh] = string_index.emplace(s, uint32_t(strings.size()));
  if (fresh) strings.push_back(s);
  return it->second;
}

}  // namespace

// ---- The hooks graph_rewrite.cpp puts into the circuit's code ----------------------------------

ZkgIf::ZkgIf(PFrElement c) {
    const Val v = get(c);
    symbolic_ = !v.known;
    if (!symbolic_) {
      pass_ = v.c.is_zero() ? 0 : 1;
      return;
    }
    Branch b;
    b.cond = v.ref;
    b.path_then = b.path_else = 0;
    // Frames of functions called inside the branch lie below this one's.
    b.stack_mark = static_cast<char*>(__builtin_frame_address(0)) + 16;
    branches.push_back(std::move(b));
    pass_ = 1;
  }
void ZkgIf::next() {
    if (!symbolic_ || pass_ < 0) {
      pass_ = -1;
      return;
    }
    Branch& b = branches.back();
    if (pass_ == 1) {  // undo the then-branch, keeping what it wrote
      for (FrElement* p : b.order) {
        b.after_then.emplace(p, *p);
        *p = b.before.at(p);
      }
      pass_ = 0;
      return;
    }
    // Merge: every element either branch changed becomes a select.
    Branch done = std::move(b);
    branches.pop_back();
    for (FrElement* p : done.order) {
      const FrElement t = done.written_then(p) ? done.after_then.at(p) : done.before.at(p);
      const FrElement e = *p;
      if (std::memcmp(&t, &e, sizeof t) == 0) {
        note_write(p);
        continue;
      }
      if (!valid_element(&t) || !valid_element(&e)) {  // a scratch value only one branch set
        note_write(p);
        p->type = 0x10000000;  // unset: an error if read
        continue;
      }
      const Val vt = get(&t), ve = get(&e);
      put(p, symbol(emit(Op::kSelect, done.cond, ref_of(vt), ref_of(ve))));
    }
    pass_ = -1;
}

ZkgIf::~ZkgIf() {
  if (symbolic_ && pass_ >= 0) not_static("a return from inside an input-dependent branch");
}

/// A loop condition.
bool zkg_loop(PFrElement c) {
  const Val v = get(c);
  if (!v.known) not_static("an input-dependent loop condition");
  return !v.c.is_zero();
}

/// Any other truth test of a value.
int zkg_is_true(PFrElement c) {
  const Val v = get(c);
  if (!v.known) not_static("an input-dependent condition");
  return !v.c.is_zero();
}

/// A circuit's assert (`===`, `assert(…)`) at circom line `line`.
void zkg_assert(PFrElement c, int line) {
  zkg_line = line;
  const Val v = get(c);
  if (v.known && !v.c.is_zero()) return;
  emit(Op::kAssert, path_ref(), ref_of(v));
}

/// circom's log(): printf of texts and of Fr_element2str's strings.
int zkg_printf(const char* fmt, ...) {
  va_list ap;
  va_start(ap, fmt);
  if (std::strcmp(fmt, "%s") == 0) {
    const char* s = va_arg(ap, const char*);
    va_end(ap);
    if (s[0] == '\x01') {  // a symbol's marker from Fr_element2str
      emit(Op::kLogValue, path_ref(), uint32_t(std::strtoul(s + 1, nullptr, 10)));
      return 0;
    }
    emit(Op::kLogText, path_ref(), string_ref(std::string(s).substr(0, g::kMaxString)));
    return 0;
  }
  char buf[g::kMaxString];
  const int n = std::vsnprintf(buf, sizeof buf, fmt, ap);
  va_end(ap);
  if (n > 0) emit(Op::kLogText, path_ref(), string_ref(std::string(buf, std::min<size_t>(size_t(n), sizeof buf - 1))));
  return 0;
}

// ---- circom's field runtime (fr.hpp), recording ------------------------------------------------

extern "C" {
void Fr_copy(PFrElement r, PFrElement a) {
  if (r == a) return;
  const FrElement v = *a;
  note_write(r);
  *r = v;
}
void Fr_copyn(PFrElement r, PFrElement a, int n) {
  for (int i = 0; i < n; ++i) Fr_copy(r + i, a + i);
}
void Fr_add(PFrElement r, PFrElement a, PFrElement b) { binary(Op::kAdd, r, a, b); }
void Fr_sub(PFrElement r, PFrElement a, PFrElement b) { binary(Op::kSub, r, a, b); }
void Fr_neg(PFrElement r, PFrElement a) { unary(Op::kNeg, r, a); }
void Fr_mul(PFrElement r, PFrElement a, PFrElement b) { binary(Op::kMul, r, a, b); }
void Fr_square(PFrElement r, PFrElement a) { binary(Op::kMul, r, a, a); }
void Fr_band(PFrElement r, PFrElement a, PFrElement b) { binary(Op::kBand, r, a, b); }
void Fr_bor(PFrElement r, PFrElement a, PFrElement b) { binary(Op::kBor, r, a, b); }
void Fr_bxor(PFrElement r, PFrElement a, PFrElement b) { binary(Op::kBxor, r, a, b); }
void Fr_bnot(PFrElement r, PFrElement a) { unary(Op::kBnot, r, a); }
void Fr_shl(PFrElement r, PFrElement a, PFrElement b) { binary(Op::kShl, r, a, b); }
void Fr_shr(PFrElement r, PFrElement a, PFrElement b) { binary(Op::kShr, r, a, b); }
void Fr_eq(PFrElement r, PFrElement a, PFrElement b) { binary(Op::kEq, r, a, b); }
void Fr_neq(PFrElement r, PFrElement a, PFrElement b) { binary(Op::kNeq, r, a, b); }
void Fr_lt(PFrElement r, PFrElement a, PFrElement b) { binary(Op::kLt, r, a, b); }
void Fr_gt(PFrElement r, PFrElement a, PFrElement b) { binary(Op::kGt, r, a, b); }
void Fr_leq(PFrElement r, PFrElement a, PFrElement b) { binary(Op::kLeq, r, a, b); }
void Fr_geq(PFrElement r, PFrElement a, PFrElement b) { binary(Op::kGeq, r, a, b); }
void Fr_land(PFrElement r, PFrElement a, PFrElement b) { binary(Op::kLand, r, a, b); }
void Fr_lor(PFrElement r, PFrElement a, PFrElement b) { binary(Op::kLor, r, a, b); }
void Fr_lnot(PFrElement r, PFrElement a) { unary(Op::kLnot, r, a); }
void Fr_toNormal(PFrElement r, PFrElement a) { Fr_copy(r, a); }
void Fr_toLongNormal(PFrElement r, PFrElement a) { Fr_copy(r, a); }
void Fr_toMontgomery(PFrElement r, PFrElement a) { Fr_copy(r, a); }
int Fr_isTrue(PFrElement a) { return zkg_is_true(a); }
int Fr_toInt(PFrElement a) {
  const Val v = get(a);
  if (!v.known) not_static("an input-dependent array index or integer conversion");
  // fr.asm's toInt: a "negative" value (above (p−1)/2) gives −(p − x).
  zkfarm::Limbs<4> x = v.c.to_int();
  const bool neg = Ops::negative(x);
  if (neg) x = g::u256::sub(F::modulus(), x);
  if (x[1] | x[2] | x[3] || x[0] > 0x7fffffffULL) not_static("a value too large for an integer conversion");
  return neg ? -int(x[0]) : int(x[0]);
}
void Fr_fail() { fatal("circom's field runtime failed (Fr_fail)"); }
}

void Fr_str2element(PFrElement pE, char const* s, uint base) {
  mpz_t m;
  mpz_init(m);
  if (mpz_set_str(m, s, int(base)) != 0) fatal(std::string("not a number: ") + s);
  mpz_t q;
  mpz_init(q);
  mpz_import(q, 4, -1, 8, 0, 0, F::Params::kModulus);
  mpz_fdiv_r(m, m, q);
  zkfarm::Limbs<4> x{};
  mpz_export(x.data(), nullptr, -1, 8, 0, 0, m);
  mpz_clear(m);
  mpz_clear(q);
  Val v;
  v.c = F::from_int(x);
  put(pE, v);
}

char* Fr_element2str(PFrElement pE) {
  const Val v = get(pE);
  const std::string s = v.known ? decimal(v.c) : "\x01" + std::to_string(v.ref);
  char* out = new char[s.size() + 1];
  std::memcpy(out, s.c_str(), s.size() + 1);
  return out;
}

void Fr_idiv(PFrElement r, PFrElement a, PFrElement b) { binary(Op::kIdiv, r, a, b); }
void Fr_mod(PFrElement r, PFrElement a, PFrElement b) { binary(Op::kMod, r, a, b); }
void Fr_inv(PFrElement r, PFrElement a) { unary(Op::kInv, r, a); }
void Fr_div(PFrElement r, PFrElement a, PFrElement b) { binary(Op::kDiv, r, a, b); }
void Fr_pow(PFrElement r, PFrElement a, PFrElement b) { binary(Op::kPow, r, a, b); }

// ---- The run -----------------------------------------------------------------------------------

namespace {

struct Writer {
  FILE* f;
  void bytes(const void* p, size_t n) {
    if (std::fwrite(p, 1, n, f) != n) fatal("cannot write the graph");
  }
  void u32(uint32_t x) { bytes(&x, 4); }
  void u64(uint64_t x) { bytes(&x, 8); }
};

}  // namespace

int main(int argc, char** argv) {
  if (argc != 4) fatal("usage: RECORDER CIRCUIT.dat OUT.graph MAX_NODES");
  max_nodes = std::strtoull(argv[3], nullptr, 10);
  Val one;
  one.c = F::one();
  kTrueRef = const_ref(one.c);

  Circom_Circuit* circuit = loadCircuit(argv[1]);
  Circom_CalcWit* ctx = new Circom_CalcWit(circuit);
  // Unset signals read as 0, as the zeroed pages of circom's own run do.
  std::memset(ctx->signalValues + 1, 0, sizeof(FrElement) * (get_total_signal_no() - 1));
  const uint start = get_main_input_signal_start(), n_in = get_main_input_signal_no();

  struct InputSignal {
    uint64_t hash;
    uint32_t offset, size;
  };
  std::vector<InputSignal> inputs;
  for (uint i = 0; i < get_size_of_input_hashmap(); ++i) {
    const HashSignalInfo& h = circuit->InputHashMap[i];
    if (h.hash == 0 && h.signalid == 0) continue;
    if (h.signalid < start || h.signalid - start + h.signalsize > n_in) fatal("the input hash map is not the circuit's");
    inputs.push_back({h.hash, uint32_t(h.signalid - start), uint32_t(h.signalsize)});
  }
  if (n_in == 0) ctx->tryRunCircuit();
  for (const auto& in : inputs)
    for (uint32_t k = 0; k < in.size; ++k) {
      FrElement v{};
      v.type = kSymbol;
      v.longVal[0] = g::make_ref(g::RefKind::kInput, in.offset + k);
      ctx->setInputSignal(in.hash, k, v);
    }

  const uint32_t n_wit = get_size_of_witness();
  std::vector<uint32_t> witness(n_wit);
  for (uint32_t w = 0; w < n_wit; ++w) {
    FrElement v;
    ctx->getWitness(w, &v);
    zkg_where = "the witness";
    zkg_line = int(w);
    witness[w] = ref_of(get(&v));
  }

  FILE* f = std::fopen(argv[2], "wb");
  if (!f) fatal(std::string(argv[2]) + ": cannot create");
  Writer out{f};
  out.bytes(g::kMagic, 8);
  out.u32(g::kVersion);
  out.u32(kCurve);
  out.u32(n_in);
  out.u32(n_wit);
  out.u32(uint32_t(inputs.size()));
  for (const auto& in : inputs) {
    out.u64(in.hash);
    out.u32(in.offset);
    out.u32(in.size);
  }
  out.u32(uint32_t(strings.size()));
  for (const auto& s : strings) {
    out.u32(uint32_t(s.size()));
    out.bytes(s.data(), s.size());
  }
  out.u32(uint32_t(consts.size()));
  for (const auto& c : consts) out.bytes(c.data(), 32);
  out.u32(uint32_t(nodes.size()));
  for (const auto& n : nodes) {
    out.bytes(&n.op, 1);
    out.u32(n.a);
    out.u32(n.b);
    out.u32(n.c);
  }
  for (uint32_t w : witness) out.u32(w);
  if (std::fflush(f) != 0 || std::fclose(f) != 0) fatal(std::string(argv[2]) + ": cannot write");
  return 0;
}
