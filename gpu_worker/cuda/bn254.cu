// BN254's GPU kernels: the MSM, NTT, synthesis and matrix-build templates
// (device_*_impl.cuh) instantiated for the curve. Adding a curve to the CUDA
// backend is adding a file like this one (and its case in cuda_backend.cu).
#include "gpu_worker/cuda/device_matrix_build_impl.cuh"
#include "gpu_worker/cuda/device_msm_impl.cuh"
#include "gpu_worker/cuda/device_ntt_impl.cuh"
#include "gpu_worker/cuda/device_synth_impl.cuh"

namespace zkfarm::cuda {

template class MsmRunner<Bn254>;
template class DeviceDomain<Bn254>;
template class DeviceMatrix<Bn254>;
template void h_scalars<Bn254>(const void*, const void*, const void*, void*, size_t, cudaStream_t);

}  // namespace zkfarm::cuda
