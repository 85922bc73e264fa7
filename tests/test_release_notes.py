"""One version everywhere, and a changelog by release.

The version in ``pyproject.toml`` is the package's ``__version__`` and the newest release of
``docs/changelog.md``; each release there has a date and only the sections Added, Changed, Fixed
and Removed, in that order, each a list of entries. Changes not yet released may come first,
under ``## Unreleased``, by the same rules.
"""

from __future__ import annotations

import re
from pathlib import Path

from thors_stream._version import __version__

ROOT = Path(__file__).resolve().parents[1]
SECTIONS = ["Added", "Changed", "Fixed", "Removed"]


def test_pyproject_declares_the_package_version() -> None:
    declared = re.search(r'^version = "([^"]+)"$', (ROOT / "pyproject.toml").read_text(), re.M)
    assert declared is not None and declared.group(1) == __version__


def test_changelog_is_by_release_newest_first() -> None:
    text = (ROOT / "docs" / "changelog.md").read_text()
    releases = re.findall(r"^## Version (\S+) — (\d{4}-\d{2}-\d{2})$", text, re.M)
    assert releases and releases[0][0] == __version__, "the newest release is the package's version"
    versions = [tuple(int(x) for x in v.split(".")) for v, _ in releases]
    assert versions == sorted(versions, reverse=True) and len(set(versions)) == len(versions)
    assert [d for _, d in releases] == sorted((d for _, d in releases), reverse=True)
    headings = re.findall(r"^## (.*)$", text, re.M)
    unreleased = headings[:1] == ["Unreleased"]
    assert len(headings) == len(releases) + unreleased, "every second-level heading is a release (or Unreleased, first)"
    for body in re.split(r"^## (?:Version .*|Unreleased)$", text, flags=re.M)[1:]:
        sections = re.findall(r"^### (.+)$", body, re.M)
        assert sections and sections == [s for s in SECTIONS if s in sections], sections
        for part in re.split(r"^### .+$", body, flags=re.M)[1:]:
            assert re.search(r"^- ", part, re.M), "a section lists its entries"
