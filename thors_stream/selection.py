"""Choosing the window online: exponentially weighted experts over THORS thresholds.

Which window suits a stream depends on how fast it drifts and how rare its positives
are, and the right answer is only known afterwards. :class:`WindowSelector` keeps several
candidate thresholds — THORS over windows of different lengths, and a fixed default
threshold (Elkan's, for calibrated probabilities) — and scores every candidate on every
labelled event as it arrives: candidate ``k`` with threshold ``t_k`` (its value *before*
the event is learned) would have cost ``fn_cost * w`` on a positive with ``score <=
t_k``, ``fp_cost * w`` on a negative with ``score > t_k``, else 0.

The decision uses one candidate at a time, chosen by **AdaHedge** (de Rooij, van Erven,
Grünwald & Koolen, *Follow the Leader If You Can, Hedge If You Must*, JMLR 2014):
exponential weights ``prior_k * exp(-eta_t * L_k)`` over the candidates' cumulative costs
``L_k``, with the learning rate set from the data, ``eta_t = ln K / Delta_{t-1}``, where
``Delta`` is the cumulative *mixability gap* (Hedge's expected cost minus the mix loss,
both computed on every event). It follows the leader while the leader is clear and
hedges when it is not; it needs no horizon and no cost range. The candidate in use is
drawn from the weights, lazily (a maximal coupling of consecutive distributions): after an
event it stays with probability ``min(1, p_new / p_old)`` and otherwise moves to a
candidate that gained weight, so it switches only as often as the weights move (with
probability their total-variation change), and at every event it is distributed exactly
as Hedge's weights. The draws are seeded: runs are reproducible.

**Guarantee.** For every candidate ``k`` and every sequence of labelled events (the
candidates' costs do not depend on which one is used), the expected total cost of the
choices (over the draws) exceeds candidate ``k``'s by at most
``Delta_T * (1 + ln(1 / prior_k) / ln K)`` — the decreasing-learning-rate Hedge bound
``Delta_T + ln(1 / prior_k) / eta_T`` with AdaHedge's ``eta_T``. ``Delta_T`` is computed as
the events arrive (:meth:`WindowSelector.regret_bound`); it is at most of order
``M * sqrt(T ln K)`` for costs up to ``M`` per event (the worst case), and stays bounded
when one candidate is steadily the best. With the default prior (half the mass on the
default threshold) the comparison with the default threshold is the tightest.
"""

from __future__ import annotations

import math
from collections.abc import Callable, Sequence
from functools import partial
from typing import Any

import numpy as np

from ._checkpoint_check import _bad
from ._core import PyCore
from ._validation import check_label, check_score, check_weight, check_weighted_costs, real_number
from .stream import StreamingThors

try:
    from ._ctree import selector_step as _compiled_step

    selector_step: Callable[..., float] | None = _compiled_step
except ImportError:  # no compiler at install time: the Python step is used
    selector_step = None

_M64 = 2**64 - 1

__all__ = ["DEFAULT_WINDOWS", "WindowSelector"]

DEFAULT_WINDOWS = (500, 2_000, 8_000, 32_000)
MAX_COMPILED_WINDOWS = 63  # the compiled step's limit; more windows take the Python step


class WindowSelector:
    """THORS over several windows and a default threshold, chosen online by Hedge.

    Follows river's statistics protocol (``update``/``get``). ``get()`` is the chosen
    candidate's threshold (the default threshold while a THORS candidate holds nothing).

    Parameters
    ----------
    fn_cost, fp_cost
        Costs of a false negative / false positive (> 0).
    default_threshold
        The fixed candidate (e.g. Elkan's ``fp_cost / (fp_cost + fn_cost)``).
    windows
        Window lengths of the THORS candidates.
    prior_default
        Prior weight of the default candidate (the rest is shared by the windows).
    seed
        Seed of the draws that pick the candidate from the weights (the choices are
        reproducible; the guarantee is in expectation over them).
    choose
        ``"draw"`` (the default): the candidate is drawn from the weights as above, and
        the guarantee holds for the decisions made. ``"leader"``: the candidate of largest
        weight (deterministic; the guarantee then holds for :attr:`expected_cost`, the
        cost of the weights, not for the decisions).
    class_prior
        Passed to every THORS candidate (see :class:`~thors_stream.StreamingThors`).

    Complexity
    ----------
    ``update``: one ``StreamingThors.update`` and one threshold read per window, O(K log n);
    ``get`` O(1). Memory: the candidates' windows.

    Examples
    --------
    >>> import random
    >>> sel = WindowSelector(fn_cost=5, fp_cost=1, default_threshold=1 / 6, windows=(50, 200), seed=1)
    >>> rng = random.Random(0)
    >>> for _ in range(2000):
    ...     y = rng.random() < 0.2
    ...     sel.update(min(1.0, max(0.0, rng.gauss(0.6 if y else 0.4, 0.15))), y)
    >>> sel.names
    ('window 50', 'window 200', 'default')
    >>> round(sum(sel.probabilities()), 6), sel.chosen in sel.names
    (1.0, True)
    >>> sel.costs[sel.names.index("window 200")] < sel.costs[sel.names.index("default")]
    True
    """

    def __init__(
        self,
        *,
        fn_cost: float,
        fp_cost: float,
        default_threshold: float,
        windows: Sequence[int] = DEFAULT_WINDOWS,
        prior_default: float = 0.5,
        seed: int = 0,
        class_prior: float | None = None,
        choose: str = "draw",
    ) -> None:
        if choose not in ("draw", "leader"):
            raise ValueError(f"choose must be 'draw' or 'leader', got {choose!r}")
        self.choose = choose
        self._leader = choose == "leader"
        wins = list(windows)
        if not wins or any(isinstance(w, bool) or not isinstance(w, int) or w < 1 for w in wins):
            raise ValueError(f"windows must be positive integers, got {windows!r}")
        if len(set(wins)) != len(wins):
            raise ValueError(f"windows must be distinct, got {windows!r}")
        if not 0.0 < prior_default < 1.0:
            raise ValueError(f"prior_default must be strictly between 0 and 1, got {prior_default!r}")
        self._experts = [StreamingThors(fn_cost=fn_cost, fp_cost=fp_cost, window=w, class_prior=class_prior)
                         for w in wins]
        self.fn_cost, self.fp_cost = self._experts[0].fn_cost, self._experts[0].fp_cost
        self.default_threshold = real_number(default_threshold, "default_threshold")
        if isinstance(seed, bool) or not isinstance(seed, (int, np.integer)):
            raise TypeError(f"seed must be an integer, got {seed!r}")
        seed = int(seed)
        self.windows = tuple(wins)
        self.names = tuple(f"window {w}" for w in wins) + ("default",)
        k = len(wins) + 1
        # the state, one buffer the compiled step updates in place: log prior, costs, weights
        # (k each), gap (cumulative mixability gap), expected cost, realised cost, chosen, rng
        self._set_state(np.zeros(3 * k + 5))
        self._log_prior[:] = [math.log((1.0 - prior_default) / (k - 1))] * (k - 1) + [math.log(prior_default)]
        self._rng[0] = (seed * 0x9E3779B97F4A7C15 + 0x632BE59BD9B4E019) % 2**64 or 1
        self._p[:] = self._weights()
        self._scal[3] = self._pick()
        self.n = 0  # labelled events seen
        self._bind()

    def _bind(self) -> None:
        """Set up the compiled step's fixed arguments (``None``: the Python step), and
        forget the cached threshold. Called whenever the candidates or the state change
        other than by a step."""
        cores = tuple(e._tree for e in self._experts)
        # the compiled step needs compiled cores without class reweighting
        compiled = (selector_step is not None and self._experts[0].class_prior is None
                    and len(cores) <= MAX_COMPILED_WINDOWS
                    and all(not isinstance(c, PyCore) for c in cores))
        self._fixed = ((cores, self.default_threshold, self.fn_cost, self.fp_cost, self._leader, self._buf)
                       if compiled else None)
        self._thr: float | None = None  # get()'s answer, as the last compiled step left it

    def _set_state(self, values: np.ndarray) -> None:
        """Take ``values`` (float64) as the state: a bytearray the compiled step writes
        directly, with numpy views on it."""
        self._buf = bytearray(np.ascontiguousarray(values, dtype=np.float64).tobytes())
        self._state = np.frombuffer(self._buf, dtype=np.float64)
        self._views()

    def _views(self) -> None:
        k = len(self.names)
        st = self._state
        self._log_prior, self._costs, self._p = st[:k], st[k : 2 * k], st[2 * k : 3 * k]
        self._scal, self._rng = st[3 * k : 3 * k + 4], st[3 * k + 4 :].view(np.uint64)

    def __getstate__(self) -> dict[str, Any]:
        state = {k: v for k, v in self.__dict__.items()
                 if k not in ("_fixed", "_thr", "_buf", "_log_prior", "_costs", "_p", "_scal", "_rng")}
        state["_state"] = self._state.copy()
        return state

    def __setstate__(self, state: dict[str, Any]) -> None:
        state.pop("_compiled", None)  # (written by earlier versions)
        state.pop("_cores", None)
        values = state.pop("_state")
        self.__dict__.update(state)
        self._set_state(values)
        self._bind()

    # ---- checkpoints (ThorsClassifier.save_thresholding / load_thresholding)
    def _checkpoint_parts(self) -> tuple[dict[str, Any], dict[str, Any], dict[str, np.ndarray]]:
        """``(params, state, arrays)`` of the selector for the checkpoint format: the settings,
        the candidates but the last (whose parts the caller stores as its own summary), each
        candidate's arrays under ``sel{i}_``, and the weights' state. O(held events)."""
        params: dict[str, Any] = {"windows": list(self.windows), "choose": self.choose,
                                  "default_threshold": self.default_threshold, "experts": []}
        state: dict[str, Any] = {"n": self.n, "experts": []}
        arrays: dict[str, np.ndarray] = {}
        for i, e in enumerate(self._experts[:-1]):
            p, st, a = e._checkpoint_parts()
            params["experts"].append(p)
            state["experts"].append(st)
            arrays.update({f"sel{i}_{name}": arr for name, arr in a.items()})
        k = len(self.names)
        arrays["selector_state"] = self._state[: 3 * k + 4].copy()
        arrays["selector_rng"] = self._rng.copy()
        return params, state, arrays

    def _restore(self, params: Any, state: Any, arrays: dict[str, np.ndarray], last: StreamingThors,
                 where: str) -> None:
        """Take the state :meth:`_checkpoint_parts` wrote (``last``: the restored longest
        window), after checking it against this selector's settings and its own invariants:
        candidates of the same windows and costs, each holding ``min(n, window)`` events, the
        prior this selector starts from, finite non-negative costs, the weights AdaHedge
        computes from them, a chosen candidate in range and a non-zero generator state.
        ``ValueError`` naming ``where``; nothing changes unless everything holds."""

        bad = partial(_bad, where)

        if not isinstance(params, dict) or set(params) != {"windows", "choose", "default_threshold", "experts"}:
            raise bad("params.selector", "must be an object with the fields choose, default_threshold, experts, "
                      "windows")
        if not isinstance(state, dict) or set(state) != {"n", "experts"}:
            raise bad("state.selector", "must be an object with the fields experts, n")
        mine = (list(self.windows), self.choose, self.default_threshold)
        theirs = (params["windows"], params["choose"], params["default_threshold"])
        if theirs != mine or any(type(w) is not int for w in params["windows"]):
            raise ValueError(f"{where} was written with (windows, auto_choose, default threshold) = {theirs!r}, "
                             f"this wrapper has {mine!r}"[:600])
        n = state["n"]
        if type(n) is not int or not 0 <= n < 2**63:
            raise bad("state.selector.n", f"must be an integer >= 0, got {n!r}")
        ps, ss = params["experts"], state["experts"]
        if not isinstance(ps, list) or not isinstance(ss, list) or len(ps) != len(self._experts) - 1 \
                or len(ss) != len(ps):
            raise bad("the selector's candidates", f"must be {len(self._experts) - 1} (params and state)")
        experts = []
        for i, (p, st) in enumerate(zip(ps, ss)):
            name = f"sel{i}_"
            own = {key[len(name):]: a for key, a in arrays.items() if key.startswith(name)}
            experts.append(StreamingThors._from_checkpoint_parts(
                p, st, own, where=f"{where} (candidate {self.names[i]!r})"))
        experts.append(last)
        def settings(e: StreamingThors) -> tuple[Any, ...]:
            return (e.fn_cost, e.fp_cost, e.window, e._period_s, e.class_prior, e.default_threshold, e._load,
                    e.max_fpr, e.max_fnr, e.confidence)

        for nm, e, ours in zip(self.names, experts, self._experts):
            if settings(e) != settings(ours):
                raise bad(f"candidate {nm!r}", f"has the settings {settings(e)!r}, this wrapper's candidate "
                          f"{settings(ours)!r} (fn_cost, fp_cost, window, period, class_prior, default_threshold, "
                          f"load, max_fpr, max_fnr, confidence)")
        known = {f"sel{i}_" for i in range(len(ps))}
        stray = sorted(key for key in arrays if key.startswith("sel") and not key.startswith("selector_")
                       and key[: key.index("_") + 1] not in known)
        if stray:
            raise bad("the file", f"holds arrays of no candidate: {stray[:5]!r}")
        for e, w, nm in zip(experts, self.windows, self.names):
            if len(e) != min(n, w):
                raise bad(f"candidate {nm!r}", f"holds {len(e)} events, expected min(n={n}, window={w})")
        # the windows are nested: each candidate holds the newest events of the longest one
        longest = last._queue.arrays()
        for e, nm in zip(experts[:-1], self.names):
            own = e._queue.arrays()
            tail = [a[len(a) - len(own[0]):] for a in longest]
            if not all(np.array_equal(a, b) for a, b in zip(own, tail)):
                raise bad(f"candidate {nm!r}", "does not hold the newest events of the longest window")
        k = len(self.names)
        sv, rng = arrays.get("selector_state"), arrays.get("selector_rng")
        if sv is None or sv.dtype != np.float64 or sv.shape != (3 * k + 4,):
            raise bad("array 'selector_state'", f"must be {3 * k + 4} float64 values")
        if rng is None or rng.dtype != np.uint64 or rng.shape != (1,) or int(rng[0]) == 0:
            raise bad("array 'selector_rng'", "must be one non-zero uint64")
        if not np.isfinite(sv).all():
            raise bad("array 'selector_state'", "holds a non-finite value")
        log_prior, costs, p_, scal = sv[:k], sv[k:2 * k], sv[2 * k:3 * k], sv[3 * k:]
        if not np.array_equal(log_prior, self._log_prior):
            raise bad("the selector's prior", f"is {log_prior.tolist()!r}, this wrapper starts from "
                      f"{self._log_prior.tolist()!r}")
        if (costs < 0).any() or (scal[:3] < 0).any():
            raise bad("the selector's costs", "must be >= 0 (candidates' costs, gap, expected and realised cost)")
        chosen = scal[3]
        if chosen != int(chosen) or not 0 <= chosen < k:
            raise bad("the selector's choice", f"must be a candidate index in [0, {k}), got {chosen!r}")
        trial = WindowSelector.__new__(WindowSelector)
        trial.names, trial._state = self.names, sv.copy()
        trial._views()
        want = trial._weights()
        if (p_ < 0).any() or not np.allclose(p_, want, rtol=1e-9, atol=1e-12):
            raise bad("the selector's weights", f"{p_.tolist()!r} are not AdaHedge's weights for its costs "
                      f"({want.tolist()!r})")
        # everything holds: take it
        self._experts = experts
        self._set_state(np.concatenate([sv, rng.view(np.float64)]))
        self.n = n
        self._bind()

    # ---- state
    @property
    def costs(self) -> list[float]:
        """Each candidate's realised cost so far (in :attr:`names` order)."""
        return [float(c) for c in self._costs]

    @property
    def gap(self) -> float:
        """The cumulative mixability gap ``Delta``."""
        return float(self._scal[0])

    @property
    def expected_cost(self) -> float:
        """Hedge's expected cost (over the draws) of the decisions so far."""
        return float(self._scal[1])

    @property
    def cost(self) -> float:
        """The realised cost of the decisions so far."""
        return float(self._scal[2])

    @property
    def _chosen(self) -> int:
        return int(self._scal[3])

    # ---- weights and draws (the compiled step does the same, with the same generator)
    def _unit(self) -> float:
        x = int(self._rng[0])
        x ^= x >> 12
        x ^= (x << 25) & _M64
        x ^= x >> 27
        self._rng[0] = x
        return (((x * 0x2545F4914F6CDD1D) & _M64) >> 11) / 2.0**53

    def _weights(self) -> np.ndarray:
        """Hedge's distribution for the next event (follow the leaders while Delta = 0)."""
        costs, lp, gap = self._costs, self._log_prior, float(self._scal[0])
        if gap <= 0.0:
            logw = np.where(costs == costs.min(), lp, -np.inf)
        else:
            logw = lp - math.log(len(self.names)) / gap * (costs - costs.min())  # as the compiled step
        w = np.exp(logw - logw.max())
        p: np.ndarray = w / w.sum()
        return p

    def _draw(self, ps: Sequence[float]) -> int:
        r = self._unit() * float(sum(ps))
        last = len(ps) - 1
        for i, q in enumerate(ps):
            if q > 0.0:
                last = i
            r -= q
            if r < 0.0 and q > 0.0:
                return i
        return last

    def _pick(self) -> int:
        if self.choose == "leader":
            return int(np.argmax(self._p))
        return self._draw(self._p.tolist())

    def _thresholds(self) -> list[float]:
        d = self.default_threshold
        out = []
        for e in self._experts:
            t = e.get()
            out.append(d if t is None else t)
        out.append(d)
        return out

    def update(self, score: float, y: Any, w: float = 1.0) -> None:
        """Score every candidate on the labelled event, update the weights and the choice,
        then let the THORS candidates learn it. O(K log n); one C call with the compiled
        backend."""
        s = score if type(score) is float and score - score == 0.0 else check_score(score)
        if y is True or y is False:
            pos = y
        elif type(y) is int and (y == 0 or y == 1):
            pos = y == 1
        else:
            pos = check_label(y) == 1
        if w != 1.0 or type(w) is not float:
            w = check_weight(w)
            check_weighted_costs(w, self.fn_cost, self.fp_cost)
        if self._fixed is not None and selector_step is not None:
            self._thr = None  # (a step that raises part way leaves get() to read the candidates)
            self._thr = selector_step(self._fixed, s, pos, w)
        else:
            self._update_py(s, pos, w)
        self.n += 1

    def _update_py(self, s: float, pos: bool, w: float) -> None:
        """The same step in Python (numpy backend or class_prior)."""
        c = self.fn_cost * w if pos else self.fp_cost * w
        losses = [(c if (s <= t) == pos else 0.0) for t in self._thresholds()]
        p = self._p.tolist()
        if any(losses) and all(x == losses[0] for x in losses):  # every candidate loses alike
            self._costs += losses[0]  # the weights and the gap do not move
            self._scal[1] += losses[0]
            self._scal[2] += losses[0]
        elif any(losses):
            h = sum(q * x for q, x in zip(p, losses))
            gap = float(self._scal[0])
            if gap <= 0.0:  # eta = inf: the mix loss is the smallest loss among the leaders
                m = min(x for q, x in zip(p, losses) if q > 0.0)
            else:
                eta = math.log(len(self.names)) / gap  # shifted as in the compiled step
                lo = min(x for q, x in zip(p, losses) if q > 0.0)
                m = lo - math.log(sum(q * math.exp(-eta * (x - lo)) for q, x in zip(p, losses) if q > 0.0)) / eta
            self._scal[0] += max(0.0, h - m)
            self._costs += losses
            self._scal[1] += h
            chosen = self._chosen
            self._scal[2] += losses[chosen]
            new = self._weights()
            if self.choose == "leader":
                chosen = int(np.argmax(new))
            elif not (p[chosen] > 0.0 and self._unit() * p[chosen] < new[chosen]):
                gain = [max(0.0, b - a) for a, b in zip(p, new.tolist())]
                if sum(gain) > 0.0:
                    chosen = self._draw(gain)
            self._p[:] = new
            self._scal[3] = chosen
        for e in self._experts:
            e.update(s, pos, w)

    def get(self) -> float:
        """The chosen candidate's threshold (``-inf`` = all positive). O(1)."""
        t = self._thr
        if t is not None:  # the compiled step's answer (nothing has changed since)
            return t
        i = self._chosen
        if i == len(self._experts):
            return self.default_threshold
        t = self._experts[i].get()
        return self.default_threshold if t is None else t

    @property
    def chosen(self) -> str:
        """Name of the candidate in use."""
        return self.names[self._chosen]

    def probabilities(self) -> list[float]:
        """Hedge's distribution over the candidates for the next event."""
        return [float(q) for q in self._p]

    def regret_bound(self, candidate: str = "default") -> float:
        """Bound on ``E[cost of the choices] - cost of candidate`` over the events seen, in
        cost units: ``Delta_T * (1 + ln(1 / prior_k) / ln K)`` (see the module docstring)."""
        i = self.names.index(candidate)
        return self.gap * (1.0 + float(-self._log_prior[i]) / math.log(len(self.names)))

    @property
    def experts(self) -> tuple[StreamingThors, ...]:
        """The THORS candidates (read only)."""
        return tuple(self._experts)

    def __len__(self) -> int:
        return self.n

    def __repr__(self) -> str:
        return (f"WindowSelector(windows={self.windows}, n={self.n}, chosen={self.chosen!r}, "
                f"cost={self.cost:g})")
