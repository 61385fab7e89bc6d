"""MkDocs hooks: pages generated from the code, so the docs cannot drift from it.

- Between ``<!-- generated: params -->`` and ``<!-- end generated: params -->`` stands the
  table of every params key (``deepreduce.params.KEYS`` with GRACE's defaults from
  ``DEFAULTS``). The table is committed too, so the page reads whole on GitHub: the site
  build puts in a fresh one, ``python scripts/mkdocs_hooks.py`` rewrites the committed one,
  and a test fails while the two differ.
- ``<!-- generated: c-api -->`` becomes the C API: each public header, which is the
  manual (every function's contract stands beside it), shown whole.

Build the site with ``mkdocs build --strict`` (``pip install -e .[docs]``).
"""
import pathlib

ROOT = pathlib.Path(__file__).resolve().parents[1]
HEADERS = ROOT / "src" / "c" / "include"


def _params_table():
    from deepreduce.params import KEYS, documented_default
    rows = ["| key | default | read by | meaning |", "|---|---|---|---|"]
    for key, (_, readers, meaning) in KEYS.items():
        readers, meaning = (text.replace("|", "\\|") for text in (readers, meaning))  # |g| is not a cell
        rows.append(f"| `{key}` | `{documented_default(key)}` | {readers} | {meaning} |")
    return "\n".join(rows)


def _c_api():
    parts = []
    headers = [HEADERS / "deepreduce.h"] + sorted((HEADERS / "deepreduce").glob("*.h"))
    for header in headers:
        rel = header.relative_to(HEADERS)
        parts.append(f"## `{rel}`\n\n```c\n{header.read_text().rstrip()}\n```\n")
    return "\n".join(parts)


PARAMS_PAGE = ROOT / "docs" / "params.md"
PARAMS_START, PARAMS_END = "<!-- generated: params -->", "<!-- end generated: params -->"
C_API_MARKER = "<!-- generated: c-api -->"


def with_params_table(markdown):
    """``markdown`` with a fresh params table between its two params markers."""
    head, found, rest = markdown.partition(PARAMS_START)
    if not found:
        return markdown
    _, ended, tail = rest.partition(PARAMS_END)
    if not ended:
        raise ValueError(f"{PARAMS_START} without {PARAMS_END}")
    return f"{head}{PARAMS_START}\n{_params_table()}\n{PARAMS_END}{tail}"


def on_page_markdown(markdown, page, config, files):
    markdown = with_params_table(markdown)
    if C_API_MARKER in markdown:
        markdown = markdown.replace(C_API_MARKER, _c_api())
    return markdown


if __name__ == "__main__":
    PARAMS_PAGE.write_text(with_params_table(PARAMS_PAGE.read_text()))
    print(f"rewrote the params table of {PARAMS_PAGE.relative_to(ROOT)}")
