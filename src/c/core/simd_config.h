/* Internal: which SIMD variants this compiler can build. The x86 ones are compiled with
 * per-function target attributes, so the rest of the library needs no -mavx2; 64-bit
 * ARM always has Advanced SIMD (NEON), so its variants need no attribute and no CPU
 * check, only the DEEPREDUCE_SIMD cap. */
#ifndef DR_SIMD_CONFIG_H
#define DR_SIMD_CONFIG_H

#if (defined(__x86_64__) || defined(__i386__)) && (defined(__GNUC__) || defined(__clang__))
#define DR_HAVE_X86_SIMD 1
/* The AVX-512 level includes all of the AVX2 level's features, so that an AVX2 helper
 * (DR_ALWAYS_INLINE) inlines into AVX-512 code: GCC inlines only into a caller whose
 * target has every feature of the callee's, and otherwise calls it out of line, per
 * vector (a store helper called so from qsgd's AVX-512 decoder cost it a fifth of its
 * time). dr_simd_supported (cpu.c) checks these lists. */
#define DR_AVX2_FEATURES "avx2,bmi,bmi2,popcnt,f16c,fma"
#define DR_AVX512_FEATURES "avx512f,avx512bw,avx512vl,avx512dq," DR_AVX2_FEATURES
#define DR_TARGET_AVX2 __attribute__((target(DR_AVX2_FEATURES)))
#define DR_TARGET_AVX512 __attribute__((target(DR_AVX512_FEATURES)))
/* AVX-512 with VBMI's byte permutes (a 128-byte table read from two registers, 64 lanes
 * at a time): AMD from Zen 4, Intel from Ice Lake, not Skylake's AVX-512. Kernels built
 * for it run where the level is AVX-512 and dr_cpu_has_vbmi() holds. */
#define DR_TARGET_AVX512_VBMI __attribute__((target(DR_AVX512_FEATURES ",avx512vbmi")))
/* 1 when the CPU has AVX-512 VBMI (cpu.c). */
int dr_cpu_has_vbmi(void);
#else
#define DR_HAVE_X86_SIMD 0
#endif

#if defined(__aarch64__) && defined(__ARM_NEON)
#define DR_HAVE_NEON 1
#else
#define DR_HAVE_NEON 0
#endif

/* A scalar kernel written once and compiled twice: the body is a DR_ALWAYS_INLINE
 * function, called from a plain wrapper and from a DR_TARGET_AVX2 one, so the second
 * gets POPCNT, TZCNT, BMI2 and the compiler's AVX2 vectorisation of the same source. */
#if defined(__GNUC__) || defined(__clang__)
#define DR_ALWAYS_INLINE static inline __attribute__((always_inline))
#else
#define DR_ALWAYS_INLINE static inline
#endif

#endif
