// The CUDA backend on a real GPU (scripts/gpu-check.sh runs this on the H200
// machine; without a device every test skips). Each check is against the CPU
// prover: field products bit for bit (PTX, portable and the default
// out-of-line multiplication), the domain's tables as the device makes them
// up to 2^22, the odd-coset NTT up to 2^20, G1 MSMs up to 2^20 points with
// zero, one, binary and random scalars and window widths 6 to 20, G2 MSMs up
// to 2^14 points, and the constraint matrix built on the device from keys of
// every record order (plus the key named by ZKFARM_GPU_TEST_ZKEY, if set),
// then whole proofs of those keys against the CPU backend's. More whole
// proofs: scripts/gpu-check.sh.
#include <gtest/gtest.h>

#include <cstdlib>
#include <cstring>
#include <fstream>
#include <random>

#include "coeff_records.hpp"
#include "gpu_worker/cpu_backend.hpp"
#include "gpu_worker/cuda/device_msm.cuh"
#include "gpu_worker/cuda/device_ntt.cuh"
#include "gpu_worker/cuda/device_synth.cuh"
#include "gpu_worker/cuda/ntt_tables.hpp"
#include "gpu_worker/cuda_backend.hpp"
#include "groth16/bls12_381_verify.hpp"
#include "groth16/constraint_matrix.hpp"
#include "groth16/errors.hpp"
#include "groth16/msm.hpp"
#include "groth16/ntt.hpp"
#include "groth16/wtns.hpp"
#include "test_util.hpp"

namespace zkfarm {
namespace {

using namespace zkfarm::cuda;

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
__global__ void k_mul(const F* a, const F* b, F* ptx, F* portable, F* dflt, size_t n) {
  size_t i = size_t(blockIdx.x) * blockDim.x + threadIdx.x;
  if (i >= n) return;
  ptx[i] = F::mul_ptx(a[i], b[i]);
  portable[i] = F::mul_portable(a[i], b[i]);
  dflt[i] = a[i] * b[i];  // the out-of-line product the kernels use
}

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
    a[i] = HostF::from_u256(test::random_scalar(rng));
    b[i] = HostF::from_u256(test::random_scalar(rng));
  }
  a[0] = -HostF::one();
  b[0] = -HostF::one();
  a[1] = HostF::zero();
  auto da = to_device(a.data(), n), db = to_device(b.data(), n);
  DeviceBuffer p1(n * 32), p2(n * 32), p3(n * 32);
  k_mul<DevF><<<(n + 255) / 256, 256>>>(da.template get<DevF>(), db.template get<DevF>(), p1.template get<DevF>(),
                                        p2.template get<DevF>(), p3.template get<DevF>(), n);
  ZK_CUDA_LAUNCHED();
  auto r1 = to_host<HostF>(p1, n), r2 = to_host<HostF>(p2, n), r3 = to_host<HostF>(p3, n);
  for (size_t i = 0; i < n; ++i) {
    ASSERT_TRUE(r1[i] == a[i] * b[i]) << "PTX product " << i;
    ASSERT_TRUE(r2[i] == a[i] * b[i]) << "portable product " << i;
    ASSERT_TRUE(r3[i] == a[i] * b[i]) << "default product " << i;
  }
}

TEST(Gpu, FieldProductsMatchTheCpu) {
  NEED_GPU();
  check_products<Fq, DFq>();
  check_products<Fr, DFr>();
  std::mt19937_64 rng(12);
  const size_t n = 4096;
  std::vector<Fq2> a(n), b(n);
  for (size_t i = 0; i < n; ++i) {
    a[i] = {Fq::from_u256(test::random_scalar(rng)), Fq::from_u256(test::random_scalar(rng))};
    b[i] = {Fq::from_u256(test::random_scalar(rng)), Fq::from_u256(test::random_scalar(rng))};
  }
  auto da = to_device(a.data(), n), db = to_device(b.data(), n);
  DeviceBuffer out(n * 64);
  k_mul2<<<(n + 255) / 256, 256>>>(da.get<DFq2>(), db.get<DFq2>(), out.get<DFq2>(), n);
  ZK_CUDA_LAUNCHED();
  auto r = to_host<Fq2>(out, n);
  for (size_t i = 0; i < n; ++i) ASSERT_TRUE(r[i] == a[i] * b[i]) << i;
}

TEST(Gpu, OddCosetNttMatchesTheCpu) {
  NEED_GPU();
  ThreadPool pool(0);
  std::mt19937_64 rng(13);
  for (uint32_t log_n : {1u, 2u, 9u, 10u, 11u, 16u, 20u}) {
    const size_t n = size_t(1) << log_n;
    std::vector<Fr> v(n);
    for (auto& x : v) x = Fr::from_u256(test::random_scalar(rng));
    std::vector<Fr> expect = v;
    const Domain dom(log_n, pool);
    dom.to_odd_coset(expect.data(), pool);
    DeviceDomain dd(log_n, nullptr);
    auto d = to_device(v.data(), n);
    dd.to_odd_coset(d.get(), nullptr);
    ZK_CUDA(cudaDeviceSynchronize());
    auto got = to_host<Fr>(d, n);
    for (size_t i = 0; i < n; ++i) ASSERT_TRUE(got[i] == expect[i]) << "log_n=" << log_n << " i=" << i;
  }
}

template <class C>
void check_msm(const std::vector<uint8_t>& points, const std::vector<U256>& scalars, uint32_t c, const char* what) {
  ThreadPool pool(0);
  const size_t n = scalars.size();
  constexpr size_t stride = sizeof(Affine<C>);
  auto plan = plan_scalars(scalars.data(), n, pool);
  Xyzz<C> expect = msm<C>(points.data(), stride, plan, 0, n, pool);
  auto dp = to_device(points.data(), points.size());
  auto ds = to_device(scalars.data(), n);
  MsmRunner runner;
  Xyzz<C> got = Xyzz<C>::infinity();
  if constexpr (std::is_same_v<C, G1Params>) {
    runner.run(ds.get<uint32_t>(), uint32_t(n), {{dp.get(), &got}}, {}, nullptr, c);
  } else {
    runner.run(ds.get<uint32_t>(), uint32_t(n), {}, {{dp.get(), &got}}, nullptr, c);
  }
  EXPECT_TRUE(got.equals(expect)) << what << " n=" << n << " c=" << c;
}

TEST(Gpu, MsmMatchesTheCpu) {
  NEED_GPU();
  ThreadPool pool(0);
  std::mt19937_64 rng(14);
  for (size_t n : {size_t(1), size_t(7), size_t(1000), size_t(1) << 16, size_t(1) << 20}) {
    auto cs = test::make_msm_case<G1Params>(std::min<size_t>(n, 2000), test::g1_generator(), rng);
    // Edge cases (infinity, repeated, opposite points; 0, 1, r−1 scalars) in
    // the first 2000, consecutive multiples of G after them.
    std::vector<uint8_t> pts = cs.points;
    std::vector<U256> sc = cs.scalars;
    if (n > pts.size() / 64) {
      auto more = test::consecutive_points<G1Params>(test::g1_generator(), 12345, n - sc.size(), pool);
      pts.insert(pts.end(), more.begin(), more.end());
      while (sc.size() < n) sc.push_back(test::random_scalar(rng));
    }
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
    }
  }
}

TEST(Gpu, G2MsmMatchesTheCpu) {
  NEED_GPU();
  ThreadPool pool(0);
  std::mt19937_64 rng(15);
  for (size_t n : {size_t(1), size_t(300), size_t(1) << 14}) {
    auto cs = test::make_msm_case<G2Params>(std::min<size_t>(n, 300), test::g2_generator(), rng);
    std::vector<uint8_t> pts = cs.points;
    std::vector<U256> sc = cs.scalars;
    if (n > sc.size()) {
      auto more = test::consecutive_points<G2Params>(test::g2_generator(), 777, n - sc.size(), pool);
      pts.insert(pts.end(), more.begin(), more.end());
      while (sc.size() < n) sc.push_back(test::random_scalar(rng));
    }
    check_msm<G2Params>(pts, sc, 0, "G2");
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
    DeviceDomain dd(log_n, nullptr);
    const size_t half = dom.twiddles().size();
    std::vector<Fr> got(half), got_inv(half);
    ZK_CUDA(cudaMemcpy(got.data(), dd.twiddles(), half * 32, cudaMemcpyDeviceToHost));
    ZK_CUDA(cudaMemcpy(got_inv.data(), dd.twiddles_inv(), half * 32, cudaMemcpyDeviceToHost));
    EXPECT_TRUE(same_bytes(got, dom.twiddles())) << "log_n=" << log_n;
    EXPECT_TRUE(same_bytes(got_inv, dom.twiddles_inv())) << "log_n=" << log_n;
    const PowerTables coset = power_tables(dom.coset(), log_n, dom.n_inv());
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
  DeviceMatrix dm(records.get(), key.n_coeffs, key.domain_size, nullptr);
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
    const Proof pg = cuda->prove(kc, w.data(), r, s, nullptr);
    const Proof pc = cpu.prove(cpu.load(path), w.data(), r, s, nullptr);
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

// A BLS12-381 key on the CUDA backend (BN254's field code only, so far): refused
// by name from its header, before the key cache makes room, so a resident
// BN254 key stays resident; the CPU backend proves it.
TEST(Gpu, CudaBackendRefusesBls12381KeysByName) {
  NEED_GPU();
  auto cuda = gpu::make_cuda_backend(gpu::CudaOptions{});
  const std::string chain = test::shared_fixture("chain.zkey");
  const std::string bls = test::shared_fixture("chain_bls12381.zkey");
  cuda->load(chain);
  std::string got;
  try {
    cuda->load(bls);
  } catch (const InputError& e) {
    got = e.what();
  }
  EXPECT_NE(got.find(bls + ": the key is over bls12381, the cuda backend proves bn128 keys only"), std::string::npos)
      << got;
  EXPECT_TRUE(cuda->has_key(chain));
  gpu::CpuBackend cpu(0, 1);
  const Zkey& key = cpu.load(bls);
  const Wtns wtns = Wtns::open(test::shared_fixture("chain_bls12381.0.wtns"));
  std::vector<U256> w(wtns.values.size() / 32);
  std::memcpy(w.data(), wtns.values.data(), w.size() * 32);
  const auto proof = cpu.prove_bls12_381(key, w.data(), random_scalar_of<bls12_381::Curve>(),
                                         random_scalar_of<bls12_381::Curve>(), nullptr);
  std::vector<U256> pub(w.begin() + 1, w.begin() + 1 + key.n_public);
  EXPECT_TRUE(bls12_381::verify_proof(bls12_381::VerifyingKey::from_zkey(key), proof, pub).ok());
}

}  // namespace
}  // namespace zkfarm
