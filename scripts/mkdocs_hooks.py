"""MkDocs hooks: pages generated from the code, so the docs cannot drift from it.

- ``<!-- generated: params -->`` becomes the table of every params key
  (``deepreduce.params.KEYS`` with GRACE's defaults from ``DEFAULTS``).
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
        rows.append(f"| `{key}` | `{documented_default(key)}` | {readers} | {meaning} |")
    return "\n".join(rows)


def _c_api():
    parts = []
    headers = [HEADERS / "deepreduce.h"] + sorted((HEADERS / "deepreduce").glob("*.h"))
    for header in headers:
        rel = header.relative_to(HEADERS)
        parts.append(f"## `{rel}`\n\n```c\n{header.read_text().rstrip()}\n```\n")
    return "\n".join(parts)


GENERATORS = {"<!-- generated: params -->": _params_table, "<!-- generated: c-api -->": _c_api}


def on_page_markdown(markdown, page, config, files):
    for marker, generate in GENERATORS.items():
        if marker in markdown:
            markdown = markdown.replace(marker, generate())
    return markdown
