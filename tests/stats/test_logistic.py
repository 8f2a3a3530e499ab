"""Logistic regression against statsmodels / scikit-learn, and leak-free CV predictions.

Reference values: ``reference/logistic.json`` (statsmodels Logit and GLM(Binomial),
scikit-learn LogisticRegression), made by ``reference/make_references.py`` with the data.
"""

import json
from pathlib import Path

import numpy as np
import pandas as pd
import pytest
from scipy import optimize, special

from fairjudge._util._warnings import ConvergenceWarning
from fairjudge.stats._logistic import LogisticFit, cross_validated_predictions, logistic_regression

REFERENCE = json.loads((Path(__file__).parent / "reference" / "logistic.json").read_text())
BINARY = REFERENCE["binary"]
FRACTIONAL = REFERENCE["fractional"]


def _data(block):
    X = np.array(block["X"])
    y = np.array(block["y"])
    w = np.array(block["weights"]) if "weights" in block else np.ones(y.size)
    return X, y, w


def _penalised_objective(params, X, y, w, l2):
    eta = params[0] + X @ params[1:]
    return np.sum(w * (y * eta - np.logaddexp(0, eta))) - 0.5 * l2 * np.sum(params[1:] ** 2)


def _penalised_gradient(params, X, y, w, l2):
    Z = np.column_stack([np.ones(len(y)), X])
    gradient = Z.T @ (w * (y - special.expit(Z @ params)))
    gradient[1:] -= l2 * params[1:]
    return gradient


def test_unpenalised_matches_statsmodels_logit():
    X, y, _ = _data(BINARY)
    fit = logistic_regression(X, y)
    reference = BINARY["unpenalised"]
    np.testing.assert_allclose(fit.coef, reference["params"], rtol=1e-8, atol=1e-10)
    np.testing.assert_allclose(fit.std_error, reference["bse"], rtol=1e-8)
    assert fit.intercept == fit.coef[0]
    assert _penalised_objective(fit.coef, X, y, 1, 0.0) == pytest.approx(reference["llf"],
                                                                         rel=1e-12)
    assert fit.converged and fit.n_iter < 20
    assert fit.names == ("Intercept", "x0", "x1", "x2")


@pytest.mark.parametrize("index", [0, 1])
def test_penalised_matches_sklearn(index):
    X, y, w = _data(BINARY)
    reference = BINARY["penalised"][index]
    l2 = reference["l2"]
    fit = logistic_regression(X, y, l2=l2)
    assert fit.intercept == pytest.approx(reference["intercept"], abs=1e-7)
    np.testing.assert_allclose(fit.coef[1:], reference["coef"], rtol=1e-6, atol=1e-8)
    # Standard errors: inverse penalised Hessian (intercept unpenalised), from scratch.
    Z = np.column_stack([np.ones(y.size), X])
    mu = special.expit(Z @ fit.coef)
    information = Z.T @ (Z * (mu * (1 - mu))[:, None]) + np.diag([0.0] + [l2] * X.shape[1])
    np.testing.assert_allclose(fit.covariance, np.linalg.inv(information), rtol=1e-9)
    np.testing.assert_allclose(fit.std_error, np.sqrt(np.diag(np.linalg.inv(information))),
                               rtol=1e-9)


def test_fractional_weighted_matches_statsmodels_glm():
    X, y, w = _data(FRACTIONAL)
    assert set(np.unique(y)) == {0.0, 0.5, 1.0}
    fit = logistic_regression(X, y, weights=w)
    reference = FRACTIONAL["unpenalised"]
    # statsmodels' IRLS stops on the deviance, so agreement is to ~1e-8, not machine precision.
    np.testing.assert_allclose(fit.coef, reference["params"], rtol=1e-7, atol=1e-9)
    np.testing.assert_allclose(fit.std_error, reference["bse"], rtol=1e-7)


def test_fractional_weighted_penalised_matches_sklearn_split_rows():
    X, y, w = _data(FRACTIONAL)
    reference = FRACTIONAL["penalised"]
    fit = logistic_regression(X, y, weights=w, l2=reference["l2"])
    assert fit.intercept == pytest.approx(reference["intercept"], abs=1e-7)
    np.testing.assert_allclose(fit.coef[1:], reference["coef"], rtol=1e-6, atol=1e-8)


@pytest.mark.parametrize("l2", [0.0, 0.3, 10.0])
def test_gradient_is_zero_at_the_optimum(l2):
    X, y, w = _data(FRACTIONAL)
    fit = logistic_regression(X, y, weights=w, l2=l2)
    gradient = _penalised_gradient(fit.coef, X, y, w, l2)
    assert np.max(np.abs(gradient)) < 1e-8
    # ... and the gradient used is the true one (the optimum is a maximum of the objective).
    error = optimize.check_grad(lambda p: -_penalised_objective(p, X, y, w, l2),
                                lambda p: -_penalised_gradient(p, X, y, w, l2), fit.coef + 0.1)
    assert error < 1e-4


def test_an_offset_stands_for_a_coefficient_held_at_its_fitted_value():
    """With x1's column replaced by the offset coef_1 * x1, the other coefficients are the
    full fit's: the full optimum's gradient in them is zero at those values."""
    X, y, w = _data(FRACTIONAL)
    full = logistic_regression(X, y, weights=w, l2=0.5)
    held = logistic_regression(X[:, :1], y, weights=w, l2=0.5, offset=full.coef[2] * X[:, 1])
    np.testing.assert_allclose(held.coef, full.coef[:2], rtol=1e-8, atol=1e-10)


def test_one_penalty_per_column_is_a_prior_per_coefficient():
    X, y, w = _data(FRACTIONAL)
    l2 = np.array([0.0, 2.0])
    fit = logistic_regression(X, y, weights=w, l2=l2, fit_intercept=False)

    def loss(beta):
        eta = X @ beta
        return -np.sum(w * (y * eta - np.logaddexp(0, eta))) + 0.5 * np.sum(l2 * beta ** 2)

    reference = optimize.minimize(loss, np.zeros(2), method="BFGS", options={"gtol": 1e-10})
    np.testing.assert_allclose(fit.coef, reference.x, atol=1e-6)
    same = logistic_regression(X, y, weights=w, l2=np.full(2, 0.3))
    np.testing.assert_allclose(same.coef, logistic_regression(X, y, weights=w, l2=0.3).coef,
                               rtol=1e-12)
    with pytest.raises(ValueError, match="one per column"):
        logistic_regression(X, y, l2=[1.0, 2.0, 3.0])
    with pytest.raises(ValueError, match="one per row"):
        logistic_regression(X, y, offset=np.zeros(3))
    # An unpenalised column that separates y has an infinite estimate, penalised others or
    # not.
    separable = np.column_stack([[-2.0, -1.0, 1.0, 2.0], [0.3, -0.1, 0.2, 0.5]])
    with pytest.raises(ValueError, match="separable .*x0"):
        logistic_regression(separable, [0, 0, 1, 1], l2=[0.0, 1.0], fit_intercept=False)


def test_without_intercept_and_predict_proba():
    X, y, _ = _data(BINARY)
    fit = logistic_regression(X, y, fit_intercept=False, l2=1.0, names=["ratio", "md", "len"])
    assert fit.names == ("ratio", "md", "len") and fit.intercept == 0.0
    assert not fit.fit_intercept
    np.testing.assert_allclose(fit.predict_proba(X[:5]), special.expit(X[:5] @ fit.coef))
    with_intercept = logistic_regression(X, y)
    intercept, slopes = with_intercept.coef[0], with_intercept.coef[1:]
    np.testing.assert_allclose(with_intercept.predict_proba(X[:5]),
                               special.expit(intercept + X[:5] @ slopes))


def test_dataframe_names_and_to_frame():
    X, y, _ = _data(BINARY)
    frame = pd.DataFrame(X, columns=["length_ratio", "markdown", "log_len"])
    fit = logistic_regression(frame, y)
    assert isinstance(fit, LogisticFit)
    table = fit.to_frame()
    assert list(table.columns) == ["name", "coef", "std_error", "z", "p_value"]
    assert table["name"].tolist() == ["Intercept", "length_ratio", "markdown", "log_len"]
    np.testing.assert_allclose(table["z"], fit.coef / fit.std_error)


def test_weights_act_as_frequencies():
    X, y, _ = _data(BINARY)
    w = np.r_[np.full(100, 2.0), np.ones(100)]
    weighted = logistic_regression(X, y, weights=w)
    repeated = logistic_regression(np.vstack([X, X[:100]]), np.r_[y, y[:100]])
    np.testing.assert_allclose(weighted.coef, repeated.coef, rtol=1e-9)
    np.testing.assert_allclose(weighted.std_error, repeated.std_error, rtol=1e-9)


def test_separation_is_reported():
    X = np.array([[0.0], [1.0], [2.0], [3.0]])
    with pytest.raises(ValueError, match="the data are separable .* use l2 > 0"):
        logistic_regression(X, [0, 0, 1, 1])
    # Quasi-complete separation (one overlapping point) is also infinite.
    with pytest.raises(ValueError, match="the data are separable"):
        logistic_regression([[0.0], [1.0], [1.0], [2.0]], [0, 0, 1, 1])
    # A 0/1 feature that predicts y perfectly in one of its levels.
    with pytest.raises(ValueError, match="separable \\(a combination of .*flag"):
        logistic_regression([[1.0], [1.0], [0.0], [0.0], [0.0]], [1, 1, 0, 1, 0],
                            names=["flag"])
    penalised = logistic_regression(X, [0, 0, 1, 1], l2=1.0)
    assert penalised.converged and np.all(np.isfinite(penalised.coef))


def test_non_convergence_warns():
    X, y, _ = _data(BINARY)
    with pytest.warns(ConvergenceWarning, match="did not converge in 1 Newton iterations"):
        fit = logistic_regression(X, y, max_iter=1)
    assert not fit.converged


def test_argument_errors():
    X, y, _ = _data(BINARY)
    with pytest.raises(ValueError, match="`X` must be 2-d"):
        logistic_regression(X[:, 0], y)
    with pytest.raises(ValueError, match="`X` must be finite"):
        logistic_regression(np.where(X > 2, np.nan, X), y)
    with pytest.raises(ValueError, match="`X` must be numeric"):
        logistic_regression([["a"], ["b"]], [0, 1])
    with pytest.raises(ValueError, match="`X` must have at least one row"):
        logistic_regression(np.zeros((0, 2)), [])
    with pytest.raises(ValueError, match="`y` must have shape \\(200,\\)"):
        logistic_regression(X, y[:-1])
    with pytest.raises(ValueError, match="`y` must be in \\[0, 1\\]"):
        logistic_regression(X, 2 * y)
    with pytest.raises(ValueError, match="`y` must be numeric"):
        logistic_regression([[0.0], [1.0]], ["a", "b"])
    with pytest.raises(ValueError, match="`y` is 1 for every observation"):
        logistic_regression(X, np.ones(200), l2=1.0)
    with pytest.raises(ValueError, match="`l2` must be a finite number >= 0"):
        logistic_regression(X, y, l2=-1.0)
    with pytest.raises(ValueError, match="`weights` must have shape"):
        logistic_regression(X, y, weights=np.ones(3))
    with pytest.raises(ValueError, match="`weights` must be finite and >= 0"):
        logistic_regression(X, y, weights=-np.ones(200))
    with pytest.raises(ValueError, match="`names` must have one entry per column"):
        logistic_regression(X, y, names=["a"])
    with pytest.raises(ValueError, match="`names` must be unique"):
        logistic_regression(X, y, names=["a", "a", "b"])
    with pytest.raises(ValueError, match="`max_iter` must be a positive integer"):
        logistic_regression(X, y, max_iter=0)
    with pytest.raises(ValueError, match="`tol` must be a positive number"):
        logistic_regression(X, y, tol=0)
    with pytest.raises(ValueError, match="columns of `X` .* are linearly dependent"):
        logistic_regression(np.column_stack([X, X[:, 0]]), y)
    fit = logistic_regression(X, y)
    with pytest.raises(ValueError, match="`X` must have shape \\(m, 3\\)"):
        fit.predict_proba(X[:, :2])


# ----------------------------------------------------------------------------- cross-validation

def test_cv_prediction_ignores_its_own_row():
    X, y, _ = _data(BINARY)
    base = cross_validated_predictions(X, y, l2=1.0, n_folds=5, rng=4, stratify=False)
    assert base.shape == y.shape and np.all((base > 0) & (base < 1))
    for i in (0, 17, 123):
        flipped = y.copy()
        flipped[i] = 1 - flipped[i]
        changed = cross_validated_predictions(X, flipped, l2=1.0, n_folds=5, rng=4,
                                              stratify=False)
        assert changed[i] == base[i]          # its own label never enters its prediction
        assert np.sum(changed != base) > 100  # ... but it trains the other folds' models


def test_stratified_cv_rows_of_a_fold_do_not_see_each_other():
    X, y, _ = _data(BINARY)
    base = cross_validated_predictions(X, y, l2=1.0, n_folds=4, rng=0)
    moved = X.copy()
    moved[5] += 3.0
    changed = cross_validated_predictions(moved, y, l2=1.0, n_folds=4, rng=0)
    unchanged = np.flatnonzero(changed == base)
    # Row 5's fold-mates (about n/4 rows) are untouched; every other row's model moved.
    assert 40 <= unchanged.size <= 55 and 5 not in unchanged


def test_cv_folds_are_stratified_and_seeded():
    X, y, _ = _data(BINARY)
    a = cross_validated_predictions(X, y, rng=1)
    assert np.array_equal(a, cross_validated_predictions(X, y, rng=1))
    assert not np.array_equal(a, cross_validated_predictions(X, y, rng=2))
    # With one positive per fold-sized block, stratification still leaves every training
    # fold with both classes.
    y_rare = np.zeros(40)
    y_rare[:5] = 1
    rows = np.random.default_rng(0).normal(size=(40, 2))
    cross_validated_predictions(rows, y_rare, n_folds=5, rng=3)


def test_cv_is_scale_free():
    X, y, _ = _data(BINARY)
    scaled = X * np.array([100.0, 0.01, 7.0]) + np.array([5.0, -2.0, 0.0])
    np.testing.assert_allclose(cross_validated_predictions(X, y, rng=0),
                               cross_validated_predictions(scaled, y, rng=0), rtol=1e-7)


def test_cv_fractional_y():
    X, y, _ = _data(FRACTIONAL)
    predictions = cross_validated_predictions(X, y, n_folds=3, rng=0)
    assert predictions.shape == y.shape


def test_cv_argument_errors():
    X, y, _ = _data(BINARY)
    with pytest.raises(ValueError, match="`n_folds` must be an integer between 2 and n=200"):
        cross_validated_predictions(X, y, n_folds=1)
    with pytest.raises(ValueError, match="`l2` must be a finite number >= 0"):
        cross_validated_predictions(X, y, l2=np.inf)
    with pytest.raises(ValueError, match="`y`: training fold .* holds only class"):
        cross_validated_predictions(X[:6], [1, 0, 0, 0, 0, 0], n_folds=6)


def test_cross_validation_through_the_origin_is_frame_equivariant():
    """Without an intercept, turning pairs around (x -> -x, y -> 1 - y) turns every
    out-of-fold prediction around: p -> 1 - p, whatever the folds."""
    rng = np.random.default_rng(4)
    X = rng.normal(size=(60, 2))
    y = (rng.random(60) < 1 / (1 + np.exp(-X @ [1.0, -0.5]))).astype(float)
    turned = rng.random(60) < 0.5
    sign = np.where(turned, -1.0, 1.0)[:, None]
    p = cross_validated_predictions(X, y, n_folds=4, rng=0, fit_intercept=False,
                                    stratify=False)
    q = cross_validated_predictions(X * sign, np.where(turned, 1 - y, y), n_folds=4, rng=0,
                                    fit_intercept=False, stratify=False)
    np.testing.assert_allclose(np.where(turned, 1 - q, q), p, atol=1e-8)
