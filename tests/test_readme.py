"""The README: no pasted crash or leftover placeholder, and every local link resolves."""

import re
from pathlib import Path

ROOT = Path(__file__).resolve().parents[1]
README = (ROOT / "README.md").read_text()


def test_no_traceback_or_placeholder():
    assert "Traceback (most recent call last)" not in README
    assert not re.findall(r"\b[A-Z]+_TABLE\b|\bTARGETS\b", README)


def test_local_links_exist():
    links = re.findall(r"\]\(([^)#]+)\)", README)
    local = [link for link in links if not link.startswith(("http://", "https://"))]
    assert local, "expected local links to result files"
    missing = [link for link in local if not (ROOT / link).exists()]
    assert not missing, missing


def test_opens_with_the_two_commands():
    block = re.search(r"```bash\n(.*?)```", README, re.S).group(1).strip().splitlines()
    assert len(block) == 2 and block[0].endswith("thors demo") and block[1].endswith("python -m pytest")
