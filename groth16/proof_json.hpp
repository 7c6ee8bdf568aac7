#pragma once
// proof.json and public.json exactly as snarkjs 0.7 writes them
// (JSON.stringify(stringifyBigInts(x), null, 1), no trailing newline):
// pi_a [x, y, "1"], pi_b [[x.c0, x.c1], [y.c0, y.c1], ["1", "0"]], pi_c [x, y, "1"],
// protocol "groth16", curve "bn128" or "bls12381"; public signals
// witness[1..nPublic], decimal.
#include <nlohmann/json.hpp>
#include <string>
#include <string_view>

#include "groth16/prover.hpp"

namespace zkfarm {

/// A G1 point (of either curve) as snarkjs's G1.toObject writes it: [x, y, "1"]
/// in decimal, infinity ["0", "1", "0"]. P: G1Params of a curve.
template <class P>
nlohmann::ordered_json g1_to_json(const Affine<P>& p);
/// A G2 point: [[x.c0, x.c1], [y.c0, y.c1], ["1", "0"]].
template <class P>
nlohmann::ordered_json g2_to_json(const Affine<P>& p);

/// The text of proof.json for `proof`, with "curve": C::kName.
template <class C>
std::string proof_to_json(const ProofOf<C>& proof);

/// The text of public.json: witness values 1..n_public as decimal strings.
std::string public_to_json(const U256* witness, size_t n_public);

/// Writes `text` to `path` atomically: a temporary file in the same folder,
/// fsync, rename. Throws InputError naming `path` when it cannot be written.
void write_file_atomic(const std::string& path, std::string_view text);

/// The same with the bytes of the open file `src_fd` (read from its start,
/// not loaded into memory first: files::copy_into); a source that changes
/// while it is copied is refused. `src_name` names it in messages. Throws
/// InputError naming the fault.
void copy_file_atomic(const std::string& path, int src_fd, const std::string& src_name);

}  // namespace zkfarm
