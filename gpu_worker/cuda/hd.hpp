#pragma once
// ZK_HD marks the arithmetic and the per-thread kernel bodies as callable from
// both host and device: nvcc builds them into the kernels, and the plain C++
// compiler builds the same source into tests/cuda_logic_test.cpp, which checks
// them against the CPU prover without a GPU (CI has none).
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
