// The CUDA backend on a real GPU (scripts/gpu-check.sh runs this on the H200
// machine; without a device every test skips). Each check is against the CPU
// prover, for both curves (BN254, BLS12-381): field products bit for bit
// (PTX for 8 limbs, portable, even/odd and the default out-of-line
// multiplication) and the device's sums, differences, negations, doublings
// and squares,
// the domain's tables as the device makes them up to 2^22, the odd-coset NTT
// up to 2^20, G1 MSMs up to 2^20 points with zero, one, binary and random
// scalars and window widths 6 to 20, G2 MSMs up to 2^14 points, and the
// constraint matrix built on the device from keys of every record order
// (plus the key named by ZKFARM_GPU_TEST_ZKEY, if set), then whole proofs of
// those keys against the CPU backend's. More whole proofs: scripts/gpu-check.sh.
#include <gtest/gtest.h>

#include <cstdlib>
#include <cstring>
#include <fstream>
#include <random>
#include <thread>

#include "coeff_records.hpp"
#include "gpu_worker/cpu_backend.hpp"
#include "gpu_worker/cuda/device_msm.cuh"
#include "gpu_worker/cuda/device_ntt.cuh"
#include "gpu_worker/cuda/device_synth.cuh"
#include "gpu_worker/cuda/ntt_tables.hpp"
#include "gpu_worker/cuda_backend.hpp"
#include "gpu_worker/lane_gate.hpp"
#include "groth16/verify.hpp"
#include "groth16/constraint_matrix.hpp"
#include "groth16/errors.hpp"
#include "groth16/msm.hpp"
#include "groth16/ntt.hpp"
#include "groth16/wtns.hpp"
#include "test_util.hpp"

namespace zkfarm {
namespace {

using namespace zkfarm::cuda;
using Bls = bls12_381::Curve;
using DFq = DCurve<Bn254>::Fq;
using DFr = DCurve<Bn254>::Fr;
using DFq2 = DCurve<Bn254>::Fq2;
using test::random_element;

#define NEED_GPU()                                                  \
  do {                                                              \
    std::string why;                                                \
    if (!gpu::cuda_available(&why)) GTEST_SKIP() << why;            \
  } while (0)

template <class T>
DeviceBuffer to_device(const T* p, size_t count) {
  DeviceBuffer d(count * sizeof(T) + 1);
  ZK_CUDA(cudaMemcpy(d.get(), p, count * sizeof(T), cudaMemcpyHostToDevice));
  return d;
}

template <class T>
std::vector<T> to_host(const DeviceBuffer& d, size_t count) {
  std::vector<T> v(count);
  ZK_CUDA(cudaMemcpy(v.data(), d.get(), count * sizeof(T), cudaMemcpyDeviceToHost));
  return v;
}

template <class F>
__global__ void k_mul(const F* a, const F* b, F* ptx, F* portable, F* dflt, F* evenodd, size_t n) {
  size_t i = size_t(blockIdx.x) * blockDim.x + threadIdx.x;
  if (i >= n) return;
  evenodd[i] = F::mul_evenodd(a[i], b[i]);
  if constexpr (F::N == 8) ptx[i] = F::mul_ptx(a[i], b[i]);
  else ptx[i] = F::mul_portable(a[i], b[i]);  // the PTX form is written for 8 limbs
  portable[i] = F::mul_portable(a[i], b[i]);
  dflt[i] = a[i] * b[i];  // the out-of-line product the kernels use
}

// The device's sums, differences, negations, doublings and squares (PTX
// carry chains on the device, portable code on the host).
template <class F>
__global__ void k_addsub(const F* a, const F* b, F* sum, F* diff, F* neg, F* dbl, F* sq, size_t n) {
  size_t i = size_t(blockIdx.x) * blockDim.x + threadIdx.x;
  if (i >= n) return;
  sum[i] = a[i] + b[i];
  diff[i] = a[i] - b[i];
  neg[i] = -a[i];
  dbl[i] = a[i].dbl();
  sq[i] = a[i].sqr();
}

template <class DFq2>
__global__ void k_mul2(const DFq2* a, const DFq2* b, DFq2* out, size_t n) {
  size_t i = size_t(blockIdx.x) * blockDim.x + threadIdx.x;
  if (i < n) out[i] = a[i] * b[i];
}

template <class HostF, class DevF>
void check_products() {
  std::mt19937_64 rng(11);
  const size_t n = 1 << 16;
  std::vector<HostF> a(n), b(n);
  for (size_t i = 0; i < n; ++i) {
    a[i] = random_element<HostF>(rng);
    b[i] = random_element<HostF>(rng);
  }
  a[0] = -HostF::one();
  b[0] = -HostF::one();
  a[1] = HostF::zero();
  auto da = to_device(a.data(), n), db = to_device(b.data(), n);
  DeviceBuffer p1(n * sizeof(HostF)), p2(n * sizeof(HostF)), p3(n * sizeof(HostF)), p4(n * sizeof(HostF));
  k_mul<DevF><<<(n + 255) / 256, 256>>>(da.template get<DevF>(), db.template get<DevF>(), p1.template get<DevF>(),
                                        p2.template get<DevF>(), p3.template get<DevF>(), p4.template get<DevF>(), n);
  ZK_CUDA_LAUNCHED();
  auto r1 = to_host<HostF>(p1, n), r2 = to_host<HostF>(p2, n), r3 = to_host<HostF>(p3, n), r4 = to_host<HostF>(p4, n);
  for (size_t i = 0; i < n; ++i) {
    ASSERT_TRUE(r4[i] == a[i] * b[i]) << "even/odd product " << i;
    ASSERT_TRUE(r1[i] == a[i] * b[i]) << "PTX product " << i;
    ASSERT_TRUE(r2[i] == a[i] * b[i]) << "portable product " << i;
    ASSERT_TRUE(r3[i] == a[i] * b[i]) << "default product " << i;
  }
  b[2] = a[2];       // a − a = 0, a + a = dbl
  b[3] = -a[3];      // a + (−a) = 0
  b[4] = HostF::zero();
  // Raw words near p (any canonical word string is an element): sums of
  // exactly p − 1 and of 2p − 2, a difference that borrows by almost p.
  HostF p_minus_1{}, p_minus_2{}, raw_one{};
  for (size_t k = 0; k < HostF::N; ++k) p_minus_1.v[k] = p_minus_2.v[k] = HostF::Params::kModulus[k];
  p_minus_1.v[0] -= 1;  // p is odd: no borrow
  p_minus_2.v[0] -= 2;
  raw_one.v[0] = 1;
  a[5] = p_minus_1, b[5] = p_minus_1;
  a[6] = p_minus_2, b[6] = raw_one;
  a[7] = raw_one, b[7] = p_minus_1;
  da = to_device(a.data(), n);
  db = to_device(b.data(), n);
  DeviceBuffer p5(n * sizeof(HostF));
  k_addsub<DevF><<<(n + 255) / 256, 256>>>(da.template get<DevF>(), db.template get<DevF>(), p1.template get<DevF>(),
                                           p2.template get<DevF>(), p3.template get<DevF>(), p4.template get<DevF>(),
                                           p5.template get<DevF>(), n);
  ZK_CUDA_LAUNCHED();
  r1 = to_host<HostF>(p1, n), r2 = to_host<HostF>(p2, n), r3 = to_host<HostF>(p3, n), r4 = to_host<HostF>(p4, n);
  auto r5 = to_host<HostF>(p5, n);
  for (size_t i = 0; i < n; ++i) {
    ASSERT_TRUE(r1[i] == a[i] + b[i]) << "sum " << i;
    ASSERT_TRUE(r2[i] == a[i] - b[i]) << "difference " << i;
    ASSERT_TRUE(r3[i] == -a[i]) << "negation " << i;
    ASSERT_TRUE(r4[i] == a[i] + a[i]) << "doubling " << i;
    ASSERT_TRUE(r5[i] == a[i] * a[i]) << "square " << i;
  }
}

template <class C>
void check_fq2_products() {
  using Fq = typename C::Fq;
  using Fq2 = typename C::Fq2;
  using D = typename DCurve<C>::Fq2;
  std::mt19937_64 rng(12);
  const size_t n = 4096;
  std::vector<Fq2> a(n), b(n);
  for (size_t i = 0; i < n; ++i) {
    a[i] = {random_element<Fq>(rng), random_element<Fq>(rng)};
    b[i] = {random_element<Fq>(rng), random_element<Fq>(rng)};
  }
  auto da = to_device(a.data(), n), db = to_device(b.data(), n);
  DeviceBuffer out(n * sizeof(Fq2));
  k_mul2<D><<<(n + 255) / 256, 256>>>(da.template get<D>(), db.template get<D>(), out.template get<D>(), n);
  ZK_CUDA_LAUNCHED();
  auto r = to_host<Fq2>(out, n);
  for (size_t i = 0; i < n; ++i) ASSERT_TRUE(r[i] == a[i] * b[i]) << C::kName << " " << i;
}

TEST(Gpu, FieldProductsMatchTheCpu) {
  NEED_GPU();
  check_products<Fq, DFq>();
  check_products<Fr, DFr>();
  check_fq2_products<Bn254>();
}

TEST(Gpu, Bls12381FieldProductsMatchTheCpu) {
  NEED_GPU();
  check_products<Bls::Fq, DCurve<Bls>::Fq>();  // 12 limbs
  check_products<Bls::Fr, DCurve<Bls>::Fr>();
  check_fq2_products<Bls>();
}

// Each size as three vectors in one call (the prover's A, B, C), each
// against the CPU's transform of it.
template <class C>
void check_odd_coset_ntt(std::initializer_list<uint32_t> sizes) {
  using Fr = typename C::Fr;
  ThreadPool pool(0);
  std::mt19937_64 rng(13);
  constexpr uint32_t kVectors = 3;
  for (uint32_t log_n : sizes) {
    const size_t n = size_t(1) << log_n;
    std::vector<Fr> v(kVectors * n);
    for (auto& x : v) x = random_element<Fr>(rng);
    std::vector<Fr> expect = v;
    const DomainOf<C> dom(log_n, pool);
    for (uint32_t k = 0; k < kVectors; ++k) dom.to_odd_coset(expect.data() + k * n, pool);
    DeviceDomain<C> dd(log_n, nullptr);
    auto d = to_device(v.data(), kVectors * n);
    dd.to_odd_coset(d.get(), nullptr, kVectors);
    ZK_CUDA(cudaDeviceSynchronize());
    auto got = to_host<Fr>(d, kVectors * n);
    for (size_t i = 0; i < kVectors * n; ++i)
      ASSERT_TRUE(got[i] == expect[i]) << C::kName << " log_n=" << log_n << " vector " << i / n << " i=" << i % n;
  }
}

TEST(Gpu, OddCosetNttMatchesTheCpu) {
  NEED_GPU();
  check_odd_coset_ntt<Bn254>({1u, 2u, 9u, 10u, 11u, 16u, 17u, 20u, 22u});
}

TEST(Gpu, Bls12381OddCosetNttMatchesTheCpu) {
  NEED_GPU();
  check_odd_coset_ntt<Bls>({1u, 2u, 10u, 11u, 16u, 20u});
}

// With `copies` > 1 the points become a precomputed table on the device
// (build_g1_table / build_g2_table, msm_table_shape's c) and the MSM reads
// it; with `misaligned` the scalars sit 4 bytes past a 16-byte boundary (a
// slot's witness need not be aligned: every kernel reading scalars must cope).
template <class P, class Curve = Bn254>
void check_msm(const std::vector<uint8_t>& points, const std::vector<U256>& scalars, uint32_t c, const char* what,
               uint32_t copies = 1, bool misaligned = false) {
  ThreadPool pool(0);
  const size_t n = scalars.size();
  constexpr size_t stride = sizeof(Affine<P>);
  constexpr bool g1 = std::is_same_v<P, typename Curve::G1Params>;
  auto plan = plan_scalars(scalars.data(), n, pool, 0, Curve::kFrBits);
  Xyzz<P> expect = msm<P>(points.data(), stride, plan, 0, n, pool);
  using Runner = MsmRunner<Curve>;
  typename Runner::Table table{msm_table_shape(uint32_t(n), Curve::kFrBits, copies), uint32_t(n)};
  DeviceBuffer dp(std::max<size_t>(1, table.shape.copies * points.size()));
  ZK_CUDA(cudaMemcpy(dp.get(), points.data(), points.size(), cudaMemcpyHostToDevice));
  if (g1) Runner::build_g1_table(dp.get(), uint32_t(n), table.shape, nullptr);
  else Runner::build_g2_table(dp.get(), uint32_t(n), table.shape, nullptr);
  DeviceBuffer ds(n * 32 + 16);
  uint32_t* d_scalars = ds.template get<uint32_t>() + (misaligned ? 1 : 0);
  ZK_CUDA(cudaMemcpy(d_scalars, scalars.data(), n * 32, cudaMemcpyHostToDevice));
  Runner runner;
  Xyzz<P> got = Xyzz<P>::infinity();
  const typename Runner::Table* t = copies > 1 ? &table : nullptr;
  if constexpr (g1) {
    runner.run(d_scalars, uint32_t(n), {{dp.get(), &got}}, {}, nullptr, c, t);
  } else {
    runner.run(d_scalars, uint32_t(n), {}, {{dp.get(), &got}}, nullptr, c, t);
  }
  EXPECT_TRUE(got.equals(expect)) << Curve::kName << " " << what << " n=" << n << " c=" << c << " copies "
                                  << table.shape.copies << " (c = " << table.shape.c << ")"
                                  << (misaligned ? " misaligned scalars" : "");
}

// n MSM inputs over P (a point group of Curve): make_msm_case's edge cases
// (infinity, repeated and opposite points; 0, 1, r − 1 scalars) for the first
// min(n, edges), then consecutive multiples (start + i)·gen with random scalars.
template <class P, class Curve>
test::MsmCase<P> msm_inputs(size_t n, size_t edges, const Affine<P>& gen, uint64_t start, std::mt19937_64& rng,
                            ThreadPool& pool) {
  auto cs = test::make_msm_case<P, typename Curve::Fr::Params>(std::min(n, edges), gen, rng);
  if (n > cs.scalars.size()) {
    auto more = test::consecutive_points<P>(gen, start, n - cs.scalars.size(), pool);
    cs.points.insert(cs.points.end(), more.begin(), more.end());
    while (cs.scalars.size() < n) cs.scalars.push_back(test::random_scalar_of<Curve>(rng));
  }
  return cs;
}

TEST(Gpu, MsmMatchesTheCpu) {
  NEED_GPU();
  ThreadPool pool(0);
  std::mt19937_64 rng(14);
  for (size_t n : {size_t(1), size_t(7), size_t(1000), size_t(1) << 16, size_t(1) << 20}) {
    auto [pts, sc] = msm_inputs<G1Params, Bn254>(n, 2000, test::g1_generator(), 12345, rng, pool);
    check_msm<G1Params>(pts, sc, 0, "G1 random");
    if (n == 1000)
      for (uint32_t c : {6u, 9u, 13u, 16u, 20u}) check_msm<G1Params>(pts, sc, c, "G1 window");
    if (n == (size_t(1) << 16)) {
      std::vector<U256> ones(n, U256{1, 0, 0, 0});
      check_msm<G1Params>(pts, ones, 0, "G1 all ones");
      std::vector<U256> bits(n);
      for (size_t i = 0; i < n; ++i) bits[i] = U256{rng() & 1, 0, 0, 0};
      check_msm<G1Params>(pts, bits, 0, "G1 binary");
      std::vector<U256> zeros(n, U256{0, 0, 0, 0});
      check_msm<G1Params>(pts, zeros, 0, "G1 all zero");
      for (uint32_t b : {12u, 13u, 24u, 40u}) {  // trimmed windows; 2^b − 1 carries at b = c, 2c (c = 12 here)
        std::vector<U256> small(n);
        for (auto& k : small) k = U256{rng() & ((uint64_t(1) << b) - 1), 0, 0, 0};
        small[5] = U256{(uint64_t(1) << b) - 1, 0, 0, 0};
        check_msm<G1Params>(pts, small, 0, "G1 small scalars");
      }
    }
  }
}

// Precomputed tables (issue 18): full and partial, G1 and G2, both curves,
// with random, small, all-one and zero scalars; and misaligned scalars.
TEST(Gpu, MsmOverPrecomputedTablesMatchesTheCpu) {
  NEED_GPU();
  ThreadPool pool(0);
  std::mt19937_64 rng(19);
  for (size_t n : {size_t(1), size_t(1000), size_t(1) << 16, size_t(1) << 20}) {
    auto [pts, sc] = msm_inputs<G1Params, Bn254>(n, 2000, test::g1_generator(), 2222, rng, pool);
    for (uint32_t copies : {2u, 5u, 16u}) check_msm<G1Params>(pts, sc, 0, "G1 table", copies);
    check_msm<G1Params>(pts, sc, 0, "G1", 1, true);
    if (n == (size_t(1) << 16)) {
      std::vector<U256> ones(n, U256{1, 0, 0, 0}), zeros(n, U256{0, 0, 0, 0}), small(n);
      for (auto& k : small) k = U256{rng() & 0xffffff, 0, 0, 0};
      check_msm<G1Params>(pts, ones, 0, "G1 table, all ones", 16);
      check_msm<G1Params>(pts, zeros, 0, "G1 table, all zero", 16);
      check_msm<G1Params>(pts, small, 0, "G1 table, 24-bit scalars", 16);
      check_msm<G1Params>(pts, small, 0, "G1 24-bit scalars", 1, true);
    }
  }
  for (size_t n : {size_t(300), size_t(1) << 14}) {
    auto [pts, sc] = msm_inputs<G2Params, Bn254>(n, 300, test::g2_generator(), 778, rng, pool);
    check_msm<G2Params>(pts, sc, 0, "G2 table", 16);
  }
  using G1P = bls12_381::G1Params;
  using G2P = bls12_381::G2Params;
  auto [bp1, bs1] = msm_inputs<G1P, Bls>(size_t(1) << 16, 2000, Bls::g1_generator(), 4322, rng, pool);
  check_msm<G1P, Bls>(bp1, bs1, 0, "G1 table", 16);
  check_msm<G1P, Bls>(bp1, bs1, 0, "G1 table", 3);
  auto [bp2, bs2] = msm_inputs<G2P, Bls>(size_t(1) << 12, 300, Bls::g2_generator(), 98, rng, pool);
  check_msm<G2P, Bls>(bp2, bs2, 0, "G2 table", 16);
}

TEST(Gpu, G2MsmMatchesTheCpu) {
  NEED_GPU();
  ThreadPool pool(0);
  std::mt19937_64 rng(15);
  for (size_t n : {size_t(1), size_t(300), size_t(1) << 14}) {
    auto [pts, sc] = msm_inputs<G2Params, Bn254>(n, 300, test::g2_generator(), 777, rng, pool);
    check_msm<G2Params>(pts, sc, 0, "G2");
  }
}

// BLS12-381: 96-byte G1 and 192-byte G2 points, 255-bit scalars (r − 1 and
// values just below r in the edge cases reach the top window's carry).
TEST(Gpu, Bls12381MsmMatchesTheCpu) {
  NEED_GPU();
  ThreadPool pool(0);
  std::mt19937_64 rng(18);
  using G1P = bls12_381::G1Params;
  using G2P = bls12_381::G2Params;
  for (size_t n : {size_t(1), size_t(1000), size_t(1) << 16, size_t(1) << 20}) {
    auto [pts, sc] = msm_inputs<G1P, Bls>(n, 2000, Bls::g1_generator(), 4321, rng, pool);
    check_msm<G1P, Bls>(pts, sc, 0, "G1 random");
    if (n == 1000)
      for (uint32_t c : {6u, 8u, 15u, 16u, 20u}) check_msm<G1P, Bls>(pts, sc, c, "G1 window");
    if (n == (size_t(1) << 16)) {
      std::vector<U256> ones(n, U256{1, 0, 0, 0});
      check_msm<G1P, Bls>(pts, ones, 0, "G1 all ones");
    }
  }
  for (size_t n : {size_t(1), size_t(300), size_t(1) << 12}) {
    auto [pts, sc] = msm_inputs<G2P, Bls>(n, 300, Bls::g2_generator(), 99, rng, pool);
    check_msm<G2P, Bls>(pts, sc, 0, "G2");
  }
}

bool same_bytes(const std::vector<Fr>& x, const std::vector<Fr>& y) {
  return x.size() == y.size() && (x.empty() || std::memcmp(x.data(), y.data(), x.size() * sizeof(Fr)) == 0);
}

// DeviceDomain's tables, made on the device, hold the CPU Domain's values.
TEST(Gpu, DomainTablesMatchTheCpu) {
  NEED_GPU();
  ThreadPool pool(0);
  for (uint32_t log_n : {1u, 2u, 10u, 11u, 16u, 20u, 22u}) {
    const Domain dom(log_n, pool);
    DeviceDomain<Bn254> dd(log_n, nullptr);
    const size_t half = dom.twiddles().size();
    std::vector<Fr> got(half), got_inv(half);
    ZK_CUDA(cudaMemcpy(got.data(), dd.twiddles(), half * 32, cudaMemcpyDeviceToHost));
    ZK_CUDA(cudaMemcpy(got_inv.data(), dd.twiddles_inv(), half * 32, cudaMemcpyDeviceToHost));
    EXPECT_TRUE(same_bytes(got, dom.twiddles())) << "log_n=" << log_n;
    EXPECT_TRUE(same_bytes(got_inv, dom.twiddles_inv())) << "log_n=" << log_n;
    const PowerTables<Fr> coset = power_tables(dom.coset(), log_n, dom.n_inv());
    ASSERT_EQ(dd.coset_split(), coset.h);
    std::vector<Fr> c_lo(coset.lo.size()), c_hi(coset.hi.size());
    ZK_CUDA(cudaMemcpy(c_lo.data(), dd.coset_lo(), c_lo.size() * 32, cudaMemcpyDeviceToHost));
    ZK_CUDA(cudaMemcpy(c_hi.data(), dd.coset_hi(), c_hi.size() * 32, cudaMemcpyDeviceToHost));
    EXPECT_TRUE(same_bytes(c_lo, coset.lo) && same_bytes(c_hi, coset.hi)) << "log_n=" << log_n;
  }
}

bool same_rows(const SparseRows& x, const SparseRows& y) {
  return x.start == y.start && x.signal.size() == y.signal.size() &&
         std::equal(x.signal.begin(), x.signal.end(), y.signal.begin()) && x.coef.size() == y.coef.size() &&
         (x.coef.empty() || std::memcmp(x.coef.data(), y.coef.data(), x.coef.size() * sizeof(Fr)) == 0);
}

// The matrix built on the device from `key`'s raw records: the CPU build's
// arrays exactly, and a, b, c from a random witness as synthesize_abc's.
void check_device_matrix(const Zkey& key, const std::string& what) {
  ThreadPool pool(0);
  auto records = to_device(key.coeffs.data(), key.coeffs.size());
  DeviceMatrix<Bn254> dm(records.get(), key.n_coeffs, key.domain_size, nullptr);
  records.release();  // the matrix keeps nothing of the records
  const ConstraintMatrix expect = ConstraintMatrix::build(key, &pool);
  const ConstraintMatrix got = dm.download();
  EXPECT_TRUE(same_rows(got.a, expect.a)) << what << ": A";
  EXPECT_TRUE(same_rows(got.b, expect.b)) << what << ": B";

  std::mt19937_64 rng(16);
  std::vector<U256> w(key.n_vars);
  for (auto& x : w) x = test::random_scalar(rng);
  const size_t n = key.domain_size;
  std::vector<Fr> abc(3 * n);
  synthesize_abc(expect, w.data(), abc.data(), abc.data() + n, abc.data() + 2 * n, pool);
  auto dw = to_device(w.data(), w.size());
  DeviceBuffer dabc(3 * n * 32);
  dm.synthesize(dw.get(), dabc.get(), nullptr);
  ZK_CUDA(cudaDeviceSynchronize());
  EXPECT_TRUE(same_bytes(to_host<Fr>(dabc, 3 * n), abc)) << what << ": a, b, c";
}

constexpr test::RecordOrder kOrders[] = {test::RecordOrder::snarkjs, test::RecordOrder::a_then_b,
                                         test::RecordOrder::shuffled, test::RecordOrder::reversed};

TEST(Gpu, DeviceMatrixBuildMatchesTheCpuInEveryRecordOrder) {
  NEED_GPU();
  test::TempDir dir;
  const std::string chain = test::shared_fixture("chain.zkey");
  const Zkey shape = Zkey::open(chain);
  const auto edge = test::edge_case_records(shape.domain_size, shape.n_vars, 3);
  for (const std::string& base : {chain, test::repo_path("tests/fixtures/manypub.zkey")}) {
    for (test::RecordOrder order : kOrders) {
      const std::string path = dir / "reordered.zkey";
      test::write_with_records(base, test::in_order(test::records_of(Zkey::open(base)), order, 21), path);
      check_device_matrix(Zkey::open(path), base + ", " + test::order_name(order));
      test::write_with_records(chain, test::in_order(edge, order, 22), path);
      check_device_matrix(Zkey::open(path), std::string("edge cases, ") + test::order_name(order));
    }
  }
  test::write_with_records(test::shared_fixture("tiny.zkey"), {}, dir / "empty.zkey");
  check_device_matrix(Zkey::open(dir / "empty.zkey"), "no records");
  // A large key, e.g. gpu-check's 2^20 test key: in its own order and shuffled.
  if (const char* big = std::getenv("ZKFARM_GPU_TEST_ZKEY")) {
    check_device_matrix(Zkey::open(big), big);
    const std::string path = dir / "big-shuffled.zkey";
    test::write_with_records(big, test::in_order(test::records_of(Zkey::open(big)), test::RecordOrder::shuffled, 23),
                             path);
    check_device_matrix(Zkey::open(path), std::string(big) + ", shuffled");
  }
}

// Whole proofs of chain with its records in every order, the CUDA backend
// (key loaded with the checks alongside the upload and the device builds)
// against the CPU backend, one fixed blinding; and a key whose contents are
// bad gives Zkey::open's error from the CUDA backend's load.
TEST(Gpu, ProofsOfReorderedKeysMatchTheCpuBackend) {
  NEED_GPU();
  test::TempDir dir;
  const std::string chain = test::shared_fixture("chain.zkey");
  const Wtns wtns = Wtns::open(test::shared_fixture("chain.3.wtns"));
  std::vector<U256> w(wtns.values.size() / 32);
  std::memcpy(w.data(), wtns.values.data(), w.size() * 32);
  std::mt19937_64 rng(17);
  const U256 r = test::random_scalar(rng), s = test::random_scalar(rng);
  auto cuda = gpu::make_cuda_backend(gpu::CudaOptions{});
  gpu::CpuBackend cpu(0, 1);
  for (test::RecordOrder order : kOrders) {
    const std::string path = dir / (std::string("chain-") + std::to_string(int(order)) + ".zkey");
    test::write_with_records(chain, test::in_order(test::records_of(Zkey::open(chain)), order, 24), path);
    const Zkey& kc = cuda->load(path);
    const Proof pg = gpu::prove_of<Bn254>(*cuda, kc, w.data(), r, s, nullptr);
    const Proof pc = gpu::prove_of<Bn254>(cpu, cpu.load(path), w.data(), r, s, nullptr);
    EXPECT_EQ(std::memcmp(&pg, &pc, sizeof pg), 0) << test::order_name(order);
  }
  std::string bytes = test::read_file(chain);
  const Zkey good = Zkey::open(chain);
  std::memset(bytes.data() + good.file.section_offset(9) + 100 * 64 + 32, 0xff, 32);
  const std::string bad = dir / "bad-h.zkey";
  std::ofstream(bad, std::ios::binary) << bytes;
  std::string expected, got;
  try {
    Zkey::open(bad);
  } catch (const InputError& e) {
    expected = e.what();
  }
  try {
    cuda->load(bad);
  } catch (const InputError& e) {
    got = e.what();
  }
  EXPECT_FALSE(expected.empty());
  EXPECT_EQ(got, expected);
}

// BLS12-381 keys on the CUDA backend beside a resident BN254 key: every
// chain_bls12381 witness (snarkjs's fixture, shuffled records too) proved on
// the GPU, byte-identical to the CPU backend with one fixed blinding, and the
// proof verifies; the BN254 key stays resident and still proves as the CPU does.
TEST(Gpu, Bls12381ProofsMatchTheCpuBackendBesideABn254Key) {
  NEED_GPU();
  test::TempDir dir;
  auto cuda = gpu::make_cuda_backend(gpu::CudaOptions{});
  gpu::CpuBackend cpu(0, 2);
  const std::string chain = test::shared_fixture("chain.zkey");
  const std::string bls = test::shared_fixture("chain_bls12381.zkey");
  const std::string shuffled = dir / "bls-shuffled.zkey";
  test::write_with_records(bls, test::in_order(test::records_of(Zkey::open(bls)), test::RecordOrder::shuffled, 25),
                           shuffled);
  cuda->load(chain);
  std::mt19937_64 rng(19);
  int proved = 0;
  for (const std::string& path : {bls, shuffled}) {
    const Zkey& kg = cuda->load(path);
    const Zkey& kc = cpu.load(path);
    ASSERT_TRUE(cuda->has_key(chain)) << "both curves' keys resident at once";
    for (int i = 0; i < 3; ++i) {
      const Wtns wtns = Wtns::open(test::shared_fixture("chain_bls12381." + std::to_string(i) + ".wtns"));
      std::vector<U256> w(wtns.values.size() / 32);
      std::memcpy(w.data(), wtns.values.data(), w.size() * 32);
      const U256 r = test::random_scalar_of<Bls>(rng), s = test::random_scalar_of<Bls>(rng);
      const auto pg = gpu::prove_of<bls12_381::Curve>(*cuda, kg, w.data(), r, s, nullptr);
      const auto pc = gpu::prove_of<bls12_381::Curve>(cpu, kc, w.data(), r, s, nullptr);
      EXPECT_EQ(std::memcmp(&pg, &pc, sizeof pg), 0) << path << " witness " << i;
      std::vector<U256> pub(w.begin() + 1, w.begin() + 1 + kg.n_public);
      EXPECT_TRUE(bls12_381::verify_proof(bls12_381::VerifyingKey::from_zkey(kg), pg, pub).ok()) << path << " " << i;
      ++proved;
    }
  }
  EXPECT_EQ(proved, 6);
  const Wtns wtns = Wtns::open(test::shared_fixture("chain.3.wtns"));
  std::vector<U256> w(wtns.values.size() / 32);
  std::memcpy(w.data(), wtns.values.data(), w.size() * 32);
  const U256 r = test::random_scalar(rng), s = test::random_scalar(rng);
  const Proof pg = gpu::prove_of<Bn254>(*cuda, cuda->load(chain), w.data(), r, s, nullptr);
  const Proof pc = gpu::prove_of<Bn254>(cpu, cpu.load(chain), w.data(), r, s, nullptr);
  EXPECT_EQ(std::memcmp(&pg, &pc, sizeof pg), 0);
  // A key proved as the other curve is refused by name, not misread.
  std::string got;
  try {
    gpu::prove_of<Bn254>(*cuda, cuda->load(bls), w.data(), r, s, nullptr);
  } catch (const InputError& e) {
    got = e.what();
  }
  EXPECT_NE(got.find(bls), std::string::npos) << got;
}

// Lanes on the device (issue 36): four threads prove the chain fixture's
// witnesses of both curves at once through the lane gate, each step on its
// own workspace (streams, buffers), kernels of different steps overlapping;
// every proof is byte-identical to the CPU backend's with the same blinding.
TEST(Gpu, ConcurrentProveStepsMatchTheCpuBackend) {
  NEED_GPU();
  auto cuda = gpu::make_cuda_backend(gpu::CudaOptions{});
  gpu::CpuBackend cpu(0, 2);
  gpu::LaneGate gate(*cuda, 4);
  struct Part {
    std::string zkey;
    std::vector<U256> w;
    U256 r, s;
    std::string expected, got;
  };
  std::vector<Part> parts;
  std::mt19937_64 rng(23);
  for (const char* name : {"chain", "chain_bls12381"}) {
    const std::string zkey = test::shared_fixture(std::string(name) + ".zkey");
    for (int round = 0; round < 4; ++round) {
      for (int i = 0; i < 10; ++i) {
        const Wtns wtns = Wtns::open(test::shared_fixture(std::string(name) + "." + std::to_string(i) + ".wtns"));
        Part p{zkey, std::vector<U256>(wtns.values.size() / 32), {}, {}, {}, {}};
        std::memcpy(p.w.data(), wtns.values.data(), p.w.size() * 32);
        const bool bls = std::string(name) != "chain";
        p.r = bls ? test::random_scalar_of<Bls>(rng) : test::random_scalar(rng);
        p.s = bls ? test::random_scalar_of<Bls>(rng) : test::random_scalar(rng);
        parts.push_back(std::move(p));
      }
    }
  }
  auto encode = [](gpu::ProveBackend& b, const Zkey& key, const Part& p) {
    return with_curve(key.curve, [&]<class C>(std::type_identity<C>) {
      const auto proof = gpu::prove_of<C>(b, key, p.w.data(), p.r, p.s, nullptr);
      return std::string(reinterpret_cast<const char*>(&proof), sizeof proof);
    });
  };
  for (Part& p : parts) p.expected = encode(cpu, cpu.load(p.zkey), p);
  std::atomic<size_t> next{0};
  std::vector<std::thread> lanes;
  for (int t = 0; t < 4; ++t) {
    lanes.emplace_back([&] {
      for (size_t i; (i = next++) < parts.size();)
        parts[i].got = gate.with_key(parts[i].zkey, [&](const Zkey& key) { return encode(*cuda, key, parts[i]); });
    });
  }
  for (auto& t : lanes) t.join();
  for (size_t i = 0; i < parts.size(); ++i) EXPECT_EQ(parts[i].got, parts[i].expected) << "partition " << i;
}

// Issue 49 item 3 on a real device: a prove step whose device allocation is
// refused (every free byte taken, as other lanes' workspaces and resident
// keys would) is a StepFault, not a DeviceError: the device stays usable, and
// once the memory is back the next step proves, byte-identical to the CPU
// backend. (A sticky fault, an illegal address, is still a DeviceError: the
// worker exits; that path is the old one.)
TEST(Gpu, AStepWhoseDeviceMemoryIsShortIsAStepFaultAndTheDeviceGoesOn) {
  NEED_GPU();
  auto cuda = gpu::make_cuda_backend(gpu::CudaOptions{});
  gpu::CpuBackend cpu(0, 1);
  const std::string chain = test::shared_fixture("chain.zkey");
  const Wtns wtns = Wtns::open(test::shared_fixture("chain.3.wtns"));
  std::vector<U256> w(wtns.values.size() / 32);
  std::memcpy(w.data(), wtns.values.data(), w.size() * 32);
  std::mt19937_64 rng(29);
  const U256 r = test::random_scalar(rng), s = test::random_scalar(rng);
  const Zkey& key = cuda->load(chain);  // resident first: only the step's own memory is short
  std::vector<void*> taken;
  for (size_t chunk : {size_t(1) << 28, size_t(1) << 20, size_t(1) << 12})
    for (void* p = nullptr; cudaMalloc(&p, chunk) == cudaSuccess;) taken.push_back(p);
  (void)cudaGetLastError();
  ASSERT_FALSE(taken.empty());
  std::string fault;
  try {
    gpu::prove_of<Bn254>(*cuda, key, w.data(), r, s, nullptr);
    ADD_FAILURE() << "a step proved with no device memory free";
  } catch (const gpu::StepFault& e) {
    fault = e.what();
  }
  EXPECT_NE(fault.find("cudaErrorMemoryAllocation"), std::string::npos) << fault;
  EXPECT_NE(fault.find("the device usable"), std::string::npos) << fault;
  for (void* p : taken) ASSERT_EQ(cudaFree(p), cudaSuccess);
  const Proof pg = gpu::prove_of<Bn254>(*cuda, key, w.data(), r, s, nullptr);
  const Proof pc = gpu::prove_of<Bn254>(cpu, cpu.load(chain), w.data(), r, s, nullptr);
  EXPECT_EQ(std::memcmp(&pg, &pc, sizeof pg), 0);
}

}  // namespace
}  // namespace zkfarm
