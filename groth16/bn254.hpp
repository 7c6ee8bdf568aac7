#pragma once
// BN254 (snarkjs/circom's "bn128"): base field Fq, scalar field Fr, Fq2 = Fq[u]/(u²+1),
// G1: y² = x³ + 3 over Fq, G2: y² = x³ + 3/(9+u) over Fq2.
// Constants: EIP-196/197 and snarkjs's ffjavascript (bn128.js); the Montgomery
// constants were computed with Python integers (tests/vectors/ checks them).
#include "groth16/curve.hpp"
#include "groth16/curve_id.hpp"
#include "groth16/field.hpp"
#include "groth16/fp2.hpp"
#include "groth16/pairing_family.hpp"

namespace zkfarm {

struct FqParams {
  // q = 21888242871839275222246405745257275088696311157297823662689037894645226208583
  static constexpr uint64_t kModulus[4] = {0x3c208c16d87cfd47ULL, 0x97816a916871ca8dULL,
                                           0xb85045b68181585dULL, 0x30644e72e131a029ULL};
  static constexpr uint64_t kR2[4] = {0xf32cfc5b538afa89ULL, 0xb5e71911d44501fbULL,
                                      0x47ab1eff0a417ff6ULL, 0x06d89f71cab8351fULL};
  static constexpr uint64_t kOne[4] = {0xd35d438dc58f0d9dULL, 0x0a78eb28f5c70b3dULL,
                                       0x666ea36f7879462cULL, 0x0e0a77c19a07df2fULL};
  static constexpr uint64_t kInv = 0x87d20782e4866389ULL;
};

struct FrParams {
  // r = 21888242871839275222246405745257275088548364400416034343698204186575808495617
  static constexpr uint64_t kModulus[4] = {0x43e1f593f0000001ULL, 0x2833e84879b97091ULL,
                                           0xb85045b68181585dULL, 0x30644e72e131a029ULL};
  static constexpr uint64_t kR2[4] = {0x1bb8e645ae216da7ULL, 0x53fe3ab1e35c59e3ULL,
                                      0x8c49833d53bb8085ULL, 0x0216d0b17f4e44a5ULL};
  static constexpr uint64_t kOne[4] = {0xac96341c4ffffffbULL, 0x36fc76959f60cd29ULL,
                                       0x666ea36f7879462eULL, 0x0e0a77c19a07df2fULL};
  static constexpr uint64_t kInv = 0xc2e1f593efffffffULL;
};

using Fq = Fp<FqParams>;
using Fr = Fp<FrParams>;

inline const U256 kFqModulus{FqParams::kModulus[0], FqParams::kModulus[1], FqParams::kModulus[2],
                             FqParams::kModulus[3]};
inline const U256 kFrModulus{FrParams::kModulus[0], FrParams::kModulus[1], FrParams::kModulus[2],
                             FrParams::kModulus[3]};

/// Fq2 = Fq[u]/(u² + 1); 64 bytes, c0 then c1 (snarkjs's order).
using Fq2 = Fp2<Fq>;

/// The curve constant b in Montgomery form, as the curve template wants it.
struct G1Params {
  using Field = Fq;
  static Fq b() { return Fq::from_mont({0x7a17caa950ad28d7ULL, 0x1f6ac17ae15521b9ULL,
                                        0x334bea4e696bd284ULL, 0x2a1f6744ce179d8eULL}); }
};
struct G2Params {
  using Field = Fq2;
  // 3/(9+u) = 19485874751759354771024239261021720505790618469301721065564631296452457478373
  //         + 266929791119991161246907387137283842545076965332900288569378510910307636690·u
  static Fq2 b() {
    return {Fq::from_mont({0x3bf938e377b802a8ULL, 0x020b1b273633535dULL, 0x26b7edf049755260ULL,
                           0x2514c6324384a86dULL}),
            Fq::from_mont({0x38e7ecccd1dcff67ULL, 0x65f0b37d93ce0d3eULL, 0xd749d0dd22ac00aaULL,
                           0x0141b9ce4a688d4dULL})};
  }
};

using G1Affine = Affine<G1Params>;
using G2Affine = Affine<G2Params>;
using G1 = Xyzz<G1Params>;
using G2 = Xyzz<G2Params>;

/// Bytes of one affine point as a zkey stores it: G1 64, G2 128.
inline constexpr size_t kG1Bytes = 64;
inline constexpr size_t kG2Bytes = 128;

/// Largest domain: 2^28 points (Fr's 2-adicity: r − 1 = 2^28·t, t odd).
inline constexpr uint32_t kMaxLogDomain = 28;

/// BN254 as a curve-traits type, for code templated on the curve
/// (bls12_381.hpp has the other): its fields, groups, sizes, and the data of
/// snarkjs's roots of unity (ffjavascript: nqr the smallest non-residue from 2,
/// w[s] = nqr^((r−1)/2^s)).
struct Bn254 {
  /// The "curve" snarkjs writes into proof.json and verification keys.
  static constexpr const char* kName = "bn128";
  static constexpr CurveId kId = CurveId::bn254;
  using Fq = zkfarm::Fq;
  using Fr = zkfarm::Fr;
  using Fq2 = zkfarm::Fq2;
  using G1Params = zkfarm::G1Params;
  using G2Params = zkfarm::G2Params;
  static constexpr size_t kG1Bytes = zkfarm::kG1Bytes;
  static constexpr size_t kG2Bytes = zkfarm::kG2Bytes;
  static constexpr uint32_t kTwoAdicity = kMaxLogDomain;
  /// Bits of r (r < 2^254): the MSM's scalars have at most this many.
  static constexpr unsigned kFrBits = 254;
  /// G1 is the whole curve (cofactor 1): a point on it is in the group.
  static constexpr bool kG1CofactorIsOne = true;
  static constexpr uint64_t kNqr = 5;

  // The pairing (pairing.hpp; EIP-197, Vercauteren 2010).
  static constexpr PairingFamily kPairingFamily = PairingFamily::bn;
  /// |x| of the BN parameter x = 4965661367192848881 > 0:
  /// q = 36x⁴ + 36x³ + 24x² + 6x + 1, r = 36x⁴ + 36x³ + 18x² + 6x + 1.
  static constexpr uint64_t kX = 4965661367192848881ULL;
  static constexpr bool kXNegative = false;
  /// ξ = 9 + u (kXiC0 + u): Fq6 = Fq2[v]/(v³ − ξ), Fq12 = Fq6[w]/(w² − v).
  static constexpr uint64_t kXiC0 = 9;
  /// G2 on y² = x³ + 3/ξ.
  static constexpr TwistType kTwist = TwistType::d;

  /// (1, 2), and the generator of EIP-197.
  static G1Affine g1_generator() { return {Fq::from_u64(1), Fq::from_u64(2)}; }
  static G2Affine g2_generator() {
    return {{Fq::from_mont({0x8e83b5d102bc2026ULL, 0xdceb1935497b0172ULL, 0xfbb8264797811adfULL, 0x19573841af96503bULL}),
             Fq::from_mont({0xafb4737da84c6140ULL, 0x6043dd5a5802d8c4ULL, 0x09e950fc52a02f86ULL, 0x14fef0833aea7b6bULL})},
            {Fq::from_mont({0x619dfa9d886be9f6ULL, 0xfe7fd297f59e9b78ULL, 0xff9e1a62231b7dfeULL, 0x28fd7eebae9e4206ULL}),
             Fq::from_mont({0x64095b56c71856eeULL, 0xdc57f922327d3cbbULL, 0x55f935be33351076ULL, 0x0da4a0e693fd6482ULL})}};
  }
};

}  // namespace zkfarm
