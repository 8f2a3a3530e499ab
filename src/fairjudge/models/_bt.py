"""Naive and bias-aware Bradley–Terry estimators with a Laplace posterior."""

from __future__ import annotations

import warnings
from dataclasses import dataclass, field, replace

import numpy as np
from scipy import stats
from scipy.special import expit

from fairjudge._util._memory import require_dense_memory
from fairjudge._util._threads import factorising_blas
from fairjudge._util._warnings import ConvergenceWarning, FairjudgeInputError
from fairjudge.data._encode import Comparisons
from fairjudge.models._engine import DenseFactor, PenalisedBT, aggregate_pairs
from fairjudge.models._graph import table_components, warn_disconnected
from fairjudge.models._membership import (
    check_n_samples,
    gaussian_samples,
    membership_from_samples,
)
from fairjudge.models._registry import ModelSpec, register_model
from fairjudge.models._sparse import SparsePosterior
from fairjudge.stats._estimate import Estimate
from fairjudge.stats._intervals import Interval, normal_interval

POSITION = "position"
# Parameter count from which a fit sets its BLAS threads (below it the thread-limit context
# costs more than it saves; the active loop limits threads itself).
LARGE_PROBLEM = 200
# Parameter count from which the dense solver factors on every core: on an idle 2-core
# machine two threads gain 15% at 1000 parameters and 60% at 2000
# (benchmarks/bench_blas_threads.py), but OpenBLAS threads spin, and on a machine with
# another busy process a 1000 x 1000 factorisation on two threads took 20 times longer.
PARALLEL_FACTOR = 1200
#: Items above which ``solver="auto"`` uses the matrix-free sparse solver.
SPARSE_MIN_ITEMS = 2000
SOLVERS = ("auto", "dense", "sparse")
#: What to do instead of a dense fit too large for memory.
USE_SPARSE = "fit with solver='sparse' (rank --solver sparse), which forms nothing N x N"


@dataclass(frozen=True)
class BiasEstimate:
    """One bias coefficient on the user's scale, with its Laplace standard error.

    ``estimate`` is in preference logits per unit of the covariate (for ``position``: logits
    added to the first-shown item).
    """

    name: str
    judge: str
    estimate: float
    std_error: float
    n: int = 0
    """Verdicts of this judge behind the coefficient."""

    def interval(self, level: float = 0.95) -> Interval:
        """Laplace (normal-approximation) credible interval at ``level``."""
        return normal_interval(self.estimate, self.std_error, level)

    def as_estimate(self, level: float = 0.95) -> Estimate:
        """The coefficient with its Laplace interval in the shared result shape."""
        return Estimate.normal(self.estimate, self.std_error, n=self.n, level=level,
                               method="laplace")


@dataclass(frozen=True)
class BTFit:
    """A fitted Bradley–Terry model and its Laplace posterior.

    Attributes
    ----------
    model : str
        ``"naive"``, ``"bias-aware"``, ``"hierarchical"``, ``"reliability"``,
        ``"swap-majority"``, ``"residualized"``, ``"anchored"`` or ``"ppi"`` (the humans'
        prediction-powered scores of ``rank --ppi``).
    item_ids : tuple of str, length N
    scores : ndarray, shape (N,)
        Posterior mode of latent quality ``theta`` (logit scale).
    covariance : ndarray, shape (N, N), or None
        Posterior covariance of ``theta`` (marginal over the bias parameters); None for a
        fit by the sparse solver, whose posterior is ``posterior`` (use
        :meth:`marginal_variances`, :meth:`centred_variances`, :meth:`contrast_variance`
        and :meth:`posterior_samples`, which work for both).
    bias : tuple of BiasEstimate
        One per (judge, covariate) and per judge for ``position``; empty for naive fits.
    judges, covariate_names : tuple of str
    params, param_covariance : ndarray
        Full parameter vector (covariates standardised) and its covariance (None for the
        sparse solver; :meth:`bias_covariance` gives the bias block either way); used for
        warm starts and by the empirical-Bayes update.
    covariate_scale : ndarray, shape (d,)
        Standard deviation used to standardise each covariate.
    prior_precision : float
    bias_prior_precision : ndarray
        Prior precision of each bias parameter (standardised scale).
    n_comparisons : float
        Total weight of the verdicts fitted.
    n_iter : int
    converged : bool
    notes : tuple of str
    reliability : tuple of BiasEstimate
        ``log tau_j`` per judge for the ``"reliability"`` model (empty otherwise): the
        judge's temperature on the quality difference.
    posterior : DenseFactor, SparsePosterior or None
        How posterior draws are made: the Hessian's Cholesky factor (dense solver), the
        matrix-free posterior (sparse solver), or None (draws factor ``covariance``).
    """

    model: str
    item_ids: tuple
    scores: np.ndarray
    covariance: np.ndarray
    bias: tuple
    judges: tuple
    covariate_names: tuple
    params: np.ndarray
    param_covariance: np.ndarray
    covariate_scale: np.ndarray
    prior_precision: float
    bias_prior_precision: np.ndarray
    n_comparisons: float
    n_iter: int
    converged: bool
    notes: tuple = field(default=())
    reliability: tuple = field(default=())
    posterior: DenseFactor | SparsePosterior | None = field(default=None, repr=False)

    @property
    def n_items(self) -> int:
        return len(self.item_ids)

    @property
    def solver(self) -> str:
        """``"sparse"`` (matrix-free, no N x N covariance) or ``"dense"``."""
        return "sparse" if isinstance(self.posterior, SparsePosterior) else "dense"

    def dense_covariance(self, purpose: str) -> np.ndarray:
        """``covariance``, or a clear error naming ``purpose`` for a sparse fit."""
        if self.covariance is None:
            raise FairjudgeInputError(
                f"{purpose} needs the full {self.n_items} x {self.n_items} posterior "
                f"covariance, which the sparse solver (used above {SPARSE_MIN_ITEMS} items) "
                "does not form; fit with solver='dense' (8 N^2 bytes of memory) or use the "
                "fit's marginal_variances / contrast_variance / posterior_samples")
        return self.covariance

    def marginal_variances(self) -> np.ndarray:
        """``var(theta_i)``, shape (N,) (estimated for a sparse fit, see
        :class:`SparsePosterior`)."""
        if self.solver == "sparse":
            return self.posterior.marginal_variances()
        return np.clip(np.diag(self.covariance), 0.0, None)

    def centred_variances(self) -> np.ndarray:
        """``var(theta_i - mean(theta))``, shape (N,): the level, fixed only by the prior,
        is left out."""
        if self.solver == "sparse":
            return self.posterior.centred_variances()
        return centred_variances(self.covariance)

    def contrast_variance(self, i, j) -> np.ndarray:
        """``var(theta_i - theta_j)`` for index arrays ``i`` and ``j``, shape (K,) (exact for
        both solvers; one conjugate-gradient solve per contrast for a sparse fit)."""
        i = np.atleast_1d(np.asarray(i))
        j = np.atleast_1d(np.asarray(j))
        n = self.n_items
        if (i.shape != j.shape or i.ndim != 1 or i.size == 0
                or not (np.issubdtype(i.dtype, np.integer) and np.issubdtype(j.dtype, np.integer))
                or min(i.min(), j.min()) < 0 or max(i.max(), j.max()) >= n):
            raise FairjudgeInputError(f"contrast indices must be two equal-length 1-d integer "
                                      f"arrays of items in [0, {n}); got {i!r} and {j!r}")
        if self.solver == "sparse":
            return self.posterior.contrast_variance(i.astype(np.int64), j.astype(np.int64))
        c = self.covariance
        return np.clip(c[i, i] + c[j, j] - 2.0 * c[i, j], 0.0, None)

    def covariance_block(self, index) -> np.ndarray:
        """Posterior covariance of the scores of items ``index`` (shape (K,)), (K, K): exact
        for a dense fit; for a sparse fit, :meth:`SparsePosterior.covariance_block`."""
        if self.solver == "sparse":
            return self.posterior.covariance_block(index)
        index = np.asarray(index, dtype=np.int64)
        return self.covariance[np.ix_(index, index)]

    def bias_covariance(self) -> np.ndarray:
        """Posterior covariance of the bias parameters (standardised scale), (B, B)."""
        if self.solver == "sparse":
            return self.posterior.bias_covariance()
        n = self.n_items
        return self.param_covariance[n:, n:]

    def posterior_samples(self, n_samples: int, rng=0, *, k: int | None = None):
        """Posterior draws of the scores, yielded in blocks of shape (m, N), m <= n_samples.

        Exact Laplace draws for a dense fit (from the Hessian's factor when the fit kept
        it); for a sparse fit, the approximation of :meth:`SparsePosterior.samples`, which
        with ``k`` draws the items whose top-k membership is in doubt (:meth:`in_doubt`)
        from their exact joint posterior.
        """
        if self.solver == "sparse":
            yield from self.posterior.samples(self.scores, n_samples, rng,
                                              joint=self.joint_items(k))
        elif self.posterior is not None:
            yield from self.posterior.samples(self.scores, n_samples, rng)
        else:
            yield gaussian_samples(self.scores, self.covariance, n_samples, rng)

    def posterior_sample_blocks(self, n_samples: int, rng=0, *, k: int | None = None):
        """The draws of :meth:`posterior_samples` for a consumer that may draw on several
        threads: a sparse fit gives one callable per block (see
        :meth:`SparsePosterior.block_makers`), a dense one its blocks of draws (whose
        factor solves use BLAS threads of their own)."""
        if self.solver == "sparse":
            return self.posterior.block_makers(self.scores, n_samples, rng,
                                               joint=self.joint_items(k))
        return self.posterior_samples(n_samples, rng)

    def in_doubt(self, k: int, *, tail: float = 1e-3) -> np.ndarray:
        """Items whose top-k membership the posterior leaves in doubt, (K,) indices, the
        nearest the boundary (in standard deviations) first.

        An item is in doubt when the normal approximation of its chance to be on the other
        side of the boundary -- ``c``, midway between the k-th and (k+1)-th scores -- is
        above ``tail``: ``|score_i - c| < z sd``, ``z`` the normal quantile of ``1 -
        tail``, ``sd^2 = v_i + v_c`` from the centred variances (the level the prior
        alone fixes moves every item together, so it does not count), ``v_c`` the mean of
        the two boundary items'. An item outside enters (or leaves) the top k in at most
        about ``tail`` of the draws, correlations or not.
        """
        _check_k(k, self.n_items)
        if not (isinstance(tail, float) and 0.0 < tail < 0.5):
            raise FairjudgeInputError(f"`tail` must be a probability in (0, 0.5); got "
                                      f"{tail!r}")
        if k == self.n_items:
            return np.zeros(0, dtype=np.int64)
        distance = self._boundary_distance(k)
        doubt = np.flatnonzero(distance < stats.norm.isf(tail))
        return doubt[np.argsort(distance[doubt], kind="stable")]

    def _boundary_distance(self, k: int) -> np.ndarray:
        """``|score_i - c| / sd`` of :meth:`in_doubt`, (N,); 1 <= k < N."""
        order = np.lexsort((np.arange(self.n_items), -self.scores))
        inside, outside = order[k - 1], order[k]
        variance = self.centred_variances()
        boundary = 0.5 * (self.scores[inside] + self.scores[outside])
        spread = np.sqrt(variance + 0.5 * (variance[inside] + variance[outside]))
        with np.errstate(divide="ignore", invalid="ignore"):
            return np.where(spread > 0, np.abs(self.scores - boundary) / spread, np.inf)

    def joint_items(self, k: int | None) -> np.ndarray | None:
        """The items a sparse fit's draws take from their exact joint posterior for ``k``:
        those in doubt (:meth:`in_doubt`, the nearest the boundary first), up to
        :attr:`SparsePosterior.joint_capacity`; or None for a dense fit, without ``k``,
        with fewer than two items in doubt, or when their correlations are weak
        (:meth:`SparsePosterior.needs_joint`)."""
        if k is None or self.solver != "sparse":
            return None
        doubt = self.in_doubt(k)
        if doubt.size < 2 or not self.posterior.needs_joint(doubt):
            return None
        return doubt[:self.posterior.joint_capacity]

    def topk(self, k: int) -> np.ndarray:
        """Indices of the ``k`` highest posterior-mode scores, best first (ties: lower index)."""
        _check_k(k, self.n_items)
        order = np.lexsort((np.arange(self.n_items), -self.scores))
        return order[:k]

    def topk_membership(self, k: int, *, n_samples: int = 1500, rng=0) -> np.ndarray:
        """Monte-Carlo ``P(i in top-k)`` over :meth:`posterior_samples`; shape (N,)."""
        _check_k(k, self.n_items)
        check_n_samples(n_samples)
        if k == self.n_items:
            return np.ones(self.n_items)
        return membership_from_samples(self.posterior_samples(n_samples, rng, k=k), k,
                                       self.n_items)

    def win_probability(self) -> np.ndarray:
        """``P(i beats j)`` for a neutral presentation: ``sigmoid(theta_i - theta_j)``, (N, N).

        Bias terms are excluded: this is the preference the quality scores alone imply.
        """
        return expit(self.scores[:, None] - self.scores[None, :])

    def variance_inflation(self) -> np.ndarray:
        """How much not knowing the bias terms widens each item's score, shape (N,).

        The ratio of each centred score's posterior variance to its variance were the bias
        parameters known (the Gaussian conditional covariance ``S_tt - S_tb inv(S_bb) S_bt``
        of the Laplace covariance ``S``). Near 1, the verdicts separate quality from bias;
        far above 1, the covariates explain away what the verdicts say about the items (a
        covariate nearly collinear with quality, or few items per covariate), and the
        scores rest on the prior's assumption that quality is uncorrelated with the
        covariates [bias-aware-active-topk §3.1]. All ones for a fit without bias
        parameters.
        """
        n = self.n_items
        if self.solver == "sparse":
            full = self.posterior.centred_variances()
            conditional = self.posterior.conditional_centred_variances()
            with np.errstate(divide="ignore", invalid="ignore"):
                return np.where(conditional > 0, full / conditional, 1.0)
        if self.param_covariance.shape[0] == n:
            return np.ones(n)
        s = self.param_covariance
        known = s[:n, :n] - s[:n, n:] @ np.linalg.solve(s[n:, n:], s[n:, :n])
        full, conditional = centred_variances(self.covariance), centred_variances(known)
        with np.errstate(divide="ignore", invalid="ignore"):
            return np.where(conditional > 0, full / conditional, 1.0)

    def judge_reliability(self) -> dict:
        """``tau_j`` per judge: the temperature of its verdicts on the quality difference
        (1 for every judge of a model without reliabilities)."""
        fitted = {r.judge: float(np.exp(r.estimate)) for r in self.reliability}
        return {judge: fitted.get(judge, 1.0) for judge in self.judges}

    def bias_estimate(self, name: str, judge: str | None = None) -> BiasEstimate:
        """The bias coefficient called ``name`` (for ``judge``, if several judges)."""
        for b in self.bias:
            if b.name == name and (judge is None or b.judge == judge):
                return b
        raise KeyError(f"no bias coefficient {name!r}" + (f" for judge {judge!r}" if judge else ""))


def centred_variances(covariance: np.ndarray) -> np.ndarray:
    """``var(theta_i - mean(theta))`` for each item, shape (N,), in O(N^2)."""
    covariance = np.asarray(covariance, dtype=float)
    return np.clip(np.diag(covariance) - 2.0 * covariance.mean(axis=1) + covariance.mean(),
                   0.0, None)


def _check_k(k: int, n_items: int) -> None:
    if not (isinstance(k, (int, np.integer)) and 1 <= k <= n_items):
        raise FairjudgeInputError(f"`k` must be an integer between 1 and n_items={n_items}; got "
                                  f"{k!r}")


def standardise_covariates(covariates, covariate_names, n_items: int):
    """Validate covariates and return (standardised (N, d) array, names, scales)."""
    if covariates is None:
        return np.zeros((n_items, 0)), (), np.zeros(0)
    x = np.asarray(covariates, dtype=float)
    if x.ndim == 1:
        x = x[:, None]
    if x.ndim != 2 or x.shape[0] != n_items:
        raise FairjudgeInputError(
            f"`covariates` must have shape (n_items={n_items}, d); got {np.shape(covariates)}")
    if not np.all(np.isfinite(x)):
        raise FairjudgeInputError("`covariates` must be finite; found NaN or infinity")
    if covariate_names is None:
        covariate_names = tuple(f"x{m}" for m in range(x.shape[1]))
    covariate_names = tuple(str(c) for c in covariate_names)
    if len(covariate_names) != x.shape[1]:
        raise FairjudgeInputError(f"`covariate_names` has {len(covariate_names)} names for "
                                  f"{x.shape[1]} covariate columns")
    if POSITION in covariate_names:
        raise FairjudgeInputError(f"`{POSITION}` is reserved for the position term; rename the "
                                  "covariate")
    scale = x.std(axis=0)
    constant = np.flatnonzero(scale == 0)
    if constant.size:
        raise FairjudgeInputError(
            f"covariate `{covariate_names[constant[0]]}` is constant across items, so its "
            "effect cannot be estimated; drop it")
    return (x - x.mean(axis=0)) / scale, covariate_names, scale


def standardise_verdict_covariates(comparisons: Comparisons):
    """Per-verdict covariate differences on a standard scale: (array (M, d_v), names, scales).

    Each difference is divided by ``s = sqrt(mean(dx^2) / 2)``, the spread of one side's
    value when the two sides are independent: a per-verdict covariate is then on the same
    footing as a standardised item covariate, and the shrinkage prior ``lambda_b`` means the
    same for both. Differences are not centred: a nonzero mean difference is part of the
    signal (it would otherwise be absorbed by the position term).
    """
    names = comparisons.covariate_names
    if not names:
        return np.zeros((len(comparisons), 0)), (), np.zeros(0)
    if POSITION in names:
        raise FairjudgeInputError(f"`{POSITION}` is reserved for the position term; rename the "
                                  "covariate")
    dx = comparisons.covariate_diff
    scale = np.sqrt(np.mean(dx * dx, axis=0) / 2.0)
    zero = np.flatnonzero(scale == 0)
    if zero.size:
        raise FairjudgeInputError(
            f"per-verdict covariate `{names[zero[0]]}` has the same value for both answers of "
            "every verdict, so its effect cannot be estimated; drop it")
    return dx / scale, names, scale


def _check_common(comparisons: Comparisons, prior_precision: float) -> None:
    if not isinstance(comparisons, Comparisons):
        raise TypeError("`comparisons` must be a fairjudge.data.Comparisons "
                        "(use fairjudge.data.encode_verdicts)")
    if len(comparisons) == 0:
        raise FairjudgeInputError("`comparisons` is empty; at least one verdict is needed")
    if not (np.isfinite(prior_precision) and prior_precision > 0):
        raise FairjudgeInputError(
            f"`prior_precision` must be positive; got {prior_precision}. The Bradley–Terry "
            "likelihood alone leaves the origin of the scores undetermined.")


def fit_penalised_bt(comparisons: Comparisons, x_std: np.ndarray, names: tuple, scale: np.ndarray,
                     *, model: str, position: bool, prior_precision: float,
                     bias_prior_precision, init=None, tol: float = 1e-7, max_iter: int = 100,
                     check_graph: bool = True, solver: str = "auto") -> BTFit:
    """Fit Eq. (2) on already standardised covariates (shared by every estimator).

    ``solver``: ``"dense"`` (Cholesky of the full Hessian; exact covariance), ``"sparse"``
    (matrix-free conjugate gradients, :mod:`fairjudge.models._sparse`) or ``"auto"``: sparse
    above ``SPARSE_MIN_ITEMS`` items, where the dense N x N algebra dominates and its memory
    grows as N^2.
    """
    if solver not in SOLVERS:
        raise FairjudgeInputError(f"`solver` must be one of {', '.join(SOLVERS)}; got {solver!r}")
    v_std, v_names, v_scale = standardise_verdict_covariates(comparisons)
    clash = set(v_names) & set(names)
    if clash:
        raise FairjudgeInputError(f"covariate `{sorted(clash)[0]}` is given both per item and per "
                                  "verdict; keep one")
    pairs = aggregate_pairs(comparisons, v_std)
    if check_graph:
        warn_disconnected(table_components(pairs), comparisons.item_ids, stacklevel=3)
    names = tuple(names) + v_names
    scale = np.concatenate([np.asarray(scale, dtype=float), v_scale])
    q = x_std.shape[1] + len(v_names) + int(position)
    n_bias = comparisons.n_judges * q
    lam_b = np.broadcast_to(np.asarray(bias_prior_precision, dtype=float), (n_bias,)).copy()
    if n_bias and not np.all(np.isfinite(lam_b) & (lam_b > 0)):
        raise FairjudgeInputError("`bias_prior_precision` must be positive; got "
                                  f"{bias_prior_precision}")
    objective = PenalisedBT(pairs, x_std, position=position, prior_precision=prior_precision,
                            bias_prior_precision=lam_b)
    if init is not None and np.shape(init) != (objective.n_params,):
        init = None  # a warm start from a differently shaped model is useless
    if solver == "auto":
        solver = "sparse" if comparisons.n_items > SPARSE_MIN_ITEMS else "dense"
    if solver == "dense":
        # The Hessian, factored in place, and the covariance.
        require_dense_memory(objective.n_params, 2,
                             what=f"the {model} fit with the dense solver", instead=USE_SPARSE)
    if objective.n_params >= LARGE_PROBLEM:
        # Factorisations of up to PARALLEL_FACTOR parameters run on one thread; larger dense
        # ones use every core.
        threads = None if solver == "dense" and objective.n_params >= PARALLEL_FACTOR else 1
        with factorising_blas(threads):
            result = objective.newton(init, tol=tol, max_iter=max_iter, solver=solver)
    else:
        result = objective.newton(init, tol=tol, max_iter=max_iter, solver=solver)
    if not result.converged:
        warnings.warn(
            f"Newton fit did not converge in {max_iter} iterations (largest gradient "
            f"{result.max_abs_gradient:.2e}); raise `max_iter` or the prior precision",
            ConvergenceWarning, stacklevel=3)
    n_items = comparisons.n_items
    beta, cov = result.beta, result.covariance
    if solver == "sparse":
        bias_variance = np.diag(result.posterior.bias_covariance())
        notes = (result.sparse_note,)
    else:
        bias_variance = np.diag(cov)[n_items:]
        notes = ()
    bias_se = np.sqrt(np.clip(bias_variance, 0.0, None))
    bias = []
    per_judge = np.bincount(comparisons.judge, minlength=comparisons.n_judges)
    for j, judge in enumerate(comparisons.judges):
        base = j * q
        n_j = int(per_judge[j])
        for m, name in enumerate(names):
            bias.append(BiasEstimate(name, judge, float(beta[n_items + base + m] / scale[m]),
                                     float(bias_se[base + m] / scale[m]), n_j))
        if position:
            bias.append(BiasEstimate(POSITION, judge, float(beta[n_items + base + q - 1]),
                                     float(bias_se[base + q - 1]), n_j))
    return BTFit(
        model=model,
        item_ids=comparisons.item_ids,
        scores=beta[:n_items].copy(),
        # A view: the bias rows and columns stay in `param_covariance`, one N x N array.
        covariance=None if cov is None else cov[:n_items, :n_items],
        bias=tuple(bias),
        judges=comparisons.judges,
        covariate_names=names,
        params=beta,
        param_covariance=cov,
        covariate_scale=scale,
        prior_precision=float(prior_precision),
        bias_prior_precision=lam_b,
        n_comparisons=float(comparisons.weight.sum()),
        n_iter=result.n_iter,
        converged=result.converged,
        notes=notes,
        posterior=result.posterior,
    )


def bt_pairwise(comparisons: Comparisons, *, prior_precision: float = 1.0, init=None,
                tol: float = 1e-7, max_iter: int = 100, check_graph: bool = True,
                solver: str = "auto") -> BTFit:
    """Naive Bradley–Terry MAP: ``P(a beats b) = sigmoid(theta_a - theta_b)``.

    Model: each verdict is Bernoulli with that probability, whoever was shown first; a tie
    counts as half a win for each side. Prior ``theta ~ N(0, prior_precision^{-1} I)``.
    Solved by Newton's method with the analytic Hessian; the Laplace covariance is the
    inverse Hessian at the mode. This is Eq. (2) with ``c = kappa = 0``
    [bias-aware-active-topk §3]. Under a biased judge its estimand is
    ``theta + c x``, not ``theta`` (§5, Prop. 1).

    Parameters
    ----------
    comparisons : Comparisons
    prior_precision : float
        ``lambda`` > 0.
    init : ndarray, optional
        Warm start (a previous fit's ``params``).
    solver : {"auto", "dense", "sparse"}
        Dense Cholesky algebra, or matrix-free conjugate gradients for many items (``auto``:
        sparse above ``SPARSE_MIN_ITEMS`` = 2000 items; see :class:`SparsePosterior` for
        what a sparse fit's posterior computes exactly and what it estimates).

    Returns
    -------
    BTFit

    Examples
    --------
    >>> from fairjudge.data import Comparisons
    >>> c = Comparisons.from_outcomes([0, 1, 0], [1, 2, 2], ["a", "a", "a"], n_items=3)
    >>> fit = bt_pairwise(c)
    >>> [int(i) for i in fit.topk(3)]
    [0, 1, 2]
    """
    _check_common(comparisons, prior_precision)
    # Naive means no bias terms at all: per-verdict covariates are ignored too.
    comparisons = comparisons.without_covariates()
    x, names, scale = standardise_covariates(None, None, comparisons.n_items)
    return fit_penalised_bt(comparisons, x, names, scale, model="naive", position=False,
                            prior_precision=prior_precision, bias_prior_precision=1.0,
                            init=init, tol=tol, max_iter=max_iter, check_graph=check_graph,
                            solver=solver)


def bias_aware_bt(comparisons: Comparisons, covariates=None, *, covariate_names=None,
                  position: bool = True, prior_precision: float = 1.0,
                  bias_prior_precision=0.1, init=None, tol: float = 1e-7,
                  max_iter: int = 100, check_graph: bool = True, solver: str = "auto") -> BTFit:
    """Bias-aware Bradley–Terry MAP with a Laplace posterior [bias-aware-active-topk §3].

    Model, Eq. (1), for a verdict of judge ``j`` on ``a`` shown before ``b``::

        P(a preferred) = sigmoid(theta_a - theta_b + sum_m c_{j,m} (x_{a,m} - x_{b,m}) + kappa_j)

    Priors ``theta ~ N(0, lambda^{-1} I)`` and ``c_{j,m}, kappa_j ~ N(0, tau^2)`` with
    ``1/tau^2 = bias_prior_precision`` on standardised covariates (shrinkage: an unbiased
    judge's coefficients are pulled to zero). With one judge this is the paper's model;
    with several, ``theta`` is shared and each judge gets its own ``(c_j, kappa_j)`` (the
    paper's stated future work, §7). Ties count half a win for each side.

    Assumptions: the judge's bias is linear on the logit scale; presentation order varies
    (both orders of some pairs are seen), which identifies ``kappa`` from the likelihood
    (§3 "Posterior summaries", §5 Prop. 2 (iii)). Because covariates are item-level, the
    likelihood is unchanged along ``(theta + t x, c - t)``: ``c`` is identified only by the
    prior ``theta ~ N(0, lambda^{-1} I)``, i.e. by assuming quality is uncorrelated with the
    covariate (§5 Assumption 1). Its estimate is then close to the slope of the naive
    scores on the covariate, and its interval is driven by ``lambda``; when quality truly
    tracks the covariate (length that signals substance), the correction removes real
    signal (§6 Limitations) -- use :func:`trusted_anchor_gate` to decide.

    Per-verdict covariates (``comparisons.covariate_diff``: properties of the battle, such as
    the lengths of the two responses when each item is a *model* answering many prompts, as
    in Chatbot Arena's style control) enter the same linear predictor with their own
    ``c_{j,m}``. They vary within an item across its verdicts, so the likelihood identifies
    their coefficients without the independence assumption above; they are standardised by
    :func:`standardise_verdict_covariates`.

    Parameters
    ----------
    comparisons : Comparisons
    covariates : array_like, shape (N, d), optional
        Raw item covariates on the user's scale; standardised inside the model.
    covariate_names : sequence of str, optional
    position : bool
        Model a per-judge position term ``kappa_j``.
    prior_precision : float
        ``lambda`` > 0 (paper default 1).
    bias_prior_precision : float or array_like
        ``lambda_b = 1/tau^2`` (paper default 0.1), scalar or one value per bias parameter.
    init : ndarray, optional
        Warm start (a previous fit's ``params``).
    solver : {"auto", "dense", "sparse"}
        As in :func:`bt_pairwise`.

    Returns
    -------
    BTFit
        ``bias`` holds each coefficient on the user's scale (logits per covariate unit) with
        its Laplace standard error.

    Examples
    --------
    >>> import numpy as np
    >>> from fairjudge.data import Comparisons
    >>> c = Comparisons.from_outcomes([0, 1, 2, 1], [1, 0, 1, 2], ["a", "b", "a", "b"], n_items=3)
    >>> fit = bias_aware_bt(c, np.array([0.0, 1.0, 0.0]), covariate_names=["verbose"])
    >>> [b.name for b in fit.bias]
    ['verbose', 'position']
    """
    _check_common(comparisons, prior_precision)
    x, names, scale = standardise_covariates(covariates, covariate_names, comparisons.n_items)
    return fit_penalised_bt(comparisons, x, names, scale, model="bias-aware", position=position,
                            prior_precision=prior_precision,
                            bias_prior_precision=bias_prior_precision, init=init, tol=tol,
                            max_iter=max_iter, check_graph=check_graph, solver=solver)


def hierarchical_bias_aware_bt(comparisons: Comparisons, covariates=None, *,
                               covariate_names=None, position: bool = True,
                               prior_precision: float = 1.0,
                               initial_bias_prior_precision: float = 0.1,
                               min_tau2: float = 1e-3, max_tau2: float = 1e4,
                               tol: float = 1e-5, max_outer: int = 500,
                               check_graph: bool = True, solver: str = "auto") -> BTFit:
    """Bias-aware Bradley–Terry with the shrinkage strength learned per judge by empirical Bayes.

    Alternates the Laplace fit with the evidence (EM) update of each judge's prior variance
    [bias-aware-active-topk, Technical Appendix "Shrinkage strength"]::

        tau_j^2 <- mean over the judge's bias parameters b of (b_hat^2 + Var[b_hat])

    (with one covariate this is ``(c^2 + kappa^2 + Var c + Var kappa) / 2``), until the
    relative change of every ``tau_j^2`` is below ``tol``. ``tau_j^2`` is kept within
    ``[min_tau2, max_tau2]`` so that a judge with no detectable bias does not drive the
    prior to a point mass (EM approaches zero only geometrically; a judge at the floor counts
    as settled). Assumptions as in :func:`bias_aware_bt`.

    Returns
    -------
    BTFit
        ``model == "hierarchical"``; ``bias_prior_precision`` holds the learned ``1/tau_j^2``
        and ``notes`` the number of outer iterations.
    """
    _check_common(comparisons, prior_precision)
    x, names, scale = standardise_covariates(covariates, covariate_names, comparisons.n_items)
    q = x.shape[1] + len(comparisons.covariate_names) + int(position)
    if q == 0:
        raise FairjudgeInputError("the hierarchical model needs covariates or a position term")
    n_judges = comparisons.n_judges
    tau2 = np.full(n_judges, 1.0 / initial_bias_prior_precision)
    fit = None
    for outer in range(1, max_outer + 1):
        fit = fit_penalised_bt(comparisons, x, names, scale, model="hierarchical",
                               position=position, prior_precision=prior_precision,
                               bias_prior_precision=np.repeat(1.0 / tau2, q),
                               init=None if fit is None else fit.params,
                               check_graph=check_graph and outer == 1, solver=solver)
        b = fit.params[comparisons.n_items:].reshape(n_judges, q)
        var = np.diag(fit.bias_covariance()).reshape(n_judges, q)
        new_tau2 = np.clip((b * b + var).mean(axis=1), min_tau2, max_tau2)
        # A judge whose tau^2 reached the floor has no detectable bias; EM would only creep
        # towards zero geometrically, so it counts as settled.
        moving = new_tau2 > min_tau2
        change = float(np.max(np.abs(new_tau2 - tau2)[moving] / tau2[moving], initial=0.0))
        tau2 = new_tau2
        if change < tol:
            break
    else:
        warnings.warn(f"empirical-Bayes shrinkage did not settle in {max_outer} iterations "
                      f"(last relative change {change:.2e})", ConvergenceWarning, stacklevel=2)
    fit = fit_penalised_bt(comparisons, x, names, scale, model="hierarchical", position=position,
                           prior_precision=prior_precision,
                           bias_prior_precision=np.repeat(1.0 / tau2, q), init=fit.params,
                           check_graph=False, solver=solver)
    tau_note = ", ".join(f"{j}: tau={np.sqrt(t):.3g}" for j, t in zip(comparisons.judges, tau2))
    return _replace_notes(fit, (f"empirical Bayes: {outer} iterations; {tau_note}",))


def _replace_notes(fit: BTFit, notes: tuple) -> BTFit:
    return replace(fit, notes=fit.notes + notes)


def _hierarchical_fit(comparisons: Comparisons, covariates=None, *,
                      bias_prior_precision: float = 0.1, **kwargs) -> BTFit:
    # The fixed bias prior is only the starting value of the empirical-Bayes iteration.
    return hierarchical_bias_aware_bt(comparisons, covariates,
                                      initial_bias_prior_precision=bias_prior_precision, **kwargs)


register_model(ModelSpec("naive", "Bradley–Terry MAP on the verdicts as given", bt_pairwise,
                         warm_start=True, solver=True))
register_model(ModelSpec(
    "bias-aware", "Bradley–Terry with per-judge covariate and position bias terms",
    bias_aware_bt, covariates="optional", position=True, bias_prior=True, warm_start=True,
    solver=True))
register_model(ModelSpec(
    "hierarchical", "bias-aware Bradley–Terry, each judge's bias prior learned by empirical Bayes",
    _hierarchical_fit, covariates="optional", position=True, bias_prior=True, solver=True))
