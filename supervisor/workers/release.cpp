// The release wait: see release.hpp for the contract of each check.
#include "supervisor/workers/release.hpp"

#include <dlfcn.h>
#include <signal.h>

#include <algorithm>
#include <cerrno>
#include <charconv>
#include <cstdio>
#include <cstdlib>
#include <fstream>
#include <iterator>
#include <stdexcept>
#include <vector>

namespace zkfarm::supervisor {
namespace {

using std::chrono::milliseconds;
using std::chrono::steady_clock;

void require_pid(pid_t pid) {
  if (pid <= 0) throw std::invalid_argument("release check: invalid pid " + std::to_string(pid));
}

std::string gib(std::uint64_t bytes) {
  char buf[32];
  std::snprintf(buf, sizeof buf, "%.1f GiB", static_cast<double>(bytes) / double(1ull << 30));
  return buf;
}

std::string mib(std::uint64_t bytes) { return std::to_string(bytes >> 20) + " MiB"; }

std::string seconds(milliseconds ms) {
  char buf[32];
  std::snprintf(buf, sizeof buf, "%.1f s", static_cast<double>(ms.count()) / 1000.0);
  return buf;
}

bool all_digits(const std::string& s) {
  if (s.empty()) return false;
  for (char c : s)
    if (c < '0' || c > '9') return false;
  return true;
}

std::string trim(const std::string& s) {
  const auto b = s.find_first_not_of(" \t");
  if (b == std::string::npos) return "";
  const auto e = s.find_last_not_of(" \t");
  return s.substr(b, e - b + 1);
}

/// The entries of a CUDA_VISIBLE_DEVICES value ("0,1" -> {"0","1"}); empty for "".
std::vector<std::string> device_entries(const std::string& device) {
  std::vector<std::string> out;
  std::size_t pos = 0;
  while (pos <= device.size()) {
    auto comma = device.find(',', pos);
    if (comma == std::string::npos) comma = device.size();
    auto e = trim(device.substr(pos, comma - pos));
    if (!e.empty()) out.push_back(std::move(e));
    pos = comma + 1;
  }
  return out;
}

/// "GPU 0" for an index, the UUID itself ("GPU-…", "MIG-…") otherwise.
std::string entry_label(const std::string& entry) { return all_digits(entry) ? "GPU " + entry : entry; }

std::string device_label(const std::string& device) {
  const auto entries = device_entries(device);
  if (entries.empty()) return "the host (CPU backend)";
  if (entries.size() == 1) return entry_label(entries[0]);
  return "GPUs " + device;
}

}  // namespace

// ---------------------------------------------------------------- host

ReleaseStatus HostReleaseCheck::check(pid_t pid, const std::string& /*device*/) {
  require_pid(pid);
  // kill(pid, 0) succeeds for running processes and zombies alike and fails
  // with ESRCH only once the process has been reaped. EPERM: it exists, but
  // belongs to someone else (a reused pid).
  if (::kill(pid, 0) == -1 && errno == ESRCH) return {true, "released"};
  std::ifstream in("/proc/" + std::to_string(pid) + "/stat");
  std::string stat((std::istreambuf_iterator<char>(in)), std::istreambuf_iterator<char>());
  // "pid (comm) S ...": comm may contain ')' and spaces, so find the last ')'.
  const auto open = stat.find('('), close = stat.rfind(')');
  if (open == std::string::npos || close == std::string::npos || close + 2 >= stat.size()) {
    // Gone between kill() and the read, or /proc unreadable.
    if (::kill(pid, 0) == -1 && errno == ESRCH) return {true, "released"};
    return {false, "pid " + std::to_string(pid) + " still exists"};
  }
  const std::string comm = stat.substr(open + 1, close - open - 1);
  const char state = stat[close + 2];
  if (state == 'Z' || state == 'X')
    return {false, "pid " + std::to_string(pid) + " (" + comm + ") has exited but is not reaped yet (zombie)"};
  return {false, "pid " + std::to_string(pid) + " (" + comm + ") is still running (state " + state + ")"};
}

// ---------------------------------------------------------------- NVML

namespace {
// Minimal declarations matching NVIDIA's nvml.h (ABI of libnvidia-ml.so.1).
using nvmlReturn_t = int;
using nvmlDevice_t = void*;
constexpr nvmlReturn_t kNvmlSuccess = 0;
constexpr nvmlReturn_t kNvmlErrorNotSupported = 3;
constexpr nvmlReturn_t kNvmlErrorNoPermission = 4;
constexpr nvmlReturn_t kNvmlErrorInsufficientSize = 7;
constexpr unsigned long long kNvmlValueNotAvailable = ~0ull;

/// nvmlProcessInfo_v1_t: taken by the unversioned nvmlDeviceGetComputeRunningProcesses.
struct NvmlProcessInfoV1 {
  unsigned int pid;
  unsigned long long usedGpuMemory;
};
/// nvmlProcessInfo_v2_t, and nvmlProcessInfo_t of NVML 12 (same layout): taken by _v2 and _v3.
struct NvmlProcessInfoV2 {
  unsigned int pid;
  unsigned long long usedGpuMemory;
  unsigned int gpuInstanceId;
  unsigned int computeInstanceId;
};
/// nvmlMemory_t (v1), bytes.
struct NvmlMemory {
  unsigned long long total, free, used;
};
/// nvmlUtilization_t: percent of the last sample period a kernel ran, and memory was read or written.
struct NvmlUtilization {
  unsigned int gpu, memory;
};
static_assert(sizeof(NvmlUtilization) == 8);
static_assert(sizeof(NvmlProcessInfoV1) == 16 && sizeof(NvmlProcessInfoV2) == 24 && sizeof(NvmlMemory) == 24);
}  // namespace

struct NvmlReleaseCheck::Api {
  void* lib = nullptr;
  bool inited = false;
  nvmlReturn_t (*init)() = nullptr;
  nvmlReturn_t (*shutdown)() = nullptr;
  nvmlReturn_t (*by_index)(unsigned int, nvmlDevice_t*) = nullptr;
  nvmlReturn_t (*by_uuid)(const char*, nvmlDevice_t*) = nullptr;  // optional
  nvmlReturn_t (*memory)(nvmlDevice_t, NvmlMemory*) = nullptr;
  nvmlReturn_t (*utilization)(nvmlDevice_t, NvmlUtilization*) = nullptr;  // optional
  nvmlReturn_t (*procs_v2)(nvmlDevice_t, unsigned int*, NvmlProcessInfoV2*) = nullptr;  // _v3 or _v2
  nvmlReturn_t (*procs_v1)(nvmlDevice_t, unsigned int*, NvmlProcessInfoV1*) = nullptr;  // unversioned
  const char* (*error_string)(nvmlReturn_t) = nullptr;  // optional
  std::map<std::string, nvmlDevice_t> handles;

  ~Api() {
    if (inited) shutdown();
    if (lib) ::dlclose(lib);
  }

  template <class F>
  void sym(F& fn, const char* name) {
    fn = reinterpret_cast<F>(::dlsym(lib, name));
  }

  std::string error(nvmlReturn_t rc) const {
    const char* s = error_string ? error_string(rc) : nullptr;
    return s ? std::string(s) + " (NVML " + std::to_string(rc) + ")" : "NVML error " + std::to_string(rc);
  }

  /// The handle of one device entry, or an error text.
  nvmlDevice_t handle(const std::string& entry, std::string& err) {
    if (auto it = handles.find(entry); it != handles.end()) return it->second;
    nvmlDevice_t h = nullptr;
    nvmlReturn_t rc;
    if (all_digits(entry)) {
      unsigned int index = 0;
      auto [p, ec] = std::from_chars(entry.data(), entry.data() + entry.size(), index);
      if (ec != std::errc() || p != entry.data() + entry.size()) {
        err = "bad device index '" + entry + "'";
        return nullptr;
      }
      rc = by_index(index, &h);
    } else if (by_uuid) {
      rc = by_uuid(entry.c_str(), &h);
    } else {
      err = "device '" + entry + "': this NVML cannot look up UUIDs";
      return nullptr;
    }
    if (rc != kNvmlSuccess) {
      err = entry_label(entry) + ": " + error(rc);
      return nullptr;
    }
    handles.emplace(entry, h);
    return h;
  }

  /// Compute processes on `h`: {pid, usedGpuMemory}. rc as NVML returns it.
  nvmlReturn_t processes(nvmlDevice_t h, std::vector<NvmlProcessInfoV1>& out) {
    out.clear();
    unsigned int cap = 32;
    for (int attempt = 0; attempt < 4; ++attempt) {
      unsigned int count = cap;
      nvmlReturn_t rc;
      if (procs_v2) {
        std::vector<NvmlProcessInfoV2> buf(cap);
        rc = procs_v2(h, &count, buf.data());
        if (rc == kNvmlSuccess)
          for (unsigned int i = 0; i < count && i < cap; ++i) out.push_back({buf[i].pid, buf[i].usedGpuMemory});
      } else {
        std::vector<NvmlProcessInfoV1> buf(cap);
        rc = procs_v1(h, &count, buf.data());
        if (rc == kNvmlSuccess) out.assign(buf.begin(), buf.begin() + std::min(count, cap));
      }
      if (rc != kNvmlErrorInsufficientSize) return rc;
      cap = count + 16;  // processes may have started meanwhile
    }
    return kNvmlErrorInsufficientSize;
  }
};

NvmlReleaseCheck::NvmlReleaseCheck(std::uint64_t tolerance_bytes, const std::string& library)
    : api_(std::make_unique<Api>()), tolerance_(tolerance_bytes) {
  api_->lib = ::dlopen(library.c_str(), RTLD_NOW | RTLD_LOCAL);
  if (!api_->lib) {
    const char* e = ::dlerror();
    throw std::runtime_error("NVML: cannot load " + library + ": " + (e ? e : "unknown error"));
  }
  Api& a = *api_;
  a.sym(a.init, "nvmlInit_v2");
  a.sym(a.shutdown, "nvmlShutdown");
  a.sym(a.by_index, "nvmlDeviceGetHandleByIndex_v2");
  a.sym(a.by_uuid, "nvmlDeviceGetHandleByUUID");
  a.sym(a.memory, "nvmlDeviceGetMemoryInfo");
  a.sym(a.utilization, "nvmlDeviceGetUtilizationRates");
  a.sym(a.procs_v2, "nvmlDeviceGetComputeRunningProcesses_v3");
  if (!a.procs_v2) a.sym(a.procs_v2, "nvmlDeviceGetComputeRunningProcesses_v2");
  if (!a.procs_v2) a.sym(a.procs_v1, "nvmlDeviceGetComputeRunningProcesses");
  a.sym(a.error_string, "nvmlErrorString");
  const char* missing = !a.init                        ? "nvmlInit_v2"
                        : !a.shutdown                  ? "nvmlShutdown"
                        : !a.by_index                  ? "nvmlDeviceGetHandleByIndex_v2"
                        : !a.memory                    ? "nvmlDeviceGetMemoryInfo"
                        : !a.procs_v2 && !a.procs_v1   ? "nvmlDeviceGetComputeRunningProcesses"
                                                       : nullptr;
  if (missing) throw std::runtime_error("NVML: " + library + " lacks " + missing);
  if (const nvmlReturn_t rc = a.init(); rc != kNvmlSuccess)
    throw std::runtime_error("NVML: nvmlInit_v2 failed: " + a.error(rc));
  a.inited = true;
}

NvmlReleaseCheck::~NvmlReleaseCheck() = default;

void NvmlReleaseCheck::baseline(const std::string& device) {
  for (const auto& entry : device_entries(device)) {
    baseline_.erase(entry);
    std::string err;
    nvmlDevice_t h = api_->handle(entry, err);
    NvmlMemory mem{};
    if (h && api_->memory(h, &mem) == kNvmlSuccess) baseline_[entry] = mem.free;
  }
}

std::optional<DeviceUsage> NvmlReleaseCheck::usage(const std::string& device_entry) {
  std::string err;
  nvmlDevice_t h = api_->handle(device_entry, err);
  NvmlMemory mem{};
  if (!h || api_->memory(h, &mem) != kNvmlSuccess) return std::nullopt;
  DeviceUsage u{mem.used, mem.total, std::nullopt};
  NvmlUtilization util{};
  if (api_->utilization && api_->utilization(h, &util) == kNvmlSuccess) u.utilization = double(util.gpu) / 100.0;
  return u;
}

std::optional<std::uint64_t> NvmlReleaseCheck::baseline_bytes(const std::string& device_entry) const {
  if (auto it = baseline_.find(device_entry); it != baseline_.end()) return it->second;
  return std::nullopt;
}

ReleaseStatus NvmlReleaseCheck::check(pid_t pid, const std::string& device) {
  ReleaseStatus host = host_.check(pid, device);
  if (!host.released) return host;
  std::string summary;  // what the released devices look like, for the log
  for (const auto& entry : device_entries(device)) {
    const std::string label = entry_label(entry);
    std::string err;
    nvmlDevice_t h = api_->handle(entry, err);
    if (!h) return {false, err};

    std::vector<NvmlProcessInfoV1> procs;
    const nvmlReturn_t prc = api_->processes(h, procs);
    const bool pid_known = prc == kNvmlSuccess;
    if (!pid_known && prc != kNvmlErrorNotSupported && prc != kNvmlErrorNoPermission)
      return {false, label + ": listing processes failed: " + api_->error(prc)};
    for (const auto& p : procs) {
      if (static_cast<pid_t>(p.pid) != pid) continue;
      const std::string used =
          p.usedGpuMemory == kNvmlValueNotAvailable ? "memory in use unknown" : gib(p.usedGpuMemory) + " in use";
      return {false, label + " still lists pid " + std::to_string(pid) + " (" + used + ")"};
    }

    NvmlMemory mem{};
    if (const nvmlReturn_t mrc = api_->memory(h, &mem); mrc != kNvmlSuccess)
      return {false, label + ": reading memory failed: " + api_->error(mrc)};
    const auto base = baseline_bytes(entry);
    if (base && mem.free + tolerance_ < *base)
      return {false, label + ": " + gib(mem.free) + " free, waiting for " + gib(*base) +
                         " (free before the worker started) less " + mib(tolerance_)};
    if (!summary.empty()) summary += ", ";
    summary += label + ": " + gib(mem.free) + " free";
    if (!base) summary += ", no baseline";
    if (!pid_known) summary += ", process list " + api_->error(prc);
  }
  return {true, summary.empty() ? "released" : "released (" + summary + ")"};
}

// ---------------------------------------------------------------- default, fake

std::unique_ptr<ReleaseCheck> ReleaseCheck::make_default() {
  try {
    return std::make_unique<NvmlReleaseCheck>();
  } catch (const std::exception&) {
    return std::make_unique<HostReleaseCheck>();
  }
}

std::unique_ptr<ReleaseCheck> FakeReleaseCheck::from_env() {
  const char* v = std::getenv("ZKFARM_TEST_RELEASE_MS");
  if (!v || !*v) return nullptr;
  const std::string s(v);
  long long ms = 0;
  auto [p, ec] = std::from_chars(s.data(), s.data() + s.size(), ms);
  if (ec != std::errc() || p != s.data() + s.size() || ms < 0)
    throw std::invalid_argument("ZKFARM_TEST_RELEASE_MS: expected milliseconds (a non-negative integer), got '" + s +
                                "'");
  return std::make_unique<FakeReleaseCheck>(milliseconds(ms));
}

ReleaseStatus FakeReleaseCheck::check(pid_t pid, const std::string& /*device*/) {
  require_pid(pid);
  const auto now = steady_clock::now();
  const auto first = first_.try_emplace(pid, now).first->second;
  const auto left = duration_ - std::chrono::duration_cast<milliseconds>(now - first);
  if (left.count() <= 0) return {true, "released"};
  return {false, "fake: " + std::to_string(left.count()) + " ms left"};
}

// ---------------------------------------------------------------- wait

ReleaseWait::ReleaseWait(ReleaseCheck& check, pid_t pid, std::string device, milliseconds timeout)
    : check_(check), pid_(pid), device_(std::move(device)), timeout_(timeout), start_(steady_clock::now()) {}

std::chrono::milliseconds ReleaseWait::elapsed() const {
  return std::chrono::duration_cast<milliseconds>((done_ ? end_ : steady_clock::now()) - start_);
}

ReleaseStatus ReleaseWait::poll() {
  if (done_) return last_;
  ReleaseStatus st = check_.check(pid_, device_);
  const auto now = steady_clock::now();
  const auto waited = std::chrono::duration_cast<milliseconds>(now - start_);
  if (st.released) {
    done_ = true;
    end_ = now;
    last_ = std::move(st);
  } else if (waited >= timeout_) {
    done_ = true;
    end_ = now;
    last_ = {false, "release of pid " + std::to_string(pid_) + " on " + device_label(device_) +
                        " not confirmed within release_timeout " + seconds(timeout_) + ": " + st.detail};
  } else {
    last_ = {false, st.detail + " (waited " + seconds(waited) + " of " + seconds(timeout_) + ")"};
  }
  return last_;
}

}  // namespace zkfarm::supervisor
