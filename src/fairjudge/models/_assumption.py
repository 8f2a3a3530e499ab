"""Does the data contradict the bias-aware model's identifying assumption? [bias-aware-
active-topk §5 Assumption 1, §6 "Limitations"; the multi-fidelity issue §2 "Honest
defaults"]

Without human labels, a judge's coefficient c on an *item* covariate is identified only by
the prior theta ~ N(0, 1/lambda): the model assumes quality is uncorrelated with the
covariate, and when better answers are also longer the correction removes real quality.
Verdicts cannot test the assumption, but three signs say the correction rests on it
rather than on the data:

``explained_share``
    Of what item quality explains of the verdicts beyond each judge's position term
    (log-likelihood gain of the Bradley–Terry fit with position over position alone), the
    share the covariates explain instead, per judge, with no item quality. Near 1 or
    above, quality and covariate are confounded: the split between them is the prior's.
    Above :data:`CONFOUNDED_SHARE` the check reports it.
``kendall_tau``
    Rank agreement of the corrected scores with those of the same model without the item
    covariates. Below :data:`MOVED_TAU`
    the correction reorders the items wholesale.
``widest_interval``
    The widest 95% interval half-width of an item-covariate coefficient, in logits per
    standard deviation of the covariate. Above :data:`WIDE_HALF_WIDTH` the data do not pin
    the correction down.

The thresholds were set a priori (0.5 for the share was raised to 0.8, the issue's "about
as well", before any recorded data was scored); that tau alone counts as a sign was
decided after a reviewer showed that the other two never fire on PRD, where the
correction hurts.
"""

from __future__ import annotations

from dataclasses import dataclass

import numpy as np
import pandas as pd
from scipy import special, stats

from fairjudge.data._encode import Comparisons
from fairjudge.models._bt import POSITION, BTFit
from fairjudge.models._engine import aggregate_pairs

#: Share of what quality explains that the covariates alone explain, past which they explain
#: the verdicts "about as well" as quality does.
CONFOUNDED_SHARE = 0.8
#: Kendall's tau between naive and corrected scores below which the ranking "moved a lot".
MOVED_TAU = 0.7
#: 95% half-width (logits per covariate s.d.) of a coefficient called wide: answers one s.d.
#: apart then have a correction uncertain by more than a factor e in odds either way.
WIDE_HALF_WIDTH = 1.0


@dataclass(frozen=True)
class AssumptionCheck:
    """Signs that a correction rests on the independence assumption (module docstring).

    Attributes
    ----------
    covariates : tuple of str
        The item covariates the assumption concerns.
    explained_share, kendall_tau, widest_interval : float
    reasons : tuple of str
        One sentence per sign past its threshold; empty when none is.
    """

    covariates: tuple
    explained_share: float
    kendall_tau: float
    widest_interval: float
    reasons: tuple

    def as_dict(self) -> dict:
        return {"covariates": list(self.covariates), "explained_share": self.explained_share,
                "kendall_tau": self.kendall_tau, "widest_interval": self.widest_interval,
                "reasons": list(self.reasons)}


def check_independence_assumption(comparisons: Comparisons, x_std: np.ndarray, names,
                                  uncorrected: BTFit, corrected: BTFit) -> AssumptionCheck:
    """The three signs for a bias-aware fit with item covariates ``x_std`` (standardised,
    shape (N, d), d >= 1). ``uncorrected`` is the same model without item covariates, fitted
    to ``comparisons.without_covariates()`` (position terms if ``corrected`` has them)."""
    pairs = aggregate_pairs(comparisons.without_covariates())
    n_judges = comparisons.n_judges
    position = any(b.name == POSITION for b in corrected.bias)
    kappa = np.zeros(n_judges)
    if position:
        kappa = np.array([uncorrected.bias_estimate(POSITION, j).estimate
                          for j in comparisons.judges])
    # Both regressions below give each judge terms of its own, so they split into one small
    # regression per judge -- exactly the joint fit.
    base = covariates = 0.0
    for rows in pairs.judge_slices():
        if rows.start == rows.stop:
            continue
        dx, n, wins = _group_equal_rows(x_std[pairs.first[rows]] - x_std[pairs.second[rows]],
                                        pairs.n[rows], pairs.wins[rows])
        if position:
            base += _best_log_likelihood(np.ones((1, 1)), n.sum(keepdims=True),
                                         wins.sum(keepdims=True))
            dx = np.column_stack([np.ones(n.size), dx])
        else:
            base += _log_likelihood(np.zeros(n.size), n, wins)
        covariates += _best_log_likelihood(dx, n, wins)
    quality = _log_likelihood(uncorrected.scores[pairs.first] - uncorrected.scores[pairs.second]
                              + kappa[pairs.judge], pairs.n, pairs.wins) - base
    covariates -= base
    share = float(covariates / quality) if quality > 0 else float("nan")
    tau = float(stats.kendalltau(uncorrected.scores, corrected.scores).statistic)
    z = float(special.ndtri(0.975))
    widest = max((z * b.std_error * scale for b in corrected.bias
                  for name, scale in zip(corrected.covariate_names, corrected.covariate_scale)
                  if b.name == name and name in names), default=0.0)
    reasons = []
    if share > CONFOUNDED_SHARE:
        reasons.append(f"the covariates alone explain {share:.0%} of what item quality "
                       "explains of the verdicts: quality and covariate are confounded")
    if widest > WIDE_HALF_WIDTH:
        reasons.append(f"a covariate's coefficient is known to +/- {widest:.2f} logits per "
                       "standard deviation")
    if tau < MOVED_TAU:
        reasons.append(f"the correction reorders the ranking (Kendall's tau {tau:.2f} with "
                       "the scores without it), which correcting a large real bias does and "
                       "so does removing real quality; only human labels tell them apart")
    return AssumptionCheck(tuple(names), share, tau, float(widest), tuple(reasons))


def _log_likelihood(eta: np.ndarray, n: np.ndarray, wins: np.ndarray) -> float:
    """Binomial log-likelihood (up to a constant) of ``wins`` of ``n`` at log-odds ``eta``
    (all of shape (G,))."""
    return float(np.sum(wins * eta - n * np.logaddexp(0.0, eta)))


def _best_log_likelihood(design: np.ndarray, n: np.ndarray, wins: np.ndarray) -> float:
    """Log-likelihood of the best logistic fit of ``design`` (shape (G, p), p >= 1) to
    ``wins`` of ``n`` (a ridge of 1e-6 keeps a column without variation finite)."""
    from fairjudge.stats._logistic import logistic_regression

    fit = logistic_regression(design, wins / n, weights=n, l2=1e-6, fit_intercept=False)
    return _log_likelihood(design @ fit.coef, n, wins)


def _group_equal_rows(dx: np.ndarray, n: np.ndarray, wins: np.ndarray
                      ) -> tuple[np.ndarray, np.ndarray, np.ndarray]:
    """Rows of ``dx`` (shape (P, d)) that are equal, merged: ``(distinct rows, total n,
    total wins)``. Exact for a log-likelihood whose log-odds depend on a row only through
    ``dx``; item covariates such as lengths leave a few thousand distinct differences of
    millions of pairs."""
    code = np.zeros(dx.shape[0], dtype=np.int64)
    for column in dx.T:
        column_code, values = pd.factorize(column)
        code, _ = pd.factorize(code * len(values) + column_code)
    distinct = np.zeros((int(code.max(initial=-1)) + 1, dx.shape[1]))
    distinct[code] = dx
    return (distinct, np.bincount(code, weights=n, minlength=distinct.shape[0]),
            np.bincount(code, weights=wins, minlength=distinct.shape[0]))
