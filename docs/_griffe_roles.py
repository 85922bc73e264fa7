"""A griffe extension for this site: docstrings written for Sphinx/doctest, rendered as Markdown.

Two things in the docstrings would otherwise show up raw or broken on the site:

- Sphinx roles (``:func:`thors_threshold```, ``:class:`~x.Y```), which mkdocstrings does not
  interpret: each becomes inline code with the name as written (a leading ``~`` keeps only
  the last part);
- doctest blocks (``>>>`` lines and their output) outside a numpy ``Examples`` section, which
  Markdown would read as prose (``[0.1, 0.5]`` as a link reference): each is fenced as
  ``pycon``. Blocks inside ``Examples`` sections are left to griffe, which handles them.

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


class SphinxRoles(griffe.Extension):
    """Rewrite Sphinx roles to inline code and fence stray doctest blocks in every docstring."""

    def _fix(self, obj: Any) -> None:
        if obj.docstring is not None:
            obj.docstring.value = _fence_doctests(_ROLE.sub(_sub, obj.docstring.value))

    def on_instance(self, *, obj: griffe.Object, **kwargs: Any) -> None:
        self._fix(obj)
