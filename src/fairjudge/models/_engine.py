"""Penalised Bradley–Terry likelihood with bias covariates: the numerical engine.

The likelihood of every model in :mod:`fairjudge.models` depends on the data only through
the weighted counts per (judge, first-shown item, second-shown item) triple, so verdicts are
aggregated once and all sums run over distinct ordered pairs.

Parameter vector ``beta`` (length ``N + J * q``)::

    [theta_0 .. theta_{N-1} | c_{0,1} .. c_{0,d}, kappa_0 | ... | c_{J-1,1} .. kappa_{J-1}]

with ``q = d + 1`` when the position term is modelled (``q = d`` otherwise), covariates
already standardised (item covariates first, then per-verdict covariates). This module is
private; the public estimators wrap it.
"""

from __future__ import annotations

from dataclasses import dataclass

import numpy as np
from scipy import linalg, sparse
from scipy.linalg import lapack

from fairjudge._util._rng import as_generator
from fairjudge.data._encode import Comparisons
from fairjudge.models._sparse import LaplacianSystem, SchurNewtonStep, SparsePosterior


@dataclass(frozen=True)
class PairTable:
    """Verdicts aggregated per distinct (judge, first, second) triple.

    ``n`` is the total weight of the triple and ``wins`` the weighted credit of the first-shown
    item (ties counting half).
    """

    first: np.ndarray
    second: np.ndarray
    judge: np.ndarray
    n: np.ndarray
    wins: np.ndarray
    n_items: int
    n_judges: int
    covariate_diff: np.ndarray | None = None
    """Per-verdict covariate differences of each row, shape (P, d_v), or None."""

    def judge_slices(self) -> list[slice]:
        """Each judge's rows (rows come sorted by judge, so each judge owns one slice)."""
        bounds = np.searchsorted(self.judge, np.arange(self.n_judges + 1))
        return [slice(int(bounds[j]), int(bounds[j + 1])) for j in range(self.n_judges)]

    def signed_incidence(self) -> tuple[sparse.csc_array, list]:
        """The signed incidence of items in rows, shape (N, P) (+1 for the first-shown item,
        -1 for the second), built column by column without sorting, and its column block of
        each judge's rows. Computed once per table, like :meth:`unordered_pairs`."""
        cached = self.__dict__.get("_incidence")
        if cached is None:
            n_pairs = self.n.shape[0]
            index = np.int32 if 2 * n_pairs < np.iinfo(np.int32).max else np.int64
            rows = np.empty(2 * n_pairs, dtype=index)
            rows[0::2], rows[1::2] = self.first, self.second
            signs = np.empty(2 * n_pairs)
            signs[0::2], signs[1::2] = 1.0, -1.0
            incidence = sparse.csc_array(
                (signs, rows, np.arange(0, 2 * n_pairs + 1, 2, dtype=index)),
                shape=(self.n_items, n_pairs))
            cached = (incidence, [incidence[:, rows_j] for rows_j in self.judge_slices()])
            object.__setattr__(self, "_incidence", cached)
        return cached

    def unordered_pairs(self) -> tuple[np.ndarray, np.ndarray, np.ndarray]:
        """``(lo, hi, inverse)``: the distinct unordered pairs ``lo < hi`` compared, sorted,
        each of shape (E,), and the index (P,) of each row's pair among them. Computed once
        per table (a sort of every row at large N) and shared by every fit and the graph
        check on it."""
        cached = self.__dict__.get("_unordered")
        if cached is None:
            cached = distinct_pairs(self.first, self.second, self.n_items)
            object.__setattr__(self, "_unordered", cached)
        return cached


def distinct_pairs(first: np.ndarray, second: np.ndarray, n_items: int
                   ) -> tuple[np.ndarray, np.ndarray, np.ndarray]:
    """``(lo, hi, inverse)``: the distinct unordered pairs ``lo < hi`` among the rows
    ``(first, second)`` (shape (M,) each), sorted, and the index (M,) of each row's pair."""
    lo, hi = np.minimum(first, second), np.maximum(first, second)
    keys, inverse = unique_keys(lo * n_items + hi, n_items * n_items)
    return (*np.divmod(keys, n_items), inverse)


def unique_keys(key: np.ndarray, n_keys: int) -> tuple[np.ndarray, np.ndarray]:
    """Sorted distinct values of integer ``key`` (all in ``[0, n_keys)``) and the inverse map.

    A dense histogram replaces sorting when the key space is small next to the data.
    """
    if n_keys <= max(4 * key.size, 1 << 22):
        present = np.zeros(n_keys, dtype=bool)
        present[key] = True
        uniq = np.flatnonzero(present)
        position = np.zeros(n_keys, dtype=np.int64)
        position[uniq] = np.arange(uniq.size)
        return uniq, position[key]
    return np.unique(key, return_inverse=True)


def aggregate_pairs(comparisons: Comparisons, verdict_design: np.ndarray | None = None
                    ) -> PairTable:
    """Collapse verdicts to one row per distinct (judge, first, second) triple.

    With per-verdict covariates (``verdict_design``, shape (M, d_v), already standardised)
    verdicts aggregate only when the triple and every covariate value agree, so the rows
    stay sorted by judge and the likelihood is unchanged. Without them the table is computed
    once per :class:`Comparisons` (whose arrays are not to be modified) and reused: a fit,
    the graph check and the assumption check's second fit all start from it.
    """
    if verdict_design is None or not verdict_design.shape[1]:
        cached = comparisons.__dict__.get("_pair_table")
        if cached is None:
            cached = _aggregate(comparisons, None)
            object.__setattr__(comparisons, "_pair_table", cached)
        return cached
    return _aggregate(comparisons, verdict_design)


def _aggregate(comparisons: Comparisons, verdict_design: np.ndarray | None) -> PairTable:
    n_items, n_judges = comparisons.n_items, comparisons.n_judges
    key = (comparisons.judge * n_items + comparisons.first) * n_items + comparisons.second
    credit = comparisons.weight * comparisons.first_score
    if verdict_design is not None and verdict_design.shape[1]:
        rows = np.column_stack([key.astype(float), verdict_design])
        uniq_rows, inverse = np.unique(rows, axis=0, return_inverse=True)
        inverse = inverse.reshape(-1)
        uniq = uniq_rows[:, 0].astype(np.int64)
        diff = uniq_rows[:, 1:]
    else:
        uniq, inverse = unique_keys(key, n_judges * n_items * n_items)
        diff = None
    n = np.bincount(inverse, weights=comparisons.weight, minlength=uniq.size)
    wins = np.bincount(inverse, weights=credit, minlength=uniq.size)
    judge, rest = np.divmod(uniq, n_items * n_items)
    first, second = np.divmod(rest, n_items)
    return PairTable(first, second, judge, n, wins, n_items, n_judges, diff)


@dataclass(frozen=True)
class Derivatives:
    """Objective, gradient and Hessian pieces at one point (see :meth:`PenalisedBT.derivatives`
    and the reliability model's ``sparse_derivatives``).

    ``link`` (E,) is the Laplacian's edge weight of each compared unordered pair (in the
    order of ``PenalisedBT.unordered_pairs``), ``cross`` (B, N) and ``block`` (B, B) the
    item-bias and bias-bias parts; ``degree`` (N,) is ``diag(A)`` (prior included).
    """

    value: float
    grad: np.ndarray
    link: np.ndarray
    cross: np.ndarray
    block: np.ndarray
    lo: np.ndarray
    hi: np.ndarray
    degree: np.ndarray

    def assemble_lower(self, hess: np.ndarray) -> np.ndarray:
        """Write the lower triangle of the (P, P) Hessian into ``hess``; returns it."""
        n_items = self.degree.size
        hess.fill(0.0)
        # Quality block: a weighted graph Laplacian (off-diagonal cells at (hi, lo), hi > lo).
        hess[self.hi, self.lo] = -self.link
        diagonal = np.arange(n_items)
        hess[diagonal, diagonal] = self.degree
        hess[n_items:, :n_items] = self.cross
        hess[n_items:, n_items:] = self.block
        return hess


class PenalisedBT:
    """Negative log-posterior of Eq. (2), its gradient and Hessian, and a Newton solver.

    Parameters
    ----------
    pairs : PairTable
    covariates : ndarray, shape (N, d)
        Standardised item covariates (``d`` may be 0). Per-verdict covariates, already
        standardised, come with the pair table (``pairs.covariate_diff``) and follow the
        item covariates in each judge's block of bias parameters.
    position : bool
        Whether each judge has a position term ``kappa_j``.
    prior_precision : float
        ``lambda`` of the prior ``theta ~ N(0, lambda^{-1} I)``.
    bias_prior_precision : ndarray, shape (J * q,)
        Prior precision ``1 / tau^2`` of every bias parameter.
    """

    def __init__(self, pairs: PairTable, covariates: np.ndarray, *, position: bool,
                 prior_precision: float, bias_prior_precision: np.ndarray):
        self.pairs = pairs
        self.n_items = pairs.n_items
        self.n_judges = pairs.n_judges
        d = covariates.shape[1]
        verdict_dx = (np.zeros((pairs.n.shape[0], 0)) if pairs.covariate_diff is None
                      else pairs.covariate_diff)
        d += verdict_dx.shape[1]
        self.q = d + int(position)
        self.n_bias = self.n_judges * self.q
        self.n_params = self.n_items + self.n_bias
        self.prior_precision = float(prior_precision)
        self.bias_prior_precision = np.asarray(bias_prior_precision, dtype=float)
        # Design of the bias part of each pair: covariate differences and the position 1.
        dx = np.hstack([covariates[pairs.first] - covariates[pairs.second], verdict_dx])
        self.bias_design = np.hstack([dx, np.ones((dx.shape[0], 1))]) if position else dx
        self.judge_slices = pairs.judge_slices()
        # Each unordered pair {lo, hi} fills two off-diagonal Hessian cells; precomputing the
        # map lets the Hessian be written by assignment instead of an N x N histogram.
        self._lo, self._hi, self._unordered_inverse = pairs.unordered_pairs()
        # Work buffers reused across Newton iterations: fresh multi-megabyte arrays would
        # cost page faults on every call.
        n_pairs = pairs.n.shape[0]
        self._eta = np.empty(n_pairs)
        self._prob = np.empty(n_pairs)
        self._resid = np.empty(n_pairs)
        self._curv = np.empty(n_pairs)
        self._zc = np.empty((n_pairs, self.q))
        # ``incidence @ w`` sums a per-pair quantity into items, several columns in one
        # pass (about ten times faster than pairs of bincounts).
        self._incidence, self._judge_incidence = pairs.signed_incidence()
        self._eta_of = None  # the parameters `_eta` was last computed at by `value`

    # -- likelihood pieces -------------------------------------------------------------
    def linear_predictor(self, beta: np.ndarray, out: np.ndarray | None = None) -> np.ndarray:
        p, n_items, q = self.pairs, self.n_items, self.q
        eta = np.subtract(beta[p.first], beta[p.second], out=out)
        if q:
            for j, rows in enumerate(self.judge_slices):
                start = n_items + j * q
                eta[rows] += self.bias_design[rows] @ beta[start:start + q]
        return eta

    def value(self, beta: np.ndarray) -> float:
        """Negative log-posterior (up to a constant)."""
        eta = self.linear_predictor(beta, out=self._eta)
        self._eta_of = beta.copy()
        return self._value_and_probability(beta, eta, with_probability=False)

    def _value_and_probability(self, beta: np.ndarray, eta: np.ndarray, *,
                               with_probability: bool) -> float:
        """The objective at ``eta``; with ``with_probability``, ``sigmoid(eta)`` is left in
        ``self._prob`` from the same exponential (one ``exp`` serves both)."""
        e = np.abs(eta, out=self._resid)
        np.negative(e, out=e)
        np.exp(e, out=e)                                  # exp(-|eta|), in (0, 1]
        if with_probability:
            # sigmoid(eta) = 1 / (1 + e) for eta >= 0 and e / (1 + e) below, stably.
            prob = np.add(e, 1.0, out=self._prob)
            np.reciprocal(prob, out=prob)
            np.multiply(prob, e, out=self._curv)
            np.copyto(prob, self._curv, where=eta < 0)
        # softplus(eta) = max(eta, 0) + log1p(exp(-|eta|)), stable and ~3x faster than
        # np.logaddexp(0, eta) on large arrays.
        softplus = np.log1p(e, out=e)
        softplus += np.maximum(eta, 0.0, out=self._curv)
        nll = float(np.dot(self.pairs.n, softplus) - np.dot(self.pairs.wins, eta))
        theta, bias = beta[: self.n_items], beta[self.n_items:]
        return nll + 0.5 * self.prior_precision * float(theta @ theta) + 0.5 * float(
            np.dot(self.bias_prior_precision, bias * bias))

    def derivatives(self, beta: np.ndarray) -> "Derivatives":
        """Objective, gradient and the Hessian's pieces at ``beta`` in one pass over the pairs.

        The Hessian is ``[[A, C^T], [C, D]]``: ``A`` (N x N) is the weighted graph Laplacian
        of the comparison graph (edge weights ``link``) plus ``lambda I``; ``C`` (B x N) the
        item-bias cross terms; ``D`` (B x B) the bias block with its prior.
        """
        p, n_items, q = self.pairs, self.n_items, self.q
        if self._eta_of is not None and np.array_equal(self._eta_of, beta):
            eta = self._eta          # the line search's accepted trial point
        else:
            eta = self.linear_predictor(beta, out=self._eta)
        self._eta_of = None
        value = self._value_and_probability(beta, eta, with_probability=True)
        prob = self._prob
        resid = np.multiply(p.n, prob, out=self._resid)
        resid -= p.wins                                   # d nll / d eta
        curv = np.subtract(1.0, prob, out=self._curv)
        curv *= prob
        curv *= p.n                                       # d^2 nll / d eta^2
        grad = np.empty(self.n_params)
        grad[:n_items] = self._incidence @ resid
        link = np.bincount(self._unordered_inverse, curv, self._lo.size)
        cross = np.zeros((self.n_bias, n_items))
        block = np.zeros((self.n_bias, self.n_bias))
        if q:
            zc = self._zc
            np.multiply(self.bias_design, curv[:, None], out=zc)
            for j, rows in enumerate(self.judge_slices):
                start = j * q
                z = self.bias_design[rows]
                grad[n_items + start:n_items + start + q] = resid[rows] @ z
                # d^2 / (d b_m d theta): +curv z_m at the first item, -curv z_m at the second.
                cross[start:start + q] = (self._judge_incidence[j] @ zc[rows]).T
                block[start:start + q, start:start + q] = z.T @ zc[rows]
        theta, bias = beta[:n_items], beta[n_items:]
        grad[:n_items] += self.prior_precision * theta
        grad[n_items:] += self.bias_prior_precision * bias
        block[np.diag_indices(self.n_bias)] += self.bias_prior_precision
        degree = (np.bincount(self._lo, link, n_items) + np.bincount(self._hi, link, n_items)
                  + self.prior_precision)
        return Derivatives(value, grad, link, cross, block, self._lo, self._hi, degree)

    def evaluate(self, beta: np.ndarray) -> tuple[float, np.ndarray, np.ndarray]:
        """Value, gradient (P,) and the **lower triangle** of the Hessian (P, P).

        Only the lower triangle (and diagonal) is written: it is all a lower Cholesky
        factorisation reads.
        """
        d = self.derivatives(beta)
        hess = d.assemble_lower(np.empty((self.n_params, self.n_params), order="F"))
        return d.value, d.grad, hess

    def gradient_hessian(self, beta: np.ndarray) -> tuple[np.ndarray, np.ndarray]:
        """Analytic gradient (P,) and full symmetric Hessian (P, P) of :meth:`value`."""
        _, grad, lower = self.evaluate(beta)
        return grad, symmetrise_lower(lower)

    # -- solver -------------------------------------------------------------------------
    def default_start(self) -> np.ndarray:
        """Cold start: smoothed log-odds of each item's win rate, bias terms at zero.

        Close to the Bradley–Terry solution when opponents are spread out; it saves the
        first two or three Newton steps of a start from zero on large problems.
        """
        p, n = self.pairs, self.n_items
        games = np.bincount(p.first, p.n, n) + np.bincount(p.second, p.n, n)
        wins = np.bincount(p.first, p.wins, n) + np.bincount(p.second, p.n - p.wins, n)
        beta = np.zeros(self.n_params)
        beta[:n] = np.log((wins + 1.0) / (games - wins + 1.0))
        beta[:n] -= beta[:n].mean()
        return beta

    def newton(self, init: np.ndarray | None = None, *, tol: float = 1e-7,
               max_iter: int = 100, solver: str = "dense", rng=0) -> "NewtonResult":
        """Minimise by damped Newton steps (Armijo backtracking).

        Stops when the largest parameter change of a Newton step is below ``tol`` and takes
        that last step: convergence is quadratic there, so the final error is of order
        ``tol**2`` times the curvature ratio, far below ``tol``.

        ``solver="dense"`` factors the Hessian (Cholesky) and returns the full covariance;
        ``"sparse"`` solves each step matrix-free (:class:`SchurNewtonStep`) and returns a
        :class:`SparsePosterior` (``rng`` seeds its diagonal estimate) instead.
        """
        beta = self.default_start() if init is None else np.array(init, dtype=float)
        if solver == "sparse":
            stepper = SchurNewtonStep(LaplacianSystem(self.n_items, self._lo, self._hi,
                                                      self.prior_precision))
        else:
            stepper = _CholeskyStep(self.n_params)
        d = self.derivatives(beta)
        first_gradient = max(float(np.max(np.abs(d.grad))), 1e-300)
        converged = False
        n_iter = 0
        for n_iter in range(1, max_iter + 1):
            # Inexact Newton (Eisenstat–Walker): solve loosely while far from the mode.
            forcing = min(1e-2, float(np.max(np.abs(d.grad))) / first_gradient)
            step = stepper(d, gradient_rtol=max(forcing, 1e-12))
            if np.max(np.abs(step)) < tol:
                beta = beta - step
                converged = True
                break
            decrement = float(d.grad @ step)
            t = 1.0
            # Near the optimum (Newton decrement well below one nat) the full step is safe,
            # and an Armijo test would only compare rounding noise.
            if decrement > 0.1:
                t = backtrack(self.value, beta, step, d.value, decrement)[0]
            beta = beta - t * step
            d = self.derivatives(beta)
        if not converged:
            stepper(d, gradient_rtol=1e-12)  # the posterior at `beta`, whose `d` is at hand
        objective = self.value(beta)
        # On convergence the last factor belongs to a point less than `tol` from `beta`.
        if solver == "sparse":
            return NewtonResult(beta, None, objective, n_iter, converged,
                                float(np.max(np.abs(d.grad))),
                                posterior=stepper.posterior(rng=rng),
                                cg_iterations=stepper.cg_iterations)
        return NewtonResult(beta, stepper.covariance(), objective, n_iter, converged,
                            float(np.max(np.abs(d.grad))),
                            posterior=DenseFactor(stepper.factor[0], self.n_items))


def backtrack(value, beta: np.ndarray, step: np.ndarray, current: float,
              decrement: float) -> tuple[float, float]:
    """Armijo backtracking along ``beta - t step``: halve ``t`` from 1 until ``value`` falls
    by a quarter of ``t`` times the Newton ``decrement`` below ``current`` (or ``t`` is below
    1e-10); returns ``(t, value there)``."""
    t = 1.0
    while True:
        candidate = value(beta - t * step)
        if candidate <= current - 0.25 * t * decrement or t < 1e-10:
            return t, candidate
        t *= 0.5


class _CholeskyStep:
    """Dense Newton steps: the Hessian assembled and factored in place (lower Cholesky)."""

    def __init__(self, n_params: int):
        self.hessian = np.empty((n_params, n_params), order="F")
        self.factor = None

    def __call__(self, derivatives: Derivatives, *, gradient_rtol: float) -> np.ndarray:
        derivatives.assemble_lower(self.hessian)
        self.factor = linalg.cho_factor(self.hessian, lower=True, overwrite_a=True,
                                        check_finite=False)
        return linalg.cho_solve(self.factor, derivatives.grad, check_finite=False)

    def covariance(self) -> np.ndarray:
        """The inverse of the last factored Hessian (a new array, symmetrised in place)."""
        inverse, info = lapack.dpotri(self.factor[0], lower=1, overwrite_c=0)
        if info != 0:
            raise np.linalg.LinAlgError(f"Hessian inversion failed (LAPACK info {info})")
        return symmetrise_lower(inverse)


def symmetrise_lower(matrix: np.ndarray) -> np.ndarray:
    """Copy the lower triangle onto the upper one, in place, in column blocks (no N x N
    temporaries); returns ``matrix``."""
    n = matrix.shape[0]
    block = 512
    for start in range(0, n, block):
        stop = min(start + block, n)
        # rows start:stop of the upper triangle = columns start:stop of the lower one
        matrix[start:stop, stop:] = matrix[stop:, start:stop].T
        tile = matrix[start:stop, start:stop]
        upper = np.triu_indices(stop - start, 1)
        tile[upper] = tile.T[upper]
    return matrix


@dataclass(frozen=True)
class NewtonResult:
    beta: np.ndarray
    covariance: np.ndarray | None
    """Full posterior covariance (dense solver) or None (sparse solver)."""
    objective: float
    n_iter: int
    converged: bool
    max_abs_gradient: float
    posterior: SparsePosterior | DenseFactor | None = None
    cg_iterations: int = 0

    @property
    def sparse_note(self) -> str:
        """What a sparse fit's notes say of its solve."""
        return (f"sparse solver: {self.n_iter} Newton steps, {self.cg_iterations} "
                "conjugate-gradient iterations")


@dataclass(frozen=True)
class DenseFactor:
    """The lower Cholesky factor ``L`` of the Hessian at the mode (``H = L L^T``), kept so
    posterior draws need no second factorisation: ``L^{-T} z`` has covariance ``H^{-1}``.

    ``lower`` is (P, P) with garbage above the diagonal; the first ``n_items`` parameters are
    the scores.
    """

    lower: np.ndarray
    n_items: int

    def samples(self, mean: np.ndarray, n_samples: int, rng, *, chunk: int | None = None):
        """Exact draws of the scores from ``N(mean, H^{-1}[:N, :N])``, in blocks (m, N)."""
        generator = as_generator(rng)
        n_params = self.lower.shape[0]
        chunk = chunk or max(1, min(n_samples, (1 << 23) // max(n_params, 1)))
        for start in range(0, n_samples, chunk):
            m = min(chunk, n_samples - start)
            z = generator.standard_normal((n_params, m))
            draws = linalg.solve_triangular(self.lower, z, lower=True, trans="T",
                                            check_finite=False, overwrite_b=True)
            yield mean + draws[: self.n_items].T
