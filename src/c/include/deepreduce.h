/*
 * deepreduce.h - the public C interface of the deepreduce core.
 *
 * This header is the manual. Every function states its contract beside it.
 *
 * Conventions that hold for every function in this library:
 *   - Every fallible function returns an int status: DR_OK (0) on success, a negative
 *     DR_E_* value otherwise. dr_status_message() turns a status into a sentence.
 *   - No global mutable state: all functions are reentrant and thread-safe.
 *   - No hidden allocation: outputs and scratch space are owned by the caller. Where a
 *     function needs scratch, a companion *_workspace_size() says how many bytes.
 *   - Arrays are passed as (pointer, element count). Indices are uint32 (a single tensor
 *     holds fewer than 2^32 elements), values are float32, sizes are size_t.
 *   - Wire payloads are framed (see "Frames" below): decoders check every length against
 *     the buffer before reading, and refuse a frame whose CRC32 does not match.
 *   - SIMD variants (AVX2, AVX-512) are picked at run time and give bit-identical
 *     results to the portable scalar path. DEEPREDUCE_SIMD=scalar|avx2|avx512 in the
 *     environment caps the level (it never raises it above what the CPU supports).
 *
 * The area headers below hold the kernels; this file holds what they all share.
 */
#ifndef DEEPREDUCE_H
#define DEEPREDUCE_H

#include <stddef.h>
#include <stdint.h>

#ifdef __cplusplus /* C linkage for C++ callers, this header and the area headers it includes */
extern "C" {
#endif

#define DR_VERSION_MAJOR 0
#define DR_VERSION_MINOR 1
#define DR_VERSION_PATCH 0

/* ---------------------------------------------------------------------------------- */
/* Status codes                                                                        */
/* ---------------------------------------------------------------------------------- */
enum dr_status {
    DR_OK = 0,
    DR_E_ARG = -1,            /* an argument is out of its documented range            */
    DR_E_DST_TOO_SMALL = -2,  /* the caller's output buffer is smaller than needed     */
    DR_E_FRAME_SHORT = -3,    /* buffer shorter than the frame it claims to hold       */
    DR_E_FRAME_MAGIC = -4,    /* not a deepreduce frame (wrong magic bytes)            */
    DR_E_FRAME_VERSION = -5,  /* frame written by an unsupported format version        */
    DR_E_FRAME_CHECKSUM = -6, /* CRC32 mismatch: the payload was altered in transit    */
    DR_E_FRAME_FIELD = -7,    /* a header field or section length is inconsistent      */
    DR_E_FRAME_CODEC = -8,    /* frame holds a codec other than the one asked to decode */
    DR_E_CORRUPT = -9,        /* a section's contents are invalid (index out of range) */
    DR_E_ZLIB = -10,          /* zlib reported an error                                */
    DR_E_NUMERIC = -11        /* a fit or solve failed (singular or non-finite input)  */
};

/* A static, human-readable sentence for a status code. Never returns NULL. */
const char *dr_status_message(int status);

/* The library version as "MAJOR.MINOR.PATCH". */
const char *dr_version_string(void);

/* ---------------------------------------------------------------------------------- */
/* Identifiers carried on the wire. Values are frozen once released: append only.     */
/* ---------------------------------------------------------------------------------- */

/* The dtype an encoder is given, recorded in the frame's header for the reader's
 * information: no decoder reads it, and the core always works in float32 (deepreduce's
 * Python compressors code a float32 working copy and give DR_DTYPE_FLOAT32). */
enum dr_dtype {
    DR_DTYPE_FLOAT32 = 0,
    DR_DTYPE_FLOAT16 = 1,
    DR_DTYPE_BFLOAT16 = 2,
    DR_DTYPE_FLOAT64 = 3
};

/* Which compressor produced a frame (frame field `kind`). */
enum dr_kind {
    DR_KIND_NONE = 0,
    DR_KIND_FP16 = 1,
    DR_KIND_QSGD = 2,
    DR_KIND_TERNGRAD = 3,
    DR_KIND_ONEBIT = 4,
    DR_KIND_SIGNSGD = 5,
    DR_KIND_SIGNUM = 6,
    DR_KIND_EFSIGNSGD = 7,
    DR_KIND_NATURAL = 8,
    DR_KIND_RANDOMK = 9,
    DR_KIND_TOPK = 10,
    DR_KIND_THRESHOLD = 11,
    DR_KIND_DGC = 12,
    DR_KIND_POWERSGD = 13,
    DR_KIND_ADAQ = 14,
    DR_KIND_INCEPTIONN = 15,
    DR_KIND_SKETCH = 16,
    DR_KIND_EIGHTBIT = 17,
    DR_KIND_SPARDL = 18,
    DR_KIND_LGC = 19,
    DR_KIND_THREELC = 20,
    DR_KIND_COUNT_ = 21
};

/* How the indices of a sparse frame are coded (frame field `index_codec`). */
enum dr_index_codec {
    DR_INDEX_RAW = 0,     /* uint32 little-endian, as selected                       */
    DR_INDEX_BLOOM = 1,   /* Bloom filter + selection policy (lossy set)             */
    DR_INDEX_RLE = 2,     /* run lengths of the 0/1 bitmap, bit-packed               */
    DR_INDEX_HUFFMAN = 3, /* static Huffman over index bytes, no table sent          */
    DR_INDEX_EF = 4,      /* Elias-Fano                                              */
    DR_INDEX_RICE = 5,    /* Golomb-Rice on gaps                                     */
    DR_INDEX_VARINT = 6,  /* delta + LEB128                                          */
    DR_INDEX_SKCOMPRESS = 7, /* delta-binary keys, Huffman-coded byte counts (SKCompress) */
    DR_INDEX_COUNT_ = 8
};

/* How the values of a sparse frame are coded (frame field `value_codec`). */
enum dr_value_codec {
    DR_VALUE_RAW = 0,     /* float32 little-endian                                   */
    DR_VALUE_POLYFIT = 1, /* piecewise polynomial fit of the sorted values           */
    DR_VALUE_DEXP = 2,    /* double-exponential fit of the sorted magnitudes         */
    DR_VALUE_DEFLATE = 3, /* zlib deflate of the float32 bytes                       */
    DR_VALUE_QSGD = 4,    /* bucketed stochastic quantisation                        */
    DR_VALUE_FP16 = 5,    /* IEEE half                                               */
    DR_VALUE_BF16 = 6,    /* bfloat16                                                */
    DR_VALUE_SKETCH = 7,  /* SketchML quantile sketch: bin means + bin indices       */
    DR_VALUE_SKCOMPRESS = 8, /* SKCompress: quantile sketch, Huffman-coded bin indices */
    DR_VALUE_COUNT_ = 9
};

/* ---------------------------------------------------------------------------------- */
/* Frames: the one wire format for every byte payload.                                 */
/*                                                                                     */
/* Layout, all integers little-endian:                                                 */
/*   off  size  field                                                                  */
/*     0     4  magic "DRF1"                                                           */
/*     4     1  version (DR_FRAME_VERSION)                                             */
/*     5     1  kind         (enum dr_kind)                                            */
/*     6     1  index_codec  (enum dr_index_codec)                                     */
/*     7     1  value_codec  (enum dr_value_codec)                                     */
/*     8     1  dtype        (enum dr_dtype)                                           */
/*     9     1  nsections    (0 .. DR_FRAME_MAX_SECTIONS)                              */
/*    10     1  flags        (DR_FRAME_FLAG_*; unknown bits are refused)               */
/*    11     1  reserved, must be zero                                                 */
/*    12    16  params[4]: uint32 codec parameters, meaning fixed per kind/codec       */
/*    28     8  numel: dense element count d of the tensor                            */
/*    36     8  count: entries carried (r for sparse frames, numel for dense ones)     */
/*    44  4*ns  section lengths, uint32 each                                           */
/*     H     .  sections, back to back, in order                                       */
/*   end     4  CRC32 (zlib polynomial) of every byte before it                        */
/* ---------------------------------------------------------------------------------- */
#define DR_FRAME_MAGIC 0x31465244u /* bytes 'D' 'R' 'F' '1' */
#define DR_FRAME_VERSION 1
#define DR_FRAME_MAX_SECTIONS 6
#define DR_FRAME_FIXED_HEADER 44
#define DR_FRAME_TRAILER 4

/* The sender's tensor held a NaN or an infinity. Such a frame carries the fact, not the
 * garbage: no sections, count 0, the kind and numel of the tensor it stands for. Every
 * receiver decodes it to NaN in all numel entries, so the aggregate is non-finite on
 * every rank (mixed-precision loss scalers then skip the step). */
#define DR_FRAME_FLAG_NONFINITE 0x01u
#define DR_FRAME_NONFINITE_SIZE 48 /* DR_FRAME_FIXED_HEADER + DR_FRAME_TRAILER */

typedef struct dr_frame {
    uint8_t kind;
    uint8_t index_codec;
    uint8_t value_codec;
    uint8_t dtype;
    uint8_t flags; /* DR_FRAME_FLAG_* */
    uint32_t nsections;
    uint32_t params[4];
    uint64_t numel;
    uint64_t count;
    uint64_t section_len[DR_FRAME_MAX_SECTIONS];
    /* Byte offset of each section from the start of the frame. Filled by
     * dr_frame_parse and dr_frame_layout; ignored by dr_frame_seal. */
    uint64_t section_off[DR_FRAME_MAX_SECTIONS];
} dr_frame;

/* Bytes taken by the header of a frame with `nsections` sections. */
size_t dr_frame_header_size(uint32_t nsections);

/* Fill f->section_off from f->nsections and f->section_len, and store the total
 * frame size (header + sections + trailer) in *frame_size.
 * Returns DR_E_ARG if nsections > DR_FRAME_MAX_SECTIONS or a length exceeds UINT32_MAX. */
int dr_frame_layout(dr_frame *f, size_t *frame_size);

/* Write the header described by *f at buf[0..H) and the CRC32 trailer after the last
 * section. The sections must already sit at their offsets (see dr_frame_layout): a
 * producer encodes each section in place, then seals. `cap` is the buffer's size.
 * On success *frame_size holds the total size. */
int dr_frame_seal(const dr_frame *f, uint8_t *buf, size_t cap, size_t *frame_size);

/* Validate `buf[0..len)` as one complete frame and fill *out (section_off included).
 * Checks, in order: length, magic, version, reserved bytes, section count, that the
 * declared sizes add up to exactly `len`, and the CRC32. Codec-specific contents are
 * validated by the codec's own decoder. */
int dr_frame_parse(const uint8_t *buf, size_t len, dr_frame *out);

/* Write the DR_FRAME_NONFINITE_SIZE-byte marker frame that stands for a tensor of
 * `numel` elements of compressor `kind` which held a NaN or an infinity (see
 * DR_FRAME_FLAG_NONFINITE). DR_E_ARG for an unknown kind or a NULL pointer,
 * DR_E_DST_TOO_SMALL if cap < DR_FRAME_NONFINITE_SIZE. */
int dr_frame_nonfinite(uint8_t kind, uint64_t numel, uint8_t *buf, size_t cap, size_t *written);

/* Whether buf[0..len) is a valid non-finite marker frame of `kind` for `numel`
 * elements: *is_marker = 1 if so, 0 if it is no marker at all (any other frame, valid or
 * not, is left for the codec's decoder to judge). A frame that sets the flag but fails
 * dr_frame_parse, or is a marker of another kind or size, is refused with that status
 * (DR_E_FRAME_CODEC for another kind, DR_E_FRAME_FIELD for another numel). */
int dr_frame_is_nonfinite(const uint8_t *buf, size_t len, uint8_t kind, uint64_t numel,
                          int *is_marker);

/* 1 if a[0..alen) and b[0..blen) are the same bytes (the same length and contents), else
 * 0; pointers may be NULL only for a length of 0. For a sender that decoded its own frame
 * and meets it again among the received ones: one read of each that stops at the first
 * difference, and none at all when both are the same memory. */
int dr_bytes_same(const uint8_t *a, size_t alen, const uint8_t *b, size_t blen);

/* CRC32 (zlib's) of buf[0..len), continuing from `crc` (pass 0 to start). A buffer of
 * 8 MiB or more is split over up to dr_thread_count() threads (one per 4 MiB), whose
 * parts' CRCs are combined in order: the value is the same for every thread count. */
uint32_t dr_crc32(uint32_t crc, const uint8_t *buf, size_t len);

/* ---------------------------------------------------------------------------------- */
/* CPU dispatch                                                                        */
/* ---------------------------------------------------------------------------------- */
enum dr_simd_level {
    DR_SIMD_SCALAR = 0,
    DR_SIMD_AVX2 = 1,
    DR_SIMD_AVX512 = 2,
    DR_SIMD_NEON = 3 /* 64-bit ARM; never compared with the x86 levels */
};

/* The highest level this CPU supports, ignoring the environment: AVX512 or AVX2 on x86
 * (by CPUID), NEON on 64-bit ARM (which always has it), SCALAR elsewhere. */
int dr_simd_supported(void);

/* The level kernels use now: dr_simd_supported() capped by DEEPREDUCE_SIMD when that
 * variable names a lower level of this CPU's family ("scalar" anywhere, "avx2" on an
 * AVX-512 machine); any other value, another family's names included, changes nothing.
 * Read afresh on every call, so a test can switch paths. */
int dr_simd_active(void);

/* "scalar", "avx2", "avx512" or "neon". */
const char *dr_simd_name(int level);

/* AVX-512 here means F, BW, VL and DQ (the vector generator multiplies 64-bit lanes). */

/* How many threads a kernel that can split its work may use: DEEPREDUCE_THREADS when it
 * holds an integer in 1..DR_MAX_THREADS (anything else there means 1); unset, the cores
 * torch and NumPy are allowed: those this process may run on (its CPU affinity), no more
 * than OMP_NUM_THREADS when that holds a count (torchrun sets it to 1 for each of several
 * workers on one node, which then do not oversubscribe the cores), and at most
 * DR_DEFAULT_THREADS_CAP, since the kernels that split are bound by memory bandwidth,
 * which a few cores fill. Read afresh on every call. The kernels that split (dr_qsgd_encode and dr_qsgd_decode, and
 * dr_topk_select) use at most one thread per DR_THREADS_MIN_NUMEL elements, so a tensor
 * under twice that runs on the caller's thread alone, and give the same bytes for every
 * thread count: the work is cut into fixed ranges, each with its own counter-RNG draws
 * and outputs. dr_crc32, and so every frame that dr_frame_seal seals and dr_frame_parse
 * checks, splits buffers of 8 MiB or more the same way (one thread per 4 MiB). Threads are
 * started and joined inside the call; none outlives it. Between the phases of one call
 * (top-k's sample, sweep, radix levels and write; qsgd decode's check and decoding) the
 * threads wait for each other, polling up to 100 us before they sleep, or sleeping at
 * once when there are more threads than allowed cores. On Linux with glibc, when the
 * caller may run on more than one CPU, each starts on one of the caller's CPUs other than
 * the one the caller is on, then gets the caller's affinity mask (a thread left to the
 * scheduler right after the caller woke mostly queued behind it).
 * Without POSIX threads the count is 1. */
#define DR_MAX_THREADS 64
#define DR_DEFAULT_THREADS_CAP 8
#define DR_THREADS_MIN_NUMEL 1048576u
int dr_thread_count(void);

/* ---------------------------------------------------------------------------------- */
/* Reproducible randomness: a counter-based generator. Every rank that derives the same */
/* key draws the same numbers; nothing is shared and no global generator is touched.   */
/* ---------------------------------------------------------------------------------- */

/* A 64-bit key from a byte string (e.g. a parameter name) and a step counter. */
uint64_t dr_rng_key(const uint8_t *bytes, size_t len, uint64_t step);

/* The 64-bit random word number `counter` of the stream `key` (a pure function). */
uint64_t dr_rng_u64(uint64_t key, uint64_t counter);

/* The same word as a float in [0, 1) with 24 random bits. */
float dr_rng_uniform(uint64_t key, uint64_t counter);

/* A second stream, 32-bit words from 32-bit multiplies only (cheap in SIMD lanes): the
 * stochastic quantisers' draws. Its own function of (key, counter), not a part of
 * dr_rng_u64's word. Uniform over 2^32 values; for a fixed key and counter >> 32 it is a
 * bijection of the counter's low 32 bits. */
uint32_t dr_rng_u32(uint64_t key, uint64_t counter);

#include "deepreduce/vec.h"
#include "deepreduce/select.h"
#include "deepreduce/sparsify.h"
#include "deepreduce/quant.h"
#include "deepreduce/index.h"
#include "deepreduce/value.h"
#include "deepreduce/spardl.h"

#ifdef __cplusplus
}
#endif

#endif /* DEEPREDUCE_H */
