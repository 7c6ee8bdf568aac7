#include "protocol/work_request.hpp"

#include "groth16/errors.hpp"

namespace zkfarm::protocol {

U256* request_witness(const Message& req, const shm::Arena& arena, const Zkey& key) {
  const uint64_t offset = get_u64(req, "offset");
  const uint64_t size = get_u64(req, "size");
  const uint64_t need = witness_bytes(key);
  if (size < need) {
    throw ProtocolError("slot of " + std::to_string(size) + " bytes at offset " + std::to_string(offset) +
                        " is too small: " + key.path + " needs " + std::to_string(need) + " bytes");
  }
  if (offset % 8 != 0) throw ProtocolError("slot offset " + std::to_string(offset) + " is not 8-byte aligned");
  return reinterpret_cast<U256*>(arena.at(offset, size));
}

WorkResult run_step(const std::function<WorkResult()>& step) {
  try {
    return step();
  } catch (const InputError& e) {
    return WorkResult::failure(e.what());
  } catch (const shm::ArenaError& e) {
    return WorkResult::failure(e.what());
  } catch (const Cancelled& e) {
    return WorkResult::failure(e.what());
  }
}

}  // namespace zkfarm::protocol
