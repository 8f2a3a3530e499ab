"""Newcomers placed on a frozen leaderboard: the published scores stay exactly as they were,
the placement matches a closed form, its interval covers the truth and carries the
published scores' uncertainty, and bad leaderboards get clear messages."""

import json
import warnings

import numpy as np
import pandas as pd
import pytest
from scipy import optimize, special, stats
from test_consensus import MODELS, panel  # tests/consensus is on sys.path (rootdir import)

from fairjudge._util._warnings import FairjudgeInputError
from fairjudge.consensus import (
    ELO_SCALE,
    PublishedLeaderboard,
    consensus,
    place_contestants,
)

EVERYONE = MODELS + ("qwen-7b",)


def split_panel(seed, n_questions):
    """A six-contestant panel split into the games without qwen-7b and those with it."""
    verdicts, items, theta = panel(seed, contestants=EVERYONE, n_questions=n_questions,
                                   self_preference=(0.3, 0.3, 0.0, 0.0, 0.0))
    new = verdicts["item_a"].str.endswith("qwen-7b") | verdicts["item_b"].str.endswith(
        "qwen-7b")
    return verdicts[~new], verdicts[new], items, theta


def test_published_scores_stay_put_and_the_placed_board_can_take_the_next_newcomer(
        tmp_path):
    old, new, items, _ = split_panel(3, 10)
    before = consensus(old, items)
    placed = consensus(new, items, frozen=before)
    assert placed.frozen == tuple(before.scores.index)
    pd.testing.assert_frame_equal(placed.scores.loc[before.scores.index], before.scores)
    # The published covariance block is carried unchanged; the newcomer's row is new.
    published = list(before.scores.index)
    np.testing.assert_allclose(placed.covariance.loc[published, published],
                               before.covariance.loc[published, published], atol=1e-9)
    assert placed.covariance.loc["qwen-7b", "qwen-7b"] > 0
    # Through JSON, with the covariance, the placement is the same.
    path = tmp_path / "board.json"
    path.write_text(json.dumps(before.to_dict()))
    again = consensus(new, items, frozen=str(path))
    np.testing.assert_allclose(again.scores.loc["qwen-7b"], placed.scores.loc["qwen-7b"],
                               rtol=1e-9)
    assert again.per_judge.loc[published].equals(before.per_judge.loc[published])
    # The placed leaderboard places a second newcomer without moving anyone.
    later = panel(3, contestants=("gpt-4", "mistral-7b", "phi-2"), n_questions=10)[0]
    later_items = pd.concat([items, panel(3, contestants=("phi-2",), n_questions=10)[1]])
    third = consensus(later, later_items, frozen=placed)
    pd.testing.assert_frame_equal(third.scores.loc[placed.scores.index], placed.scores)
    assert "phi-2" in third.scores.index


def test_the_placement_is_the_closed_form_of_one_balanced_duel():
    """One judge, a newcomer against one published contestant (score 1100, s.e. 20 Elo),
    n games in each order with w wins in each: by symmetry kappa = 0 and theta solves
    2w - 2n sigma(theta - theta_p) - theta = 0 (its N(0, 1) prior); its variance is
    1 / (2 n W + 1) + S^2 var_p, S = 2 n W / (2 n W + 1), W = sigma (1 - sigma)."""
    n, w = 12, 8
    rows = [{"item_a": a, "item_b": b, "winner": winner, "judge": "j"}
            for a, b, wins in (("new", "old", w), ("old", "new", n - w))
            for winner in ["a"] * wins + ["b"] * (n - wins)]
    table = pd.DataFrame(rows).assign(self_a=0.0, self_b=0.0, own_a=0.0, own_b=0.0)
    se_elo = 20.0
    board = PublishedLeaderboard(pd.DataFrame({"estimate": [1100.0],
                                               "ci_low": [1100 - 1.959963984540054 * se_elo],
                                               "ci_high": [1100 + 1.959963984540054 * se_elo]},
                                              index=["old"]))
    placed = place_contestants(table, board)
    theta_p = 100 / ELO_SCALE
    theta = optimize.brentq(lambda t: 2 * w - 2 * n * special.expit(t - theta_p) - t, -5, 5)
    assert placed.theta[1] == pytest.approx(theta, abs=1e-9)
    assert placed.kappa[0] == pytest.approx(0.0, abs=1e-9)
    info = 2 * n * special.expit(theta - theta_p) * special.expit(theta_p - theta)
    sensitivity = info / (info + 1)
    variance = 1 / (info + 1) + sensitivity ** 2 * (se_elo / ELO_SCALE) ** 2
    assert placed.covariance[1, 1] == pytest.approx(variance, rel=1e-6)
    assert placed.covariance[0, 1] == pytest.approx(sensitivity * (se_elo / ELO_SCALE) ** 2,
                                                    rel=1e-6)
    assert not placed.published_covariance


@pytest.mark.slow
def test_the_newcomers_interval_covers_its_true_place():
    """100 panels: the newcomer's 95% interval, published scores' uncertainty included,
    holds its true score on the published scale (Elo 1000 = the mean of the original five)
    at a rate not significantly below 95%. Measured over 200 panels: 97.5% with 4
    questions, 95.5% with 20. On a mean-centred board the published scores' share of the
    newcomer's variance is small; the closed-form duel above checks that share exactly."""
    hits = 0
    for seed in range(100):
        old, new, items, theta = split_panel(1000 + seed, 4)
        with warnings.catch_warnings():
            warnings.simplefilter("ignore")
            row = consensus(new, items, frozen=consensus(old, items)).scores.loc["qwen-7b"]
        truth = 1000 + ELO_SCALE * (theta["qwen-7b"] - np.mean([theta[m] for m in MODELS]))
        hits += row.ci_low <= truth <= row.ci_high
    assert stats.binomtest(hits, 100, 0.95, alternative="less").pvalue > 0.01, hits


def test_bad_leaderboards_and_unplaceable_newcomers(tmp_path):
    old, new, items, _ = split_panel(4, 4)
    before = consensus(old, items)
    broken = tmp_path / "broken.json"
    broken.write_text("{\"scores\": ")
    with pytest.raises(FairjudgeInputError, match="broken.json: not JSON"):
        consensus(new, items, frozen=str(broken))
    wrong = tmp_path / "wrong.json"
    wrong.write_text(json.dumps({"scores": {"gpt-4": {"estimate": "high"}}}))
    with pytest.raises(FairjudgeInputError, match=r"wrong.json: scores.gpt-4.estimate"):
        consensus(new, items, frozen=str(wrong))
    with pytest.raises(FairjudgeInputError, match="no newcomer"):
        consensus(old, items, frozen=before)
    with pytest.raises(FairjudgeInputError, match="joint method"):
        consensus(new, items, frozen=before, method="pooled")
    # Two newcomers who only ever met each other have no place on the scale.
    pair = panel(4, contestants=("qwen-7b", "phi-2"), n_questions=3)
    with pytest.raises(FairjudgeInputError, match="no verdict connects phi-2, qwen-7b"):
        consensus(pair[0], pd.concat([items, pair[1].filter(like="phi-2", axis=0)]),
                  frozen=before)
    # Marginal intervals only: correlations taken as zero, and said.
    board = before.to_dict()
    del board["covariance"]
    result = consensus(new, items, frozen=board)
    assert any("marginal intervals only" in note for note in result.notes)


def test_the_frozen_command(tmp_path, capsys):
    from fairjudge._cli import main

    old, new, items, _ = split_panel(5, 4)
    old.to_csv(tmp_path / "old.csv", index=False)
    new.to_csv(tmp_path / "new.csv", index=False)
    items.rename_axis("id").reset_index().to_csv(tmp_path / "i.csv", index=False)
    assert main(["consensus", str(tmp_path / "old.csv"), "--items", str(tmp_path / "i.csv"),
                 "--json"]) == 0
    (tmp_path / "board.json").write_text(capsys.readouterr().out)
    assert main(["consensus", str(tmp_path / "new.csv"), "--items", str(tmp_path / "i.csv"),
                 "--frozen", str(tmp_path / "board.json")]) == 0
    out = capsys.readouterr().out
    assert "qwen-7b" in out and "frozen leaderboard: 5 published" in out
    assert main(["consensus", str(tmp_path / "new.csv"), "--items", str(tmp_path / "i.csv"),
                 "--frozen", str(tmp_path / "board.json"), "--method", "elo"]) != 0


@pytest.mark.parametrize("options", [{}, {"anchor": "gpt-4"}, {"reliability": True},
                                     {"method": "pooled"}])
def test_the_published_covariance_matches_the_published_intervals(options):
    """What a newcomer's interval inherits must be the covariance of the scores as shown:
    its diagonal gives each interval's half-width (zero for an anchor), in the scores'
    order whatever order the fit kept."""
    old, _, items, _ = split_panel(6, 4)
    board = consensus(old, items, **options)
    z = stats.norm.ppf(0.975)
    half = ((board.scores["ci_high"] - board.scores["ci_low"]) / 2).fillna(0.0)
    np.testing.assert_allclose(z * np.sqrt(np.diag(board.covariance.loc[
        board.scores.index, board.scores.index])), half, rtol=1e-6, atol=1e-9)


def test_each_judge_places_the_newcomer_from_its_own_verdicts():
    """A judge whose verdicts always crown the newcomer places it above the judges whose
    verdicts always sink it; the spread across judges says so."""
    old, new, items, _ = split_panel(7, 6)
    before = consensus(old, items)
    newcomer_first = new["item_a"].str.endswith("qwen-7b")
    fan = new["judge"] == "llama-2"
    rigged = new.assign(winner=np.where(newcomer_first == fan, "a", "b"))
    placed = consensus(rigged, items, frozen=before)
    row = placed.per_judge.loc["qwen-7b"]
    assert row["llama-2"] > row.drop("llama-2").max() + 200
    assert placed.inter_judge_sd["qwen-7b"] == pytest.approx(row.std(ddof=1))
    # The published contestants keep each judge's published scores.
    published = list(before.scores.index)
    pd.testing.assert_frame_equal(placed.per_judge.loc[published],
                                  before.per_judge.loc[published], check_names=False)


def test_leaderboards_without_a_scale_or_with_broken_fields_are_refused(tmp_path):
    old, new, items, _ = split_panel(8, 4)
    with pytest.raises(FairjudgeInputError, match="'elo' scores cannot be frozen"):
        consensus(new, items, frozen=consensus(old, items, method="elo"))
    board = consensus(old, items).to_dict()
    cases = [({"level": "x"}, "`level` must be a number"),
             ({"level": 1.5}, "level must be between 0 and 1"),
             ({"per_judge": {"gpt-4": 5}}, "`per_judge` must map each judge"),
             ({"scores": {**board["scores"], "gpt-4": {"estimate": True}}},
              r"scores.gpt-4.estimate must be a finite number"),
             ({"scores": {**board["scores"], "gpt-4": {"estimate": 1100.0, "ci_low": None,
                                                       "ci_high": None}}},
              "scores.gpt-4 has no interval")]
    for change, message in cases:
        path = tmp_path / "bad.json"
        path.write_text(json.dumps({**board, **change}))
        with pytest.raises(FairjudgeInputError, match=message):
            consensus(new, items, frozen=str(path))
    lopsided = {**board, "covariance": {c: {d: (5.0 if c < d else 0.0) for d in row}
                                        for c, row in board["covariance"].items()}}
    with pytest.raises(FairjudgeInputError, match="symmetric and positive semi-definite"):
        consensus(new, items, frozen=lopsided)


def test_judges_outside_the_contestants_get_no_self_term(tmp_path, capsys):
    from fairjudge._cli import main

    old, new, items, _ = split_panel(9, 4)
    rename = {m: f"panelist-{i}" for i, m in enumerate(MODELS)}
    outsiders = new.assign(judge=new["judge"].map(rename))
    result = consensus(outsiders, items, frozen=consensus(old, items))
    assert "self_estimate" not in result.self_preference.columns
    assert any("no self-preference term" in note for note in result.notes)
    outsiders.to_csv(tmp_path / "new.csv", index=False)
    items.rename_axis("id").reset_index().to_csv(tmp_path / "i.csv", index=False)
    (tmp_path / "board.json").write_text(json.dumps(consensus(old, items).to_dict()))
    assert main(["consensus", str(tmp_path / "new.csv"), "--items", str(tmp_path / "i.csv"),
                 "--frozen", str(tmp_path / "board.json"), "--html",
                 str(tmp_path / "r.html")]) == 0
    assert "(placed)" in capsys.readouterr().out
