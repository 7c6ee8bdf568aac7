#pragma once
// Control requests (docs/protocol.md, control.sock) as types: each built by
// its client in one place (to_message) and decoded once where zkfarmd
// receives it (decode_*), so that the code behind the control API reads
// fields, not keys. Checks of meaning (absolute paths, how many partitions, a
// known priority) stay with the code that owns them; a decoder refuses only
// what no request of that type can be (a field of the wrong type, one that
// must be there and is not), with a ProtocolError naming the field.
#include <cstdint>
#include <optional>
#include <string>
#include <vector>

#include "protocol/messages.hpp"

namespace zkfarm::protocol {

/// `submit`: a job of witnesses (`zkey` + `wtns`) or, when `circuit` is set,
/// of circom inputs (`inputs`), one partition per path.
struct Submit {
  std::string zkey;                    ///< the key's path (witness jobs only)
  std::vector<std::string> wtns;       ///< one .wtns path per partition (witness jobs)
  std::optional<std::string> circuit;  ///< a registered circuit's name: a job of inputs
  std::vector<std::string> inputs;     ///< one input.json path per partition (input jobs)
  std::string priority = "normal";     ///< low, normal, high or critical (checked by intake)
  std::string out;                     ///< the output folder; "" = none (the client reads the proofs)
  std::string idempotency_key;         ///< zkfarmctl's key for zkfarm-api; zkfarmd does not read it
};

/// The `submit` message of `s` (only the fields of its kind of job).
Message to_message(const Submit& s);
/// The Submit of `req` (a message of type `submit`). A path list that is
/// missing or not a list reads as empty (intake refuses a job with none, in
/// its words); a list entry that is not a string, a `zkey` missing from a job
/// of witnesses, or a string field of another type throws ProtocolError.
Submit decode_submit(const Message& req);

/// `result`: a page of a finished job's proofs, from partition `from`.
struct Result {
  uint64_t job = 0;
  uint64_t from = 0;
};

Message to_message(const Result& r);
/// Throws ProtocolError when `job` is missing or either field is not an
/// unsigned integer.
Result decode_result(const Message& req);

}  // namespace zkfarm::protocol
