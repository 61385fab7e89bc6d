/* Fixed-width bit packing, LSB-first. Used by rle, the Elias-Fano low bits, and by other
 * areas (the 'both' permutation). Unpacking reads one unaligned 64-bit word per value:
 * a field of <= 32 bits starting at any bit offset lies within 8 bytes of its first byte. */
#include "bitio.h"
#include "bitpack_simd.h"

unsigned dr_bits_for(uint32_t max_value)
{
    unsigned bits = 0;
    while (bits < 32u && (max_value >> bits) != 0)
        bits++;
    return bits;
}

size_t dr_bitpack_size(size_t n, unsigned bits)
{
    /* ceil(n * bits / 8) without forming n * bits, which can overflow 64 bits. */
    uint64_t whole, part;
    if (bits == 0 || bits > 32u)
        return bits == 0 ? 0 : SIZE_MAX;
    if ((uint64_t)(n / 8u) > (UINT64_MAX - 32u) / bits)
        return SIZE_MAX;
    whole = (uint64_t)(n / 8u) * bits;
    part = ((uint64_t)(n % 8u) * bits + 7u) / 8u;
    return dr_sat_size(whole + part);
}

int dr_bitpack(const uint32_t *v, size_t n, unsigned bits, uint8_t *out, size_t cap,
               size_t *written)
{
    dr_bitwriter w;
    uint32_t any = 0;
    size_t j, size;
    if (bits > 32u || written == NULL || (n > 0 && v == NULL))
        return DR_E_ARG;
    size = dr_bitpack_size(n, bits);
    if (size > 0 && out == NULL)
        return DR_E_ARG;
    for (j = 0; j < n; j++)
        any |= v[j];
    if (bits < 32u && (any >> bits) != 0)
        return DR_E_ARG;
    if (cap < size)
        return DR_E_DST_TOO_SMALL;
    if (size > 0) {
        dr_bw_init(&w, out);
        for (j = 0; j < n; j++)
            dr_bw_put(&w, v[j], bits);
        dr_bw_finish(&w);
    }
    *written = size;
    return DR_OK;
}

/* Fields j..n of in[0..len) into out, one 64-bit load each (bits 1..32, len at least
 * dr_bitpack_size(n, bits)). */
static void unpack_from(const uint8_t *in, size_t len, size_t n, unsigned bits, uint32_t *out, size_t j)
{
    const uint64_t mask = (1ull << bits) - 1u;
    uint64_t bp = (uint64_t)j * bits;
    /* Values whose 8-byte window lies inside the buffer take the direct load. */
    size_t fast = len >= 8u ? (size_t)(((uint64_t)(len - 8u) * 8u) / bits) + 1u : 0u;
    if (fast > n)
        fast = n;
    for (; j < fast; j++, bp += bits) {
        uint64_t word;
        memcpy(&word, in + (bp >> 3), 8);
        out[j] = (uint32_t)((word >> (bp & 7u)) & mask);
    }
    for (; j < n; j++, bp += bits)
        out[j] = (uint32_t)(dr_peek64(in, len, bp) & mask);
}

void dr_bitunpack_scalar(const uint8_t *in, size_t len, size_t n, unsigned bits, uint32_t *out)
{
    size_t j;
    if (bits == 0) {
        for (j = 0; j < n; j++)
            out[j] = 0;
        return;
    }
    unpack_from(in, len, n, bits, out, 0);
}

int dr_bitunpack(const uint8_t *in, size_t len, size_t n, unsigned bits, uint32_t *out)
{
    size_t j = 0;
    if (bits > 32u || (n > 0 && out == NULL) || (len > 0 && in == NULL))
        return DR_E_ARG;
    if (len < dr_bitpack_size(n, bits))
        return DR_E_CORRUPT;
    if (bits == 0) {
        dr_bitunpack_scalar(in, len, n, bits, out);
        return DR_OK;
    }
#if DR_HAVE_X86_SIMD
    {
        int simd = dr_simd_active();
        if (simd >= DR_SIMD_AVX512 && dr_cpu_has_vbmi())
            j = dr_bitunpack_vbmi(in, len, n, bits, out);
        else if (simd >= DR_SIMD_AVX2)
            j = dr_bitunpack_avx2(in, len, n, bits, out);
    }
#endif
    unpack_from(in, len, n, bits, out, j);
    return DR_OK;
}
