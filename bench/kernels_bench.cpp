// zkfarm-bench-kernels: times the CPU prover's kernels on random inputs.
//   zkfarm-bench-kernels [--log N] [--threads T] [--reps R]
//   zkfarm-bench-kernels --key KEY.zkey [--threads T] [--reps R]
// Prints, for a domain of 2^N: NTT, odd-coset step, G1 MSM (random scalars,
// and a circom-like mix: 60% zeros/ones), G2 MSM. Median of R runs, ms.
// Then the verifier on one core (it is single-threaded): pairing parts and one
// Groth16 verification of a synthetic but valid proof, each also as a ratio to
// a 254-bit G1 scalar multiplication timed in the same run (the baseline, so
// figures from loaded or different machines compare).
// With --key: a key's load on the host instead, part by part (what a new
// worker waits for): Zkey::open's structure and content checks, the CPU
// backend's Domain and ConstraintMatrix::build, and the host's share of the
// CUDA backend's device-made domain tables (issue 12, "fast key reload").
#include <CLI/CLI.hpp>
#include <algorithm>
#include <chrono>
#include <cstdio>
#include <cstdlib>
#include <ctime>
#include <memory>
#include <optional>
#include <random>
#include <string>
#include <vector>

#include "gpu_worker/cuda/ntt_tables.hpp"
#include "groth16/constraint_matrix.hpp"
#include "groth16/msm.hpp"
#include "groth16/ntt.hpp"
#include "groth16/pairing.hpp"
#include "groth16/verify.hpp"
#include "groth16/zkey.hpp"

using namespace zkfarm;
using Clock = std::chrono::steady_clock;

namespace {

U256 random_scalar(std::mt19937_64& rng) {
  for (;;) {
    U256 x{rng(), rng(), rng(), rng() & 0x3fffffffffffffffULL};
    if (is_canonical<FrParams>(x)) return x;
  }
}

template <class F>
double median_ms(int reps, F&& f) {
  std::vector<double> t;
  for (int i = 0; i < reps; ++i) {
    auto start = Clock::now();
    f();
    t.push_back(std::chrono::duration<double, std::milli>(Clock::now() - start).count());
  }
  std::sort(t.begin(), t.end());
  return t[t.size() / 2];
}

// n distinct points: multiples of g spread by a random step (cheap to make).
template <class C>
std::vector<uint8_t> make_points(size_t n, const Affine<C>& g, std::mt19937_64& rng) {
  std::vector<uint8_t> out(n * sizeof(Affine<C>));
  Xyzz<C> p = Xyzz<C>::from_affine(g).mul(random_scalar(rng));
  Xyzz<C> step = Xyzz<C>::from_affine(g).mul(random_scalar(rng));
  std::vector<Xyzz<C>> tmp(n);
  for (size_t i = 0; i < n; ++i) {
    tmp[i] = p;
    p.add(step);
  }
  for (size_t i = 0; i < n; ++i) tmp[i].to_affine().store(&out[i * sizeof(Affine<C>)]);
  return out;
}

// A verification key and a valid proof with known discrete logarithms: α = xα·G1,
// β, γ, δ = xβ, xγ, xδ·G2, IC_i = k_i·G1, A = a·G1, B = b·G2, and C = c·G1 with
// a·b = xα·xβ + (k_0 + Σ s_i·k_i)·xγ + c·xδ, so e(A, B) = e(α, β)·e(vk_x, γ)·e(C, δ).
template <class C>
struct VerifyCaseOf {
  std::unique_ptr<VerifyingKeyOf<C>> vk;
  ProofOf<C> proof;
  std::vector<U256> signals;
};
using VerifyCase = VerifyCaseOf<Bn254>;

template <class C>
VerifyCaseOf<C> make_verify_case(size_t n_public, std::mt19937_64& rng) {
  using Fr = typename C::Fr;
  using G1 = Xyzz<typename C::G1Params>;
  using G2 = Xyzz<typename C::G2Params>;
  const auto g1 = C::g1_generator();
  const G2 g2 = G2::from_affine(C::g2_generator());
  // Uniform enough below r for a benchmark: the top limb cleared.
  auto fr = [&] {
    U256 x = random_scalar(rng);
    x[3] &= 0x0fffffffffffffffULL;
    return Fr::from_u256(x);
  };
  auto g1_times = [&](const Fr& k) { return G1::from_affine(g1).mul(k.to_u256()).to_affine(); };
  auto g2_times = [&](const Fr& k) { return g2.mul(k.to_u256()).to_affine(); };
  const Fr xa = fr(), xb = fr(), xg = fr(), xd = fr(), a = fr(), b = fr();
  std::vector<Affine<typename C::G1Params>> ic;
  VerifyCaseOf<C> v;
  Fr k = fr();  // vk_x's logarithm
  ic.push_back(g1_times(k));
  for (size_t i = 0; i < n_public; ++i) {
    const Fr ki = fr(), si = fr();
    ic.push_back(g1_times(ki));
    v.signals.push_back(si.to_u256());
    k += si * ki;
  }
  v.vk = std::make_unique<VerifyingKeyOf<C>>(g1_times(xa), g2_times(xb), g2_times(xg), g2_times(xd), std::move(ic),
                                             "bench");
  const Fr c = (a * b - xa * xb - k * xg) * xd.inv();
  v.proof = {g1_times(a), g2_times(b), g1_times(c)};
  return v;
}

// Median of `reps` runs of f, in ms of this thread's CPU time: the verifier
// is single-threaded, so this is its cost on one core, and unlike wall time it
// does not grow when other processes share the core.
template <class F>
double median_cpu_ms(int reps, F&& f) {
  auto now = [] {
    timespec t;
    clock_gettime(CLOCK_THREAD_CPUTIME_ID, &t);
    return double(t.tv_sec) * 1e3 + double(t.tv_nsec) * 1e-6;
  };
  std::vector<double> t;
  for (int i = 0; i < reps; ++i) {
    const double start = now();
    f();
    t.push_back(now() - start);
  }
  std::sort(t.begin(), t.end());
  return t[t.size() / 2];
}

// Batched verification (verify_batch) against one verify_proof per proof, in
// the same run: CPU ms per proof on one core, for batches of 1–64 proofs of
// one key with 2 public signals (the ratio is the batch's speed-up).
template <class C>
void bench_batches(const char* curve, int reps, std::mt19937_64& rng) {
  const VerifyCaseOf<C> v = make_verify_case<C>(2, rng);
  if (!verify_proof<C>(*v.vk, v.proof, v.signals).ok()) {
    std::fprintf(stderr, "zkfarm-bench-kernels: the synthetic %s proof does not verify\n", curve);
    std::exit(1);
  }
  const double single = median_cpu_ms(reps, [&] { (void)verify_proof<C>(*v.vk, v.proof, v.signals); });
  std::printf("%s batched verification, one core, CPU ms per proof (baseline: verify_proof %.3f ms)\n", curve, single);
  for (size_t n : {size_t(1), size_t(4), size_t(16), size_t(64)}) {
    std::vector<BatchItemOf<C>> items(n, BatchItemOf<C>{&v.proof, v.signals});
    const double ms = median_cpu_ms(reps, [&] {
      for (const VerifyResult& r : verify_batch<C>(*v.vk, items))
        if (!r.ok()) std::exit(1);
    });
    std::printf("  batch of %-3zu %8.3f ms per proof %7.2fx faster\n", n, ms / double(n), single / (ms / double(n)));
  }
}

// The verifier's costs on one core, in ms and as multiples of the baseline.
void bench_verifier(int reps, std::mt19937_64& rng) {
  const G1Affine g1{Fq::from_u64(1), Fq::from_u64(2)};
  const U256 k = random_scalar(rng);
  const int inner = 20;  // sub-millisecond kernels: time 20 calls per sample
  auto per_call = [&](auto&& f) { return median_cpu_ms(reps, [&] { for (int i = 0; i < inner; ++i) f(); }) / inner; };
  const double base = per_call([&] { (void)G1::from_affine(g1).mul(k); });
  std::printf("verifier, one core, thread CPU time (baseline: G1 scalar multiplication %.3f ms)\n", base);
  auto row = [&](const char* name, double ms) { std::printf("  %-34s %8.3f ms %7.1fx\n", name, ms, ms / base); };

  VerifyCase two = make_verify_case<Bn254>(2, rng);
  const G1Affine p = two.proof.a;
  const G2Affine q = two.proof.b;
  const G2Prepared prepared(q);
  const PairingTerm term{p, &prepared};
  const Fq12 f = miller_loop({&term, 1});
  row("G2 line precomputation", per_call([&] { G2Prepared x(q); }));
  row("Miller loop, 1 pair", per_call([&] { (void)miller_loop({&term, 1}); }));
  row("final exponentiation", per_call([&] { (void)final_exponentiation(f); }));
  row("pairing e(P, Q)", per_call([&] { (void)pairing(p, q); }));
  row("G2 subgroup test", per_call([&] { (void)g2_in_subgroup(q); }));
  for (size_t n : {size_t(2), size_t(42), size_t(200)}) {
    VerifyCase v = n == 2 ? std::move(two) : make_verify_case<Bn254>(n, rng);
    if (!verify_proof(*v.vk, v.proof, v.signals).ok()) {
      std::fprintf(stderr, "zkfarm-bench-kernels: the synthetic proof does not verify\n");
      std::exit(1);
    }
    const std::string name = "Groth16 verify, " + std::to_string(n) + " public";
    row(name.c_str(), per_call([&] { (void)verify_proof(*v.vk, v.proof, v.signals); }));
    const VerifyingKey& k = *v.vk;
    const std::string prep = "  (its key's preparation)";
    row(prep.c_str(), per_call([&] {
      (void)VerifyingKey(k.alpha1(), k.beta2(), k.gamma2(), k.delta2(), k.ic(), "bench");
    }));
  }
  bench_batches<Bn254>("BN254", reps, rng);
  bench_batches<bls12_381::Curve>("BLS12-381", reps, rng);
}

// A key's load on the host, part by part; the file stays in the page cache
// after the first run, as a replaced worker finds it.
void bench_key_load(const std::string& path, int reps, ThreadPool& pool) {
  std::optional<Zkey> key;
  const double open = median_ms(reps, [&] { key.emplace(Zkey::open(path, ZkeyContents::unchecked)); });
  std::printf("key %s: domain 2^%u, %u records, nVars %u, %u threads\n", path.c_str(), key->log_domain,
              key->n_coeffs, key->n_vars, pool.size());
  std::printf("  %-44s %10.1f ms\n", "Zkey::open, structure", open);
  std::printf("  %-44s %10.1f ms\n", "Zkey::check_contents (all cores)", median_ms(reps, [&] { key->check_contents(); }));
  std::printf("  %-44s %10.1f ms\n", "Domain (CPU backend)", median_ms(reps, [&] { Domain d(key->log_domain, pool); }));
  std::printf("  %-44s %10.1f ms\n", "ConstraintMatrix::build (CPU backend)",
              median_ms(reps, [&] { (void)ConstraintMatrix::build(*key, &pool); }));
  std::printf("  %-44s %10.2f ms\n", "domain_tables (CUDA backend's host share)",
              median_ms(reps, [&] { (void)cuda::domain_tables<Bn254>(key->log_domain); }));
}

}  // namespace

// One inversion in BN254's Fr, one core: safegcd (Fp::inv) against Fermat's
// x^(p−2) (Fp::inv_fermat) on the same 4096 random values, the results
// compared; nanoseconds an inversion and the ratio.
void bench_inverse(int reps, std::mt19937_64& rng) {
  std::vector<Fr> xs(4096);
  for (auto& x : xs) x = Fr::from_u256(random_scalar(rng));
  Fr sink = Fr::zero();
  const double fermat = median_ms(reps, [&] {
    for (const Fr& x : xs) sink += x.inv_fermat();
  });
  const double safegcd = median_ms(reps, [&] {
    for (const Fr& x : xs) sink += x.inv();
  });
  for (const Fr& x : xs)
    if (x.inv() != x.inv_fermat()) {
      std::fprintf(stderr, "zkfarm-bench-kernels: safegcd's inverse differs from Fermat's\n");
      std::exit(1);
    }
  const double per = 1e6 / double(xs.size());
  std::printf("Fr inversion, one core (baseline: Fermat x^(p-2) %.0f ns)\n", fermat * per);
  std::printf("  %-28s %8.0f ns %7.2fx faster%s\n", "safegcd (Fp::inv)", safegcd * per, fermat / safegcd,
              sink.is_zero() ? " " : "");
}

int main(int argc, char** argv) {
  CLI::App app{"zkfarm-bench-kernels: NTT and MSM timings of the CPU prover"};
  unsigned log_n = 16, threads = 0;
  int reps = 3;
  app.add_option("--log", log_n, "domain size 2^N")->check(CLI::Range(1u, 24u));
  app.add_option("--threads", threads, "threads (default: all cores)");
  app.add_option("--reps", reps, "repetitions (median)")->check(CLI::Range(1, 100));
  std::string key;
  app.add_option("--key", key, "time this key's load on the host instead");
  bool verifier_only = false;
  app.add_flag("--verifier", verifier_only, "time the verifier alone (single and batched)");
  bool inverse_only = false;
  app.add_flag("--inverse", inverse_only, "time one field inversion (safegcd against Fermat)");
  CLI11_PARSE(app, argc, argv);

  ThreadPool pool(threads);
  if (!key.empty()) {
    try {
      bench_key_load(key, reps, pool);
    } catch (const std::exception& e) {
      std::fprintf(stderr, "zkfarm-bench-kernels: %s\n", e.what());
      return 1;
    }
    return 0;
  }
  std::mt19937_64 rng(1);
  if (inverse_only) {
    bench_inverse(std::max(reps, 5), rng);
    return 0;
  }
  if (verifier_only) {
    bench_verifier(std::max(reps, 5), rng);
    return 0;
  }
  const size_t n = size_t(1) << log_n;
  std::vector<Fr> v(n);
  for (auto& x : v) x = Fr::from_u256(random_scalar(rng));
  Domain d(log_n, pool);
  std::printf("domain 2^%u, %u threads\n", log_n, pool.size());
  std::printf("  %-28s %10.2f ms\n", "NTT", median_ms(reps, [&] { d.ntt(v.data(), pool); }));
  std::printf("  %-28s %10.2f ms\n", "odd coset (iNTT+scale+NTT)", median_ms(reps, [&] { d.to_odd_coset(v.data(), pool); }));

  G1Affine g1{Fq::from_u64(1), Fq::from_u64(2)};
  auto p1 = make_points<G1Params>(n, g1, rng);
  std::vector<U256> scalars(n), mixed(n);
  for (size_t i = 0; i < n; ++i) {
    scalars[i] = random_scalar(rng);
    uint64_t k = rng() % 10;
    mixed[i] = k < 3 ? U256{0, 0, 0, 0} : k < 6 ? U256{1, 0, 0, 0} : scalars[i];
  }
  auto plan = plan_scalars(scalars.data(), n, pool);
  std::printf("  %-28s %10.2f ms  (c=%u)\n", "G1 MSM, random scalars",
              median_ms(reps, [&] { msm<G1Params>(p1.data(), 64, plan, 0, n, pool); }), plan.c);
  double t_plan = median_ms(reps, [&] { plan = plan_scalars(scalars.data(), n, pool); });
  std::printf("  %-28s %10.2f ms\n", "scalar digits", t_plan);
  auto mplan = plan_scalars(mixed.data(), n, pool);
  std::printf("  %-28s %10.2f ms  (c=%u)\n", "G1 MSM, 60% zeros/ones",
              median_ms(reps, [&] { msm<G1Params>(p1.data(), 64, mplan, 0, n, pool); }), mplan.c);
  bench_verifier(std::max(reps, 5), rng);
  return 0;
}
