"""Every ``python`` block of the getting-started page runs on its own.

A reader copies one block, not the page: each block must hold its imports and its data. Each runs
in a fresh namespace, in a temporary directory (tests/test_docs.py runs the page's blocks in order
in one namespace, as a reader going down the page would).
"""

from __future__ import annotations

from pathlib import Path

import pytest
from test_docs import code_blocks

PAGE = Path(__file__).resolve().parents[1] / "docs" / "getting-started.md"
BLOCKS = [(code, line) for lang, code, line in code_blocks(PAGE.read_text()) if lang == "python"]


def test_the_page_has_its_examples() -> None:
    assert len(BLOCKS) >= 4  # arrays, streams, river's window wrappers, river


@pytest.mark.parametrize(("code", "line"), BLOCKS, ids=[f"line {line}" for _, line in BLOCKS])
def test_block_runs_on_its_own(code: str, line: int, tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> None:
    monkeypatch.chdir(tmp_path)
    try:
        exec(compile(code, f"docs/getting-started.md:{line}", "exec"), {"__name__": "getting_started_block"})
    except Exception as exc:  # pragma: no cover - the message is the point
        pytest.fail(f"docs/getting-started.md line {line} does not run on its own: {exc!r}\n{code}")
