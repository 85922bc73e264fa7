"""Large trees keep their node arenas in huge-page mappings (Linux; see ``arena_resize`` in
``_ctree.c``): an arena of 4 MiB or more is its own 2 MiB-aligned anonymous mapping that
grows in place while it can, moves (copied) when it cannot, shrinks back to a PyMem block,
and is reported to tracemalloc. Checked here: every such transition on one tree against
the same operations with huge pages off (``THORS_STREAM_HUGE_PAGES=0``, a subprocess) and
against the numpy backend, the tree's own invariants after each step, and tracemalloc
seeing the mapped bytes.
"""

from __future__ import annotations

import gc
import json
import os
import subprocess
import sys
import tracemalloc

import numpy as np
import pytest

from thors_stream import StreamingThors
from thors_stream._backend import available_backends

pytestmark = pytest.mark.skipif("c" not in available_backends(), reason="compiled core not built")

SCRIPT = r"""
import json, sys
import numpy as np
from thors_stream import StreamingThors
from thors_stream._ctree import HUGE_PAGE_ARENAS

def trace(backend):
    rng = np.random.default_rng(7)
    st = StreamingThors(fn_cost=5, fp_cost=1, period=10.0, backend=backend)
    out = []
    def step():
        if backend == "c":
            st._tree.check()
        out.append([st.get(), st.cost, len(st), [float(a.sum()) for a in st.held()]])
    s = rng.random(300_000)                        # 300k distinct scores: ~9 MiB of leaves
    y = rng.random(300_000) < 0.1
    st.update_many(s, y, ts=np.zeros(300_000)); step()   # built straight into mapped arenas
    extra = rng.random(180_000)
    for v in extra[:150_000].tolist():             # grow one key at a time: in place (8 to 12.5 MiB), then moved
        st.update(v, 1, t=1.0)
    step()
    st.update_many(extra[150_000:], np.zeros(30_000, bool), ts=np.full(30_000, 2.0)); step()
    st.update(0.5, 1, 0.25, t=3.0); step()         # first non-unit weight: a count arena (> 4 MiB), mapped
    # everything before t = 5 expires in one batch: a rebuild far smaller, the arenas shrink
    st.update_many(rng.random(5_000), rng.random(5_000) < 0.1, ts=np.full(5_000, 15.0)); step()
    st.update_many(rng.random(300_000), rng.random(300_000) < 0.1, ts=np.full(300_000, 16.0)); step()
    return out

print(json.dumps({"huge": HUGE_PAGE_ARENAS, "c": trace("c"), "python": trace("python")}))
"""


def run(env_extra: dict[str, str]) -> dict:
    env = dict(os.environ, **env_extra)
    out = subprocess.run([sys.executable, "-c", SCRIPT], capture_output=True, text=True, env=env, timeout=600)
    assert out.returncode == 0, out.stderr[-2000:]
    return json.loads(out.stdout)


def test_mapped_arenas_give_the_same_answers_at_every_step():
    on, off = run({}), run({"THORS_STREAM_HUGE_PAGES": "0"})
    assert off["huge"] == 0
    if sys.platform.startswith("linux"):
        assert on["huge"] == 1
    assert on["c"] == off["c"]
    for got, want in zip(on["c"], on["python"]):
        assert got[0] == want[0] and got[2] == want[2]
        assert got[1] == pytest.approx(want[1], rel=1e-12, abs=1e-9)


def test_tracemalloc_sees_a_mapped_arena():
    rng = np.random.default_rng(0)
    tracemalloc.start()
    try:
        base = tracemalloc.get_traced_memory()[0]
        st = StreamingThors(fn_cost=5, fp_cost=1, backend="c")
        st.update_many(rng.random(200_000), rng.random(200_000) < 0.1)
        used = tracemalloc.get_traced_memory()[0] - base
        info = st._tree.stats()
        leaves = info["leaf_slots"] * info["leaf_bytes"]
        assert leaves >= 4 << 20  # large enough to be mapped
        assert used >= leaves
        del st
        gc.collect()
        assert tracemalloc.get_traced_memory()[0] - base < leaves / 4  # untracked when freed
    finally:
        tracemalloc.stop()
