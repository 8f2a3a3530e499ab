"""A joint Bradley–Terry model with a reliability per judge [the multi-judge issue §2;
Dawid–Skene-style crowd models, crowd-kit's NoisyBT].

Model: judge j prefers contestant a over b with probability

    sigma(tau_j (theta_a - theta_b) + kappa_j + s_j (self_a - self_b)),

tau_j = exp(u_j) the judge's reliability (a temperature on the quality difference: a
judge with small tau_j decides nearly at random and so counts less), kappa_j its
first-slot lean, s_j its self-preference. Priors: theta ~ N(0, 1/lambda) (lambda = 1, as
the bias-aware model), u ~ N(0, 1) with sum(u) = 0 (the reliabilities' geometric mean is
1, which fixes the scale theta and tau would otherwise trade), kappa and s ~ N(0, 10).
The posterior mode is found by L-BFGS with the analytic gradient; intervals come from the
Laplace approximation (the inverse Hessian, by central differences of the gradient).
Ties (y = 0.5) enter as fractional responses.
"""

from __future__ import annotations

from dataclasses import dataclass

import numpy as np
import pandas as pd
from scipy import optimize, special, stats

from fairjudge._util._warnings import FairjudgeInputError


@dataclass(frozen=True)
class ReliabilityFit:
    """Posterior mode and Laplace covariance of the reliability model.

    Attributes
    ----------
    contestants, judges : list of str
    theta : numpy.ndarray, shape (C,)
        Quality (logits, sum-to-zero not imposed: the prior fixes the origin).
    tau, kappa, self_preference : numpy.ndarray, shape (J,)
    covariance : numpy.ndarray, shape (C + 3J - 1, C + 3J - 1)
        Over (theta, u_1..u_{J-1}, kappa, s).
    """

    contestants: list
    judges: list
    theta: np.ndarray
    tau: np.ndarray
    kappa: np.ndarray
    self_preference: np.ndarray
    covariance: np.ndarray
    converged: bool

    def scores(self, level: float = 0.95, anchor: str | None = None) -> pd.DataFrame:
        """Elo-scale scores (``1000 + 400/ln 10 (theta - reference)``, the reference the
        mean contestant or ``anchor``) with Laplace intervals of the difference from it."""
        from fairjudge.consensus._panel import ELO_SCALE, reference_contrast

        z = float(stats.norm.ppf(0.5 + level / 2))
        contrast = reference_contrast(len(self.contestants), None if anchor is None
                                      else self.contestants.index(anchor))
        c = len(self.contestants)
        estimate = contrast @ self.theta
        cov = contrast @ self.covariance[:c, :c] @ contrast.T
        se = np.sqrt(np.maximum(np.diag(cov), 0.0))
        return pd.DataFrame({"estimate": 1000 + ELO_SCALE * estimate,
                             "ci_low": 1000 + ELO_SCALE * (estimate - z * se),
                             "ci_high": 1000 + ELO_SCALE * (estimate + z * se)},
                            index=pd.Index(self.contestants, name="contestant"))

    def judge_terms(self, level: float = 0.95) -> pd.DataFrame:
        """Per judge: reliability tau (interval from u's, exponentiated) and
        self-preference s, each ``estimate``, ``ci_low``, ``ci_high``."""
        c, j = len(self.contestants), len(self.judges)
        z = float(stats.norm.ppf(0.5 + level / 2))
        # u_J = -sum(u_1..u_{J-1}): its variance from the free ones.
        free = self.covariance[c:c + j - 1, c:c + j - 1]
        jac = np.vstack([np.eye(j - 1), -np.ones((1, j - 1))]) if j > 1 else np.zeros((1, 0))
        u_se = np.sqrt(np.maximum(np.diag(jac @ free @ jac.T), 0.0)) if j > 1 else \
            np.zeros(1)
        s_se = np.sqrt(np.maximum(np.diag(self.covariance)[c + 2 * j - 1:], 0.0))
        u = np.log(self.tau)
        return pd.DataFrame({
            "tau_estimate": self.tau, "tau_ci_low": np.exp(u - z * u_se),
            "tau_ci_high": np.exp(u + z * u_se),
            "self_estimate": self.self_preference,
            "self_ci_low": self.self_preference - z * s_se,
            "self_ci_high": self.self_preference + z * s_se},
            index=pd.Index(self.judges, name="judge"))


def reliability_bt(table: pd.DataFrame, *, covariate: str = "self",
                   prior_precision: float = 1.0) -> ReliabilityFit:
    """Fit the reliability model to contestant-level verdicts
    (:func:`~fairjudge.consensus.contestant_verdicts`: ``item_a``, ``item_b``, ``winner``
    in a/b/tie, ``judge``, ``<covariate>_a``/``_b``).

    Raises
    ------
    FairjudgeInputError
        Without decisive verdicts.
    """
    rows = table[table["winner"].isin(["a", "b", "tie"])]
    if rows.empty:
        raise FairjudgeInputError("no verdict names a winner or a tie")
    contestants = sorted(set(rows["item_a"]) | set(rows["item_b"]))
    judges = sorted(rows["judge"].astype(str).unique())
    index = {c: i for i, c in enumerate(contestants)}
    a = rows["item_a"].map(index).to_numpy()
    b = rows["item_b"].map(index).to_numpy()
    j = rows["judge"].astype(str).map({g: i for i, g in enumerate(judges)}).to_numpy()
    y = np.where(rows["winner"] == "a", 1.0, np.where(rows["winner"] == "b", 0.0, 0.5))
    x = (rows[f"{covariate}_a"].to_numpy(float) - rows[f"{covariate}_b"].to_numpy(float))
    n_c, n_j = len(contestants), len(judges)
    bias_precision = 0.1

    def unpack(params):
        theta = params[:n_c]
        u_free = params[n_c:n_c + n_j - 1]
        u = np.append(u_free, -u_free.sum())
        kappa = params[n_c + n_j - 1:n_c + 2 * n_j - 1]
        s = params[n_c + 2 * n_j - 1:]
        return theta, u, kappa, s

    def objective(params):
        theta, u, kappa, s = unpack(params)
        tau = np.exp(u)
        d = theta[a] - theta[b]
        eta = tau[j] * d + kappa[j] + s[j] * x
        r = special.expit(eta) - y
        value = (np.sum(np.logaddexp(0.0, eta) - y * eta)
                 + 0.5 * prior_precision * theta @ theta + 0.5 * u @ u
                 + 0.5 * bias_precision * (kappa @ kappa + s @ s))
        g_theta = (np.bincount(a, r * tau[j], n_c) - np.bincount(b, r * tau[j], n_c)
                   + prior_precision * theta)
        g_u = np.bincount(j, r * tau[j] * d, n_j) + u
        g_u_free = g_u[:-1] - g_u[-1]  # u_J = -sum(free)
        g_kappa = np.bincount(j, r, n_j) + bias_precision * kappa
        g_s = np.bincount(j, r * x, n_j) + bias_precision * s
        return value, np.concatenate([g_theta, g_u_free, g_kappa, g_s])

    size = n_c + 3 * n_j - 1
    result = optimize.minimize(objective, np.zeros(size), jac=True, method="L-BFGS-B",
                               options={"maxiter": 5000, "gtol": 1e-8, "ftol": 1e-15})
    mode = result.x
    step = 1e-5
    hessian = np.empty((size, size))
    for k in range(size):
        shift = np.zeros(size)
        shift[k] = step
        hessian[k] = (objective(mode + shift)[1] - objective(mode - shift)[1]) / (2 * step)
    hessian = (hessian + hessian.T) / 2
    theta, u, kappa, s = unpack(mode)
    return ReliabilityFit(contestants, judges, theta, np.exp(u), kappa, s,
                          np.linalg.inv(hessian), bool(result.success))
