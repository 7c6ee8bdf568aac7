// The GPU backend's arithmetic and per-thread steps (gpu_worker/cuda/*.cuh),
// compiled for the CPU and checked against the CPU prover: the field and curve
// operations bit for bit, the MSM's digit/sort/chunk/reduce pipeline against
// the naive sum, and the NTT's DIF/coset/DIT path against Domain::to_odd_coset.
// The kernels run these same functions; scripts/gpu-check.sh checks them on a
// GPU. No GPU needed here.
#include <gtest/gtest.h>

#include <algorithm>
#include <bit>
#include <numeric>

#include "gpu_worker/cuda/dcurve.cuh"
#include "gpu_worker/cuda/msm_finish.hpp"
#include "gpu_worker/cuda/msm_steps.cuh"
#include "gpu_worker/cuda/ntt_steps.cuh"
#include "gpu_worker/cuda/ntt_tables.hpp"
#include "groth16/msm.hpp"
#include "test_util.hpp"

namespace zkfarm {
namespace {

using namespace zkfarm::cuda;

// Host and device types share their bytes: std::bit_cast moves values across
// (and fails to compile if a layout's size ever differs).
template <class HostF, class DevF>
void check_field_ops(std::mt19937_64& rng) {
  for (int it = 0; it < 2000; ++it) {
    U256 xa = test::random_scalar(rng), xb = test::random_scalar(rng);
    if (it == 0) xb = U256{0, 0, 0, 0};
    if (it == 1) xa = (-HostF::one()).to_u256();
    HostF a = HostF::from_u256(xa), b = HostF::from_u256(xb);
    DevF da = std::bit_cast<DevF>(a), db = std::bit_cast<DevF>(b);
    ASSERT_TRUE(std::bit_cast<HostF>(da * db) == a * b) << it;
    ASSERT_TRUE(std::bit_cast<HostF>(da + db) == a + b) << it;
    ASSERT_TRUE(std::bit_cast<HostF>(da - db) == a - b) << it;
    ASSERT_TRUE(std::bit_cast<HostF>(-da) == -a) << it;
    ASSERT_TRUE(std::bit_cast<HostF>(da.sqr()) == a.sqr()) << it;
    U256 plain = std::bit_cast<U256>(da.from_montgomery());
    ASSERT_EQ(plain, a.to_u256()) << it;
  }
  EXPECT_TRUE(std::bit_cast<HostF>(DevF::one()) == HostF::one());
}

TEST(CudaLogic, FieldsMatchTheCpu) {
  std::mt19937_64 rng(1);
  check_field_ops<Fq, DFq>(rng);
  check_field_ops<Fr, DFr>(rng);
  for (int it = 0; it < 500; ++it) {
    Fq2 a{Fq::from_u256(test::random_scalar(rng)), Fq::from_u256(test::random_scalar(rng))};
    Fq2 b{Fq::from_u256(test::random_scalar(rng)), Fq::from_u256(test::random_scalar(rng))};
    DFq2 da = std::bit_cast<DFq2>(a), db = std::bit_cast<DFq2>(b);
    ASSERT_TRUE(std::bit_cast<Fq2>(da * db) == a * b);
    ASSERT_TRUE(std::bit_cast<Fq2>(da.sqr()) == a.sqr());
    ASSERT_TRUE(std::bit_cast<Fq2>(da - db) == a - b);
  }
}

template <class C, class F>
void check_curve_ops(const Affine<C>& gen) {
  std::mt19937_64 rng(2);
  using HX = Xyzz<C>;
  using DX = DXyzz<F>;
  using DA = DAffine<F>;
  for (int it = 0; it < 50; ++it) {
    HX p = HX::from_affine(gen).mul(test::random_scalar(rng));
    HX q = HX::from_affine(gen).mul(test::random_scalar(rng));
    Affine<C> qa = q.to_affine();
    DX dp = std::bit_cast<DX>(p);
    // add, add_affine, dbl
    DX s = dp;
    s.add(std::bit_cast<DX>(q));
    HX hs = p;
    hs.add(q);
    ASSERT_TRUE(std::bit_cast<HX>(s).equals(hs));
    DX m = dp;
    m.add_affine(std::bit_cast<DA>(qa));
    ASSERT_TRUE(std::bit_cast<HX>(m).equals(hs));
    ASSERT_TRUE(std::bit_cast<HX>(dp.dbl()).equals(p.dbl()));
    // equal and opposite points, infinity on either side
    Affine<C> pa = p.to_affine();
    DX e = std::bit_cast<DX>(HX::from_affine(pa));
    e.add_affine(std::bit_cast<DA>(pa));
    ASSERT_TRUE(std::bit_cast<HX>(e).equals(p.dbl()));
    DX o = std::bit_cast<DX>(HX::from_affine(pa));
    o.add_affine(std::bit_cast<DA>(pa).neg());
    ASSERT_TRUE(o.is_infinity());
    DX inf = DX::infinity();
    inf.add_affine(std::bit_cast<DA>(pa));
    ASSERT_TRUE(std::bit_cast<HX>(inf).equals(p));
    DX i2 = dp;
    i2.add_affine(std::bit_cast<DA>(Affine<C>::infinity()));
    ASSERT_TRUE(std::bit_cast<HX>(i2).equals(p));
    DX pp = dp;
    pp.add(dp);
    ASSERT_TRUE(std::bit_cast<HX>(pp).equals(p.dbl()));
  }
}

TEST(CudaLogic, CurveOpsMatchTheCpu) {
  check_curve_ops<G1Params, DFq>(test::g1_generator());
  check_curve_ops<G2Params, DFq2>(test::g2_generator());
}

// The device MSM's steps in the order device_msm.cu launches them, one loop per kernel.
template <class C, class F>
Xyzz<C> emulate_msm(const uint8_t* points, const std::vector<U256>& scalars, uint32_t c, uint32_t L1, uint32_t L) {
  const MsmShape sh = msm_shape(uint32_t(scalars.size()), c);
  const size_t total = size_t(sh.windows) * sh.n;
  std::vector<uint32_t> keys(total), vals(total);
  uint32_t count = 0;
  for (uint32_t i = 0; i < sh.n; ++i)
    count += msm_digits(i, reinterpret_cast<const uint32_t*>(scalars.data()), sh, keys.data(), vals.data());
  std::vector<size_t> order(total);
  std::iota(order.begin(), order.end(), 0);
  std::stable_sort(order.begin(), order.end(), [&](size_t x, size_t y) { return keys[x] < keys[y]; });
  std::vector<uint32_t> sk(total), sv(total);
  for (size_t i = 0; i < total; ++i) {
    sk[i] = keys[order[i]];
    sv[i] = vals[order[i]];
  }
  if (count < total) {
    EXPECT_EQ(sk[count], sh.sentinel());
  }
  std::vector<DXyzz<F>> buckets(sh.sentinel(), DXyzz<F>::infinity());
  if (count > 0) {
    uint32_t T = (count + L1 - 1) / L1;
    std::vector<uint32_t> ok(2 * T);
    std::vector<DXyzz<F>> op(2 * T);
    AffineSource<F> src{reinterpret_cast<const DAffine<F>*>(points), sv.data()};
    for (uint32_t t = 0; t < T; ++t)
      msm_accumulate_chunk<F>(t, sk.data(), count, L1, src, buckets.data(), ok.data(), op.data(), T == 1);
    while (T > 1) {
      const uint32_t n2 = 2 * T;
      std::vector<uint32_t> ik = ok;
      std::vector<DXyzz<F>> ip = op;
      T = (n2 + L - 1) / L;
      ok.assign(2 * T, 0);
      op.assign(2 * T, DXyzz<F>::infinity());
      for (uint32_t t = 0; t < T; ++t)
        msm_accumulate_chunk<F>(t, ik.data(), n2, L, XyzzSource<F>{ip.data()}, buckets.data(), ok.data(), op.data(),
                                T == 1);
    }
  }
  const uint32_t S = sh.segments(), logs = log2_exact(S);
  std::vector<DXyzz<F>> acc(sh.windows * S), run(sh.windows * S), terms(sh.windows * (logs + 1));
  for (uint32_t t = 0; t < sh.windows * S; ++t) msm_reduce_segment<F>(t, buckets.data(), sh, acc.data(), run.data());
  for (uint32_t w = 0; w < sh.windows; ++w)
    for (uint32_t j = 0; j <= logs; ++j) {
      DXyzz<F> sum = DXyzz<F>::infinity();
      for (uint32_t s = 0; s < S; ++s)
        if (msm_bit_term(j, logs, s)) sum.add(j == logs ? acc[w * S + s] : run[w * S + s]);
      terms[w * (logs + 1) + j] = sum;
    }
  return msm_finish<C>(sh, terms.data());
}

template <class C, class F>
void check_msm(size_t n, uint32_t c, uint32_t L1, uint32_t L, const Affine<C>& gen) {
  std::mt19937_64 rng(n * 3 + c);
  auto cs = test::make_msm_case<C>(n, gen, rng);
  auto expect = msm_naive<C>(cs.points.data(), sizeof(Affine<C>), cs.scalars.data(), n);
  auto got = emulate_msm<C, F>(cs.points.data(), cs.scalars, c, L1, L);
  EXPECT_TRUE(got.equals(expect)) << "n=" << n << " c=" << c << " L1=" << L1 << " L=" << L;
}

TEST(CudaLogic, MsmStepsMatchNaiveSum) {
  for (size_t n : {1, 2, 9, 100, 700})
    for (uint32_t c : {0u, 3u, 7u, 11u}) check_msm<G1Params, DFq>(n, c, 32, 16, test::g1_generator());
  check_msm<G1Params, DFq>(300, 5, 4, 4, test::g1_generator());  // many levels
  check_msm<G2Params, DFq2>(150, 0, 8, 4, test::g2_generator());
  check_msm<G2Params, DFq2>(40, 4, 32, 16, test::g2_generator());
}

// All scalars 1 (one bucket holds everything: many chunks, several levels),
// and the extreme digits of every window.
TEST(CudaLogic, MsmSkewedAndExtremeScalars) {
  std::mt19937_64 rng(9);
  const size_t n = 500;
  std::vector<uint8_t> pts(n * 64);
  for (size_t i = 0; i < n; ++i)
    G1::from_affine(test::g1_generator()).mul(test::random_scalar(rng)).to_affine().store(&pts[i * 64]);
  std::vector<U256> ones(n, U256{1, 0, 0, 0});
  EXPECT_TRUE((emulate_msm<G1Params, DFq>(pts.data(), ones, 0, 8, 4).equals(msm_naive<G1Params>(pts.data(), 64, ones.data(), n))));
  for (uint32_t c : {6u, 9u, 16u, 20u}) {
    std::vector<U256> ex;
    for (uint64_t pattern : {uint64_t(1) << (c - 1), (uint64_t(1) << c) - 1, (uint64_t(1) << (c - 1)) + 1}) {
      U256 k{0, 0, 0, 0};
      for (unsigned bit = 0; bit + c <= 250; bit += c)
        for (unsigned j = 0; j < c; ++j)
          if ((pattern >> j) & 1) k[(bit + j) / 64] |= uint64_t(1) << ((bit + j) % 64);
      ex.push_back(k);
    }
    EXPECT_TRUE((emulate_msm<G1Params, DFq>(pts.data(), ex, c, 32, 16)
                     .equals(msm_naive<G1Params>(pts.data(), 64, ex.data(), ex.size()))))
        << "c=" << c;
  }
}

TEST(CudaLogic, MsmShapes) {
  for (uint32_t lg = 0; lg <= 28; ++lg) {
    MsmShape s = msm_shape(1u << lg);
    EXPECT_GE(s.windows * s.c, 255u);
    EXPECT_EQ(s.buckets % s.seg, 0u);
    EXPECT_LE(s.key_bits(), 32u);
    EXPECT_LT(uint64_t(s.sentinel()), uint64_t(1) << s.key_bits());
  }
}

// inverse DIF (natural → bit-reversed), coset factors, forward DIT (→ natural).
void emulate_to_odd_coset(std::vector<Fr>& v, const Domain& dom) {
  const uint32_t log_n = dom.log_size();
  const CosetTables t = make_coset_tables(dom);
  auto* d = reinterpret_cast<DFr*>(v.data());
  auto* tw = reinterpret_cast<const DFr*>(dom.twiddles().data());
  auto* twi = reinterpret_cast<const DFr*>(dom.twiddles_inv().data());
  const size_t half = v.size() / 2;
  for (int lm = int(log_n) - 1; lm >= 0; --lm)
    for (uint32_t k = 0; k < half; ++k) {
      uint32_t i, w;
      ntt_pair(k, lm, log_n, i, w);
      butterfly_dif(d[i], d[i + (1u << lm)], twi[w]);
    }
  for (uint32_t p = 0; p < v.size(); ++p)
    d[p] = d[p] * coset_factor(p, log_n, t.h, reinterpret_cast<const DFr*>(t.lo.data()),
                               reinterpret_cast<const DFr*>(t.hi.data()));
  for (uint32_t lm = 0; lm < log_n; ++lm)
    for (uint32_t k = 0; k < half; ++k) {
      uint32_t i, w;
      ntt_pair(k, lm, log_n, i, w);
      butterfly_dit(d[i], d[i + (1u << lm)], tw[w]);
    }
}

TEST(CudaLogic, NttStepsMatchTheCpuDomain) {
  ThreadPool pool(2);
  std::mt19937_64 rng(4);
  for (uint32_t log_n : {1u, 2u, 5u, 10u, 13u}) {
    std::vector<Fr> v(size_t(1) << log_n);
    for (auto& x : v) x = Fr::from_u256(test::random_scalar(rng));
    std::vector<Fr> expect = v;
    const Domain dom(log_n, pool);
    dom.to_odd_coset(expect.data(), pool);
    emulate_to_odd_coset(v, dom);
    for (size_t i = 0; i < v.size(); ++i) ASSERT_TRUE(v[i] == expect[i]) << "log_n=" << log_n << " i=" << i;
  }
}

TEST(CudaLogic, HScalarIsCanonical) {
  std::mt19937_64 rng(5);
  for (int it = 0; it < 100; ++it) {
    Fr a = Fr::from_u256(test::random_scalar(rng)), b = Fr::from_u256(test::random_scalar(rng)),
       c = Fr::from_u256(test::random_scalar(rng));
    EXPECT_EQ(std::bit_cast<U256>(h_scalar(std::bit_cast<DFr>(a), std::bit_cast<DFr>(b), std::bit_cast<DFr>(c))), (a * b - c).to_u256());
  }
}

}  // namespace
}  // namespace zkfarm
