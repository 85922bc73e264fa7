"""Regression tests for what an adversarial review of the river wrapper, the selector, the
command line and the readers found on 2026-11-25; each failed before its fix."""

import os
import pickle

import numpy as np
import pytest
from river import linear_model, naive_bayes

from thors_stream import ThorsClassifier
from thors_stream.checkpoint import read_checkpoint_full, write_checkpoint
from thors_stream.cli import main
from thors_stream.io import InputError, read_events
from thors_stream.segments import SegmentedStreamingThors
from thors_stream.selection import WindowSelector

COLS = ["--score-col", "score", "--label-col", "label", "--fn-cost", "5", "--fp-cost", "1", "--window", "5"]


def run(argv, capsys):
    code = main(argv)
    out, err = capsys.readouterr()
    return code, out, err


# ---------------------------------------------------------------- river wrapper
@pytest.mark.parametrize("pos_label", [True, 1])
def test_neg_label_is_honoured_whatever_pos_label(pos_label):
    """pos_label=True with neg_label="no": predict_one answered False and learn_one refused
    "no" (pos_label=1 honoured it)."""
    m = ThorsClassifier(naive_bayes.GaussianNB(), fn_cost=1, fp_cost=1000, pos_label=pos_label, neg_label="no",
                        warm_up=0)
    assert m.predict_one({"a": 0.0}) == "no"
    m.learn_one({"a": 1.0}, pos_label)
    m.learn_one({"a": -1.0}, "no")
    assert len(m.thors) == 2
    x = {"a": -1.0}
    assert m.predict_one(x) in m.predict_proba_one(x)
    # without neg_label the labels stay 0/1/False/True and the decisions booleans
    plain = ThorsClassifier(naive_bayes.GaussianNB(), fn_cost=1, fp_cost=1000, pos_label=pos_label, warm_up=0)
    assert plain.predict_one({"a": 0.0}) is False


def test_segmented_models_pickle():
    """SegmentedStreamingThors kept a lambda: neither it nor ThorsClassifier(segment=...) pickled."""
    st = SegmentedStreamingThors(fn_cost=5, fp_cost=1, window=50, min_per_class=1)
    for i in range(40):
        st.update("a" if i % 2 else "b", i / 40, i % 3 == 0)
    back = pickle.loads(pickle.dumps(st))
    assert back.get("a") == st.get("a") and back.get("b") == st.get("b")
    back.update("c", 0.5, 1)  # it makes new segments' summaries with the same settings
    assert back.global_summary.window == st.global_summary.window == 50
    m = ThorsClassifier(linear_model.LogisticRegression(), fn_cost=5, fp_cost=1, segment="shop", warm_up=0)
    m.learn_one({"shop": 1.0, "x": 1.0}, True)
    m.learn_one({"shop": 1.0, "x": -1.0}, False)
    x = {"shop": 1.0, "x": 0.3}
    assert pickle.loads(pickle.dumps(m)).predict_proba_one(x) == m.predict_proba_one(x)


@pytest.mark.parametrize("bad", [np.nan, np.inf])
def test_checkpoint_with_a_non_finite_pending_score_is_refused(tmp_path, bad):
    """A pending score of nan loaded silently; learn_one(key=...) then blamed the model's
    probability, and the key stayed pending for good."""
    def make():
        return ThorsClassifier(linear_model.LogisticRegression(), fn_cost=5, fp_cost=1, warm_up=0)

    m = make()
    m.learn_one({"x": 1.0}, True)
    m.learn_one({"x": -1.0}, False)
    m.predict_one({"x": 0.5}, key="tx-1")
    good, path = tmp_path / "good.ckpt", tmp_path / "bad.ckpt"
    m.save_thresholding(good)
    ck = read_checkpoint_full(good, "ThorsClassifier.thresholding")
    write_checkpoint(path, "ThorsClassifier.thresholding", ck.params, ck.state,
                     {**ck.arrays, "pending_scores": np.array([bad])})  # a valid checksum
    fresh = make()
    with pytest.raises(ValueError, match=rf"array 'pending_scores' holds {bad!r} at 0 .*'tx-1'"):
        fresh.load_thresholding(path)
    assert fresh.n_pending == 0  # nothing taken


@pytest.mark.parametrize("seed,exc", [(None, TypeError), ("1", TypeError), (0.5, TypeError), (True, TypeError)])
def test_selector_seed_must_be_an_integer(seed, exc):
    with pytest.raises(exc, match="seed must be an integer"):
        WindowSelector(fn_cost=5, fp_cost=1, default_threshold=0.2, seed=seed)


def test_selector_takes_numpy_integer_seeds_and_names_its_default():
    """np.int64(5) raised OverflowError (numpy arithmetic); an infinite default threshold was
    reported as a "score"."""
    a = WindowSelector(fn_cost=5, fp_cost=1, default_threshold=0.2, seed=np.int64(5))
    b = WindowSelector(fn_cost=5, fp_cost=1, default_threshold=0.2, seed=5)
    assert int(a._rng[0]) == int(b._rng[0])
    with pytest.raises(ValueError, match="default_threshold must be finite"):
        WindowSelector(fn_cost=5, fp_cost=1, default_threshold=float("inf"))


# ---------------------------------------------------------------- command line outputs
@pytest.fixture
def files(tmp_path):
    good = tmp_path / "good.csv"
    good.write_text("score,label,w\n" + "".join(f"0.{i % 10},{i % 2},1\n" for i in range(50)))
    tiny = tmp_path / "tiny.csv"
    tiny.write_text("score,label,w\n0.5,1,1e-320\n0.2,0,1e-320\n")
    out = tmp_path / "traj.csv"
    out.write_text("yesterday's trajectory\n")
    return good, tiny, out


@pytest.mark.parametrize("case", ["jsonl dir", "weight", "plot dir"])
def test_replay_that_fails_leaves_every_output_as_it_was(files, tmp_path, capsys, case):
    """A bad --jsonl path truncated --out to nothing; a weight refused mid-stream left only
    the header; a bad --plot path came after --out was rewritten."""
    good, tiny, out = files
    extra = {"jsonl dir": [str(good), "--jsonl", str(tmp_path / "no_dir" / "m.jsonl")],
             "weight": [str(tiny), "--weight-col", "w", "--jsonl", str(tmp_path / "m.jsonl")],
             "plot dir": [str(good), "--plot", str(tmp_path / "no_dir" / "p.png")]}[case]
    if case == "plot dir":
        pytest.importorskip("matplotlib")
    code, _, err = run(["replay", extra[0], *COLS, "--out", str(out), *extra[1:]], capsys)
    assert code == 2 and "error" in err
    assert out.read_text() == "yesterday's trajectory\n"
    assert sorted(os.listdir(tmp_path)) == ["good.csv", "tiny.csv", "traj.csv"]  # no temporary file left


def test_replay_writes_every_output_when_it_succeeds(files, tmp_path, capsys):
    good, _, out = files
    code, _, _ = run(["replay", str(good), *COLS, "--out", str(out), "--jsonl", str(tmp_path / "m.jsonl")], capsys)
    assert code == 0
    assert out.read_text().startswith("event,threshold,cost")
    assert (tmp_path / "m.jsonl").read_text().count("\n") > 0
    assert oct(os.stat(out).st_mode & 0o777) == oct(0o666 & ~_umask())  # not mkstemp's 0600


def _umask() -> int:
    mask = os.umask(0)
    os.umask(mask)
    return mask


@pytest.mark.parametrize("a,b", [("--jsonl", "./x.csv"), ("--plot", "./x.csv")])
def test_replay_refuses_two_outputs_that_are_one_file(files, tmp_path, capsys, monkeypatch, a, b):
    """--out x.csv --jsonl ./x.csv exited 0 and the JSONL log replaced the trajectory."""
    good, _, _ = files
    monkeypatch.chdir(tmp_path)
    code, _, err = run(["replay", str(good), *COLS, "--out", "x.csv", a, b], capsys)
    assert code == 2 and f"--out x.csv and {a} ./x.csv are the same file" in err
    assert not (tmp_path / "x.csv").exists()


def test_fit_that_cannot_write_its_release_writes_no_plot(files, tmp_path, capsys):
    """The plot was drawn before the release failed (and stayed), and the error named the
    release's temporary file."""
    pytest.importorskip("matplotlib")
    good, _, _ = files
    release = tmp_path / "missing_dir" / "rel.json"
    code, _, err = run(["fit", str(good), "--score-col", "score", "--label-col", "label", "--fn-cost", "5",
                        "--fp-cost", "1", "--min-per-class", "1", "--plot", str(tmp_path / "curve.png"),
                        "--out", str(release)], capsys)
    assert code == 2 and f"cannot write {release}" in err and ".thors-release-" not in err
    assert not (tmp_path / "curve.png").exists()
    assert sorted(os.listdir(tmp_path)) == ["good.csv", "tiny.csv", "traj.csv"]


# ---------------------------------------------------------------- readers
@pytest.mark.parametrize("engine", ["python", "pyarrow"])
def test_csv_column_named_twice_is_refused_like_parquet(tmp_path, engine):
    """score,label,score was read from the first 'score' (Parquet refused it)."""
    if engine == "pyarrow":
        pytest.importorskip("pyarrow")
    p = tmp_path / "twice.csv"
    p.write_text("score,label,score\n0.1,0,0.9\n0.8,1,0.2\n")
    with pytest.raises(InputError, match="the column 'score' appears 2 times; name it once"):
        read_events(str(p), score_col="score", label_col="label", engine=engine)
    # a repeated column that is not read is no problem
    q = tmp_path / "other.csv"
    q.write_text("score,label,note,note\n0.1,0,a,b\n0.8,1,c,d\n")
    assert len(read_events(str(q), score_col="score", label_col="label", engine=engine)) == 2
