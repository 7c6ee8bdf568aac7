// The Groth16 verifier (groth16/verify.hpp): verify_proof against snarkjs's
// verifier on every fixture proof and on tampered copies (both must reject
// those); the key from a zkey against snarkjs's export, and its e(α, β)
// against snarkjs's vk_alphabeta_12 (a third pairing implementation); proofs
// of our prover; zkfarm-prove refusing a witness that does not satisfy its
// circuit.
#include <gtest/gtest.h>
#include <sys/wait.h>

#include <algorithm>
#include <cstring>
#include <filesystem>
#include <fstream>
#include <nlohmann/json.hpp>
#include <sstream>

#include "groth16/errors.hpp"
#include "groth16/pairing.hpp"
#include "groth16/proof_json.hpp"
#include "groth16/verify.hpp"
#include "pairing_vectors.hpp"
#include "groth16/proof_codec.hpp"

namespace zkfarm {
namespace {

namespace fs = std::filesystem;
using test::dec;
using test::fq;
using test::fq12_at;
using test::g2_at;
using test::g2_mul;
using test::read_file;
using test::TempDir;
using test::vectors;

// ---- snarkjs's files ----

G1Affine g1_from_json(const nlohmann::json& j) {
  if (j.at(2).get<std::string>() == "0") return G1Affine::infinity();  // snarkjs: ["0", "1", "0"]
  return {fq(dec(j.at(0))), fq(dec(j.at(1)))};
}
G2Affine g2_from_json(const nlohmann::json& j) {
  if (j.at(2).at(0).get<std::string>() == "0") return G2Affine::infinity();
  return {{fq(dec(j.at(0).at(0))), fq(dec(j.at(0).at(1)))}, {fq(dec(j.at(1).at(0))), fq(dec(j.at(1).at(1)))}};
}
Proof proof_from_json(const std::string& path) {
  auto j = nlohmann::json::parse(read_file(path));
  return {g1_from_json(j.at("pi_a")), g2_from_json(j.at("pi_b")), g1_from_json(j.at("pi_c"))};
}
std::vector<U256> public_from_json(const std::string& path) {
  std::vector<U256> out;
  for (auto& s : nlohmann::json::parse(read_file(path))) out.push_back(dec(s.get<std::string>()));
  return out;
}
VerifyingKey vkey_from_json(const std::string& path) {
  auto j = nlohmann::json::parse(read_file(path));
  std::vector<G1Affine> ic;
  for (auto& p : j.at("IC")) ic.push_back(g1_from_json(p));
  return VerifyingKey(g1_from_json(j.at("vk_alpha_1")), g2_from_json(j.at("vk_beta_2")),
                      g2_from_json(j.at("vk_gamma_2")), g2_from_json(j.at("vk_delta_2")), std::move(ic), path);
}
std::string public_json(const std::vector<U256>& signals) {
  std::vector<U256> w{U256{1, 0, 0, 0}};  // public_to_json takes a witness: value 0 is the constant
  w.insert(w.end(), signals.begin(), signals.end());
  return public_to_json(w.data(), signals.size());
}
void write_text(const std::string& path, const std::string& text) {
  std::ofstream out(path, std::ios::binary);
  out << text;
}

struct Circuit {
  std::string dir, name;
  int witnesses;
  std::string zkey() const { return dir + "/" + name + ".zkey"; }
  std::string vkey() const { return dir + "/" + name + ".vkey.json"; }
  std::string proof(int k) const { return dir + "/" + name + "." + std::to_string(k) + ".proof.json"; }
  std::string pub(int k) const { return dir + "/" + name + "." + std::to_string(k) + ".public.json"; }
  std::string wtns(int k) const { return dir + "/" + name + "." + std::to_string(k) + ".wtns"; }
};

std::vector<Circuit> all_circuits() {
  std::vector<Circuit> out{{ZKFARM_SHARED_FIXTURES, "chain", 10}, {ZKFARM_SHARED_FIXTURES, "tiny", 2}};
  for (const char* c : {"nopub", "manypub", "allpub", "pow2", "pow2plus", "binary"})
    out.push_back({test::repo_path("tests/fixtures"), c, 2});
  return out;
}

// snarkjs's verdict on each (vkey, public, proof) triple, through
// tests/snarkjs_verify.cjs (one node process): true = "OK", false = "INVALID".
std::vector<bool> snarkjs_verdicts(const std::vector<std::array<std::string, 3>>& triples, std::string* log) {
  std::string cmd = "node " + test::repo_path("tests/snarkjs_verify.cjs");
  for (auto& t : triples) cmd += " '" + t[0] + "' '" + t[1] + "' '" + t[2] + "'";
  FILE* p = popen((cmd + " 2>&1").c_str(), "r");
  if (!p) throw std::runtime_error("cannot run node");
  std::string text;
  char buf[4096];
  while (size_t k = fread(buf, 1, sizeof buf, p)) text.append(buf, k);
  pclose(p);
  *log = text;
  std::vector<bool> out;
  std::istringstream in(text);
  std::string line;
  while (std::getline(in, line)) {
    if (line.rfind("OK ", 0) == 0) out.push_back(true);
    else if (line.rfind("INVALID ", 0) == 0) out.push_back(false);
  }
  return out;
}

TEST(Verify, SnarkjsAlphaBetaIsOurPairingToTheFkrExponent) {
  // snarkjs exports e(α, β) as vk_alphabeta_12, computed by ffjavascript with
  // the Fuentes-Castañeda et al. hard part: our e(α, β) raised to m.
  const U256 m = vectors().get("snarkjs_gt_exponent").front().at(0);
  for (const auto& c : all_circuits()) {
    const VerifyingKey vk = VerifyingKey::from_zkey(Zkey::open(c.zkey()));
    auto j = nlohmann::json::parse(read_file(c.vkey())).at("vk_alphabeta_12");
    std::vector<U256> flat;
    for (auto& half : j)
      for (auto& f2 : half)
        for (auto& x : f2) flat.push_back(dec(x.get<std::string>()));
    const Fq12 e = pairing(vk.alpha1(), vk.beta2());
    EXPECT_TRUE(e.pow(m) == fq12_at(flat, 0)) << c.name;
    EXPECT_FALSE(e == fq12_at(flat, 0)) << c.name;  // the exponent matters: the comparison can fail
  }
}

TEST(Verify, KeyFromZkeyMatchesSnarkjsExport) {
  for (const auto& c : all_circuits()) {
    Zkey key = Zkey::open(c.zkey());
    const VerifyingKey a = VerifyingKey::from_zkey(key), b = vkey_from_json(c.vkey());
    EXPECT_EQ(a.n_public(), key.n_public) << c.name;
    EXPECT_TRUE(a.alpha1() == b.alpha1()) << c.name;
    EXPECT_TRUE(a.beta2() == b.beta2()) << c.name;
    EXPECT_TRUE(a.gamma2() == b.gamma2()) << c.name;
    EXPECT_TRUE(a.delta2() == b.delta2()) << c.name;
    ASSERT_EQ(a.ic().size(), b.ic().size()) << c.name;
    for (size_t i = 0; i < a.ic().size(); ++i) EXPECT_TRUE(a.ic()[i] == b.ic()[i]) << c.name << " IC " << i;
  }
}

// Every fixture proof, and for witness 0 of each circuit tampered copies:
// ours and snarkjs's verdicts agree, originals verify, tampered ones do not.
TEST(Verify, AgreesWithSnarkjsOnFixturesAndTamperedProofs) {
  TempDir dir;
  const G2Affine off_g2 = g2_at(vectors().get("g2_off_subgroup").front(), 0);
  struct Case {
    std::array<std::string, 3> files;
    bool ours;
    VerifyFault expected;
  };
  std::vector<Case> cases;
  for (const auto& c : all_circuits()) {
    const VerifyingKey vk = VerifyingKey::from_zkey(Zkey::open(c.zkey()));
    for (int k = 0; k < c.witnesses; ++k) {
      const Proof proof = proof_from_json(c.proof(k));
      const auto signals = public_from_json(c.pub(k));
      const VerifyResult r = verify_proof(vk, proof, signals);
      EXPECT_TRUE(r.ok()) << c.proof(k) << ": " << r.reason;
      cases.push_back({{c.vkey(), c.pub(k), c.proof(k)}, r.ok(), VerifyFault::kNone});
      if (k != 0) continue;

      auto add = [&](const std::string& tag, const Proof& p, const std::vector<U256>& s, VerifyFault expected) {
        const std::string base = dir / (c.name + "." + tag);
        write_text(base + ".proof.json", proof_to_json(p));
        write_text(base + ".public.json", public_json(s));
        const VerifyResult t = verify_proof(vk, p, s);
        EXPECT_EQ(t.fault, expected) << base << ": " << t.reason;
        EXPECT_FALSE(t.reason.empty()) << base;
        cases.push_back({{c.vkey(), base + ".public.json", base + ".proof.json"}, t.ok(), expected});
      };
      Proof moved = proof;  // A moved by the generator: a valid point, a wrong proof
      G1 a = G1::from_affine(proof.a);
      a.add_affine(test::g1_generator());
      moved.a = a.to_affine();
      add("moved_a", moved, signals, VerifyFault::kPairing);
      Proof swapped = proof;  // A and C exchanged
      std::swap(swapped.a, swapped.c);
      add("swapped", swapped, signals, VerifyFault::kPairing);
      Proof moved_b = proof;
      moved_b.b = g2_mul(proof.b, U256{2, 0, 0, 0});
      add("moved_b", moved_b, signals, VerifyFault::kPairing);
      Proof off_subgroup = proof;  // B on the twist, outside G2
      off_subgroup.b = off_g2;
      add("b_off_subgroup", off_subgroup, signals, VerifyFault::kNotInSubgroup);
      Proof off_curve = proof;
      off_curve.c.y += Fq::one();
      add("c_off_curve", off_curve, signals, VerifyFault::kNotOnCurve);
      Proof b_off_curve = proof;
      b_off_curve.b.x.c1 += Fq::one();
      add("b_off_curve", b_off_curve, signals, VerifyFault::kNotOnCurve);
      if (!signals.empty()) {
        auto changed = signals;
        changed.back() = (Fr::from_u256(changed.back()) + Fr::one()).to_u256();
        add("signal_changed", proof, changed, VerifyFault::kPairing);
        auto too_big = signals;  // s + r: the same value mod r, but not a field element
        unsigned char carry = 0;
        for (int i = 0; i < 4; ++i)
          carry = _addcarry_u64(carry, too_big.front()[i], FrParams::kModulus[i],
                                reinterpret_cast<unsigned long long*>(&too_big.front()[i]));
        ASSERT_EQ(carry, 0);
        add("signal_not_below_r", proof, too_big, VerifyFault::kPublicRange);
      }
    }
  }
  std::vector<std::array<std::string, 3>> triples;
  for (auto& c : cases) triples.push_back(c.files);
  std::string log;
  const std::vector<bool> theirs = snarkjs_verdicts(triples, &log);
  ASSERT_EQ(theirs.size(), cases.size()) << log;
  for (size_t i = 0; i < cases.size(); ++i) {
    EXPECT_EQ(cases[i].ours, theirs[i]) << cases[i].files[2];
    EXPECT_EQ(theirs[i], cases[i].expected == VerifyFault::kNone) << cases[i].files[2];
  }
}

TEST(Verify, WrongNumberOfPublicSignalsIsRefused) {
  const Circuit chain{ZKFARM_SHARED_FIXTURES, "chain", 10};
  const VerifyingKey vk = VerifyingKey::from_zkey(Zkey::open(chain.zkey()));
  const Proof proof = proof_from_json(chain.proof(0));
  auto signals = public_from_json(chain.pub(0));
  ASSERT_TRUE(verify_proof(vk, proof, signals).ok());
  signals.push_back(U256{0, 0, 0, 0});
  EXPECT_EQ(verify_proof(vk, proof, signals).fault, VerifyFault::kPublicCount);
  signals.resize(signals.size() - 2);
  const VerifyResult r = verify_proof(vk, proof, signals);
  EXPECT_EQ(r.fault, VerifyFault::kPublicCount);
  EXPECT_NE(r.reason.find("expected 2 public signals, got 1"), std::string::npos) << r.reason;
}

TEST(Verify, BadKeyPointsAreInputErrors) {
  const VerifyingKey good = vkey_from_json(test::repo_path("tests/fixtures/nopub.vkey.json"));
  const G2Affine off_g2 = g2_at(vectors().get("g2_off_subgroup").front(), 0);
  auto expect_refused = [](auto make, const std::string& fault) {
    try {
      make();
      ADD_FAILURE() << "accepted a key with " << fault;
    } catch (const InputError& e) {
      EXPECT_NE(std::string(e.what()).find("vk.json: " + fault), std::string::npos) << e.what();
    }
  };
  expect_refused([&] { VerifyingKey(good.alpha1(), good.beta2(), off_g2, good.delta2(), good.ic(), "vk.json"); },
                 "gamma2 is not in the G2 subgroup");
  G1Affine bad_alpha = good.alpha1();
  bad_alpha.y += Fq::one();
  expect_refused([&] { VerifyingKey(bad_alpha, good.beta2(), good.gamma2(), good.delta2(), good.ic(), "vk.json"); },
                 "alpha1 is not on the curve");
  expect_refused(
      [&] { VerifyingKey(good.alpha1(), good.beta2(), good.gamma2(), G2Affine::infinity(), good.ic(), "vk.json"); },
      "delta2 is the point at infinity");
  expect_refused([&] { VerifyingKey(good.alpha1(), good.beta2(), good.gamma2(), good.delta2(), {}, "vk.json"); },
                 "IC has no points");
}

// ---- proofs of our prover ----

TEST(Verify, ProofsOfOurProverVerify) {
  ThreadPool pool(2);
  const std::string edge = test::repo_path("tests/fixtures");
  const std::vector<std::pair<Circuit, int>> picks = {{{ZKFARM_SHARED_FIXTURES, "chain", 10}, 3},
                                                      {{edge, "nopub", 2}, 0},
                                                      {{edge, "allpub", 2}, 1},
                                                      {{edge, "manypub", 2}, 0},
                                                      {{edge, "binary", 2}, 1}};
  for (const auto& [c, k] : picks) {
    Zkey key = Zkey::open(c.zkey());
    Wtns w = Wtns::open(c.wtns(k));
    check_witness_matches(key, w);
    Prover prover(key, pool);
    std::vector<uint64_t> mem(PartitionBuffers::bytes_for(key) / 8);
    auto buf = PartitionBuffers::view(mem.data(), key);
    synthesize(key, w, buf, pool);
    const std::vector<U256> signals(buf.witness + 1, buf.witness + 1 + key.n_public);
    const Proof proof = prover.prove(buf, random_scalar(), random_scalar(), pool);
    const VerifyingKey vk = VerifyingKey::from_zkey(key);
    const VerifyResult r = verify_proof(vk, proof, signals);
    EXPECT_TRUE(r.ok()) << c.name << ": " << r.reason;
    // The supervisor's path: the 256 bytes of PROVE_DONE, decoded.
    EXPECT_TRUE(verify_proof(vk, decode_proof(encode_proof(proof)), signals).ok()) << c.name;
    // The same proof against the other fixture witness' public signals.
    const auto other = public_from_json(c.pub((k + 1) % c.witnesses));
    if (other != signals) {
      EXPECT_EQ(verify_proof(vk, proof, other).fault, VerifyFault::kPairing) << c.name;
    }
  }
}

// ---- zkfarm-prove ----

// Offset of value `index` of section 2 (the values) in a .wtns file's bytes.
size_t wtns_value_offset(const std::string& bytes, uint32_t index) {
  uint32_t n;
  std::memcpy(&n, bytes.data() + 8, 4);
  size_t pos = 12;
  for (uint32_t i = 0; i < n; ++i) {
    uint32_t type;
    uint64_t size;
    std::memcpy(&type, bytes.data() + pos, 4);
    std::memcpy(&size, bytes.data() + pos + 4, 8);
    if (type == 2) return pos + 12 + size_t(index) * 32;
    pos += 12 + size;
  }
  throw std::runtime_error("no values section");
}

TEST(ProveCommand, WitnessThatDoesNotSatisfyTheCircuitIsRefused) {
  TempDir dir;
  const Circuit chain{ZKFARM_SHARED_FIXTURES, "chain", 10};
  Zkey key = Zkey::open(chain.zkey());
  // A private signal the proof depends on: its C-section point is not infinity
  // (a signal in no constraint has a zero point and changing it changes nothing).
  uint32_t target = 0;
  for (uint32_t j = key.n_public + 1; j < key.n_vars && !target; ++j) {
    const uint8_t* p = key.c.data() + size_t(j - key.n_public - 1) * kG1Bytes;
    if (std::any_of(p, p + kG1Bytes, [](uint8_t b) { return b != 0; })) target = j;
  }
  ASSERT_NE(target, 0u);
  std::string bytes = read_file(chain.wtns(0));
  const size_t off = wtns_value_offset(bytes, target);
  const bool was_zero = std::all_of(bytes.begin() + off, bytes.begin() + off + 32, [](char b) { return b == 0; });
  std::fill(bytes.begin() + off, bytes.begin() + off + 32, 0);
  if (was_zero) bytes[off] = 1;
  const std::string wtns = dir / "edited.wtns";
  write_text(wtns, bytes);

  const std::string out_proof = dir / "out.proof.json", out_public = dir / "out.public.json";
  const std::string cmd = std::string(ZKFARM_PROVE_BIN) + " --backend cpu '" + chain.zkey() + "' '" + wtns + "' '" +
                          out_proof + "' '" + out_public + "' 2>'" + (dir / "stderr.txt") + "' >/dev/null";
  const int status = std::system(cmd.c_str());
  ASSERT_TRUE(WIFEXITED(status));
  EXPECT_EQ(WEXITSTATUS(status), 2);
  const std::string err = read_file(dir / "stderr.txt");
  EXPECT_EQ(std::count(err.begin(), err.end(), '\n'), 1) << err;
  EXPECT_NE(err.find("zkfarm-prove: " + wtns + ": the proof does not verify"), std::string::npos) << err;
  EXPECT_NE(err.find("does not satisfy the circuit"), std::string::npos) << err;
  EXPECT_FALSE(fs::exists(out_proof));
  EXPECT_FALSE(fs::exists(out_public));

  // The untouched witness proves (the check is not refusing everything).
  const std::string ok = std::string(ZKFARM_PROVE_BIN) + " --backend cpu '" + chain.zkey() + "' '" + chain.wtns(0) +
                         "' '" + out_proof + "' '" + out_public + "' 2>/dev/null >/dev/null";
  const int ok_status = std::system(ok.c_str());
  EXPECT_TRUE(WIFEXITED(ok_status) && WEXITSTATUS(ok_status) == 0);
  EXPECT_TRUE(fs::exists(out_proof));
}

}  // namespace
}  // namespace zkfarm
