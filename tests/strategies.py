"""Hypothesis strategies: heavy ties, dyadic weights (exact in float), windows."""

from hypothesis import strategies as st

# few distinct scores so that ties are the rule, some negative, some repeated
tied_scores = st.sampled_from([-2.0, -0.5, 0.0, 0.125, 0.25, 0.5, 0.75, 1.0, 3.0])
any_scores = st.one_of(tied_scores, st.floats(-1e6, 1e6, allow_nan=False, allow_infinity=False))
labels = st.sampled_from([0, 1, True, False])
# multiples of 1/8 in (0, 8]: every sum stays exact in float64
dyadic_weights = st.integers(1, 64).map(lambda k: k / 8)
costs = st.integers(1, 50).map(float) | st.sampled_from([0.5, 0.25, 1.5])
event = st.tuples(any_scores, labels, dyadic_weights)
tied_event = st.tuples(tied_scores, labels, dyadic_weights)
events = st.lists(st.one_of(event, tied_event), min_size=1, max_size=60)
