#pragma once
// The statement a partition of circom inputs proves: the public signals of
// its witness that are inputs of the circuit must hold the input's values
// (issue 45). Whatever made the witness (the circuit's witness graph, its
// generator), a witness whose public inputs differ from the input submitted
// would yield a proof that verifies -- of another statement. This check runs
// on the witness in its arena slot, before the GPU worker proves it.
//
// Where each input lies in the witness comes from the circuit's generator at
// `circuit add` (SignalShape::at, its input hash map), kept in the journal's
// circuit record: not from the graph file, which is what it guards.
#include <cstdint>
#include <stdexcept>
#include <string>
#include <vector>

#include "witgen/input_json.hpp"

namespace zkfarm::witgen {

/// A witness whose public inputs are not the input's. what() names the
/// signal (name[index]), its witness index and both values, in decimal.
struct StatementError : std::runtime_error {
  using std::runtime_error::runtime_error;
};

/// Checks `witness` (count values of 32 bytes, little-endian canonical
/// residues: an arena slot) against `input` (the input.json text) for the
/// circuit's `inputs` (with witness positions) and `n_public` public signals
/// (witness indices 1..n_public). Only inputs with a known position (at > 0)
/// are checked; values at indices beyond n_public are private and left
/// alone. `prime_le`: the scalar field's modulus. Throws StatementError on a
/// difference, InputFault when the input does not parse (it was checked at
/// submit, so only a changed copy fails here).
void check_statement(std::string_view input, const std::vector<uint8_t>& prime_le,
                     const std::vector<SignalShape>& inputs, uint32_t n_public, const uint8_t* witness,
                     uint32_t count);

/// The same for the input in file `input_fd` (read from its start, at most
/// 256 MiB) and `statement`, the circuit's inputs as signal_shapes_json
/// wrote them ("" : nothing to check). Throws StatementError, InputFault.
void check_statement_fd(int input_fd, const std::string& statement, const std::vector<uint8_t>& prime_le,
                        uint32_t n_public, const uint8_t* witness, uint32_t count);

}  // namespace zkfarm::witgen
