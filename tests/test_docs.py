"""The documentation site: it builds with ``mkdocs build --strict`` and its code blocks run.

- The build fails on a broken link to a page, an image or an anchor, on an unresolved
  cross-reference, and on a docstring griffe cannot parse (``--strict`` turns warnings into errors).
- Every fenced block in ``docs/`` names its language; the ``python`` blocks of a page run in
  order, in one namespace per page, in a temporary directory. A block that is not meant to run
  is marked as something else (``text`` for output, ``bash`` for commands).
"""

from __future__ import annotations

import re
from pathlib import Path

import pytest

ROOT = Path(__file__).resolve().parents[1]
DOCS = ROOT / "docs"
PAGES = sorted(p for p in DOCS.rglob("*.md"))
FENCE = re.compile(r"^(?P<indent>[ \t]*)(?P<fence>`{3,})(?P<info>[^\n`]*)\n(?P<body>.*?)^(?P=indent)(?P=fence)[ \t]*$",
                   re.S | re.M)


def code_blocks(text: str) -> list[tuple[str, str, int]]:
    """``(language, code, line)`` of every fenced block, the code dedented by its fence's indent."""
    blocks = []
    for m in FENCE.finditer(text):
        indent = len(m["indent"])
        lang = m["info"].strip().split(" ")[0].lstrip("{.").rstrip("}")
        body = "\n".join(line[indent:] for line in m["body"].splitlines())
        blocks.append((lang, body, text.count("\n", 0, m.start()) + 1))
    return blocks


def test_extractor_reads_fences() -> None:
    text = "a\n```python\nx = 1\n```\n\n!!! note\n    ```text\n    out\n    ```\n````bash\n```\n````\n"
    assert code_blocks(text) == [("python", "x = 1", 2), ("text", "out", 7), ("bash", "```", 10)]


def test_site_builds_strict(built_site) -> None:
    proc, site = built_site.proc, built_site.site
    assert proc.returncode == 0, proc.stdout + proc.stderr
    for page in ("index.html", "getting-started/index.html", "reference/stream/index.html",
                 "benchmarks/results/batch_speed/index.html", "changelog/index.html"):
        assert (site / page).is_file(), page
    # the API reference rendered the docstrings (not an empty page) and left no raw Sphinx role
    api = (site / "reference/stream/index.html").read_text()
    assert "StreamingThors" in api and "update_many" in api
    assert not re.search(r":(func|class|meth|mod|attr):`", api)
    assert built_site.seconds < 120


def test_no_placeholder_or_traceback() -> None:
    for page in PAGES:
        text = page.read_text()
        assert "@@" not in text, f"{page.name}: a placeholder is left"
        assert "Traceback (most recent call last)" not in text, f"{page.name}: a pasted crash"


@pytest.mark.parametrize("page", PAGES, ids=[p.relative_to(DOCS).as_posix() for p in PAGES])
def test_page_code_blocks(page: Path, tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> None:
    """Every block names its language; the page's python blocks run in order in one namespace."""
    blocks = code_blocks(page.read_text())
    unmarked = [line for lang, _, line in blocks if not lang]
    assert not unmarked, f"{page.name}: fenced blocks without a language at lines {unmarked}"
    monkeypatch.chdir(tmp_path)
    ns: dict[str, object] = {"__name__": f"docs_{page.stem}"}
    for lang, code, line in blocks:
        if lang != "python":
            continue
        try:
            exec(compile(code, f"{page.relative_to(ROOT)}:{line}", "exec"), ns)
        except Exception as exc:  # pragma: no cover - the message is the point
            pytest.fail(f"{page.relative_to(ROOT)} line {line}: {exc!r}\n{code}")
