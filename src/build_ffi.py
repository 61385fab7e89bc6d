"""Generate the CFFI (API mode) C source for ``deepreduce._core`` from the public header.

Run by CMake at build time, never at import time:

    python build_ffi.py path/to/deepreduce.h out.c

The cdef is the public header itself, with its area headers inlined and the preprocessor
lines CFFI cannot read dropped (integer ``#define`` constants are kept), so the binding
can never drift from the header.
"""
import pathlib
import re
import sys

import cffi

INCLUDE_AREA = re.compile(r'^\s*#\s*include\s+"([^"]+)"\s*$')
CPLUSPLUS = re.compile(r"^\s*#\s*ifdef\s+__cplusplus\b")
INT_DEFINE = re.compile(r"^\s*#\s*define\s+[A-Za-z_]\w*\s+(0x[0-9A-Fa-f]+|\d+)[uUlL]*\s*(/\*.*\*/)?\s*$")


def cdef_text(header: pathlib.Path) -> str:
    lines = []
    cplusplus = False  # inside #ifdef __cplusplus ... #endif: C++ linkage, nothing for CFFI
    for line in header.read_text().splitlines():
        area = INCLUDE_AREA.match(line)
        if CPLUSPLUS.match(line) or cplusplus:
            cplusplus = not line.lstrip().startswith("#endif")
        elif area:
            lines.append(cdef_text(header.parent / area.group(1)))
        elif INT_DEFINE.match(line):
            lines.append(line)
        elif not line.lstrip().startswith("#"):
            lines.append(line)
    return "\n".join(lines)


def main(header_path: str, out_path: str) -> None:
    header = pathlib.Path(header_path).resolve()
    ffi = cffi.FFI()
    ffi.cdef(cdef_text(header))
    ffi.set_source("deepreduce._core", '#include "deepreduce.h"')
    ffi.emit_c_code(out_path)


if __name__ == "__main__":
    main(*sys.argv[1:3])
