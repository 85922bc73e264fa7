"""The package reads by concern: no source file is long, and each one says first what it holds.

Every Python module, C unit and header under ``thors_stream/`` stays within ``MAX_LINES``
lines, and opens with one line that names what it holds (a Python module's docstring, a C
file's first comment), so that a reader can find a concern from the file list and the
first lines alone.
"""

from __future__ import annotations

import ast
import pathlib

import pytest

import thors_stream

PKG = pathlib.Path(thors_stream.__file__).parent
MAX_LINES = 1_000
SOURCES = sorted(p for ext in ("*.py", "*.c", "*.h") for p in PKG.rglob(ext) if "build" not in p.parts)


def _first_line(path: pathlib.Path) -> str:
    text = path.read_text(encoding="utf-8")
    if path.suffix == ".py":
        doc = ast.get_docstring(ast.parse(text))
        return doc.strip().splitlines()[0].strip() if doc and doc.strip() else ""
    head = text.lstrip().splitlines()[0] if text.strip() else ""
    if not head.startswith(("/*", "//")):
        return ""
    body = head.lstrip("/*").rstrip("*/").strip()
    if not body:  # a comment block whose text starts on its second line
        lines = text.lstrip().splitlines()
        body = lines[1].strip().lstrip("*").strip() if len(lines) > 1 else ""
    return body


def test_sources_found() -> None:
    names = {p.name for p in SOURCES}
    assert {"stream.py", "cli.py", "river.py", "store.py"} <= names
    assert any(p.suffix == ".c" for p in SOURCES), "the compiled core's C sources are part of the package"


@pytest.mark.parametrize("path", SOURCES, ids=lambda p: str(p.relative_to(PKG)))
def test_no_long_source_file(path: pathlib.Path) -> None:
    n = len(path.read_text(encoding="utf-8").splitlines())
    assert n <= MAX_LINES, f"{path.relative_to(PKG)} has {n} lines (at most {MAX_LINES}): split it by concern"


@pytest.mark.parametrize("path", SOURCES, ids=lambda p: str(p.relative_to(PKG)))
def test_first_line_says_what_it_holds(path: pathlib.Path) -> None:
    first = _first_line(path)
    assert len(first.split()) >= 4, f"{path.relative_to(PKG)}: first line {first!r} does not say what the file holds"
    assert first.rstrip("`*_ ").lower() != path.stem.lower()
