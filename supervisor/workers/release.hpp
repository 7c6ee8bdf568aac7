#pragma once
// The release wait (design.md section 4, "GPU worker restart" and "SIGTERM"):
// after a GPU worker has been reaped, and before its replacement starts or the
// supervisor exits, the supervisor checks that the worker's memory is really
// gone -- on a GPU, the driver no longer lists the process on its device and
// the device's free memory is back; on the host, the memory it had pinned is
// back. The check is an interface (ReleaseCheck) polled from the supervisor
// loop, never a fixed sleep; ReleaseWait adds the deadline (release_timeout).
//
// Implementations:
//   NvmlReleaseCheck  the NVIDIA driver's NVML, dlopen()ed at run time
//                     (libnvidia-ml.so.1, never linked), plus the host check;
//   HostReleaseCheck  the CPU backend, or a machine without NVML: the process
//                     is gone (reaped);
//   FakeReleaseCheck  a test double that releases a set time after the first
//                     check (ZKFARM_TEST_RELEASE_MS), so CI can test a release
//                     that takes seconds.
//
// None of these is thread-safe; the supervisor calls them from its one loop.
#include <sys/types.h>

#include <chrono>
#include <cstdint>
#include <map>
#include <memory>
#include <optional>
#include <string>

namespace zkfarm::supervisor {

/// The outcome of one release check.
struct ReleaseStatus {
  bool released = false;  ///< true: the worker's memory is back, the slot may be reused
  /// One line (no newline) for the log and the status output: "released", or
  /// what is still held, e.g. "GPU 0 still lists pid 1234 (2.1 GiB in use)".
  std::string detail;
};

/// One device's memory (bytes) and, where the driver reports it, the share of
/// the last sample period a kernel ran (0..1; nvmlDeviceGetUtilizationRates).
struct DeviceUsage {
  std::uint64_t used_bytes = 0, total_bytes = 0;
  std::optional<double> utilization;
};

/// Checks whether a reaped worker's memory has been released.
///
/// check() is called repeatedly (once per supervisor pass, ~50 ms) after the
/// worker was reaped; it must not block (each call < 10 ms) and must not sleep.
/// `device` is the worker's CUDA_VISIBLE_DEVICES value: "" for the CPU backend,
/// else a device index ("0"), a UUID ("GPU-…", "MIG-…") or a comma list of
/// those (then every listed device must be released).
class ReleaseCheck {
 public:
  virtual ~ReleaseCheck() = default;

  /// Called right before a worker on `device` is started: records what
  /// "released" means for that device later (NvmlReleaseCheck: the device's
  /// free memory now). The last call per device wins. Never throws; when the
  /// device cannot be read, no baseline is kept and check() says so in its
  /// detail. The default does nothing.
  virtual void baseline(const std::string& device) { (void)device; }

  /// One non-blocking check for the worker `pid` (which the caller has reaped)
  /// on `device`. Errors of the source (an NVML call failing, an unknown
  /// device) are reported as released = false with the error in `detail`, so
  /// a wait ends in its timeout with that message rather than an exception.
  /// Throws std::invalid_argument if pid <= 0.
  virtual ReleaseStatus check(pid_t pid, const std::string& device) = 0;

  /// A short name for logs: "nvml", "host", "fake".
  virtual const char* name() const = 0;

  /// What one device entry ("0", "GPU-…") holds now, for /metrics
  /// (zkfarm_gpu_memory_bytes, zkfarm_gpu_utilization_ratio): nullopt when
  /// this check cannot read devices (host, fake) or the read fails. Must not
  /// block (one NVML query each, well under a millisecond on a local GPU).
  virtual std::optional<DeviceUsage> usage(const std::string& device_entry) { (void)device_entry; return std::nullopt; }

  /// NvmlReleaseCheck if libnvidia-ml.so.1 loads and nvmlInit_v2 succeeds,
  /// else HostReleaseCheck. Never throws for a missing driver or GPU.
  static std::unique_ptr<ReleaseCheck> make_default();
};

/// The host condition: released <=> no process with this pid exists any more,
/// i.e. it has exited *and* been reaped (kill(pid, 0) fails with ESRCH). A
/// running process or a zombie (exited, not yet reaped) is not released; the
/// detail then names its state and command from /proc/<pid>/stat.
///
/// Why a reaped process means its host memory is back: a process's address
/// space (exit_mm) and its open files (exit_files, which closes /dev/nvidia*)
/// are torn down in do_exit() before it becomes a zombie. Host pages pinned by
/// cudaHostRegister/cudaHostAlloc (the shared arena) are pinned by the NVIDIA
/// kernel driver on behalf of that file and unpinned when it is released, so
/// once the process has been reaped nothing of it pins host memory. The arena
/// itself is POSIX shared memory owned by the supervisor; it stays allocated
/// (not leaked) until the supervisor unlinks it.
///
/// Why /proc/meminfo (Mlocked, Unevictable) is *not* checked: those are
/// system-wide counters that other processes move at any time, so they cannot
/// be attributed to one worker; driver pins (pin_user_pages) are not counted
/// in Mlocked at all; and the arena's shmem pages legitimately stay resident.
/// A threshold on them would give false "not released" results (waits that
/// end in the timeout) without ever proving a release.
///
/// Limitation: if the kernel reuses the pid for a new process before the
/// check (only after pid_max wraps), the wait reports that process and ends
/// in its timeout; the detail names its command so the cause is visible.
class HostReleaseCheck : public ReleaseCheck {
 public:
  ReleaseStatus check(pid_t pid, const std::string& device) override;
  const char* name() const override { return "host"; }
};

/// The GPU condition, from the driver's NVML: for each device of `device`,
/// released <=> the host condition holds (HostReleaseCheck), the pid is not in
/// nvmlDeviceGetComputeRunningProcesses for that device, and the device's
/// free memory (nvmlDeviceGetMemoryInfo) is >= baseline - tolerance, where the
/// baseline is the free memory recorded by baseline() before the worker
/// started. For "" (CPU backend) only the host condition applies. Without a
/// baseline for a device only the pid condition applies (the detail says so).
///
/// The tolerance (default 256 MiB) absorbs the driver's own bookkeeping and
/// small allocations of other processes (monitoring agents). It assumes one
/// GPU worker per device (design: gpu_devices "0,1"): memory taken on the
/// device by anything else since the baseline, beyond the tolerance, makes
/// the wait end in its timeout, naming the free and expected bytes.
///
/// Device names: an index is passed to nvmlDeviceGetHandleByIndex_v2. NVML
/// numbers devices in PCI bus order while CUDA_VISIBLE_DEVICES indices follow
/// CUDA_DEVICE_ORDER (FASTEST_FIRST by default); on hosts with different GPU
/// models set CUDA_DEVICE_ORDER=PCI_BUS_ID or use UUIDs, which are looked up
/// with nvmlDeviceGetHandleByUUID. NVML lists pids of the host's pid
/// namespace: in a container with its own pid namespace the pid condition may
/// never match, and the free-memory condition is what detects the release.
///
/// Symbols used (dlsym): nvmlInit_v2, nvmlShutdown, nvmlDeviceGetHandleByIndex_v2,
/// nvmlDeviceGetMemoryInfo, nvmlDeviceGetComputeRunningProcesses_v3, else _v2,
/// else the unversioned one (v3 and v2 take nvmlProcessInfo_t / _v2_t:
/// {pid, usedGpuMemory, gpuInstanceId, computeInstanceId}; the unversioned one
/// takes nvmlProcessInfo_v1_t: {pid, usedGpuMemory}); optionally
/// nvmlDeviceGetHandleByUUID, nvmlDeviceGetUtilizationRates and nvmlErrorString.
class NvmlReleaseCheck : public ReleaseCheck {
 public:
  static constexpr std::uint64_t kDefaultToleranceBytes = 256ull << 20;

  /// dlopen()s `library` and calls nvmlInit_v2. Throws std::runtime_error
  /// (with dlerror()'s or NVML's message) if the library cannot be loaded, a
  /// required symbol is missing, or NVML does not initialise (no driver, no
  /// GPU); nothing is leaked then.
  explicit NvmlReleaseCheck(std::uint64_t tolerance_bytes = kDefaultToleranceBytes,
                            const std::string& library = "libnvidia-ml.so.1");
  /// nvmlShutdown, then dlclose.
  ~NvmlReleaseCheck() override;
  NvmlReleaseCheck(const NvmlReleaseCheck&) = delete;
  NvmlReleaseCheck& operator=(const NvmlReleaseCheck&) = delete;

  void baseline(const std::string& device) override;
  ReleaseStatus check(pid_t pid, const std::string& device) override;
  const char* name() const override { return "nvml"; }
  std::optional<DeviceUsage> usage(const std::string& device_entry) override;

  /// The recorded baseline (free bytes) of one device entry ("0", "GPU-…"), if any.
  std::optional<std::uint64_t> baseline_bytes(const std::string& device_entry) const;

 private:
  struct Api;
  std::unique_ptr<Api> api_;
  std::uint64_t tolerance_;
  std::map<std::string, std::uint64_t> baseline_;  // device entry -> free bytes
  HostReleaseCheck host_;
};

/// Test double: for each pid, not released ("fake: N ms left") until
/// `duration` has passed since the first check() of that pid (steady_clock),
/// then "released". Deterministic, never sleeps; `device` is ignored.
class FakeReleaseCheck : public ReleaseCheck {
 public:
  explicit FakeReleaseCheck(std::chrono::milliseconds duration) : duration_(duration) {}

  /// From ZKFARM_TEST_RELEASE_MS (milliseconds, a non-negative integer):
  /// nullptr when unset or empty; throws std::invalid_argument when not a
  /// valid number. The supervisor uses it instead of make_default() if set.
  static std::unique_ptr<ReleaseCheck> from_env();

  ReleaseStatus check(pid_t pid, const std::string& device) override;
  const char* name() const override { return "fake"; }

 private:
  std::chrono::milliseconds duration_;
  std::map<pid_t, std::chrono::steady_clock::time_point> first_;
};

/// Drives one release wait: a check for (pid, device) with a deadline
/// `timeout` (release_timeout) from construction (steady_clock). The
/// supervisor calls poll() once per loop pass; poll() never sleeps and never
/// throws for a timeout (only what check() throws: std::invalid_argument for
/// pid <= 0).
///
/// poll() results:
///   released            released = true, detail from the check ("released");
///                       final: later polls return it without checking again;
///   waiting             released = false, detail "<check detail> (waited 1.2 s
///                       of 30.0 s)" -- the progress line for the log/status;
///   timed out           released = false and timed_out() == true, detail
///                       "release of pid 1234 on GPU 0 not confirmed within
///                       release_timeout 30.0 s: <last check detail>"; final as well. The
///                       caller decides (log an error, fail the slot, exit
///                       non-zero). A release seen by the check wins over a
///                       deadline passed in the same poll.
class ReleaseWait {
 public:
  ReleaseWait(ReleaseCheck& check, pid_t pid, std::string device, std::chrono::milliseconds timeout);

  ReleaseStatus poll();
  bool released() const { return done_ && last_.released; }
  bool timed_out() const { return done_ && !last_.released; }
  /// Time since construction (frozen once released or timed out).
  std::chrono::milliseconds elapsed() const;
  std::chrono::milliseconds timeout() const { return timeout_; }
  pid_t pid() const { return pid_; }
  const std::string& device() const { return device_; }
  /// The result of the last poll() ("not checked yet" before the first).
  const ReleaseStatus& last() const { return last_; }

 private:
  ReleaseCheck& check_;
  pid_t pid_;
  std::string device_;
  std::chrono::milliseconds timeout_;
  std::chrono::steady_clock::time_point start_, end_{};
  bool done_ = false;
  ReleaseStatus last_{false, "not checked yet"};
};

}  // namespace zkfarm::supervisor
