"""The budgeted active top-k loop [bias-aware-active-topk §4, Algorithm 1]."""

from __future__ import annotations

from dataclasses import dataclass
from typing import Callable

import numpy as np

from fairjudge._util._rng import as_generator, content_seed
from fairjudge._util._threads import single_threaded_blas
from fairjudge.active._scores import RULES, SCORED_RULES, pair_scores, round_robin_schedule
from fairjudge.data._encode import Comparisons
from fairjudge.data._schema import Outcome
from fairjudge.models._bt import BTFit
from fairjudge.models._dispatch import MODELS, fit_model
from fairjudge.models._membership import topk_membership


class MatrixOracle:
    """Replays a recorded verdict matrix (``M[i, j]``: credit to ``i`` shown before ``j``).

    Ordered pairs that were not recorded (NaN) are never shown; an unordered pair with only
    one recorded order is always shown in that order.
    """

    def __init__(self, matrix):
        matrix = np.asarray(matrix, dtype=float)
        if matrix.ndim != 2 or matrix.shape[0] != matrix.shape[1]:
            raise ValueError(f"a verdict matrix must be square; got shape {matrix.shape}")
        self.matrix = matrix

    def recorded(self, first: int, second: int) -> bool:
        return bool(np.isfinite(self.matrix[first, second]))

    def __call__(self, first: int, second: int) -> Outcome:
        value = self.matrix[first, second]
        if value == 1.0:
            return Outcome.A
        if value == 0.0:
            return Outcome.B
        if value == 0.5:
            return Outcome.TIE
        raise KeyError(f"no verdict recorded for item {first} shown before item {second}")


def topk_recall(selected, true_quality, k: int) -> float:
    """``|selected ∩ T| / k`` where ``T`` holds the items whose true quality is at least the
    k-th largest (items tied at the boundary all count as correct)."""
    quality = np.asarray(true_quality, dtype=float)
    threshold = np.sort(quality)[::-1][k - 1]
    truth = quality >= threshold
    return float(truth[np.asarray(selected)].sum()) / k


@dataclass(frozen=True)
class ActiveResult:
    """Outcome of :func:`run_active_topk`.

    Attributes
    ----------
    item_ids : tuple of str
    k, rule, model : int, str, str
    shown : ndarray of int, shape (B, 2)
        Each queried pair as shown: ``[first, second]``.
    outcomes : tuple of Outcome, length B
    acquisition_score : ndarray, shape (B,)
        Score of the chosen pair (NaN for ``random`` and ``round-robin``).
    fit_size : ndarray of int, shape (B,)
        Number of verdicts in the posterior that chose each pair.
    recall : ndarray, shape (B,)
        Top-k recall of the latest fit after each step (NaN without ground truth).
    fit : BTFit
        Final posterior, fitted on every verdict.
    membership : ndarray, shape (N,)
        Final top-k membership probabilities.
    topk : ndarray of int, shape (k,)
        Final point estimate of the top-k, best first.
    recall_at : dict
        Recall of a fresh fit at each checkpoint budget (and the final budget).
    notes : tuple of str
    """

    item_ids: tuple
    k: int
    rule: str
    model: str
    shown: np.ndarray
    outcomes: tuple
    acquisition_score: np.ndarray
    fit_size: np.ndarray
    recall: np.ndarray
    fit: BTFit
    membership: np.ndarray
    topk: np.ndarray
    recall_at: dict
    notes: tuple


def run_active_topk(
    oracle: Callable[[int, int], Outcome],
    n_items: int,
    *,
    k: int,
    budget: int,
    covariates=None,
    covariate_names=None,
    rule: str = "topk",
    model: str = "bias-aware",
    refit_every: int = 8,
    allow_repeats: bool = False,
    n_samples: int = 1500,
    prior_precision: float = 1.0,
    bias_prior_precision: float = 0.1,
    true_quality=None,
    checkpoints=(),
    item_ids=None,
    rng=None,
) -> ActiveResult:
    """Spend a comparison budget to identify the top-k items [bias-aware-active-topk Alg. 1].

    At each step the next unordered pair is the arg max of the acquisition score over the
    pairs not yet queried (or over all pairs with ``allow_repeats``); ties are broken at
    random. The pair is shown in a random order -- a hash of a seed drawn from ``rng``, the
    pair and its repeat count -- recorded with the verdict (this is what makes the position
    term identifiable). The posterior is refitted, warm-started,
    every ``refit_every`` acquisitions and at each checkpoint; between refits the choice uses
    the last posterior (checkpoints are evaluated by a separate fit that leaves the choices
    unchanged), and with ``allow_repeats`` the quality covariance is updated by the
    rank-one Fisher information of each new comparison (Sherman–Morrison) so that a batch
    does not pile onto one pair. Verdicts that are ``ABSTAIN`` or ``INVALID`` spend budget
    but carry no information.

    Parameters
    ----------
    oracle : callable ``(first, second) -> Outcome``
        Item indices in, verdict out: a :class:`MatrixOracle`, a
        :class:`fairjudge.data.SimulatedJudge`, or any function. If it has a
        ``recorded(first, second)`` method, only recorded orders are shown.
    n_items : int
    k : int
        Size of the wanted top set.
    budget : int
        Number of judge calls ``B``.
    covariates : array_like, shape (N, d), optional
        Item covariates for the bias-aware models.
    rule : str
        One of ``RULES``: ``topk``, ``global``, ``entropy``, ``topk-no-variance``,
        ``topk-no-informativeness``, ``random``, ``round-robin``.
    model : str
        One of :data:`fairjudge.models.MODELS`. For ``"residualized"`` the naive posterior
        chooses the pairs and the covariates are removed from the final scores only (the
        residualize-then-acquire baseline of §6).
    refit_every : int
        ``r`` (paper: 8).
    true_quality : array_like, shape (N,), optional
        Ground truth, for the per-step recall.
    checkpoints : iterable of int
        Budgets at which to refit and record ``recall_at``.
    rng : seed or numpy.random.Generator

    Returns
    -------
    ActiveResult
    """
    settings = dict(k=k, budget=budget, covariates=covariates, covariate_names=covariate_names,
                    rule=rule, model=model, refit_every=refit_every, allow_repeats=allow_repeats,
                    n_samples=n_samples, prior_precision=prior_precision,
                    bias_prior_precision=bias_prior_precision, true_quality=true_quality,
                    checkpoints=checkpoints, item_ids=item_ids, rng=rng)
    if isinstance(n_items, (int, np.integer)) and n_items <= SMALL_PROBLEM:
        with single_threaded_blas():
            return _run_active_topk(oracle, n_items, **settings)
    return _run_active_topk(oracle, n_items, **settings)


# Below this pool size every matrix is small enough that BLAS threads only add overhead.
SMALL_PROBLEM = 400


def _run_active_topk(oracle, n_items, *, k, budget, covariates, covariate_names, rule, model,
                     refit_every, allow_repeats, n_samples, prior_precision,
                     bias_prior_precision, true_quality, checkpoints, item_ids, rng):
    if rule not in RULES:
        raise ValueError(f"`rule` must be one of {', '.join(RULES)}; got {rule!r}")
    if model not in MODELS:
        raise ValueError(f"`model` must be one of {', '.join(MODELS)}; got {model!r}")
    if not (isinstance(n_items, (int, np.integer)) and n_items >= 2):
        raise ValueError(f"`n_items` must be an integer >= 2; got {n_items!r}")
    if not (isinstance(k, (int, np.integer)) and 1 <= k < n_items):
        raise ValueError(f"`k` must be an integer between 1 and n_items-1={n_items - 1}; got {k!r}")
    if not (isinstance(budget, (int, np.integer)) and budget >= 1):
        raise ValueError(f"`budget` must be a positive integer; got {budget!r}")
    if not (isinstance(refit_every, (int, np.integer)) and refit_every >= 1):
        raise ValueError(f"`refit_every` must be a positive integer; got {refit_every!r}")
    if not (isinstance(n_samples, (int, np.integer)) and n_samples >= 1):
        raise ValueError(f"`n_samples` must be a positive integer; got {n_samples!r}")
    for name, value in (("prior_precision", prior_precision),
                        ("bias_prior_precision", bias_prior_precision)):
        if not (np.isfinite(value) and value > 0):
            raise ValueError(f"`{name}` must be positive; got {value!r}")
    if covariates is not None:
        shape = np.shape(covariates)
        if len(shape) not in (1, 2) or shape[0] != n_items:
            raise ValueError(f"`covariates` must have shape (n_items={n_items}, d); got {shape}")
    matrix = getattr(oracle, "matrix", None)
    if matrix is not None and np.shape(matrix) != (n_items, n_items):
        raise ValueError(f"the oracle's verdict matrix has shape {np.shape(matrix)}; expected "
                         f"({n_items}, {n_items}) for n_items={n_items}")
    if true_quality is not None:
        true_quality = np.asarray(true_quality, dtype=float)
        if true_quality.shape != (n_items,):
            raise ValueError(f"`true_quality` must have shape ({n_items},); got "
                             f"{true_quality.shape}")
    rng = as_generator(rng)
    # Presentation orders come from a hash of (run seed, pair, repeat), drawn before anything
    # else: the same pair is shown in the same order whatever the rule, which keeps paired
    # comparisons of rules on one oracle free of order noise.
    order_seed = int(rng.integers(2**62))
    times_shown: dict[tuple, int] = {}
    item_ids = tuple(str(i) for i in (item_ids if item_ids is not None else range(n_items)))
    checkpoints = sorted({int(c) for c in checkpoints if 1 <= int(c) <= budget} | {budget})

    recorded = getattr(oracle, "recorded", None)
    available = np.ones((n_items, n_items), dtype=bool)
    if recorded is not None:
        if matrix is not None:
            rec = np.isfinite(np.asarray(matrix, dtype=float))
        else:
            rec = np.array([[i != j and recorded(i, j) for j in range(n_items)]
                            for i in range(n_items)])
        available = rec | rec.T
    np.fill_diagonal(available, False)
    available = np.triu(available)
    unqueried = available.copy()
    schedule = round_robin_schedule(n_items, rng) if rule == "round-robin" else None
    schedule_pos = 0

    acquisition_model = "naive" if model == "residualized" else model
    first_l, second_l, outcomes, scores_l, fit_size, recall = [], [], [], [], [], []
    fit = None
    acq_fit = None
    post_scores = np.zeros(n_items)
    post_cov = np.eye(n_items) / prior_precision
    membership = np.full(n_items, k / n_items)
    recall_at: dict[int, float] = {}
    last_recall = np.nan
    notes = []

    def comparisons_so_far() -> Comparisons:
        return Comparisons.from_outcomes(first_l, second_l, outcomes, item_ids=item_ids)

    fitted_upto = -1

    def refit():
        nonlocal acq_fit, fit, post_scores, post_cov, membership, fitted_upto
        fitted_upto = len(outcomes)
        data = comparisons_so_far()
        if len(data) == 0:
            return None
        acq_fit = fit_model(acquisition_model, data, covariates, covariate_names=covariate_names,
                            prior_precision=prior_precision,
                            bias_prior_precision=bias_prior_precision,
                            init=None if acq_fit is None else acq_fit.params, check_graph=False)
        post_scores, post_cov = acq_fit.scores, acq_fit.covariance.copy()
        membership = topk_membership(post_scores, post_cov, k, n_samples=n_samples, rng=rng)
        if model == acquisition_model:
            fit = acq_fit
        else:
            fit = fit_model(model, data, covariates, covariate_names=covariate_names,
                            prior_precision=prior_precision, check_graph=False)
        return fit

    for step in range(1, budget + 1):
        candidates = available if allow_repeats else unqueried
        if not candidates.any():
            notes.append(f"stopped after {step - 1} comparisons: every available pair was queried")
            break
        chosen_score = np.nan
        if rule == "random":
            options = np.argwhere(candidates)
            i, j = options[rng.integers(len(options))]
        elif rule == "round-robin":
            while True:
                if schedule_pos >= len(schedule):
                    schedule_pos = 0  # start another round robin (only with repeats)
                i, j = schedule[schedule_pos]
                schedule_pos += 1
                if candidates[i, j]:
                    break
        else:
            s = pair_scores(rule, post_scores, post_cov, membership)
            s = np.where(candidates, s, -np.inf)
            best = s.max()
            options = np.argwhere(s >= best - 1e-12 * max(abs(best), 1e-300))
            i, j = options[rng.integers(len(options))]
            chosen_score = float(best)
        i, j = int(i), int(j)
        repeat = times_shown.get((i, j), 0)
        times_shown[(i, j)] = repeat + 1
        first, second = (i, j) if content_seed(order_seed, i, j, repeat) % 2 == 0 else (j, i)
        if recorded is not None and not recorded(first, second):
            first, second = second, first
        outcome = Outcome(oracle(first, second))
        first_l.append(first)
        second_l.append(second)
        outcomes.append(outcome)
        scores_l.append(chosen_score)
        fit_size.append(0 if acq_fit is None else int(round(acq_fit.n_comparisons)))
        unqueried[i, j] = False
        if allow_repeats and rule in SCORED_RULES and np.isfinite(outcome.first_score):
            # Sherman–Morrison: add the Fisher information w u u' of the new comparison.
            u = np.zeros(n_items)
            u[i], u[j] = 1.0, -1.0
            pij = 1.0 / (1.0 + np.exp(-(post_scores[i] - post_scores[j])))
            su = post_cov @ u
            post_cov = post_cov - np.outer(su, su) * (pij * (1 - pij)) / (
                1.0 + pij * (1 - pij) * (u @ su))
        if step % refit_every == 0:
            if refit() is not None and true_quality is not None:
                last_recall = topk_recall(fit.topk(k), true_quality, k)
        if step in checkpoints and true_quality is not None:
            # Evaluate on exactly `step` verdicts without touching the posterior that picks
            # the next pairs, so recording a budget never changes the acquisition path.
            if fitted_upto != len(outcomes):
                data = comparisons_so_far()
                checkpoint_fit = None if len(data) == 0 else fit_model(
                    model, data, covariates, covariate_names=covariate_names,
                    prior_precision=prior_precision,
                    bias_prior_precision=bias_prior_precision,
                    init=None if fit is None or model != acquisition_model else fit.params,
                    check_graph=False)
                recall_at[step] = (np.nan if checkpoint_fit is None
                                   else topk_recall(checkpoint_fit.topk(k), true_quality, k))
            else:
                recall_at[step] = last_recall
        recall.append(last_recall)
    if fit is None or fitted_upto != len(outcomes):
        if refit() is None:
            raise ValueError("no usable verdict was collected (all abstentions or invalid)")
        if true_quality is not None:
            recall_at[len(outcomes)] = topk_recall(fit.topk(k), true_quality, k)
    return ActiveResult(
        item_ids=item_ids,
        k=int(k),
        rule=rule,
        model=model,
        shown=np.column_stack([first_l, second_l]).astype(np.int64),
        outcomes=tuple(outcomes),
        acquisition_score=np.array(scores_l),
        fit_size=np.array(fit_size, dtype=np.int64),
        recall=np.array(recall),
        fit=fit,
        membership=membership if model == acquisition_model else fit.topk_membership(
            k, n_samples=n_samples, rng=rng),
        topk=fit.topk(k),
        recall_at=recall_at,
        notes=tuple(notes),
    )
