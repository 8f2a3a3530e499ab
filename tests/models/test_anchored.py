"""The anchored correction: judge verdicts and human labels in one fit. Checked against an
independent penalised logistic regression, by interval coverage of a judge's excess bias
when quality tracks the covariate (where the bias-aware model's assumption fails), and
through `rank --anchors`."""

import numpy as np
import pandas as pd
import pytest
from scipy import special, stats

from fairjudge import rank
from fairjudge._util._warnings import FairjudgeInputError
from fairjudge.data import Comparisons
from fairjudge.models import anchored_agreement, anchored_bt, bias_aware_bt
from fairjudge.stats import logistic_regression


def world(seed, *, n_items=30, slope=0.8, excess=0.5, kappa=0.3, n_labels=150):
    """Quality theta = slope x + noise (it tracks the covariate); the judge adds ``excess``
    per unit of x and ``kappa`` to the first slot; humans follow theta alone."""
    rng = np.random.default_rng(seed)
    x = rng.normal(0, 1, n_items)
    theta = slope * x + rng.normal(0, 1, n_items)
    first, second = np.nonzero(rng.random((n_items, n_items)) < 0.5)
    keep = first != second
    first, second = first[keep], second[keep]
    p = special.expit(theta[first] - theta[second] + excess * (x[first] - x[second]) + kappa)
    judge = Comparisons.from_outcomes(first, second, np.where(rng.random(p.size) < p, "a", "b"),
                                      n_items=n_items)
    a = rng.integers(0, n_items, n_labels)
    b = (a + rng.integers(1, n_items, n_labels)) % n_items
    q = special.expit(theta[a] - theta[b])
    humans = Comparisons.from_outcomes(a, b, np.where(rng.random(n_labels) < q, "a", "b"),
                                       n_items=n_items)
    return judge, humans, x, theta


def test_the_fit_is_the_penalised_logistic_regression_it_stands_for():
    """The same posterior mode from logistic_regression on the stacked design: item
    incidence, the judge's covariate and position columns, the humans' covariate column
    (their position term held at 0), priors 1 on u and 0.1 on the rest; then
    theta = u + beta x_std and the judge's excess C - beta."""
    judge, humans, x, _ = world(0)
    fit = anchored_bt(judge, humans, x[:, None], covariate_names=["len"])
    x_std = (x - x.mean()) / x.std()
    rows = []
    for c, is_human in ((judge, 0.0), (humans, 1.0)):
        incidence = np.zeros((len(c), judge.n_items))
        incidence[np.arange(len(c)), c.first] += 1
        incidence[np.arange(len(c)), c.second] -= 1
        dx = x_std[c.first] - x_std[c.second]
        rows.append((np.column_stack([incidence, (1 - is_human) * dx, (1 - is_human) * np.ones(
            len(c)), is_human * dx]), c.first_score))
    design = np.vstack([r[0] for r in rows])
    y = np.concatenate([r[1] for r in rows])
    penalty = np.r_[np.ones(judge.n_items), 0.1, 0.1, 0.1]
    ref = logistic_regression(design, y, l2=penalty, fit_intercept=False)
    u, c_total, kappa, beta = (ref.coef[:-3], ref.coef[-3], ref.coef[-2], ref.coef[-1])
    np.testing.assert_allclose(fit.scores, u + beta * x_std, atol=1e-6)
    estimates = {(b.judge, b.name): b for b in fit.bias}
    assert estimates["judge", "len"].estimate == pytest.approx((c_total - beta) / x.std(),
                                                               abs=1e-6)
    assert estimates["judge", "position"].estimate == pytest.approx(kappa, abs=1e-6)
    assert estimates["humans", "len"].estimate == pytest.approx(beta / x.std(), abs=1e-6)
    # The excess's standard error from the reference covariance of (C, beta).
    cov = ref.covariance[-3:, -3:]
    se = np.sqrt(cov[0, 0] + cov[2, 2] - 2 * cov[0, 2]) / x.std()
    assert estimates["judge", "len"].std_error == pytest.approx(se, rel=1e-4)


@pytest.mark.slow
def test_the_excess_bias_is_covered_where_the_bias_aware_model_is_biased():
    """200 worlds whose quality tracks the covariate (slope 0.8): the anchored interval
    holds the judge's true excess (0.5 per standardised unit) at a rate not significantly
    below 95%, while the bias-aware estimate, which reads slope + excess, is off by the
    slope on average."""
    hits, aware_error = 0, []
    for seed in range(200):
        judge, humans, x, _ = world(seed)
        fit = anchored_bt(judge, humans, x[:, None], covariate_names=["len"])
        b = next(b for b in fit.bias if b.judge == "judge" and b.name == "len")
        truth = 0.5 / x.std()  # per raw unit
        hits += abs(b.estimate - truth) <= 1.959964 * b.std_error
        aware = bias_aware_bt(judge, x[:, None], covariate_names=["len"])
        aware_error.append(aware.bias_estimate("len").estimate - truth)
    assert stats.binomtest(hits, 200, 0.95, alternative="less").pvalue > 0.01, hits
    assert np.mean(aware_error) > 0.4


def test_held_out_agreement_by_folds_over_pairs():
    judge, humans, x, theta = world(3)
    result = anchored_agreement(judge, humans, x[:, None], covariate_names=["len"], folds=5)
    decisive_pairs = len(humans)
    assert result.n_labels == decisive_pairs and result.folds == 5
    for name in ("naive", "bias_aware", "anchored"):
        credit = result.per_label[name]
        assert set(np.unique(credit)) <= {0.0, 0.5, 1.0}
        assert getattr(result, name) == pytest.approx(credit.mean())
    with pytest.raises(FairjudgeInputError, match="needs at least 5"):
        anchored_agreement(judge, humans.subset(np.arange(3)), x[:, None], folds=5)


def test_rank_with_anchors_fits_them_and_reports_the_check(tmp_path, capsys):
    from fairjudge._cli import main

    judge, humans, x, _ = world(5)
    ids = [f"i{i}" for i in range(judge.n_items)]

    def table(c, name):
        return pd.DataFrame({"item_a": [ids[i] for i in c.first],
                             "item_b": [ids[i] for i in c.second],
                             "winner": np.where(c.first_score == 1, "a", "b"), "judge": name})

    items = pd.DataFrame({"id": ids, "len": x})
    ranking = rank(table(judge, "j"), items, covariates=["len"], anchors=table(humans, "h"))
    assert ranking.fit.model == "anchored"
    assert {"naive", "bias_aware", "anchored", "anchored_minus_naive"} <= set(
        ranking.diagnostics["anchored"])
    assert ranking.diagnostics["gate"]["role"] == "check"
    assert set(ranking.bias["judge"]) == {"j", "humans"}
    with pytest.raises(FairjudgeInputError, match="got model 'naive'"):
        rank(table(judge, "j"), items, model="naive", anchors=table(humans, "h"))
    table(judge, "j").to_csv(tmp_path / "v.csv", index=False)
    table(humans, "h").to_csv(tmp_path / "h.csv", index=False)
    items.to_csv(tmp_path / "i.csv", index=False)
    assert main(["rank", str(tmp_path / "v.csv"), "--items", str(tmp_path / "i.csv"),
                 "--covariates", "len", "--anchors", str(tmp_path / "h.csv")]) == 0
    out = capsys.readouterr().out
    assert "held-out agreement with the human labels (5-fold" in out
    assert "humans/len" in out


def judged(theta, x, rng, *, excess=0.0, repeats=2):
    """Every ordered pair judged ``repeats`` times by one judge with a 0.3 first-slot lean
    and ``excess`` per unit of x; returns the verdict table and the item table."""
    n = len(theta)
    ids = [f"i{i}" for i in range(n)]
    rows = [(ids[a], ids[b], "a" if rng.random() < special.expit(
        theta[a] - theta[b] + excess * (x[a] - x[b]) + 0.3) else "b")
        for _ in range(repeats) for a in range(n) for b in range(n) if a != b]
    return (pd.DataFrame(rows, columns=["item_a", "item_b", "winner"]).assign(judge="j"),
            pd.DataFrame({"id": ids, "len": x}))


def test_a_correction_that_rests_on_the_assumption_is_flagged():
    """Quality equal to the covariate: the covariates alone explain nearly all that
    quality does and the correction scrambles the ranking; a warning says so. An
    independent covariate with a real judge bias raises none."""
    import warnings

    from fairjudge import CorrectionAssumptionWarning

    rng = np.random.default_rng(7)
    x = rng.normal(0, 1.5, 40)
    verdicts, items = judged(x, x, rng)
    with pytest.warns(CorrectionAssumptionWarning, match="--anchors"):
        flagged = rank(verdicts, items, covariates=["len"])
    check = flagged.diagnostics["assumption"]
    assert check["explained_share"] > 0.9 and check["reasons"]
    theta = rng.normal(0, 1.5, 60)
    x = rng.normal(0, 1, 60)
    verdicts, items = judged(theta, x, rng, excess=0.5)
    with warnings.catch_warnings():
        warnings.simplefilter("error", CorrectionAssumptionWarning)
        clean = rank(verdicts, items, covariates=["len"])
    check = clean.diagnostics["assumption"]
    assert check["explained_share"] < 0.3
    assert not check["reasons"]


def labelled_world(seed, n_labels):
    judge, humans, x, _ = world(seed, n_labels=n_labels)
    ids = [f"i{i}" for i in range(judge.n_items)]

    def table(c, name):
        return pd.DataFrame({"item_a": [ids[i] for i in c.first],
                             "item_b": [ids[i] for i in c.second],
                             "winner": np.where(c.first_score == 1, "a",
                                                np.where(c.first_score == 0, "b", "tie")),
                             "judge": name})

    return table(judge, "j"), table(humans, "h"), pd.DataFrame({"id": ids, "len": x})


def test_anchor_edge_cases_are_handled_and_said():
    from fairjudge import CorrectionAssumptionWarning

    verdicts, labels, items = labelled_world(6, 150)
    # Per-verdict covariates are refused with anchors.
    with_battle = verdicts.assign(vlen_a=1.0 + np.arange(len(verdicts)) % 3, vlen_b=2.0)
    with pytest.raises(FairjudgeInputError, match="human labels anchor item covariates only"):
        rank(with_battle, items, covariates=["vlen"], anchors=labels)
    # Labels that are all ties: no gate, no cross-validation, said.
    ties = rank(verdicts, items, covariates=["len"], anchors=labels.assign(winner="tie"))
    assert "gate" not in ties.diagnostics
    assert "cross_validation" in ties.diagnostics["anchored"]
    # Four labels leave the humans' length association loose: a warning.
    with pytest.warns(CorrectionAssumptionWarning, match="4 human label"):
        rank(verdicts, items, covariates=["len"], anchors=labels.head(4))
    # The bootstrap resamples the labels by pair as well, and runs.
    boot = rank(verdicts, items, covariates=["len"], anchors=labels, bootstrap=5)
    assert boot.diagnostics["bootstrap"]["rounds"] == 5
    judge, humans, x, _ = world(6)
    with pytest.raises(FairjudgeInputError, match="`folds` must be an integer >= 2"):
        anchored_agreement(judge, humans, x[:, None], folds=1)


def test_no_held_out_pair_was_fitted_in_its_fold(monkeypatch):
    """Labels in both orders: every pair is held out of exactly one fold's fit, so neither
    of its orders was fitted when it was scored (a pair split across folds would be in
    every fit)."""
    import fairjudge.models._anchored as module

    judge, humans, x, _ = world(7, n_labels=60)
    both = Comparisons.from_outcomes(np.r_[humans.first, humans.second],
                                     np.r_[humans.second, humans.first],
                                     np.r_[np.where(humans.first_score == 1, "a", "b"),
                                           np.where(humans.first_score == 1, "b", "a")],
                                     n_items=judge.n_items)
    fitted = []
    original = module.anchored_bt

    def spy(comparisons, anchors, *args, **kwargs):
        fitted.append({tuple(sorted(p)) for p in zip(anchors.first, anchors.second)})
        return original(comparisons, anchors, *args, **kwargs)

    monkeypatch.setattr(module, "anchored_bt", spy)
    result = anchored_agreement(judge, both, x[:, None], covariate_names=["len"], folds=5)
    assert len(fitted) == 5 and result.n_labels == len(both)
    pairs = {tuple(sorted(p)) for p in zip(both.first, both.second)}
    for pair in pairs:
        assert sum(pair in train for train in fitted) == 4, pair
