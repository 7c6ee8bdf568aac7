#pragma once
// The witness graph file (docs/witness.md, "The witness graph"): a circuit's
// witness computation as a straight-line program of field operations, as the
// graph recorder (graph_recorder.cpp, run once per circuit) writes it. All
// integers little-endian.
//
//   "ZKWGRAPH"                 8 bytes
//   u32 version                kVersion
//   u32 curve                  1 BN254, 2 BLS12-381 (the scalar field r)
//   u32 input_values           values of the main component's inputs, flattened
//   u32 witness_size           values of the witness (a key's nVars)
//   u32 n_signals, then each:  u64 hash (circom's FNV-1a of the name), u32
//                              offset (into the input values), u32 size
//   u32 n_strings, then each:  u32 length, the bytes (log texts; at most kMaxString)
//   u32 n_consts, then each:   32 bytes, a canonical residue
//   u32 n_nodes, then each:    u8 op (graph_ops.hpp), u32 operand × 3 (unused: 0)
//   witness_size × u32         the value of each witness entry
//   (graph files zkfarm keeps add the SHA-256 of everything before it, 64 hex digits)
//
// An operand or witness entry is a reference: its top two bits say what it
// names, the other 30 its index: a node before the one that reads it (one
// with a value), a constant, or an input value. kLogText's second operand is
// a string index instead.
#include <cstdint>

#include "groth16/curve_id.hpp"

namespace zkfarm::witgen::graph {

inline constexpr char kMagic[8] = {'Z', 'K', 'W', 'G', 'R', 'A', 'P', 'H'};
inline constexpr uint32_t kVersion = 1;
/// The file's number for a curve: its CurveId + 1 (0 names none). Code
/// that handles a curve goes through graph_curve_id (graph_file.hpp) and the
/// groth16 curve list, never through these numbers one by one.
constexpr uint32_t graph_curve_number(CurveId c) { return uint32_t(c) + 1; }
inline constexpr uint32_t kCurveBn254 = graph_curve_number(CurveId::bn254);
inline constexpr uint32_t kCurveBls12381 = graph_curve_number(CurveId::bls12_381);
static_assert(kCurveBn254 == 1 && kCurveBls12381 == 2, "graph files written so far hold these numbers");
inline constexpr uint32_t kMaxString = 4096;

/// What a reference names (its top two bits).
enum class RefKind : uint32_t { kNode = 0, kConst = 1, kInput = 2 };
inline constexpr uint32_t kIndexBits = 30;
inline constexpr uint32_t kIndexMask = (uint32_t(1) << kIndexBits) - 1;
inline constexpr uint32_t make_ref(RefKind k, uint32_t index) { return (uint32_t(k) << kIndexBits) | index; }
inline constexpr RefKind ref_kind(uint32_t ref) { return RefKind(ref >> kIndexBits); }
inline constexpr uint32_t ref_index(uint32_t ref) { return ref & kIndexMask; }

/// Exit code of a recorder that found the circuit cannot be a static graph
/// (its stdout says where and why), and of one past its node limit.
inline constexpr int kExitNotStatic = 5;
inline constexpr int kExitTooLarge = 6;

}  // namespace zkfarm::witgen::graph
