"""Active top-k ranking as an object with small verbs: ``propose``, ``update``, ``posterior``.

:class:`ActiveTopK` holds the state of the budgeted loop of [bias-aware-active-topk §4,
Algorithm 1]: the verdicts so far, the Laplace posterior of the (bias-aware) Bradley–Terry
model, the top-k membership probabilities and the acquisition rule. A replay against a
recorded matrix, the offline experiment and a live run against a judge backend are three
drivers of this one object (:func:`run_active_topk`, :func:`run_topk_experiment`,
:func:`run_live_topk`).
"""

from __future__ import annotations

from dataclasses import dataclass, field, replace
from typing import Sequence

import numpy as np
import pandas as pd

from fairjudge._util._rng import as_generator, content_seed
from fairjudge._util._threads import single_threaded_blas
from fairjudge._util._warnings import FairjudgeInputError
from fairjudge.active._scores import (
    INFORMATION_RULES,
    RULES,
    SCORED_RULES,
    binary_entropy,
    pair_scores,
    round_robin_schedule,
)
from fairjudge.data._encode import Comparisons
from fairjudge.data._schema import Outcome
from fairjudge.models._bt import BTFit
from fairjudge.models._dispatch import fit_model
from fairjudge.models._registry import model_spec

# Below this pool size every matrix is small enough that BLAS threads only add overhead.
SMALL_PROBLEM = 400
#: Pools above this many items score pairs only within the boundary set (N x N scoring and
#: bookkeeping would not fit: 80 GB per N x N array at 100,000 items).
BOUNDARY_MIN_ITEMS = 2000
#: Items in the boundary set (pairs scored per proposal: about half its square).
BOUNDARY_ITEMS = 200


@dataclass(frozen=True)
class JudgeSpec:
    """A judge the ranker may ask.

    Attributes
    ----------
    name : str
        The judge's name in verdict tables (it gets its own bias terms in the model).
    cost : float
        Cost of one call (dollars, or any unit shared by every judge). The ranker adds it up
        per verdict (:attr:`ActiveTopK.spent`, the ``cost`` column of ``history()``), so a
        driver can spend a money budget across judges of different prices.
    reliability : float
        A prior guess of the judge's reliability ``tau`` relative to the judge that will
        give most verdicts (usually the cheapest), used to value its verdicts until the
        ``"reliability"`` model estimates it from them (1: as reliable).
    """

    name: str
    cost: float = 1.0
    reliability: float = 1.0

    def __post_init__(self):
        if not isinstance(self.name, str) or not self.name:
            raise FairjudgeInputError(f"a judge needs a non-empty name; got {self.name!r}")
        if not (np.isfinite(self.cost) and self.cost >= 0):
            raise FairjudgeInputError(
                f"the cost of judge {self.name!r} must be a non-negative number; "
                f"got {self.cost!r}")
        if not (np.isfinite(self.reliability) and self.reliability > 0):
            raise FairjudgeInputError(
                f"the reliability of judge {self.name!r} must be a positive number; "
                f"got {self.reliability!r}")


@dataclass(frozen=True)
class Proposal:
    """A comparison to ask next, in the order to show it.

    Attributes
    ----------
    first, second : int
        Item indices: ``first`` is shown first.
    judge : str
        Which judge to ask.
    score : float
        Acquisition score of the pair (NaN for ``random`` and ``round-robin``).
    fit_size : int
        Verdicts behind the posterior that chose it.
    repeat : int
        How many times this pair was proposed to this judge before (0 the first time); a
        live run sends it as the request's ``sample`` so that a repeated comparison is a
        fresh call.
    cost : float
        The judge's cost per call (:attr:`JudgeSpec.cost`).
    value : float
        When the rule chose among several judges: the acquisition score per unit cost that
        won (``score / cost``); NaN when one judge was given or affordable.
    """

    first: int
    second: int
    judge: str
    score: float = float("nan")
    fit_size: int = 0
    repeat: int = 0
    cost: float = float("nan")
    value: float = float("nan")

    @property
    def pair(self) -> tuple[int, int]:
        """The unordered pair ``(min, max)``."""
        return (min(self.first, self.second), max(self.first, self.second))


@dataclass(frozen=True)
class Posterior:
    """The ranker's current belief.

    Attributes
    ----------
    fit : BTFit or None
        The last fit (None before any usable verdict).
    membership : ndarray, shape (N,)
        ``P(i in top-k)`` (``k / N`` for every item before any verdict).
    topk : ndarray of int, shape (k,)
        Point estimate of the top-k, best first (empty before any verdict).
    n_verdicts : int
        Usable verdicts behind the fit.
    """

    fit: BTFit | None
    membership: np.ndarray
    topk: np.ndarray
    n_verdicts: int


@dataclass
class _History:
    first: list = field(default_factory=list)
    second: list = field(default_factory=list)
    outcome: list = field(default_factory=list)
    judge: list = field(default_factory=list)
    score: list = field(default_factory=list)
    fit_size: list = field(default_factory=list)


class ActiveTopK:
    """Incremental, bias-aware active top-k selection [bias-aware-active-topk Alg. 1].

    ``propose(n)`` returns the next ``n`` comparisons (each unordered pair is scored by the
    acquisition rule under the current posterior; ties are broken at random; the pair is
    shown in an order drawn from a hash of a run seed, the pair and its repeat count, so the
    same pair is shown in the same order whatever the rule). ``update(verdicts)`` records
    verdicts of any judge, in any order shown, and refits the posterior (warm-started) once
    ``refit_every`` new verdicts have arrived. ``posterior()`` returns the current fit with
    top-k membership probabilities.

    A batch (``n > 1``) holds no pair twice and, between refits, each pick updates the
    posterior covariance by the Fisher information the pending comparison will bring
    (Sherman–Morrison; the outcome is not needed), so the batch spreads over the pairs in
    doubt instead of piling onto one. With ``n = 1`` the sequence of proposals is exactly
    that of the paper's one-at-a-time loop.

    **Several judges (multi-fidelity).** Given judges of different cost and fidelity,
    ``propose`` without ``judge=`` chooses the pair *and* the judge: the (pair, judge)
    with the largest acquisition score per unit cost, ``score_m(i, j) / cost_m``, where
    the score of judge ``m`` is the rule's with ``p_ij (1 - p_ij)`` replaced by the Fisher
    information ``tau_m^2 p (1 - p)`` of one of its verdicts (``tau_m`` its reliability in
    the ``"reliability"`` model, 1 under models without one; :func:`pair_scores`). For
    ``topk`` that is Eq. (3) per dollar: information about the contrast x its variance x
    boundary relevance / price. Each judge asks each pair once (unless repeats are
    allowed): a temperature-0 judge asked again repeats itself. So the cheap judge covers
    the pairs first, and the strong judge is bought where top-k membership is in doubt
    and the cheap judge has nothing new to say. Only :data:`INFORMATION_RULES` weigh
    judges this way. Use ``model="reliability"`` so that a noisy judge counts for less
    and each judge carries its own bias terms; under ``bias-aware`` every judge has
    ``tau = 1`` and the cheapest is always the best buy.

    **Large pools.** Above :data:`BOUNDARY_MIN_ITEMS` items no N x N array is formed: the
    scored rules score only pairs within the *boundary set*, the ``boundary_items`` items
    whose top-k membership is most in doubt (largest ``H(p_i)``, then closest in score to
    the k-th item, then at random), chosen at each refit; ``random`` draws pairs from the
    whole pool; ``round-robin`` and ``askable`` are not available. Under ``topk`` pairs
    outside the set score near zero (its boundary factor ``H(p_i) + H(p_j)`` is small
    there), so the choice changes only when the set is smaller than the items in doubt;
    ``global`` and ``lucb`` would also value pairs far from the boundary, which the set
    leaves out. When every pair of the set is asked or pending before the next refit, the
    set doubles along the same order. Its covariance is exact for a dense fit and, for a
    sparse one, :meth:`SparsePosterior.covariance_block` (exact when its solves are cheap,
    otherwise with the residual correlations dropped).

    Parameters
    ----------
    items : int or sequence of str
        The number of items, or their ids.
    k : int
        Size of the wanted top set (``1 <= k < N``).
    covariates : array_like, shape (N, d), optional
        Item covariates for the bias-aware models.
    covariate_names : sequence of str, optional
    judges : sequence of str or JudgeSpec
        The judges that may be asked (each gets its own bias terms); default one judge
        called ``"judge"``. Verdicts of other judges may still be given to :meth:`update`
        (they enter the fit; they do not mark a pair as asked for anyone).
    rule : str
        One of :data:`RULES`.
    model : str
        A registered model (:func:`fairjudge.models.model_names`). A post-hoc model acquires
        with the posterior of its ``acquires_with`` model (``"residualized"``: the naive
        posterior chooses the pairs, the covariates are removed from the final scores only).
    refit_every : int
        ``r``: refit after this many new verdicts (paper: 8).
    allow_repeats : bool
        May a pair be asked more than once.
    askable : ndarray of bool, shape (N, N), or mapping of judge name to one, optional
        ``askable[i, j]``: item ``i`` may be shown before item ``j`` (e.g. the orders
        recorded in a replayed matrix); a mapping gives each judge its own (a judge it
        leaves out may be shown everything). A pair with only one askable order is always
        shown in that order. Default: every order of every pair.
    n_samples : int
        Posterior samples for membership.
    prior_precision, bias_prior_precision : float
        ``lambda`` and ``lambda_b``.
    rng : seed or numpy.random.Generator
        Seeds presentation orders, tie-breaking and membership sampling.
    boundary_items : int
        Size of the boundary set of a large pool (see "Large pools").
    """

    def __init__(self, items, *, k: int, covariates=None, covariate_names=None,
                 judges: Sequence = ("judge",), rule: str = "topk",
                 model: str = "bias-aware", refit_every: int = 8, allow_repeats: bool = False,
                 askable=None, n_samples: int = 1500, prior_precision: float = 1.0,
                 bias_prior_precision: float = 0.1, rng=None,
                 boundary_items: int = BOUNDARY_ITEMS):
        if isinstance(items, (int, np.integer)) and not isinstance(items, bool):
            n_items, item_ids = int(items), tuple(str(i) for i in range(int(items)))
        else:
            item_ids = tuple(str(i) for i in items)
            n_items = len(item_ids)
            if len(set(item_ids)) != n_items:
                raise FairjudgeInputError("item ids must be unique")
        _check_settings(n_items, k, rule, model, refit_every, n_samples, prior_precision,
                        bias_prior_precision)
        if covariates is not None:
            shape = np.shape(covariates)
            if len(shape) not in (1, 2) or shape[0] != n_items:
                raise FairjudgeInputError(
                    f"`covariates` must have shape (n_items={n_items}, d); got "
                    f"{shape}")
        self.item_ids = item_ids
        self.n_items = n_items
        self.k = int(k)
        self.covariates = covariates
        self.covariate_names = covariate_names
        specs = [j if isinstance(j, JudgeSpec) else JudgeSpec(str(j)) for j in judges]
        if not specs:
            raise FairjudgeInputError("`judges` needs at least one judge")
        if len({j.name for j in specs}) != len(specs):
            raise FairjudgeInputError("judge names must be unique")
        self.judges = {j.name: j for j in specs}
        # Axis 0 of the per-judge arrays below, by judge name.
        self._judge_index = {name: m for m, name in enumerate(self.judges)}
        self.rule = rule
        self.model = model
        self.refit_every = int(refit_every)
        self.allow_repeats = bool(allow_repeats)
        self.n_samples = int(n_samples)
        self.prior_precision = float(prior_precision)
        self.bias_prior_precision = float(bias_prior_precision)
        self.rng = as_generator(rng)
        # Presentation orders come from a hash of (run seed, pair, repeat), drawn before
        # anything else: the same pair is shown in the same order whatever the rule.
        self._order_seed = int(self.rng.integers(2**62))
        self.large_pool = n_items > BOUNDARY_MIN_ITEMS
        if isinstance(askable, dict) and not askable:
            askable = None   # no judge restricted (what a driver without oracles passes)
        if self.large_pool:
            if askable is not None or rule == "round-robin":
                raise FairjudgeInputError(
                    f"a pool of {n_items} items (more than {BOUNDARY_MIN_ITEMS}) is ranked "
                    "without N x N arrays, so `askable` and the round-robin rule are not "
                    "available; use a scored rule or `random`")
            if isinstance(boundary_items, bool) or not isinstance(
                    boundary_items, (int, np.integer)) or boundary_items < 2:
                raise FairjudgeInputError(f"`boundary_items` must be an integer >= 2; got "
                                          f"{boundary_items!r}")
            self.boundary_items = int(min(boundary_items, n_items))
            # Asked and pending pairs per judge, as keys i * N + j (i < j).
            self._asked = [set() for _ in self.judges]
            self._waiting = [set() for _ in self.judges]
            # Items by doubt about their membership (random before any fit); the boundary set
            # is a prefix of this order, grown when its pairs run out between refits.
            self._boundary_order = self.rng.permutation(n_items)
            self._boundary = self._boundary_order[:self.boundary_items]
        else:
            # Per judge given: which orders it may be shown, which pairs it may still be
            # asked and which are pending (axis 0 follows `judges`).
            self._askable = _judge_askable(askable, list(self.judges), n_items)
            self._available = np.triu(self._askable | self._askable.transpose(0, 2, 1))
            self._unqueried = self._available.copy()
            self._pending = np.zeros_like(self._available)
        self._times_shown: dict[tuple, int] = {}
        self._judge_times: dict[tuple, int] = {}
        self._schedule = (round_robin_schedule(n_items, self.rng) if rule == "round-robin"
                          else None)
        self._schedule_pos = 0
        self._acquisition_model = model_spec(model).acquires_with or model
        self._history = _History()
        self._acq_fit: BTFit | None = None
        self._fit: BTFit | None = None
        self._scores = np.zeros(n_items)
        size = self.boundary_items if self.large_pool else n_items
        self._cov = np.eye(size) / self.prior_precision   # of the boundary set, if large
        self._membership = np.full(n_items, self.k / n_items)
        self._fitted_upto = -1
        self._judge_order: list[str] = list(self.judges)

    # -- state ---------------------------------------------------------------------------
    @property
    def n_verdicts(self) -> int:
        """Verdicts recorded so far (abstentions and invalid outputs included)."""
        return len(self._history.outcome)

    @property
    def exhausted(self) -> bool:
        """No pair is left to propose to any judge."""
        return not any(self._open_for(m) for m in range(len(self.judges)))

    def exhausted_for(self, judge: str) -> bool:
        """No pair is left to propose to ``judge``."""
        return not self._open_for(self._judge_index[judge])

    def _open_for(self, m: int) -> bool:
        """Whether judge ``m`` (index into ``judges``) has a pair left to be asked."""
        if not self.large_pool:
            return bool(self._candidates()[m].any())
        n = self.n_items
        return self.allow_repeats or len(self._asked[m] | self._waiting[m]) < n * (n - 1) // 2

    def _candidates(self) -> np.ndarray:
        """(J, K, K) upper-triangular: pairs each judge may be asked now, among all items
        (K = N) or, in a large pool, among the boundary set (K = ``boundary_items``)."""
        if self.large_pool:
            b = self._boundary
            upper = np.triu(np.ones((b.size, b.size), dtype=bool), 1)
            rows, cols = np.nonzero(upper)
            keys = (np.minimum(b[rows], b[cols]) * self.n_items
                    + np.maximum(b[rows], b[cols])).tolist()
            out = np.zeros((len(self.judges), b.size, b.size), dtype=bool)
            for m in range(len(self.judges)):
                asked, waiting = self._asked[m], self._waiting[m]
                open_ = (np.ones(len(keys), dtype=bool) if self.allow_repeats else
                         np.fromiter((not (key in asked or key in waiting) for key in keys),
                                     dtype=bool, count=len(keys)))
                out[m, rows, cols] = open_
            return out
        return self._available if self.allow_repeats else self._unqueried & ~self._pending

    def _set_pending(self, m: int, pair: tuple, value: bool) -> None:
        if self.large_pool:
            key = pair[0] * self.n_items + pair[1]
            (self._waiting[m].add if value else self._waiting[m].discard)(key)
        else:
            self._pending[m][pair] = value

    @property
    def spent(self) -> float:
        """Cost of every recorded verdict of a known judge (their :class:`JudgeSpec` costs)."""
        return float(sum(self.judges[j].cost for j in self._history.judge if j in self.judges))

    @property
    def outcomes(self) -> tuple:
        """The recorded outcomes, in order."""
        return tuple(self._history.outcome)

    def shown(self) -> np.ndarray:
        """Each recorded comparison as shown, ``[first, second]`` item indices; (B, 2)."""
        h = self._history
        return np.column_stack([np.asarray(h.first, dtype=np.int64),
                                np.asarray(h.second, dtype=np.int64)]).reshape(-1, 2)

    @property
    def current_fit(self) -> BTFit | None:
        """The last fit, without refitting (see :meth:`posterior`)."""
        return self._fit

    @property
    def posterior_is_fresh(self) -> bool:
        """Whether the last fit includes every recorded verdict."""
        return self._fitted_upto == self.n_verdicts

    def pair_id(self, i: int, j: int) -> str:
        """The pair id of items ``i`` and ``j``: their ids joined, lower index first."""
        lo, hi = min(i, j), max(i, j)
        return f"{self.item_ids[lo]}|{self.item_ids[hi]}"

    def history(self) -> pd.DataFrame:
        """Every recorded verdict as a verdict table: step, pair_id, item_a (shown first),
        item_b, winner (``a``, ``b``, ``tie``, or empty), outcome_detail, judge, order
        (``ab``: the pair's lower-index item shown first), cost (the judge's cost per call;
        NaN for a judge the ranker was not given), sample (earlier verdicts of the same
        pair by the same judge), acquisition_score, fit_size."""
        h = self._history
        ids = np.asarray(self.item_ids, dtype=object)
        outcomes = [Outcome(o) for o in h.outcome]
        first = np.asarray(h.first, dtype=np.int64)
        second = np.asarray(h.second, dtype=np.int64)
        pair_ids = [self.pair_id(i, j) for i, j in zip(first, second)]
        return pd.DataFrame({
            "step": np.arange(1, len(outcomes) + 1),
            "pair_id": pair_ids,
            "item_a": ids[first],
            "item_b": ids[second],
            "winner": [o.value if np.isfinite(o.first_score) else None for o in outcomes],
            "outcome_detail": [_DETAIL[o] for o in outcomes],
            "judge": list(h.judge),
            "order": np.where(first < second, "ab", "ba"),
            "cost": [self.judges[j].cost if j in self.judges else np.nan for j in h.judge],
            "sample": pd.DataFrame({"p": pair_ids, "j": list(h.judge)}).groupby(
                ["p", "j"], sort=False).cumcount().to_numpy(),
            "acquisition_score": np.asarray(h.score, dtype=float),
            "fit_size": np.asarray(h.fit_size, dtype=np.int64),
        })

    def comparisons(self) -> Comparisons:
        """The usable verdicts so far as :class:`Comparisons` (one judge index per name)."""
        h = self._history
        codes = {name: i for i, name in enumerate(self._judge_order)}
        return Comparisons.from_outcomes(h.first, h.second, h.outcome, item_ids=self.item_ids,
                                         judge=[codes[j] for j in h.judge],
                                         judges=tuple(self._judge_order))

    # -- verbs ---------------------------------------------------------------------------
    def propose(self, n: int = 1, *, judge: str | None = None,
                money: float | None = None) -> list[Proposal]:
        """The next ``n`` comparisons to ask, in the order to show them, each with its judge.

        Proposed (pair, judge)s stay *pending* until :meth:`update` records their verdicts;
        pending ones are not proposed again (unless repeats are allowed). Fewer than ``n``
        come back when the available pairs or the money run out.

        Parameters
        ----------
        n : int
            Batch size (a live run asks a whole batch concurrently).
        judge : str, optional
            The judge to ask. Default: with one judge, it; with several, the rule chooses
            the judge of each comparison by its score per unit cost (class docstring).
        money : float, optional
            The most the ``n`` proposals may cost together (in :attr:`JudgeSpec.cost`
            units); judges dearer than what is left are not proposed. Default: no limit.
        """
        if isinstance(n, bool) or not isinstance(n, (int, np.integer)) or n < 1:
            raise FairjudgeInputError(f"`n` must be a positive integer; got {n!r}")
        if money is not None and not (np.isfinite(money) and money >= 0):
            raise FairjudgeInputError(f"`money` must be a non-negative number; got {money!r}")
        if judge is not None and judge not in self.judges:
            raise FairjudgeInputError(f"unknown judge {judge!r}; the ranker asks "
                                      f"{', '.join(self.judges)}")
        names = [judge] if judge is not None else list(self.judges)
        if len(names) > 1:
            if self.rule not in INFORMATION_RULES:
                raise FairjudgeInputError(
                    f"rule {self.rule!r} does not weigh what one verdict of each judge is "
                    f"worth, so it cannot choose among judges; name the judge (judge=...) or "
                    f"use one of {', '.join(INFORMATION_RULES)}")
            free = [m for m in names if self.judges[m].cost <= 0]
            if free:
                raise FairjudgeInputError(
                    f"judge {free[0]!r} costs nothing, so its value per unit cost is "
                    "unbounded; give every judge a positive cost to choose among them")
        with _blas_for(self.n_items):
            return self._propose(int(n), names, money)

    def _reliability(self, judge: str) -> float:
        """``tau`` to value the judge's next verdict with: the fit's, once its verdicts
        estimate it, else the judge's stated guess."""
        fit = self._acq_fit
        if fit is not None and any(r.judge == judge for r in fit.reliability):
            return fit.judge_reliability()[judge]
        return self.judges[judge].reliability if judge in self.judges else 1.0

    def _propose(self, n: int, names: list, money: float | None) -> list[Proposal]:
        proposals = []
        cov = self._cov
        index = self._judge_index
        left = np.inf if money is None else float(money)
        for _ in range(n):
            names = [m for m in names if self.judges[m].cost <= left + 1e-12]
            if self.large_pool and self.rule == "random":
                if not names or not self._open_for(index[names[0]]):
                    break
                proposals.append(self._random_pair(names[0]))
            else:
                candidates = self._candidates()
                while (names and self.large_pool and self._boundary.size < self.n_items
                       and not any(candidates[index[m]].any() for m in names)):
                    cov = self._grow_boundary(cov)
                    candidates = self._candidates()
                if not names or not any(candidates[index[m]].any() for m in names):
                    break
                if len(names) > 1:
                    proposals.append(self._choose_judge(names, candidates, cov))
                else:
                    proposals.append(self._choose_pair(names[0], candidates[index[names[0]]],
                                                       cov))
            p = proposals[-1]
            left -= p.cost
            self._set_pending(index[p.judge], p.pair, True)
            if n > 1 and self.rule in SCORED_RULES:
                # The pending comparison's Fisher information narrows the posterior for
                # the rest of the batch (a copy: the real update comes with the verdict).
                cov = _rank_one_update(cov, self._view()[1], *self._local(p.pair),
                                       self._reliability(p.judge))
        return proposals

    def _grow_boundary(self, batch_cov: np.ndarray) -> np.ndarray:
        """Double the boundary set, whose pairs are all asked or pending, along the doubt
        order of the last refit; returns the grown set's covariance for the batch in
        progress (its old block keeps the batch's updates, ``batch_cov``)."""
        old = self._boundary.size
        self._boundary = self._boundary_order[:min(2 * old, self.n_items)]
        grown = (self._acq_fit.covariance_block(self._boundary) if self._acq_fit is not None
                 else np.eye(self._boundary.size) / self.prior_precision)
        grown[:old, :old] = self._cov       # keeps updates from verdicts since the refit
        self._cov = grown
        batch = grown.copy()
        batch[:old, :old] = batch_cov
        return batch

    def _view(self) -> tuple[np.ndarray | None, np.ndarray, np.ndarray]:
        """(global index of each scored item or None for all, their scores, membership)."""
        if self.large_pool:
            b = self._boundary
            return b, self._scores[b], self._membership[b]
        return None, self._scores, self._membership

    def _local(self, pair: tuple) -> tuple[int, int]:
        """Positions of a pair's items among the scored items (boundary set, if large)."""
        if not self.large_pool:
            return pair
        where = {int(item): pos for pos, item in enumerate(self._boundary)}
        return where[pair[0]], where[pair[1]]

    def _random_pair(self, judge: str) -> Proposal:
        """A uniformly random open pair of the whole (large) pool, by rejection."""
        m, n = self._judge_index[judge], self.n_items
        while True:
            i, j = self.rng.choice(n, size=2, replace=False)
            i, j = int(min(i, j)), int(max(i, j))
            key = i * n + j
            if self.allow_repeats or (key not in self._asked[m] and key not in self._waiting[m]):
                return self._shown(i, j, judge, np.nan)

    def _choose_judge(self, names, candidates, cov) -> Proposal:
        """The (pair, judge) of largest score per unit cost; ties broken at random."""
        index = self._judge_index
        items, theta, membership = self._view()
        value = np.full((len(names),) + candidates.shape[1:], -np.inf)
        scores = {}
        for slot, name in enumerate(names):
            allowed = candidates[index[name]]
            if allowed.any():
                scores[name] = pair_scores(self.rule, theta, cov, membership,
                                           self._reliability(name))
                # A score at or below zero (a settled posterior; the look-ahead can dip
                # below zero) is worth nothing whatever the price.
                value[slot] = np.where(allowed, np.maximum(scores[name], 0.0)
                                       / self.judges[name].cost, -np.inf)
        best = value.max()
        if best <= 0:
            # Nothing is worth buying: the cheapest judge asks its best pair.
            cheapest = min((m for m in names if candidates[index[m]].any()),
                           key=lambda m: self.judges[m].cost)
            return self._choose_pair(cheapest, candidates[index[cheapest]], cov)
        options = np.argwhere(value >= best - 1e-12 * max(abs(best), 1e-300))
        slot, i, j = options[self.rng.integers(len(options))]
        name = names[int(slot)]
        score = float(scores[name][i, j])
        if items is not None:
            i, j = items[i], items[j]
        return replace(self._shown(int(i), int(j), name, score), value=float(best))

    def _choose_pair(self, judge: str, candidates, cov) -> Proposal:
        score = np.nan
        if self.rule == "random":
            options = np.argwhere(candidates)
            i, j = options[self.rng.integers(len(options))]
        elif self.rule == "round-robin":
            while True:
                if self._schedule_pos >= len(self._schedule):
                    self._schedule_pos = 0  # another round robin (only with repeats)
                i, j = self._schedule[self._schedule_pos]
                self._schedule_pos += 1
                if candidates[i, j]:
                    break
        else:
            items, theta, membership = self._view()
            s = pair_scores(self.rule, theta, cov, membership, self._reliability(judge))
            s = np.where(candidates, s, -np.inf)
            best = s.max()
            options = np.argwhere(s >= best - 1e-12 * max(abs(best), 1e-300))
            i, j = options[self.rng.integers(len(options))]
            if items is not None:
                i, j = items[i], items[j]
            score = float(best)
        return self._shown(int(i), int(j), judge, score)

    def _shown(self, i: int, j: int, judge: str, score: float) -> Proposal:
        """The proposal of pair ``(i, j)`` to ``judge``, in its presentation order."""
        repeat = self._times_shown.get((i, j), 0)
        self._times_shown[(i, j)] = repeat + 1
        judge_repeat = self._judge_times.get((judge, i, j), 0)
        self._judge_times[(judge, i, j)] = judge_repeat + 1
        first, second = ((i, j) if content_seed(self._order_seed, i, j, repeat) % 2 == 0
                         else (j, i))
        if not self.large_pool and not self._askable[self._judge_index[judge], first, second]:
            first, second = second, first
        return Proposal(first, second, judge, score, self._fit_size(), judge_repeat,
                        cost=self.judges[judge].cost)

    def release(self, proposals) -> None:
        """Forget proposals that will get no verdict (the call failed), so that their pairs
        may be proposed again."""
        for p in proposals:
            if p.judge in self._judge_index:
                self._set_pending(self._judge_index[p.judge], p.pair, False)

    def update(self, verdicts) -> None:
        """Record verdicts and refit when ``refit_every`` new ones have arrived.

        Parameters
        ----------
        verdicts : pandas.DataFrame or iterable
            A verdict table with item ids (``item_a`` shown first, ``item_b``, ``winner``
            and optionally ``judge``; rows without a winner count as invalid), or an
            iterable of ``(first, second, outcome)`` / ``(first, second, outcome, judge)``
            tuples of item indices and :class:`Outcome` values (or ``"a"``, ``"b"``,
            ``"tie"``, ``"invalid"``, ``"abstain"``), or :class:`Proposal`-outcome pairs
            ``(proposal, outcome)``.

        Abstentions and invalid outputs are recorded (they spent a call) but carry no
        information. A judge not seen before gets its own bias terms from the next refit.
        """
        with _blas_for(self.n_items):
            due = False
            for first, second, outcome, judge, score, fit_size in self._observations(verdicts):
                self._record(first, second, outcome, judge, score, fit_size)
                due |= self.n_verdicts % self.refit_every == 0
            if due:  # one refit per update, however many multiples of r a batch crossed
                self._refit()

    def posterior(self) -> Posterior:
        """The current fit with membership, refitted first if verdicts arrived since."""
        with _blas_for(self.n_items):
            if self._fitted_upto != self.n_verdicts:
                self._refit()
            fit = self._fit
            if fit is None:
                return Posterior(None, self._membership.copy(), np.zeros(0, np.int64), 0)
            membership = (self._membership if self.model == self._acquisition_model else
                          fit.topk_membership(self.k, n_samples=self.n_samples, rng=self.rng))
            return Posterior(fit, membership.copy(), fit.topk(self.k),
                             int(round(fit.n_comparisons)))

    def fit_now(self) -> BTFit | None:
        """A fit of the model on exactly the verdicts so far that leaves the acquisition
        state (posterior that picks pairs, random stream) untouched; for evaluating a run at
        a checkpoint without changing its path."""
        if self._fitted_upto == self.n_verdicts:
            return self._fit
        data = self.comparisons()
        if len(data) == 0:
            return None
        with _blas_for(self.n_items):
            return fit_model(self.model, data, self.covariates,
                             covariate_names=self.covariate_names,
                             prior_precision=self.prior_precision,
                             bias_prior_precision=self.bias_prior_precision,
                             init=None if self._fit is None or self.model !=
                             self._acquisition_model else self._fit.params, check_graph=False)

    # -- internals -----------------------------------------------------------------------
    def _fit_size(self) -> int:
        return 0 if self._acq_fit is None else int(round(self._acq_fit.n_comparisons))

    def _observations(self, verdicts):
        if isinstance(verdicts, pd.DataFrame):
            index = {item: i for i, item in enumerate(self.item_ids)}
            judges = (verdicts["judge"].astype(str) if "judge" in verdicts.columns
                      else pd.Series(self._judge_order[0], index=verdicts.index))
            for a, b, w, j in zip(verdicts["item_a"].astype(str), verdicts["item_b"].astype(str),
                                  verdicts["winner"], judges):
                if a not in index or b not in index:
                    raise FairjudgeInputError("verdict names unknown item "
                                              f"{a if a not in index else b!r}")
                outcome = Outcome(str(w).lower()) if isinstance(w, str) and w else Outcome.INVALID
                yield index[a], index[b], outcome, j, np.nan, self._fit_size()
            return
        for entry in verdicts:
            if len(entry) == 2 and isinstance(entry[0], Proposal):
                p, outcome = entry
                yield p.first, p.second, _as_outcome(outcome), p.judge, p.score, p.fit_size
            elif len(entry) in (3, 4):
                first, second, outcome = entry[:3]
                judge = entry[3] if len(entry) == 4 else self._judge_order[0]
                yield int(first), int(second), _as_outcome(outcome), str(judge), np.nan, \
                    self._fit_size()
            else:
                raise FairjudgeInputError(
                    "each verdict must be (first, second, outcome[, judge]) or "
                    f"(proposal, outcome); got {entry!r}")

    def _record(self, first, second, outcome: Outcome, judge: str, score, fit_size) -> None:
        if not (0 <= first < self.n_items and 0 <= second < self.n_items) or first == second:
            raise FairjudgeInputError(f"a verdict must compare two different items among the "
                                      f"{self.n_items}; got ({first}, {second})")
        if judge not in self._judge_order:
            self._judge_order.append(judge)
        h = self._history
        h.first.append(int(first))
        h.second.append(int(second))
        h.outcome.append(outcome)
        h.judge.append(judge)
        h.score.append(score)
        h.fit_size.append(fit_size)
        i, j = min(first, second), max(first, second)
        if judge in self._judge_index:
            m = self._judge_index[judge]
            if self.large_pool:
                self._asked[m].add(i * self.n_items + j)
                self._waiting[m].discard(i * self.n_items + j)
            else:
                self._unqueried[m, i, j] = False
                self._pending[m, i, j] = False
        if (self.allow_repeats and self.rule in SCORED_RULES
                and np.isfinite(outcome.first_score)
                and (not self.large_pool or np.isin([i, j], self._boundary).all())):
            self._cov = _rank_one_update(self._cov, self._view()[1], *self._local((i, j)),
                                         self._reliability(judge))

    def _refit(self) -> None:
        self._fitted_upto = self.n_verdicts
        data = self.comparisons()
        if len(data) == 0:
            return
        common = dict(covariate_names=self.covariate_names,
                      prior_precision=self.prior_precision, check_graph=False)
        self._acq_fit = fit_model(
            self._acquisition_model, data, self.covariates,
            bias_prior_precision=self.bias_prior_precision,
            init=None if self._acq_fit is None else self._acq_fit.params, **common)
        self._scores = self._acq_fit.scores
        self._membership = self._acq_fit.topk_membership(self.k, n_samples=self.n_samples,
                                                         rng=self.rng)
        if self.large_pool:
            self._boundary_order = boundary_order(self._scores, self._membership, self.k,
                                                  self.rng)
            self._boundary = self._boundary_order[:self.boundary_items]
        self._cov = self._acq_fit.covariance_block(
            self._boundary if self.large_pool else np.arange(self.n_items))
        self._fit = (self._acq_fit if self.model == self._acquisition_model else
                     fit_model(self.model, data, self.covariates, **common))


_DETAIL = {Outcome.A: "win", Outcome.B: "win", Outcome.TIE: "tie", Outcome.ABSTAIN: "abstain",
           Outcome.INVALID: "invalid"}


def boundary_order(scores, membership, k: int, rng) -> np.ndarray:
    """Every item, those whose top-k membership is most in doubt first, shape (N,).

    Ordered by membership entropy ``H(p_i)`` (largest first), then by distance of the score
    to the midpoint of the k-th and (k+1)-th scores, then at random; the boundary set is a
    prefix of this order.
    """
    scores = np.asarray(scores, dtype=float)
    middle = -float(np.mean(np.partition(-scores, (k - 1, k))[[k - 1, k]]))
    keys = (rng.random(scores.size), np.abs(scores - middle), -binary_entropy(membership))
    return np.lexsort(keys)


def _as_outcome(value) -> Outcome:
    if isinstance(value, Outcome):
        return value
    try:
        return Outcome(str(value).lower())
    except ValueError:
        raise FairjudgeInputError(f"an outcome must be one of a, b, tie, abstain, invalid; got "
                                  f"{value!r}") from None


def _rank_one_update(cov: np.ndarray, scores: np.ndarray, i: int, j: int,
                     reliability: float = 1.0) -> np.ndarray:
    """Sherman–Morrison: the posterior covariance after adding the Fisher information
    ``tau^2 p(1-p) u u'`` of one comparison of ``i`` and ``j`` by a judge of reliability
    ``tau`` (``u = e_i - e_j``, ``p = sigmoid(tau (theta_i - theta_j))``)."""
    n = cov.shape[0]
    u = np.zeros(n)
    u[i], u[j] = 1.0, -1.0
    pij = 1.0 / (1.0 + np.exp(-reliability * (scores[i] - scores[j])))
    su = cov @ u
    w = reliability ** 2 * pij * (1 - pij)
    return cov - np.outer(su, su) * w / (1.0 + w * (u @ su))


def _judge_askable(askable, judges: list, n_items: int) -> np.ndarray:
    """``askable`` as a (J, N, N) boolean array over the given judges, diagonal off."""
    everything = ~np.eye(n_items, dtype=bool)
    if isinstance(askable, dict):
        unknown = sorted(set(askable) - set(judges))
        if unknown:
            raise FairjudgeInputError(f"`askable` names judge {unknown[0]!r}, which the ranker "
                                      f"does not ask ({', '.join(judges)})")
        per_judge = [askable.get(name, everything) for name in judges]
    else:
        per_judge = [everything if askable is None else askable] * len(judges)
    out = []
    for name, matrix in zip(judges, per_judge):
        matrix = np.array(matrix, dtype=bool)
        if matrix.shape != (n_items, n_items):
            raise FairjudgeInputError(f"`askable` of judge {name!r} must have shape "
                                      f"({n_items}, {n_items}); got {matrix.shape}")
        np.fill_diagonal(matrix, False)
        out.append(matrix)
    return np.stack(out)


class _blas_for:
    """One BLAS thread for small pools, where threads only add overhead."""

    def __init__(self, n_items: int):
        self._context = single_threaded_blas() if n_items <= SMALL_PROBLEM else None

    def __enter__(self):
        if self._context is not None:
            self._context.__enter__()

    def __exit__(self, *exc):
        if self._context is not None:
            return self._context.__exit__(*exc)
        return False


def _check_settings(n_items, k, rule, model, refit_every, n_samples, prior_precision,
                    bias_prior_precision) -> None:
    if rule not in RULES:
        raise FairjudgeInputError(f"`rule` must be one of {', '.join(RULES)}; got {rule!r}")
    model_spec(model)  # an unknown name raises, listing the registered models
    if n_items < 2:
        raise FairjudgeInputError(f"`n_items` must be an integer >= 2; got {n_items!r}")
    if not (isinstance(k, (int, np.integer)) and 1 <= k < n_items):
        raise FairjudgeInputError(
            f"`k` must be an integer between 1 and n_items-1={n_items - 1}; got "
            f"{k!r}")
    if not (isinstance(refit_every, (int, np.integer)) and refit_every >= 1):
        raise FairjudgeInputError(f"`refit_every` must be a positive integer; got {refit_every!r}")
    if not (isinstance(n_samples, (int, np.integer)) and n_samples >= 1):
        raise FairjudgeInputError(f"`n_samples` must be a positive integer; got {n_samples!r}")
    for name, value in (("prior_precision", prior_precision),
                        ("bias_prior_precision", bias_prior_precision)):
        if not (np.isfinite(value) and value > 0):
            raise FairjudgeInputError(f"`{name}` must be positive; got {value!r}")
