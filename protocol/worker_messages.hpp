#pragma once
// The worker ↔ supervisor messages (workers.sock) as types: one struct per
// message, the decoder each side runs once where a frame arrives, and one
// encoder per message. Past the decoder nothing reads a field by name.
//
// Wire: unchanged, the MessagePack maps of messages.hpp with the keys of
// docs/protocol.md; the encoders write the bytes zkfarmd and its workers
// wrote before these types existed, so old and new interoperate.
//
// Refusals: a frame is refused (ProtocolError) for everything decode()
// refuses (size, depth and the other msgpack_limits.hpp checks, version:
// VersionError), for a type the receiving side does not take, and for a
// field missing or of the wrong type. The exception is a request whose ids
// decoded (MalformedRequest): the worker still answers it.
#include <cstdint>
#include <optional>
#include <string>
#include <string_view>
#include <utility>
#include <variant>

#include "protocol/messages.hpp"

namespace zkfarm::protocol {

/// Which piece of work a message is about: the partition and the arena slot
/// it lives in. SYNTH, PROVE and ABORT name it; STARTED, SYNTH_DONE and
/// PROVE_DONE echo it. The supervisor ignores an answer whose (slot,
/// generation) is no longer current (stale).
struct WorkRef {
  uint64_t job = 0;         ///< "job": the job's id
  uint32_t partition = 0;   ///< "partition": the partition's index in its job
  uint32_t slot = 0;        ///< "slot": the arena slot's id
  uint64_t generation = 0;  ///< "generation": the slot's generation when the request was sent
  bool operator==(const WorkRef&) const = default;
};

/// Where a partition's witness lies in the arena: bytes [offset, offset + size).
struct SlotSpan {
  uint64_t offset = 0;  ///< "offset": bytes from the start of the arena's slot space
  uint64_t size = 0;    ///< "size": bytes, at least the key's witness_bytes
  bool operator==(const SlotSpan&) const = default;
};

/// READY, worker → supervisor: sent once, first. All fields required.
struct Ready {
  std::string worker;   ///< "worker": the worker id, e.g. "synth-0"
  std::string kind;     ///< "kind": "synth" or "gpu"
  std::string version;  ///< "version": the binary's, e.g. "0.1.0"
  uint64_t pid = 0;     ///< "pid": the worker's own pid
  std::string backend;  ///< "backend": "cpu" or "cuda" (a synthesis worker: "cpu")
  bool operator==(const Ready&) const = default;
};

/// HEARTBEAT, both ways, every heartbeat_ms.
struct Heartbeat {
  /// "worker": the sender's worker id (worker → supervisor); empty, and not
  /// sent, from the supervisor.
  std::string worker;
  bool operator==(const Heartbeat&) const = default;
};

/// SYNTH's witness when the partition is a .wtns file.
struct WitnessFile {
  std::string path;  ///< "wtns": the farm's private copy (absolute path)
  bool operator==(const WitnessFile&) const = default;
};

/// SYNTH's witness when the partition is a circom input: the synthesis
/// worker makes it (the circuit's witness graph, else its generator). The
/// defaults are what a worker assumes when zkfarmd leaves a field out.
struct CircuitInput {
  std::string generator;   ///< "generator": the built generator (absolute path); its graph lies beside it
  std::string input;       ///< "input": the farm's copy of the input.json (absolute path)
  std::string input_name;  ///< "input_name": the path the client named, for messages (absent: `input`)
  uint64_t witness_timeout_ms = 600000;        ///< "witness_timeout_ms": the generator's wall-clock limit (ms)
  uint64_t witness_memory_mib = 0;             ///< "witness_memory_mib": its RLIMIT_DATA (MiB); 0: unbounded
  uint64_t witness_cpu_s = 600;                ///< "witness_cpu_s": its RLIMIT_CPU (s); 0: unbounded
  std::string sandbox_user = "zkfarm-sandbox";  ///< "sandbox_user": who circuit code runs as, under root
  uint64_t sandbox_uid_base = 0x70000000;       ///< "sandbox_uid_base": the uid pool (witgen/sandbox_uids.hpp)
  uint64_t sandbox_uid_count = 1024;            ///< "sandbox_uid_count": 0: every run as sandbox_user
  std::string witness_engine = "auto";         ///< "witness_engine": auto, graph or generator (checked by the worker)
  /// "statement": the circuit's input signals with their witness positions
  /// (witgen::signal_shapes_json, from the journal's circuit record); the
  /// witness's public inputs are checked against the input with it
  /// (witgen/statement_check.hpp). "" : not known (a circuit removed since).
  std::string statement;
  /// "graph_sha256": the SHA-256 of the circuit's witness graph as built
  /// and checked at `circuit add`; a graph file of another hash is not used
  /// (the generator makes the witness, and the worker says so). "" : no graph recorded.
  std::string graph_sha256;
  bool operator==(const CircuitInput&) const = default;
};

/// SYNTH, supervisor → synthesis worker: write the partition's witness into
/// its slot. With "generator" present the witness is a CircuitInput, else
/// "wtns" names a WitnessFile.
struct Synth {
  WorkRef ref;
  SlotSpan span;
  std::string zkey;  ///< "zkey": the farm's copy of the proving key (absolute path)
  std::variant<WitnessFile, CircuitInput> witness;
  /// "batch_of" (optional): the SYNTHs of this job sent to the worker
  /// together with this one, itself included. A worker that takes batches
  /// waits briefly for the rest before it starts (frames arrive one by one,
  /// and a slow sender lets the first be read alone). Absent, 0 or anything
  /// but a non-negative integer reads as 1.
  uint64_t batch_of = 1;
  bool operator==(const Synth&) const = default;
};

/// PROVE, supervisor → GPU worker: prove the witness in the slot (only read).
struct Prove {
  WorkRef ref;
  SlotSpan span;
  std::string zkey;  ///< "zkey": the farm's copy of the proving key (absolute path)
  /// "priority": 0 low … 3 critical; the worker starts the highest waiting
  /// first. Optional: absent, or anything but a non-negative integer, reads as 0.
  uint64_t priority = 0;
  bool operator==(const Prove&) const = default;
};

/// STARTED, worker → supervisor: the request it begins computing now.
struct Started {
  WorkRef ref;
  bool operator==(const Started&) const = default;
};

/// The outcome of one partition in a worker, as SYNTH_DONE and PROVE_DONE
/// carry it.
struct WorkResult {
  bool ok = true;  ///< "ok"
  /// "error", when !ok: one line naming the file and fault ("unknown error"
  /// when a worker's answer named none).
  std::string error;
  /// "proof" (bin), PROVE_DONE when ok: encode_proof()'s bytes (256 or 384);
  /// checking its size against the job's curve is the supervisor's.
  std::string proof;
  /// "key_cached", PROVE_DONE only (optional): the key was resident in the
  /// worker; a value that is not a boolean reads as absent.
  std::optional<bool> key_cached;
  /// "device_fault", PROVE_DONE when !ok (optional, sent only when true):
  /// the prove step faulted on the device (an allocation refused, a launch
  /// without resources) and the device is still usable, so the partition is
  /// not at fault: the supervisor proves it again, counting an attempt
  /// (max_attempts). Absent, false or not a boolean: the partition's own
  /// fault (its job fails).
  bool device_fault = false;

  static WorkResult failure(std::string message) { return {false, std::move(message), {}, std::nullopt, false}; }
  /// A failure of the device, not of the partition (device_fault).
  static WorkResult device_failure(std::string message) {
    return {false, std::move(message), {}, std::nullopt, true};
  }
  bool operator==(const WorkResult&) const = default;
};

/// SYNTH_DONE, synthesis worker → supervisor. Its result has no proof nor
/// key_cached (the encoder leaves them out).
struct SynthDone {
  WorkRef ref;
  WorkResult result;
  bool operator==(const SynthDone&) const = default;
};

/// PROVE_DONE, GPU worker → supervisor; ok with a proof.
struct ProveDone {
  WorkRef ref;
  WorkResult result;
  bool operator==(const ProveDone&) const = default;
};

/// ABORT, supervisor → worker: abandon the partition it holds under `ref`.
struct Abort {
  WorkRef ref;
  bool operator==(const Abort&) const = default;
};

/// SHUTDOWN, supervisor → worker: finish what it holds, answer it, exit 0.
struct Shutdown {
  bool operator==(const Shutdown&) const = default;
};

/// What a worker may send.
using FromWorker = std::variant<Ready, Heartbeat, Started, SynthDone, ProveDone>;
/// What the supervisor may send.
using FromSupervisor = std::variant<Heartbeat, Synth, Prove, Abort, Shutdown>;

/// A SYNTH or PROVE whose ids (WorkRef) decoded but another field did not:
/// the worker answers it ok:false ("malformed SYNTH: missing field \"wtns\"").
/// Without the ids there is nobody to answer: a plain ProtocolError.
class MalformedRequest : public ProtocolError {
 public:
  MalformedRequest(const char* type, WorkRef ref, const std::string& what)
      : ProtocolError(what), type_(type), ref_(ref) {}
  /// kSynth or kProve.
  const char* type() const { return type_; }
  const WorkRef& ref() const { return ref_; }

 private:
  const char* type_;
  WorkRef ref_;
};

/// The typed message in a decoded map (decode()); ProtocolError when its
/// type is not one a worker sends, or a field is missing or of the wrong
/// type (integers: negative or out of range).
FromWorker from_worker(const Message& msg);
/// decode(frame), then from_worker: every refusal of both.
FromWorker decode_from_worker(std::string_view frame);

/// The typed message in a decoded map; ProtocolError when its type is not
/// one the supervisor sends, or a field is missing or of the wrong type;
/// MalformedRequest for a SYNTH or PROVE with its ids but a bad field.
FromSupervisor from_supervisor(const Message& msg);
/// decode(frame), then from_supervisor: every refusal of both.
FromSupervisor decode_from_supervisor(std::string_view frame);

/// One frame per message (MessagePack bytes). The only builders of these
/// messages, on both sides.
std::string encode(const Ready& m);
std::string encode(const Heartbeat& m);
std::string encode(const Synth& m);
std::string encode(const Prove& m);
std::string encode(const Started& m);
std::string encode(const SynthDone& m);
std::string encode(const ProveDone& m);
std::string encode(const Abort& m);
std::string encode(const Shutdown& m);

}  // namespace zkfarm::protocol
