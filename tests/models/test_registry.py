"""The model registry behind ``fit_model`` (fairjudge.models._registry)."""

from __future__ import annotations

import numpy as np
import pytest

import fairjudge
from fairjudge.data import Comparisons, SimulatedJudge, matrix_to_verdicts, simulate_items
from fairjudge.models import (MODELS, ModelSpec, bias_aware_bt, bt_pairwise, fit_model,
                              hierarchical_bias_aware_bt, length_residualized_bt, model_names,
                              model_spec, register_model, swap_majority_bt)
from fairjudge.models import _registry

BUILT_IN = ("naive", "bias-aware", "hierarchical", "swap-majority", "residualized",
            "reliability")


@pytest.fixture(scope="module")
def simulated():
    items = simulate_items(15, rng=4)
    judge = SimulatedJudge(items["quality"].to_numpy(), items["verbose"].to_numpy(), bias=1.5,
                           position=0.4, rng=5)
    matrix = judge.verdict_matrix()
    first, second = np.nonzero(np.isfinite(matrix))
    comparisons = Comparisons(first, second, matrix[first, second], np.ones(first.size),
                              np.zeros(first.size, np.int64), tuple(items.index), ("judge",))
    return items, matrix, comparisons


@pytest.fixture
def registry(monkeypatch):
    """A scratch copy of the registry, so that a test's registrations do not leak."""
    monkeypatch.setattr(_registry._MODELS, "_entries", dict(_registry._MODELS._entries))


def test_built_in_models_are_registered_in_order():
    assert MODELS == BUILT_IN and isinstance(MODELS, tuple)
    assert model_names()[:6] == BUILT_IN
    accepts = {name: (s.covariates, s.position, s.bias_prior, s.warm_start)
               for name, s in ((n, model_spec(n)) for n in BUILT_IN)}
    assert accepts == {
        "naive": ("ignored", False, False, True),
        "bias-aware": ("optional", True, True, True),
        "hierarchical": ("optional", True, True, False),
        "swap-majority": ("ignored", False, False, False),
        "residualized": ("required", False, False, False),
        "reliability": ("optional", True, True, True),
    }
    for name in BUILT_IN:
        spec = model_spec(name)
        assert spec.name == name and spec.description and "\n" not in spec.description


def test_fit_model_matches_each_estimator(simulated):
    items, _, comparisons = simulated
    x = items[["verbose"]].to_numpy()
    settings = dict(prior_precision=2.0, check_graph=False)
    direct = {
        "naive": bt_pairwise(comparisons, **settings),
        "bias-aware": bias_aware_bt(comparisons, x, covariate_names=["verbose"], position=False,
                                    bias_prior_precision=0.5, **settings),
        "hierarchical": hierarchical_bias_aware_bt(
            comparisons, x, covariate_names=["verbose"], position=False,
            initial_bias_prior_precision=0.5, **settings),
        "swap-majority": swap_majority_bt(comparisons, **settings),
        "residualized": length_residualized_bt(comparisons, x, covariate_names=["verbose"],
                                               **settings),
    }
    for name, expected in direct.items():
        got = fit_model(name, comparisons, x, covariate_names=["verbose"], position=False,
                        bias_prior_precision=0.5, **settings)
        assert got.model == expected.model
        np.testing.assert_array_equal(got.scores, expected.scores)
        np.testing.assert_array_equal(got.covariance, expected.covariance)


def test_unknown_model_lists_the_registered_ones(simulated):
    _, _, comparisons = simulated
    message = r"`model` must be one of naive, bias-aware, hierarchical, swap-majority, " \
              r"residualized, reliability; got 'bias_aware'"
    with pytest.raises(ValueError, match=message):
        fit_model("bias_aware", comparisons)
    with pytest.raises(ValueError, match=message):
        model_spec("bias_aware")
    with pytest.raises(ValueError, match=r"`model` must be one of .*; got 'bias_aware'"):
        fairjudge.rank(matrix_to_verdicts(simulated[1], simulated[0].index), k=3,
                       model="bias_aware")


def test_a_model_that_requires_covariates_refuses_none(simulated):
    with pytest.raises(ValueError, match="the residualized model needs covariates"):
        fit_model("residualized", simulated[2])


def test_registering_a_model_makes_it_fittable_by_name(simulated, registry):
    items, matrix, comparisons = simulated
    received = []

    def shrunk(comparisons, covariates, *, covariate_names, prior_precision, check_graph, init):
        received.append((covariates, covariate_names, prior_precision, check_graph, init))
        return bt_pairwise(comparisons, prior_precision=10 * prior_precision, init=init,
                           check_graph=check_graph)

    register_model(ModelSpec("shrunk", "naive BT with a 10x prior", shrunk,
                             covariates="optional", warm_start=True))
    assert "shrunk" in model_names() and "shrunk" not in MODELS
    x = items[["verbose"]].to_numpy()
    # Only the arguments the spec accepts are passed: no position, no bias prior.
    fit = fit_model("shrunk", comparisons, x, covariate_names=["verbose"], prior_precision=0.5,
                    position=False, bias_prior_precision=3.0)
    assert len(received) == 1
    covariates, names, precision, check_graph, init = received[0]
    assert covariates is x and names == ["verbose"] and precision == 0.5
    assert check_graph is True and init is None
    np.testing.assert_array_equal(fit.scores, bt_pairwise(comparisons, prior_precision=5.0).scores)
    # ... and through the ranking API, which validates names against the registry.
    ranking = fairjudge.rank(matrix_to_verdicts(matrix, items.index), k=3, model="shrunk",
                             n_samples=100)
    assert len(ranking.topk) == 3 and received[-1][0] is None


def test_registration_errors(registry):
    with pytest.raises(ValueError, match="a model named 'naive' is already registered"):
        register_model(ModelSpec("naive", "again", bt_pairwise))
    with pytest.raises(TypeError, match="a model is registered as a ModelSpec; got str"):
        register_model("naive")
    with pytest.raises(ValueError, match=r"`covariates` must be one of ignored, optional, "
                                         r"required; got 'yes'"):
        ModelSpec("m", "d", bt_pairwise, covariates="yes")
    with pytest.raises(TypeError, match="`fit` must be callable"):
        ModelSpec("m", "d", "bt_pairwise")
    with pytest.raises(ValueError, match="`name` must be a non-empty string"):
        ModelSpec("", "d", bt_pairwise)
