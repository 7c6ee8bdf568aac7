#include "testkey/circuit.hpp"

#include <cstring>

#include "groth16/curve_list.hpp"
#include "groth16/errors.hpp"
#include "groth16/r1cs.hpp"

#include "testkey/random.hpp"

namespace zkfarm::testkey {

template <class C>
typename C::Fr eval(const std::vector<Term<C>>& lc, const std::vector<typename C::Fr>& w) {
  using Fr = typename C::Fr;
  Fr acc = Fr::zero();
  for (const auto& t : lc) acc += t.coef * w[t.signal];
  return acc;
}

template <class C>
Circuit<C> make_circuit(uint32_t n_constraints, uint32_t n_public, uint64_t seed) {
  using Fr = typename C::Fr;
  std::mt19937_64 rng(seed);
  Circuit<C> c;
  c.n_public = n_public;
  c.signals.push_back({SignalDef::kOne});
  for (uint32_t i = 0; i < n_public + c.n_private_inputs; ++i) c.signals.push_back({SignalDef::kInput});
  c.constraints.reserve(n_constraints);
  const Fr minus_one = -Fr::one();
  std::vector<uint32_t> bits;       // bit signals not yet packed
  uint32_t next_public = 1;         // public inputs are fed into the first products
  uint32_t last = n_public + 1;     // the chain's latest value signal
  auto recent = [&] {               // an earlier value signal, recent ones favoured
    uint32_t span = std::min<uint32_t>(64, uint32_t(c.signals.size()) - 1);
    uint32_t s;
    do {
      s = uint32_t(c.signals.size()) - 1 - uint32_t(rng() % span);
    } while (c.signals[s].kind == SignalDef::kBit || c.signals[s].kind == SignalDef::kOne);
    return s;
  };
  while (c.constraints.size() < n_constraints) {
    const uint32_t idx = uint32_t(c.constraints.size());
    const uint32_t out = uint32_t(c.signals.size());
    const uint64_t roll = rng() % 100;
    Constraint<C> k;
    if (next_public <= n_public) {
      // c = pub · last
      k.a = {{next_public++, Fr::one()}};
      k.b = {{last, Fr::one()}};
      k.c = {{out, Fr::one()}};
      c.signals.push_back({SignalDef::kProduct, idx});
      last = out;
    } else if (roll < 30) {
      // b·(b − 1) = 0
      k.a = {{out, Fr::one()}};
      k.b = {{out, Fr::one()}, {0, minus_one}};
      c.signals.push_back({SignalDef::kBit, idx});
      bits.push_back(out);
    } else if (roll < 40 && bits.size() >= 2) {
      // x = Σ 2^i·b_i over up to 16 pending bits: A = Σ 2^i b_i, B = 1, C = x
      const size_t take = std::min<size_t>(bits.size(), 16);
      Fr pow = Fr::one();
      for (size_t i = 0; i < take; ++i) {
        k.a.push_back({bits[bits.size() - take + i], pow});
        pow = pow.dbl();
      }
      bits.resize(bits.size() - take);
      k.b = {{0, Fr::one()}};
      k.c = {{out, Fr::one()}};
      c.signals.push_back({SignalDef::kPack, idx});
      last = out;
    } else if (roll < 65) {
      // c = (k1·s1 + k2·s2 + k3·s3 + k0) · b: additions folded into the A side
      // Distinct signals, as circom writes a linear combination (one term per wire).
      while (k.a.size() < 3) {
        uint32_t s = recent();
        bool dup = false;
        for (const auto& t : k.a) dup |= t.signal == s;
        if (!dup) k.a.push_back({s, Fr::from_u64(1 + rng() % 1000)});
      }
      k.a.push_back({0, Fr::from_u256(random_fr<C>(rng))});
      k.b = {{last, Fr::one()}};
      k.c = {{out, Fr::one()}};
      c.signals.push_back({SignalDef::kProduct, idx});
      last = out;
    } else {
      // c = a · b
      k.a = {{recent(), Fr::one()}};
      k.b = {{last, Fr::one()}};
      k.c = {{out, Fr::one()}};
      c.signals.push_back({SignalDef::kProduct, idx});
      last = out;
    }
    c.constraints.push_back(std::move(k));
  }
  return c;
}

template <class C>
std::vector<typename C::Fr> Circuit<C>::witness(std::mt19937_64& rng) const {
  std::vector<Fr> w(signals.size());
  for (size_t s = 0; s < signals.size(); ++s) {
    switch (signals[s].kind) {
      case SignalDef::kOne: w[s] = Fr::one(); break;
      case SignalDef::kInput: w[s] = Fr::from_u256(random_fr<C>(rng)); break;
      case SignalDef::kBit: w[s] = (rng() & 1) ? Fr::one() : Fr::zero(); break;
      case SignalDef::kProduct: {
        const Constraint<C>& k = constraints[signals[s].constraint];
        w[s] = eval<C>(k.a, w) * eval<C>(k.b, w);
        break;
      }
      case SignalDef::kPack: w[s] = eval<C>(constraints[signals[s].constraint].a, w); break;
    }
  }
  return w;
}

}  // namespace zkfarm::testkey

namespace zkfarm::testkey {

const CurvePrimes* r1cs_curve(const R1cs& r1cs) {
  for (const CurvePrimes& k : known_curves())
    if (r1cs.n8 == 32 && le_limbs_equal(r1cs.prime_le, k.r)) return &k;
  return nullptr;
}

template <class C>
Circuit<C> circuit_from_r1cs(const R1cs& r1cs) {
  using Fr = typename C::Fr;
  if (r1cs.n8 != Fr::kBytes || r1cs.prime != Fr::modulus()) {
    const CurvePrimes* k = r1cs_curve(r1cs);
    if (k)
      throw InputError(r1cs.path + ": the circuit is over " + curve_name(k->id) + "'s scalar field, not " + C::kName +
                       "'s: make the key with --curve " + curve_name(k->id) + " (or compile the circuit with circom -p " +
                       C::kName + ")");
    throw InputError(r1cs.path + ": the circuit's prime (" + std::to_string(r1cs.n8) +
                     " bytes) is none of these curves' scalar fields: " + curve_names(Curves{}) +
                     "; compile it with circom -p " + C::kName + " (--curve picks the key's curve)");
  }
  Circuit<C> c;
  c.n_public = r1cs.n_pub_out + r1cs.n_pub_in;
  c.n_private_inputs = r1cs.n_prv_in;
  c.signals.assign(r1cs.n_wires, SignalDef{SignalDef::kInput, 0});
  c.signals[0].kind = SignalDef::kOne;
  c.constraints.reserve(r1cs.n_constraints);
  auto terms = [](const LinearCombination& lc) {
    std::vector<Term<C>> out(lc.size());
    for (uint32_t i = 0; i < lc.size(); ++i) {
      const R1csTerm t = lc.term(i);
      U256 v;  // canonical in the file (open() checked it is below r)
      std::memcpy(v.data(), t.coeff.data(), 32);
      out[i] = {t.wire, Fr::from_u256(v)};
    }
    return out;
  };
  r1cs.for_each_constraint([&](uint32_t, const R1csConstraint& k) {
    c.constraints.push_back({terms(k.a), terms(k.b), terms(k.c)});
  });
  return c;
}

template <class C>
Circuit<C> circuit_from_r1cs(const std::string& path) {
  return circuit_from_r1cs<C>(R1cs::open(path));
}

#define ZKFARM_TESTKEY_CIRCUIT(C)                                                                \
  template struct Circuit<C>;                                                                   \
  template C::Fr eval<C>(const std::vector<Term<C>>&, const std::vector<C::Fr>&);               \
  template Circuit<C> make_circuit<C>(uint32_t, uint32_t, uint64_t);                            \
  template Circuit<C> circuit_from_r1cs<C>(const R1cs&);                                        \
  template Circuit<C> circuit_from_r1cs<C>(const std::string&);
ZKFARM_FOR_EACH_CURVE(ZKFARM_TESTKEY_CIRCUIT)
#undef ZKFARM_TESTKEY_CIRCUIT

}  // namespace zkfarm::testkey
