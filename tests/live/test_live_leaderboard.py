"""The live leaderboard: streamed verdicts give the batch fit, counts stay bounded by the
distinct cells, a growing file is read line by line, and the command follows it."""

import json

import numpy as np
import pandas as pd
import pytest
from scipy import special

from fairjudge import rank
from fairjudge._util._warnings import FairjudgeInputError
from fairjudge.live import LiveLeaderboard, VerdictTail


def stream(seed, n_items=25, n_verdicts=3000):
    """Verdicts of two judges (one with a first-slot lean and a taste for `len`) in the
    order they arrive, and the item table."""
    rng = np.random.default_rng(seed)
    theta = rng.normal(0, 1, n_items)
    length = rng.normal(0, 1, n_items)
    a = rng.integers(0, n_items, n_verdicts)
    b = (a + rng.integers(1, n_items, n_verdicts)) % n_items
    judge = np.where(rng.random(n_verdicts) < 0.5, "lean", "fair")
    eta = theta[a] - theta[b] + np.where(judge == "lean", 0.5 + 0.4 * (length[a] - length[b]),
                                         0.0)
    u = rng.random(n_verdicts)
    winner = np.where(u < special.expit(eta) - 0.05, "a",
                      np.where(u < special.expit(eta) + 0.05, "tie", "b"))
    ids = np.array([f"i{i}" for i in range(n_items)])
    verdicts = pd.DataFrame({"item_a": ids[a], "item_b": ids[b], "winner": winner,
                             "judge": judge})
    return verdicts, pd.DataFrame({"id": ids, "len": length})


@pytest.mark.parametrize("with_items", [True, False])
def test_streamed_verdicts_give_the_batch_fit(with_items):
    verdicts, items = stream(0)
    board = (LiveLeaderboard(items, covariates=["len"]) if with_items
             else LiveLeaderboard(model="naive"))
    for chunk in np.array_split(np.arange(len(verdicts)), 9):
        board.update(verdicts.iloc[chunk])
        snapshot = board.snapshot()
    batch = (rank(verdicts, items, covariates=["len"]) if with_items
             else rank(verdicts, model="naive"))
    np.testing.assert_allclose(snapshot.scores.sort_index(), batch.scores.sort_index(),
                               atol=1e-6)
    order = [list(batch.fit.item_ids).index(i) for i in snapshot.fit.item_ids]
    np.testing.assert_allclose(snapshot.fit.covariance,
                               batch.fit.covariance[np.ix_(order, order)], atol=1e-6)
    if with_items:
        np.testing.assert_allclose(snapshot.bias["estimate"].to_numpy(float),
                                   batch.bias["estimate"].to_numpy(float), atol=1e-6)


def test_a_snapshot_fitted_by_the_sparse_solver_says_so(monkeypatch):
    """The live board reports which solver fitted, as ``rank`` does, so its text and HTML
    reports describe a sparse fit's estimated variances as estimated."""
    from fairjudge.models import _bt
    from fairjudge.report._text import solver_description

    verdicts, items = stream(3, n_items=40)
    monkeypatch.setattr(_bt, "SPARSE_MIN_ITEMS", 20)
    board = LiveLeaderboard(items, covariates=["len"])
    board.update(verdicts)
    snapshot = board.snapshot()
    assert snapshot.fit.solver == "sparse"
    assert snapshot.diagnostics["solver"] == "sparse"
    assert 0 < snapshot.diagnostics["marginal_variance_max_rel_error"] <= 0.004
    assert solver_description(snapshot.diagnostics).startswith("sparse (marginal variances")


def test_items_and_judges_may_arrive_mid_stream_and_counts_stay_bounded():
    verdicts, _ = stream(1)
    early = verdicts[verdicts["judge"] == "fair"].head(200)
    early = early[~early["item_a"].isin(["i3", "i4"]) & ~early["item_b"].isin(["i3", "i4"])]
    board = LiveLeaderboard()
    board.update(early)
    first = board.snapshot()
    assert "i3" not in first.scores.index and first.fit.judges == ("fair",)
    board.update(verdicts)
    later = board.snapshot()
    assert {"i3", "i4"} <= set(later.scores.index) and set(later.fit.judges) == {"fair", "lean"}
    cells = board.n_cells
    board.update(verdicts)  # the same verdicts again: more weight, no new cell
    assert board.n_cells == cells and board.n_verdicts == len(early) + 2 * len(verdicts)


def test_bad_input_is_named():
    verdicts, items = stream(2, n_verdicts=50)
    board = LiveLeaderboard(items)
    with pytest.raises(FairjudgeInputError, match="'x9', which is not in the item table"):
        board.update(verdicts.assign(item_a="x9"))
    with pytest.raises(FairjudgeInputError, match="no verdict with an outcome yet"):
        board.snapshot()
    with pytest.raises(FairjudgeInputError, match="bias-aware or the naive"):
        LiveLeaderboard(model="hierarchical")


def test_a_growing_file_is_read_by_complete_lines(tmp_path):
    path = tmp_path / "v.jsonl"
    tail = VerdictTail(path)
    assert tail.read_new() is None  # not written yet
    row = {"item_a": "x", "item_b": "y", "winner": "a"}
    path.write_text(json.dumps(row) + "\n" + json.dumps(row)[:10])  # the second half-written
    assert len(tail.read_new()) == 1
    with open(path, "a") as handle:
        handle.write(json.dumps(row)[10:] + "\n")
    assert len(tail.read_new()) == 1 and tail.read_new() is None
    with open(path, "a") as handle:
        handle.write("{not json\n")
    with pytest.raises(FairjudgeInputError, match="v.jsonl line 3: not JSON"):
        tail.read_new()
    csv = tmp_path / "v.csv"
    csv.write_text("item_a,item_b,winner\nx,y,a\n")
    csv_tail = VerdictTail(csv)
    assert csv_tail.read_new()["winner"].tolist() == ["a"]
    with open(csv, "a") as handle:
        handle.write("y,x,b\n")
    assert csv_tail.read_new()[["item_a", "winner"]].values.tolist() == [["y", "b"]]
    with pytest.raises(FairjudgeInputError, match="grows by lines"):
        VerdictTail(tmp_path / "v.parquet")


def test_the_leaderboard_command(tmp_path, capsys):
    from fairjudge._cli import main

    verdicts, items = stream(3, n_verdicts=600)
    path = tmp_path / "v.jsonl"
    path.write_text("".join(json.dumps(r) + "\n" for r in verdicts.to_dict("records")))
    items.to_csv(tmp_path / "i.csv", index=False)
    assert main(["leaderboard", str(path), "--items", str(tmp_path / "i.csv"),
                 "--covariates", "len", "--follow", "--poll", "0.05", "--idle-exit", "0",
                 "--top", "3"]) == 0
    out = capsys.readouterr().out
    assert "--- 600 verdicts (600 new)" in out and "lean/len" in out
    assert main(["leaderboard", str(path), "--json"]) == 0
    assert len(json.loads(capsys.readouterr().out)["scores"]) == 25
