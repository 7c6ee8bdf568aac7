#include "groth16/constraint_matrix.hpp"

#include <algorithm>
#include <array>
#include <cstring>

#include "groth16/curve_list.hpp"
#include "groth16/errors.hpp"

namespace zkfarm {

namespace {

struct Record {
  uint32_t matrix, constraint, signal;
  const uint8_t* value;
};

Record record(const Zkey& key, size_t k) {
  const uint8_t* p = key.coeffs.data() + k * kCoeffRecordBytes;
  Record r;
  std::memcpy(&r.matrix, p, 4);
  std::memcpy(&r.constraint, p + 4, 4);
  std::memcpy(&r.signal, p + 8, 4);
  r.value = p + 12;
  r.matrix &= 1;  // Zkey::open refused anything else
  return r;
}

// What one chunk of records holds, per matrix: how many, the first and last
// constraint, and whether constraints never decrease inside the chunk.
struct ChunkSummary {
  uint64_t count[2] = {0, 0};
  int64_t first[2] = {-1, -1}, last[2] = {-1, -1};
  bool sorted = true;
};

// The fast path for keys whose records of each matrix come in constraint
// order, as both snarkjs (by constraint, A then B) and zkfarm-testkey (A then
// B, each by constraint) write them: every record's place is its rank within
// its matrix, so chunks of records are placed in parallel. Returns false
// (nothing built) for any other order.
template <class C>
bool build_sorted(const Zkey& key, ThreadPool& pool, ConstraintMatrixOf<C>& m) {
  using SparseRows = typename ConstraintMatrixOf<C>::SparseRows;
  using Fr = typename C::Fr;
  const size_t rows = key.domain_size, count = key.n_coeffs;
  const size_t parts = std::max<size_t>(1, std::min<size_t>(pool.size() * 4, count / 4096 + 1));
  std::vector<ChunkSummary> sum(parts);
  pool.run(parts, [&](size_t t) {
    ChunkSummary& c = sum[t];
    for (size_t k = count * t / parts, e = count * (t + 1) / parts; k < e; ++k) {
      const Record r = record(key, k);
      if (int64_t(r.constraint) < c.last[r.matrix]) c.sorted = false;
      if (c.first[r.matrix] < 0) c.first[r.matrix] = r.constraint;
      c.last[r.matrix] = r.constraint;
      ++c.count[r.matrix];
    }
  });
  // Offsets and the last constraint before each chunk, per matrix.
  std::vector<std::array<uint64_t, 2>> offset(parts);
  std::vector<std::array<int64_t, 2>> before(parts);
  uint64_t total[2] = {0, 0};
  int64_t last[2] = {-1, -1};
  for (size_t t = 0; t < parts; ++t) {
    if (!sum[t].sorted) return false;
    for (int x = 0; x < 2; ++x) {
      if (sum[t].count[x] && sum[t].first[x] < last[x]) return false;
      offset[t][x] = total[x];
      before[t][x] = last[x];
      total[x] += sum[t].count[x];
      if (sum[t].count[x]) last[x] = sum[t].last[x];
    }
  }
  SparseRows* mats[2] = {&m.a, &m.b};
  for (int x = 0; x < 2; ++x) {
    mats[x]->start.assign(rows + 1, 0);
    mats[x]->signal.resize(total[x]);
    mats[x]->coef.resize(total[x]);
  }
  pool.run(parts, [&](size_t t) {
    uint64_t pos[2] = {offset[t][0], offset[t][1]};
    int64_t prev[2] = {before[t][0], before[t][1]};
    for (size_t k = count * t / parts, e = count * (t + 1) / parts; k < e; ++k) {
      const Record r = record(key, k);
      SparseRows& s = *mats[r.matrix];
      // Rows prev+1 … constraint begin here (rows between are empty).
      for (int64_t row = prev[r.matrix] + 1; row <= int64_t(r.constraint); ++row) s.start[row] = uint32_t(pos[r.matrix]);
      prev[r.matrix] = r.constraint;
      s.signal[pos[r.matrix]] = r.signal;
      s.coef[pos[r.matrix]] = Fr::load(r.value);
      ++pos[r.matrix];
    }
  });
  for (int x = 0; x < 2; ++x)  // rows after each matrix's last record are empty
    for (size_t row = size_t(last[x] + 1); row <= rows; ++row) mats[x]->start[row] = uint32_t(total[x]);
  return true;
}

}  // namespace

template <class C>
ConstraintMatrixOf<C> ConstraintMatrixOf<C>::build(const Zkey& key, ThreadPool* pool) {
  using Fr = typename C::Fr;
  ConstraintMatrixOf sorted;
  if (pool && build_sorted(key, *pool, sorted)) return sorted;
  const size_t rows = key.domain_size;
  const uint8_t* rec = key.coeffs.data();
  const size_t count = key.n_coeffs;
  ConstraintMatrixOf m;
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

template <class Fr>
Fr row_sum(const SparseRowsOf<Fr>& s, size_t i, const Fr* w) {
  Fr acc = Fr::zero();
  for (uint32_t k = s.start[i], e = s.start[i + 1]; k < e; ++k) acc += s.coef[k] * w[s.signal[k]];
  return acc;
}

}  // namespace

template <class C>
void synthesize_abc(const ConstraintMatrixOf<C>& m, const U256* witness, typename C::Fr* a, typename C::Fr* b,
                    typename C::Fr* c, ThreadPool& pool, const std::atomic<bool>* cancel) {
  using Fr = typename C::Fr;
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

// Every curve of Curves gets the matrix.
#define ZKFARM_MATRIX_INSTANTIATE(C)                                                                     \
  template struct ConstraintMatrixOf<C>;                                                                 \
  template void synthesize_abc<C>(const ConstraintMatrixOf<C>&, const U256*, C::Fr*, C::Fr*, C::Fr*, ThreadPool&, \
                                  const std::atomic<bool>*);
ZKFARM_FOR_EACH_CURVE(ZKFARM_MATRIX_INSTANTIATE)

}  // namespace zkfarm
