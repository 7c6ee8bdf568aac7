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

/// `job`: one job; with `wait_ms`, a long poll that is answered once the job
/// differs from what the client saw (`seen_state`, `seen_done`) or the time passes.
struct JobQuery {
  uint64_t job = 0;
  uint64_t wait_ms = 0;                   ///< 0: answer at once
  std::optional<std::string> seen_state;  ///< the state the client saw last
  std::optional<uint64_t> seen_done;      ///< the proved partitions it saw last
};
Message to_message(const JobQuery& q);
/// Throws ProtocolError when `job` is missing or a field is of another type.
JobQuery decode_job(const Message& req);

/// `jobs`: a page of the job list, newest first.
struct JobsPage {
  std::optional<std::string> state;  ///< only jobs in this state
  std::optional<uint64_t> limit;     ///< jobs a page (zkfarmd clamps it)
  std::optional<uint64_t> before;    ///< the cursor: only ids below it
  std::optional<uint64_t> since_ms;  ///< only jobs submitted at or after (Unix ms)
};
Message to_message(const JobsPage& q);
JobsPage decode_jobs(const Message& req);

/// `cancel`: the live job `job` ends cancelled.
struct Cancel {
  uint64_t job = 0;
};
Message to_message(const Cancel& c);
Cancel decode_cancel(const Message& req);

/// `stop`: a graceful stop; the drain ends after `timeout_s` when given, and
/// with `wait` the reply comes as zkfarmd exits. With `now`, no drain: every
/// worker is killed at once (what `kill` without a worker did).
struct Stop {
  std::optional<uint64_t> timeout_s;
  bool wait = false;
  bool now = false;
};
Message to_message(const Stop& s);
Stop decode_stop(const Message& req);

/// `kill_worker`: SIGKILL to the one worker `worker` (an id: synth-0, gpu-1);
/// the worker table then restarts it as after a crash. A request type of its
/// own, so that a zkfarmd that does not know it refuses it instead of
/// reading it as `kill` (the whole farm).
struct KillWorker {
  std::string worker;
};
Message to_message(const KillWorker& k);
KillWorker decode_kill_worker(const Message& req);

/// `restart` (workers named by `target`: an id, synth, gpu or all) or
/// `upgrade` (new worker binaries, `synth` and/or `gpu`), one worker at a time.
struct Rolling {
  bool upgrade = false;               ///< the message type: upgrade, else restart
  std::string target;                 ///< restart only
  std::optional<std::string> synth;   ///< upgrade only: the new zkfarm-synth
  std::optional<std::string> gpu;     ///< upgrade only: the new zkfarm-gpu
};
Message to_message(const Rolling& r);
/// `req` of type restart (`target` must be there) or upgrade.
Rolling decode_rolling(const Message& req);

/// `circuit_add`: a circuit by name, its key and its witness generator's
/// source (circom's wasm folder, or with `c_dir` its C++ folder).
struct CircuitAdd {
  std::string name;
  std::string zkey;
  std::optional<std::string> wasm;       ///< circom --wasm output folder
  std::optional<std::string> c_dir;      ///< circom --c output folder (native code: admins only)
  std::optional<std::string> submitter;  ///< zkfarm-api's tenant (honoured from an admin only)
  std::vector<std::string> test_inputs;  ///< input.json paths the witness graph is checked on first
};
Message to_message(const CircuitAdd& c);
/// Throws ProtocolError when `name` or `zkey` is missing, or a field (a
/// test_inputs entry included) is of another type.
CircuitAdd decode_circuit_add(const Message& req);

/// `circuit_remove`: the circuit `name`.
struct CircuitRemove {
  std::string name;
};
Message to_message(const CircuitRemove& c);
CircuitRemove decode_circuit_remove(const Message& req);

}  // namespace zkfarm::protocol
