#pragma once
// ZK_HD marks the arithmetic and the per-thread kernel bodies as callable from
// both host and device: nvcc builds them into the kernels, and the plain C++
// compiler builds the same source into the CPU prover (the point formulas,
// groth16/xyzz_formulas.hpp) and into tests/gpu_worker/cuda_logic_test.cpp, which checks
// the device's steps against the CPU prover without a GPU (CI has none).
#if defined(__CUDACC__)
#define ZK_HD __host__ __device__ __forceinline__
#else
#define ZK_HD inline
#endif

#if defined(__CUDA_ARCH__)
#define ZK_UNROLL _Pragma("unroll")
#else
#define ZK_UNROLL
#endif

// ZK_HD_TEMPLATE precedes a ZK_HD template that the CPU's host-only types
// instantiate too (the point formulas over groth16::Fp): nvcc then does not
// warn that a __host__ __device__ function calls a __host__ one, which only
// happens in instantiations the device never runs.
#if defined(__CUDACC__)
#define ZK_HD_TEMPLATE _Pragma("nv_exec_check_disable")
#else
#define ZK_HD_TEMPLATE
#endif
