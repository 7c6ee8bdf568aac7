// Parsers of the snarkjs files (binfile, zkey, wtns, r1cs) against the real
// fixtures, and every rejection path against damaged copies of them. The
// expected header values come from the files themselves (xxd), the vkey json
// ("nPublic") and public.json, not from the code under test.
#include <gtest/gtest.h>
#include <unistd.h>

#include <algorithm>
#include <cstring>
#include <filesystem>
#include <fstream>
#include <functional>
#include <iterator>
#include <string>
#include <vector>

#include "groth16/decimal.hpp"
#include "groth16/binfile.hpp"
#include "groth16/errors.hpp"
#include "groth16/r1cs.hpp"
#include "groth16/wtns.hpp"
#include "groth16/zkey.hpp"

namespace zkfarm {
namespace {

namespace fs = std::filesystem;
using Bytes = std::vector<uint8_t>;

std::string shared(const std::string& name) { return std::string(ZKFARM_SHARED_FIXTURES) + "/" + name; }
std::string local(const std::string& name) { return std::string(ZKFARM_SOURCE_DIR) + "/tests/fixtures/" + name; }

Bytes slurp(const std::string& path) {
  std::ifstream in(path, std::ios::binary);
  return Bytes(std::istreambuf_iterator<char>(in), {});
}

std::string slurp_text(const std::string& path) {
  std::ifstream in(path);
  return std::string(std::istreambuf_iterator<char>(in), {});
}

// The quoted strings of a JSON file, in order: enough for public.json, which
// is a flat array of decimal strings.
std::vector<std::string> json_strings(const std::string& text) {
  std::vector<std::string> out;
  for (size_t i = text.find('"'); i != std::string::npos; i = text.find('"', i + 1)) {
    const size_t end = text.find('"', i + 1);
    out.push_back(text.substr(i + 1, end - i - 1));
    i = end;
  }
  return out;
}

// The integer after "nPublic": in a vkey json.
uint32_t vkey_npublic(const std::string& path) {
  const std::string text = slurp_text(path);
  const size_t at = text.find("\"nPublic\":");
  EXPECT_NE(at, std::string::npos) << path;
  return static_cast<uint32_t>(std::stoul(text.substr(at + 10)));
}

void put_u32(Bytes& b, size_t off, uint32_t v) {
  for (int i = 0; i < 4; ++i) b[off + i] = static_cast<uint8_t>(v >> (8 * i));
}
void put_u64(Bytes& b, size_t off, uint64_t v) {
  for (int i = 0; i < 8; ++i) b[off + i] = static_cast<uint8_t>(v >> (8 * i));
}
uint32_t get_u32(const Bytes& b, size_t off) {
  uint32_t v = 0;
  for (int i = 0; i < 4; ++i) v |= uint32_t{b[off + i]} << (8 * i);
  return v;
}
uint64_t get_u64(const Bytes& b, size_t off) {
  uint64_t v = 0;
  for (int i = 0; i < 8; ++i) v |= uint64_t{b[off + i]} << (8 * i);
  return v;
}

// A container split into its sections, independently of BinFile, so that the
// tests can damage one part of a real file and put it back together.
struct Container {
  Bytes head;  // magic, version, count
  struct Sec {
    uint32_t type;
    Bytes payload;
  };
  std::vector<Sec> secs;

  explicit Container(const Bytes& file) : head(file.begin(), file.begin() + 12) {
    size_t off = 12;
    for (uint32_t i = 0; i < get_u32(file, 8); ++i) {
      const uint64_t size = get_u64(file, off + 4);
      secs.push_back({get_u32(file, off), Bytes(file.begin() + off + 12, file.begin() + off + 12 + size)});
      off += 12 + size;
    }
  }
  Bytes& payload(uint32_t type) {
    for (Sec& s : secs) {
      if (s.type == type) return s.payload;
    }
    throw std::runtime_error("test: no section " + std::to_string(type));
  }
  // Byte offset in bytes() of section TYPE's 12-byte header.
  size_t header_offset(uint32_t type) const {
    size_t off = 12;
    for (const Sec& s : secs) {
      if (s.type == type) return off;
      off += 12 + s.payload.size();
    }
    throw std::runtime_error("test: no section " + std::to_string(type));
  }
  Bytes bytes() const {
    Bytes out = head;
    put_u32(out, 8, static_cast<uint32_t>(secs.size()));
    for (const Sec& s : secs) {
      const size_t off = out.size();
      out.resize(off + 12);
      put_u32(out, off, s.type);
      put_u64(out, off + 4, s.payload.size());
      out.insert(out.end(), s.payload.begin(), s.payload.end());
    }
    return out;
  }
};

// A fresh directory per test, removed afterwards.
class FormatsBad : public ::testing::Test {
 protected:
  void SetUp() override {
    std::string tmpl = (fs::temp_directory_path() / "zkfarm-formats-XXXXXX").string();
    ASSERT_NE(::mkdtemp(tmpl.data()), nullptr);
    dir_ = tmpl;
  }
  void TearDown() override { fs::remove_all(dir_); }

  std::string write(const std::string& name, const Bytes& b) {
    const std::string p = (dir_ / name).string();
    // Unlink first: truncating a written file makes ext4 flush it (auto_da_alloc),
    // ~2 ms a time, which the mutation test below would pay thousands of times.
    fs::remove(p);
    std::ofstream out(p, std::ios::binary);
    out.write(reinterpret_cast<const char*>(b.data()), static_cast<std::streamsize>(b.size()));
    return p;
  }

  fs::path dir_;
};

// Runs F, which must throw InputError; checks that the message starts with
// "PATH: " and contains FAULT.
void expect_error(const std::function<void()>& f, const std::string& path, const std::string& fault) {
  try {
    f();
  } catch (const InputError& e) {
    const std::string msg = e.what();
    EXPECT_EQ(msg.rfind(path + ": ", 0), 0u) << "message does not start with the path: " << msg;
    EXPECT_NE(msg.find(fault), std::string::npos) << "expected '" << fault << "' in: " << msg;
    return;
  }
  ADD_FAILURE() << "no InputError for " << path << " (expected " << fault << ")";
}

// Coefficient record I's offset inside section 4's payload.
size_t coeff_at(uint32_t i) { return 4 + size_t{i} * 44; }

// ---------------------------------------------------------------- good files

TEST(Formats, ChainZkeyHeader) {
  const Zkey k = Zkey::open(shared("chain.zkey"));
  EXPECT_EQ(k.path, shared("chain.zkey"));
  EXPECT_EQ(k.n_vars, 1520u);  // = chain.r1cs nWires
  EXPECT_EQ(k.n_public, vkey_npublic(shared("chain.vkey.json")));
  EXPECT_EQ(k.n_public, 2u);
  EXPECT_EQ(k.domain_size, 2048u);
  EXPECT_EQ(k.log_domain, 11u);
  EXPECT_EQ(k.n_coeffs, 2489u);
  EXPECT_EQ(k.ic.size(), 3u * 64);
  EXPECT_EQ(k.coeffs.size(), 2489u * 44);
  EXPECT_EQ(k.a.size(), 1520u * 64);
  EXPECT_EQ(k.b1.size(), 1520u * 64);
  EXPECT_EQ(k.b2.size(), 1520u * 128);
  EXPECT_EQ(k.c.size(), 1517u * 64);
  EXPECT_EQ(k.h.size(), 2048u * 64);
  // Section 2's payload starts at byte 40 of the file (xxd); alpha1 follows
  // n8q, q, n8r, r, nVars, nPublic, domainSize (84 bytes), then 64-byte G1 and
  // 128-byte G2 points in the order alpha1 beta1 beta2 gamma2 delta1 delta2.
  const Bytes file = slurp(shared("chain.zkey"));
  EXPECT_EQ(std::memcmp(k.alpha1, file.data() + 40 + 84, 64), 0);
  EXPECT_EQ(k.beta1, k.alpha1 + 64);
  EXPECT_EQ(k.beta2, k.alpha1 + 128);
  EXPECT_EQ(k.gamma2, k.alpha1 + 256);
  EXPECT_EQ(k.delta1, k.alpha1 + 384);
  EXPECT_EQ(k.delta2, k.alpha1 + 448);
  EXPECT_EQ(k.h.data() + k.h.size(), k.file.section(10).data() - 12);  // section 10 follows H
}

TEST(Formats, TinyZkeyHeader) {
  const Zkey k = Zkey::open(shared("tiny.zkey"));
  EXPECT_EQ(k.n_vars, 4u);  // 1, c, a, b
  EXPECT_EQ(k.n_public, vkey_npublic(shared("tiny.vkey.json")));
  EXPECT_EQ(k.n_public, 2u);
  EXPECT_EQ(k.domain_size, 4u);
  EXPECT_EQ(k.log_domain, 2u);
  EXPECT_EQ(k.n_coeffs, 5u);
  EXPECT_EQ(k.c.size(), 1u * 64);
}

TEST(Formats, EdgeCaseZkeys) {
  struct Case {
    const char* name;
    uint32_t n_vars, n_public, domain;
  };
  // From tests/fixtures/README.md.
  for (const Case& c : {Case{"nopub", 8, 0, 8}, Case{"manypub", 123, 42, 128}, Case{"allpub", 4, 3, 8},
                        Case{"pow2", 37, 2, 2048}, Case{"pow2plus", 37, 2, 4096}, Case{"binary", 328, 3, 512}}) {
    SCOPED_TRACE(c.name);
    const Zkey k = Zkey::open(local(std::string(c.name) + ".zkey"));
    EXPECT_EQ(k.n_vars, c.n_vars);
    EXPECT_EQ(k.n_public, c.n_public);
    EXPECT_EQ(k.n_public, vkey_npublic(local(std::string(c.name) + ".vkey.json")));
    EXPECT_EQ(k.domain_size, c.domain);
    EXPECT_EQ(k.c.size(), (uint64_t{c.n_vars} - c.n_public - 1) * 64);  // allpub: empty
    const R1cs r = R1cs::open(local(std::string(c.name) + ".r1cs"));
    EXPECT_EQ(r.n_wires, k.n_vars);
    EXPECT_EQ(r.n_pub_out + r.n_pub_in, k.n_public);
    for (int i = 0; i < 2; ++i) {
      const Wtns w = Wtns::open(local(std::string(c.name) + "." + std::to_string(i) + ".wtns"));
      check_witness_matches(k, w);
      const auto pub = json_strings(slurp_text(local(std::string(c.name) + "." + std::to_string(i) + ".public.json")));
      ASSERT_EQ(pub.size(), k.n_public);
      for (uint32_t j = 0; j < k.n_public; ++j) EXPECT_EQ(le_to_decimal(w.value(j + 1)), pub[j]);
    }
  }
}

TEST(Formats, ZkeyMovesKeepSpans) {
  Zkey k = Zkey::open(shared("tiny.zkey"));
  const uint8_t* h = k.h.data();
  const uint8_t* alpha1 = k.alpha1;
  Zkey moved = std::move(k);
  // The mapping moved with the object: same bytes, still readable.
  EXPECT_EQ(moved.h.data(), h);
  EXPECT_EQ(moved.alpha1, alpha1);
  EXPECT_EQ(moved.file.section(9).data(), h);
  EXPECT_EQ(moved.path, shared("tiny.zkey"));
  EXPECT_EQ(read_u32(moved.coeffs.data() + 8) < moved.n_vars, true);
}

TEST(Formats, ChainWitnessesMatchPublicJson) {
  const Zkey k = Zkey::open(shared("chain.zkey"));
  for (int n = 0; n < 10; ++n) {
    SCOPED_TRACE(n);
    const Wtns w = Wtns::open(shared("chain." + std::to_string(n) + ".wtns"));
    EXPECT_EQ(w.file.version(), 2u);
    EXPECT_EQ(w.n8, 32u);
    EXPECT_EQ(w.prime, kFrModulus);
    EXPECT_EQ(w.n_witness, 1520u);
    EXPECT_EQ(w.values.size(), 1520u * 32);
    check_witness_matches(k, w);
    const auto pub = json_strings(slurp_text(shared("chain." + std::to_string(n) + ".public.json")));
    ASSERT_EQ(pub.size(), 2u);
    EXPECT_EQ(le_to_decimal(w.value(0)), "1");
    EXPECT_EQ(le_to_decimal(w.value(1)), pub[0]);  // out
    EXPECT_EQ(le_to_decimal(w.value(2)), pub[1]);  // y
  }
}

TEST(Formats, TinyWitnessesMatchPublicJson) {
  const Zkey k = Zkey::open(shared("tiny.zkey"));
  for (int n = 0; n < 2; ++n) {
    const Wtns w = Wtns::open(shared("tiny." + std::to_string(n) + ".wtns"));
    check_witness_matches(k, w);
    const auto pub = json_strings(slurp_text(shared("tiny." + std::to_string(n) + ".public.json")));
    ASSERT_EQ(pub.size(), 2u);
    EXPECT_EQ(le_to_decimal(w.value(1)), pub[0]);  // c
    EXPECT_EQ(le_to_decimal(w.value(2)), pub[1]);  // a
  }
  // tiny.0: a = 3, b = 11, c = 33 (circuits/tiny.inputs/p0.json); tiny.1 uses r-2 and r-1.
  const Wtns w0 = Wtns::open(shared("tiny.0.wtns"));
  EXPECT_EQ(le_to_decimal(w0.value(3)), "11");
  const Wtns w1 = Wtns::open(shared("tiny.1.wtns"));
  EXPECT_EQ(le_to_decimal(w1.value(2)),
            "21888242871839275222246405745257275088548364400416034343698204186575808495616");
}

TEST(Formats, ChainR1csAgreesWithZkey) {
  const Zkey k = Zkey::open(shared("chain.zkey"));
  const R1cs r = R1cs::open(shared("chain.r1cs"));
  EXPECT_EQ(r.n8, 32u);
  EXPECT_EQ(r.prime, kFrModulus);
  EXPECT_EQ(r.n_wires, k.n_vars);
  EXPECT_EQ(r.n_pub_out, 1u);
  EXPECT_EQ(r.n_pub_in, 1u);
  EXPECT_EQ(r.n_prv_in, 1u);
  EXPECT_EQ(r.n_labels, 1772u);
  EXPECT_EQ(r.n_constraints, 1517u);
  EXPECT_LE(r.n_constraints + k.n_public + 1, k.domain_size);
  EXPECT_EQ(r.label(0), 0u);

  // snarkjs's setup writes one section-4 record per A and B term, plus one A
  // record (constraint nConstraints+i, signal i) per public signal and the constant.
  uint64_t ab_terms = 0;
  uint32_t count = 0;
  r.for_each_constraint([&](uint32_t i, const R1csConstraint& c) {
    EXPECT_EQ(i, count++);
    ab_terms += c.a.size() + c.b.size();
  });
  EXPECT_EQ(count, r.n_constraints);
  EXPECT_EQ(ab_terms + k.n_public + 1, k.n_coeffs);
  uint32_t max_constraint = 0;
  for (uint32_t i = 0; i < k.n_coeffs; ++i) max_constraint = std::max(max_constraint, read_u32(k.coeffs.data() + i * 44 + 4));
  EXPECT_EQ(max_constraint, r.n_constraints + k.n_public);

  // Constraint 0 of chain: acc[1] = acc[0]*y + 0, as circom writes it (xxd):
  // A = -w3 (x), B = w2 (y), C = -w4 (acc[1]).
  bool seen = false;
  r.for_each_constraint([&](uint32_t i, const R1csConstraint& c) {
    if (i != 0) return;
    seen = true;
    ASSERT_EQ(c.a.size(), 1u);
    ASSERT_EQ(c.b.size(), 1u);
    ASSERT_EQ(c.c.size(), 1u);
    EXPECT_EQ(c.a.term(0).wire, 3u);
    EXPECT_EQ(c.b.term(0).wire, 2u);
    EXPECT_EQ(c.c.term(0).wire, 4u);
    EXPECT_EQ(le_to_decimal(c.a.term(0).coeff),
              "21888242871839275222246405745257275088548364400416034343698204186575808495616");
    EXPECT_EQ(le_to_decimal(c.b.term(0).coeff), "1");
  });
  EXPECT_TRUE(seen);
}

TEST(Formats, TinyR1cs) {
  const R1cs r = R1cs::open(shared("tiny.r1cs"));
  EXPECT_EQ(r.n_wires, 4u);
  EXPECT_EQ(r.n_pub_out, 1u);
  EXPECT_EQ(r.n_pub_in, 1u);
  EXPECT_EQ(r.n_prv_in, 1u);
  EXPECT_EQ(r.n_constraints, 1u);
  // c = a*b as -a * b = -c: A = (r-1)*w2, B = 1*w3, C = (r-1)*w1.
  r.for_each_constraint([&](uint32_t, const R1csConstraint& c) {
    ASSERT_EQ(c.a.size(), 1u);
    EXPECT_EQ(c.a.term(0).wire, 2u);
    EXPECT_EQ(c.b.term(0).wire, 3u);
    EXPECT_EQ(le_to_decimal(c.b.term(0).coeff), "1");
    EXPECT_EQ(c.c.term(0).wire, 1u);
    EXPECT_EQ(le_to_decimal(c.c.term(0).coeff),
              "21888242871839275222246405745257275088548364400416034343698204186575808495616");
  });
}

TEST(Formats, Bls12381R1csOpensWithItsPrime) {
  const R1cs r = R1cs::open(shared("chain_bls12381.r1cs"));
  EXPECT_EQ(r.n8, 32u);
  EXPECT_EQ(le_to_decimal(r.prime_le),
            "52435875175126190479447740508185965837690552500527637822603658699938581184513");
  EXPECT_EQ(r.n_constraints, 1517u);
}

TEST(Formats, NumberHelpers) {
  EXPECT_EQ(to_decimal(kFqModulus),
            "21888242871839275222246405745257275088696311157297823662689037894645226208583");
  EXPECT_EQ(to_decimal(kFrModulus),
            "21888242871839275222246405745257275088548364400416034343698204186575808495617");
  EXPECT_EQ(to_decimal(U256{}), "0");
  EXPECT_TRUE(u256_less(kFrModulus, kFqModulus));
  EXPECT_FALSE(u256_less(kFqModulus, kFqModulus));
  const uint8_t le[] = {0x01, 0x02, 0x03, 0x04, 0x05, 0x06, 0x07, 0x08};
  EXPECT_EQ(read_u32(le), 0x04030201u);
  EXPECT_EQ(read_u64(le), 0x0807060504030201ull);
  EXPECT_EQ(le_to_decimal(le), std::to_string(0x0807060504030201ull));
}

// ---------------------------------------------------------------- bad files

TEST_F(FormatsBad, MissingFile) {
  const std::string p = (dir_ / "nope.zkey").string();
  expect_error([&] { Zkey::open(p); }, p, "No such file");
}

TEST_F(FormatsBad, Directory) {
  const std::string p = dir_.string();
  expect_error([&] { Zkey::open(p); }, p, "is a directory");
}

TEST_F(FormatsBad, EmptyFile) {
  const std::string p = write("empty.zkey", {});
  expect_error([&] { Zkey::open(p); }, p, "empty file");
  const std::string w = write("empty.wtns", {});
  expect_error([&] { Wtns::open(w); }, w, "empty file");
}

TEST_F(FormatsBad, TruncatedZkey) {
  const Bytes full = slurp(shared("chain.zkey"));
  // Mid-header.
  const std::string p5 = write("cut5.zkey", Bytes(full.begin(), full.begin() + 5));
  expect_error([&] { Zkey::open(p5); }, p5, "truncated: header needs 12 bytes, file has 5");
  // Header only: section 1's header missing.
  const std::string p12 = write("cut12.zkey", Bytes(full.begin(), full.begin() + 12));
  expect_error([&] { Zkey::open(p12); }, p12, "truncated: section header 0 of 10");
  // Mid section header 2 (offset 28 = 12 + 12 + 4, then 6 bytes).
  const std::string p34 = write("cut34.zkey", Bytes(full.begin(), full.begin() + 34));
  expect_error([&] { Zkey::open(p34); }, p34, "truncated: section header 1 of 10");
  // Mid section 2, mid section 4, mid section 9, one byte short of the end.
  for (size_t cut : {size_t{100}, size_t{5000}, size_t{600000}, full.size() - 1}) {
    const std::string p = write("cut" + std::to_string(cut) + ".zkey", Bytes(full.begin(), full.begin() + cut));
    expect_error([&] { Zkey::open(p); }, p, "runs past the end of the file");
  }
}

TEST_F(FormatsBad, SectionSizeOffByOne) {
  Container c(slurp(shared("chain.zkey")));
  // A consistent container whose section 9 has one byte too many.
  Container c9 = c;
  c9.payload(9).push_back(0);
  const std::string p9 = write("h.zkey", c9.bytes());
  expect_error([&] { Zkey::open(p9); }, p9, "section 9: size 131073 bytes, expected 131072");
  // Section 4 one byte short.
  Container c4 = c;
  c4.payload(4).pop_back();
  const std::string p4 = write("coefs.zkey", c4.bytes());
  expect_error([&] { Zkey::open(p4); }, p4, "section 4: size 109519 bytes, expected 109520");
  // Only the u64 size field patched: the last section then runs past the end,
  // and a shorter one leaves trailing bytes.
  Bytes raw = c.bytes();
  const size_t h10 = c.header_offset(10);
  put_u64(raw, h10 + 4, get_u64(raw, h10 + 4) + 1);
  const std::string pa = write("size10.zkey", raw);
  expect_error([&] { Zkey::open(pa); }, pa, "section 10: truncated: size 470 bytes");
  put_u64(raw, h10 + 4, get_u64(raw, h10 + 4) - 2);
  const std::string pb = write("size10b.zkey", raw);
  expect_error([&] { Zkey::open(pb); }, pb, "1 trailing bytes after the last of 10 sections");
  // A huge size must not wrap the offset arithmetic.
  put_u64(raw, h10 + 4, ~uint64_t{0});
  const std::string pc = write("size10c.zkey", raw);
  expect_error([&] { Zkey::open(pc); }, pc, "runs past the end of the file");
}

TEST_F(FormatsBad, DuplicateAndMissingSection) {
  Container c(slurp(shared("tiny.zkey")));
  Container dup = c;
  dup.secs.push_back(dup.secs[2]);  // a second section 3
  const std::string p = write("dup.zkey", dup.bytes());
  expect_error([&] { Zkey::open(p); }, p, "section 3: duplicate section");
  Container miss = c;
  miss.secs.erase(miss.secs.begin() + 7);  // section 8
  const std::string m = write("miss.zkey", miss.bytes());
  expect_error([&] { Zkey::open(m); }, m, "section 8 missing");
}

TEST_F(FormatsBad, SectionsInAnyOrder) {
  Container c(slurp(shared("tiny.zkey")));
  std::swap(c.secs[0], c.secs[8]);
  const std::string p = write("reordered.zkey", c.bytes());
  EXPECT_EQ(Zkey::open(p).domain_size, 4u);
}

TEST_F(FormatsBad, BadMagic) {
  Bytes b = slurp(shared("tiny.zkey"));
  const std::string w = write("really_a_wtns.zkey", slurp(shared("tiny.0.wtns")));
  expect_error([&] { Zkey::open(w); }, w, "bad magic: not a 'zkey' file (its header is that of a witness (.wtns))");
  b[0] = 0x7f;
  const std::string p = write("magic.zkey", b);
  expect_error([&] { Zkey::open(p); }, p, "bad magic: not a 'zkey' file (its first 4 bytes are not the magic 'zkey')");
  const std::string z = write("zkey_as.wtns", slurp(shared("tiny.zkey")));
  expect_error([&] { Wtns::open(z); }, z, "bad magic: not a 'wtns' file (its header is that of a snarkjs proving key (.zkey))");
  const std::string r = write("r1cs_as.zkey", slurp(shared("tiny.r1cs")));
  expect_error([&] { Zkey::open(r); }, r, "(its header is that of a constraint system (.r1cs))");
}

// Errors describe faults and never echo the file's bytes (errors.hpp): not a
// foreign file's first bytes, not a prime, not a witness value.
TEST_F(FormatsBad, ErrorsNeverEchoFileContents) {
  auto message = [](const std::function<void()>& f) {
    try {
      f();
    } catch (const InputError& e) {
      return std::string(e.what());
    }
    ADD_FAILURE() << "no InputError";
    return std::string();
  };
  // A text file that is not a container at all (e.g. a secret someone points
  // the farm at): none of its text may come back.
  const std::string secret = write("secret.zkey", Bytes{'h', 'u', 'n', 't', 'e', 'r', '2', ':', 'p', 'w', 'd', '\n'});
  const std::string m1 = message([&] { Zkey::open(secret); });
  EXPECT_EQ(m1.find("hunt"), std::string::npos) << m1;
  EXPECT_NE(m1.find("bad magic"), std::string::npos) << m1;
  // A 48-byte q that is not BLS12-381's: neither prime is shown.
  Container bq(slurp(shared("chain_bls12381.zkey")));
  bq.payload(2)[4] ^= 2;
  const std::string m2 = message([&] { Zkey::open(write("q48.zkey", bq.bytes())); });
  EXPECT_NE(m2.find("whose q is not bls12381's"), std::string::npos) << m2;
  EXPECT_EQ(m2.find("4002409555221667393417789825735904156556882819939007885"), std::string::npos) << m2;
  // A witness whose constant signal is 123456789: the value is not shown.
  Container c(slurp(shared("tiny.0.wtns")));
  put_u32(c.payload(2), 0, 123456789);
  const std::string w = write("value0.wtns", c.bytes());
  const std::string m3 = message([&] { Wtns::open(w); });
  EXPECT_EQ(m3.find("123456789"), std::string::npos) << m3;
  EXPECT_NE(m3.find("value 0 (the constant signal) is not 1"), std::string::npos) << m3;
  // A witness over another field: the prime is not shown.
  const Zkey k = Zkey::open(shared("chain.zkey"));
  const Wtns wb = Wtns::open(shared("chain_bls12381.0.wtns"));
  const std::string m4 = message([&] { check_witness_matches(k, wb); });
  EXPECT_EQ(m4.find("52435875175126190479447740508185965837690552500527637822603658699938581184513"), std::string::npos) << m4;
}

TEST_F(FormatsBad, WrongVersion) {
  Bytes b = slurp(shared("tiny.zkey"));
  put_u32(b, 4, 2);
  const std::string p = write("v2.zkey", b);
  expect_error([&] { Zkey::open(p); }, p, "unsupported version 2, zkfarm reads 1");
  Bytes w = slurp(shared("tiny.0.wtns"));
  put_u32(w, 4, 3);
  const std::string pw = write("v3.wtns", w);
  expect_error([&] { Wtns::open(pw); }, pw, "unsupported version 3, zkfarm reads 1..2");
  Bytes r = slurp(shared("tiny.r1cs"));
  put_u32(r, 4, 0);
  const std::string pr = write("v0.r1cs", r);
  expect_error([&] { R1cs::open(pr); }, pr, "unsupported version 0");
}

TEST_F(FormatsBad, Protocol2) {
  Container c(slurp(shared("tiny.zkey")));
  put_u32(c.payload(1), 0, 2);
  const std::string p = write("plonk.zkey", c.bytes());
  expect_error([&] { Zkey::open(p); }, p, "section 1: unsupported protocol 2, only Groth16 (1)");
}

TEST_F(FormatsBad, CoefficientOutOfRange) {
  Container c(slurp(shared("chain.zkey")));
  Container sig = c;
  put_u32(sig.payload(4), coeff_at(17) + 8, 1520);  // signal = nVars
  const std::string p = write("signal.zkey", sig.bytes());
  expect_error([&] { Zkey::open(p); }, p, "section 4: coefficient 17: signal 1520 out of range (nVars 1520)");
  Container mat = c;
  put_u32(mat.payload(4), coeff_at(3), 2);  // matrix C does not exist in a zkey
  const std::string pm = write("matrix.zkey", mat.bytes());
  expect_error([&] { Zkey::open(pm); }, pm, "section 4: coefficient 3: matrix 2 is neither A (0) nor B (1)");
  Container con = c;
  put_u32(con.payload(4), coeff_at(2488) + 4, 2048);
  const std::string pc = write("constraint.zkey", con.bytes());
  expect_error([&] { Zkey::open(pc); }, pc, "section 4: coefficient 2488: constraint 2048 out of range (domainSize 2048)");
  Container val = c;
  std::memset(val.payload(4).data() + coeff_at(5) + 12, 0xff, 32);
  const std::string pv = write("value.zkey", val.bytes());
  expect_error([&] { Zkey::open(pv); }, pv, "section 4: coefficient 5: value not below r");
}

TEST_F(FormatsBad, CoordinateNotBelowQ) {
  Container c(slurp(shared("chain.zkey")));
  // H point 100's y coordinate set to q exactly.
  Container h = c;
  const uint8_t q_le[32] = {0x47, 0xfd, 0x7c, 0xd8, 0x16, 0x8c, 0x20, 0x3c, 0x8d, 0xca, 0x71, 0x68, 0x91, 0x6a, 0x81, 0x97,
                            0x5d, 0x58, 0x81, 0x81, 0xb6, 0x45, 0x50, 0xb8, 0x29, 0xa0, 0x31, 0xe1, 0x72, 0x4e, 0x64, 0x30};
  ASSERT_EQ(read_u256(q_le), kFqModulus);
  std::memcpy(h.payload(9).data() + 100 * 64 + 32, q_le, 32);
  const std::string p = write("h.zkey", h.bytes());
  expect_error([&] { Zkey::open(p); }, p, "section 9: point 100 (y): coordinate not canonical (>= q)");
  // B2 point 7's y.c1.
  Container b2 = c;
  std::memset(b2.payload(7).data() + 7 * 128 + 96, 0xff, 32);
  const std::string pb = write("b2.zkey", b2.bytes());
  expect_error([&] { Zkey::open(pb); }, pb, "section 7: point 7 (y.c1): coordinate not canonical (>= q)");
  // delta2 in the header (section 2: 84 bytes of fields, then alpha1 beta1 beta2 gamma2 delta1).
  Container d = c;
  std::memset(d.payload(2).data() + 84 + 448 + 32, 0xff, 32);
  const std::string pd = write("delta2.zkey", d.bytes());
  expect_error([&] { Zkey::open(pd); }, pd, "section 2: delta2 (x.c1): coordinate not canonical (>= q)");
  // IC point 0.
  Container ic = c;
  std::memset(ic.payload(3).data(), 0xff, 32);
  const std::string pi = write("ic.zkey", ic.bytes());
  expect_error([&] { Zkey::open(pi); }, pi, "section 3: point 0 (x): coordinate not canonical (>= q)");
}

TEST_F(FormatsBad, HeaderCounts) {
  Container c(slurp(shared("tiny.zkey")));
  Container dom = c;
  put_u32(dom.payload(2), 80, 6);  // domainSize
  const std::string p = write("dom.zkey", dom.bytes());
  expect_error([&] { Zkey::open(p); }, p, "section 2: domainSize 6 is not a power of two");
  put_u32(dom.payload(2), 80, 1u << 29);
  const std::string p2 = write("dom29.zkey", dom.bytes());
  expect_error([&] { Zkey::open(p2); }, p2, "section 2: domainSize 536870912 exceeds 2^28");
  Container pub = c;
  put_u32(pub.payload(2), 76, 4);  // nPublic = nVars
  const std::string pp = write("pub.zkey", pub.bytes());
  expect_error([&] { Zkey::open(pp); }, pp, "section 2: nPublic 4 not below nVars 4");
}

// snarkjs's BLS12-381 key opens with its curve's sizes; the numbers are the
// circuit's (its r1cs agrees) and the sections' sizes follow 48-byte coordinates.
TEST_F(FormatsBad, Bls12381ZkeyOpensWithItsSizes) {
  const Zkey k = Zkey::open(shared("chain_bls12381.zkey"));
  const R1cs r = R1cs::open(shared("chain_bls12381.r1cs"));
  EXPECT_EQ(k.curve, CurveId::bls12_381);
  EXPECT_STREQ(curve_name(k.curve), "bls12381");
  EXPECT_EQ(k.fq_bytes, 48u);
  EXPECT_EQ(k.g1_bytes, 96u);
  EXPECT_EQ(k.g2_bytes, 192u);
  EXPECT_EQ(k.n_vars, r.n_wires);
  EXPECT_EQ(k.n_public, r.n_pub_out + r.n_pub_in);
  EXPECT_EQ(k.a.size(), size_t(k.n_vars) * 96);
  EXPECT_EQ(k.b2.size(), size_t(k.n_vars) * 192);
  EXPECT_EQ(k.h.size(), size_t(k.domain_size) * 96);
  const Zkey bn = Zkey::open(shared("chain.zkey"));
  EXPECT_EQ(bn.curve, CurveId::bn254);
  EXPECT_EQ(bn.g1_bytes, 64u);
  EXPECT_EQ(bn.g2_bytes, 128u);
  // Its witness fits it, and a BN254 witness does not.
  const std::string bls_w = shared("chain_bls12381.0.wtns"), bn_w = shared("chain.0.wtns");
  EXPECT_NO_THROW(check_witness_matches(k, Wtns::open(bls_w)));
  const Wtns w = Wtns::open(bn_w);
  expect_error([&] { check_witness_matches(k, w); }, bn_w,
               "witness is over another field (a 32-byte prime that is not bls12381's r), key expects bls12381's r");
  // A coordinate of H set to q itself (all its bytes from the header) is refused, naming the point.
  Container c(slurp(shared("chain_bls12381.zkey")));
  std::memcpy(c.payload(9).data() + 96 + 48, c.payload(2).data() + 4, 48);
  const std::string p = write("hq.zkey", c.bytes());
  expect_error([&] { Zkey::open(p); }, p, "section 9: point 1 (y): coordinate not canonical (>= q)");
}

TEST_F(FormatsBad, ForeignCurvesAreRefused) {
  // A base field of a size no known curve has.
  Container c40(slurp(shared("tiny.zkey")));
  put_u32(c40.payload(2), 0, 40);
  const std::string p40 = write("n8q40.zkey", c40.bytes());
  expect_error([&] { Zkey::open(p40); }, p40,
               "section 2: wrong curve: key is over a base field of 40 bytes, zkfarm supports bn128, bls12381");
  // Same length as BN254 but another q.
  Container c(slurp(shared("tiny.zkey")));
  c.payload(2)[4] ^= 2;
  const std::string pq = write("q.zkey", c.bytes());
  expect_error([&] { Zkey::open(pq); }, pq, "section 2: wrong curve: key is over a 32-byte base field whose q is not bn128's");
  // Same q, another r.
  Container cr(slurp(shared("tiny.zkey")));
  cr.payload(2)[4 + 32 + 4] ^= 2;
  const std::string pr = write("r.zkey", cr.bytes());
  expect_error([&] { Zkey::open(pr); }, pr, "section 2: wrong curve: key is over a 32-byte scalar field whose r is not bn128's");
  // BLS12-381's q with another r.
  Container br(slurp(shared("chain_bls12381.zkey")));
  br.payload(2)[4 + 48 + 4] ^= 2;
  const std::string pbr = write("blsr.zkey", br.bytes());
  expect_error([&] { Zkey::open(pbr); }, pbr,
               "section 2: wrong curve: key is over a 32-byte scalar field whose r is not bls12381's");
}

TEST_F(FormatsBad, WitnessMismatch) {
  const Zkey k = Zkey::open(shared("chain.zkey"));
  const std::string bls = shared("chain_bls12381.0.wtns");
  const Wtns wb = Wtns::open(bls);
  expect_error([&] { check_witness_matches(k, wb); }, bls,
               "witness is over another field (a 32-byte prime that is not bn128's r), key expects bn128's r");
  const std::string tiny = shared("tiny.0.wtns");
  const Wtns wt = Wtns::open(tiny);
  expect_error([&] { check_witness_matches(k, wt); }, tiny, "witness has 4 values, key expects nVars 1520");
}

TEST_F(FormatsBad, WitnessValues) {
  Container c(slurp(shared("tiny.0.wtns")));
  Container big = c;
  std::memcpy(big.payload(2).data() + 2 * 32, big.payload(1).data() + 4, 32);  // value 2 = r
  const std::string p = write("big.wtns", big.bytes());
  expect_error([&] { Wtns::open(p); }, p, "section 2: value 2 not below the prime");
  Container one = c;
  one.payload(2)[0] = 2;
  const std::string p1 = write("one.wtns", one.bytes());
  expect_error([&] { Wtns::open(p1); }, p1, "section 2: value 0 (the constant signal) is not 1");
  Container size = c;
  size.payload(2).resize(3 * 32);
  const std::string ps = write("size.wtns", size.bytes());
  expect_error([&] { Wtns::open(ps); }, ps, "section 2: size 96 bytes, expected 128 (nWitness 4 values of 32 bytes)");
  Container n8 = c;
  put_u32(n8.payload(1), 0, 31);
  const std::string pn = write("n8.wtns", n8.bytes());
  expect_error([&] { Wtns::open(pn); }, pn, "section 1: n8 31 is not a multiple of 8");
  Container hdr = c;
  hdr.payload(1).resize(10);
  const std::string ph = write("hdr.wtns", hdr.bytes());
  expect_error([&] { Wtns::open(ph); }, ph, "section 1: size 10 bytes, expected 40");
}

TEST_F(FormatsBad, R1csFaults) {
  Container c(slurp(shared("tiny.r1cs")));
  // Section 2 of tiny: u32 nTerms=1, u32 wire=2, coefficient (A), ...
  Container wire = c;
  put_u32(wire.payload(2), 4, 4);
  const std::string p = write("wire.r1cs", wire.bytes());
  expect_error([&] { R1cs::open(p); }, p, "section 2: constraint 0: A term 0: wire 4 out of range (nWires 4)");
  Container coef = c;
  std::memset(coef.payload(2).data() + 8, 0xff, 32);
  const std::string pc = write("coef.r1cs", coef.bytes());
  expect_error([&] { R1cs::open(pc); }, pc, "section 2: constraint 0: A term 0: coefficient not below the prime");
  Container extra = c;
  extra.payload(2).insert(extra.payload(2).end(), {0, 0, 0, 0});
  const std::string pe = write("extra.r1cs", extra.bytes());
  expect_error([&] { R1cs::open(pe); }, pe, "section 2: 4 trailing bytes after the 1 constraints");
  Container cut = c;
  cut.payload(2).resize(100);
  const std::string pt = write("cut.r1cs", cut.bytes());
  expect_error([&] { R1cs::open(pt); }, pt, "section 2: truncated: constraint 0: C terms needs 36 bytes at offset 84");
  Container many = c;
  put_u32(many.payload(1), 4 + 32 + 24, 2);  // nConstraints = 2
  const std::string pm = write("many.r1cs", many.bytes());
  expect_error([&] { R1cs::open(pm); }, pm, "section 2: truncated: constraint 1: A term count needs 4 bytes");
  Container io = c;
  put_u32(io.payload(1), 4 + 32 + 12, 5);  // nPrvIn
  const std::string pi = write("io.r1cs", io.bytes());
  expect_error([&] { R1cs::open(pi); }, pi, "section 1: 1 + nPubOut + nPubIn + nPrvIn = 8 exceeds nWires 4");
  Container lab = c;
  put_u64(lab.payload(3), 8, 4);  // wire 1's label = nLabels
  const std::string pl = write("label.r1cs", lab.bytes());
  expect_error([&] { R1cs::open(pl); }, pl, "section 3: wire 1: label 4 out of range (nLabels 4)");
}

// The container alone: many sections, lookups by type, the message shapes.
TEST_F(FormatsBad, BinFileManySectionsAndMessages) {
  Bytes b = {'z', 'k', 'e', 'y', 1, 0, 0, 0, 0, 0, 0, 0};
  const uint32_t n = 200000;  // empty sections: the duplicate check must stay linear
  for (uint32_t t = 0; t < n; ++t) {
    const size_t off = b.size();
    b.resize(off + 12);
    put_u32(b, off, 1000 + t);
    put_u64(b, off + 4, 0);
  }
  put_u32(b, 8, n);
  const std::string p = write("many.zkey", b);
  const BinFile f(p, "zkey", 1);
  EXPECT_EQ(f.version(), 1u);
  EXPECT_EQ(f.file_size(), b.size());
  EXPECT_TRUE(f.has_section(1000 + n - 1));
  EXPECT_EQ(f.section(1000).size(), 0u);
  EXPECT_FALSE(f.has_section(1));
  expect_error([&] { f.section(1); }, p, "section 1 missing");
  expect_error([&] { f.fail(7, "some fault"); }, p, "section 7: some fault");
  expect_error([&] { f.fail_file("file fault"); }, p, "file fault");
  put_u32(b, 12 + 12 * (n - 1), 1000);  // the last section repeats the first's type
  const std::string d = write("manydup.zkey", b);
  expect_error([&] { BinFile(d, "zkey", 1); }, d, "section 1000: duplicate section (at offsets 24 and ");
  expect_error([&] { Zkey::open(p); }, p, "section 1 missing");
}

// Every one-byte corruption and every truncation of the small fixtures either
// opens or throws InputError: never a crash, never another exception (ASan and
// UBSan builds turn any out-of-bounds read into a failure here).
TEST_F(FormatsBad, EveryCorruptionIsAnInputErrorOrHarmless) {
  struct Kind {
    const char* name;
    std::function<void(const std::string&)> open;
  };
  const Kind kinds[] = {{"tiny.zkey", [](const std::string& p) { Zkey::open(p); }},
                        {"tiny.0.wtns", [](const std::string& p) { Wtns::open(p); }},
                        {"tiny.r1cs", [](const std::string& p) { R1cs::open(p); }}};
  for (const Kind& k : kinds) {
    const Bytes good = slurp(shared(k.name));
    size_t rejected = 0;
    for (size_t i = 0; i <= 2 * good.size(); ++i) {
      Bytes b = good;
      if (i < good.size()) {
        b[i] ^= 0xff;
      } else {
        b.resize(i - good.size());  // every length from 0 to size
      }
      const std::string p = write(k.name, b);
      try {
        k.open(p);
      } catch (const InputError& e) {
        ++rejected;
        EXPECT_EQ(std::string(e.what()).rfind(p + ": ", 0), 0u) << e.what();
      } catch (const std::exception& e) {
        ADD_FAILURE() << k.name << " mutation " << i << ": unexpected " << e.what();
      }
    }
    EXPECT_GT(rejected, good.size()) << k.name;  // all truncations, most flips
  }
}

}  // namespace
}  // namespace zkfarm
