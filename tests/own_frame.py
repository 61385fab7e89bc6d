"""The check that a compressor's decode of its own frame in ``lost`` (residual memory)
serves the communicator's decompress of the same bytes, shared by the quantisers' and the
DeepReduce wrappers' tests."""
import numpy as np


def check_own_decode_served_once(comp, g, h, name="w"):
    """``lost`` decodes this rank's frame of ``g``; the allgather decodes it again among
    every rank's: the second is the first's result, bit for bit, handed out once; the frame
    of ``h`` (another rank's) is decoded as it is. Returns g's decode."""
    tensors, ctx = comp.compress(g, name)
    fresh = np.array(comp.decompress(tensors, ctx))  # no lost() yet: a decode (copied out)
    residual = np.empty_like(g)
    comp.lost(g, tensors, ctx, residual)
    assert residual.tobytes() == (g - fresh).tobytes()
    others, other_ctx = comp.compress(h, name)
    assert comp.decompress(others, ctx).tobytes() == comp.decompress(others, other_ctx).tobytes() != fresh.tobytes()
    served = ctx.own[1]  # lost's decode, still unclaimed: the other rank's frame did not take it
    first = comp.decompress([tensors[0].copy()], ctx)  # the same bytes in another buffer, as a transport gives them
    assert first.tobytes() == fresh.tobytes() and np.shares_memory(np.asarray(first), served)
    first[:] = 7.0  # what a caller got is its own: the next decompress is a decode again
    assert comp.decompress(tensors, ctx).tobytes() == fresh.tobytes()
    return fresh
