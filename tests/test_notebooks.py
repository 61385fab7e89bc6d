"""Every notebook under notebooks/ runs top to bottom in a real Jupyter kernel (nbclient +
ipykernel, as "Run all" does, spawned training workers included), and its saved outputs
are current: re-executed, each code cell produces the same kinds of output (text, tables,
images) as the copy in the repository, which is what a reader sees without running it."""
import pathlib

import pytest

NOTEBOOKS = sorted((pathlib.Path(__file__).resolve().parents[1] / "notebooks").glob("*.ipynb"))
# What a reader sees; widget state, stream splits and plain-text reprs vary run to run.
SHOWN = ("image/png", "text/html")


def shown(cell):
    """The sorted kinds of rich output a code cell shows, and whether it printed text."""
    kinds = {kind for out in cell.get("outputs", []) for kind in out.get("data", {}) if kind in SHOWN}
    printed = any(out["output_type"] == "stream" and out["name"] == "stdout" for out in cell.get("outputs", []))
    return sorted(kinds), printed


@pytest.mark.slow
@pytest.mark.parametrize("notebook", NOTEBOOKS, ids=[n.name for n in NOTEBOOKS])
def test_notebook_runs_in_a_kernel_and_its_saved_outputs_are_current(notebook, tmp_path):
    pytest.importorskip("torch")
    nbformat = pytest.importorskip("nbformat")
    from nbclient import NotebookClient
    saved = nbformat.read(notebook, as_version=4)
    assert any(cell.get("outputs") for cell in saved.cells), f"{notebook.name} is stored without outputs"
    fresh = nbformat.read(notebook, as_version=4)
    NotebookClient(fresh, timeout=600, kernel_name="python3",
                   resources={"metadata": {"path": str(tmp_path)}}).execute()  # raises on any cell error
    for i, (old, new) in enumerate(zip(saved.cells, fresh.cells)):
        if old.cell_type == "code":
            assert shown(new) == shown(old), f"{notebook.name} cell {i}: outputs changed; re-run and save it"
    images = sum("image/png" in shown(c)[0] for c in fresh.cells if c.cell_type == "code")
    assert images >= 1, f"{notebook.name} draws no figure"
