#include "groth16/constraint_matrix.hpp"

#include <algorithm>
#include <cstring>

#include "groth16/errors.hpp"

namespace zkfarm {

ConstraintMatrix ConstraintMatrix::build(const Zkey& key) {
  const size_t rows = key.domain_size;
  const uint8_t* rec = key.coeffs.data();
  const size_t count = key.n_coeffs;
  ConstraintMatrix m;
  SparseRows* mats[2] = {&m.a, &m.b};
  for (SparseRows* s : mats) s->start.assign(rows + 1, 0);
  // Pass 1: entries per row (counted at start[row + 1]), then prefix sums.
  for (size_t k = 0; k < count; ++k) {
    uint32_t matrix, constraint;
    std::memcpy(&matrix, rec + k * kCoeffRecordBytes, 4);
    std::memcpy(&constraint, rec + k * kCoeffRecordBytes + 4, 4);
    ++mats[matrix & 1]->start[size_t(constraint) + 1];
  }
  for (SparseRows* s : mats) {
    for (size_t i = 0; i < rows; ++i) s->start[i + 1] += s->start[i];
    s->signal.resize(s->start[rows]);
    s->coef.resize(s->start[rows]);
  }
  // Pass 2: each record to the next free place of its row.
  std::vector<uint32_t> fill_a(m.a.start.begin(), m.a.start.end() - 1);
  std::vector<uint32_t> fill_b(m.b.start.begin(), m.b.start.end() - 1);
  std::vector<uint32_t>* fills[2] = {&fill_a, &fill_b};
  for (size_t k = 0; k < count; ++k) {
    const uint8_t* p = rec + k * kCoeffRecordBytes;
    uint32_t matrix, constraint, signal;
    std::memcpy(&matrix, p, 4);
    std::memcpy(&constraint, p + 4, 4);
    std::memcpy(&signal, p + 8, 4);
    SparseRows& s = *mats[matrix & 1];
    const uint32_t at = (*fills[matrix & 1])[constraint]++;
    s.signal[at] = signal;
    s.coef[at] = Fr::load(p + 12);
  }
  return m;
}

namespace {

Fr row_sum(const SparseRows& s, size_t i, const Fr* w) {
  Fr acc = Fr::zero();
  for (uint32_t k = s.start[i], e = s.start[i + 1]; k < e; ++k) acc += s.coef[k] * w[s.signal[k]];
  return acc;
}

}  // namespace

void synthesize_abc(const ConstraintMatrix& m, const U256* witness, Fr* a, Fr* b, Fr* c, ThreadPool& pool,
                    const std::atomic<bool>* cancel) {
  if (cancel && cancel->load()) throw Cancelled();
  const size_t rows = m.a.rows();
  // Plain witness values multiply the v·R² coefficients straight (one R⁻¹ in
  // the Montgomery product): no conversion pass over the witness.
  const Fr* w = reinterpret_cast<const Fr*>(witness);
  // Chunks of about equal work: a row costs its entries plus a constant, so
  // rows with many terms (the public-input rows) do not leave one thread last.
  const unsigned parts = std::max(1u, pool.size() * 4);
  const uint64_t total = uint64_t(m.a.entries()) + m.b.entries() + 2 * rows;
  std::vector<size_t> bounds{0};
  {
    uint64_t acc = 0, next = total / parts;
    for (size_t i = 0; i < rows; ++i) {
      acc += uint64_t(m.a.start[i + 1] - m.a.start[i]) + (m.b.start[i + 1] - m.b.start[i]) + 2;
      if (acc >= next && i + 1 < rows) {
        bounds.push_back(i + 1);
        next = total / parts * (bounds.size());
      }
    }
    bounds.push_back(rows);
  }
  pool.run(bounds.size() - 1, [&](size_t t) {
    for (size_t i = bounds[t]; i < bounds[t + 1]; ++i) {
      a[i] = row_sum(m.a, i, w);
      b[i] = row_sum(m.b, i, w);
      c[i] = a[i] * b[i];
    }
  });
  if (cancel && cancel->load()) throw Cancelled();
}

}  // namespace zkfarm
