"""A griffe extension for this site: docstrings written for Sphinx/doctest, rendered as Markdown.

Two things in the docstrings would otherwise show up raw or broken on the site:

- Sphinx roles (``:func:`thors_threshold```, ``:class:`~x.Y```), which mkdocstrings does not
  interpret: each becomes inline code with the name as written (a leading ``~`` keeps only
  the last part);
- doctest blocks (``>>>`` lines and their output) outside a numpy ``Examples`` section, which
  Markdown would read as prose (``[0.1, 0.5]`` as a link reference): each is fenced as
  ``pycon``. Blocks inside ``Examples`` sections are left to griffe, which handles them;
- reST "simple tables" (columns under rules of ``=``), which Markdown would run together into
  one paragraph: each becomes a Markdown table.

Nothing in the package is changed; only the text griffe hands to mkdocstrings.
"""

from __future__ import annotations

import re
from typing import Any

import griffe

_ROLE = re.compile(r":(?:py:)?(?:func|class|meth|attr|mod|data|exc|obj|const|ref):`(~?)([^`]+)`")


def _sub(match: re.Match[str]) -> str:
    tilde, name = match.groups()
    if tilde:
        name = name.rsplit(".", 1)[-1]
    return f"`{name}`"


_HEADER_RULE = re.compile(r"^\s*-{3,}\s*$")


def _fence_doctests(text: str) -> str:
    """Fence ``>>>`` blocks that are not inside a numpy ``Examples`` section."""
    lines = text.split("\n")
    out: list[str] = []
    section = ""
    i = 0
    while i < len(lines):
        line = lines[i]
        if i + 1 < len(lines) and line.strip() and _HEADER_RULE.match(lines[i + 1]):
            section = line.strip().lower()
        if line.lstrip().startswith(">>>") and section not in ("examples", "example"):
            indent = line[: len(line) - len(line.lstrip())]
            out.append(f"{indent}```pycon")
            while i < len(lines) and lines[i].strip():
                out.append(lines[i])
                i += 1
            out.append(f"{indent}```")
            continue
        out.append(line)
        i += 1
    return "\n".join(out)


def _cells(line: str, spans: list[tuple[int, int]]) -> list[str]:
    """The text of each column of a simple-table row, split at the rules' column starts."""
    cols = []
    for n, (a, _) in enumerate(spans):
        b = spans[n + 1][0] if n + 1 < len(spans) else len(line)
        cols.append(line[a:b].strip().replace("|", "\\|"))
    return cols


_RULE = re.compile(r"^(\s*)=+(?:\s+=+)+\s*$")


def _simple_tables(text: str) -> str:
    """Convert reST simple tables (header between the first two rules, rows up to the third)."""
    lines = text.split("\n")
    out: list[str] = []
    i = 0
    while i < len(lines):
        m = _RULE.match(lines[i])
        if not m:
            out.append(lines[i])
            i += 1
            continue
        rule = lines[i]
        spans = [(k.start(), k.end()) for k in re.finditer(r"=+", rule)]
        rules = [j for j in range(i + 1, len(lines)) if lines[j] == rule]
        if len(rules) < 2:
            out.append(lines[i])
            i += 1
            continue
        header, end = lines[i + 1 : rules[0]], rules[1]

        indent = m.group(1)
        out.append(indent + "| " + " | ".join(" ".join(c) for c in zip(*(_cells(h, spans) for h in header))) + " |")
        out.append(indent + "|" + "---|" * len(spans))
        for row in lines[rules[0] + 1 : end]:
            if row.strip():
                out.append(indent + "| " + " | ".join(_cells(row, spans)) + " |")
        i = end + 1
    return "\n".join(out)


class SphinxRoles(griffe.Extension):
    """Rewrite Sphinx roles, stray doctest blocks and reST simple tables in every docstring."""

    def _fix(self, obj: Any) -> None:
        if obj.docstring is not None:
            obj.docstring.value = _simple_tables(_fence_doctests(_ROLE.sub(_sub, obj.docstring.value)))

    def on_instance(self, *, obj: griffe.Object, **kwargs: Any) -> None:
        self._fix(obj)
