#pragma once
// Montgomery multiplication of many 4-limb field elements at once (the
// witness graph's lanes, witgen/graph_eval.cpp): with AVX-512 IFMA, 8 lanes
// a step in 52-bit limbs; elsewhere the caller's scalar product. Chosen at
// run time by CPUID, so one binary runs on every x86-64; the results are the
// scalar product's, byte for byte (both are the unique canonical
// a·b·2⁻²⁵⁶ mod p).
//
// Radix 2⁵², 5 limbs (a < p < 2²⁵⁴): the product's 10 columns by
// vpmadd52luq/vpmadd52huq, then Montgomery's reduction in four rounds of 52
// bits and one of 48 (256 bits in all: R = 2²⁵⁶ as in field.hpp, so no
// correction factor), the result < 2p brought below p by one subtraction.
// The reduction follows Gueron and Krasnov, "Accelerating big integer
// arithmetic using Intel IFMA extensions" (ARITH 2016), and Drucker and
// Gueron, "Fast modular squaring with AVX512IFMA" (2018).
#include <cstddef>
#include <cstdint>

namespace zkfarm {

/// True when this CPU has AVX-512F and AVX-512 IFMA (CPUID, asked once) and
/// ZKFARM_NO_IFMA is not set in the environment (to compare or to rule it out).
bool ifma_lanes_available();

/// r[i] = a[i]·b[i]·2⁻²⁵⁶ mod p for i < n, n a multiple of 8: elements of 4
/// little-endian 64-bit limbs below p, side by side (32 bytes each); a
/// stride of 0 repeats element 0 (a constant), 1 walks the lanes. r may be a
/// or b (each group of 8 is read before it is written). `p`: a prime below
/// 2²⁵⁴; `inv`: −p⁻¹ mod 2⁶⁴ (field.hpp's kInv). Only where
/// ifma_lanes_available().
void mont_mul_lanes_ifma(const uint64_t* a, size_t a_stride, const uint64_t* b, size_t b_stride, uint64_t* r,
                         size_t n, const uint64_t p[4], uint64_t inv);

/// r[i] = a[i]·2⁻²⁵⁶ mod p for i < n, n a multiple of 8, consecutive elements
/// (stride 1): Montgomery form back to the canonical integer (Fp::to_int),
/// the product by the integer 1 without its multiplications (half the
/// work of mont_mul_lanes_ifma). r may be a. Only where ifma_lanes_available().
void mont_reduce_lanes_ifma(const uint64_t* a, uint64_t* r, size_t n, const uint64_t p[4], uint64_t inv);

}  // namespace zkfarm
