#pragma once
// 4-limb Montgomery multiplication (CIOS) in x86-64 assembly with MULX, ADCX
// and ADOX (BMI2 + ADX: Intel Broadwell and later, AMD Zen and later): two
// carry chains run side by side, the reason it is about 1.8× the speed of the
// unsigned __int128 C++ form on our machines (bench: tests/arith_test's
// MulxMatchesPortable and docs/performance.md). ThreadPool's constructor
// checks the CPU has both extensions.
#include <cstdint>

namespace zkfarm {

// One round: t += a·b[i] (t4 is the overflow limb, 0 on entry), then
// t += m·q with m = t0·inv, which clears t0; the caller rotates the registers
// so the next round's t0..t3 are this round's t1..t4.
#define ZKFARM_MONT_ROUND(OFF, T0, T1, T2, T3, T4) \
  "xorl %%eax, %%eax\n\t"                           \
  "movq " OFF "(%[b]), %%rdx\n\t"                   \
  "mulxq 0(%[a]), %%rcx, %%rbx\n\t"                 \
  "adoxq %%rcx, " T0 "\n\t"                         \
  "adcxq %%rbx, " T1 "\n\t"                         \
  "mulxq 8(%[a]), %%rcx, %%rbx\n\t"                 \
  "adoxq %%rcx, " T1 "\n\t"                         \
  "adcxq %%rbx, " T2 "\n\t"                         \
  "mulxq 16(%[a]), %%rcx, %%rbx\n\t"                \
  "adoxq %%rcx, " T2 "\n\t"                         \
  "adcxq %%rbx, " T3 "\n\t"                         \
  "mulxq 24(%[a]), %%rcx, %%rbx\n\t"                \
  "adoxq %%rcx, " T3 "\n\t"                         \
  "adcxq %%rbx, " T4 "\n\t"                         \
  "adoxq %%rax, " T4 "\n\t"                         \
  "movq " T0 ", %%rdx\n\t"                          \
  "imulq %[inv], %%rdx\n\t"                         \
  "xorl %%eax, %%eax\n\t"                           \
  "mulxq %[q0], %%rcx, %%rbx\n\t"                   \
  "adoxq %%rcx, " T0 "\n\t"                         \
  "adcxq %%rbx, " T1 "\n\t"                         \
  "mulxq %[q1], %%rcx, %%rbx\n\t"                   \
  "adoxq %%rcx, " T1 "\n\t"                         \
  "adcxq %%rbx, " T2 "\n\t"                         \
  "mulxq %[q2], %%rcx, %%rbx\n\t"                   \
  "adoxq %%rcx, " T2 "\n\t"                         \
  "adcxq %%rbx, " T3 "\n\t"                         \
  "mulxq %[q3], %%rcx, %%rbx\n\t"                   \
  "adoxq %%rcx, " T3 "\n\t"                         \
  "adcxq %%rbx, " T4 "\n\t"                         \
  "adoxq %%rax, " T4 "\n\t"

/// out = a·b·2^−256 mod q, in [0, 2q) (the caller subtracts q once), with
/// q = P::kModulus < 2^254 and P::kInv = −q^−1 mod 2^64; 4 little-endian limbs.
/// out may alias a or b. The modulus is read from memory (RIP-relative) so the
/// block needs only 3 registers besides its 9 scratch ones: sanitizer builds
/// reserve the frame pointer and run short of registers otherwise.
template <class P>
inline void mont_mul_mulx(uint64_t out[4], const uint64_t a[4], const uint64_t b[4]) {
  asm("xorl %%r8d, %%r8d\n\t"
      "xorl %%r9d, %%r9d\n\t"
      "xorl %%r10d, %%r10d\n\t"
      "xorl %%r11d, %%r11d\n\t"
      "xorl %%r12d, %%r12d\n\t"
      ZKFARM_MONT_ROUND("0", "%%r8", "%%r9", "%%r10", "%%r11", "%%r12")
      ZKFARM_MONT_ROUND("8", "%%r9", "%%r10", "%%r11", "%%r12", "%%r8")
      ZKFARM_MONT_ROUND("16", "%%r10", "%%r11", "%%r12", "%%r8", "%%r9")
      ZKFARM_MONT_ROUND("24", "%%r11", "%%r12", "%%r8", "%%r9", "%%r10")
      "movq %%r12, 0(%[out])\n\t"
      "movq %%r8, 8(%[out])\n\t"
      "movq %%r9, 16(%[out])\n\t"
      "movq %%r10, 24(%[out])\n\t"
      :
      : [out] "r"(out), [a] "r"(a), [b] "r"(b), [inv] "m"(P::kInv), [q0] "m"(P::kModulus[0]),
        [q1] "m"(P::kModulus[1]), [q2] "m"(P::kModulus[2]), [q3] "m"(P::kModulus[3])
      : "rax", "rbx", "rcx", "rdx", "r8", "r9", "r10", "r11", "r12", "cc", "memory");
}

#undef ZKFARM_MONT_ROUND

}  // namespace zkfarm
