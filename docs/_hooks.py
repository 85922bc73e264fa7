"""MkDocs hook: publish the benchmark record as it is in the repository.

``benchmarks/results/`` (each run's output) and the paper reproduction's README, discussion and
results are the record the docs quote. Rather than copying them into ``docs/``, they are added to
the site at their repository paths (``benchmarks/results/batch_speed.md`` ->
``/benchmarks/results/batch_speed/``), so a docs page links them as ``results/batch_speed.md``
from ``docs/benchmarks/`` and the files' own relative links keep working.
"""

from __future__ import annotations

import logging
import re
from pathlib import Path
from typing import Any

from mkdocs.structure.files import File, Files
from mkdocs.structure.pages import Page

ROOT = Path(__file__).resolve().parents[1]
log = logging.getLogger("mkdocs.hooks.thors_docs")
RECORD = [
    ("benchmarks/results", ("*.md", "*.png")),
    ("benchmarks/paper/results", ("*.md", "*.png")),
    ("benchmarks/paper", ("README.md", "discussion.md")),
]


def on_files(files: Files, config: Any, **kwargs: Any) -> Files:
    for folder, patterns in RECORD:
        for pattern in patterns:
            for path in sorted((ROOT / folder).glob(pattern)):
                rel = path.relative_to(ROOT).as_posix()
                if files.get_file_from_path(rel) is None:
                    files.append(File(rel, str(ROOT), config["site_dir"], config["use_directory_urls"]))
    seen: dict[str, str] = {}
    for f in files:
        if f.dest_uri in seen:  # e.g. docs/benchmarks/paper.md and benchmarks/paper/README.md
            log.warning("%s and %s would both be written to %s", seen[f.dest_uri], f.src_uri, f.dest_uri)
        seen[f.dest_uri] = f.src_uri
    return files


def _is_record(page: Page) -> bool:
    return page.file.src_uri.startswith(tuple(folder + "/" for folder, _ in RECORD))


def on_page_markdown(markdown: str, page: Page, **kwargs: Any) -> str:
    """The record pages hold wide tables and terminal output: give them the full width (pages
    with ``wide: true`` in their front matter lose the table of contents), and keep the line
    breaks of indented output lines (a paragraph would run them together)."""
    if not _is_record(page) and not page.meta.get("wide"):
        return markdown
    if not _is_record(page):
        page.meta.setdefault("hide", ["toc"])
        return markdown
    page.meta.setdefault("hide", ["navigation", "toc"])
    # a link to a folder works on GitHub (a listing) but not on the site: point at its summary
    markdown = markdown.replace("](results/)", "](results/summary.md)")
    lines = markdown.split("\n")
    fenced, in_list, blank_before = False, False, True
    for i, line in enumerate(lines[:-1]):
        stripped = line.lstrip()
        if stripped.startswith("```"):
            fenced = not fenced
        if fenced or stripped.startswith("```"):
            blank_before = False
            continue
        if not line.strip():
            in_list, blank_before = False, True
            continue
        if blank_before or not line.startswith(" "):
            in_list = in_list or bool(re.match(r"([-*+]|\d+\.)\s", stripped))
        blank_before = False
        nxt = lines[i + 1]
        if (not in_list and nxt.startswith(" ") and nxt.strip()
                and not stripped.startswith(("|", "#", ">"))
                and not nxt.lstrip().startswith(("-", "*", "|", "```"))):
            lines[i] = line + "<br>"
    return "\n".join(lines)
