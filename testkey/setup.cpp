#include "testkey/setup.hpp"

#include <fstream>
#include <stdexcept>

#include "groth16/binwriter.hpp"
#include "groth16/curve_list.hpp"
#include "groth16/ntt.hpp"
#include "groth16/proof_json.hpp"
#include "groth16/roots.hpp"
#include "testkey/fixed_base.hpp"
#include "testkey/random.hpp"

namespace zkfarm::testkey {

namespace {

// Value stored in zkey section 4: coef·R² for C's Fr (snarkjs: Fr.mul(coef, R2)
// written in Montgomery). The element of value R (= from_int(R mod r)) times
// coef has Montgomery limbs coef·R·R = coef·R².
template <class Fr>
U256 coeff_bytes(const Fr& coef) {
  static const Fr r_value = Fr::from_int(Fr::one().mont());
  return (coef * r_value).mont();
}

// A field's prime as its little-endian bytes (n8 = F::kBytes), as headers hold it.
template <class F>
void write_prime(BinWriter& out) {
  const auto m = F::modulus();
  out.bytes(m.data(), F::kBytes);
}

// L_i(x) for i < n over snarkjs's n-th roots of unity ω^i: (x^n − 1)/n · ω^i/(x − ω^i).
template <class C>
std::vector<typename C::Fr> lagrange_at(const typename C::Fr& x, uint32_t log_n, ThreadPool& pool) {
  using Fr = typename C::Fr;
  const size_t n = size_t(1) << log_n;
  const Fr w = root_of_unity_of<C>(log_n);
  std::vector<Fr> roots(n), den(n), scratch(n);
  pool.parallel_for(n, [&](size_t b, size_t e) {
    Fr p = w.pow({b, 0, 0, 0});
    for (size_t i = b; i < e; ++i, p *= w) {
      roots[i] = p;
      den[i] = x - p;
    }
  });
  pool.parallel_for(n, [&](size_t b, size_t e) { batch_inverse(den.data() + b, e - b, scratch.data() + b); });
  const Fr factor = (x.pow({n, 0, 0, 0}) - Fr::one()) * Fr::from_u64(n).inv();
  pool.parallel_for(n, [&](size_t b, size_t e) {
    for (size_t i = b; i < e; ++i) den[i] = factor * roots[i] * den[i];
  });
  return den;
}

}  // namespace

template <class C>
ToxicWaste<C> ToxicWaste<C>::draw(std::mt19937_64& rng) {
  using Fr = typename C::Fr;
  auto nonzero = [&] {
    for (;;) {
      Fr x = Fr::from_u256(random_fr<C>(rng));
      if (!x.is_zero()) return x;
    }
  };
  // τ must avoid every root of unity of order ≤ 2^28: τ^(2^28) ≠ 1.
  ToxicWaste<C> t;
  do {
    t.tau = nonzero();
  } while (t.tau.pow({uint64_t(1) << 28, 0, 0, 0}) == Fr::one());
  t.alpha = nonzero();
  t.beta = nonzero();
  t.gamma = nonzero();
  t.delta = nonzero();
  return t;
}

template <class C>
void write_r1cs(const Circuit<C>& c, const std::string& path) {
  using Fr = typename C::Fr;
  const uint32_t n_vars = c.n_vars();
  uint64_t constraints_bytes = 0;
  for (const auto& k : c.constraints)
    for (const auto* lc : {&k.a, &k.b, &k.c}) constraints_bytes += 4 + lc->size() * (4 + Fr::kBytes);
  BinWriter out(path, "r1cs", 1, 3);
  out.begin_section(1, 4 + Fr::kBytes + 4 * 4 + 8 + 4);
  out.u32(Fr::kBytes);
  write_prime<Fr>(out);
  out.u32(n_vars);
  out.u32(0);  // public outputs
  out.u32(c.n_public);
  out.u32(c.n_private_inputs);
  out.u64(n_vars);  // labels: one per wire
  out.u32(uint32_t(c.constraints.size()));
  out.begin_section(2, constraints_bytes);
  for (const auto& k : c.constraints) {
    for (const auto* lc : {&k.a, &k.b, &k.c}) {
      out.u32(uint32_t(lc->size()));
      for (const auto& t : *lc) {
        out.u32(t.signal);
        out.u256(t.coef.to_u256());
      }
    }
  }
  out.begin_section(3, uint64_t(n_vars) * 8);
  for (uint64_t i = 0; i < n_vars; ++i) out.u64(i);
  out.finish();
}

template <class C>
void write_wtns(const std::vector<typename C::Fr>& witness, const std::string& path) {
  using Fr = typename C::Fr;
  BinWriter out(path, "wtns", 2, 2);
  out.begin_section(1, 4 + Fr::kBytes + 4);
  out.u32(Fr::kBytes);
  write_prime<Fr>(out);
  out.u32(uint32_t(witness.size()));
  out.begin_section(2, witness.size() * Fr::kBytes);
  for (const auto& v : witness) out.u256(v.to_u256());
  out.finish();
}

template <class C>
void write_zkey(const Circuit<C>& c, const ToxicWaste<C>& tw, const std::string& zkey_path,
                const std::string& vkey_path, ThreadPool& pool) {
  using Fr = typename C::Fr;
  using Fq = typename C::Fq;
  using G1Affine = Affine<typename C::G1Params>;
  using G2Affine = Affine<typename C::G2Params>;
  constexpr size_t kG1Bytes = C::kG1Bytes, kG2Bytes = C::kG2Bytes;
  static_assert(sizeof(G1Affine) == kG1Bytes && sizeof(G2Affine) == kG2Bytes);
  const uint32_t n_vars = c.n_vars(), n_pub = c.n_public;
  const uint64_t rows = uint64_t(c.constraints.size()) + n_pub + 1;
  uint32_t log_n = 0;
  while ((uint64_t(1) << log_n) < rows) ++log_n;
  if (log_n > 27) throw std::runtime_error("test keys go up to a domain of 2^27");
  const size_t n = size_t(1) << log_n;

  // u, v, w at τ; the public inputs (and the constant) get an extra A row each.
  std::vector<Fr> L = lagrange_at<C>(tw.tau, log_n, pool);
  std::vector<Fr> u(n_vars, Fr::zero()), v(n_vars, Fr::zero()), w(n_vars, Fr::zero());
  uint64_t n_coeffs = n_pub + 1;
  for (size_t i = 0; i < c.constraints.size(); ++i) {
    const Constraint<C>& k = c.constraints[i];
    for (const auto& t : k.a) u[t.signal] += t.coef * L[i];
    for (const auto& t : k.b) v[t.signal] += t.coef * L[i];
    for (const auto& t : k.c) w[t.signal] += t.coef * L[i];
    n_coeffs += k.a.size() + k.b.size();
  }
  for (uint32_t s = 0; s <= n_pub; ++s) u[s] += L[c.constraints.size() + s];

  // IC (j ≤ nPublic) and C (j > nPublic): (β·u + α·v + w)/γ or /δ.
  const Fr gamma_inv = tw.gamma.inv(), delta_inv = tw.delta.inv();
  std::vector<Fr> k_ic(n_pub + 1), k_c(n_vars - n_pub - 1);
  for (uint32_t j = 0; j < n_vars; ++j) {
    Fr k = tw.beta * u[j] + tw.alpha * v[j] + w[j];
    if (j <= n_pub) k_ic[j] = k * gamma_inv;
    else k_c[j - n_pub - 1] = k * delta_inv;
  }
  // H_i = L^{2n}_{2i+1}(τ)/δ: the odd points of the 2n-th roots are the odd coset g·ω^i.
  std::vector<Fr> k_h(n);
  {
    std::vector<Fr> L2 = lagrange_at<C>(tw.tau, log_n + 1, pool);
    for (size_t i = 0; i < n; ++i) k_h[i] = L2[2 * i + 1] * delta_inv;
  }
  L.clear();
  L.shrink_to_fit();

  FixedBase<typename C::G1Params> g1(C::g1_generator());
  FixedBase<typename C::G2Params> g2(C::g2_generator());
  auto g1_point = [&](const Fr& k) { return g1.mul(k.to_u256()).to_affine(); };
  auto g2_point = [&](const Fr& k) { return g2.mul(k.to_u256()).to_affine(); };
  const G1Affine alpha1 = g1_point(tw.alpha), beta1 = g1_point(tw.beta), delta1 = g1_point(tw.delta);
  const G2Affine beta2 = g2_point(tw.beta), gamma2 = g2_point(tw.gamma), delta2 = g2_point(tw.delta);

  std::vector<uint8_t> sec_ic((n_pub + 1) * kG1Bytes), sec_a(size_t(n_vars) * kG1Bytes), sec_b1(size_t(n_vars) * kG1Bytes),
      sec_b2(size_t(n_vars) * kG2Bytes), sec_c(k_c.size() * kG1Bytes), sec_h(n * kG1Bytes);
  g1.mul_many(k_ic.data(), k_ic.size(), sec_ic.data(), pool);
  g1.mul_many(u.data(), n_vars, sec_a.data(), pool);
  g1.mul_many(v.data(), n_vars, sec_b1.data(), pool);
  g2.mul_many(v.data(), n_vars, sec_b2.data(), pool);
  g1.mul_many(k_c.data(), k_c.size(), sec_c.data(), pool);
  g1.mul_many(k_h.data(), n, sec_h.data(), pool);

  BinWriter out(zkey_path, "zkey", 1, 10);
  out.begin_section(1, 4);
  out.u32(1);  // Groth16
  out.begin_section(2, 4 + Fq::kBytes + 4 + Fr::kBytes + 3 * 4 + 3 * kG1Bytes + 3 * kG2Bytes);
  out.u32(Fq::kBytes);
  write_prime<Fq>(out);
  out.u32(Fr::kBytes);
  write_prime<Fr>(out);
  out.u32(n_vars);
  out.u32(n_pub);
  out.u32(uint32_t(n));
  for (const auto* p : {&alpha1, &beta1}) {
    uint8_t b[kG1Bytes];
    p->store(b);
    out.bytes(b, sizeof b);
  }
  for (const auto* p : {&beta2, &gamma2}) {
    uint8_t b[kG2Bytes];
    p->store(b);
    out.bytes(b, sizeof b);
  }
  {
    uint8_t b1[kG1Bytes], b2[kG2Bytes];
    delta1.store(b1);
    delta2.store(b2);
    out.bytes(b1, sizeof b1);
    out.bytes(b2, sizeof b2);
  }
  out.begin_section(3, sec_ic.size());
  out.bytes(sec_ic.data(), sec_ic.size());
  out.begin_section(4, 4 + n_coeffs * (12 + Fr::kBytes));
  out.u32(uint32_t(n_coeffs));
  auto coeff = [&](uint32_t matrix, uint32_t row, const Term<C>& t) {
    out.u32(matrix);
    out.u32(row);
    out.u32(t.signal);
    out.u256(coeff_bytes(t.coef));
  };
  for (uint32_t i = 0; i < c.constraints.size(); ++i)
    for (const auto& t : c.constraints[i].a) coeff(0, i, t);
  for (uint32_t s = 0; s <= n_pub; ++s) coeff(0, uint32_t(c.constraints.size()) + s, {s, Fr::one()});
  for (uint32_t i = 0; i < c.constraints.size(); ++i)
    for (const auto& t : c.constraints[i].b) coeff(1, i, t);
  const std::pair<uint32_t, const std::vector<uint8_t>*> point_sections[] = {
      {5, &sec_a}, {6, &sec_b1}, {7, &sec_b2}, {8, &sec_c}, {9, &sec_h}};
  for (const auto& [type, sec] : point_sections) {
    out.begin_section(type, sec->size());
    out.bytes(sec->data(), sec->size());
  }
  // Section 10, the MPC parameters: no ceremony hash, no contributions.
  out.begin_section(10, 64 + 4);
  uint8_t zero_hash[64] = {0};
  out.bytes(zero_hash, sizeof zero_hash);
  out.u32(0);
  out.finish();

  nlohmann::ordered_json vk;
  vk["protocol"] = "groth16";
  vk["curve"] = C::kName;
  vk["nPublic"] = n_pub;
  vk["vk_alpha_1"] = g1_to_json(alpha1);
  vk["vk_beta_2"] = g2_to_json(beta2);
  vk["vk_gamma_2"] = g2_to_json(gamma2);
  vk["vk_delta_2"] = g2_to_json(delta2);
  vk["IC"] = nlohmann::ordered_json::array();
  for (uint32_t j = 0; j <= n_pub; ++j) vk["IC"].push_back(g1_to_json(G1Affine::load(sec_ic.data() + j * kG1Bytes)));
  std::ofstream f(vkey_path);
  f << vk.dump(1);
  if (!f) throw std::runtime_error(vkey_path + ": cannot write");
}

#define ZKFARM_TESTKEY_SETUP(C)                                                                              \
  template struct ToxicWaste<C>;                                                                            \
  template void write_r1cs<C>(const Circuit<C>&, const std::string&);                                       \
  template void write_wtns<C>(const std::vector<C::Fr>&, const std::string&);                               \
  template void write_zkey<C>(const Circuit<C>&, const ToxicWaste<C>&, const std::string&, const std::string&, \
                              ThreadPool&);
ZKFARM_FOR_EACH_CURVE(ZKFARM_TESTKEY_SETUP)
#undef ZKFARM_TESTKEY_SETUP

}  // namespace zkfarm::testkey
