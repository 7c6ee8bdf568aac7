#pragma once
// Forced into a native generator's CIRCUIT.cpp (g++ -include): circom's
// Fr_copy, an assembly function (fr.asm) that moves one 40-byte FrElement,
// becomes an inline copy the compiler can fold into its loops. circom's
// generated code calls it for every constant and array it copies: 40 % of a
// Poseidon-heavy witness's time went to the calls (docs/performance.md).
// Same bytes moved, same result: the witnesses stay snarkjs's, byte for byte.
#include <cstring>

#include "fr.hpp"

static inline void zkfarm_fr_copy(PFrElement r, PFrElement a) { std::memcpy(r, a, sizeof(FrElement)); }
#define Fr_copy zkfarm_fr_copy
