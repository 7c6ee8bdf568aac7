#pragma once
// Keys with chosen section-4 records, for the tests of the constraint
// matrix's builds (host: ConstraintMatrix::build; device: DeviceMatrix, and
// its steps emulated in gpu_worker/cuda_logic_test.cpp): a fixture key's file with its
// records replaced, in the orders writers use (snarkjs: by constraint, A then
// B inside each; zkfarm-testkey: all of A, then all of B) or any other, and
// records that make edge cases (empty rows, a row of many entries, rows after
// the last constraint of one matrix but not of the other).
// Section 4's layout: snarkjs src/zkey_utils.js; groth16/zkey.hpp.
#include <algorithm>
#include <array>
#include <cstdint>
#include <cstring>
#include <fstream>
#include <random>
#include <stdexcept>
#include <string>
#include <vector>

#include "groth16/zkey.hpp"
#include "random_inputs.hpp"

namespace zkfarm::test {

/// One section-4 record: matrix (0 = A, 1 = B), constraint, signal, and the
/// 32 value bytes as stored.
struct CoeffRecord {
  uint32_t matrix, constraint, signal;
  std::array<uint8_t, 32> value;
};

/// `key`'s records in file order.
inline std::vector<CoeffRecord> records_of(const Zkey& key) {
  std::vector<CoeffRecord> out(key.n_coeffs);
  for (size_t k = 0; k < out.size(); ++k) {
    const uint8_t* p = key.coeffs.data() + k * kCoeffRecordBytes;
    std::memcpy(&out[k].matrix, p, 4);
    std::memcpy(&out[k].constraint, p + 4, 4);
    std::memcpy(&out[k].signal, p + 8, 4);
    std::memcpy(out[k].value.data(), p + 12, 32);
  }
  return out;
}

/// Record orders of the writers, and none at all.
enum class RecordOrder { snarkjs, a_then_b, shuffled, reversed };

/// `records` reordered (stable: records of one constraint and matrix keep
/// their relative order, except in `shuffled` and `reversed`).
inline std::vector<CoeffRecord> in_order(std::vector<CoeffRecord> records, RecordOrder order, uint64_t seed = 1) {
  switch (order) {
    case RecordOrder::snarkjs:
      std::stable_sort(records.begin(), records.end(), [](const CoeffRecord& x, const CoeffRecord& y) {
        return x.constraint != y.constraint ? x.constraint < y.constraint : x.matrix < y.matrix;
      });
      break;
    case RecordOrder::a_then_b:
      std::stable_sort(records.begin(), records.end(), [](const CoeffRecord& x, const CoeffRecord& y) {
        return x.matrix != y.matrix ? x.matrix < y.matrix : x.constraint < y.constraint;
      });
      break;
    case RecordOrder::shuffled: {
      std::mt19937_64 rng(seed);
      std::shuffle(records.begin(), records.end(), rng);
      break;
    }
    case RecordOrder::reversed:
      std::reverse(records.begin(), records.end());
      break;
  }
  return records;
}

inline const char* order_name(RecordOrder o) {
  switch (o) {
    case RecordOrder::snarkjs:
      return "snarkjs order";
    case RecordOrder::a_then_b:
      return "A-then-B order";
    case RecordOrder::shuffled:
      return "shuffled";
    case RecordOrder::reversed:
      return "reversed";
  }
  return "?";
}

/// Records over a key of `domain_size` rows and `n_vars` signals with the
/// edge cases a build must get right: rows 0 (B only) and 1 (A only), every
/// third row empty (but the last but one), row 5 with 700 entries in A and 300 in B (more than a
/// warp, a block of threads and a sort tile), a repeated (row, signal) pair,
/// nothing in A after row domain_size/2 while B has entries up to the last
/// row but one, and nothing at all in the last row. Values random, < r.
inline std::vector<CoeffRecord> edge_case_records(uint32_t domain_size, uint32_t n_vars, uint64_t seed) {
  std::mt19937_64 rng(seed);
  auto record = [&](uint32_t matrix, uint32_t constraint) {
    CoeffRecord r{matrix, constraint, uint32_t(rng() % n_vars), {}};
    const U256 v = random_scalar(rng);
    std::memcpy(r.value.data(), v.data(), 32);
    return r;
  };
  std::vector<CoeffRecord> out;
  out.push_back(record(1, 0));
  out.push_back(record(0, 1));
  for (int i = 0; i < 700; ++i) out.push_back(record(0, 5));
  for (int i = 0; i < 300; ++i) out.push_back(record(1, 5));
  out.push_back(out.back());  // the same term twice: both count
  for (uint32_t row = 2; row + 1 < domain_size; ++row) {
    if ((row % 3 == 0 && row != domain_size - 2) || row == 5) continue;
    const uint32_t terms = 1 + uint32_t(rng() % 4);
    for (uint32_t t = 0; t < terms; ++t) {
      if (row <= domain_size / 2) out.push_back(record(0, row));
      if (t % 2 == 0) out.push_back(record(1, row));
    }
  }
  return out;
}

/// Writes to `path` the zkey at `base` with section 4 replaced by `records`
/// (the container rewritten with the new section size). Throws
/// std::runtime_error when a file cannot be read or written.
inline void write_with_records(const std::string& base, const std::vector<CoeffRecord>& records,
                               const std::string& path) {
  std::ifstream in(base, std::ios::binary);
  const std::string file((std::istreambuf_iterator<char>(in)), std::istreambuf_iterator<char>());
  if (file.size() < 12) throw std::runtime_error("test: cannot read " + base);
  auto u32 = [&](size_t at) {
    uint32_t v;
    std::memcpy(&v, file.data() + at, 4);
    return v;
  };
  std::string out = file.substr(0, 12);
  auto put = [&](const void* p, size_t n) { out.append(static_cast<const char*>(p), n); };
  size_t at = 12;
  for (uint32_t s = 0, n = u32(8); s < n; ++s) {
    const uint32_t type = u32(at);
    uint64_t size;
    std::memcpy(&size, file.data() + at + 4, 8);
    if (type != 4) {
      out.append(file, at, 12 + size);
    } else {
      const uint32_t count = uint32_t(records.size());
      const uint64_t new_size = 4 + uint64_t(count) * kCoeffRecordBytes;
      put(&type, 4);
      put(&new_size, 8);
      put(&count, 4);
      for (const CoeffRecord& r : records) {
        put(&r.matrix, 4);
        put(&r.constraint, 4);
        put(&r.signal, 4);
        put(r.value.data(), 32);
      }
    }
    at += 12 + size;
  }
  std::ofstream o(path, std::ios::binary);
  o << out;
  if (!o) throw std::runtime_error("test: cannot write " + path);
}

/// True when two builds of one constraint matrix (SparseRowsOf, either
/// matrix) hold the same row starts, signals and coefficient bytes.
template <class Rows>
bool same_rows(const Rows& x, const Rows& y) {
  return x.start == y.start && x.signal.size() == y.signal.size() &&
         std::equal(x.signal.begin(), x.signal.end(), y.signal.begin()) && x.coef.size() == y.coef.size() &&
         (x.coef.empty() || std::memcmp(x.coef.data(), y.coef.data(), x.coef.size() * sizeof(x.coef[0])) == 0);
}

}  // namespace zkfarm::test
