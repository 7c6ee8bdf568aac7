#pragma once
// BLS12-381 (snarkjs/circom's "bls12381"; Filecoin's and sppark's curve): base
// field Fq of 381 bits (6×64-bit limbs, n8q = 48), scalar field Fr of 255
// bits (4 limbs, n8r = 32), Fq2 = Fq[u]/(u² + 1), G1: y² = x³ + 4 over Fq,
// G2: y² = x³ + 4(1 + u) over Fq2 (the M-type twist).
// Sources: draft-irtf-cfrg-pairing-friendly-curves-11 §4.2.1 (q, r, b, the
// generators), the same values in zkcrypto's bls12_381 and ffjavascript's
// bls12381.js (snarkjs's); Montgomery constants computed with Python integers
// by tests/vectors/bls12_381_ref.py, which also checks them, and the C++ is
// tested against its vectors (tests/vectors/bls12_381.txt).
#include "groth16/curve.hpp"
#include "groth16/curve_id.hpp"
#include "groth16/field.hpp"
#include "groth16/fp2.hpp"
#include "groth16/pairing_family.hpp"

namespace zkfarm::bls12_381 {

struct FqParams {
  // q = 0x1a0111ea397fe69a4b1ba7b6434bacd764774b84f38512bf6730d2a0f6b0f6241eabfffeb153ffffb9feffffffffaaab
  static constexpr uint64_t kModulus[6] = {0xb9feffffffffaaabULL, 0x1eabfffeb153ffffULL, 0x6730d2a0f6b0f624ULL,
                                           0x64774b84f38512bfULL, 0x4b1ba7b6434bacd7ULL, 0x1a0111ea397fe69aULL};
  static constexpr uint64_t kR2[6] = {0xf4df1f341c341746ULL, 0x0a76e6a609d104f1ULL, 0x8de5476c4c95b6d5ULL,
                                      0x67eb88a9939d83c0ULL, 0x9a793e85b519952dULL, 0x11988fe592cae3aaULL};
  static constexpr uint64_t kOne[6] = {0x760900000002fffdULL, 0xebf4000bc40c0002ULL, 0x5f48985753c758baULL,
                                       0x77ce585370525745ULL, 0x5c071a97a256ec6dULL, 0x15f65ec3fa80e493ULL};
  static constexpr uint64_t kInv = 0x89f3fffcfffcfffdULL;
};

struct FrParams {
  // r = 0x73eda753299d7d483339d80809a1d80553bda402fffe5bfeffffffff00000001
  static constexpr uint64_t kModulus[4] = {0xffffffff00000001ULL, 0x53bda402fffe5bfeULL, 0x3339d80809a1d805ULL,
                                           0x73eda753299d7d48ULL};
  static constexpr uint64_t kR2[4] = {0xc999e990f3f29c6dULL, 0x2b6cedcb87925c23ULL, 0x05d314967254398fULL,
                                      0x0748d9d99f59ff11ULL};
  static constexpr uint64_t kOne[4] = {0x00000001fffffffeULL, 0x5884b7fa00034802ULL, 0x998c4fefecbc4ff5ULL,
                                       0x1824b159acc5056fULL};
  static constexpr uint64_t kInv = 0xfffffffeffffffffULL;
};

using Fq = Fp<FqParams>;
using Fr = Fp<FrParams>;
/// 96 bytes, c0 then c1.
using Fq2 = Fp2<Fq>;

struct G1Params {
  using Field = Fq;
  /// b = 4, Montgomery form.
  static Fq b() {
    return Fq::from_mont({0xaa270000000cfff3ULL, 0x53cc0032fc34000aULL, 0x478fe97a6b0a807fULL, 0xb1d37ebee6ba24d7ULL,
                          0x8ec9733bbf78ab2fULL, 0x09d645513d83de7eULL});
  }
};
struct G2Params {
  using Field = Fq2;
  /// b' = 4(1 + u).
  static Fq2 b() { return {G1Params::b(), G1Params::b()}; }
};

using G1Affine = Affine<G1Params>;
using G2Affine = Affine<G2Params>;
using G1 = Xyzz<G1Params>;
using G2 = Xyzz<G2Params>;

/// The curve's traits (the same members as zkfarm::Bn254).
struct Curve {
  static constexpr const char* kName = "bls12381";
  static constexpr CurveId kId = CurveId::bls12_381;
  using Fq = bls12_381::Fq;
  using Fr = bls12_381::Fr;
  using Fq2 = bls12_381::Fq2;
  using G1Params = bls12_381::G1Params;
  using G2Params = bls12_381::G2Params;
  /// Affine points as a zkey stores them: G1 96 bytes, G2 192.
  static constexpr size_t kG1Bytes = 2 * Fq::kBytes;
  static constexpr size_t kG2Bytes = 2 * Fq2::kBytes;
  /// r − 1 = 2^32·t, t odd; snarkjs's nqr is 5 (as for BN254).
  static constexpr uint32_t kTwoAdicity = 32;
  /// Bits of r (2^254 < r < 2^255).
  static constexpr unsigned kFrBits = 255;
  /// G1's cofactor is (x−1)²/3, not 1: points must be checked for r·P = O.
  static constexpr bool kG1CofactorIsOne = false;
  static constexpr uint64_t kNqr = 5;

  // The pairing (pairing.hpp; draft-irtf-cfrg-pairing-friendly-curves-11 §4.2.1).
  static constexpr PairingFamily kPairingFamily = PairingFamily::bls12;
  /// |x| of x = −0xd201000000010000 (64 bits, 6 set):
  /// r = x⁴ − x² + 1, q = (x − 1)²(x⁴ − x² + 1)/3 + x.
  static constexpr uint64_t kX = 0xd201000000010000ULL;
  static constexpr bool kXNegative = true;
  /// ξ = 1 + u (kXiC0 + u): Fq6 = Fq2[v]/(v³ − ξ), Fq12 = Fq6[w]/(w² − v).
  static constexpr uint64_t kXiC0 = 1;
  /// G2 on y² = x³ + 4ξ.
  static constexpr TwistType kTwist = TwistType::m;
  /// (q⁴ − q² + 1)/r, the hard part of the final exponentiation (1268 bits),
  /// little-endian limbs. Computed with Python integers (the division is
  /// exact; the tests check r times this is q⁴ − q² + 1).
  static constexpr Limbs<20> kHardExponent = {
      0xe516c3f438e3ba79ULL, 0xfa9912aae208ccf1ULL, 0x905ce937335d5b68ULL, 0xc71a2629b0dea236ULL,
      0x83774940996754c8ULL, 0x21d160aeb6a1e799ULL, 0x2ed0b283ed237db4ULL, 0x915c97f36c6f1821ULL,
      0x67f17fcbde783765ULL, 0x2378b9039096d1b7ULL, 0x7988f8761bdc51dcULL, 0x2076995003fc77a1ULL,
      0x827eca0ba621315bULL, 0xe5a72bce8d63cb9fULL, 0xf68f7764c28b6f8aULL, 0x2f230063cf081517ULL,
      0x94506632528d6a9aULL, 0xd3cde88eeb996ca3ULL, 0xc0bd38c3195c899eULL, 0x000f686b3d807d01ULL};

  static G1Affine g1_generator() {
    return {Fq::from_mont({0x5cb38790fd530c16ULL, 0x7817fc679976fff5ULL, 0x154f95c7143ba1c1ULL, 0xf0ae6acdf3d0e747ULL,
                           0xedce6ecc21dbf440ULL, 0x120177419e0bfb75ULL}),
            Fq::from_mont({0xbaac93d50ce72271ULL, 0x8c22631a7918fd8eULL, 0xdd595f13570725ceULL, 0x51ac582950405194ULL,
                           0x0e1c8c3fad0059c0ULL, 0x0bbc3efc5008a26aULL})};
  }
  static G2Affine g2_generator() {
    return {{Fq::from_mont({0xf5f28fa202940a10ULL, 0xb3f5fb2687b4961aULL, 0xa1a893b53e2ae580ULL, 0x9894999d1a3caee9ULL,
                            0x6f67b7631863366bULL, 0x058191924350bcd7ULL}),
             Fq::from_mont({0xa5a9c0759e23f606ULL, 0xaaa0c59dbccd60c3ULL, 0x3bb17e18e2867806ULL, 0x1b1ab6cc8541b367ULL,
                            0xc2b6ed0ef2158547ULL, 0x11922a097360edf3ULL})},
            {Fq::from_mont({0x4c730af860494c4aULL, 0x597cfa1f5e369c5aULL, 0xe7e6856caa0a635aULL, 0xbbefb5e96e0d495fULL,
                            0x07d3a975f0ef25a2ULL, 0x0083fd8e7e80dae5ULL}),
             Fq::from_mont({0xadc0fc92df64b05dULL, 0x18aa270a2b1461dcULL, 0x86adac6a3be4eba0ULL, 0x79495c4ec93da33aULL,
                            0xe7175850a43ccaedULL, 0x0b2bc2a163de1bf2ULL})}};
  }
};

}  // namespace zkfarm::bls12_381
