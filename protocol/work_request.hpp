#pragma once
// What both workers do with a SYNTH or PROVE request around their own step:
// find the partition's witness in the arena slot the request names, and turn
// the faults the inputs can cause into an ok:false answer.
#include <functional>

#include "groth16/prover.hpp"
#include "protocol/worker_channel.hpp"
#include "shm/arena.hpp"

namespace zkfarm::protocol {

/// The witness of the request's slot (fields offset and size, bytes): the
/// key's n_vars values of 32 bytes, written by a synthesis worker (SYNTH) and
/// only read by a GPU worker (PROVE). Throws ProtocolError when the fields are
/// missing, the slot is smaller than witness_bytes(key) or not 8-byte aligned;
/// shm::ArenaError when it lies outside the arena.
U256* request_witness(const Message& req, const shm::Arena& arena, const Zkey& key);

/// Runs `step`; an InputError (bad key or witness), shm::ArenaError or
/// Cancelled (ABORT) becomes WorkResult::failure with its message.
WorkResult run_step(const std::function<WorkResult()>& step);

}  // namespace zkfarm::protocol
