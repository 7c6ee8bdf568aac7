#pragma once
// The host's end of the GPU MSM (step 4 of msm_steps.cuh): from the per-window
// terms T[w][j] the device summed, the MSM's value on the CPU's curve types.
// T[g][j] = Σ_p parts[g][j][p]              (P = shape.parts slices a term)
// sum_g = T[g][L] + M·Σ_{j<L} 2^j·T[g][j]   (L = log2 S segments, M = shape.seg)
// result = Σ_g 2^(c·m·g)·sum_g               (Horner from the top group; a
//                                             group is a window when m = 1)
// A few hundred additions: cheaper here than a serial device thread.
#include <cstring>
#include <type_traits>

#include "groth16/curve.hpp"
#include "gpu_worker/cuda/msm_steps.cuh"

namespace zkfarm::cuda {

/// log2 of a power of two.
inline uint32_t log2_exact(uint32_t x) {
  uint32_t l = 0;
  while ((1u << l) < x) ++l;
  return l;
}

/// The device's XYZZ bytes as the CPU's point (same layout: 4 coordinates of
/// 32 or 64 bytes, Montgomery form).
template <class C, class DPoint>
Xyzz<C> to_host_point(const DPoint& d) {
  static_assert(sizeof(Xyzz<C>) == sizeof(DPoint), "device and host XYZZ layouts differ");
  static_assert(std::is_trivially_copyable_v<Xyzz<C>>);
  Xyzz<C> h;
  std::memcpy(&h, &d, sizeof h);
  return h;
}

/// terms: shape.groups() × (log2 S + 1) × shape.parts device points, group-major, then term, then part.
template <class C, class DPoint>
Xyzz<C> msm_finish(const MsmShape& sh, const DPoint* terms) {
  const uint32_t L = log2_exact(sh.segments());
  const uint32_t log_m = log2_exact(sh.seg);
  const uint32_t P = sh.parts;
  auto term = [&](uint32_t w, uint32_t j) {
    const DPoint* t = terms + (size_t(w) * (L + 1) + j) * P;
    Xyzz<C> sum = to_host_point<C>(t[0]);
    for (uint32_t p = 1; p < P; ++p) sum.add(to_host_point<C>(t[p]));
    return sum;
  };
  Xyzz<C> result = Xyzz<C>::infinity();
  for (int w = int(sh.groups()) - 1; w >= 0; --w) {
    for (uint32_t b = 0; b < sh.c * sh.copies; ++b) result = result.dbl();
    Xyzz<C> weighted = Xyzz<C>::infinity();
    for (int j = int(L) - 1; j >= 0; --j) {
      weighted = weighted.dbl();
      weighted.add(term(uint32_t(w), uint32_t(j)));
    }
    for (uint32_t b = 0; b < log_m; ++b) weighted = weighted.dbl();
    weighted.add(term(uint32_t(w), L));
    result.add(weighted);
  }
  return result;
}

}  // namespace zkfarm::cuda
