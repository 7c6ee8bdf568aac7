// The CUDA backend: a partition's prove step on the GPU.
//  - Keys: each loaded key's points (A, B1, B2, C, H) and its domain tables are
//    uploaded once and stay resident, most recently used first, within
//    key_memory_share of the device's memory.
//  - Keys also keep their A and B matrices by constraint (DeviceMatrix), so
//    per partition only the witness crosses the bus (n_vars·32 bytes, on a
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
#include <optional>

#include "gpu_worker/cuda/cuda_check.hpp"
#include "gpu_worker/cuda/device_msm.cuh"
#include "gpu_worker/cuda/device_ntt.cuh"
#include "gpu_worker/cuda/device_synth.cuh"
#include "gpu_worker/cuda_backend.hpp"
#include "groth16/errors.hpp"
#include "groth16/key_cache.hpp"
#include "groth16/msm.hpp"

namespace zkfarm::gpu {

namespace {

using cuda::DeviceBuffer;

// A key's points on the device, in the zkey's layout (affine, Montgomery).
struct ResidentKey {
  DeviceBuffer a, b1, b2, c, h;
  std::unique_ptr<cuda::DeviceDomain> domain;
  std::unique_ptr<cuda::DeviceMatrix> matrix;

  /// Device bytes a key takes resident (before it is uploaded).
  static size_t estimate(const Zkey& key) {
    return size_t(key.n_vars) * (3 * kG1Bytes + kG2Bytes) + size_t(key.domain_size) * (kG1Bytes + 32) +
           cuda::DeviceMatrix::estimate(key.domain_size, key.n_coeffs);
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

std::unique_ptr<ResidentKey> make_resident(const Zkey& key, ThreadPool& pool) {
  const auto t0 = std::chrono::steady_clock::now();
  auto r = std::make_unique<ResidentKey>();
  // The host-side preparation (the domain's tables, the constraint matrix) runs
  // on a thread of its own while the points cross the bus; both use the pool,
  // whose loops take turns. The future's destructor waits for it on any throw.
  std::optional<Domain> domain;
  std::optional<ConstraintMatrix> matrix;
  double prep_ms = 0;
  auto prep = std::async(std::launch::async, [&] {
    const auto t = std::chrono::steady_clock::now();
    domain.emplace(key.log_domain, pool);
    matrix.emplace(ConstraintMatrix::build(key, &pool));
    prep_ms = ms_since(t);
  });
  StagedUploader up(pool);
  upload(up, r->a, key.a.data(), key.a.size());
  upload(up, r->b1, key.b1.data(), key.b1.size());
  upload(up, r->b2, key.b2.data(), key.b2.size());
  // C covers signals nPublic+1.. only: indices below are points at infinity
  // (all-zero bytes), so the witness' one sort serves C as it does A and B.
  const size_t c_first = size_t(key.n_public) + 1;
  r->c.reserve(size_t(key.n_vars) * kG1Bytes);
  ZK_CUDA(cudaMemset(r->c.get(), 0, c_first * kG1Bytes));
  if (!key.c.empty()) up.copy(r->c.get<uint8_t>() + c_first * kG1Bytes, key.c.data(), key.c.size());
  upload(up, r->h, key.h.data(), key.h.size());
  up.finish();
  const double points_ms = ms_since(t0);
  prep.get();  // rethrows what the preparation threw
  const auto t = std::chrono::steady_clock::now();
  r->domain = std::make_unique<cuda::DeviceDomain>(*domain);
  r->matrix = std::make_unique<cuda::DeviceMatrix>(*matrix,
                                                   [&](void* dst, const void* src, size_t bytes) { up.copy(dst, src, bytes); });
  up.finish();
  // The domain's uploads ran on the legacy stream, which the non-blocking
  // compute stream does not wait for: finish them before any kernel reads the key.
  ZK_CUDA(cudaDeviceSynchronize());
  std::fprintf(stderr,
               "zkfarm-gpu: %s resident in %.0f ms (points %.0f ms for %.2f GB; domain and constraint matrix %.0f ms "
               "on the host meanwhile, %.0f ms to upload them)\n",
               key.path.c_str(), ms_since(t0), points_ms,
               double(key.a.size() + key.b1.size() + key.b2.size() + key.c.size() + key.h.size()) / 1e9, prep_ms,
               ms_since(t));
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

class CudaBackend final : public ProveBackend {
 public:
  explicit CudaBackend(const CudaOptions& o) : opt_(o), pool_(o.threads) {
    int n = 0;
    ZK_CUDA(cudaGetDeviceCount(&n));
    if (n < 1) throw DeviceError("no CUDA device");
    ZK_CUDA(cudaSetDevice(0));
    size_t free_bytes = 0, total = 0;
    ZK_CUDA(cudaMemGetInfo(&free_bytes, &total));
    // Resident keys, most recently used first, within the configured share.
    keys_ = std::make_unique<KeyCache<ResidentKey>>(
        kMaxResidentKeys,
        [this](const Zkey& key) {
          check_key_points(key);
          return make_resident(key, pool_);
        },
        ResidentKey::estimate, size_t(double(total) * opt_.key_memory_share),
        "of device memory resident keys may take (gpu_key_memory_percent)");
    copy_ = std::make_unique<Stream>();
    compute_ = std::make_unique<Stream>();
    witness_ready_ = std::make_unique<Event>();
    msm_ = std::make_unique<cuda::MsmRunner>();
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

  const Zkey& load(const std::string& path) override {
    const auto t0 = std::chrono::steady_clock::now();
    const bool resident = keys_->contains(path);
    const Zkey& key = *keys_->get(path).key;
    if (!resident) std::fprintf(stderr, "zkfarm-gpu: %s opened, checked and resident in %.0f ms\n", path.c_str(), ms_since(t0));
    return key;
  }

  Proof prove(const Zkey& key, const U256* witness, const U256& r, const U256& s,
              const std::atomic<bool>* cancel) override {
    std::unique_ptr<ResidentKey> once;  // a key that did not come from load()
    const ResidentKey* dk = nullptr;
    if (auto* e = keys_->find(&key)) dk = e->prepared.get();
    if (!dk) {
      check_key_points(key);
      once = make_resident(key, pool_);
      dk = once.get();
    }
    auto check_cancel = [&] {
      if (cancel && cancel->load()) throw Cancelled();
    };
    const size_t n = key.domain_size, nv = key.n_vars;
    abc_.reserve(3 * n * 32);
    witness_.reserve(nv * 32);
    uint8_t* d_abc = abc_.get<uint8_t>();

    // The witness is the only upload of a partition.
    ZK_CUDA(cudaMemcpyAsync(witness_.get(), witness, nv * 32, cudaMemcpyHostToDevice, *copy_));
    ZK_CUDA(cudaEventRecord(*witness_ready_, *copy_));

    MsmSums m;
    std::future<G2> b2_cpu;
    if (opt_.g2_on_cpu) {
      b2_cpu = std::async(std::launch::async, [&] {
        ScalarPlan plan = plan_scalars(witness, nv, pool_);
        return msm<G2Params>(key.b2.data(), kG2Bytes, plan, 0, nv, pool_);
      });
    }
    try {
      ZK_CUDA(cudaStreamWaitEvent(*compute_, *witness_ready_, 0));
      dk->matrix->synthesize(witness_.get(), d_abc, *compute_);
      std::vector<cuda::G1Job> g1{{dk->a.get(), &m.a}, {dk->b1.get(), &m.b1}, {dk->c.get(), &m.c}};
      std::vector<cuda::G2Job> g2;
      if (!opt_.g2_on_cpu) g2.push_back({dk->b2.get(), &m.b2});
      msm_->run(witness_.get<uint32_t>(), uint32_t(nv), g1, g2, *compute_, opt_.window_bits);
      check_cancel();

      for (int i = 0; i < 3; ++i) dk->domain->to_odd_coset(d_abc + i * n * 32, *compute_);
      cuda::h_scalars(d_abc, d_abc + n * 32, d_abc + 2 * n * 32, d_abc, n, *compute_);
      msm_->run(abc_.get<uint32_t>(), uint32_t(n), {{dk->h.get(), &m.h}}, {}, *compute_, opt_.window_bits);
    } catch (...) {
      if (b2_cpu.valid()) b2_cpu.wait();  // it reads the caller's witness: finish before unwinding
      throw;
    }
    if (opt_.g2_on_cpu) m.b2 = b2_cpu.get();
    check_cancel();
    return assemble_proof(key, m, r, s);
  }

 private:
  static constexpr size_t kMaxResidentKeys = 64;  // the memory budget binds first

  CudaOptions opt_;
  ThreadPool pool_;
  std::unique_ptr<KeyCache<ResidentKey>> keys_;
  std::vector<void*> pinned_;
  std::unique_ptr<Stream> copy_, compute_;
  std::unique_ptr<Event> witness_ready_;
  std::unique_ptr<cuda::MsmRunner> msm_;
  DeviceBuffer abc_, witness_;
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
