/* CRC-32 by the ARMv8 CRC32 instructions, which compute zlib's CRC (polynomial
 * 0x04C11DB7, reflected; not CRC-32C) eight bytes per instruction. zlib uses them only
 * when it was itself compiled for a CPU that has them, which distributions' generic arm64
 * builds are not (Debian's computes from tables). The extension is optional in ARMv8.0
 * and required from ARMv8.1; the CPU is asked at run time. */
#include "deepreduce.h"
#include "crc32_simd.h"

#if DR_HAVE_NEON
#include <arm_acle.h>
#include <string.h>

#if defined(__linux__)
#include <sys/auxv.h>
#ifndef HWCAP_CRC32
#define HWCAP_CRC32 (1UL << 7) /* Linux's arm64 hwcap bit, for older headers */
#endif
#endif

#if defined(__clang__)
#define DR_TARGET_CRC __attribute__((target("crc")))
#else
#define DR_TARGET_CRC __attribute__((target("+crc")))
#endif

int dr_crc32_arm_supported(void)
{
#if defined(__BYTE_ORDER__) && __BYTE_ORDER__ != __ORDER_LITTLE_ENDIAN__
    return 0; /* dr_crc32_arm's eight-byte words are little-endian */
#elif defined(__ARM_FEATURE_CRC32)
    return 1; /* the compiler was told every target CPU has it */
#elif defined(__linux__)
    return (getauxval(AT_HWCAP) & HWCAP_CRC32) != 0;
#else
    return 0;
#endif
}

DR_TARGET_CRC uint32_t dr_crc32_arm(uint32_t state, const uint8_t *buf, size_t len)
{
    /* Eight bytes per step from memcpy (an unaligned load; the instruction takes the
     * word's bytes lowest first, which is their order in memory on a little-endian CPU),
     * the rest a byte at a time. */
    for (; len >= 8; buf += 8, len -= 8) {
        uint64_t word;
        memcpy(&word, buf, 8);
        state = __crc32d(state, word);
    }
    for (; len > 0; buf++, len--)
        state = __crc32b(state, *buf);
    return state;
}
#endif
