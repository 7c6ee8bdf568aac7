#pragma once
// The worker side of the worker ↔ supervisor protocol (docs/protocol.md),
// shared by zkfarm-synth and zkfarm-gpu.
//
// Threads: the caller's thread runs WorkerChannel::run(), a loop that polls the
// DEALER socket, an eventfd (the compute thread's "done" bell) and a signalfd
// (SIGTERM/SIGINT), so heartbeats keep flowing while a partition computes.
// Compute threads run the WorkHandler, one request at a time each: one thread
// unless WorkerOptions::lanes asks for more (a GPU worker's concurrent prove
// steps), and then the handler must be safe to call from that many at once.
//
// Usage, in main():
//   if (!guard_process()) return kExitSupervisorLost;  // before any thread starts
//   ... parse flags, attach the arena, build the handler ...
//   WorkerChannel channel(options, handler);            // throws ChannelError
//   return channel.run();
#include <sys/types.h>

#include <atomic>
#include <chrono>
#include <cstdint>
#include <functional>
#include <memory>
#include <optional>
#include <stdexcept>
#include <string>
#include <string_view>
#include <variant>
#include <vector>

#include "protocol/worker_messages.hpp"

namespace zkfarm::protocol {

// Worker exit codes. The supervisor decides what to respawn; codes 2 and 3 say
// that a restart of the same binary with the same flags cannot help.
/// SHUTDOWN answered, or SIGTERM/SIGINT received.
inline constexpr int kExitOk = 0;
/// An internal failure outside any partition (a bug, out of memory).
inline constexpr int kExitInternal = 1;
/// Bad flags or a bad ZKFARM_FAULT value.
inline constexpr int kExitUsage = 2;
/// The environment refuses: the arena cannot be attached, the socket cannot be
/// connected, or the requested backend is not built ("do not respawn" class).
inline constexpr int kExitEnvironment = 3;
/// The supervisor is gone: nothing heard from it for heartbeat_timeout, or this
/// process was reparented (its parent died).
inline constexpr int kExitSupervisorLost = 4;

/// Test-only fault injection, read from the environment variable ZKFARM_FAULT
/// (fault tests of the supervisor use it; never set it in production).
struct TestFault {
  enum class Kind { kNone, kCrashAfter, kHang, kSlow, kIgnoreStop };
  Kind kind = Kind::kNone;
  /// crash_after: partitions completed before the crash; slow: milliseconds.
  uint64_t n = 0;

  /// Parses "" (none), "crash_after:N", "hang" or "slow_ms:N". Throws
  /// std::invalid_argument naming the spec otherwise.
  static TestFault parse(std::string_view spec);
  /// parse(getenv("ZKFARM_FAULT")), none when unset.
  static TestFault from_env();
};

/// The --help footer that documents ZKFARM_FAULT.
extern const char* const kFaultHelp;

/// What a worker says about itself and how it talks.
struct WorkerOptions {
  std::string endpoint;   // the supervisor's ROUTER, e.g. "ipc:///var/lib/zkfarm/workers.sock"
  std::string worker_id;  // READY's "worker", e.g. "synth-0"; the routing id is worker_route(worker_id, getpid())
  std::string kind;       // READY's "kind": "synth" or "gpu" (which request it takes: the WorkHandler's)
  std::string version;    // READY's "version", e.g. "0.1.0"
  std::string backend;    // READY's "backend": "cpu" or "cuda"
  std::chrono::milliseconds heartbeat{1000};           // HEARTBEAT period
  std::chrono::milliseconds heartbeat_timeout{10000};  // silence from the supervisor after which the worker exits
  /// Requests that may wait behind the one computing (0: one at a time; a
  /// GPU worker takes kMaxQueuedWork, and the supervisor's gpu_queue_depth
  /// decides how many it really sends). Waiting requests start highest
  /// "priority" first (the optional field, 0 when absent), then in arrival order.
  size_t max_queued = 0;
  /// Requests computed at once, each on its own compute thread (≥ 1; a GPU
  /// worker's --lanes). Each gets its STARTED and its ABORT flag; a request
  /// waits only while every lane is busy.
  size_t lanes = 1;
  /// SYNTHs of one job a lane takes together (≥ 1; a synthesis worker with
  /// a SynthBatchHandler takes kMaxSynthBatch): those waiting when a lane
  /// frees, in their order. The supervisor decides how many it sends.
  size_t batch = 1;
  /// How long the first SYNTH of a batch that is not all here yet
  /// (Synth::batch_of) waits for the rest before it starts with what came.
  std::chrono::milliseconds batch_linger{200};
  TestFault fault;
};

/// The most requests a worker keeps waiting (bounds its memory whatever the
/// supervisor sends); more are answered ok:false "busy".
inline constexpr size_t kMaxQueuedWork = 64;

/// Runs one request on the compute thread: a synthesis worker's SYNTH, a GPU
/// worker's PROVE, decoded (its fields are all there and of their types). It
/// should turn input faults into WorkResult::failure; a ProtocolError it
/// throws (e.g. a slot too small for the key) becomes ok:false "malformed T:
/// …", any other exception ok:false "internal error: …".
using SynthHandler = std::function<WorkResult(const Synth& request)>;
using ProveHandler = std::function<WorkResult(const Prove& request)>;
/// Runs several SYNTHs of one job together (WorkerOptions::batch): one
/// answer per request, in their order (a missing one is answered ok:false
/// "internal error"). `aborted[i]` rises when the supervisor ABORTs
/// request i; abort_flag() rises only once every request of the batch is
/// aborted. Exceptions as for SynthHandler fail the whole batch.
using SynthBatchHandler = std::function<std::vector<WorkResult>(const std::vector<Synth>& requests,
                                                                const std::vector<const std::atomic<bool>*>& aborted)>;
/// The one a worker has says which request it takes; the other kind is
/// answered ok:false "this … worker does not take …".
using WorkHandler = std::variant<SynthHandler, ProveHandler, SynthBatchHandler>;

/// The most SYNTHs one batch holds.
inline constexpr size_t kMaxSynthBatch = 64;

/// Set while the partition in progress on the calling compute thread was
/// aborted by the supervisor (ABORT with its job, partition, slot and
/// generation); cleared when that lane's next one starts; never set on other
/// threads. Handlers pass it to synthesize()/prove() as their cancel flag. An
/// ABORT naming a request still waiting removes it and answers it ok:false
/// at once.
const std::atomic<bool>& abort_flag();

/// The socket could not be set up (bad endpoint, no file descriptors).
class ChannelError : public std::runtime_error {
 public:
  using std::runtime_error::runtime_error;
};

/// Call first in main(), before any thread exists: sets PR_SET_PDEATHSIG to
/// SIGTERM, blocks SIGTERM and SIGINT in this thread (so every later thread
/// inherits the mask and WorkerChannel receives them through a signalfd), and
/// records the parent pid. Returns false when the parent has already died
/// (getppid() is 1 or differs from the parent seen first).
[[nodiscard]] bool guard_process();

/// The worker's DEALER connection to the supervisor and its event loop.
class WorkerChannel {
 public:
  /// Connects a DEALER (routing id = worker_route(options.worker_id, getpid())) to options.endpoint and
  /// starts the compute thread. Nothing is sent before run(). Throws
  /// ChannelError when the socket, eventfd or signalfd cannot be made.
  WorkerChannel(WorkerOptions options, WorkHandler handler);
  ~WorkerChannel();
  WorkerChannel(const WorkerChannel&) = delete;
  WorkerChannel& operator=(const WorkerChannel&) = delete;

  /// Sends READY, then serves until told to stop; returns the exit code:
  /// kExitOk after SHUTDOWN (the partition in progress and those waiting are
  /// finished and answered first) or SIGTERM/SIGINT; kExitSupervisorLost after
  /// heartbeat_timeout of silence or when the parent died. Exiting while a
  /// partition computes (signal, lost supervisor) ends the process at once with
  /// _Exit(code): the compute thread cannot be interrupted. Work arriving with
  /// max_queued requests already waiting is answered ok:false "busy";
  /// malformed frames are logged to stderr and dropped, except a request
  /// whose ids decoded (MalformedRequest): it is answered ok:false at once.
  int run();

 private:
  struct Impl;
  std::unique_ptr<Impl> impl_;
};

}  // namespace zkfarm::protocol
