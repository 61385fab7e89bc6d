import pytest
import torch

from deepreduce.train.config import MODEL_NAMES
from deepreduce.train.models import MODELS, build_model, count_parameters

IMAGES = {"in_shape": (3, 32, 32), "num_classes": 10}
DIGITS = {"in_shape": (1, 8, 8), "num_classes": 10}


def test_resnet20_shape_and_size():
    model = build_model("resnet20", IMAGES)
    assert model(torch.randn(2, 3, 32, 32)).shape == (2, 10)
    # He et al. 2016, Table 6: ResNet-20 has 0.27M parameters (option A shortcuts).
    assert count_parameters(model) == 269_722


@pytest.mark.parametrize("name", ["cnn", "mlp", "resnet20"])
def test_image_models_on_digits(name):
    model = build_model(name, DIGITS)
    assert model(torch.randn(4, 1, 8, 8)).shape == (4, 10)


def test_small_cnn_is_small_but_has_a_large_tensor():
    model = build_model("cnn", DIGITS)
    assert 20_000 < count_parameters(model) < 60_000
    assert max(p.numel() for p in model.parameters()) > 10_000


def test_mlp_hidden_widths():
    model = build_model("mlp", DIGITS, hidden=[32, 16, 8])
    assert [m.out_features for m in model.net if isinstance(m, torch.nn.Linear)] == [32, 16, 8, 10]
    assert model(torch.randn(2, 1, 8, 8)).shape == (2, 10)
    with pytest.raises(ValueError, match="model 'cnn' has none to set"):
        build_model("cnn", DIGITS, hidden=(8,))


def test_ncf_scores_pairs():
    model = build_model("ncf", {"num_users": 7, "num_items": 11})
    out = model(torch.tensor([0, 6, 3]), torch.tensor([10, 0, 5]))
    assert out.shape == (3,)


def test_model_errors_name_the_problem():
    with pytest.raises(ValueError, match="valid names: cnn, mlp, resnet20, ncf"):
        build_model("vgg", DIGITS)
    with pytest.raises(ValueError, match="movielens"):
        build_model("ncf", DIGITS)
    with pytest.raises(ValueError, match="image data set"):
        build_model("resnet20", {"num_users": 3, "num_items": 4})


def test_cli_model_names_match_the_registry():
    assert tuple(MODELS) == MODEL_NAMES
