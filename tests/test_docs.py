"""The documentation site builds in strict mode (broken links, missing pages or anchors and
unresolvable API references are errors), and its params page covers every key the code
reads."""
import pathlib
import re
import shutil
import subprocess
import sys

import pytest

from deepreduce.params import DEFAULTS, KEYS

ROOT = pathlib.Path(__file__).resolve().parents[1]
# params["key"], params.get("key"), p["key"]: how the code reads a params dict.
READ = re.compile(r"""\b(?:params|p)\s*(?:\[\s*|\.get\(\s*)["']([A-Za-z_][\w-]*)["']""")


def keys_the_code_reads():
    found = {}
    for path in (ROOT / "deepreduce").rglob("*.py"):
        for key in READ.findall(path.read_text()):
            found.setdefault(key, path.relative_to(ROOT).as_posix())
    return found


def test_every_params_key_the_code_reads_is_documented():
    found = keys_the_code_reads()
    assert len(found) >= 20, "the scan should see the code's params reads"
    missing = {key: where for key, where in found.items() if key not in KEYS}
    assert not missing, f"add these keys to deepreduce.params.KEYS: {missing}"
    assert set(DEFAULTS) <= set(KEYS)


def test_the_committed_params_table_is_the_codes():
    """docs/params.md holds the table too, so it reads whole where the site is not built
    (it held only the marker); ``python scripts/mkdocs_hooks.py`` rewrites it."""
    sys.path.insert(0, str(ROOT / "scripts"))
    try:
        import mkdocs_hooks
    finally:
        sys.path.pop(0)
    page = mkdocs_hooks.PARAMS_PAGE.read_text()
    assert page == mkdocs_hooks.with_params_table(page), "run: python scripts/mkdocs_hooks.py"
    assert "| `compress_ratio` | `0.3` |" in page


@pytest.mark.slow
def test_docs_site_builds_in_strict_mode_with_every_key(tmp_path):
    if shutil.which("mkdocs") is None and subprocess.run([sys.executable, "-m", "mkdocs", "--version"],
                                                         capture_output=True).returncode != 0:
        pytest.fail("mkdocs is not installed: pip install -e .[test]")
    site = tmp_path / "site"
    built = subprocess.run([sys.executable, "-m", "mkdocs", "build", "--strict", "-d", str(site)],
                           cwd=ROOT, capture_output=True, text=True, timeout=300)
    assert built.returncode == 0, built.stdout + built.stderr
    params_page = (site / "params" / "index.html").read_text()
    for key in keys_the_code_reads():
        assert f"<code>{key}</code>" in params_page, key
    api_page = (site / "api" / "index.html").read_text()
    assert "grace_from_params" in api_page and "deepreduce.train.run" in api_page
    assert "dr_frame_parse" in (site / "c_api" / "index.html").read_text()
