"""User pages speak of the software and its users only.

The built site's user pages (everything but the run records under ``benchmarks/results/`` and
``benchmarks/paper/results/``, which keep their commits and run logs on purpose) and the README
are scanned for what belongs in a project's history, not in its documentation:

- a commit hash: a hex word of 7 to 40 characters that starts a commit of ``git log``, or one
  that looks like a short hash (7 to 12 hex characters, at least one digit and one letter, not a
  number such as ``7976931348623157e308``);
- an issue reference: ``issue 12``, ``issues 12``, ``#12``;
- the words target(s), session(s), round(s), helper(s) and tried (work plans, who worked when,
  what was tried and dropped);
- what else ran on the machine (``other work running``, ``no other job``, ``an idle machine``):
  a figure names the machine by its cores.

The allow-list is short, and each entry is a use of one of those words that is not about the
project's work (``ALLOWED``). A finding names the page, the source file and line where the text
comes from (the page's Markdown, else the module whose docstrings the page renders), and the
line of the built text.
"""

from __future__ import annotations

import re
import subprocess
from functools import cache
from html.parser import HTMLParser
from pathlib import Path

import pytest

ROOT = Path(__file__).resolve().parents[1]
DOCS = ROOT / "docs"
# the run records: published with the site, not user pages
RECORDS = ("benchmarks/results/", "benchmarks/paper/results/")
# pages the docs hook publishes from outside docs/ that are prose for users
EXTRA_PAGES = [ROOT / "benchmarks/paper/README.md", ROOT / "benchmarks/paper/discussion.md"]

HEX_WORD = re.compile(r"(?<![\w.])[0-9a-f]{7,40}(?!\w)")
ISSUE = re.compile(r"\bissues?\s*#?\d+|(?<![\w&#/])#\d+\b", re.I)
WORDS = re.compile(r"\b(?:targets?|sessions?|rounds?|helpers?|tried)\b"
                   r"|\bother (?:jobs?|work) (?:running|on the machine)\b|\bno other (?:jobs?|work)\b"
                   r"|\b(?:idle|loaded) machine\b", re.I)
ALLOWED = [
    # Python's round() and numpy's .round() in examples and doctests
    re.compile(r"\bround\("),
    # a command-line option's name (the paper reproduction's --rounds, the Dask benchmark's --round)
    re.compile(r"--rounds?\b"),
    # numerical rounding ("1 - confidence rounds to 1") and round trips (a checkpoint saved and loaded)
    re.compile(r"\brounds? to\b|\bround[- ]trip", re.I),
    # "the other way round": the idiom
    re.compile(r"\bway round\b", re.I),
    # target encoding, the name of a way to encode categoricals by the label's mean
    re.compile(r"\btarget[- ]encod", re.I),
]


@cache
def commits() -> tuple[str, ...]:
    """Every commit of the checkout's history (none outside a git checkout)."""
    try:
        out = subprocess.run(["git", "log", "--format=%H"], cwd=ROOT, capture_output=True, text=True,
                             timeout=60, check=True).stdout
    except (OSError, subprocess.SubprocessError):
        return ()
    return tuple(out.split())


def looks_like_hash(word: str) -> bool:
    if not 7 <= len(word) <= 12 or re.fullmatch(r"\d+e\d+", word):
        return False
    return bool(re.search(r"\d", word)) and bool(re.search(r"[a-f]", word))


def findings(line: str) -> list[tuple[str, str]]:
    """``(what, text)`` of everything in one line that does not belong on a user page."""
    out = [("commit hash", m.group()) for m in HEX_WORD.finditer(line)
           if looks_like_hash(m.group()) or any(c.startswith(m.group()) for c in commits())]
    out += [("issue reference", m.group()) for m in ISSUE.finditer(line)]
    for allowed in ALLOWED:  # blank the allowed uses, keeping positions
        line = allowed.sub(lambda m: "_" * len(m.group()), line)
    out += [("word", m.group()) for m in WORDS.finditer(line)]
    return out


class _ArticleText(HTMLParser):
    """The text of a page's ``<article>`` (its content, without navigation), one block a line."""

    VOID = frozenset({"br", "img", "hr", "input", "meta", "link", "wbr", "col", "source"})
    BLOCK = frozenset({"p", "div", "li", "tr", "pre", "td", "th", "dt", "dd", "h1", "h2", "h3", "h4", "h5", "h6",
             "table", "ul", "ol", "dl", "details", "summary", "blockquote"})

    def __init__(self) -> None:
        super().__init__(convert_charrefs=True)
        self.depth, self.parts = 0, []

    def handle_starttag(self, tag: str, attrs: list) -> None:
        if self.depth == 0:
            self.depth = 1 if tag == "article" else 0
            return
        if tag == "br" or tag in self.BLOCK:
            self.parts.append("\n")
        if tag not in self.VOID:
            self.depth += 1

    def handle_endtag(self, tag: str) -> None:
        if self.depth and tag not in self.VOID:
            self.depth -= 1
            if tag in self.BLOCK:
                self.parts.append("\n")

    def handle_data(self, data: str) -> None:
        if self.depth:
            self.parts.append(data)


def article_text(html: str) -> str:
    parser = _ArticleText()
    parser.feed(html)
    return "".join(parser.parts)


def dest(source: Path) -> str:
    """Where mkdocs writes a page's HTML (directory URLs), relative to the site."""
    rel = source.relative_to(DOCS if source.is_relative_to(DOCS) else ROOT).with_suffix("")
    parts = list(rel.parts)
    if parts[-1] in ("index", "README"):
        parts.pop()
    return "/".join([*parts, "index.html"])


def sources_of(page: Path) -> list[Path]:
    """The page's Markdown and the modules whose docstrings it renders (``::: thors_stream.x``)."""
    text = page.read_text()
    mods = re.findall(r"^:::\s*([\w.]+)", text, re.M)
    files = [page]
    for mod in mods:
        base = ROOT / Path(*mod.split("."))
        files += [p for p in (base.with_suffix(".py"), base / "__init__.py") if p.is_file()]
    return files


def _plain(line: str) -> str:
    """A Markdown line as its text reads: links' targets, code and emphasis marks dropped."""
    return re.sub(r"[`*\[\]]", "", re.sub(r"\]\([^)]*\)", "]", line)).lower()


def locate(line: str, fragment: str, files: list[Path]) -> str:
    """``file:line`` of the source line the finding comes from: the first one holding the
    fragment with the most words around it from the built line (case-insensitive), else ''."""
    words = line.split()
    at = next((i for i, w in enumerate(words) if fragment.split()[0] in w), None)
    sources = [(f, [_plain(s) for s in f.read_text().splitlines()]) for f in files]
    for k in (3, 2, 1, 0):
        snippet = fragment if at is None or k == 0 else " ".join(words[max(0, at - k):at + k + 1])
        for f, lines in sources:
            for i, source_line in enumerate(lines, 1):
                if snippet.lower() in source_line:
                    return f"{f.relative_to(ROOT)}:{i}"
    return ""


def report(name: str, text: str, files: list[Path], source: Path | None = None) -> list[str]:
    """One message per finding; ``source``: the text is that file's own (the README)."""
    out = []
    for i, line in enumerate(text.splitlines(), 1):
        for what, fragment in findings(line):
            if source is not None:
                where = f"{source.relative_to(ROOT)}:{i}"
            else:
                where = locate(line, fragment, files) or "source not found"
            out.append(f"{name} ({where}; text line {i}): {what} {fragment!r} in {line.strip()[:160]!r}")
    return out


USER_PAGES = sorted(p for p in DOCS.rglob("*.md")) + EXTRA_PAGES


def test_rules() -> None:
    """The rules catch what they are for and spare ordinary text."""
    assert findings("the run at commit 0ee54b6 (issue 12, see #7)") == [
        ("commit hash", "0ee54b6"), ("issue reference", "issue 12"), ("issue reference", "#7")]
    assert findings(f"full hash {commits()[0]}" if commits() else "full hash 1f2e3d4c5b6a") != []
    for bad in ("this round's work", "the targets were met", "other sessions", "a helper's run",
                "Tried and dropped", "the speed target", "on a machine with other work running",
                "no other job running", "three runs on an idle machine"):
        assert findings(bad), bad
    for fine in ("round(x, 3) and a.round(3)", "rounding, rounded, around", "`--rounds N`", "--round 3",
                 "1 - confidence rounds to 1", "a checkpoint round-trips", "the other way round",
                 "categoricals target-encoded", "1e308 and -1.7976931348623157e308", "2026-11-25",
                 "1234567 events", "deadbeef", "a targeted ad", "sessionless"):
        assert findings(fine) == [], (fine, findings(fine))


def test_every_built_page_is_a_user_page_or_a_record(built_site) -> None:
    """No page escapes the scan: each built page is a user page below or a run record."""
    assert built_site.proc.returncode == 0, built_site.proc.stdout + built_site.proc.stderr
    known = {dest(p) for p in USER_PAGES}
    built = {p.relative_to(built_site.site).as_posix() for p in built_site.site.rglob("*.html")}
    stray = sorted(b for b in built if b not in known and not b.startswith(RECORDS) and b != "404.html")
    assert not stray, f"built pages that are neither scanned user pages nor records: {stray}"


@pytest.mark.parametrize("page", USER_PAGES, ids=[p.relative_to(ROOT).as_posix() for p in USER_PAGES])
def test_user_page_speaks_to_users(page: Path, built_site) -> None:
    html = built_site.site / dest(page)
    assert html.is_file(), f"{page.relative_to(ROOT)} was not built to {dest(page)}"
    found = report(dest(page), article_text(html.read_text()), sources_of(page))
    assert not found, "\n".join(found)


def test_readme_speaks_to_users() -> None:
    """The README, as written (GitHub renders it; it is not part of the site)."""
    readme = ROOT / "README.md"
    found = report("README.md", readme.read_text(), [readme], source=readme)
    assert not found, "\n".join(found)
