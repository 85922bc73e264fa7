"""Release files: the schema, the validator, writing and reading back."""

import json
import math

import numpy as np
import pytest

from thors_stream import thors_threshold
from thors_stream.release import (
    evaluate_threshold,
    make_release,
    read_release,
    release_entry,
    release_schema,
    release_threshold,
    validate_release,
    write_release,
)


def _doc(threshold_inf=False, segments=True):
    rng = np.random.default_rng(0)
    y = rng.random(500) < 0.2
    s = rng.normal(size=500) + y
    y[np.argmin(s)] = True  # so that a huge FN cost flags everything (-inf)
    r = thors_threshold(s, y, fn_cost=1e5 if threshold_inf else 3, fp_cost=1)
    assert math.isinf(r.threshold) == threshold_inf
    e = release_entry(r, min_per_class=30, confidence=0.9, n_test=500)
    segs = {"de": {**e, "source": "segment"}, "fr": {**e, "source": "global"}} if segments else None
    return make_release(e, segments=segs, input_info={"path": "x.csv", "sha256": "a" * 64, "rows": 500},
                        parameters={"score_col": "s", "label_col": "y", "min_per_class": 30, "confidence": 0.9},
                        baseline=None)


def test_schema_file_is_json_and_describes_the_fields():
    sch = release_schema()
    assert sch["properties"]["version"] == {"const": 1}
    assert set(sch["required"]) == {"format", "version", "created_utc", "library", "input", "parameters", "global",
                                    "segments", "baseline"}


@pytest.mark.parametrize("inf", [False, True])
def test_round_trip(tmp_path, inf):
    doc = _doc(inf)
    p = tmp_path / "rel.json"
    write_release(doc, str(p))
    back = read_release(str(p))
    assert back == json.loads(json.dumps(doc))
    assert release_threshold(back) == (-math.inf if inf else doc["global"]["threshold"])
    assert release_threshold(back, "de") == release_threshold(back)
    assert back["global"]["bounds"]["cost_upper"] >= 0
    assert back["created_utc"].endswith("Z")


@pytest.mark.parametrize("mutate, where", [
    (lambda d: d.pop("version"), "missing 'version'"),
    (lambda d: d.update(version=2), "version"),
    (lambda d: d.update(format="other"), "format"),
    (lambda d: d["input"].update(sha256="xyz"), "sha256"),
    (lambda d: d["input"].update(rows=0), "rows"),
    (lambda d: d["global"].update(threshold="inf"), "threshold"),
    (lambda d: d["global"].update(fpr=1.5), "fpr"),
    (lambda d: d["global"].update(count0=True), "count0"),
    (lambda d: d["segments"]["de"].update(source="magic"), "source"),
    (lambda d: d.update(extra=1), "unexpected field 'extra'"),
    (lambda d: d["global"].pop("bounds"), "bounds"),
])
def test_validator_rejects(mutate, where):
    doc = json.loads(json.dumps(_doc()))
    validate_release(doc)
    mutate(doc)
    with pytest.raises(ValueError, match="not a valid release file") as e:
        validate_release(doc)
    assert where in str(e.value)


def test_read_release_refuses_bad_files(tmp_path):
    p = tmp_path / "r.json"
    p.write_text('{"format": NaN}')
    with pytest.raises(ValueError, match="not a release file"):
        read_release(str(p))
    p.write_text("[1, 2]")
    with pytest.raises(ValueError, match="expected object"):
        read_release(str(p))
    with pytest.raises(ValueError, match="no such file"):
        read_release(str(tmp_path / "missing.json"))
    with pytest.raises(ValueError, match="not a regular file"):
        read_release(str(tmp_path))


def test_evaluate_threshold_agrees_with_thors():
    rng = np.random.default_rng(1)
    y = rng.random(300) < 0.3
    s = np.round(rng.normal(size=300) + y, 1)
    w = rng.integers(1, 4, 300).astype(float)
    for prior in (None, 0.1):
        r = thors_threshold(s, y, fn_cost=5, fp_cost=1, sample_weight=w, class_prior=prior)
        e = evaluate_threshold(r.threshold, s, y, fn_cost=5, fp_cost=1, sample_weight=w, class_prior=prior)
        assert e.cost == pytest.approx(r.cost, rel=1e-12)
        assert (e.count_k0, e.count_k1, e.k0, e.k1) == (r.count_k0, r.count_k1, r.k0, r.k1)
        other = evaluate_threshold(r.threshold + 0.3, s, y, fn_cost=5, fp_cost=1, sample_weight=w,
                                   class_prior=prior)
        assert other.cost >= r.cost
