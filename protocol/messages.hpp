#pragma once
// The messages between zkfarmd, its workers and zkfarmctl.
//
// Wire format: one frame per message (a ZeroMQ frame after the ROUTER identity
// frame on workers.sock; a length-prefixed frame on control.sock), holding a MessagePack map (nlohmann::json's encoder)
// with at least {"v": kProtocolVersion, "t": TYPE}. Large data never travels
// here: partitions move through the shared-memory arena, messages carry only
// slot ids, offsets, sizes, generations, states, paths and the proof (256 or 384 bytes).
//
// Pairing rules:
//  - Workers (DEALER) ↔ supervisor (ROUTER, ipc://STATE/workers.sock): a worker
//    sends READY first and HEARTBEAT every heartbeat interval; the supervisor
//    sends SYNTH one at a time to an idle synthesis worker, PROVE up to
//    gpu_queue_depth at a time to a GPU worker (which queues them, highest
//    "priority" first); the worker says STARTED when one begins computing and
//    answers SYNTH_DONE / PROVE_DONE, each carrying the same job, partition,
//    slot and generation; ABORT withdraws one; SHUTDOWN asks a worker to
//    finish what it holds and exit 0.
//  - zkfarmctl ↔ supervisor (STATE/control.sock, a Unix stream socket whose
//    frames carry a 4-byte length: protocol/stream_frame.hpp): strictly one
//    request, one reply {"ok": true, ...} or {"ok": false, "error": TEXT}.
// docs/protocol.md lists every type and field.
#include <cstdint>
#include <nlohmann/json.hpp>
#include <optional>
#include <stdexcept>
#include <string>
#include <string_view>
#include <utility>

namespace zkfarm::protocol {

/// Increment whenever a message's meaning or a required field changes.
inline constexpr int kProtocolVersion = 1;
/// Frames larger than this are dropped unread (bytes).
inline constexpr size_t kMaxFrameBytes = 1 << 20;

using Message = nlohmann::json;

/// A message that does not decode or lacks a field of the right type. The
/// receiver logs it and drops the message; it never ends a process.
class ProtocolError : public std::runtime_error {
 public:
  using std::runtime_error::runtime_error;
};

/// A message of another protocol version ("v"). A ProtocolError like any
/// other refusal; its own type lets the supervisor tell a worker of another
/// release (answered with SHUTDOWN) from a garbled frame, without reading
/// the error's text.
class VersionError : public ProtocolError {
 public:
  using ProtocolError::ProtocolError;
};

/// A new message {"v": kProtocolVersion, "t": type}.
Message make(std::string_view type);

/// MessagePack bytes of msg (which must be a JSON object).
std::string encode(const Message& msg);

/// Decodes one frame. Throws ProtocolError (and nothing else) when it is
/// larger than kMaxFrameBytes; when check_msgpack (protocol/msgpack_limits.hpp)
/// refuses it: nested deeper than kMaxMsgpackDepth, counts or lengths past the
/// end of the frame, trailing bytes, ext types, non-str map keys, strings
/// that are not UTF-8; when it is not a map, lacks "t", or has another
/// protocol version (VersionError, whose message says both versions). The frame is
/// walked once without recursion before nlohmann builds the value, so a
/// hostile frame costs O(size) time and constant stack.
Message decode(std::string_view frame);

/// The ZeroMQ routing id of one spawned worker process: "ID#PID", e.g.
/// "synth-0#4242". A worker id is reused when zkfarmd restarts or upgrades a
/// worker, but its ROUTER ignores a connection whose routing id is still
/// held by a pipe it has not yet torn down (the old process's, closed
/// milliseconds before): a restarted worker under a bare id could then
/// never be heard, and would die of missing heartbeats. The pid makes each
/// process's route its own.
std::string worker_route(std::string_view worker_id, long pid);

/// The worker id and pid in a routing id made by worker_route; nullopt when
/// `route` has no '#', an empty id, or a pid that is not a decimal number
/// from 1 to 2^31 − 1 (a hostile peer chooses its routing id).
std::optional<std::pair<std::string, long>> parse_worker_route(std::string_view route);

/// The message's type ("t").
std::string type_of(const Message& msg);

/// Typed field readers; each throws ProtocolError naming the field when it is
/// missing or of another type (or, for integers, negative or out of range).
uint64_t get_u64(const Message& msg, const char* field);
uint32_t get_u32(const Message& msg, const char* field);
std::string get_str(const Message& msg, const char* field);
bool get_bool(const Message& msg, const char* field);
/// Binary field (MessagePack bin), e.g. the proof.
std::string get_bin(const Message& msg, const char* field);
/// An optional string field: nullopt when absent.
std::optional<std::string> find_str(const Message& msg, const char* field);

/// Wraps bytes as a MessagePack bin value.
nlohmann::json bin(std::string_view bytes);

// Message types. The worker ↔ supervisor ones have a struct each, with their
// decoder and encoders, in protocol/worker_messages.hpp.
inline constexpr const char* kReady = "READY";
inline constexpr const char* kHeartbeat = "HEARTBEAT";
inline constexpr const char* kSynth = "SYNTH";
inline constexpr const char* kSynthDone = "SYNTH_DONE";
inline constexpr const char* kProve = "PROVE";
inline constexpr const char* kProveDone = "PROVE_DONE";
inline constexpr const char* kStarted = "STARTED";
inline constexpr const char* kShutdown = "SHUTDOWN";
inline constexpr const char* kAbort = "ABORT";

}  // namespace zkfarm::protocol
