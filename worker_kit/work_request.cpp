#include "worker_kit/work_request.hpp"

#include "groth16/errors.hpp"

namespace zkfarm::worker_kit {

U256* request_witness(const protocol::SlotSpan& span, const shm::Arena& arena, const Zkey& key) {
  const uint64_t need = witness_bytes(key);
  if (span.size < need) {
    throw protocol::ProtocolError("slot of " + std::to_string(span.size) + " bytes at offset " +
                                  std::to_string(span.offset) + " is too small: " + key.path + " needs " +
                                  std::to_string(need) + " bytes");
  }
  if (span.offset % 8 != 0) {
    throw protocol::ProtocolError("slot offset " + std::to_string(span.offset) + " is not 8-byte aligned");
  }
  return reinterpret_cast<U256*>(arena.at(span.offset, span.size));
}

protocol::WorkResult run_step(const std::function<protocol::WorkResult()>& step) {
  try {
    return step();
  } catch (const InputError& e) {
    return protocol::WorkResult::failure(e.what());
  } catch (const shm::ArenaError& e) {
    return protocol::WorkResult::failure(e.what());
  } catch (const Cancelled& e) {
    return protocol::WorkResult::failure(e.what());
  }
}

}  // namespace zkfarm::worker_kit
