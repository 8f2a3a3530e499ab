"""Per-verdict covariates (Chatbot Arena style control) in the bias-aware model."""

import numpy as np
import pandas as pd
import pytest
from scipy import stats

from fairjudge.data import Comparisons, encode_verdicts, load_verdicts
from fairjudge.models import bias_aware_bt, length_residualized_bt


def arena_battles(seed, *, n_models=8, n_battles=3000, c=0.8, kappa=0.3):
    """Models whose mean response length tracks their quality; each battle draws lengths."""
    rng = np.random.default_rng(seed)
    theta = rng.normal(0, 1, n_models)
    mean_length = 0.8 * theta + rng.normal(0, 0.3, n_models)
    first = rng.integers(0, n_models, n_battles)
    second = (first + rng.integers(1, n_models, n_battles)) % n_models
    la = mean_length[first] + rng.normal(0, 1, n_battles)
    lb = mean_length[second] + rng.normal(0, 1, n_battles)
    eta = theta[first] - theta[second] + c * (la - lb) + kappa
    score = (rng.random(n_battles) < 1 / (1 + np.exp(-eta))).astype(float)
    return theta, first, second, score, la, lb


def test_item_and_verdict_covariates_give_one_likelihood():
    """A per-verdict difference equal to an item covariate's difference fits the same model."""
    rng = np.random.default_rng(0)
    n, m = 12, 600
    first = rng.integers(0, n, m)
    second = (first + rng.integers(1, n, m)) % n
    x = rng.normal(0, 1, n)
    outcomes = np.where(rng.random(m) < 0.5, "a", "b")
    items_fit = bias_aware_bt(Comparisons.from_outcomes(first, second, outcomes, n_items=n), x,
                              covariate_names=["length"], bias_prior_precision=1e-9)
    verdict = Comparisons.from_outcomes(first, second, outcomes, n_items=n,
                                        covariate_diff=x[first] - x[second],
                                        covariate_names=["length"])
    verdict_fit = bias_aware_bt(verdict, bias_prior_precision=1e-9)
    np.testing.assert_allclose(verdict_fit.scores, items_fit.scores, atol=1e-6)
    for name in ("length", "position"):
        assert verdict_fit.bias_estimate(name).estimate == pytest.approx(
            items_fit.bias_estimate(name).estimate, abs=1e-6)
        assert verdict_fit.bias_estimate(name).std_error == pytest.approx(
            items_fit.bias_estimate(name).std_error, rel=1e-5)


def test_per_verdict_coefficients_are_identified_when_quality_tracks_length():
    """Better models write longer answers, yet 90% intervals for c and kappa cover the truth
    at the nominal rate (binomial test over 150 data sets): a per-battle covariate is
    identified by the likelihood, not by an independence assumption."""
    n_sets, hits_c, hits_kappa = 150, 0, 0
    for seed in range(n_sets):
        theta, first, second, score, la, lb = arena_battles(seed)
        comps = Comparisons(first, second, score, np.ones(first.size),
                            np.zeros(first.size, np.int64), tuple(map(str, range(theta.size))),
                            ("judge",), (la - lb)[:, None], ("length",))
        fit = bias_aware_bt(comps, prior_precision=0.1, bias_prior_precision=1e-4)
        hits_c += fit.bias_estimate("length").as_estimate(0.90).contains(0.8)
        hits_kappa += fit.bias_estimate("position").as_estimate(0.90).contains(0.3)
    for hits in (hits_c, hits_kappa):
        assert stats.binomtest(int(hits), n_sets, 0.90).pvalue > 0.01, (hits, n_sets)


def test_verdict_table_columns_encode_as_differences():
    table = pd.DataFrame({"item_a": ["x", "y", "x"], "item_b": ["y", "z", "z"],
                          "winner": ["a", "b", "tie"], "length_a": [10, 3, 5],
                          "length_b": [4, 8, 5], "bold_diff": [1, -2, 0]})
    comps = encode_verdicts(load_verdicts(table), verdict_covariates=["length", "bold"])
    assert comps.covariate_names == ("length", "bold")
    np.testing.assert_array_equal(comps.covariate_diff, [[6, 1], [-5, -2], [0, 0]])


def test_invalid_rows_need_no_covariate_values():
    table = pd.DataFrame({"item_a": ["x", "y"], "item_b": ["y", "x"], "winner": ["a", None],
                          "outcome_detail": ["win", "invalid"], "length_a": [3, None],
                          "length_b": [1, None]})
    comps = encode_verdicts(load_verdicts(table), verdict_covariates=["length"])
    np.testing.assert_array_equal(comps.covariate_diff, [[2.0]])


def test_bad_per_verdict_covariates_are_named(tmp_path):
    path = tmp_path / "battles.jsonl"
    path.write_text('{"item_a": "x", "item_b": "y", "winner": "a", "length_a": 3, "length_b": 1}\n'
                    '{"item_a": "y", "item_b": "x", "winner": "b", "length_a": "long", '
                    '"length_b": 1}\n')
    verdicts = load_verdicts(path)
    with pytest.raises(ValueError, match=r"battles.jsonl line 2: covariate column `length_a` "
                                         r"must be a finite number; got 'long'"):
        encode_verdicts(verdicts, verdict_covariates=["length"])
    with pytest.raises(ValueError, match=r"per-verdict covariate `bold` needs columns `bold_a` "
                                         r"and `bold_b`"):
        encode_verdicts(verdicts, verdict_covariates=["bold"])


def test_degenerate_per_verdict_covariates_are_rejected():
    zero = Comparisons.from_outcomes([0, 1], [1, 2], ["a", "b"], n_items=3,
                                     covariate_diff=[0.0, 0.0], covariate_names=["length"])
    with pytest.raises(ValueError, match="same value for both answers of every verdict"):
        bias_aware_bt(zero)
    both = Comparisons.from_outcomes([0, 1], [1, 2], ["a", "b"], n_items=3,
                                     covariate_diff=[1.0, 2.0], covariate_names=["length"])
    with pytest.raises(ValueError, match="given both per item and per verdict"):
        bias_aware_bt(both, np.array([0.0, 1.0, 2.0]), covariate_names=["length"])
    with pytest.raises(ValueError, match="need the bias-aware model"):
        length_residualized_bt(both, np.array([0.0, 1.0, 2.0]))
    with pytest.raises(ValueError, match=r"`covariate_diff` must have shape \(2, 1\)"):
        Comparisons(np.array([0, 1]), np.array([1, 2]), np.array([1.0, 0.0]), np.ones(2),
                    np.zeros(2, np.int64), ("0", "1", "2"), ("judge",), np.zeros((2, 2)),
                    ("length",))


def test_rank_fits_arena_style_control_from_battle_columns():
    """`rank` reads per-battle covariates from `<name>_a`/`<name>_b` columns: quality tracks
    length across models, yet the length bias of the judge is recovered."""
    import fairjudge

    theta, first, second, score, la, lb = arena_battles(0, n_battles=6000, c=0.8)
    models = [f"model{i}" for i in range(theta.size)]
    winner = np.where(score == 1.0, "model_a", "model_b")
    battles = pd.DataFrame({"model_a": np.asarray(models)[first],
                            "model_b": np.asarray(models)[second], "winner": winner,
                            "length_a": la, "length_b": lb})
    result = fairjudge.rank(battles, k=3, covariates=["length"], prior_precision=0.1,
                            bias_prior_precision=1e-4, n_samples=200)
    length = result.bias.set_index("name").loc["length"]
    # within 4 standard errors of the truth (it sits at 1.6 for this draw); the calibration
    # of the interval is checked over many data sets above
    assert abs(length["estimate"] - 0.8) < 4 * length["std_error"]
    assert result.diagnostics["per_verdict_covariates"] == ["length"]
    order = np.argsort(-theta)[:3]  # true ranks 3 and 4 are 0.28 logits apart, s.e. ~0.05
    assert set(result.topk) == {models[i] for i in order}


def test_the_naive_model_ignores_per_verdict_covariates_and_swap_majority_says_so():
    from fairjudge._util._warnings import FairjudgeWarning
    from fairjudge.models import bt_pairwise, swap_majority_bt

    theta, first, second, score, la, lb = arena_battles(1, n_battles=800)
    with_cov = Comparisons(first, second, score, np.ones(first.size),
                           np.zeros(first.size, np.int64), tuple(map(str, range(theta.size))),
                           ("judge",), (la - lb)[:, None], ("length",))
    plain = with_cov.without_covariates()
    naive = bt_pairwise(with_cov)
    assert naive.bias == () and naive.covariate_names == ()
    np.testing.assert_allclose(naive.scores, bt_pairwise(plain).scores)
    with pytest.warns(FairjudgeWarning, match="ignores the per-verdict covariates length"):
        swap_majority_bt(with_cov)
