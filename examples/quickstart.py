"""Quick start: the THORS threshold for arrays, and kept up to date on a stream.

Run: python examples/quickstart.py
"""

from __future__ import annotations

import numpy as np
from river import utils

from thors_stream import StreamingThors, thors_threshold

rng = np.random.default_rng(0)

# A scorer whose scores are higher for positives; 10% positives.
n = 20_000
y = rng.random(n) < 0.10
scores = rng.normal(size=n) + 1.2 * y

# 1. Batch: a missed positive costs 20, a false alarm 1.
r = thors_threshold(scores, y, fn_cost=20, fp_cost=1)
print(f"batch threshold {r.threshold:.4f}  cost {r.cost:,.0f}  FPR {r.fpr:.3f}  FNR {r.fnr:.3f}")
naive = thors_threshold(scores, y, fn_cost=1, fp_cost=1)
print(f"(equal costs would cut at {naive.threshold:.4f})")

# 2. Example-dependent costs: each positive's weight is its own cost (an amount).
amount = np.where(y, rng.lognormal(3, 1, n), 1.0)
rw = thors_threshold(scores, y, fn_cost=1, fp_cost=5, sample_weight=amount)
print(f"amount-weighted threshold {rw.threshold:.4f}  money lost {rw.cost:,.0f}")

# 3. The validation sample had negatives subsampled: correct to a 1% population prior.
rp = thors_threshold(scores, y, fn_cost=20, fp_cost=1, class_prior=0.01)
print(f"prior-corrected threshold {rp.threshold:.4f}")

# 4. Streaming: a sliding window of the last 5,000 labelled events; the scorer drifts.
st = StreamingThors(fn_cost=20, fp_cost=1, window=5_000)
for i in range(n):
    drift = 0.5 * (i >= n // 2)
    st.update(float(scores[i] + drift), bool(y[i]))
    if (i + 1) % 5_000 == 0:
        print(f"after {i + 1:>6,} events: threshold {st.get():.4f}  window cost {st.cost:,.0f}")

# The same window through river's own wrapper gives the same threshold.
roll = utils.Rolling(StreamingThors, window_size=5_000, fn_cost=20, fp_cost=1)
for i in range(n):
    roll.update(float(scores[i] + 0.5 * (i >= n // 2)), bool(y[i]))
assert roll.get() == st.get()
print("river.utils.Rolling agrees:", roll.get() == st.get())
