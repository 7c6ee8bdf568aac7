// The CUDA backend: a partition's prove step on the GPU.
//  - Keys: each loaded key's points (A, B1, B2, C, H) are uploaded once and
//    stay resident, most recently used first, within key_memory_share of the
//    device's memory; its domain tables and its A and B matrices by
//    constraint (DeviceMatrix, from the raw section-4 records) are built on
//    the device, so a replaced worker's first proof waits for the bus and a
//    few kernels, not for host-side preparation (issue 12, "fast key
//    reload"); Zkey's content checks run meanwhile (KeyCache, ContentChecks).
//  - Per partition only the witness crosses the bus (n_vars·32 bytes, on a
//    copy stream); synthesis runs on the device (a, b, c), then the witness
//    MSMs (A, B1, C, B2), the three NTTs to the odd coset, H, and the H MSM.
//  - Copies come from memory registered with cudaHostRegister (the arena, via
//    pin_host_memory) at the bus's rate.
//  - Every CUDA call is checked (ZK_CUDA); a failure throws CudaError.
#include <cuda_runtime.h>

#include <algorithm>
#include <chrono>
#include <cstdio>
#include <cstring>
#include <future>
#include <mutex>
#include <set>
#include <tuple>
#include <variant>

#include "gpu_worker/cuda/cuda_check.hpp"
#include "gpu_worker/cuda/device_msm.cuh"
#include "gpu_worker/cuda/device_ntt.cuh"
#include "gpu_worker/cuda/device_synth.cuh"
#include "gpu_worker/cuda_backend.hpp"
#include "gpu_worker/workspace_pool.hpp"
#include "groth16/errors.hpp"
#include "groth16/key_cache.hpp"
#include "groth16/msm.hpp"

namespace zkfarm::gpu {

namespace {

using cuda::DeviceBuffer;

// The precomputed MSM tables of one key (msm_steps.cuh, msm_table_shape):
// one shape for the witness MSMs (A, B1, C, B2: n_vars points each, sorted
// once, so one c and copy count) and one for H (domain_size points). B2
// gets no copies when its MSM runs on the CPU threads (g2_on_cpu).
struct KeyTables {
  cuda::MsmTableShape witness, h;
  bool b2 = true;  // B2's copies are built

  /// The shapes for `key` when each point set may hold at most max_copies copies.
  static KeyTables plan(const Zkey& key, uint32_t max_copies, bool b2) {
    const uint32_t bits = with_curve(key.curve, []<class C>(std::type_identity<C>) { return uint32_t(C::kFrBits); });
    return {cuda::msm_table_shape(key.n_vars, bits, max_copies), cuda::msm_table_shape(key.domain_size, bits, max_copies),
            b2};
  }
  /// No copies at all: each set's points once, as before issue 18.
  static KeyTables none(const Zkey& key) { return plan(key, 1, false); }
  bool any() const { return witness.copies > 1 || h.copies > 1; }
  size_t b2_copies() const { return b2 ? witness.copies : 1; }
  /// Device bytes of the key's points with these copies.
  size_t point_bytes(const Zkey& key) const {
    return size_t(witness.copies) * key.n_vars * 3 * key.g1_bytes + b2_copies() * key.n_vars * key.g2_bytes +
           size_t(h.copies) * key.domain_size * key.g1_bytes;
  }
};

// A key's points on the device, in the zkey's layout (affine, Montgomery),
// each set followed by its precomputed copies, with its domain tables and
// constraint matrix, for curve C.
template <class C>
struct ResidentKeyOf {
  DeviceBuffer a, b1, b2, c, h;
  typename cuda::MsmRunner<C>::Table witness_table, h_table;
  std::unique_ptr<cuda::DeviceDomain<C>> domain;
  std::unique_ptr<cuda::DeviceMatrix<C>> matrix;
};

template <class C>
using ResidentPtr = std::unique_ptr<ResidentKeyOf<C>>;

// A resident key of any curve (the one its header names: the variant's
// alternative of that curve).
struct ResidentKey {
  Curves::Variant<ResidentPtr> of;

  /// The most device bytes a key takes (before it is uploaded): its points
  /// with the copies of `tables`, its domain's tables, and its matrix at the
  /// build's peak (the raw records and the sort's buffers included), so the
  /// budget holds while it loads.
  static size_t estimate(const Zkey& key, const KeyTables& tables) {
    const size_t points = tables.point_bytes(key);
    return with_curve(key.curve, [&]<class C>(std::type_identity<C>) -> size_t {
      return points + cuda::DeviceDomain<C>::peak_bytes(key.log_domain) +
             cuda::DeviceMatrix<C>::estimate(key.domain_size, key.n_coeffs);
    });
  }
};

// Host-to-device copies of a key's arrays through two pinned staging buffers:
// the pool's threads copy a chunk from the (pageable, usually file-mapped)
// source into one buffer while the DMA engine uploads the other, so a key
// crosses the bus near the pinned rate instead of the driver's single-thread
// pageable path (about 9 GB/s on the H200 machine). This is what a replaced
// GPU worker waits for before its first proof (issue 12, "fast key reload").
class StagedUploader {
 public:
  explicit StagedUploader(ThreadPool& pool) : pool_(pool) {
    for (auto& b : buf_) ZK_CUDA(cudaHostAlloc(&b, kChunk, cudaHostAllocDefault));
    for (auto& e : done_) ZK_CUDA(cudaEventCreateWithFlags(&e, cudaEventDisableTiming));
    ZK_CUDA(cudaStreamCreateWithFlags(&stream_, cudaStreamNonBlocking));
  }
  ~StagedUploader() {
    cudaStreamSynchronize(stream_);
    for (auto& e : done_) cudaEventDestroy(e);
    for (auto& b : buf_) cudaFreeHost(b);
    cudaStreamDestroy(stream_);
  }
  StagedUploader(const StagedUploader&) = delete;
  StagedUploader& operator=(const StagedUploader&) = delete;

  /// Copies `bytes` from host `src` to device `dst`; returns at once (finish()
  /// waits). Throws CudaError.
  void copy(void* dst, const void* src, size_t bytes) {
    for (size_t at = 0; at < bytes; at += kChunk) {
      const size_t n = std::min(kChunk, bytes - at);
      uint8_t* stage = static_cast<uint8_t*>(buf_[next_]);
      ZK_CUDA(cudaEventSynchronize(done_[next_]));  // the buffer's previous upload is done
      const uint8_t* from = static_cast<const uint8_t*>(src) + at;
      pool_.parallel_for(n, [&](size_t b, size_t e) { std::memcpy(stage + b, from + b, e - b); });
      ZK_CUDA(cudaMemcpyAsync(static_cast<uint8_t*>(dst) + at, stage, n, cudaMemcpyHostToDevice, stream_));
      ZK_CUDA(cudaEventRecord(done_[next_], stream_));
      next_ ^= 1;
    }
  }
  /// Waits for every copy.
  void finish() { ZK_CUDA(cudaStreamSynchronize(stream_)); }
  /// The stream the copies run on: work queued on it after copy() sees their bytes.
  cudaStream_t stream() const { return stream_; }

 private:
  static constexpr size_t kChunk = size_t(64) << 20;
  ThreadPool& pool_;
  void* buf_[2] = {nullptr, nullptr};
  cudaEvent_t done_[2] = {};
  cudaStream_t stream_{};
  int next_ = 0;
};

void upload(StagedUploader& up, DeviceBuffer& dst, const uint8_t* src, size_t bytes) {
  dst.reserve(bytes ? bytes : 1);
  if (bytes) up.copy(dst.get(), src, bytes);
}

double ms_since(std::chrono::steady_clock::time_point t) {
  return std::chrono::duration<double, std::milli>(std::chrono::steady_clock::now() - t).count();
}

// Room for the key's point sets with their copies (copy 0 first in each).
template <class C>
void reserve_points(ResidentKeyOf<C>& r, const Zkey& key, const KeyTables& t) {
  const size_t nv = key.n_vars, wc = t.witness.copies;
  r.a.reserve(std::max<size_t>(1, wc * nv * C::kG1Bytes));
  r.b1.reserve(std::max<size_t>(1, wc * nv * C::kG1Bytes));
  r.b2.reserve(std::max<size_t>(1, t.b2_copies() * nv * C::kG2Bytes));
  r.c.reserve(std::max<size_t>(1, wc * nv * C::kG1Bytes));
  r.h.reserve(std::max<size_t>(1, size_t(t.h.copies) * key.domain_size * C::kG1Bytes));
}

// The key's points and raw section-4 records cross the bus through the
// staged uploader; then, on the uploader's stream, the device builds the
// domain's tables and the constraint matrix. The host prepares nothing but
// the copies (and, in KeyCache, Zkey's content checks alongside): the records
// are read without being trusted, and the result is dropped if the checks fail.
// Last, each point set's precomputed MSM copies (KeyTables) are built from it.
template <class C>
std::unique_ptr<ResidentKeyOf<C>> make_resident_of(const Zkey& key, ThreadPool& pool, const KeyTables& tables) {
  const auto t0 = std::chrono::steady_clock::now();
  auto r = std::make_unique<ResidentKeyOf<C>>();
  reserve_points(*r, key, tables);
  r->witness_table = {tables.witness, key.n_vars};
  r->h_table = {tables.h, key.domain_size};
  StagedUploader up(pool);
  upload(up, r->a, key.a.data(), key.a.size());
  upload(up, r->b1, key.b1.data(), key.b1.size());
  upload(up, r->b2, key.b2.data(), key.b2.size());
  // C covers signals nPublic+1.. only: indices below are points at infinity
  // (all-zero bytes), so the witness' one sort serves C as it does A and B.
  const size_t c_first = size_t(key.n_public) + 1;
  ZK_CUDA(cudaMemsetAsync(r->c.get(), 0, c_first * C::kG1Bytes, up.stream()));
  if (!key.c.empty()) up.copy(r->c.template get<uint8_t>() + c_first * C::kG1Bytes, key.c.data(), key.c.size());
  upload(up, r->h, key.h.data(), key.h.size());
  DeviceBuffer records;  // section 4 as the file holds it, for the matrix's build only
  upload(up, records, key.coeffs.data(), key.coeffs.size());
  up.finish();
  const double copy_ms = ms_since(t0);
  auto t = std::chrono::steady_clock::now();
  r->domain = std::make_unique<cuda::DeviceDomain<C>>(key.log_domain, up.stream());
  const double domain_ms = ms_since(t);
  t = std::chrono::steady_clock::now();
  r->matrix = std::make_unique<cuda::DeviceMatrix<C>>(records.get(), key.n_coeffs, key.domain_size, up.stream());
  records.release();
  const double matrix_ms = ms_since(t);
  // The precomputed copies, from copy 0 of each set (on the uploader's stream, after its copies).
  t = std::chrono::steady_clock::now();
  using Runner = cuda::MsmRunner<C>;
  Runner::build_g1_table(r->a.get(), key.n_vars, tables.witness, up.stream());
  Runner::build_g1_table(r->b1.get(), key.n_vars, tables.witness, up.stream());
  Runner::build_g1_table(r->c.get(), key.n_vars, tables.witness, up.stream());
  if (tables.b2) Runner::build_g2_table(r->b2.get(), key.n_vars, tables.witness, up.stream());
  Runner::build_g1_table(r->h.get(), key.domain_size, tables.h, up.stream());
  up.finish();
  const double tables_ms = ms_since(t);
  // The builds waited for the uploader's stream: the key is complete on the
  // device before any other stream's kernel reads it.
  const size_t point_bytes = key.a.size() + key.b1.size() + key.b2.size() + key.c.size() + key.h.size();
  std::fprintf(stderr,
               "zkfarm-gpu: %s resident in %.0f ms (points and coefficient records %.0f ms for %.2f GB + %.2f GB; "
               "built on the device: domain tables %.1f ms, constraint matrix of %u records %.1f ms, MSM tables "
               "%.1f ms: c = %u with %u copies for the witness, c = %u with %u for H, %.2f GB)\n",
               key.path.c_str(), ms_since(t0), copy_ms, double(point_bytes) / 1e9, double(key.coeffs.size()) / 1e9,
               domain_ms, key.n_coeffs, matrix_ms, tables_ms, tables.witness.c, tables.witness.copies, tables.h.c,
               tables.h.copies, double(tables.point_bytes(key)) / 1e9);
  return r;
}

// The key's curve, from its header (Zkey::curve), picks the templates.
std::unique_ptr<ResidentKey> make_resident(const Zkey& key, ThreadPool& pool, const KeyTables& tables) {
  auto r = std::make_unique<ResidentKey>();
  with_curve(key.curve, [&]<class C>(std::type_identity<C>) { r->of = make_resident_of<C>(key, pool, tables); });
  return r;
}

class Stream {
 public:
  Stream() { ZK_CUDA(cudaStreamCreateWithFlags(&s_, cudaStreamNonBlocking)); }
  ~Stream() { cudaStreamDestroy(s_); }
  Stream(const Stream&) = delete;
  Stream& operator=(const Stream&) = delete;
  operator cudaStream_t() const { return s_; }

 private:
  cudaStream_t s_{};
};

class Event {
 public:
  Event() { ZK_CUDA(cudaEventCreateWithFlags(&e_, cudaEventDisableTiming)); }
  ~Event() { cudaEventDestroy(e_); }
  Event(const Event&) = delete;
  Event& operator=(const Event&) = delete;
  operator cudaEvent_t() const { return e_; }

 private:
  cudaEvent_t e_{};
};

// What one prove step in flight uses alone: its streams (the witness copy,
// the compute, H's preparation beside the witness MSMs), their events, an MSM
// runner per curve (device buffers grown to its largest MSM) and the witness
// and a, b, c buffers. A worker with several lanes has one per step in flight
// (WorkspacePool); kernels of different steps then overlap on the device.
struct Workspace {
  Stream copy, compute, h_prep;
  Event witness_ready, abc_ready, h_ready;
  template <class C>
  using RunnerPtr = std::unique_ptr<cuda::MsmRunner<C>>;
  template <class... Cs>
  static std::tuple<RunnerPtr<Cs>...> runners_for(CurveList<Cs...>);
  decltype(runners_for(Curves{})) msm;
  DeviceBuffer abc, witness;

  Workspace() {
    for_each_curve([&]<class C>(std::type_identity<C>) { std::get<RunnerPtr<C>>(msm) = std::make_unique<cuda::MsmRunner<C>>(); });
  }
  template <class C>
  cuda::MsmRunner<C>& runner() {
    return *std::get<RunnerPtr<C>>(msm);
  }
};

class CudaBackend final : public ProveBackend {
 public:
  explicit CudaBackend(const CudaOptions& o) : opt_(o), pool_(o.threads) {
    int n = 0;
    ZK_CUDA(cudaGetDeviceCount(&n));
    if (n < 1) throw DeviceError("no CUDA device");
    ZK_CUDA(cudaSetDevice(0));
    // cudaSetDevice made the primary context; since CUDA 12 the flags replace
    // its own. A refusal leaves the default wait (a matter of speed, not of
    // results): warned, the error cleared, the backend kept.
    if (o.sync != CudaSync::automatic) {
      const cudaError_t e = cudaSetDeviceFlags(o.sync == CudaSync::spin    ? cudaDeviceScheduleSpin
                                               : o.sync == CudaSync::yield ? cudaDeviceScheduleYield
                                                                           : cudaDeviceScheduleBlockingSync);
      if (e != cudaSuccess) {
        (void)cudaGetLastError();
        std::fprintf(stderr, "zkfarm-gpu: warning: cudaSetDeviceFlags: %s; the device's default wait stays\n",
                     cudaGetErrorString(e));
      }
    }
    size_t free_bytes = 0, total = 0;
    ZK_CUDA(cudaMemGetInfo(&free_bytes, &total));
    // Resident keys, most recently used first, within the configured share.
    // Zkey's content checks run while the key uploads and builds: nothing of
    // it is used before they pass (KeyCache drops a key that fails them).
    budget_ = size_t(double(total) * opt_.key_memory_share);
    keys_ = std::make_unique<KeyCache<ResidentKey>>(
        kMaxResidentKeys,
        [this](const Zkey& key) {
          check_points(key);
          const KeyTables tables = tables_for(key);
          try {
            return make_resident(key, pool_, tables);
          } catch (const cuda::CudaError& e) {
            // The copies fit the budget, but the device may hold less free
            // memory than it promised (another process): the key goes
            // without copies, as before issue 18, and is counted so from now.
            if (!tables.any()) throw;
            cudaGetLastError();  // an allocation failure is not sticky; anything else fails again below
            std::fprintf(stderr, "zkfarm-gpu: %s with precomputed MSM copies: %s; loading it without them\n",
                         key.path.c_str(), e.what());
            without_copies_.insert(key.path);
            return make_resident(key, pool_, KeyTables::none(key));
          }
        },
        [this](const Zkey& key) { return ResidentKey::estimate(key, tables_for(key)); }, budget_,
        "of device memory resident keys may take (gpu_key_memory_percent)", ContentChecks::alongside_prepare);
    large_ = std::make_unique<Workspace>();  // made now: a device that cannot make one fails at start
  }

  ~CudaBackend() override {
    for (void* p : pinned_) cudaHostUnregister(p);
  }

  std::string name() const override { return "cuda"; }

  void pin_host_memory(void* base, size_t bytes) override {
    ZK_CUDA(cudaHostRegister(base, bytes, cudaHostRegisterDefault));
    pinned_.push_back(base);
  }

  void unpin_host_memory(void* base) override {
    if (std::erase(pinned_, base)) cudaHostUnregister(base);
  }

  bool has_key(const std::string& path) const override {
    std::lock_guard lock(keys_mutex_);
    return keys_->contains(path);
  }

  const Zkey* loaded(const std::string& path) override {
    std::lock_guard lock(keys_mutex_);
    auto* e = keys_->find_ready(path);
    return e ? e->key.get() : nullptr;
  }

  const Zkey& load(const std::string& path) override {
    std::lock_guard lock(keys_mutex_);
    const bool resident = keys_->contains(path);
    const auto& entry = keys_->get(path);
    if (!resident) {
      const KeyLoadTimes& t = entry.times;
      std::fprintf(stderr,
                   "zkfarm-gpu: %s opened, checked and resident in %.0f ms (opened %.0f ms; then the content checks "
                   "%.0f ms alongside the upload and device build %.0f ms)\n",
                   path.c_str(), t.total, t.open, t.contents, t.prepare);
    }
    return *entry.key;
  }

  AnyProof prove_curve(CurveId curve, const Zkey& key, const U256* witness, const U256& r, const U256& s,
                       const std::atomic<bool>* cancel) override {
    return with_curve(curve, [&]<class C>(std::type_identity<C>) -> AnyProof {
      return prove_on<C>(key, witness, r, s, cancel);
    });
  }

 private:
  // The key's header points, on the curve its header names.
  static void check_points(const Zkey& key) {
    with_curve(key.curve, [&]<class C>(std::type_identity<C>) { check_key_points_of<C>(key); });
  }

  // The precomputed copies a key gets: as many as msm_copies allows (0: up to
  // kMsmMaxCopies; unset: up to kMsmMaxCopies for keys small enough for
  // lanes, none above) while the key, copies included, takes at most half of
  // the resident keys' budget, so that two keys of its size stay resident
  // together rather than evicting each other (docs/decisions.md, issue 18).
  // None when the options force the window bits (tests), or when this key
  // once failed to load with them.
  KeyTables tables_for(const Zkey& key) const {
    if (opt_.window_bits || without_copies_.contains(key.path)) return KeyTables::none(key);
    const uint32_t asked = opt_.msm_copies.value_or(key.log_domain <= kMaxSharedLogDomain ? 0u : 1u);
    const uint32_t cap = asked ? std::min<uint32_t>(asked, cuda::kMsmMaxCopies) : cuda::kMsmMaxCopies;
    const size_t allowed = budget_ / 2;
    for (uint32_t m = cap; m > 1; --m) {
      const KeyTables t = KeyTables::plan(key, m, !opt_.g2_on_cpu);
      if (ResidentKey::estimate(key, t) <= allowed) return t;
    }
    return KeyTables::none(key);
  }

  // The key's device data for curve C, or null when it is over another curve.
  template <class C>
  static const ResidentKeyOf<C>* resident_of(const ResidentKey& k) {
    const auto* p = std::get_if<ResidentPtr<C>>(&k.of);
    return p ? p->get() : nullptr;
  }

  // One partition on curve C: the witness up, synthesis, the witness MSMs,
  // the odd-coset NTTs, H and its MSM on the device, then assemble_proof<C>
  // (shared with the CPU backend, so equal MSMs give byte-identical proofs).
  template <class C>
  ProofOf<C> prove_on(const Zkey& key, const U256* witness, const U256& r, const U256& s,
                      const std::atomic<bool>* cancel) {
    // A large key's step always uses the first workspace (one at a time), so
    // that only one set of buffers grows to a large partition's size; small
    // keys' steps share the pool.
    if (key.log_domain > kMaxSharedLogDomain) {
      std::lock_guard lock(large_mutex_);
      try {
        return prove_in<C>(*large_, key, witness, r, s, cancel);
      } catch (const cuda::CudaError& e) {
        if (!device_usable()) throw;  // (it waits for the step's queued work too)
        // Its grown buffers handed back: a fresh workspace holds none yet
        // (kept as it is if even a fresh one's streams cannot be made).
        try {
          large_ = std::make_unique<Workspace>();
        } catch (const cuda::CudaError&) {
        }
        throw_step_fault(e);
      }
    }
    try {
      auto ws = workspaces_.take();  // a new one's streams may not fit either
      try {
        return prove_in<C>(*ws, key, witness, r, s, cancel);
      } catch (const cuda::CudaError& e) {
        // First the verdict, which waits for every stream (this step's
        // queued kernels and copies included); only then its buffers go.
        const bool usable = device_usable();
        ws.discard();
        if (!usable) throw;
        throw_step_fault(e);
      }
    } catch (const cuda::CudaError& e) {  // take(): a new workspace could not be made
      if (!device_usable()) throw;
      throw_step_fault(e);
    }
  }

  // After a CUDA error in one prove step: whether the device is still usable.
  // An error of the step alone (an allocation refused, a launch without
  // resources) is not sticky: it is cleared from the thread's last error and
  // a synchronisation succeeds (after the other lanes' work: this path is
  // rare). A sticky one (an illegal address, a kernel that trapped) fails
  // every later call of the context, the synchronisation included; the
  // worker must then exit (DeviceError).
  static bool device_usable() {
    (void)cudaGetLastError();
    return cudaDeviceSynchronize() == cudaSuccess;
  }

  // The StepFault for `e`, once the device is known usable: the idle lanes'
  // grown buffers are handed back too (the retry needs the room).
  [[noreturn]] void throw_step_fault(const cuda::CudaError& e) {
    workspaces_.drop_idle();
    throw StepFault(std::string(e.what()) + " (this prove step alone: its workspace freed, the device usable)");
  }

  template <class C>
  ProofOf<C> prove_in(Workspace& workspace, const Zkey& key, const U256* witness, const U256& r, const U256& s,
                      const std::atomic<bool>* cancel) {
    Workspace* ws = &workspace;
    std::unique_ptr<ResidentKey> once;  // a key that did not come from load()
    const ResidentKeyOf<C>* dk = nullptr;
    {
      std::lock_guard lock(keys_mutex_);
      if (auto* e = keys_->find(&key)) dk = resident_of<C>(*e->prepared);
    }
    if (!dk) {
      // From elsewhere, or of the other curve: check_key_points_of<C> refuses
      // a key of another curve, naming the file.
      check_key_points_of<C>(key);
      once = make_resident(key, pool_, KeyTables::none(key));
      dk = resident_of<C>(*once);
    }
    auto check_cancel = [&] {
      if (cancel && cancel->load()) throw Cancelled();
    };
    DeviceBuffer &abc_ = ws->abc, &witness_ = ws->witness;
    const Stream &copy = ws->copy, &compute = ws->compute, &h_prep = ws->h_prep;
    const size_t n = key.domain_size, nv = key.n_vars;
    abc_.reserve(3 * n * 32);
    witness_.reserve(nv * 32);
    uint8_t* d_abc = abc_.get<uint8_t>();

    // The witness is the only upload of a partition.
    ZK_CUDA(cudaMemcpyAsync(witness_.get(), witness, nv * 32, cudaMemcpyHostToDevice, copy));
    ZK_CUDA(cudaEventRecord(ws->witness_ready, copy));

    MsmSumsOf<C> m;
    using G2Sum = Xyzz<typename C::G2Params>;
    std::future<G2Sum> b2_cpu;
    if (opt_.g2_on_cpu) {
      b2_cpu = std::async(std::launch::async, [&] {
        ScalarPlan plan = plan_scalars(witness, nv, pool_, 0, C::kFrBits);
        return msm<typename C::G2Params>(key.b2.data(), C::kG2Bytes, plan, 0, nv, pool_);
      });
    }
    auto& runner = ws->template runner<C>();
    try {
      ZK_CUDA(cudaStreamWaitEvent(compute, ws->witness_ready, 0));
      dk->matrix->synthesize(witness_.get(), d_abc, compute);
      // H's preparation (three odd-coset NTTs and a·b − c, in place in abc_)
      // runs on its own stream beside the witness MSMs, which read only the
      // witness; the H MSM waits for it. Nothing else touches abc_ meanwhile.
      ZK_CUDA(cudaEventRecord(ws->abc_ready, compute));
      ZK_CUDA(cudaStreamWaitEvent(h_prep, ws->abc_ready, 0));
      dk->domain->to_odd_coset(d_abc, h_prep, 3);  // A, B and C, adjacent, in the same launches
      cuda::h_scalars<C>(d_abc, d_abc + n * 32, d_abc + 2 * n * 32, d_abc, n, h_prep);
      ZK_CUDA(cudaEventRecord(ws->h_ready, h_prep));
      std::vector<typename cuda::MsmRunner<C>::G1Job> g1{{dk->a.get(), &m.a}, {dk->b1.get(), &m.b1}, {dk->c.get(), &m.c}};
      std::vector<typename cuda::MsmRunner<C>::G2Job> g2;
      if (!opt_.g2_on_cpu) g2.push_back({dk->b2.get(), &m.b2});
      // Tables have one copy (none) when window_bits is set (tables_for).
      runner.run(witness_.get<uint32_t>(), uint32_t(nv), g1, g2, compute, opt_.window_bits, &dk->witness_table);
      check_cancel();

      ZK_CUDA(cudaStreamWaitEvent(compute, ws->h_ready, 0));
      runner.run(abc_.get<uint32_t>(), uint32_t(n), {{dk->h.get(), &m.h}}, {}, compute, opt_.window_bits,
                 &dk->h_table);
    } catch (...) {
      if (b2_cpu.valid()) b2_cpu.wait();  // it reads the caller's witness: finish before unwinding
      cudaStreamSynchronize(h_prep);      // it writes abc_, and the next partition's synthesis too
      cudaStreamSynchronize(copy);        // the witness copy reads the caller's slot
      throw;
    }
    if (opt_.g2_on_cpu) m.b2 = b2_cpu.get();
    check_cancel();
    return assemble_proof<C>(key, m, r, s);
  }

  static constexpr size_t kMaxResidentKeys = 64;  // the memory budget binds first

  CudaOptions opt_;
  size_t budget_ = 0;  // device bytes resident keys may take
  std::set<std::string> without_copies_;  // keys whose copies did not fit on the device
  ThreadPool pool_;
  std::unique_ptr<KeyCache<ResidentKey>> keys_;
  mutable std::mutex keys_mutex_;  // keys_'s list (load() alone changes what it holds)
  std::vector<void*> pinned_;
  WorkspacePool<Workspace> workspaces_{[] { return std::make_unique<Workspace>(); }};  // small keys' steps
  std::mutex large_mutex_;
  std::unique_ptr<Workspace> large_;  // large keys' steps (and every step of a one-lane worker's large keys)
};

}  // namespace

bool cuda_available(std::string* why) {
  int n = 0;
  cudaError_t e = cudaGetDeviceCount(&n);
  if (e != cudaSuccess) {
    if (why) *why = std::string("no usable CUDA device: ") + cudaGetErrorString(e);
    cudaGetLastError();
    return false;
  }
  if (n < 1) {
    if (why) *why = "no CUDA device";
    return false;
  }
  return true;
}

std::string cuda_device_summary() {
  cudaDeviceProp p{};
  if (cudaGetDeviceProperties(&p, 0) != cudaSuccess) return "";
  char buf[256];
  std::snprintf(buf, sizeof buf, "%s, %.1f GiB, %d SMs, compute capability %d.%d", p.name,
                double(p.totalGlobalMem) / double(1ull << 30), p.multiProcessorCount, p.major, p.minor);
  return buf;
}

std::unique_ptr<ProveBackend> make_cuda_backend(const CudaOptions& options) {
  return std::make_unique<CudaBackend>(options);
}

}  // namespace zkfarm::gpu
