// zkfarm-bench-gpu: the CUDA backend's kernels and prove step against the CPU
// on the same machine, in one process (bench/gpu.sh runs it on the H200
// machine and keeps the table). Each row: the GPU's median time, the CPU's on
// all cores, their ratio, and whether the results agreed.
//   zkfarm-bench-gpu h2d                      H2D GB/s: arena registered vs pageable
//   zkfarm-bench-gpu ntt LOG [--curve C]      odd-coset transform (iNTT, shift, NTT) of 2^LOG
//   zkfarm-bench-gpu msm LOG [--check] [--curve C] [--dump FILE] [--scalars-from WTNS]
//                                             G1 MSM of 2^LOG, points resident, random scalars
//                                             (--dump: the inputs, for sppark's MSM, written to a new
//                                             file renamed over FILE; --scalars-from:
//                                             a real witness's values, repeated, as the scalars)
//   zkfarm-bench-gpu prove KEY WTNS [--g2 cpu|gpu] [--msm-copies M]   one partition's prove step (the key's curve)
// C: bn128 (default) or bls12381.
//   zkfarm-bench-gpu reload KEY WTNS          a new backend's first proof minus a steady one
//                                             (the key's load; CPU column: the CPU backend's load)
#include <CLI/CLI.hpp>
#include <algorithm>
#include <chrono>
#include <cstdio>
#include <cstring>
#include <filesystem>
#include <random>
#include <vector>

#include "random_inputs.hpp"
#include "gpu_worker/cpu_backend.hpp"
#include "gpu_worker/cuda/device_msm.cuh"
#include "gpu_worker/cuda/device_ntt.cuh"
#include "gpu_worker/cuda_backend.hpp"
#include "groth16/msm.hpp"
#include "groth16/ntt.hpp"
#include "files/safe_write.hpp"
#include "files/temp_file.hpp"
#include "groth16/prover.hpp"
#include "groth16/wtns.hpp"
#include "shm/arena.hpp"

namespace {

using namespace zkfarm;
using namespace zkfarm::cuda;
using Clock = std::chrono::steady_clock;

double ms_since(Clock::time_point t) { return std::chrono::duration<double, std::milli>(Clock::now() - t).count(); }

double median(std::vector<double> v) {
  std::sort(v.begin(), v.end());
  return v[v.size() / 2];
}

// Median of `reps` timings of f(), after one warm-up, in ms (host clock after a device sync).
template <class Fn>
double time_ms(int reps, Fn f) {
  f();
  ZK_CUDA(cudaDeviceSynchronize());
  std::vector<double> t;
  for (int i = 0; i < reps; ++i) {
    auto t0 = Clock::now();
    f();
    ZK_CUDA(cudaDeviceSynchronize());
    t.push_back(ms_since(t0));
  }
  return median(t);
}

void row(const std::string& what, double gpu_ms, double cpu_ms, const std::string& agree) {
  std::printf("| %-34s | %10.2f ms | %10.1f ms | %7.1fx | %s |\n", what.c_str(), gpu_ms, cpu_ms, cpu_ms / gpu_ms,
              agree.c_str());
  std::fflush(stdout);
}

int h2d() {
  const size_t bytes = size_t(1) << 30;
  std::vector<uint8_t> pageable(bytes, 1);
  // The farm's kind of arena: an anonymous sealed memfd (shm/arena.hpp).
  shm::Arena arena = shm::Arena::create_memfd("zkfarm-bench-h2d", bytes);
  std::memset(arena.slots(), 1, bytes);
  DeviceBuffer d(bytes);
  auto copy = [&](const void* src) { ZK_CUDA(cudaMemcpy(d.get(), src, bytes, cudaMemcpyHostToDevice)); };
  const double t_page = time_ms(5, [&] { copy(pageable.data()); });
  ZK_CUDA(cudaHostRegister(arena.mapping(), arena.mapping_bytes(), cudaHostRegisterDefault));
  const double t_pin = time_ms(5, [&] { copy(arena.slots()); });
  ZK_CUDA(cudaHostUnregister(arena.mapping()));
  const double gb = double(bytes) / 1e9;
  std::printf("| H2D 1 GiB, memfd arena registered vs pageable | %6.1f GB/s | %6.1f GB/s | %7.1fx | - |\n", gb / (t_pin / 1e3),
              gb / (t_page / 1e3), t_page / t_pin);
  return 0;
}

// H's preparation as a prove step runs it: A, B and C to the odd coset in
// one call, then h_i = a_i·b_i − c_i out of Montgomery form; against the
// CPU's three transforms and the same products. True when equal.
template <class C>
bool h_preparation(uint32_t log_n, const DomainOf<C>& dom, const DeviceDomain<C>& dd, ThreadPool& pool) {
  using Fr = typename C::Fr;
  std::mt19937_64 rng(log_n + 100);
  const size_t n = size_t(1) << log_n;
  std::vector<Fr> abc(3 * n);
  for (auto& x : abc) x = Fr::from_u256(test::random_scalar(rng));
  DeviceBuffer d(3 * n * 32), orig(3 * n * 32);
  ZK_CUDA(cudaMemcpy(orig.get(), abc.data(), 3 * n * 32, cudaMemcpyHostToDevice));
  auto reset = [&] { ZK_CUDA(cudaMemcpyAsync(d.get(), orig.get(), 3 * n * 32, cudaMemcpyDeviceToDevice, nullptr)); };
  const double copy = time_ms(10, reset);
  uint8_t* p = d.get<uint8_t>();
  const double g = time_ms(10, [&] {
    reset();
    dd.to_odd_coset(p, nullptr, 3);
    h_scalars<C>(p, p + n * 32, p + 2 * n * 32, p, n, nullptr);
  });
  std::vector<U256> got(n);
  ZK_CUDA(cudaMemcpy(got.data(), p, n * 32, cudaMemcpyDeviceToHost));
  auto t0 = Clock::now();
  for (int k = 0; k < 3; ++k) dom.to_odd_coset(abc.data() + k * n, pool);
  std::vector<U256> expect(n);
  pool.parallel_for(n, [&](size_t b, size_t e) {
    for (size_t i = b; i < e; ++i) expect[i] = (abc[i] * abc[n + i] - abc[2 * n + i]).to_u256();
  });
  const double c = ms_since(t0);
  const bool same = got == expect;
  row(std::string(C::kName) + " H preparation (3 odd-coset NTTs, a·b − c) 2^" + std::to_string(log_n), g - copy, c,
      same ? "equal" : "DIFFERENT");
  return same;
}

template <class C>
int ntt(uint32_t log_n) {
  using Fr = typename C::Fr;
  ThreadPool pool(0);
  std::mt19937_64 rng(log_n);
  const size_t n = size_t(1) << log_n;
  std::vector<Fr> v(n);
  for (auto& x : v) x = Fr::from_u256(test::random_scalar(rng));
  const DomainOf<C> dom(log_n, pool);
  DeviceDomain<C> dd(log_n, nullptr);
  DeviceBuffer d(n * 32), orig(n * 32);
  ZK_CUDA(cudaMemcpy(orig.get(), v.data(), n * 32, cudaMemcpyHostToDevice));
  // Each run starts from the same input (a device-to-device copy, timed alone and subtracted).
  const double copy = time_ms(10, [&] { ZK_CUDA(cudaMemcpyAsync(d.get(), orig.get(), n * 32, cudaMemcpyDeviceToDevice, nullptr)); });
  const double g = time_ms(10, [&] {
    ZK_CUDA(cudaMemcpyAsync(d.get(), orig.get(), n * 32, cudaMemcpyDeviceToDevice, nullptr));
    dd.to_odd_coset(d.get(), nullptr);
  });
  std::vector<Fr> got(n);
  ZK_CUDA(cudaMemcpy(got.data(), d.get(), n * 32, cudaMemcpyDeviceToHost));
  auto t0 = Clock::now();
  dom.to_odd_coset(v.data(), pool);
  const double c = ms_since(t0);
  const bool same = std::equal(v.begin(), v.end(), got.begin(), [](const Fr& a, const Fr& b) { return a == b; });
  row(std::string(C::kName) + " odd-coset NTT 2^" + std::to_string(log_n), g - copy, c, same ? "equal" : "DIFFERENT");
  const bool h_same = h_preparation<C>(log_n, dom, dd, pool);  // its row even when the transform differs
  return same && h_same ? 0 : 1;
}

// The scalars of a real witness at any size: value i mod nWitness of WTNS
// (a circom witness of curve C's scalar field), so the MSM sees the
// witness's own mix of zeros, ones, small and full-size values (a witness is
// what the A, B and C MSMs of a proof sum). Prints that mix on stderr.
template <class C>
std::vector<U256> witness_scalars(const std::string& path, size_t n) {
  Wtns w = Wtns::open(path);
  check_witness_field(w, C::kId);
  std::vector<U256> sc(n);
  size_t zeros = 0, ones = 0, small = 0;
  for (size_t i = 0; i < n; ++i) {
    std::memcpy(sc[i].data(), w.value(uint32_t(i % w.n_witness)).data(), 32);
    const bool high = sc[i][1] | sc[i][2] | sc[i][3];
    zeros += !high && sc[i][0] == 0;
    ones += !high && sc[i][0] == 1;
    small += !high && sc[i][0] > 1;
  }
  std::fprintf(stderr, "%s: %u values repeated to %zu scalars: %.1f%% zero, %.1f%% one, %.1f%% other below 2^64\n",
               path.c_str(), w.n_witness, n, 100.0 * zeros / n, 100.0 * ones / n, 100.0 * small / n);
  return sc;
}

template <class C>
int msm_bench(uint32_t log_n, bool check, unsigned c_bits, const std::string& dump, const std::string& scalars_from) {
  using G1Params = typename C::G1Params;
  using G1 = Xyzz<G1Params>;
  ThreadPool pool(0);
  std::mt19937_64 rng(100 + log_n);
  const size_t n = size_t(1) << log_n;
  auto t0 = Clock::now();
  std::vector<uint8_t> pts = test::consecutive_points<G1Params>(C::g1_generator(), 1 + rng() % 1000, n, pool);
  std::vector<U256> sc;
  if (scalars_from.empty()) {
    sc.resize(n);
    for (auto& s : sc) s = test::random_scalar_of<C>(rng);
  } else {
    sc = witness_scalars<C>(scalars_from, n);
  }
  std::fprintf(stderr, "msm 2^%u: inputs made in %.0f ms\n", log_n, ms_since(t0));
  if (!dump.empty()) {  // for another MSM (bench/gpu.sh: sppark's) on the same inputs
    // Written beside the target and renamed over it: a link there is replaced, never followed.
    const std::filesystem::path target(dump);
    const std::string dir = target.has_parent_path() ? target.parent_path().string() : ".";
    const auto dir_fd = files::open_dir(dir);
    files::TempFile out(dir_fd.get(), dir, target.filename().string(), 0644);
    out.write_all(pts.data(), pts.size());
    out.write_all(sc.data(), n * sizeof(U256));
    out.commit();
  }
  DeviceBuffer dp(pts.size()), ds(n * 32);
  ZK_CUDA(cudaMemcpy(dp.get(), pts.data(), pts.size(), cudaMemcpyHostToDevice));
  ZK_CUDA(cudaMemcpy(ds.get(), sc.data(), n * 32, cudaMemcpyHostToDevice));
  MsmRunner<C> runner;
  G1 got;
  const double g = time_ms(5, [&] { runner.run(ds.get<uint32_t>(), uint32_t(n), {{dp.get(), &got}}, {}, nullptr, c_bits); });
  double c = 0;
  std::string agree = "-";
  if (check) {
    t0 = Clock::now();
    auto plan = plan_scalars(sc.data(), n, pool, 0, C::kFrBits);
    G1 expect = msm<G1Params>(pts.data(), C::kG1Bytes, plan, 0, n, pool);
    c = ms_since(t0);
    agree = got.equals(expect) ? "equal" : "DIFFERENT";
  }
  if (!dump.empty()) {  // the sum's affine x, Montgomery limbs (limb 0 first), for the other MSM to match
    const auto a = got.to_affine();
    std::fprintf(stderr, "zkfarm G1 MSM 2^%u: x =", log_n);
    for (size_t i = 0; i < a.x.N; ++i) std::fprintf(stderr, " %016llx", (unsigned long long)a.x.v[i]);
    std::fprintf(stderr, "\n");
  }
  std::string what = std::string(C::kName) + " G1 MSM 2^" + std::to_string(log_n);
  if (!scalars_from.empty()) {  // the witness file's name, without folders and extension
    std::string base = scalars_from.substr(scalars_from.find_last_of('/') + 1);
    what += ", " + base.substr(0, base.rfind('.')) + " witness";
  }
  row(what + (c_bits ? " c=" + std::to_string(c_bits) : ""), g, c, agree);
  if (c_bits) return agree == "DIFFERENT";
  // The same MSM over a precomputed table (as resident keys have them): its
  // "CPU" column is the plain GPU MSM above, so the ratio is the table's gain.
  typename MsmRunner<C>::Table table{msm_table_shape(uint32_t(n), C::kFrBits, kMsmMaxCopies), uint32_t(n)};
  DeviceBuffer dt(table.shape.copies * pts.size());
  ZK_CUDA(cudaMemcpy(dt.get(), pts.data(), pts.size(), cudaMemcpyHostToDevice));
  t0 = Clock::now();
  MsmRunner<C>::build_g1_table(dt.get(), uint32_t(n), table.shape, nullptr);
  ZK_CUDA(cudaDeviceSynchronize());
  std::fprintf(stderr, "msm 2^%u: table of %u copies (c = %u, %.2f GB) built in %.0f ms\n", log_n, table.shape.copies,
               table.shape.c, double(table.shape.copies * pts.size()) / 1e9, ms_since(t0));
  G1 folded;
  const double f = time_ms(5, [&] {
    runner.run(ds.get<uint32_t>(), uint32_t(n), {{dt.get(), &folded}}, {}, nullptr, 0, &table);
  });
  const std::string same = folded.equals(got) ? (check ? agree : "same as plain") : "DIFFERENT";
  row(what + ", table c=" + std::to_string(table.shape.c) + " m=" + std::to_string(table.shape.copies), f, g, same);
  return agree == "DIFFERENT" || same == "DIFFERENT";
}

template <class C>
int prove_bench(gpu::ProveBackend& cuda, gpu::CpuBackend& cpu, const Zkey& key, const Zkey& key_cpu, const Wtns& w,
                bool g2_on_cpu, int reps, unsigned msm_copies) {
  // The witness in registered memory, as the worker's arena slot is; the
  // backends synthesize from it and never write it.
  std::vector<U256> witness(key.n_vars);
  gpu::HostPin pin(cuda, witness.data(), witness.size() * sizeof(U256), "zkfarm-bench-gpu");
  std::memcpy(witness.data(), w.values.data(), witness.size() * sizeof(U256));
  std::mt19937_64 rng(1);
  const U256 r = test::random_scalar_of<C>(rng), s = test::random_scalar_of<C>(rng);
  ProofOf<C> pg{};
  std::vector<double> tg;
  for (int i = 0; i < reps + 1; ++i) {
    auto t0 = Clock::now();
    pg = gpu::prove_of<C>(cuda, key, witness.data(), r, s);
    if (i) tg.push_back(ms_since(t0));  // the first run warms up
  }
  auto t0 = Clock::now();
  ProofOf<C> pc = gpu::prove_of<C>(cpu, key_cpu, witness.data(), r, s);
  const double c = ms_since(t0);
  const bool same = std::memcmp(&pg, &pc, sizeof pg) == 0;
  row(std::string(C::kName) + " prove step, domain 2^" + std::to_string(key.log_domain) +
          (g2_on_cpu ? ", G2 on CPU" : ", G2 on GPU") +
          (msm_copies == 1 ? "" : ", tables ≤ " + (msm_copies ? std::to_string(msm_copies) : std::string("16"))),
      median(tg), c, same ? "identical proofs" : "PROOFS DIFFER");
  return same ? 0 : 1;
}

int prove_bench(const std::string& key_path, const std::string& wtns_path, bool g2_on_cpu, int reps,
                unsigned msm_copies) {
  gpu::CudaOptions o;
  o.g2_on_cpu = g2_on_cpu;
  o.msm_copies = msm_copies;
  auto cuda = gpu::make_cuda_backend(o);
  gpu::CpuBackend cpu(0, 1);
  const Zkey& key = cuda->load(key_path);
  const Zkey& key_cpu = cpu.load(key_path);
  Wtns w = Wtns::open(wtns_path);
  check_witness_matches(key, w);
  return with_curve(key.curve, [&]<class C>(std::type_identity<C>) {
    return prove_bench<C>(*cuda, cpu, key, key_cpu, w, g2_on_cpu, reps, msm_copies);
  });
}

// What a replaced GPU worker pays before its first proof (issue 12: at most
// 300 ms at 2^22): a fresh backend (the process's CUDA context is warm, as a
// worker's is by READY) loads the key and proves; the figure is that first
// proof's time minus a steady proof's of the same backend. The backend logs
// the load's phases on stderr.
int reload_bench(const std::string& key_path, const std::string& wtns_path, int reps) {
  if (Zkey::open(key_path, ZkeyContents::unchecked).curve != CurveId::bn254)
    throw std::invalid_argument(key_path + ": reload measures bn128 keys only");
  Wtns w = Wtns::open(wtns_path);
  std::vector<U256> witness(w.n_witness);
  std::memcpy(witness.data(), w.values.data(), witness.size() * sizeof(U256));
  std::mt19937_64 rng(2);
  const U256 r = test::random_scalar(rng), s = test::random_scalar(rng);
  std::vector<double> extra;
  Proof first{};
  for (int i = 0; i < reps + 1; ++i) {
    auto cuda = gpu::make_cuda_backend(gpu::CudaOptions{});
    gpu::HostPin pin(*cuda, witness.data(), witness.size() * sizeof(U256), "zkfarm-bench-gpu");
    auto t0 = Clock::now();
    const Zkey& key = cuda->load(key_path);
    check_witness_matches(key, w);
    first = gpu::prove_of<Bn254>(*cuda, key, witness.data(), r, s);
    const double first_ms = ms_since(t0);
    gpu::prove_of<Bn254>(*cuda, key, witness.data(), r, s);
    t0 = Clock::now();
    gpu::prove_of<Bn254>(*cuda, key, witness.data(), r, s);
    if (i) extra.push_back(first_ms - ms_since(t0));  // the first round also warms the page cache
  }
  gpu::CpuBackend cpu(0, 1);
  auto t0 = Clock::now();
  const Zkey& key_cpu = cpu.load(key_path);
  const double cpu_load = ms_since(t0);
  const Proof pc = gpu::prove_of<Bn254>(cpu, key_cpu, witness.data(), r, s);
  const bool same = std::memcmp(&first, &pc, sizeof pc) == 0;
  row("key reload, domain 2^" + std::to_string(key_cpu.log_domain) + " (first − steady)", median(extra), cpu_load,
      same ? "identical proofs" : "PROOFS DIFFER");
  return same ? 0 : 1;
}

}  // namespace

int main(int argc, char** argv) {
  CLI::App app{"zkfarm-bench-gpu: GPU kernels and prove step against the CPU (a table row each)"};
  app.require_subcommand(1);
  auto* h = app.add_subcommand("h2d", "host-to-device copy rate, registered arena vs pageable");
  uint32_t log_n = 20;
  unsigned c_bits = 0;
  bool check = false;
  auto* n = app.add_subcommand("ntt", "odd-coset transform");
  n->add_option("LOG", log_n)->required()->check(CLI::Range(1, 28));
  std::string curve = "bn128";
  n->add_option("--curve", curve)->check(CLI::IsMember({"bn128", "bls12381"}));
  auto* m = app.add_subcommand("msm", "G1 MSM, points resident");
  m->add_option("--curve", curve)->check(CLI::IsMember({"bn128", "bls12381"}));
  std::string dump;
  m->add_option("--dump", dump, "also write the points then the scalars (canonical, 32 bytes each) to this file");
  m->add_option("LOG", log_n)->required()->check(CLI::Range(1, 26));
  m->add_flag("--check", check, "also run the CPU MSM and compare");
  m->add_option("--window", c_bits, "window bits (0: automatic)");
  std::string scalars_from;
  m->add_option("--scalars-from", scalars_from, "a witness (.wtns) whose values, repeated, are the scalars");
  std::string key, wtns, g2 = "gpu";
  int reps = 5;
  auto* p = app.add_subcommand("prove", "one partition's prove step, CUDA and CPU backends");
  p->add_option("KEY", key)->required();
  p->add_option("WTNS", wtns)->required();
  p->add_option("--g2", g2)->check(CLI::IsMember({"gpu", "cpu"}));
  p->add_option("--reps", reps);
  unsigned msm_copies = 1;
  p->add_option("--msm-copies", msm_copies, "precomputed copies of the key's MSM bases (1: none; 0: up to 16)")
      ->check(CLI::Range(0u, 16u));
  auto* rl = app.add_subcommand("reload", "a new backend's first proof minus a steady one (the key's load)");
  rl->add_option("KEY", key)->required();
  rl->add_option("WTNS", wtns)->required();
  rl->add_option("--reps", reps);
  CLI11_PARSE(app, argc, argv);
  std::string why;
  if (!gpu::cuda_available(&why)) {
    std::fprintf(stderr, "zkfarm-bench-gpu: %s\n", why.c_str());
    return 3;
  }
  try {
    if (*h) return h2d();
    const std::optional<CurveId> id = curve_id_of_name(curve);
    if ((*n || *m) && !id) throw std::invalid_argument("--curve " + curve + ": no such curve");
    if (*n) return with_curve(*id, [&]<class C>(std::type_identity<C>) { return ntt<C>(log_n); });
    if (*m)
      return with_curve(*id, [&]<class C>(std::type_identity<C>) {
        return msm_bench<C>(log_n, check, c_bits, dump, scalars_from);
      });
    if (*rl) return reload_bench(key, wtns, reps);
    return prove_bench(key, wtns, g2 == "cpu", reps, msm_copies);
  } catch (const std::exception& e) {
    std::fprintf(stderr, "zkfarm-bench-gpu: %s\n", e.what());
    return 1;
  }
}
