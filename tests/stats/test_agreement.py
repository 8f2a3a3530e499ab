"""Agreement, Cohen's kappa, paired bootstrap differences and Wilson intervals.

Reference values: ``reference/kappa.json`` (scikit-learn) and ``reference/wilson.json``
(statsmodels), made by ``reference/make_references.py``; closed forms.
"""

import json
import math
from pathlib import Path

import numpy as np
import pytest

from fairjudge.data._schema import Outcome
from fairjudge.stats import Estimate, Interval, bootstrap_mean
from fairjudge.stats._agreement import (agreement, cohens_kappa, paired_bootstrap_difference,
                                        proportion_estimate, wilson_interval)

REFERENCE = Path(__file__).parent / "reference"
KAPPA = json.loads((REFERENCE / "kappa.json").read_text())["cases"]
WILSON = json.loads((REFERENCE / "wilson.json").read_text())["cases"]


def _naive_kappa(predicted, gold, labels=("a", "b", "tie")):
    """Kappa from an explicit confusion matrix, missing predictions as an extra category."""
    categories = list(labels) + ["none"]
    index = {c: k for k, c in enumerate(categories)}
    table = np.zeros((len(categories), len(categories)))
    for p, g in zip(predicted, gold):
        table[index["none" if p is None else p], index[g]] += 1
    n = table.sum()
    observed = np.trace(table) / n
    expected = np.sum(table.sum(axis=1) * table.sum(axis=0)) / n ** 2
    return (observed - expected) / (1 - expected)


# ----------------------------------------------------------------------------- agreement

def test_agreement_scores_exact_labels():
    predicted = ["a", "tie", "tie", "b", None, float("nan"), Outcome.A, "invalid"]
    gold = ["a", "tie", "a", "b", "a", "b", "a", "a"]
    # a ok, tie/tie ok, tie/a wrong, b ok, missing wrong, NaN wrong, Outcome.A ok, invalid wrong
    result = agreement(predicted, gold, n_boot=500, rng=1)
    assert isinstance(result, Estimate)
    assert result.estimate == pytest.approx(4 / 8)
    assert result.n == 8
    assert result.ci_low <= result.estimate <= result.ci_high


def test_agreement_interval_is_bootstrap_mean_of_correctness():
    rng = np.random.default_rng(5)
    gold = rng.choice(["a", "b", "tie"], 300)
    predicted = np.where(rng.random(300) < 0.65, gold, "b")
    correct = (predicted == gold).astype(float)
    result = agreement(predicted, gold, level=0.9, n_boot=700, rng=11)
    expected = bootstrap_mean(correct, level=0.9, n_boot=700, rng=11)
    assert result == expected
    assert result.level == 0.9


def test_agreement_accepts_pandas_with_missing():
    pd = pytest.importorskip("pandas")
    predicted = pd.Series(["a", None, "tie"], dtype="string")  # pandas.NA for the missing one
    result = agreement(predicted, ["a", "a", "tie"], n_boot=50)
    assert result.estimate == pytest.approx(2 / 3)


# ----------------------------------------------------------------------------- kappa

@pytest.mark.parametrize("case", KAPPA, ids=lambda c: c["name"])
def test_kappa_matches_sklearn(case):
    result = cohens_kappa(case["predicted"], case["gold"], n_boot=300, rng=0)
    assert result.estimate == pytest.approx(case["kappa"], rel=1e-12, abs=1e-12)
    assert result.estimate == pytest.approx(_naive_kappa(case["predicted"], case["gold"]),
                                            abs=1e-12)
    assert result.n == len(case["gold"])


def test_kappa_bootstrap_replicates_are_kappas_of_resampled_instances():
    case = KAPPA[2]
    predicted = np.array(case["predicted"], dtype=object)
    gold = np.array(case["gold"], dtype=object)
    n_boot, n = 60, gold.size
    result = cohens_kappa(predicted, gold, level=0.8, n_boot=n_boot, rng=42)
    idx = np.random.default_rng(42).integers(0, n, (n_boot, n))
    replicates = [_naive_kappa(predicted[i], gold[i]) for i in idx]
    low, high = np.quantile(replicates, [0.1, 0.9])
    assert (result.ci_low, result.ci_high) == pytest.approx((low, high), abs=1e-12)


def test_kappa_with_sklearn_directly():
    metrics = pytest.importorskip("sklearn.metrics")
    rng = np.random.default_rng(9)
    gold = rng.choice(["a", "b", "tie"], 150)
    predicted = np.where(rng.random(150) < 0.6, gold, rng.choice(["a", "b", "tie"], 150))
    assert cohens_kappa(predicted, gold, n_boot=10).estimate == pytest.approx(
        metrics.cohen_kappa_score(gold, predicted), abs=1e-12)


def test_kappa_custom_labels_and_outcomes():
    predicted = [Outcome.A, Outcome.B, Outcome.INVALID, Outcome.A]
    gold = ["a", "b", "b", "b"]
    result = cohens_kappa(predicted, gold, labels=("a", "b"), n_boot=50)
    assert result.estimate == pytest.approx(_naive_kappa([p.value if p is not Outcome.INVALID
                                                          else None for p in predicted], gold,
                                                         labels=("a", "b")))


def test_kappa_perfect_and_degenerate():
    assert cohens_kappa(["a", "b", "tie"], ["a", "b", "tie"], n_boot=50).estimate == 1.0
    # Judge and gold always "tie": expected agreement 1, kappa 0/0.
    degenerate = cohens_kappa(["tie"] * 5, ["tie"] * 5, n_boot=50)
    assert math.isnan(degenerate.estimate)
    assert math.isnan(degenerate.ci_low) and math.isnan(degenerate.ci_high)


# ----------------------------------------------------------------------------- paired difference

def test_paired_difference_estimate_and_joint_resampling():
    rng = np.random.default_rng(2)
    x = (rng.random(200) < 0.7).astype(float)
    y = np.where(rng.random(200) < 0.8, x, 1 - x)
    result = paired_bootstrap_difference(x, y, n_boot=800, rng=3)
    assert result.estimate == pytest.approx(x.mean() - y.mean())
    assert result == bootstrap_mean(x - y, n_boot=800, rng=3)
    # Identical configurations: every joint resample has difference exactly 0 (resampling x
    # and y separately would not).
    same = paired_bootstrap_difference(x, x, n_boot=300, rng=0)
    assert (same.estimate, same.ci_low, same.ci_high) == (0.0, 0.0, 0.0)


def test_paired_difference_real_values():
    result = paired_bootstrap_difference([0.5, 0.7, 0.9], [0.4, 0.7, 0.6], n_boot=100)
    assert result.estimate == pytest.approx(0.4 / 3)


# ----------------------------------------------------------------------------- Wilson

@pytest.mark.parametrize("case", WILSON, ids=lambda c: f"{c['successes']}of{c['n']}")
def test_wilson_matches_statsmodels(case):
    interval = wilson_interval(case["successes"], case["n"], level=case["level"])
    assert isinstance(interval, Interval)
    assert interval.low == pytest.approx(case["low"], rel=1e-10, abs=1e-12)
    assert interval.high == pytest.approx(case["high"], rel=1e-10, abs=1e-12)
    assert interval.level == case["level"]


def test_wilson_closed_form_and_bounds():
    # Worked example: 7/10 at 95%, z = 1.959964 -> [0.3967781, 0.8922087].
    interval = wilson_interval(7, 10)
    assert (interval.low, interval.high) == pytest.approx((0.39677815, 0.89220873), abs=1e-8)
    assert wilson_interval(0, 20).low == 0.0
    assert wilson_interval(20, 20).high == 1.0


def test_proportion_estimate():
    result = proportion_estimate(284, 400)
    interval = wilson_interval(284, 400)
    assert (result.estimate, result.ci_low, result.ci_high, result.n) == (
        0.71, interval.low, interval.high, 400)


# ----------------------------------------------------------------------------- errors

def test_argument_errors():
    with pytest.raises(ValueError, match="`predicted` and `gold` must have equal length"):
        agreement(["a", "b"], ["a"])
    with pytest.raises(ValueError, match="`predicted` and `gold` must not be empty"):
        agreement([], [])
    with pytest.raises(ValueError, match="`gold` must have a label for every instance"):
        agreement(["a", "b"], ["a", None])
    with pytest.raises(ValueError, match="`predicted` must be a sequence of labels"):
        agreement("ab", ["a", "b"])
    with pytest.raises(ValueError, match="`gold` must be 1-d"):
        agreement(["a"], [["a"]])
    with pytest.raises(ValueError, match="`level` must be between 0 and 1"):
        agreement(["a"], ["a"], level=95)
    with pytest.raises(ValueError, match="`n_boot` must be a positive integer"):
        agreement(["a"], ["a"], n_boot=0)
    with pytest.raises(ValueError, match="`gold` labels must be in `labels`"):
        cohens_kappa(["a", "b"], ["a", "A"])
    with pytest.raises(ValueError, match="`predicted` labels must be in `labels`"):
        cohens_kappa(["a", "B"], ["a", "b"])
    with pytest.raises(ValueError, match="`labels` must not be empty"):
        cohens_kappa(["a"], ["a"], labels=())
    with pytest.raises(ValueError, match="`labels` must not repeat a label"):
        cohens_kappa(["a"], ["a"], labels=("a", "a"))
    with pytest.raises(ValueError, match="`labels` must not contain 'none'"):
        cohens_kappa(["a"], ["a"], labels=("a", "none"))
    with pytest.raises(ValueError, match="`labels` must be a sequence of labels"):
        cohens_kappa(["a"], ["a"], labels="ab")
    with pytest.raises(ValueError, match="`correct_x` and `correct_y` must be 1-d of equal"):
        paired_bootstrap_difference([1, 0], [1])
    with pytest.raises(ValueError, match="`correct_x` and `correct_y` must not be empty"):
        paired_bootstrap_difference([], [])
    with pytest.raises(ValueError, match="`correct_y` must be finite"):
        paired_bootstrap_difference([1, 0], [1, np.nan])
    with pytest.raises(ValueError, match="`n` must be a positive integer"):
        wilson_interval(0, 0)
    with pytest.raises(ValueError, match="`n` must be a positive integer"):
        proportion_estimate(1, 2.5)
    with pytest.raises(ValueError, match="`successes` must be between 0 and n=10"):
        wilson_interval(11, 10)
    with pytest.raises(ValueError, match="`level` must be between 0 and 1"):
        wilson_interval(1, 10, level=1.0)
