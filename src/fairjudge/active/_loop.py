"""The budgeted active top-k loop [bias-aware-active-topk §4, Algorithm 1]."""

from __future__ import annotations

from collections.abc import Mapping
from dataclasses import dataclass
from typing import Callable

import numpy as np
import pandas as pd

from fairjudge._util._warnings import FairjudgeInputError
from fairjudge.active._ranker import ActiveTopK, JudgeSpec
from fairjudge.data._pools import true_topk
from fairjudge.data._schema import Outcome
from fairjudge.models._bt import BTFit


class MatrixOracle:
    """Replays a recorded verdict matrix (``M[i, j]``: credit to ``i`` shown before ``j``).

    Ordered pairs that were not recorded (NaN) are never shown; an unordered pair with only
    one recorded order is always shown in that order.
    """

    def __init__(self, matrix):
        matrix = np.asarray(matrix, dtype=float)
        if matrix.ndim != 2 or matrix.shape[0] != matrix.shape[1]:
            raise FairjudgeInputError(f"a verdict matrix must be square; got shape {matrix.shape}")
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
    """Top-k recall of ``selected`` (item indices) given the true quality, shape (N,).

    Without ties ``|selected ∩ T| / k``; when qualities tie at the k-th largest, against the
    best-matching true top-k (:func:`fairjudge.data.true_topk`): the tied items fill only
    the places left by the items above them.
    """
    return true_topk(true_quality, k).recall(selected)


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
        Recall of a fresh fit at each checkpoint budget (and the final budget): calls, or
        money when the run had a ``max_cost``.
    notes : tuple of str
    history : pandas.DataFrame
        The verdicts as a verdict table (:meth:`ActiveTopK.history`).
    stopped : str
        ``budget`` (the calls were spent), ``money`` (no judge costs what is left of
        ``max_cost``) or ``exhausted`` (no pair was left to ask).
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
    history: pd.DataFrame | None = None
    stopped: str = "budget"


def run_active_topk(
    oracle: Callable[[int, int], Outcome] | Mapping,
    n_items: int,
    *,
    k: int,
    budget: int | None = None,
    judges=None,
    max_cost: float | None = None,
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

    The replay driver of :class:`ActiveTopK`: one proposal at a time, answered by
    ``oracle``. At each step the next unordered pair is the arg max of the acquisition
    score over the pairs not yet queried (or over all pairs with ``allow_repeats``); ties
    are broken at random. The pair is shown in a random order -- a hash of a seed drawn
    from ``rng``, the pair and its repeat count -- recorded with the verdict (this is what
    makes the position term identifiable). The posterior is refitted, warm-started, every
    ``refit_every`` acquisitions; between refits the choice uses the last posterior
    (checkpoints are evaluated by a separate fit that leaves the choices unchanged), and
    with ``allow_repeats`` the quality covariance is updated by the rank-one Fisher
    information of each new comparison (Sherman–Morrison) so that a batch does not pile
    onto one pair. Verdicts that are ``ABSTAIN`` or ``INVALID`` spend budget but carry no
    information.

    Parameters
    ----------
    oracle : callable ``(first, second) -> Outcome``, or a mapping of judge name to one
        Item indices in, verdict out: a :class:`MatrixOracle`, a
        :class:`fairjudge.data.SimulatedJudge`, or any function. If it has a
        ``recorded(first, second)`` method, only recorded orders are shown. A mapping is a
        panel of judges of different fidelity (multi-fidelity): the rule chooses the judge
        of each comparison by its score per unit cost (:class:`ActiveTopK`).
    n_items : int
    k : int
        Size of the wanted top set.
    budget : int, optional
        Number of judge calls ``B`` (required without ``max_cost``).
    judges : sequence of JudgeSpec, optional
        The panel's costs per call, one per key of ``oracle`` (default: cost 1 each).
    max_cost : float, optional
        A money budget: the run stops when no judge it may still ask costs what is left.
        Checkpoints are then amounts of money: ``recall_at[c]`` is the recall of the
        verdicts bought with at most ``c``.
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
    if not (isinstance(n_items, (int, np.integer)) and n_items >= 2):
        raise FairjudgeInputError(f"`n_items` must be an integer >= 2; got {n_items!r}")
    if budget is None and max_cost is None:
        raise FairjudgeInputError("give a budget in calls (`budget`) or in money (`max_cost`)")
    if budget is not None and not (isinstance(budget, (int, np.integer)) and budget >= 1):
        raise FairjudgeInputError(f"`budget` must be a positive integer; got {budget!r}")
    if max_cost is not None and not (np.isfinite(max_cost) and max_cost > 0):
        raise FairjudgeInputError(f"`max_cost` must be a positive number; got {max_cost!r}")
    oracles = dict(oracle) if isinstance(oracle, Mapping) else {"judge": oracle}
    specs = _panel(oracles, judges)
    for name, one in oracles.items():
        matrix = getattr(one, "matrix", None)
        if matrix is not None and np.shape(matrix) != (n_items, n_items):
            raise FairjudgeInputError(
                f"the verdict matrix of oracle {name!r} has shape {np.shape(matrix)}; "
                f"expected ({n_items}, {n_items}) for n_items={n_items}")
    if true_quality is not None:
        true_quality = np.asarray(true_quality, dtype=float)
        if true_quality.shape != (n_items,):
            raise FairjudgeInputError(f"`true_quality` must have shape ({n_items},); got "
                                      f"{true_quality.shape}")
    askable = {name: a for name, one in oracles.items()
               if (a := oracle_askable(one, n_items)) is not None}
    ranker = ActiveTopK(tuple(str(i) for i in (item_ids if item_ids is not None
                                               else range(n_items))),
                        k=k, covariates=covariates, covariate_names=covariate_names,
                        judges=specs, rule=rule,
                        model=model, refit_every=refit_every, allow_repeats=allow_repeats,
                        askable=askable, n_samples=n_samples, prior_precision=prior_precision,
                        bias_prior_precision=bias_prior_precision, rng=rng)
    if max_cost is None:
        checkpoints = sorted({int(c) for c in checkpoints if 1 <= int(c) <= budget} | {budget})
    else:
        checkpoints = sorted({float(c) for c in checkpoints if 0 < float(c) <= max_cost}
                             | {float(max_cost)})
    recall, recall_at, notes = [], {}, []
    last_recall, fitted = np.nan, None
    step, stopped = 0, "budget"
    while budget is None or step < budget:
        money = None if max_cost is None else max(max_cost - ranker.spent, 0.0)
        proposals = ranker.propose(1, money=money)
        if not proposals:
            stopped = "exhausted" if ranker.exhausted else "money"
            notes.append(f"stopped after {step} comparisons: " + (
                "every available pair was queried" if ranker.exhausted else
                f"the money is spent ({money:.4g} of {max_cost:.4g} left, less than any "
                "judge it may still ask costs)"))
            break
        (proposal,) = proposals
        step += 1
        if max_cost is not None and true_quality is not None:
            # Money checkpoints this call would overshoot: record them on what is bought.
            for c in checkpoints:
                if c not in recall_at and ranker.spent + proposal.cost > c + 1e-12:
                    checkpoint_fit = ranker.fit_now()
                    recall_at[c] = (np.nan if checkpoint_fit is None else
                                    topk_recall(checkpoint_fit.topk(k), true_quality, k))
        answer = oracles[proposal.judge](proposal.first, proposal.second)
        ranker.update([(proposal, Outcome(answer))])
        if true_quality is not None and ranker.posterior_is_fresh and \
                ranker.current_fit is not None and ranker.current_fit is not fitted:
            fitted = ranker.current_fit
            last_recall = topk_recall(fitted.topk(k), true_quality, k)
        if max_cost is None and step in checkpoints and true_quality is not None:
            # Evaluate on exactly `step` verdicts without touching the posterior that picks
            # the next pairs, so recording a budget never changes the acquisition path.
            checkpoint_fit = ranker.fit_now()
            recall_at[step] = (np.nan if checkpoint_fit is None
                               else topk_recall(checkpoint_fit.topk(k), true_quality, k))
        recall.append(last_recall)
    final = ranker.posterior()
    if final.fit is None:
        raise FairjudgeInputError("no usable verdict was collected (all abstentions or invalid)")
    if true_quality is not None:
        for c in (checkpoints if max_cost is not None else [ranker.n_verdicts]):
            recall_at.setdefault(c, topk_recall(final.topk, true_quality, k))
    history = ranker.history()
    return ActiveResult(
        item_ids=ranker.item_ids,
        k=int(k),
        rule=rule,
        model=model,
        shown=ranker.shown(),
        outcomes=tuple(ranker.outcomes),
        acquisition_score=history["acquisition_score"].to_numpy(dtype=float),
        fit_size=history["fit_size"].to_numpy(dtype=np.int64),
        recall=np.array(recall),
        fit=final.fit,
        membership=final.membership,
        topk=final.topk,
        recall_at=recall_at,
        notes=tuple(notes),
        history=history,
        stopped=stopped,
    )


def _panel(oracles: dict, judges) -> list:
    """The judges of a replay, one per oracle, with their costs."""
    if judges is None:
        return [JudgeSpec(str(name)) for name in oracles]
    specs = [j if isinstance(j, JudgeSpec) else JudgeSpec(str(j)) for j in judges]
    if sorted(j.name for j in specs) != sorted(str(name) for name in oracles):
        raise FairjudgeInputError(
            f"`judges` ({', '.join(j.name for j in specs)}) must name the oracles "
            f"({', '.join(map(str, oracles))}) one to one")
    return specs


def oracle_askable(oracle, n_items: int) -> np.ndarray | None:
    """Which ordered pairs an oracle can answer (None: all). A :class:`MatrixOracle` (or any
    oracle with a ``matrix``) answers its finite cells; one with ``recorded(first, second)``
    answers where that is true."""
    recorded = getattr(oracle, "recorded", None)
    if recorded is None:
        return None
    matrix = getattr(oracle, "matrix", None)
    if matrix is not None:
        return np.isfinite(np.asarray(matrix, dtype=float))
    return np.array([[i != j and recorded(i, j) for j in range(n_items)]
                     for i in range(n_items)])
