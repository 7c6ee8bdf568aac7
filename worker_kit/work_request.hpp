#pragma once
// What both workers do with a SYNTH or PROVE request around their own step:
// find the partition's witness in the arena slot the request names, and turn
// the faults the inputs can cause into an ok:false answer.
#include <functional>

#include "groth16/prover.hpp"
#include "protocol/worker_messages.hpp"
#include "shm/arena.hpp"

namespace zkfarm::worker_kit {

/// The witness in a request's slot (`span`: offset and size, bytes): the
/// key's n_vars values of 32 bytes, written by a synthesis worker (SYNTH) and
/// only read by a GPU worker (PROVE). Throws protocol::ProtocolError (the
/// request is malformed for this key) when the slot is smaller than
/// witness_bytes(key) or not 8-byte aligned; shm::ArenaError when it lies
/// outside the arena.
U256* request_witness(const protocol::SlotSpan& span, const shm::Arena& arena, const Zkey& key);

/// Runs `step`; an InputError (bad key or witness), shm::ArenaError or
/// Cancelled (ABORT) becomes WorkResult::failure with its message.
protocol::WorkResult run_step(const std::function<protocol::WorkResult()>& step);

}  // namespace zkfarm::worker_kit
