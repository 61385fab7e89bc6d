"""CUDA tensors through the array edge: staged through pinned host memory, the result back
on the tensor's device with its dtype and shape. Runs only where a GPU is present."""
import pytest

torch = pytest.importorskip("torch")
pytestmark = pytest.mark.skipif(not torch.cuda.is_available(), reason="needs a CUDA device")

from deepreduce import grace_from_params  # noqa: E402


@pytest.mark.parametrize("dtype", [torch.float32, torch.float16, torch.bfloat16])
@pytest.mark.parametrize("params", [
    {"compressor": "topk", "memory": "residual", "communicator": "allgather", "compress_ratio": 0.5},
    {"compressor": "qsgd", "communicator": "allgather"},
    {"compressor": "none"},
])
def test_cuda_tensor_round_trip(dtype, params):
    grc = grace_from_params(params)
    g = torch.tensor([[1.0, -4.0], [0.5, 3.0]], dtype=dtype, device="cuda")
    out = grc.step(g, "w")
    assert out.device == g.device and out.dtype == dtype and out.shape == g.shape
    if params["compressor"] == "topk":
        assert out.float().cpu().tolist() == [[0.0, -4.0], [0.0, 3.0]]
