// Synthesis from the key's ConstraintMatrix (groth16/constraint_matrix.hpp)
// against the plain definition, computed here the slow way: every thread of
// the old synthesize scanned all of section 4; this reference walks the
// records once, in file order, with no threads. Same witnesses, every
// fixture key, several thread counts; and the CUDA kernel's per-thread step
// (gpu_worker/cuda/synth_steps.cuh) emulated on the host against both.
#include <gtest/gtest.h>

#include <cstring>
#include <fstream>
#include <random>

#include "groth16/constraint_matrix.hpp"
#include "groth16/errors.hpp"
#include "groth16/prover.hpp"
#include "gpu_worker/cuda/dcurve.cuh"
#include "gpu_worker/cuda/synth_steps.cuh"
#include "coeff_records.hpp"
#include "random_inputs.hpp"
#include "test_util.hpp"

namespace zkfarm {
namespace {

using DFr = cuda::DCurve<Bn254>::Fr;

// a = A·w, b = B·w, c = a∘b straight from section 4's records.
void reference_synthesis(const Zkey& key, const U256* witness, std::vector<Fr>& a, std::vector<Fr>& b,
                         std::vector<Fr>& c) {
  const size_t n = key.domain_size;
  a.assign(n, Fr::zero());
  b.assign(n, Fr::zero());
  c.assign(n, Fr::zero());
  const Fr* w = reinterpret_cast<const Fr*>(witness);
  for (size_t k = 0; k < key.n_coeffs; ++k) {
    const uint8_t* p = key.coeffs.data() + k * kCoeffRecordBytes;
    uint32_t matrix, constraint, signal;
    std::memcpy(&matrix, p, 4);
    std::memcpy(&constraint, p + 4, 4);
    std::memcpy(&signal, p + 8, 4);
    (matrix == 0 ? a : b)[constraint] += Fr::load(p + 12) * w[signal];
  }
  for (size_t i = 0; i < n; ++i) c[i] = a[i] * b[i];
}

struct Case {
  std::string zkey, wtns;
};

std::vector<Case> cases() {
  std::vector<Case> out;
  for (int i : {0, 3, 9}) out.push_back({test::shared_fixture("chain.zkey"), test::shared_fixture("chain." + std::to_string(i) + ".wtns")});
  out.push_back({test::shared_fixture("tiny.zkey"), test::shared_fixture("tiny.0.wtns")});
  for (const char* name : {"allpub", "binary", "manypub", "nopub", "pow2", "pow2plus"}) {
    const std::string dir = test::repo_path("tests/fixtures/");
    out.push_back({dir + name + ".zkey", dir + name + ".0.wtns"});
  }
  return out;
}

bool same(const std::vector<Fr>& x, const Fr* y) { return std::memcmp(x.data(), y, x.size() * sizeof(Fr)) == 0; }

TEST(ConstraintMatrix, RowsHoldEveryRecordOnce) {
  for (const Case& c : cases()) {
    const Zkey key = Zkey::open(c.zkey);
    const ConstraintMatrix m = ConstraintMatrix::build(key);
    ASSERT_EQ(m.a.rows(), key.domain_size) << c.zkey;
    ASSERT_EQ(m.b.rows(), key.domain_size) << c.zkey;
    EXPECT_EQ(m.a.entries() + m.b.entries(), key.n_coeffs) << c.zkey;
    EXPECT_EQ(m.a.start.front(), 0u);
    EXPECT_EQ(m.a.start.back(), m.a.entries());
    for (size_t i = 0; i < m.a.rows(); ++i) ASSERT_LE(m.a.start[i], m.a.start[i + 1]);
    for (uint32_t s : m.a.signal) ASSERT_LT(s, key.n_vars);
    for (uint32_t s : m.b.signal) ASSERT_LT(s, key.n_vars);
  }
}

TEST(ConstraintMatrix, SynthesisMatchesTheRecordsOnEveryFixtureAndThreadCount) {
  for (const Case& c : cases()) {
    const Zkey key = Zkey::open(c.zkey);
    const Wtns wtns = Wtns::open(c.wtns);
    check_witness_matches(key, wtns);
    std::vector<U256> w(key.n_vars);
    std::memcpy(w.data(), wtns.values.data(), witness_bytes(key));
    std::vector<Fr> ra, rb, rc;
    reference_synthesis(key, w.data(), ra, rb, rc);
    const ConstraintMatrix m = ConstraintMatrix::build(key);
    for (unsigned threads : {1u, 2u, 3u, 8u}) {
      ThreadPool pool(threads);
      std::vector<Fr> a(key.domain_size), b(key.domain_size), cc(key.domain_size);
      synthesize_abc(m, w.data(), a.data(), b.data(), cc.data(), pool);
      EXPECT_TRUE(same(ra, a.data())) << c.zkey << " a, " << threads << " threads";
      EXPECT_TRUE(same(rb, b.data())) << c.zkey << " b, " << threads << " threads";
      EXPECT_TRUE(same(rc, cc.data())) << c.zkey << " c, " << threads << " threads";
    }
  }
}

// Random (canonical) witnesses too: the fixtures' witnesses are mostly 0 and 1.
TEST(ConstraintMatrix, SynthesisMatchesTheRecordsOnRandomWitnesses) {
  std::mt19937_64 rng(12);
  ThreadPool pool(2);
  for (const Case& c : cases()) {
    const Zkey key = Zkey::open(c.zkey);
    std::vector<U256> w(key.n_vars);
    for (auto& x : w) x = test::random_scalar(rng);
    std::vector<Fr> ra, rb, rc;
    reference_synthesis(key, w.data(), ra, rb, rc);
    const ConstraintMatrix m = ConstraintMatrix::build(key);
    std::vector<Fr> a(key.domain_size), b(key.domain_size), cc(key.domain_size);
    synthesize_abc(m, w.data(), a.data(), b.data(), cc.data(), pool);
    EXPECT_TRUE(same(ra, a.data()) && same(rb, b.data()) && same(rc, cc.data())) << c.zkey;
  }
}

using test::same_rows;

// The parallel path (records in constraint order within each matrix) and the
// counting sort build the same arrays; a key whose records come in reverse
// takes the counting sort and still synthesizes the same a, b, c.
TEST(ConstraintMatrix, ParallelAndCountingSortBuildsAgreeAndAnyRecordOrderWorks) {
  ThreadPool pool(3);
  test::TempDir dir;
  for (const Case& c : cases()) {
    const Zkey key = Zkey::open(c.zkey);
    const ConstraintMatrix serial = ConstraintMatrix::build(key), parallel = ConstraintMatrix::build(key, &pool);
    EXPECT_TRUE(same_rows(serial.a, parallel.a) && same_rows(serial.b, parallel.b)) << c.zkey;

    // The same key with its section-4 records reversed.
    std::string bytes = test::read_file(c.zkey);
    const std::string recs(reinterpret_cast<const char*>(key.coeffs.data()), key.coeffs.size());
    const size_t at = bytes.find(recs);
    ASSERT_NE(at, std::string::npos) << c.zkey;
    for (size_t k = 0; k < key.n_coeffs; ++k)
      bytes.replace(at + k * kCoeffRecordBytes, kCoeffRecordBytes,
                    recs.substr((key.n_coeffs - 1 - k) * kCoeffRecordBytes, kCoeffRecordBytes));
    const std::string path = dir / "reversed.zkey";
    std::ofstream(path, std::ios::binary) << bytes;
    const Zkey rev = Zkey::open(path);
    const ConstraintMatrix m = ConstraintMatrix::build(rev, &pool);
    const Wtns wtns = Wtns::open(c.wtns);
    std::vector<U256> w(key.n_vars);
    std::memcpy(w.data(), wtns.values.data(), witness_bytes(key));
    std::vector<Fr> ra, rb, rc;
    reference_synthesis(key, w.data(), ra, rb, rc);
    std::vector<Fr> a(key.domain_size), b(key.domain_size), cc(key.domain_size);
    synthesize_abc(m, w.data(), a.data(), b.data(), cc.data(), pool);
    EXPECT_TRUE(same(ra, a.data()) && same(rb, b.data()) && same(rc, cc.data())) << c.zkey << " reversed";
  }
}

TEST(ConstraintMatrix, CancelledBeforeTheWork) {
  const Zkey key = Zkey::open(test::shared_fixture("chain.zkey"));
  const ConstraintMatrix m = ConstraintMatrix::build(key);
  std::vector<U256> w(key.n_vars);
  std::vector<Fr> a(key.domain_size), b(key.domain_size), c(key.domain_size);
  ThreadPool pool(1);
  std::atomic<bool> cancel{true};
  EXPECT_THROW(synthesize_abc(m, w.data(), a.data(), b.data(), c.data(), pool, &cancel), Cancelled);
}

// The GPU kernel's step, one "thread" a row on the host, against the reference.
TEST(ConstraintMatrix, DeviceSynthesisStepMatchesTheReference) {
  std::mt19937_64 rng(5);
  for (const Case& c : cases()) {
    const Zkey key = Zkey::open(c.zkey);
    std::vector<U256> w(key.n_vars);
    for (auto& x : w) x = test::random_scalar(rng);
    std::vector<Fr> ra, rb, rc;
    reference_synthesis(key, w.data(), ra, rb, rc);
    const ConstraintMatrix m = ConstraintMatrix::build(key);
    auto rows = [](const SparseRows& s) {
      return cuda::DeviceRows<DFr>{s.start.data(), s.signal.data(), reinterpret_cast<const DFr*>(s.coef.data())};
    };
    const size_t n = key.domain_size;
    std::vector<DFr> abc(3 * n);
    for (uint32_t i = 0; i < n; ++i)
      cuda::synth_row(rows(m.a), rows(m.b), i, reinterpret_cast<const DFr*>(w.data()), abc.data(),
                      abc.data() + n, abc.data() + 2 * n);
    const Fr* out = reinterpret_cast<const Fr*>(abc.data());
    EXPECT_TRUE(same(ra, out) && same(rb, out + n) && same(rc, out + 2 * n)) << c.zkey;
  }
}

}  // namespace
}  // namespace zkfarm
