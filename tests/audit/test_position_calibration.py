"""Calibration of P(first-shown wins) for the position prior [position-bias-swap]."""

from __future__ import annotations

import numpy as np
import pandas as pd
import pytest
from scipy import special

from fairjudge._util._warnings import FairjudgeInputError
from fairjudge.audit import audit_verdicts, calibrate_position, position_prior
from fairjudge.data import load_verdicts
from fairjudge.report import render_audits


def judged(content, bias, *, tie=0.0, noise=0.0, seed=0, orders=("ab", "ba")):
    """Pairs (x_i, y_i) with content logit s_i of x_i over y_i; the judge's P(first wins)
    is sigmoid(+-s_i + bias + noise), p_tie a fixed share."""
    rng = np.random.default_rng(seed)
    rows = []
    for i, s in enumerate(content):
        for order in orders:
            own = order == "ab"
            logit = (s if own else -s) + bias + noise * rng.standard_normal()
            p_first = special.expit(logit)
            rows.append({"item_a": f"x{i}" if own else f"y{i}",
                         "item_b": f"y{i}" if own else f"x{i}",
                         "winner": "a" if p_first >= 0.5 else "b", "pair_id": f"p{i}",
                         "order": order, "p_a": (1 - tie) * p_first,
                         "p_b": (1 - tie) * (1 - p_first), "p_tie": tie})
    return load_verdicts(pd.DataFrame(rows))


def test_closed_form_calibrated_probabilities_equal_the_unbiased_ones():
    s = np.linspace(-3, 3, 13)
    verdicts = judged(s, bias=0.8, tie=0.2)
    assert position_prior(verdicts, n_boot=50).estimate == pytest.approx(0.8, abs=1e-9)
    cal = calibrate_position(verdicts, n_boot=50)["judge"]
    own = (verdicts["order"] == "ab").to_numpy()
    table = cal.probabilities
    np.testing.assert_allclose(table["p_first_calibrated"][own], special.expit(s), atol=1e-9)
    np.testing.assert_allclose(table["p_first_calibrated"][~own], special.expit(-s), atol=1e-9)
    # the tie mass is kept: the decisive 0.8 is split by the calibrated probability
    np.testing.assert_allclose(table["p_a_calibrated"] + table["p_b_calibrated"], 0.8)
    np.testing.assert_allclose(table["p_a_calibrated"][own], 0.8 * special.expit(s))
    assert cal.prior_first == pytest.approx(special.expit(0.8))


def test_a_given_prior_calibrates_single_order_verdicts():
    s = np.array([-1.0, 0.0, 0.5, 2.0])
    single = judged(s, bias=-0.6, orders=("ab",))
    cal = calibrate_position(single, bias=-0.6)["judge"]
    np.testing.assert_allclose(cal.probabilities["p_first_calibrated"], special.expit(s))
    assert cal.bias.method == "given"
    with pytest.raises(FairjudgeInputError, match="no pair with p_a/p_b in both orders"):
        calibrate_position(single)


def test_on_a_simulated_biased_judge_calibration_recovers_gold_single_order_decisions():
    """b = 1 logit toward the first slot, content s ~ N(0, 1), logit noise sd 0.5: the prior
    is recovered from the swapped pairs (SE ~0.008, tolerance 0.1), and single-order argmax
    decisions agree with gold sign(s) far more often after calibration (raw expected
    1 - P(-1 < s + noise < 0), 0.68 on this draw; calibrated 0.85)."""
    rng = np.random.default_rng(11)
    s = rng.standard_normal(2000)
    verdicts = judged(s, bias=1.0, noise=0.5, seed=12)
    cal = calibrate_position(verdicts, n_boot=200)["judge"]
    assert abs(cal.bias.estimate - 1.0) < 0.1
    own = (verdicts["order"] == "ab").to_numpy()
    gold_first = s > 0
    raw = (cal.probabilities["p_first"][own] > 0.5).to_numpy() == gold_first
    fixed = (cal.probabilities["p_first_calibrated"][own] > 0.5).to_numpy() == gold_first
    assert fixed.mean() - raw.mean() > 0.1


def test_bad_probabilities_are_named():
    v = load_verdicts(pd.DataFrame({"item_a": ["x"], "item_b": ["y"], "winner": ["a"]}))
    with pytest.raises(FairjudgeInputError, match="has no p_a, p_b column"):
        calibrate_position(v)
    v = load_verdicts(pd.DataFrame({"item_a": ["x", "y"], "item_b": ["y", "x"],
                                    "winner": ["a", "a"], "p_a": [1.5, 0.5],
                                    "p_b": [0.1, 0.5]}))
    with pytest.raises(FairjudgeInputError, match=r"row 0: field `p_a` must be a probability"):
        calibrate_position(v)
    with pytest.raises(FairjudgeInputError, match="`bias` must be a finite number"):
        calibrate_position(v, bias=float("nan"))


def test_audit_reports_the_prior_when_probabilities_are_there():
    verdicts = judged(np.linspace(-2, 2, 9), bias=0.5)
    audit = audit_verdicts(verdicts, n_boot=50)["judge"]
    assert audit.position_prior.estimate == pytest.approx(0.5, abs=1e-9)
    assert "position prior (logit) 0.500" in render_audits({"judge": audit})
    plain = audit_verdicts(verdicts.drop(columns=["p_a", "p_b"]), n_boot=50)["judge"]
    assert plain.position_prior is None


def test_saturated_pairs_do_not_set_the_prior_and_bad_values_name_the_line(tmp_path):
    """Pairs certain in both orders carry the clip constant, not the judge's prior: adding
    them must not move the estimate (before, 10 such pairs moved it by about 1.4 logits);
    a probability outside [0, 1] is reported with its file and line."""
    from scipy.special import expit

    from fairjudge.audit import position_prior
    from fairjudge.data import load_verdicts

    rows = []
    for i, s in enumerate(np.linspace(-1.5, 1.5, 20)):  # b = 0.4 exactly, no noise
        p_ab, p_ba = expit(s + 0.4), expit(-s + 0.4)
        rows += [{"item_a": f"x{i}", "item_b": f"y{i}", "winner": "a", "p_a": p_ab,
                  "p_b": 1 - p_ab},
                 {"item_a": f"y{i}", "item_b": f"x{i}", "winner": "a", "p_a": p_ba,
                  "p_b": 1 - p_ba}]
    clean = pd.DataFrame(rows)
    assert position_prior(clean, n_boot=50).estimate == pytest.approx(0.4)
    saturated = [{"item_a": f"u{i}", "item_b": f"w{i}", "winner": "a", "p_a": 1.0, "p_b": 0.0}
                 for i in range(10)]
    saturated += [{"item_a": f"w{i}", "item_b": f"u{i}", "winner": "a", "p_a": 1.0,
                   "p_b": 0.0} for i in range(10)]
    both = pd.concat([clean, pd.DataFrame(saturated)], ignore_index=True)
    estimate = position_prior(both, n_boot=50)
    assert estimate.estimate == pytest.approx(0.4) and estimate.n == 20
    path = tmp_path / "v.jsonl"
    bad = clean.assign(p_a=[1.5] + list(clean["p_a"].iloc[1:]))
    bad.to_json(path, orient="records", lines=True)
    with pytest.raises(FairjudgeInputError, match=r"v\.jsonl line 1: field `p_a` must be a "
                                                  r"probability in \[0, 1\]; got 1\.5"):
        position_prior(load_verdicts(path))
