// Standalone timing harness for sppark's BLS12-381 G1 MSM (Pippenger).
// Usage: sppark_msm_bls FILE LOG
//   FILE: n = 2^LOG affine points (96 B each: x||y, 6 LE u64 limbs each,
//         Montgomery form R=2^384; (0,0) = point at infinity), followed by
//         n scalars (32 B each: 4 LE u64 limbs, canonical, < r, NOT Montgomery).
#define FEATURE_BLS12_381
#include <cuda.h>

#include <ff/bls12-381.hpp>

#include <ec/jacobian_t.hpp>
#include <ec/xyzz_t.hpp>

typedef jacobian_t<fp_t> point_t;
typedef xyzz_t<fp_t> bucket_t;
typedef bucket_t::affine_t affine_t;
typedef fr_t scalar_t;

#include <msm/pippenger.cuh>

#ifndef __CUDA_ARCH__
#include <algorithm>
#include <chrono>
#include <cstdio>
#include <cstdlib>
#include <cstring>
#include <vector>

static void check(cudaError_t e, const char* what)
{
    if (e != cudaSuccess) {
        fprintf(stderr, "CUDA error at %s: %s\n", what, cudaGetErrorString(e));
        exit(1);
    }
}

int main(int argc, char* argv[])
{
    if (argc < 3) {
        fprintf(stderr, "usage: %s FILE LOG\n", argv[0]);
        return 2;
    }
    const char* fname = argv[1];
    int lg = atoi(argv[2]);
    if (lg < 1 || lg > 31) {
        fprintf(stderr, "bad LOG %d\n", lg);
        return 2;
    }
    size_t n = (size_t)1 << lg;

    static_assert(sizeof(affine_t) == 96, "affine_t must be 96 bytes");
    static_assert(sizeof(scalar_t) == 32, "scalar_t must be 32 bytes");

    FILE* f = fopen(fname, "rb");
    if (!f) { perror(fname); return 1; }
    std::vector<affine_t> points(n);
    std::vector<scalar_t> scalars(n);
    if (fread(points.data(), 96, n, f) != n ||
        fread(scalars.data(), 32, n, f) != n) {
        fprintf(stderr, "%s: short read (need %zu bytes)\n", fname, n * 128);
        return 1;
    }
    fclose(f);

    int ndev = 0;
    check(cudaGetDeviceCount(&ndev), "cudaGetDeviceCount");
    if (ndev == 0) { fprintf(stderr, "no CUDA device\n"); return 1; }

    try {
        // Points are uploaded once by the constructor and stay resident.
        msm_t<bucket_t, point_t, affine_t, scalar_t> msm{points.data(), n};

        // Scalars resident on the device as well.
        dev_ptr_t<scalar_t> d_scalars{n};
        check(cudaMemcpy(&d_scalars[0], scalars.data(), n * sizeof(scalar_t),
                         cudaMemcpyHostToDevice), "cudaMemcpy scalars");
        check(cudaDeviceSynchronize(), "sync");

        const affine_t* no_host_points = nullptr;   // => use resident d_points
        point_t out;
        auto run = [&]() {
            // mont = false: scalars are canonical integers
            RustError err = msm.invoke(out, no_host_points, n,
                                       dev_ptr_t<scalar_t>(d_scalars), false);
            if (err.code != cudaSuccess) {
                fprintf(stderr, "msm failed: %s\n",
                        cudaGetErrorString((cudaError_t)err.code));
                exit(1);
            }
            check(cudaDeviceSynchronize(), "sync");
        };

        run();  // warm-up

        std::vector<double> ms;
        for (int i = 0; i < 5; i++) {
            check(cudaDeviceSynchronize(), "sync");
            auto t0 = std::chrono::steady_clock::now();
            run();
            auto t1 = std::chrono::steady_clock::now();
            ms.push_back(std::chrono::duration<double, std::milli>(t1 - t0).count());
        }
        std::vector<double> sorted = ms;
        std::sort(sorted.begin(), sorted.end());
        printf("sppark BLS12-381 G1 MSM 2^%d: %.2f ms (median of 5, points resident)\n",
               lg, sorted[2]);
        printf("runs ms:");
        for (double v : ms) printf(" %.2f", v);
        printf("\n");

        if (out.is_inf()) {
            printf("result: infinity\n");
        } else {
            affine_t a = out;   // jacobian -> affine on host (blst)
            uint64_t limbs[12];
            memcpy(limbs, &a, sizeof(limbs));
            printf("result affine x (Montgomery, limbs LE, limb0 first):");
            for (int i = 0; i < 6; i++) printf(" %016llx", (unsigned long long)limbs[i]);
            printf("\nresult affine y (Montgomery, limbs LE, limb0 first):");
            for (int i = 6; i < 12; i++) printf(" %016llx", (unsigned long long)limbs[i]);
            printf("\n");
        }
    } catch (const cuda_error& e) {
        fprintf(stderr, "cuda_error: %s\n", e.what());
        return 1;
    }
    return 0;
}
#endif
