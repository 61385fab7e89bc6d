/* libFuzzer target: the frame parser and every compressor's decoder, as a receiver
 * calls them (after the non-finite marker check), SparDL's block messages included. Each input is tried as it came (the CRC refuses almost all mutations:
 * that path is the parser's) and after fuzz_fix_frame, so the fields and sections
 * behind the checksum are reached. With FUZZ_ONLY=<kind> only the fixed-up frame runs,
 * its kind byte pinned. The receiver's tensor has the frame's numel (capped
 * at FUZZ_MAX_NUMEL); DeepReduce frames go through their index, value and permutation
 * sections. */
#include "fuzz_common.h"

static void fuzz_put_u32(uint8_t *p, uint32_t v)
{
    p[0] = (uint8_t)v;
    p[1] = (uint8_t)(v >> 8);
    p[2] = (uint8_t)(v >> 16);
    p[3] = (uint8_t)(v >> 24);
}

/* Make buf[0..len) a frame the parser accepts up to its field checks: magic, version,
 * flags (the defined one kept), reserved byte, up to DR_FRAME_MAX_SECTIONS section lengths that add up to the
 * buffer (each kept where it fits, the last taking the rest) and a fresh CRC. The codec
 * bytes, sizes, parameters and section contents stay the fuzzer's. Returns 0 if len
 * cannot hold a header. */
static int fuzz_fix_frame(uint8_t *buf, size_t len)
{
    size_t header, room, i, ns;
    if (len < DR_FRAME_FIXED_HEADER + DR_FRAME_TRAILER)
        return 0;
    ns = buf[9] <= DR_FRAME_MAX_SECTIONS ? buf[9] : buf[9] % (DR_FRAME_MAX_SECTIONS + 1u);
    if (ns == 0 && len != DR_FRAME_FIXED_HEADER + DR_FRAME_TRAILER)
        ns = 1; /* no sections: only a frame of exactly header + trailer adds up */
    header = dr_frame_header_size((uint32_t)ns);
    if (len < header + DR_FRAME_TRAILER)
        return 0;
    fuzz_put_u32(buf, DR_FRAME_MAGIC);
    buf[4] = DR_FRAME_VERSION;
    buf[9] = (uint8_t)ns;
    buf[10] &= DR_FRAME_FLAG_NONFINITE; /* the one flag defined: the non-finite marker */
    buf[11] = 0;
    room = len - header - DR_FRAME_TRAILER;
    for (i = 0; i < ns; i++) {
        uint8_t *field = buf + DR_FRAME_FIXED_HEADER + 4 * i;
        size_t sl = fuzz_get_u32(field);
        if (i + 1 == ns || sl > room)
            sl = room;
        fuzz_put_u32(field, (uint32_t)sl);
        room -= sl;
    }
    fuzz_put_u32(buf + len - DR_FRAME_TRAILER, dr_crc32(0, buf, len - DR_FRAME_TRAILER));
    return 1;
}

typedef int (*frame_decoder)(const uint8_t *, size_t, float *, size_t);

static frame_decoder decoder_of(int kind)
{
    switch (kind) {
    case DR_KIND_QSGD: return dr_qsgd_decode;
    case DR_KIND_TERNGRAD: return dr_terngrad_decode;
    case DR_KIND_ONEBIT: return dr_onebit_decode;
    case DR_KIND_SIGNSGD: return dr_signsgd_decode;
    case DR_KIND_SIGNUM: return dr_signum_decode;
    case DR_KIND_EFSIGNSGD: return dr_efsignsgd_decode;
    case DR_KIND_NATURAL: return dr_natural_decode;
    case DR_KIND_EIGHTBIT: return dr_eightbit_decode;
    case DR_KIND_INCEPTIONN: return dr_inceptionn_decode;
    case DR_KIND_SKETCH: return dr_sketch_decode;
    case DR_KIND_ADAQ: return dr_adaq_decode;
    case DR_KIND_THREELC: return dr_threelc_decode;
    default: return NULL;
    }
}

/* quant.h: a decoder refuses before writing anything, but inceptionn's and adaq's, whose
 * entries say where they write while they check. */
static int writes_before_refusing(int kind)
{
    return kind == DR_KIND_INCEPTIONN || kind == DR_KIND_ADAQ;
}

/* decoder on out[0..n), which holds a canary first: a refusal that wrote any of it breaks
 * the contract above, and is reported as a crash (abort). */
static void decode_checking_refusals(frame_decoder decoder, int kind, const uint8_t *buf, size_t len,
                                     float *out, size_t n)
{
    const float canary = -1234.5f;
    size_t i;
    for (i = 0; i < n; i++)
        out[i] = canary;
    if (decoder(buf, len, out, n) >= 0 || writes_before_refusing(kind))
        return;
    for (i = 0; i < n; i++)
        if (out[i] != canary)
            abort();
}

/* A SparDL message: block frames back to back, each decoded for a block of n entries
 * with the tag its receiver expects (the frame's own, so the checks behind it run). */
static void decode_spardl(const uint8_t *buf, size_t len, size_t n, uint32_t *idx, float *val)
{
    size_t frame_len = 0, count = 0;
    while (len > 0 && dr_spardl_frame_length(buf, len, &frame_len) == DR_OK && frame_len <= len) {
        uint32_t tag = frame_len >= 16 ? fuzz_get_u32(buf + 12) : 0;
        (void)dr_spardl_decode(buf, frame_len, n, tag, idx, val, n, &count);
        buf += frame_len;
        len -= frame_len;
    }
}

static void decode_frame(const uint8_t *buf, size_t len)
{
    dr_frame f;
    size_t n, r;
    float *dense;
    uint32_t *idx, *scratch;
    frame_decoder decoder;
    int marker = 0, finite = 0;
    if (dr_frame_parse(buf, len, &f) != DR_OK)
        return;
    /* Receivers ask first whether the frame is the non-finite marker of their kind. */
    if (dr_frame_is_nonfinite(buf, len, f.kind, f.numel, &marker) != DR_OK || marker)
        return;
    n = f.numel <= FUZZ_MAX_NUMEL ? (size_t)f.numel : FUZZ_MAX_NUMEL;
    r = f.count <= n ? (size_t)f.count : n;
    dense = malloc((n ? n : 1) * sizeof *dense);
    idx = malloc((n ? n : 1) * sizeof *idx);
    scratch = malloc((n ? n : 1) * sizeof *scratch);
    if (dense == NULL || idx == NULL || scratch == NULL)
        goto done;
    decoder = decoder_of(f.kind);
    if (f.kind == DR_KIND_SPARDL) {
        decode_spardl(buf, len, n, idx, dense);
    } else if (decoder != NULL) {
        decode_checking_refusals(decoder, f.kind, buf, len, dense, n);
    } else if (f.index_codec == DR_INDEX_RAW && f.value_codec == DR_VALUE_RAW) {
        /* The adding decoder reads only the entries the plain one just wrote. */
        if (dr_sparse_raw_decode(buf, len, f.kind, dense, n, NULL) == DR_OK)
            (void)dr_sparse_raw_decode_add(buf, len, f.kind, dense, n, &finite);
    } else if (f.nsections >= 2) {
        fuzz_index_section(f.index_codec, buf + f.section_off[0], (size_t)f.section_len[0], n, r,
                           f.params[0], f.params[1], idx, scratch);
        fuzz_value_section(f.value_codec, buf + f.section_off[1], (size_t)f.section_len[1], r,
                           f.params[2], f.params[3], dense);
        if (f.nsections >= 3)
            fuzz_permutation_section(buf + f.section_off[2], (size_t)f.section_len[2], r, idx);
    }
done:
    free(dense);
    free(idx);
    free(scratch);
}

int LLVMFuzzerTestOneInput(const uint8_t *data, size_t size)
{
    uint8_t *copy;
    if (fuzz_only < 0)
        decode_frame(data, size);
    copy = malloc(size + 1);
    if (copy == NULL)
        return 0;
    memcpy(copy, data, size);
    if (size > 5 && fuzz_only >= 0)
        copy[5] = (uint8_t)fuzz_only;
    if (fuzz_fix_frame(copy, size))
        decode_frame(copy, size);
    free(copy);
    return 0;
}
