"""DeepReduce's wrappers: compress the output of a sparsifier (topk, threshold, dgc, ...)
by coding its indices, its values, or both, exactly as DeepReduce's README uses them:

    params = {'compressor': 'topk', 'memory': 'residual', 'communicator': 'allgather',
              'compress_ratio': 0.01, 'deepreduce': 'index', 'index': 'bloom'}
    grc = grace_from_params(params)
    DReduce = {'value': ValueCompressor, 'index': IndexCompressor,
               'both': DeepReduce}[params['deepreduce']](grc.compressor, params)
    grc.compressor = DReduce

or in one call, ``grc = deepreduce_from_params(params)``.

Keys (defaults): ``value`` ('polyfit'; also polyfit_cpu, dexp, deflate/gzip, qsgd, fp16,
bf16, sketch, skcompress, none/raw), ``index`` ('bloom'; also rle, huffman, ef, rice, varint, skcompress,
none/raw), ``fpr``
(0.1 r/d), ``policy`` ('leftmost', 'random' = P1, 'p0', 'conflict_sets' = P2, 'naive'),
``poly_degree`` (5), ``sort`` (False), ``quantum_num`` (127), ``bucket_size`` (512),
``num_quantiles`` (4, skcompress values),
``deflate_level`` (6), ``micro-benchmark`` (False), ``min_numel`` (1000).

The wrappers read the params dict the caller passes, not grace_from_params's merged
defaults: GRACE's qsgd *compressor* defaults to buckets of 128, the qsgd *value codec* to
512 (DeepReduce's). A ``bucket_size`` written in params sets both; left out, each keeps
its own default. ``quantum_num`` is 127 for both either way.

One payload per tensor: a single frame (layout in docs/deepreduce.md) made by the C core:

    kind       the sparsifier's (topk, threshold, dgc; none for other compressors)
    codecs     index codec, value codec (raw on the side a mode leaves alone)
    params     [0:2] the index codec's (bloom: m_bits, k_hash | policy << 8),
               [2:4] the value codec's (polyfit: degree; qsgd: s, bucket)
    count      entries the receiver rebuilds (r; |P| for bloom p0)
    sections   index, values[, permutation]

Values are always gathered from the dense (compensated) tensor at the indices the
receiver rebuilds, in its order: with bloom the sender computes that set itself, so
false positives carry their true values in 'index' and in 'both' mode alike. A value
codec that reorders (polyfit, dexp) with raw indices sends the indices in value order;
with a set codec it sends the permutation at ceil(log2 r) bits per entry.

A tensor of at most ``min_numel`` elements skips the index and value codecs, as
DeepReduce's reference does: it is still sparsified, and the sparsifier's own output
travels raw (uint32 indices, float32 values) in the same frame.

Any other compressor can be wrapped: one that has ``select(flat, name)`` (the
Sparsifier base) is asked for its indices directly; for any other the wrapper runs its
compress and decompress locally and codes the non-zero entries of the result (so what
travels is what the compressor would have sent, e.g. adaq's means).
"""
import time

import numpy as np

from . import edge
from ._native import (all_finite, as_frame_bytes, check, check_frame, decoded_marker, f32, ffi, lib,
                      nonfinite_frame, parse_frame, u8, u32)
from .base import Compressor, OneFrameCompressor
from .codecs import Workspace, index_codec, permutation, value_codec
from .codecs.index import SIGNED_D_LIMIT
from .codecs.value import RawValues
from .compressors._sparse import SparseCtx, selected_values, sum_frames
from .errors import FrameError, ParameterTypeError, UnknownNameError
from .params import grace_from_params
from .state import Outputs
from .checks import flag, integer, name

__all__ = ["ValueCompressor", "IndexCompressor", "DeepReduce", "deepreduce_from_params", "WRAPPERS", "section_bytes"]


def _enum_names(prefix):
    return {getattr(lib, n): n[len(prefix):].lower() for n in dir(lib) if n.startswith(prefix) and not n.endswith("_")}


_KINDS = _enum_names("DR_KIND_")
_INDEX_CODECS = _enum_names("DR_INDEX_")
_VALUE_CODECS = _enum_names("DR_VALUE_")
_RAW = RawValues()


class WrapperCtx(SparseCtx):
    """A sparsifier's ctx, plus ``own`` (``base.OneFrameCompressor``)."""

    __slots__ = ("own",)

    def __init__(self, numel, indices, restore, source, flat, finite, name):
        super().__init__(numel, indices, restore, source, flat, finite, name)
        self.own = None


class _Wrapper(OneFrameCompressor):
    """The shared machinery; ``codes_index`` / ``codes_values`` say which sides this
    mode codes (the other stays raw)."""

    codes_index = False
    codes_values = False

    def __init__(self, sparsifier, params=None):
        params = {} if params is None else params
        if not isinstance(params, dict):
            raise ParameterTypeError(f"params must be a dict, got {type(params).__name__}")
        if not all(callable(getattr(sparsifier, method, None)) for method in ("compress", "decompress")):
            raise TypeError(f"{type(self).__name__} wraps a compressor (grc.compressor: one with compress and "
                            f"decompress), got {sparsifier!r}")
        self.sparsifier = sparsifier
        self.params = params
        # DeepReduce's scripts also write None for "no codec on this side".
        index_name = params.get("index", "bloom") if self.codes_index else "raw"
        value_name = params.get("value", "polyfit") if self.codes_values else "raw"
        self.index_codec = index_codec("raw" if index_name is None else index_name,
                                       params.get("fpr"), params.get("policy", "leftmost"))
        self.value_codec = value_codec("raw" if value_name is None else value_name,
                                       poly_degree=params.get("poly_degree", lib.DR_POLYFIT_DEFAULT_DEGREE),
                                       quantum_num=params.get("quantum_num", lib.DR_QSGD_DEFAULT_QUANTUM),
                                       bucket_size=params.get("bucket_size", lib.DR_QSGD_DEFAULT_BUCKET),
                                       deflate_level=params.get("deflate_level", lib.DR_DEFLATE_DEFAULT_LEVEL),
                                       num_quantiles=params.get("num_quantiles", lib.DR_SKCOMPRESS_DEFAULT_BINS))
        # params['sort'] is accepted and read by nobody: polyfit always sorts (a stable
        # sort of sorted values changes nothing), so DeepReduce's flag has nothing to skip.
        self.min_numel = integer(params.get("min_numel", 1000), "min_numel", 0, 2 ** 63 - 1)
        self.raw_index, self.raw_value = index_codec("raw"), _RAW  # for tensors of at most min_numel
        self.micro_benchmark = flag(params.get("micro-benchmark", False), "micro-benchmark")
        self.selects = callable(getattr(sparsifier, "select", None))
        kind = getattr(sparsifier, "frame_kind", None) if self.selects else None
        self.kind = getattr(lib, kind) if kind else lib.DR_KIND_NONE
        # A permutation travels when the values are reordered and the index section
        # cannot list the indices in value order.
        self.sends_perm = self.value_codec.reorders and not self.index_codec.carries_order
        # Same size on every rank only if the count is (a selecting sparsifier with a
        # fixed count) and every section's size is a function of the count alone.
        super().__init__(
            average=sparsifier.average,
            tensors_size_are_same=bool(self.selects and sparsifier.tensors_size_are_same
                                       and self.index_codec.fixed_size and self.value_codec.fixed_size))
        self.work = Workspace()
        self.outputs = Outputs()  # decoded results, reused per name once released

    def __repr__(self):
        return (f"{type(self).__name__}({type(self.sparsifier).__name__}, index={self.index_codec.name}, "
                f"value={self.value_codec.name})")

    # -- compress -------------------------------------------------------------------
    def compress(self, tensor, name):
        start = time.perf_counter()
        flat, restore = edge.to_core(tensor, what=f"tensor {name!r}")
        finite = all_finite(flat)
        if not finite:  # the fact travels, not the garbage: NaN on every rank
            frame, indices = nonfinite_frame(self.kind, flat.size), np.empty(0, dtype=np.uint32)
        else:  # a tensor of at most min_numel entries is still sparsified, its codecs skipped
            source, support = self._support(tensor, flat, name)
            frame, indices = self._encode(source, support, name, *self._codecs(flat.size))
        ctx = WrapperCtx(flat.size, indices, restore, tensor, flat, finite, name)
        if self.micro_benchmark:
            self._report(name, frame, ctx, time.perf_counter() - start)
        return [restore.wrap(frame)], ctx

    def _support(self, tensor, flat, name):
        """(dense tensor to gather values from, ascending uint32 indices)."""
        if self.selects:
            return flat, self.sparsifier.select(flat, name)
        tensors, ctx = self.sparsifier.compress(tensor, name)
        sent, _ = edge.to_core(self.sparsifier.decompress(tensors, ctx), what=f"decompressed {name!r}")
        support = np.flatnonzero(sent).astype(np.uint32)
        # A sparsifier that sends the tensor's own values (a user's torch top-k or random-k,
        # ours): the values are gathered from the tensor, so that a Bloom filter's false
        # positives carry their true values, as with the selecting ones (they were sent as
        # zeros). One that changes them (adaq's means, a quantiser) keeps its own.
        if np.array_equal(sent[support], flat[support]):
            return flat, support
        return sent, support

    def _codecs(self, numel):
        """(index codec, value codec, sends a permutation) for a tensor of numel entries:
        the configured ones, or raw ones at or below min_numel (DeepReduce's rule)."""
        if numel <= self.min_numel:
            return self.raw_index, self.raw_value, False
        return self.index_codec, self.value_codec, self.sends_perm

    def _encode(self, source, support, name, index_codec, value_codec, sends_perm):
        d = source.size
        plan = index_codec.plan(support, d, self.work)
        indices = plan.indices
        r = indices.size
        values = selected_values(source, plan.sources)
        signed = value_codec.signs_in_index
        if signed and not sends_perm and d > SIGNED_D_LIMIT:
            raise ValueError(f"tensor {name!r} has {d} elements: value codec {value_codec.name} with raw indices "
                             f"sends int32 (index + 1) * sign, so d must be below 2^31; use a set index codec")
        perm_bound = permutation.packed_size(r, signed) if sends_perm else 0
        nsections = 3 if sends_perm else 2
        header = lib.dr_frame_header_size(nsections)
        cap = header + plan.bound + value_codec.bound(r) + perm_bound + lib.DR_FRAME_TRAILER
        frame = np.empty(cap, dtype=np.uint8)
        base = u8(frame)
        index_len = plan.write(base + header, plan.bound)
        off = header + index_len
        value_len, perm = value_codec.encode(values, base + off, cap - off, name, self.work)
        off += value_len
        # The sign of the j-th value in codec order, where the value section has none.
        signs = np.signbit(values)[perm].astype(np.uint32) if signed else None
        perm_len = 0
        if perm is not None and sends_perm:
            perm_len = permutation.pack(perm, base + off, cap - off, repr(name), signs)
        elif perm is not None:  # raw indices: rewrite them in value order instead
            raw = frame[header:header + index_len].view(np.uint32)
            np.take(indices, perm, out=raw)
            if signs is not None:
                index_codec.fold_signs(raw, signs, raw)
        f = ffi.new("dr_frame *")
        f.kind, f.index_codec, f.value_codec = self.kind, index_codec.codec_id, value_codec.codec_id
        f.dtype, f.nsections, f.numel, f.count = lib.DR_DTYPE_FLOAT32, nsections, d, r
        f.params = plan.params + value_codec.params
        f.section_len[0:nsections] = (index_len, value_len, perm_len)[:nsections]
        total = ffi.new("size_t *")
        check(lib.dr_frame_seal(f, base, cap, total), f"frame of {name!r}")
        return frame[:total[0]], plan.sources

    # -- decompress -----------------------------------------------------------------
    def _payload_name(self):
        return f"{self!r} payload"

    def _decode(self, buf, ctx):
        """The name's pooled buffer once nothing holds it, or a new array. (A Bloom
        filter's rebuild scans all d positions: decoding the own frame once, as the base
        class does, saves a third of a step.)"""
        marker = decoded_marker(buf, self.kind, ctx.numel, self._payload_name())
        if marker is not None:
            return marker
        out = self.outputs.zeros(ctx.name, ctx.numel)
        self._scatter(buf, ctx, out, lib.dr_scatter)
        return out

    def decompress_aggregate(self, payloads, ctx, divisor=1):
        """Several ranks' frames: each one's entries scatter-added into one zeroed tensor
        (this rank's own decode, from ``lost``, added whole), then divided in place:
        the same bits as decompressing each, summing and dividing, without a dense
        tensor per rank. A subclass, or a sparsifier, that decompresses or aggregates
        its own way gets the default."""
        if len(payloads) == 1 or not self._sums_as(_Wrapper) or \
                type(self.sparsifier).aggregate is not Compressor.aggregate:
            return super().decompress_aggregate(payloads, ctx, divisor)
        total = self.outputs.zeros(ctx.name, ctx.numel)

        def add(frame):
            own = self._take_own(frame, ctx)
            if own is not None:
                np.add(total, own[0], out=total)
            else:
                self._scatter(frame, ctx, total, lib.dr_scatter_add)

        sum_frames([frame for frame, in payloads], self.kind, ctx.numel, self._payload_name(), total, add)
        if divisor != 1:
            np.divide(total, np.float32(divisor), out=total)
        return ctx.restore(total)

    def _scatter(self, buf, ctx, out, scatter):
        """Parse frame ``buf`` (not the non-finite marker), decode its sections and write
        (``lib.dr_scatter``) or add (``lib.dr_scatter_add``) its entries into ``out``."""
        what = self._payload_name()
        f = parse_frame(buf, what)
        index_codec, value_codec, sends_perm = self._codecs(ctx.numel)
        expected = (self.kind, index_codec.codec_id, value_codec.codec_id, 3 if sends_perm else 2)
        got = (f.kind, f.index_codec, f.value_codec, f.nsections)
        if got != expected:
            raise FrameError(f"{what}: got {_describe(got)}, expected {_describe(expected)} "
                             "(a payload of another compressor or configuration)")
        if f.numel != ctx.numel:
            raise FrameError(f"{what}: the frame is for a tensor of {f.numel} elements, this one has {ctx.numel}")
        count = f.count
        signed = value_codec.signs_in_index
        index_args = (buf, f.section_off[0], f.section_len[0], ctx.numel, count, tuple(f.params[0:2]), self.work)
        if signed and not sends_perm:  # raw indices in value order as (index + 1) * sign
            indices, signs = index_codec.decode(*index_args, ordered=False, signed=True)
        else:
            indices = index_codec.decode(*index_args, ordered=not value_codec.reorders)
        values = value_codec.decode(buf, f.section_off[1], f.section_len[1], count, tuple(f.params[2:4]),
                                    self.work)
        if sends_perm:
            signs = self.work.array("signs", count, bool) if signed else None
            perm = permutation.unpack(buf, f.section_off[2], f.section_len[2], count,
                                      self.work.array("perm", count, np.uint32), what, signs)
            indices = np.take(indices, perm)
        if signed:
            np.negative(values, out=values, where=signs)
        check_frame(scatter(u32(indices), f32(values), count, f32(out), ctx.numel), what)

    def aggregate(self, tensors):
        return self.sparsifier.aggregate(tensors)

    def rollback(self, name):
        self.sparsifier.rollback(name)

    # -- micro-benchmark --------------------------------------------------------------
    def _report(self, name, frame, ctx, encode_seconds):
        """One line per tensor: sizes of the sections, the frame against dense float32,
        and the codec times (decode timed on this rank's own frame)."""
        start = time.perf_counter()
        self.decompress([frame], ctx)
        decode_seconds = time.perf_counter() - start
        index_len, value_len, perm_len, overhead = section_bytes(frame)
        print(f"[deepreduce] {name}: d={ctx.numel} r={ctx.indices.size} index={index_len}B values={value_len}B "
              f"perm={perm_len}B frame={frame.nbytes}B (overhead {overhead}B; "
              f"{100.0 * frame.nbytes / (4 * ctx.numel):.3f}% of dense) "
              f"encode={1e6 * encode_seconds:.0f}us decode={1e6 * decode_seconds:.0f}us", flush=True)


def section_bytes(payload):
    """(index, values, permutation, overhead) bytes of a DeepReduce payload: its codec
    sections, and the frame's own header and CRC (a non-finite marker is all overhead)."""
    buf = as_frame_bytes(payload, "DeepReduce payload")
    f = parse_frame(buf, "DeepReduce payload")
    lengths = [int(f.section_len[i]) for i in range(f.nsections)]
    lengths += [0] * (3 - len(lengths))
    return (*lengths, buf.nbytes - sum(lengths))


def _describe(fields):
    kind, icodec, vcodec, nsections = fields
    return (f"kind {_KINDS.get(kind, kind)}, index codec {_INDEX_CODECS.get(icodec, icodec)}, value codec "
            f"{_VALUE_CODECS.get(vcodec, vcodec)}, {nsections} section(s)")


class ValueCompressor(_Wrapper):
    """DeepReduce 'value': the sparsifier's indices raw, its values by ``params['value']``."""

    codes_values = True


class IndexCompressor(_Wrapper):
    """DeepReduce 'index': the indices by ``params['index']``, the values raw float32."""

    codes_index = True


class DeepReduce(_Wrapper):
    """DeepReduce 'both': the indices by ``params['index']`` and the values by
    ``params['value']``."""

    codes_index = True
    codes_values = True


WRAPPERS = {"value": ValueCompressor, "index": IndexCompressor, "both": DeepReduce}


def deepreduce_from_params(params):
    """grace_from_params, then the compressor wrapped as ``params['deepreduce']`` says
    (absent, None or another false value such as False or '': left unwrapped, as the
    reference's ``if deepreduce:``). Returns the communicator."""
    grc = grace_from_params(params)
    mode = name(params.get("deepreduce"), "params['deepreduce']", WRAPPERS)
    if mode:
        if mode not in WRAPPERS:
            raise UnknownNameError(f"unknown deepreduce mode {mode!r}; valid modes: None, {', '.join(WRAPPERS)}")
        grc.compressor = WRAPPERS[mode](grc.compressor, params)
    return grc
