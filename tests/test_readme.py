"""The README, a landing page: the two commands first, runnable examples, working links, short.

Its ```python blocks (arrays, streams, river) run in order in one namespace and must give what
the text says; every relative link resolves to a file in the repository (the docs pages are
linked as ``docs/*.md`` so that they work on GitHub; ``tests/test_docs.py`` checks the site).
"""

import re
from pathlib import Path

import numpy as np
import pytest

ROOT = Path(__file__).resolve().parents[1]
README = (ROOT / "README.md").read_text()


def test_no_traceback_or_placeholder():
    assert "Traceback (most recent call last)" not in README
    assert not re.findall(r"\b[A-Z]+_TABLE\b|\bTARGETS\b|@@", README)


def test_is_a_landing_page():
    assert len(README.splitlines()) <= 200
    for heading in ("## Arrays", "## Money", "## Streams", "## river", "## Results", "## Documentation"):
        assert heading in README


def test_local_links_exist():
    links = re.findall(r"\]\(([^)#\s]+)(?:#[^)]*)?\)", README)
    local = [link for link in links if not link.startswith(("http://", "https://"))]
    assert any(link.startswith("docs/") for link in local), "expected links into the docs"
    assert any(link.startswith("benchmarks/results/") for link in local), "expected links to the record"
    missing = [link for link in local if not (ROOT / link).exists()]
    assert not missing, missing


def test_opens_with_the_two_commands():
    """.ci/run runs the first ```bash block; it must hold exactly the install+demo and the test line."""
    block = re.search(r"```bash\n(.*?)```", README, re.S).group(1).strip().splitlines()
    assert len(block) == 2 and block[0].endswith("thors demo") and block[1].endswith("python -m pytest")


def test_python_snippets_run():
    """Run every ```python block in order in one namespace, as a reader would paste them."""
    blocks = re.findall(r"```python\n(.*?)```", README, re.S)
    assert len(blocks) == 4, "one example each for arrays, money, streams and river"
    ns: dict = {}
    for i, block in enumerate(blocks):
        try:
            exec(compile(block, f"README python block {i}", "exec"), ns)
        except Exception as exc:  # pragma: no cover - the message is the point
            pytest.fail(f"README python block {i} fails: {exc!r}\n{block}")
    from thors_stream import thors_threshold

    # arrays: the threshold is the brute-force optimum of the validation data
    r, scores, y = ns["r"], ns["scores"], ns["y"]
    cand = np.concatenate([[-np.inf], np.unique(scores)])
    costs = [100 * np.sum(y & (scores <= t)) + 10 * np.sum(~y & (scores > t)) for t in cand]
    assert r.cost == min(costs) and r.threshold == cand[int(np.argmin(costs))]
    assert ns["b"].fpr_lower <= r.fpr <= ns["b"].fpr_upper
    # money: the cut on the margin loses no more money on its events than the per-event Bayes rule,
    # and its decisions are the margins above the cut
    from thors_stream.margin import cost_margins

    p, amount, m, flag = ns["p"], ns["amount"], ns["m"], ns["flag"]
    assert m.decide_on == "margin" and (flag == (cost_margins(p, amount, 5.0) > m.threshold)).all()
    bayes = p * amount > (1 - p) * 5.0
    lost = lambda f: amount[y & ~f].sum() + 5.0 * np.sum(~y & f)  # noqa: E731
    assert np.isclose(lost(flag), m.cost) and lost(flag) <= lost(bayes)
    # streams: the window's threshold equals the batch answer on the last 1,000 events
    assert ns["thr"] == thors_threshold(scores[-1000:], y[-1000:], fn_cost=100, fp_cost=10).threshold
    # river: the cost the README prints
    assert round(ns["metric"].get()) == 359
