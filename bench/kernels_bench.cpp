// zkfarm-bench-kernels: times the CPU prover's kernels on random inputs.
//   zkfarm-bench-kernels [--log N] [--threads T] [--reps R]
// Prints, for a domain of 2^N: NTT, odd-coset step, G1 MSM (random scalars,
// and a circom-like mix: 60% zeros/ones), G2 MSM. Median of R runs, ms.
#include <CLI/CLI.hpp>
#include <algorithm>
#include <chrono>
#include <cstdio>
#include <random>
#include <vector>

#include "groth16/msm.hpp"
#include "groth16/ntt.hpp"

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

}  // namespace

int main(int argc, char** argv) {
  CLI::App app{"zkfarm-bench-kernels: NTT and MSM timings of the CPU prover"};
  unsigned log_n = 16, threads = 0;
  int reps = 3;
  app.add_option("--log", log_n, "domain size 2^N")->check(CLI::Range(1u, 24u));
  app.add_option("--threads", threads, "threads (default: all cores)");
  app.add_option("--reps", reps, "repetitions (median)")->check(CLI::Range(1, 100));
  CLI11_PARSE(app, argc, argv);

  ThreadPool pool(threads);
  const size_t n = size_t(1) << log_n;
  std::mt19937_64 rng(1);
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
  return 0;
}
