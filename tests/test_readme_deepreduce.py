"""README.md's "DeepReduce's own names" snippet, taken from the README itself, trains over 2
gloo ranks with every index and value name DeepReduce's README and reference code accept
(None, bloom, bloom_cpu, rle, rlhff; None, polyfit, polyfit_cpu, gzip, qsgd), in every
mode: the loss falls and both ranks hold the same model, step by step."""
import pathlib
import re

import pytest

torch = pytest.importorskip("torch")

import distributed  # noqa: E402

pytestmark = pytest.mark.slow

README = pathlib.Path(__file__).resolve().parent.parent / "README.md"
INDEX_NAMES = (None, "bloom", "bloom_cpu", "rle", "rlhff")
VALUE_NAMES = (None, "polyfit", "polyfit_cpu", "gzip", "qsgd")
CASES = ([("index", index, "polyfit") for index in INDEX_NAMES]
         + [("value", "bloom", value) for value in VALUE_NAMES]
         + [("both", index, value) for index in INDEX_NAMES for value in VALUE_NAMES]
         + [(None, None, None)])


def readme_snippet():
    """The python block under the README heading "DeepReduce's own names"."""
    text = README.read_text()
    section = text[text.index("### DeepReduce's own names"):]
    return re.search(r"```python\n(.*?)```", section, re.S).group(1)


def _train_every_name(rank, world_size, snippet):
    namespace = {"__name__": "readme_snippet"}
    exec(compile(snippet, "README.md", "exec"), namespace)
    runs = [namespace["train"](mode, index, value) for mode, index, value in CASES]
    return [(losses, [p.detach().numpy().copy() for p in model.parameters()]) for model, losses in runs]


@pytest.fixture(scope="module")
def runs():
    return distributed.run(_train_every_name, 2, readme_snippet(), timeout=300)


def test_the_snippet_names_every_reference_name():
    snippet, text = readme_snippet(), README.read_text()
    assert "def train(" in snippet and "grc.step(" in snippet
    for name in INDEX_NAMES + VALUE_NAMES:
        assert (f"`'{name}'`" if name else "`None`") in text


@pytest.mark.parametrize("case", range(len(CASES)), ids=[f"{m}-{i}-{v}" for m, i, v in CASES])
def test_the_readme_snippet_trains_on_two_ranks(runs, case):
    (losses0, model0), (losses1, model1) = runs[0][case], runs[1][case]
    for curve in (losses0, losses1):  # each rank's loss, on its own data
        assert curve[-1] < 0.8 * curve[0], f"{CASES[case]}: loss did not fall: {curve[0]:.3f} -> {curve[-1]:.3f}"
    assert losses0 != losses1  # the ranks' data differ ...
    for p0, p1 in zip(model0, model1):  # ... yet they apply the same averaged update
        assert p0.tobytes() == p1.tobytes(), f"{CASES[case]}: the ranks' models differ"
