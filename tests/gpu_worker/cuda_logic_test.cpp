// The GPU backend's arithmetic and per-thread steps (gpu_worker/cuda/*.cuh),
// compiled for the CPU and checked against the CPU prover: the field and curve
// operations bit for bit, the MSM's digit/sort/chunk/reduce pipeline against
// the naive sum, the domain's tables as the device makes them against Domain,
// the NTT's DIF/coset/DIT path against Domain::to_odd_coset, and the
// constraint matrix's device build against ConstraintMatrix::build for any
// record order. The kernels run these same functions; scripts/gpu-check.sh
// checks them on a GPU. No GPU needed here.
#include <gtest/gtest.h>

#include <algorithm>
#include <bit>
#include <cstring>
#include <numeric>
#include <set>

#include "coeff_records.hpp"
#include "gpu_worker/cuda/dcurve.cuh"
#include "gpu_worker/cuda/matrix_build_steps.cuh"
#include "gpu_worker/cuda/msm_finish.hpp"
#include "gpu_worker/cuda/msm_steps.cuh"
#include "gpu_worker/cuda/ntt_steps.cuh"
#include "gpu_worker/cuda/ntt_tables.hpp"
#include "gpu_worker/cuda/synth_steps.cuh"
#include "groth16/constraint_matrix.hpp"
#include "groth16/msm.hpp"
#include "groth16/ntt.hpp"
#include "test_util.hpp"

namespace zkfarm {
namespace {

using namespace zkfarm::cuda;
using DFq = DCurve<Bn254>::Fq;
using DFr = DCurve<Bn254>::Fr;
using DFq2 = DCurve<Bn254>::Fq2;
using Bls = bls12_381::Curve;
using PowerTablesFr = PowerTables<Fr>;
using test::random_element;

// Host and device types share their bytes: std::bit_cast moves values across
// (and fails to compile if a layout's size ever differs).
template <class HostF, class DevF>
void check_field_ops(std::mt19937_64& rng) {
  for (int it = 0; it < 2000; ++it) {
    HostF a = random_element<HostF>(rng), b = random_element<HostF>(rng);
    if (it == 0) b = HostF::zero();
    if (it == 1) a = -HostF::one();
    if (it == 2) a = HostF::zero();
    DevF da = std::bit_cast<DevF>(a), db = std::bit_cast<DevF>(b);
    ASSERT_TRUE(std::bit_cast<HostF>(da * db) == a * b) << it;
    ASSERT_TRUE(std::bit_cast<HostF>(da + db) == a + b) << it;
    ASSERT_TRUE(std::bit_cast<HostF>(da - db) == a - b) << it;
    ASSERT_TRUE(std::bit_cast<HostF>(-da) == -a) << it;
    ASSERT_TRUE(std::bit_cast<HostF>(da.sqr()) == a.sqr()) << it;
    const auto plain = std::bit_cast<typename HostF::Int>(da.from_montgomery());
    ASSERT_EQ(plain, a.to_int()) << it;
  }
  EXPECT_TRUE(std::bit_cast<HostF>(DevF::one()) == HostF::one());
}

TEST(CudaLogic, FieldsMatchTheCpu) {
  std::mt19937_64 rng(1);
  check_field_ops<Fq, DFq>(rng);
  check_field_ops<Fr, DFr>(rng);
  check_field_ops<Bls::Fq, DCurve<Bls>::Fq>(rng);  // 12 limbs of 32 bits
  check_field_ops<Bls::Fr, DCurve<Bls>::Fr>(rng);
  for (int it = 0; it < 500; ++it) {
    Bls::Fq2 a{random_element<Bls::Fq>(rng), random_element<Bls::Fq>(rng)};
    Bls::Fq2 b{random_element<Bls::Fq>(rng), random_element<Bls::Fq>(rng)};
    auto da = std::bit_cast<DCurve<Bls>::Fq2>(a), db = std::bit_cast<DCurve<Bls>::Fq2>(b);
    ASSERT_TRUE(std::bit_cast<Bls::Fq2>(da * db) == a * b);
    ASSERT_TRUE(std::bit_cast<Bls::Fq2>(da.sqr()) == a.sqr());
  }
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
  check_curve_ops<bls12_381::G1Params, DCurve<Bls>::Fq>(Bls::g1_generator());
  check_curve_ops<bls12_381::G2Params, DCurve<Bls>::Fq2>(Bls::g2_generator());
}

/// msm_fit_segments' and msm_fit_term_parts' arguments for emulate_msm, and
/// the M and P they chose.
struct SegmentFit {
  uint32_t min_threads = 1;
  uint32_t max_terms = 1u << 20;
  uint32_t seg_used = 0;
  uint32_t term_blocks = 1;  // msm_fit_term_parts' min_blocks (1: one part a term)
  uint32_t min_span = 1;
  uint32_t parts_used = 0;
};

// The device MSM's steps in the order device_msm_impl.cuh launches them, one loop per kernel.
// With `table`, the points first become a precomputed table (msm_fold_point,
// one "thread" a point) and the MSM reads it, as run() does with a Table;
// `first` > 0 sums only points first.. as run()'s later slices do (the
// table's stride stays the whole count).
template <class C, class F>
Xyzz<C> emulate_msm(const uint8_t* points, const std::vector<U256>& all_scalars, uint32_t c, uint32_t L1, uint32_t L,
                    uint32_t bits = Bn254::kFrBits, const MsmTableShape* table = nullptr, uint32_t first = 0,
                    SegmentFit* fit = nullptr) {
  const uint32_t n = uint32_t(all_scalars.size());
  const std::vector<U256> scalars(all_scalars.begin() + first, all_scalars.end());
  std::vector<uint32_t> ors(8, 0);
  for (const U256& k : scalars)
    for (int w = 0; w < 8; ++w) ors[w] |= uint32_t(k[w / 2] >> (32 * (w % 2)));
  std::vector<DAffine<F>> folded;
  if (table) {
    folded.resize(size_t(table->copies) * n);
    std::memcpy(folded.data(), points, n * sizeof(DAffine<F>));
    for (uint32_t i = 0; i < n; ++i) msm_fold_point<F>(i, folded.data(), n, table->c, table->copies);
    points = reinterpret_cast<const uint8_t*>(folded.data());
  }
  points += size_t(first) * sizeof(DAffine<F>);
  const uint32_t len = n - first;
  const MsmShape full = table ? msm_shape_for_table(len, *table, n, bits) : msm_shape(len, c, bits);
  MsmShape sh = msm_trim_windows(full, scalar_top_bits(ors.data()));
  if (fit) {
    sh = msm_fit_term_parts(msm_fit_segments(sh, fit->min_threads, fit->max_terms), fit->term_blocks,
                            fit->max_terms, fit->min_span);
    fit->seg_used = sh.seg;
    fit->parts_used = sh.parts;
  }
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
  const uint32_t G = sh.groups();
  const uint32_t P = sh.parts;
  std::vector<DXyzz<F>> acc(G * S), run(G * S), terms(G * (logs + 1) * P);
  for (uint32_t t = 0; t < G * S; ++t) msm_reduce_segment<F>(t, buckets.data(), sh, acc.data(), run.data());
  for (uint32_t b = 0; b < G * (logs + 1) * P; ++b) {  // one block of k_bit_sums, decoded as the kernel does
    const MsmTermBlock tb = msm_term_block(b, P, logs);
    uint32_t begin, end;
    msm_term_span(tb.part, P, S, begin, end);
    DXyzz<F> sum = DXyzz<F>::infinity();
    for (uint32_t s = begin; s < end; ++s)
      if (msm_bit_term(tb.term, logs, s)) sum.add(tb.term == logs ? acc[tb.group * S + s] : run[tb.group * S + s]);
    terms[b] = sum;
  }
  return msm_finish<C>(sh, terms.data());
}

template <class C, class F, class Curve = Bn254>
void check_msm(size_t n, uint32_t c, uint32_t L1, uint32_t L, const Affine<C>& gen) {
  std::mt19937_64 rng(n * 3 + c);
  auto cs = test::make_msm_case<C, typename Curve::Fr::Params>(n, gen, rng);
  auto expect = msm_naive<C>(cs.points.data(), sizeof(Affine<C>), cs.scalars.data(), n);
  auto got = emulate_msm<C, F>(cs.points.data(), cs.scalars, c, L1, L, Curve::kFrBits);
  EXPECT_TRUE(got.equals(expect)) << "n=" << n << " c=" << c << " L1=" << L1 << " L=" << L;
}

// Segments fitted to small MSMs (M from 32 down to 1 bucket a thread, and
// raised again by the bound on the host's terms) give the same sums, on both
// curves and in G2; every M from 1 to 32 is reached.
TEST(CudaLogic, MsmFittedSegmentsMatchNaiveSum) {
  std::set<uint32_t> reached;
  for (uint32_t threads : {1u, 64u, 300u, 1u << 20}) {
    std::mt19937_64 rng(threads);
    for (uint32_t c : {5u, 7u, 11u}) {
      auto cs = test::make_msm_case<G1Params, Fr::Params>(200, test::g1_generator(), rng);
      const auto want = msm_naive<G1Params>(cs.points.data(), 64, cs.scalars.data(), cs.scalars.size());
      SegmentFit fit{threads};
      EXPECT_TRUE((emulate_msm<G1Params, DFq>(cs.points.data(), cs.scalars, c, 8, 4, Bn254::kFrBits, nullptr, 0, &fit)
                       .equals(want)))
          << "c=" << c << " reduce threads=" << threads << " M=" << fit.seg_used;
      reached.insert(fit.seg_used);
      // The bound on the host's terms raises M again: c = 7 gives 37 windows
      // of 64 buckets; 37·(log2 S + 1) ≤ 150 leaves S ≤ 8, M ≥ 8.
      if (c == 7) {
        SegmentFit bounded{threads, 150};
        EXPECT_TRUE((emulate_msm<G1Params, DFq>(cs.points.data(), cs.scalars, c, 8, 4, Bn254::kFrBits, nullptr, 0,
                                                &bounded)
                         .equals(want)))
            << "bounded terms, reduce threads=" << threads;
        EXPECT_GE(bounded.seg_used, 8u);
      }
    }
    auto g2 = test::make_msm_case<G2Params, Fr::Params>(60, test::g2_generator(), rng);
    SegmentFit fit2{threads};
    EXPECT_TRUE((emulate_msm<G2Params, DFq2>(g2.points.data(), g2.scalars, 6, 8, 4, Bn254::kFrBits, nullptr, 0, &fit2)
                     .equals(msm_naive<G2Params>(g2.points.data(), sizeof(Affine<G2Params>), g2.scalars.data(), 60))))
        << "G2, reduce threads=" << threads << " M=" << fit2.seg_used;
    auto bls = test::make_msm_case<bls12_381::G1Params, Bls::Fr::Params>(80, Bls::g1_generator(), rng);
    SegmentFit fit3{threads};
    EXPECT_TRUE((emulate_msm<bls12_381::G1Params, DCurve<Bls>::Fq>(bls.points.data(), bls.scalars, 9, 8, 4, Bls::kFrBits,
                                                                   nullptr, 0, &fit3)
                     .equals(msm_naive<bls12_381::G1Params>(bls.points.data(), sizeof(Affine<bls12_381::G1Params>),
                                                            bls.scalars.data(), 80))))
        << "BLS12-381, reduce threads=" << threads << " M=" << fit3.seg_used;
  }
  EXPECT_EQ(reached, (std::set<uint32_t>{1, 2, 4, 8, 16, 32}));
}

// Terms summed in parts (one block a slice of the segments, the blocks
// decoded by msm_term_block as the kernel decodes them) give the same sums:
// P from 1 to thousands (slices of one segment), without a table, with a table of two groups and with one
// of a single group (the case parts are for), G1, G2 and BLS12-381.
TEST(CudaLogic, MsmTermPartsMatchNaiveSum) {
  std::set<uint32_t> reached;
  std::mt19937_64 rng(47);
  auto cs = test::make_msm_case<G1Params, Fr::Params>(300, test::g1_generator(), rng);
  const auto want = msm_naive<G1Params>(cs.points.data(), 64, cs.scalars.data(), cs.scalars.size());
  const MsmTableShape two_groups{9, 16};  // 29 windows of 9 bits: 2 groups of 16 copies
  const MsmTableShape one_group{16, 16};  // 16 windows of 16 bits: 1 group of 32768 buckets
  for (uint32_t blocks : {1u, 8u, 16u, 64u, 1u << 16})
    for (uint32_t seg_threads : {1u, 1u << 12})
      for (const MsmTableShape* table : {static_cast<const MsmTableShape*>(nullptr), &two_groups, &one_group}) {
        SegmentFit fit{seg_threads, 1u << 20, 0, blocks, 1};
        EXPECT_TRUE((emulate_msm<G1Params, DFq>(cs.points.data(), cs.scalars, 8, 8, 4, Bn254::kFrBits, table, 0, &fit)
                         .equals(want)))
            << "term blocks=" << blocks << " M=" << fit.seg_used << " P=" << fit.parts_used
            << " table c=" << (table ? table->c : 0);
        reached.insert(fit.parts_used);
      }
  for (uint32_t p : {1u, 2u, 4u, 8u}) EXPECT_TRUE(reached.contains(p)) << "P=" << p;
  EXPECT_GE(*reached.rbegin(), 1024u) << "a slice of one segment a block";
  EXPECT_GE(reached.size(), 7u);
  auto g2 = test::make_msm_case<G2Params, Fr::Params>(60, test::g2_generator(), rng);
  SegmentFit fit2{1u << 10, 1u << 20, 0, 1u << 10, 2};
  EXPECT_TRUE((emulate_msm<G2Params, DFq2>(g2.points.data(), g2.scalars, 7, 8, 4, Bn254::kFrBits, nullptr, 0, &fit2)
                   .equals(msm_naive<G2Params>(g2.points.data(), sizeof(Affine<G2Params>), g2.scalars.data(), 60))))
      << "G2, P=" << fit2.parts_used;
  EXPECT_GT(fit2.parts_used, 1u);
  auto bls = test::make_msm_case<bls12_381::G1Params, Bls::Fr::Params>(80, Bls::g1_generator(), rng);
  SegmentFit fit3{1, 1u << 20, 0, 1u << 10, 4};
  EXPECT_TRUE((emulate_msm<bls12_381::G1Params, DCurve<Bls>::Fq>(bls.points.data(), bls.scalars, 10, 8, 4, Bls::kFrBits,
                                                                 nullptr, 0, &fit3)
                   .equals(msm_naive<bls12_381::G1Params>(bls.points.data(), sizeof(Affine<bls12_381::G1Params>),
                                                          bls.scalars.data(), 80))))
      << "BLS12-381, P=" << fit3.parts_used;
  EXPECT_GT(fit3.parts_used, 1u);
}

// The parts: a power of two dividing S, the smallest reaching min_blocks,
// never slices below min_span segments nor more host terms than max_terms.
TEST(CudaLogic, MsmTermPartsFitTheBlocks) {
  // 2^15 points over a table of c = 16 and 16 copies: 1 group, K = 32768; M = 4 at 8192 threads: S = 8192, 14 terms.
  const MsmShape table = msm_fit_segments(
      msm_shape_for_table(1u << 15, msm_table_shape(1u << 15, Bn254::kFrBits, 16), 1u << 15, Bn254::kFrBits), 8192,
      512);
  ASSERT_EQ(table.groups(), 1u);
  ASSERT_EQ(table.segments(), 8192u);
  EXPECT_EQ(msm_fit_term_parts(table, 128, 512, 128).parts, 16u) << "14 terms x 16 = 224 blocks";
  EXPECT_EQ(msm_fit_term_parts(table, 1u << 20, 512, 128).parts, 32u) << "slices of 8192/32 = 256 segments, 2 per thread";
  EXPECT_EQ(msm_fit_term_parts(table, 1u << 20, 14 * 8, 128).parts, 8u) << "host terms bound";
  EXPECT_EQ(msm_fit_term_parts(table, 1, 512, 128).parts, 1u);
  // Without a table (24 windows, S = 512 at M = 2): 240 terms already fill 128 blocks.
  const MsmShape windows = msm_fit_segments(msm_shape(1u << 15, 0, Bn254::kFrBits), 8192, 512);
  EXPECT_EQ(msm_fit_term_parts(windows, 128, 512, 128).parts, 1u);
  // Every size, with and without a table, against the rule: P a power of two
  // dividing S, the host's terms within bounds, no slice below min_span, and
  // the smallest such P that reaches min_blocks (P/2 would not, or P = 1).
  uint32_t split = 0;
  for (uint32_t lg = 0; lg <= 24; ++lg)
    for (uint32_t copies : {1u, 4u, 16u})
      for (uint32_t blocks : {1u, 128u, 1u << 20})
        for (uint32_t span : {1u, 128u}) {
          const uint32_t n = 1u << lg;
          const MsmShape base = copies == 1 ? msm_shape(n, 0, Bn254::kFrBits)
                                            : msm_shape_for_table(n, msm_table_shape(n, Bn254::kFrBits, copies), n,
                                                                  Bn254::kFrBits);
          const MsmShape s = msm_fit_term_parts(msm_fit_segments(base, 8192, 341), blocks, 341, span);
          const uint64_t terms = uint64_t(s.groups()) * (log2_exact(s.segments()) + 1);
          const std::string at = "lg=" + std::to_string(lg) + " copies=" + std::to_string(copies) +
                                 " blocks=" + std::to_string(blocks) + " span=" + std::to_string(span);
          ASSERT_GE(s.parts, 1u) << at;
          EXPECT_EQ(s.parts & (s.parts - 1), 0u) << at;
          EXPECT_EQ(s.segments() % s.parts, 0u) << at;
          EXPECT_LE(terms * s.parts, 341u) << at;
          if (s.parts > 1) {
            ++split;
            EXPECT_GE(s.segments() / s.parts, span) << at;
            EXPECT_LT(terms * (s.parts / 2), blocks) << at << ": a smaller P already reached min_blocks";
          }
          if (terms * s.parts < blocks)  // short of min_blocks: a bound stopped it
            EXPECT_TRUE(s.segments() / (2 * s.parts) < span || terms * 2 * s.parts > 341) << at;
        }
  EXPECT_GT(split, 40u) << "the sweep reaches P > 1 in many shapes";
}

// The fit: M a power of two dividing K, at most 32, as large as leaves
// min_threads threads, raised only to keep the host's terms within bounds.
TEST(CudaLogic, MsmSegmentsFitTheWork) {
  const MsmShape small = msm_shape(1u << 15, 0, Bn254::kFrBits);  // 24 windows of 1024 buckets
  EXPECT_EQ(msm_fit_segments(small, 1, 1000).seg, 32u);
  EXPECT_EQ(msm_fit_segments(small, 8192, 1000).seg, 2u);  // 12,288 threads
  EXPECT_EQ(msm_fit_segments(small, 1u << 20, 1000).seg, 1u);
  EXPECT_EQ(msm_fit_segments(small, 1u << 20, 24 * 6).seg, 32u) << "terms bound: 24 windows x (log2 32 + 1)";
  const MsmShape large = msm_shape(1u << 22, 0, Bn254::kFrBits);
  EXPECT_EQ(msm_fit_segments(large, 8192, 1000).seg, 32u) << "a large MSM keeps its split";
  for (uint32_t lg = 0; lg <= 26; lg += 1)
    for (uint32_t threads : {1u, 8192u, 1u << 20}) {
      const MsmShape s = msm_fit_segments(msm_shape(1u << lg, 0, Bn254::kFrBits), threads, 341);
      EXPECT_GE(s.seg, 1u);
      EXPECT_LE(s.seg, 32u);
      EXPECT_EQ(s.seg & (s.seg - 1), 0u);
      EXPECT_EQ(s.buckets % s.seg, 0u);
      EXPECT_LE(uint64_t(s.groups()) * (log2_exact(s.segments()) + 1), 341u) << "lg=" << lg;
    }
}

TEST(CudaLogic, MsmStepsMatchNaiveSum) {
  for (size_t n : {1, 2, 9, 100, 700})
    for (uint32_t c : {0u, 3u, 7u, 11u}) check_msm<G1Params, DFq>(n, c, 32, 16, test::g1_generator());
  check_msm<G1Params, DFq>(300, 5, 4, 4, test::g1_generator());  // many levels
  // The small-MSM split's chunks (device_msm_impl.cuh: level 1 of 8 or 16, later levels of 8).
  check_msm<G1Params, DFq>(700, 11, 8, 8, test::g1_generator());
  check_msm<G1Params, DFq>(700, 0, 16, 8, test::g1_generator());
  check_msm<G2Params, DFq2>(150, 0, 8, 4, test::g2_generator());
  check_msm<G2Params, DFq2>(40, 4, 32, 16, test::g2_generator());
  // BLS12-381: 255-bit scalars (r − 1 among them) need W·c ≥ 256.
  for (uint32_t c : {0u, 3u, 8u, 15u, 16u})
    check_msm<bls12_381::G1Params, DCurve<Bls>::Fq, Bls>(100, c, 8, 4, Bls::g1_generator());
  check_msm<bls12_381::G2Params, DCurve<Bls>::Fq2, Bls>(40, 4, 8, 4, Bls::g2_generator());
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
  // Small scalars (witness values): the windows are trimmed to the largest
  // scalar's bits; 2^b − 1 carries out of the top digit whenever b is a
  // multiple of c, and that carry needs its window.
  for (uint32_t c : {6u, 9u})
    for (uint32_t b : {1u, c - 1, c, c + 1, 2 * c, 2 * c + 1}) {
      std::vector<U256> small(n);
      for (auto& k : small) k = U256{rng() & ((uint64_t(1) << b) - 1), 0, 0, 0};
      small[7] = U256{(uint64_t(1) << b) - 1, 0, 0, 0};
      small[8] = U256{0, 0, 0, 0};
      EXPECT_TRUE((emulate_msm<G1Params, DFq>(pts.data(), small, c, 32, 16)
                       .equals(msm_naive<G1Params>(pts.data(), 64, small.data(), n))))
          << "c=" << c << " b=" << b;
    }
}

// Step 0: the windows left for scalars of b bits still hold every digit
// (W·c ≥ b + 1), and none is added.
TEST(CudaLogic, MsmWindowsTrimToTheLargestScalar) {
  uint32_t words[8] = {};
  EXPECT_EQ(scalar_top_bits(words), 0u);
  words[0] = 1;
  EXPECT_EQ(scalar_top_bits(words), 1u);
  words[3] = 0x80000000u;
  EXPECT_EQ(scalar_top_bits(words), 128u);
  words[7] = 0x20000000u;
  EXPECT_EQ(scalar_top_bits(words), 254u);
  for (uint32_t c : {0u, 2u, 7u, 16u, 20u}) {
    const MsmShape full = msm_shape(1u << 20, c, Bn254::kFrBits);
    for (uint32_t b = 0; b <= Bn254::kFrBits; ++b) {
      const MsmShape t = msm_trim_windows(full, b);
      EXPECT_GE(t.windows * t.c, b + 1) << "c=" << c << " b=" << b;
      EXPECT_GE(t.windows, 1u);
      EXPECT_LE(t.windows, full.windows);
      EXPECT_EQ(t.c, full.c);
      if (t.windows > 1) {
        EXPECT_LT((t.windows - 1) * t.c, b + 1) << "c=" << c << " b=" << b << ": a window too many";
      }
    }
  }
  EXPECT_EQ(msm_trim_windows(msm_shape(1u << 20, 0, Bn254::kFrBits), 1).windows, 1u);
}

// Precomputed bases: copy t of each point is 2^(c·t)·P as the CPU's curve
// computes it (byte for byte, affine), infinity stays infinity, and MSMs over
// full and partial tables (groups of windows; make_msm_case puts infinity,
// repeated and opposite points among them) match the naive sum, with
// random, small (trimmed) and extreme scalars, on both curves and in G2.
template <class C, class F, class Curve>
void check_folded_msm(size_t n, const Affine<C>& gen, uint32_t c, uint32_t copies, uint64_t seed) {
  std::mt19937_64 rng(seed);
  auto cs = test::make_msm_case<C, typename Curve::Fr::Params>(n, gen, rng);
  const MsmTableShape table{c, copies};
  // The table against the CPU's doublings.
  std::vector<DAffine<F>> folded(size_t(copies) * n);
  std::memcpy(folded.data(), cs.points.data(), n * sizeof(DAffine<F>));
  for (uint32_t i = 0; i < n; ++i) msm_fold_point<F>(i, folded.data(), uint32_t(n), c, copies);
  for (uint32_t i = 0; i < std::min<size_t>(n, 5); ++i) {
    Xyzz<C> p = Xyzz<C>::from_affine(reinterpret_cast<const Affine<C>*>(cs.points.data())[i]);
    for (uint32_t t = 1; t < copies; ++t) {
      for (uint32_t b = 0; b < c; ++b) p = p.dbl();
      const Affine<C> want = p.to_affine();
      EXPECT_EQ(std::memcmp(&folded[size_t(t) * n + i], &want, sizeof want), 0) << "point " << i << " copy " << t;
    }
  }
  auto naive = [&](const std::vector<U256>& k) {
    return msm_naive<C>(cs.points.data(), sizeof(Affine<C>), k.data(), k.size());
  };
  EXPECT_TRUE((emulate_msm<C, F>(cs.points.data(), cs.scalars, 0, 8, 4, Curve::kFrBits, &table).equals(naive(cs.scalars))))
      << "random scalars, c=" << c << " copies=" << copies;
  std::vector<U256> small(n);
  for (auto& k : small) k = U256{rng() & 0xfffff, 0, 0, 0};
  small[0] = U256{1, 0, 0, 0};
  EXPECT_TRUE((emulate_msm<C, F>(cs.points.data(), small, 0, 8, 4, Curve::kFrBits, &table).equals(naive(small))))
      << "20-bit scalars, c=" << c << " copies=" << copies;
  std::vector<U256> top(n, U256{~uint64_t(0), ~uint64_t(0), ~uint64_t(0), ~uint64_t(0) >> 3});  // 253 bits: every window, carries
  EXPECT_TRUE((emulate_msm<C, F>(cs.points.data(), top, 0, 8, 4, Curve::kFrBits, &table).equals(naive(top))))
      << "all-ones scalars, c=" << c << " copies=" << copies;
  // A later slice: points 7.. against their scalars, copies still n apart.
  std::vector<U256> tail = cs.scalars;
  std::fill(tail.begin(), tail.begin() + 7, U256{0, 0, 0, 0});
  EXPECT_TRUE((emulate_msm<C, F>(cs.points.data(), cs.scalars, 0, 8, 4, Curve::kFrBits, &table, 7).equals(naive(tail))))
      << "slice from 7, c=" << c << " copies=" << copies;
}

TEST(CudaLogic, PrecomputedBasesMatchTheCpuAndNaiveSums) {
  for (uint32_t copies : {1u, 2u, 5u, 13u, 16u})
    check_folded_msm<G1Params, DFq, Bn254>(60, test::g1_generator(), 20, copies, copies);
  check_folded_msm<G1Params, DFq, Bn254>(200, test::g1_generator(), 9, 16, 7);  // 29 windows in 2 groups
  check_folded_msm<G2Params, DFq2, Bn254>(30, test::g2_generator(), 16, 16, 8);
  check_folded_msm<bls12_381::G1Params, DCurve<Bls>::Fq, Bls>(30, Bls::g1_generator(), 22, 12, 9);
  check_folded_msm<bls12_381::G2Params, DCurve<Bls>::Fq2, Bls>(20, Bls::g2_generator(), 17, 8, 10);
}

template <class HostF, class DevF>
void check_inverse(std::mt19937_64& rng) {
  for (int i = 0; i < 20; ++i) {
    const HostF x = random_element<HostF>(rng);
    EXPECT_TRUE(std::bit_cast<HostF>(std::bit_cast<DevF>(x).inverse()) == x.inv());
  }
  EXPECT_TRUE(DevF::zero().inverse().is_zero());
}

TEST(CudaLogic, InversesMatchTheCpu) {
  std::mt19937_64 rng(11);
  check_inverse<Fq, DFq>(rng);
  check_inverse<Bls::Fq, DCurve<Bls>::Fq>(rng);
  for (int i = 0; i < 10; ++i) {
    const DFq2 y = std::bit_cast<DFq2>(Fq2{random_element<Fq>(rng), random_element<Fq>(rng)});
    EXPECT_TRUE(y * y.inverse() == DFq2::one());
    const auto z = std::bit_cast<DCurve<Bls>::Fq2>(Bls::Fq2{random_element<Bls::Fq>(rng), random_element<Bls::Fq>(rng)});
    EXPECT_TRUE(z * z.inverse() == DCurve<Bls>::Fq2::one());
  }
  EXPECT_TRUE(DFq2::zero().inverse().is_zero());
}

// The table shapes: within the copy cap and the sort's 31-bit values, as
// many copies as the groups need, and the cost model's picks at 2^22 and 2^24.
TEST(CudaLogic, MsmTableShapes) {
  for (uint32_t bits : {254u, 255u})
    for (uint32_t lg : {1u, 10u, 16u, 20u, 22u, 24u, 27u, 28u})
      for (uint32_t cap : {1u, 2u, 6u, 16u, 40u}) {
        const uint32_t n = 1u << lg;
        const MsmTableShape t = msm_table_shape(n, bits, cap);
        const MsmShape s = msm_shape_for_table(n, t, n, bits);
        EXPECT_GE(t.copies, 1u);
        EXPECT_LE(t.copies, std::min(cap, kMsmMaxCopies));
        EXPECT_LT(uint64_t(t.copies) * n, uint64_t(1) << 31);
        EXPECT_GE(s.windows * s.c, bits + 1);
        EXPECT_LE(s.key_bits(), 32u);
        if (t.copies > 1) {
          EXPECT_LT((s.groups() - 1) * t.copies, s.windows) << "a copy no group uses";
          EXPECT_EQ(s.stride, n);
        } else {
          EXPECT_EQ(s.groups(), s.windows);
          EXPECT_EQ(t.c, msm_shape(n, 0, bits).c);
        }
      }
  EXPECT_EQ(msm_table_shape(1u << 22, 254, 16).c, 20u);
  EXPECT_EQ(msm_table_shape(1u << 22, 254, 16).copies, 13u);
  EXPECT_EQ(msm_table_shape(1u << 24, 254, 16).c, 22u);
  EXPECT_EQ(msm_table_shape(1u << 24, 254, 16).copies, 12u);
}

TEST(CudaLogic, MsmShapes) {
  for (uint32_t lg = 0; lg <= 28; ++lg) {
    MsmShape s = msm_shape(1u << lg, 0, Bn254::kFrBits);
    EXPECT_GE(s.windows * s.c, 255u);
    EXPECT_GE(msm_shape(1u << lg, 0, Bls::kFrBits).windows * msm_shape(1u << lg, 0, Bls::kFrBits).c, 256u);
    EXPECT_EQ(s.buckets % s.seg, 0u);
    EXPECT_LE(s.key_bits(), 32u);
    EXPECT_LT(uint64_t(s.sentinel()), uint64_t(1) << s.key_bits());
  }
}

// x^i·s for i < 2^log_count, one "thread" an element, as DeviceDomain's k_powers makes them.
std::vector<DFr> expand(const PowerTablesFr& t, uint32_t log_count) {
  std::vector<DFr> out(size_t(1) << log_count);
  const auto* lo = reinterpret_cast<const DFr*>(t.lo.data());
  const auto* hi = reinterpret_cast<const DFr*>(t.hi.data());
  for (uint32_t j = 0; j < out.size(); ++j) out[j] = power_from_tables(j, t.h, lo, hi);
  return out;
}

bool same_bytes(const std::vector<DFr>& x, const std::vector<Fr>& y) {
  return x.size() == y.size() && std::memcmp(x.data(), y.data(), y.size() * sizeof(Fr)) == 0;
}

// The device's domain tables (DeviceDomain: small tables on the host,
// expanded one element a thread) hold the CPU Domain's values, byte for byte.
TEST(CudaLogic, DomainTablesMatchTheCpuDomain) {
  ThreadPool pool(2);
  for (uint32_t log_n : {1u, 2u, 3u, 4u, 5u, 10u, 11u, 14u}) {
    const Domain dom(log_n, pool);
    const DomainTables<Bn254> t = domain_tables<Bn254>(log_n);
    EXPECT_TRUE(same_bytes(expand(t.tw, log_n - 1), dom.twiddles())) << "log_n=" << log_n;
    EXPECT_TRUE(same_bytes(expand(t.tw_inv, log_n - 1), dom.twiddles_inv())) << "log_n=" << log_n;
    std::vector<Fr> coset(size_t(1) << log_n);
    Fr x = dom.n_inv();
    for (auto& v : coset) {
      v = x;
      x *= dom.coset();
    }
    EXPECT_TRUE(same_bytes(expand(t.coset, log_n), coset)) << "log_n=" << log_n;
  }
  // The largest domains, at sampled indices against powers of the roots.
  std::mt19937_64 rng(6);
  for (uint32_t log_n : {20u, 22u, 27u, 28u}) {
    const DomainTables<Bn254> t = domain_tables<Bn254>(log_n);
    const Fr w = root_of_unity(log_n), g = odd_coset_generator(log_n);
    const Fr n_inv = Fr::from_u64(uint64_t(1) << log_n).inv();
    for (int it = 0; it < 200; ++it) {
      const uint32_t j = uint32_t(rng() >> (65 - log_n)), i = uint32_t(rng() >> (64 - log_n));  // j < n/2, i < n
      auto at = [](const PowerTablesFr& pt, uint32_t k) {
        return std::bit_cast<Fr>(power_from_tables(k, pt.h, reinterpret_cast<const DFr*>(pt.lo.data()),
                                                   reinterpret_cast<const DFr*>(pt.hi.data())));
      };
      ASSERT_TRUE(at(t.tw, j) == w.pow(U256{j, 0, 0, 0})) << "log_n=" << log_n << " j=" << j;
      ASSERT_TRUE(at(t.tw_inv, j) == w.inv().pow(U256{j, 0, 0, 0})) << "log_n=" << log_n << " j=" << j;
      ASSERT_TRUE(at(t.coset, i) == n_inv * g.pow(U256{i, 0, 0, 0})) << "log_n=" << log_n << " i=" << i;
    }
  }
}

// inverse DIF (natural → bit-reversed), coset factors, forward DIT (→ natural),
// with the tables made as the device makes them.
template <class C>
void emulate_to_odd_coset(std::vector<typename C::Fr>& v, uint32_t log_n) {
  using DFr = typename DCurve<C>::Fr;
  const DomainTables<C> t = domain_tables<C>(log_n);
  auto expand = [](const PowerTables<typename C::Fr>& pt, uint32_t log_count) {
    std::vector<DFr> out(size_t(1) << log_count);
    const auto* lo = reinterpret_cast<const DFr*>(pt.lo.data());
    const auto* hi = reinterpret_cast<const DFr*>(pt.hi.data());
    for (uint32_t j = 0; j < out.size(); ++j) out[j] = power_from_tables(j, pt.h, lo, hi);
    return out;
  };
  const std::vector<DFr> tw_v = expand(t.tw, log_n - 1), twi_v = expand(t.tw_inv, log_n - 1);
  auto* d = reinterpret_cast<DFr*>(v.data());
  const DFr* tw = tw_v.data();
  const DFr* twi = twi_v.data();
  const size_t half = v.size() / 2;
  // The outer stages as k_pass runs them: each group copied out by
  // ntt_group_index, its stages by ntt_group_pair, copied back.
  const uint32_t log_b = std::min(log_n, kNttInnerBits);
  const NttPasses outer = ntt_outer_passes(log_b, log_n);
  auto pass = [&](const NttPass& p, const DFr* tws, bool dit) {
    const uint32_t size = 1u << p.group_bits();
    std::vector<DFr> s(size);
    for (uint32_t g = 0; g < (1u << (log_n - p.group_bits())); ++g) {
      for (uint32_t x = 0; x < size; ++x) s[x] = d[ntt_group_index(g, x, p)];
      for (uint32_t step = 0; step < p.s; ++step) {
        const uint32_t r = dit ? step : p.s - 1 - step;
        for (uint32_t k = 0; k < size / 2; ++k) {
          uint32_t x, w;
          ntt_group_pair(g, k, r, p, log_n, x, w);
          if (dit) {
            butterfly_dit(s[x], s[x + (1u << (kNttRunBits + r))], tws[w]);
          } else {
            butterfly_dif(s[x], s[x + (1u << (kNttRunBits + r))], tws[w]);
          }
        }
      }
      for (uint32_t x = 0; x < size; ++x) d[ntt_group_index(g, x, p)] = s[x];
    }
  };
  for (uint32_t i = outer.count; i-- > 0;) pass(outer.pass[i], twi, false);
  // The inner block's stages (k_inner), over the whole array at once.
  for (int lm = int(log_b) - 1; lm >= 0; --lm)
    for (uint32_t k = 0; k < half; ++k) {
      uint32_t i, w;
      ntt_pair(k, lm, log_n, i, w);
      butterfly_dif(d[i], d[i + (1u << lm)], twi[w]);
    }
  for (uint32_t p = 0; p < v.size(); ++p)
    d[p] = d[p] * coset_factor(p, log_n, t.coset.h, reinterpret_cast<const DFr*>(t.coset.lo.data()),
                               reinterpret_cast<const DFr*>(t.coset.hi.data()));
  for (uint32_t lm = 0; lm < log_b; ++lm)
    for (uint32_t k = 0; k < half; ++k) {
      uint32_t i, w;
      ntt_pair(k, lm, log_n, i, w);
      butterfly_dit(d[i], d[i + (1u << lm)], tw[w]);
    }
  for (uint32_t i = 0; i < outer.count; ++i) pass(outer.pass[i], tw, true);
}

// The outer passes cover each stage once, in order, and a group's elements
// are distinct array indices covering the array once over all groups.
TEST(CudaLogic, NttPassesCoverTheOuterStages) {
  for (uint32_t log_n = kNttInnerBits; log_n <= 28; ++log_n) {
    const NttPasses ps = ntt_outer_passes(kNttInnerBits, log_n);
    uint32_t next = kNttInnerBits;
    for (uint32_t i = 0; i < ps.count; ++i) {
      ASSERT_EQ(ps.pass[i].lm_lo, next) << "log_n=" << log_n;
      ASSERT_GE(ps.pass[i].s, 1u);
      ASSERT_LE(ps.pass[i].s, kNttPassStages);
      next += ps.pass[i].s;
    }
    ASSERT_EQ(next, log_n);
  }
  for (uint32_t log_n : {11u, 15u, 17u, 23u, 25u}) {  // one, two and three passes
    const NttPasses ps = ntt_outer_passes(kNttInnerBits, log_n);
    for (uint32_t i = 0; i < ps.count; ++i) {
      const NttPass& p = ps.pass[i];
      std::vector<uint8_t> seen(size_t(1) << log_n, 0);
      for (uint32_t g = 0; g < (1u << (log_n - p.group_bits())); ++g)
        for (uint32_t x = 0; x < (1u << p.group_bits()); ++x) ++seen[ntt_group_index(g, x, p)];
      ASSERT_TRUE(std::all_of(seen.begin(), seen.end(), [](uint8_t c) { return c == 1; })) << "log_n=" << log_n;
    }
  }
}

TEST(CudaLogic, NttStepsMatchTheCpuDomain) {
  ThreadPool pool(2);
  std::mt19937_64 rng(4);
  for (uint32_t log_n : {1u, 2u, 5u, 10u, 11u, 13u, 16u, 17u}) {
    std::vector<Fr> v(size_t(1) << log_n);
    for (auto& x : v) x = Fr::from_u256(test::random_scalar(rng));
    std::vector<Fr> expect = v;
    const Domain dom(log_n, pool);
    dom.to_odd_coset(expect.data(), pool);
    emulate_to_odd_coset<Bn254>(v, log_n);
    for (size_t i = 0; i < v.size(); ++i) ASSERT_TRUE(v[i] == expect[i]) << "log_n=" << log_n << " i=" << i;
  }
  for (uint32_t log_n : {1u, 3u, 10u, 12u, 17u}) {  // BLS12-381's Fr and roots
    std::vector<Bls::Fr> v(size_t(1) << log_n);
    for (auto& x : v) x = random_element<Bls::Fr>(rng);
    std::vector<Bls::Fr> expect = v;
    const DomainOf<Bls> dom(log_n, pool);
    dom.to_odd_coset(expect.data(), pool);
    emulate_to_odd_coset<Bls>(v, log_n);
    for (size_t i = 0; i < v.size(); ++i) ASSERT_TRUE(v[i] == expect[i]) << "bls12381 log_n=" << log_n << " i=" << i;
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

// The device build of the constraint matrix (matrix_build_steps.cuh), one
// loop a kernel in the order device_matrix_build.cu launches them; CUB's
// radix sort is stable, as std::stable_sort is.
ConstraintMatrix emulate_matrix_build(const Zkey& key) {
  const uint32_t n = key.n_coeffs, rows = key.domain_size;
  // The device reads the records from an aligned buffer they were copied to.
  std::vector<uint32_t> words(size_t(n) * kCoeffRecordWords);
  if (n) std::memcpy(words.data(), key.coeffs.data(), key.coeffs.size());
  std::vector<uint32_t> keys(n), index(n);
  for (uint32_t k = 0; k < n; ++k) {
    keys[k] = record_sort_key(words.data(), k, rows);
    index[k] = k;
  }
  std::stable_sort(index.begin(), index.end(), [&](uint32_t x, uint32_t y) { return keys[x] < keys[y]; });
  std::vector<uint32_t> sorted_keys(n);
  for (uint32_t p = 0; p < n; ++p) sorted_keys[p] = keys[index[p]];
  ConstraintMatrix m;
  m.a.start.resize(size_t(rows) + 1);
  m.b.start.resize(size_t(rows) + 1);
  for (uint32_t i = 0; i <= rows; ++i) row_starts(i, sorted_keys.data(), n, rows, m.a.start.data(), m.b.start.data());
  std::vector<uint32_t> signal(n);
  std::vector<DFr> coef(n);
  for (uint32_t p = 0; p < n; ++p) gather_entry<DFr>(p, index.data(), words.data(), signal.data(), coef.data());
  const uint32_t a_entries = m.a.start[rows];
  m.a.signal.assign(signal.begin(), signal.begin() + a_entries);
  m.b.signal.assign(signal.begin() + a_entries, signal.end());
  for (uint32_t p = 0; p < n; ++p) (p < a_entries ? m.a.coef : m.b.coef).push_back(std::bit_cast<Fr>(coef[p]));
  return m;
}

using test::same_rows;

// a, b, c from the matrix by the device's synthesis step, as plain bytes.
std::vector<Fr> emulate_synthesis(const ConstraintMatrix& m, const std::vector<U256>& w) {
  auto rows = [](const SparseRows& s) {
    return DeviceRows<DFr>{s.start.data(), s.signal.data(), reinterpret_cast<const DFr*>(s.coef.data())};
  };
  const size_t n = m.a.rows();
  std::vector<Fr> abc(3 * n);
  auto* out = reinterpret_cast<DFr*>(abc.data());
  for (uint32_t i = 0; i < n; ++i)
    synth_row(rows(m.a), rows(m.b), i, reinterpret_cast<const DFr*>(w.data()), out, out + n, out + 2 * n);
  return abc;
}

constexpr test::RecordOrder kOrders[] = {test::RecordOrder::snarkjs, test::RecordOrder::a_then_b,
                                         test::RecordOrder::shuffled, test::RecordOrder::reversed};

// For each order: the emulated device build gives ConstraintMatrix::build's
// arrays exactly (serial and parallel paths), and a, b, c do not depend on the order.
void check_orders(const std::string& base, const std::vector<test::CoeffRecord>& records, const std::string& what) {
  ThreadPool pool(3);
  test::TempDir dir;
  std::mt19937_64 rng(7);
  std::vector<Fr> expect_abc;
  std::vector<U256> w;
  for (test::RecordOrder order : kOrders) {
    const std::string path = dir / "reordered.zkey";
    test::write_with_records(base, test::in_order(records, order, 99), path);
    const Zkey key = Zkey::open(path);
    const std::string at = what + ", " + test::order_name(order);
    const ConstraintMatrix got = emulate_matrix_build(key);
    const ConstraintMatrix serial = ConstraintMatrix::build(key), parallel = ConstraintMatrix::build(key, &pool);
    EXPECT_TRUE(same_rows(got.a, serial.a) && same_rows(got.b, serial.b)) << at << ": against the counting sort";
    EXPECT_TRUE(same_rows(got.a, parallel.a) && same_rows(got.b, parallel.b)) << at << ": against the pool's build";
    if (w.empty()) {
      w.resize(key.n_vars);
      for (auto& x : w) x = test::random_scalar(rng);
      expect_abc.resize(3 * size_t(key.domain_size));
      const size_t n = key.domain_size;
      synthesize_abc(serial, w.data(), expect_abc.data(), expect_abc.data() + n, expect_abc.data() + 2 * n, pool);
    }
    const std::vector<Fr> abc = emulate_synthesis(got, w);
    EXPECT_EQ(std::memcmp(abc.data(), expect_abc.data(), abc.size() * sizeof(Fr)), 0) << at << ": a, b, c";
  }
}

TEST(CudaLogic, MatrixBuildStepsMatchTheCpuBuildInEveryRecordOrder) {
  std::vector<std::string> keys = {test::shared_fixture("chain.zkey"), test::shared_fixture("tiny.zkey")};
  for (const char* name : {"allpub", "binary", "manypub", "nopub", "pow2", "pow2plus"})
    keys.push_back(test::repo_path("tests/fixtures/") + name + ".zkey");
  for (const std::string& k : keys) check_orders(k, test::records_of(Zkey::open(k)), k);
}

TEST(CudaLogic, MatrixBuildStepsHandleEmptyCrowdedAndTrailingRows) {
  const std::string base = test::shared_fixture("chain.zkey");
  const Zkey shape = Zkey::open(base);
  const uint32_t rows = shape.domain_size;
  const auto records = test::edge_case_records(rows, shape.n_vars, 3);
  check_orders(base, records, "edge cases");

  // What the edge cases are meant to hold, so that the test keeps testing them.
  test::TempDir dir;
  test::write_with_records(base, test::in_order(records, test::RecordOrder::shuffled, 5), dir / "edge.zkey");
  const ConstraintMatrix m = emulate_matrix_build(Zkey::open(dir / "edge.zkey"));
  auto count = [](const SparseRows& s, uint32_t row) { return s.start[row + 1] - s.start[row]; };
  EXPECT_EQ(count(m.a, 0), 0u);
  EXPECT_EQ(count(m.b, 0), 1u);
  EXPECT_EQ(count(m.a, 1), 1u);
  EXPECT_EQ(count(m.b, 1), 0u);
  EXPECT_EQ(count(m.a, 5), 700u);
  EXPECT_EQ(count(m.b, 5), 301u);
  for (uint32_t row = 3; row < rows - 2; row += 3) EXPECT_EQ(count(m.a, row) + count(m.b, row), 0u) << row;
  for (uint32_t row = rows / 2 + 1; row < rows; ++row) ASSERT_EQ(count(m.a, row), 0u) << row;
  EXPECT_GT(count(m.b, rows - 2), 0u);
  EXPECT_EQ(count(m.b, rows - 1), 0u);
  EXPECT_EQ(m.a.entries() + m.b.entries(), records.size());
}

// No records at all: every row of both matrices empty.
TEST(CudaLogic, MatrixBuildStepsWithoutRecords) {
  const std::string base = test::shared_fixture("tiny.zkey");
  test::TempDir dir;
  test::write_with_records(base, {}, dir / "empty.zkey");
  const Zkey key = Zkey::open(dir / "empty.zkey");
  const ConstraintMatrix m = emulate_matrix_build(key);
  EXPECT_EQ(m.a.start, std::vector<uint32_t>(key.domain_size + 1, 0));
  EXPECT_EQ(m.b.start, std::vector<uint32_t>(key.domain_size + 1, 0));
  EXPECT_TRUE(same_rows(m.a, ConstraintMatrix::build(key).a));
}

}  // namespace
}  // namespace zkfarm
