/* Runtime SIMD dispatch. Nothing is cached: the answer is a pure function of the CPU
 * and of DEEPREDUCE_SIMD, so there is no global state to race on. Kernels call
 * dr_simd_active() once per call, never per element. */
#include "deepreduce.h"
#include "simd_config.h"

#include <stdlib.h>
#include <string.h>

int dr_simd_supported(void)
{
#if (defined(__x86_64__) || defined(__i386__)) && (defined(__GNUC__) || defined(__clang__))
    /* DR_AVX2_FEATURES and DR_AVX512_FEATURES (simd_config.h), less F16C, which clang's
     * builtin does not name: every x86 CPU with FMA has it. */
    int avx2;
    __builtin_cpu_init();
    avx2 = __builtin_cpu_supports("avx2") && __builtin_cpu_supports("bmi") && __builtin_cpu_supports("bmi2") &&
           __builtin_cpu_supports("popcnt") && __builtin_cpu_supports("fma");
    if (avx2 && __builtin_cpu_supports("avx512f") && __builtin_cpu_supports("avx512bw") &&
        __builtin_cpu_supports("avx512vl") && __builtin_cpu_supports("avx512dq"))
        return DR_SIMD_AVX512;
    if (avx2)
        return DR_SIMD_AVX2;
#elif defined(__aarch64__) && defined(__ARM_NEON)
    return DR_SIMD_NEON;
#endif
    return DR_SIMD_SCALAR;
}

#if DR_HAVE_X86_SIMD
int dr_cpu_has_vbmi(void)
{
    __builtin_cpu_init();
    return __builtin_cpu_supports("avx512vbmi");
}
#endif

int dr_simd_active(void)
{
    int level = dr_simd_supported();
    const char *cap = getenv("DEEPREDUCE_SIMD");
    if (cap == NULL)
        return level;
    if (strcmp(cap, "scalar") == 0)
        return DR_SIMD_SCALAR;
    /* the one level below another of its family */
    if (level == DR_SIMD_AVX512 && strcmp(cap, "avx2") == 0)
        return DR_SIMD_AVX2;
    return level;
}

const char *dr_simd_name(int level)
{
    switch (level) {
    case DR_SIMD_AVX512: return "avx512";
    case DR_SIMD_AVX2: return "avx2";
    case DR_SIMD_NEON: return "neon";
    default: return "scalar";
    }
}
