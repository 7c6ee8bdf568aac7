// End to end: proofs of every shared fixture and every edge-case circuit of
// tests/fixtures, checked by snarkjs's verifier; tampered proofs rejected;
// zkfarm-prove's exit code and message for each kind of bad input.
#include <gtest/gtest.h>
#include <sys/stat.h>
#include <sys/wait.h>

#include <filesystem>
#include <fstream>
#include <sstream>
#include <thread>

#include "groth16/proof_json.hpp"
#include "groth16/verify.hpp"
#include "groth16/prover.hpp"
#include "test_util.hpp"

namespace zkfarm {
namespace {

namespace fs = std::filesystem;

using test::read_file;
using test::TempDir;

void write_bytes(const std::string& p, const std::string& bytes) {
  std::ofstream out(p, std::ios::binary);
  out << bytes;
}

struct CommandResult {
  int exit_code;
  std::string err;
};

// Runs a shell command, stderr captured.
CommandResult run_command(const std::string& cmd, const TempDir& dir) {
  std::string err_file = dir / "stderr.txt";
  int status = std::system((cmd + " 2>" + err_file + " >/dev/null").c_str());
  return {WIFEXITED(status) ? WEXITSTATUS(status) : 128 + WTERMSIG(status), read_file(err_file)};
}

// snarkjs's verifier on (vkey, public, proof) triples; true if all are OK.
bool snarkjs_verify(const std::vector<std::array<std::string, 3>>& triples, std::string* out = nullptr) {
  std::string cmd = "node " + test::repo_path("tests/snarkjs_verify.cjs");
  for (auto& t : triples) cmd += " " + t[0] + " " + t[1] + " " + t[2];
  FILE* p = popen((cmd + " 2>&1").c_str(), "r");
  if (!p) return false;
  std::string text;
  char buf[4096];
  while (size_t k = fread(buf, 1, sizeof buf, p)) text.append(buf, k);
  int status = pclose(p);
  if (out) *out = text;
  return WIFEXITED(status) && WEXITSTATUS(status) == 0 &&
         size_t(std::count(text.begin(), text.end(), '\n')) == triples.size();
}

struct Fixture {
  std::string dir, circuit, witness;  // witness: "chain.3"
  std::string zkey() const { return dir + "/" + circuit + ".zkey"; }
  std::string vkey() const { return dir + "/" + circuit + ".vkey.json"; }
  std::string wtns() const { return dir + "/" + witness + ".wtns"; }
  std::string ref_public() const { return dir + "/" + witness + ".public.json"; }
};

std::vector<Fixture> all_fixtures() {
  std::vector<Fixture> out;
  for (int k = 0; k < 10; ++k) out.push_back({ZKFARM_SHARED_FIXTURES, "chain", "chain." + std::to_string(k)});
  for (int k = 0; k < 2; ++k) out.push_back({ZKFARM_SHARED_FIXTURES, "tiny", "tiny." + std::to_string(k)});
  std::string edge = test::repo_path("tests/fixtures");
  for (const char* c : {"nopub", "manypub", "allpub", "pow2", "pow2plus", "binary"})
    for (int k = 0; k < 2; ++k) out.push_back({edge, c, std::string(c) + "." + std::to_string(k)});
  return out;
}

// Proves one fixture in process over curve C; returns {public.json,
// proof.json} paths, and the proof in *out when asked.
template <class C = Bn254>
std::array<std::string, 2> prove_fixture(const Fixture& f, const TempDir& dir, ThreadPool& pool,
                                         ProofOf<C>* out = nullptr) {
  Zkey key = Zkey::open(f.zkey());
  Wtns w = Wtns::open(f.wtns());
  check_witness_matches(key, w);
  ProverOf<C> prover(key, pool);
  std::vector<uint64_t> mem(PartitionBuffersOf<C>::bytes_for(key) / 8);
  auto buf = PartitionBuffersOf<C>::view(mem.data(), key);
  synthesize(key, w, buf, pool);
  std::string pub = public_to_json(buf.witness, key.n_public);
  ProofOf<C> proof = prover.prove(buf, random_scalar_of<C>(), random_scalar_of<C>(), pool);
  if (out) *out = proof;
  std::array<std::string, 2> paths{dir / (f.witness + ".public.json"), dir / (f.witness + ".proof.json")};
  write_file_atomic(paths[0], pub);
  write_file_atomic(paths[1], proof_to_json(proof));
  return paths;
}

TEST(Prove, EveryFixtureVerifiesWithSnarkjs) {
  TempDir dir;
  ThreadPool pool(2);
  std::vector<std::array<std::string, 3>> triples;
  for (const auto& f : all_fixtures()) {
    auto [pub, proof] = prove_fixture(f, dir, pool);
    // public.json is deterministic: byte-identical to snarkjs's.
    EXPECT_EQ(read_file(pub), read_file(f.ref_public())) << f.witness;
    triples.push_back({f.vkey(), pub, proof});
  }
  std::string out;
  EXPECT_TRUE(snarkjs_verify(triples, &out)) << out;
  EXPECT_EQ(std::count(out.begin(), out.end(), '\n'), long(triples.size())) << out;
  EXPECT_EQ(out.find("INVALID"), std::string::npos) << out;
}

// BLS12-381: snarkjs's own key and witnesses of the chain circuit (circom
// -p bls12381), proved by the CPU prover templated on the curve: public.json
// byte-identical to snarkjs's, proof.json in its layout with "curve":
// "bls12381", every proof accepted by snarkjs and by zkfarm's BLS12-381 verifier.
TEST(Prove, Bls12381FixturesVerifyWithSnarkjs) {
  TempDir dir;
  ThreadPool pool(2);
  const Zkey key = Zkey::open(test::shared_fixture("chain_bls12381.zkey"));
  const auto vk = bls12_381::VerifyingKey::from_zkey(key);
  std::vector<std::array<std::string, 3>> triples;
  for (int k = 0; k < 10; ++k) {
    const Fixture f{ZKFARM_SHARED_FIXTURES, "chain_bls12381", "chain_bls12381." + std::to_string(k)};
    ProofOf<bls12_381::Curve> proof;
    auto [pub, proof_path] = prove_fixture<bls12_381::Curve>(f, dir, pool, &proof);
    EXPECT_EQ(read_file(pub), read_file(f.ref_public())) << f.witness;
    const Wtns w = Wtns::open(f.wtns());
    std::vector<U256> signals(key.n_public);
    std::memcpy(signals.data(), w.values.data() + 32, signals.size() * 32);
    const VerifyResult ours = bls12_381::verify_proof(vk, proof, signals);
    EXPECT_TRUE(ours.ok()) << f.witness << ": " << ours.reason;
    // One public signal off by one: refused by the pairing.
    if (!signals.empty()) {
      signals[0][0] ^= 1;
      EXPECT_EQ(bls12_381::verify_proof(vk, proof, signals).fault, VerifyFault::kPairing) << f.witness;
    }
    triples.push_back({f.vkey(), pub, proof_path});
  }
  const std::string text = read_file(triples[0][2]);
  EXPECT_NE(text.find("\"curve\": \"bls12381\""), std::string::npos) << text;
  std::string out;
  EXPECT_TRUE(snarkjs_verify(triples, &out)) << out;
  EXPECT_EQ(out.find("INVALID"), std::string::npos) << out;
}

TEST(Prove, ProofJsonHasSnarkjsLayout) {
  TempDir dir;
  ThreadPool pool(1);
  auto [pub, proof] = prove_fixture({ZKFARM_SHARED_FIXTURES, "tiny", "tiny.0"}, dir, pool);
  std::string ours = read_file(proof), theirs = read_file(test::shared_fixture("tiny.0.proof.json"));
  // Same structure and formatting: replace every decimal number by 'N' and compare.
  auto shape = [](std::string s) {
    std::string out;
    for (size_t i = 0; i < s.size(); ++i) {
      if (isdigit(static_cast<unsigned char>(s[i]))) {
        while (i + 1 < s.size() && isdigit(static_cast<unsigned char>(s[i + 1]))) ++i;
        out += 'N';
      } else {
        out += s[i];
      }
    }
    return out;
  };
  EXPECT_EQ(shape(ours), shape(theirs));
  // BLS12-381's proof.json has the same layout as snarkjs's, its curve named.
  auto [bpub, bproof] =
      prove_fixture<bls12_381::Curve>({ZKFARM_SHARED_FIXTURES, "chain_bls12381", "chain_bls12381.0"}, dir, pool);
  EXPECT_EQ(shape(read_file(bproof)), shape(read_file(test::shared_fixture("chain_bls12381.0.proof.json"))));
}

TEST(Prove, TamperedProofsAreRejected) {
  TempDir dir;
  ThreadPool pool(2);
  Fixture f{ZKFARM_SHARED_FIXTURES, "chain", "chain.1"};
  auto [pub, proof] = prove_fixture(f, dir, pool);
  ASSERT_TRUE(snarkjs_verify({{f.vkey(), pub, proof}}));

  // pi_a replaced by pi_c: both valid curve points, wrong proof.
  std::string text = read_file(proof);
  size_t a = text.find("\"pi_a\""), b = text.find("\"pi_b\""), c = text.find("\"pi_c\""), p = text.find("\"protocol\"");
  std::string pi_a_body = text.substr(a + 6, b - a - 6), pi_c_body = text.substr(c + 6, p - c - 6);
  std::string swapped = text.substr(0, a + 6) + pi_c_body + text.substr(b, c + 6 - b) + pi_a_body + text.substr(p);
  write_bytes(dir / "swapped.proof.json", swapped);
  EXPECT_FALSE(snarkjs_verify({{f.vkey(), pub, dir / "swapped.proof.json"}}));

  // The proof checked against another witness' public signals.
  EXPECT_FALSE(snarkjs_verify({{f.vkey(), test::shared_fixture("chain.2.public.json"), proof}}));
}

TEST(Prove, ConcurrentProofsInOneProcess) {
  TempDir dir;
  std::vector<std::array<std::string, 3>> triples(4);
  std::vector<std::thread> threads;
  for (int t = 0; t < 4; ++t) {
    threads.emplace_back([&, t] {
      ThreadPool pool(2);
      Fixture f{ZKFARM_SHARED_FIXTURES, "chain", "chain." + std::to_string(t)};
      auto [pub, proof] = prove_fixture(f, dir, pool);
      triples[t] = {f.vkey(), pub, proof};
    });
  }
  for (auto& th : threads) th.join();
  EXPECT_TRUE(snarkjs_verify(triples));
}

// ---- zkfarm-prove, the command ----

std::string prove_cmd(const std::string& key, const std::string& wtns, const TempDir& dir) {
  return std::string(ZKFARM_PROVE_BIN) + " '" + key + "' '" + wtns + "' '" + (dir / "out.proof.json") + "' '" +
         (dir / "out.public.json") + "'";
}

TEST(ProveCommand, ProvesAFixture) {
  TempDir dir;
  auto r = run_command(prove_cmd(test::shared_fixture("chain.zkey"), test::shared_fixture("chain.4.wtns"), dir), dir);
  ASSERT_EQ(r.exit_code, 0) << r.err;
  EXPECT_TRUE(snarkjs_verify({{test::shared_fixture("chain.vkey.json"), dir / "out.public.json", dir / "out.proof.json"}}));
}

// A `zkfarm-prove --backend cuda` run `r` that wrote `cuda_proof`: where no
// device is usable, exit 3 saying so and no output; otherwise the same proof
// bytes as the CPU backend's `cpu_proof` (same blinding).
void expect_cuda_proof_equals(const CommandResult& r, const std::string& cpu_proof,
                              const std::string& cuda_proof) {
  if (r.exit_code == 3) {
    EXPECT_NE(r.err.find("CUDA"), std::string::npos) << r.err;
    EXPECT_FALSE(fs::exists(cuda_proof));
  } else {
    ASSERT_EQ(r.exit_code, 0) << r.err;
    EXPECT_EQ(read_file(cpu_proof), read_file(cuda_proof));
  }
}

// A BLS12-381 key is recognized from its header and proved on the CPU; with
// --backend cuda it is proved on the GPU, byte-identical with a fixed
// blinding, or, where no device is usable, exit 3 with no output.
TEST(ProveCommand, ProvesABls12381FixtureOnBothBackends) {
  TempDir dir;
  const std::string key = test::shared_fixture("chain_bls12381.zkey"), wtns = test::shared_fixture("chain_bls12381.7.wtns");
  auto r = run_command(prove_cmd(key, wtns, dir), dir);
  ASSERT_EQ(r.exit_code, 0) << r.err;
  EXPECT_EQ(read_file(dir / "out.public.json"), read_file(test::shared_fixture("chain_bls12381.7.public.json")));
  EXPECT_TRUE(snarkjs_verify(
      {{test::shared_fixture("chain_bls12381.vkey.json"), dir / "out.public.json", dir / "out.proof.json"}}));

  auto prove = [&](const std::string& flags, const std::string& out) {
    return run_command(std::string(ZKFARM_PROVE_BIN) + " " + flags + " '" + key + "' '" + wtns + "' '" + (dir / out) +
                           "' '" + (dir / (out + ".public")) + "'",
                       dir);
  };
  const std::string blinding = "--test-blinding 123456789,987654321";
  ASSERT_EQ(prove("--backend cpu " + blinding, "cpu.json").exit_code, 0);
  expect_cuda_proof_equals(prove("--backend cuda " + blinding, "cuda.json"), dir / "cpu.json", dir / "cuda.json");
}

// Runs zkfarm-prove on bad input: exit 2, one line naming `names` and `fault`, no output.
void expect_bad_input(const std::string& key, const std::string& wtns, const std::string& names,
                      const std::string& fault) {
  TempDir dir;
  auto r = run_command(prove_cmd(key, wtns, dir), dir);
  EXPECT_EQ(r.exit_code, 2) << r.err;
  EXPECT_EQ(std::count(r.err.begin(), r.err.end(), '\n'), 1) << "one line: " << r.err;
  EXPECT_NE(r.err.find(names), std::string::npos) << "names " << names << ": " << r.err;
  EXPECT_NE(r.err.find(fault), std::string::npos) << "says " << fault << ": " << r.err;
  EXPECT_FALSE(fs::exists(dir / "out.proof.json"));
  EXPECT_FALSE(fs::exists(dir / "out.public.json"));
}

// Offset of section `type`'s u64 size field in a snarkjs binary file.
size_t section_size_offset(const std::string& bytes, uint32_t type) {
  uint32_t n;
  std::memcpy(&n, bytes.data() + 8, 4);
  size_t pos = 12;
  for (uint32_t i = 0; i < n; ++i) {
    uint32_t t;
    uint64_t size;
    std::memcpy(&t, bytes.data() + pos, 4);
    std::memcpy(&size, bytes.data() + pos + 4, 8);
    if (t == type) return pos + 4;
    pos += 12 + size;
  }
  throw std::runtime_error("no such section");
}

// BLS12-381's G1 has a cofactor: a key whose β1 or δ1 is on the curve but
// outside the group of order r is refused by name before any proving (its
// proofs could never verify, and the message would blame the witness).
TEST(ProveCommand, Bls12381KeyPointsOutsideTheSubgroupAreRefused) {
  using Fq = bls12_381::Fq;
  using Fr = bls12_381::Fr;
  using G1 = bls12_381::G1;
  using G1Affine = bls12_381::G1Affine;
  // (q + 1)/4: q ≡ 3 (mod 4), so y = rhs^((q+1)/4) is a square root when one exists.
  Fq::Int e = Fq::modulus();
  e[0] += 1;  // q is odd and its low limb is not all ones: no carry
  for (int i = 0; i < 2; ++i)
    for (size_t l = 0; l < e.size(); ++l) e[l] = (e[l] >> 1) | (l + 1 < e.size() ? e[l + 1] << 63 : 0);
  G1Affine p{};
  for (uint64_t x = 1;; ++x) {
    const Fq fx = Fq::from_u64(x), rhs = fx.sqr() * fx + Fq::from_u64(4);
    const Fq y = rhs.pow(e);
    if (y.sqr() != rhs) continue;
    p = {fx, y};
    if (!G1::from_affine(p).mul(Fr::modulus()).is_infinity()) break;  // on the curve, not in G1
  }
  ASSERT_TRUE(p.on_curve());
  const std::string src = test::shared_fixture("chain_bls12381.zkey");
  const Zkey key = Zkey::open(src);
  const std::string bytes = read_file(src);
  const uint8_t* base = key.file.section(2).data() - key.file.section_offset(2);
  for (auto [point, name] : {std::pair{key.beta1, "beta1"}, {key.delta1, "delta1"}}) {
    TempDir dir;
    std::string patched = bytes;
    p.store(reinterpret_cast<uint8_t*>(patched.data()) + (point - base));
    const std::string path = dir / "bad.zkey";
    write_bytes(path, patched);
    auto r = run_command(prove_cmd(path, test::shared_fixture("chain_bls12381.0.wtns"), dir), dir);
    EXPECT_EQ(r.exit_code, 2) << r.err;
    EXPECT_NE(r.err.find(std::string(name) + " is not in the G1 subgroup"), std::string::npos) << r.err;
    EXPECT_FALSE(fs::exists(dir / "out.proof.json"));
  }
}

TEST(ProveCommand, BadInputGivesExit2AndAClearMessage) {
  TempDir dir;
  const std::string key = test::shared_fixture("chain.zkey"), wtns = test::shared_fixture("chain.0.wtns");
  const std::string key_bytes = read_file(key);

  expect_bad_input(dir / "missing.zkey", wtns, "missing.zkey", "No such file");
  expect_bad_input(key, dir / "missing.wtns", "missing.wtns", "No such file");
  fs::create_directory(dir / "adir.zkey");
  expect_bad_input(dir / "adir.zkey", wtns, "adir.zkey", "directory");
  write_bytes(dir / "empty.zkey", "");
  expect_bad_input(dir / "empty.zkey", wtns, "empty.zkey", "empty");
  write_bytes(dir / "empty.wtns", "");
  expect_bad_input(key, dir / "empty.wtns", "empty.wtns", "empty");

  for (size_t cut : {size_t(6), size_t(40), size_t(1000), key_bytes.size() / 2, key_bytes.size() - 1}) {
    std::string name = "cut" + std::to_string(cut) + ".zkey";
    write_bytes(dir / name, key_bytes.substr(0, cut));
    expect_bad_input(dir / name, wtns, name, "truncated");
  }

  for (int delta : {-1, +1}) {
    std::string patched = key_bytes;
    size_t off = section_size_offset(patched, 4);
    uint64_t size;
    std::memcpy(&size, patched.data() + off, 8);
    size += delta;
    std::memcpy(patched.data() + off, &size, 8);
    std::string name = "size" + std::to_string(delta) + ".zkey";
    write_bytes(dir / name, patched);
    expect_bad_input(dir / name, wtns, name, "section");
  }

  // A witness of another circuit, and one over BLS12-381's scalar field.
  expect_bad_input(key, test::shared_fixture("tiny.0.wtns"), "tiny.0.wtns", "nVars");
  expect_bad_input(key, test::shared_fixture("chain_bls12381.0.wtns"), "chain_bls12381.0.wtns", "prime");
  expect_bad_input(test::shared_fixture("chain_bls12381.zkey"), wtns, "chain.0.wtns", "not bls12381's r");
  // A key given where the witness goes.
  expect_bad_input(key, key, "chain.zkey", "magic");
}

TEST(ProveCommand, UnwritableOutputIsBadInputAndLeavesNothing) {
  TempDir dir;
  std::string cmd = std::string(ZKFARM_PROVE_BIN) + " " + test::shared_fixture("tiny.zkey") + " " +
                    test::shared_fixture("tiny.0.wtns") + " " + (dir / "no/such/dir/p.json") + " " + (dir / "pub.json");
  auto r = run_command(cmd, dir);
  EXPECT_EQ(r.exit_code, 2) << r.err;
  EXPECT_NE(r.err.find("no/such/dir/p.json"), std::string::npos) << r.err;
  EXPECT_FALSE(fs::exists(dir / "pub.json"));
}

TEST(ProveCommand, UsageErrorIsExit2) {
  TempDir dir;
  auto r = run_command(std::string(ZKFARM_PROVE_BIN) + " only-one-arg", dir);
  EXPECT_EQ(r.exit_code, 2) << r.err;
}

// --test-blinding fixes r and s, so a proof is a function of key and witness:
// how scripts/gpu-check.sh compares the CUDA and CPU backends byte for byte.
// --backend cuda where no device is usable is exit 3 with the reason; on a
// machine with a GPU the CUDA proof must equal the CPU's.
TEST(ProveCommand, FixedBlindingAndBackendChoice) {
  TempDir dir;
  const std::string key = test::shared_fixture("chain.zkey"), wtns = test::shared_fixture("chain.2.wtns");
  auto prove = [&](const std::string& flags, const std::string& out) {
    std::string cmd = std::string(ZKFARM_PROVE_BIN) + " " + flags + " '" + key + "' '" + wtns + "' '" + (dir / out) +
                      "' '" + (dir / (out + ".public")) + "'";
    return run_command(cmd, dir);
  };
  const std::string blinding = "--test-blinding 123456789,987654321";
  ASSERT_EQ(prove("--backend cpu " + blinding, "a.json").exit_code, 0);
  ASSERT_EQ(prove("--backend cpu --threads 1 " + blinding, "b.json").exit_code, 0);
  ASSERT_EQ(prove("--backend cpu --test-blinding 123456789,987654322", "c.json").exit_code, 0);
  EXPECT_EQ(read_file(dir / "a.json"), read_file(dir / "b.json"));
  EXPECT_NE(read_file(dir / "a.json"), read_file(dir / "c.json"));
  EXPECT_TRUE(snarkjs_verify({{test::shared_fixture("chain.vkey.json"), dir / "a.json.public", dir / "a.json"},
                              {test::shared_fixture("chain.vkey.json"), dir / "c.json.public", dir / "c.json"}}));

  for (const char* bad : {"5", "5,", "x,7", "21888242871839275222246405745257275088548364400416034343698204186575808495617,1"}) {
    auto r = prove(std::string("--test-blinding '") + bad + "'", "bad.json");
    EXPECT_EQ(r.exit_code, 2) << bad;
    EXPECT_NE(r.err.find("--test-blinding"), std::string::npos) << r.err;
  }

  expect_cuda_proof_equals(prove("--backend cuda " + blinding, "cuda.json"), dir / "a.json", dir / "cuda.json");
}


}  // namespace
}  // namespace zkfarm
