"""Matrix-free Newton steps and a Laplace posterior for many items (the sparse path).

The Hessian of the penalised Bradley–Terry objective (:class:`PenalisedBT`, and the
reliability model's, whose ``b`` holds the log-reliabilities too) is, in blocks over the item
scores ``theta`` (N) and the bias parameters ``b`` (B, a handful)::

    H = [[A, C^T],
         [C, D  ]],        A = L + lambda I,

where ``L`` is the weighted Laplacian of the comparison graph (one edge per compared pair,
weighted by the summed curvature of its verdicts), ``C`` the item-bias cross terms and
``D`` the bias block. ``A`` has as many nonzeros as there are compared pairs, but a sparse
Cholesky factor of it fills in to nearly dense on random (Arena-like) graphs, so nothing
here factors it: every solve with ``A`` is preconditioned conjugate gradients, and the
bias parameters are eliminated by their Schur complement ``S = D - C A^{-1} C^T`` (B x B).

Two facts make the solves cheap and exact where it matters:

* ``A 1_C = lambda 1_C`` exactly for the indicator ``1_C`` of every connected component
  ``C`` of the comparison graph (a Laplacian annihilates what is constant on a
  component), so each component's level is solved in closed form and CG runs on the
  complement of those indicators, where ``A``'s smallest eigenvalue is ``lambda`` plus the
  components' algebraic connectivity. The preconditioner is Jacobi (``diag(A)``) projected
  onto that complement: on well-mixed comparison graphs the preconditioned spectrum
  clusters near one and CG needs a few dozen iterations whatever N is; on long chains of
  comparisons it needs many more.
* The posterior covariance of ``theta`` is ``A^{-1} + Y S^{-1} Y^T`` with ``Y = A^{-1} C^T``
  (N x B, already solved for the Newton step), so everything but ``diag(A^{-1})`` is exact.
"""

from __future__ import annotations

import functools
import os
import warnings
from concurrent.futures import ThreadPoolExecutor
from dataclasses import dataclass, field

import numpy as np
from scipy import linalg, sparse
from scipy.linalg import lapack
from scipy.sparse.csgraph import connected_components

from fairjudge._util._memory import available_memory
from fairjudge._util._rng import as_generator
from fairjudge._util._warnings import (
    ApproximationWarning,
    ConvergenceWarning,
    FairjudgeInputError,
)

#: Entries of a block of right-hand sides from which sparse products use every core.
PARALLEL_PRODUCT = 400_000
#: Relative residual of the CG solves behind posterior quantities.
POSTERIOR_RTOL = 1e-9
#: Relative residual of the probe solves of the diagonal estimate, far below the estimate's
#: own Monte-Carlo error: against probes solved to 1e-9, the estimates moved by at most
#: 1.3e-7 (relative) at 100,000 items with 20 verdicts each (9 CG iterations instead of 13)
#: and 6e-7 on a chain of 2,500 items, the worst-conditioned graph, whose stated standard
#: errors were 0.3% and 4.9%.
PROBE_RTOL = 1e-6
#: Rademacher probes of the diagonal estimate (its standard error is reported per item) to
#: start with: ``DEFAULT_PROBES`` solve probes (one CG solve each) and ``PRODUCT_PROBES``
#: product probes (four sparse products each); more are added, up to ``MAX_PROBES`` and
#: ``MAX_PRODUCT_PROBES``, while some entry's relative standard error exceeds
#: ``TARGET_ERROR``.
DEFAULT_PROBES = 12
MAX_PROBES = 96
PRODUCT_PROBES = 48
MAX_PRODUCT_PROBES = 384
#: The relative standard error wanted of every estimated marginal variance. An estimate's
#: error over its stated standard error has heavier tails than a normal's (a t with
#: probes - 1 degrees of freedom): over 5000 items the largest ratio was about 5 (measured
#: against the dense solver, 5000 items with about 10 verdicts each), so 0.4% keeps the 2%
#: goal. Entries still above it after the probes are solved exactly, the worst first: at
#: most ``MAX_EXACT`` of them, and fewer on large graphs (``EXACT_EDGE_BUDGET`` edges times
#: solves); any left above it raise an :class:`ApproximationWarning`.
TARGET_ERROR = 0.004
MAX_EXACT = 512
EXACT_EDGE_BUDGET = 3e8
#: Most items for which an estimate the probes and the exact solves leave imprecise is
#: replaced by ``diag(T)`` from one dense Cholesky factor: exact, where the estimate was
#: off by 29% on a chain of 3000 items. Measured on 2 cores, probes included:
#: 0.7 s and 0.3 GB more memory at 4000 items, 4 s and 0.8 GB at 8000.
DENSE_DIAGONAL_ITEMS = 8000
#: Most items drawn from their exact joint posterior (the items whose top-k membership is
#: in doubt, :meth:`SparsePosterior.block_makers`; 1500 draws of 500 cost 4e8 flops), and
#: the bound, in items times edges, of the CG solves behind their joint block.
MAX_JOINT_ITEMS = 500
JOINT_EDGE_BUDGET = 1e8
#: Correlation in ``T`` from which the items in doubt are drawn jointly, and how many of
#: them, the nearest the boundary first, have their exact block of ``T`` checked for it
#: (:meth:`SparsePosterior.needs_joint`).
JOINT_COUPLING = 0.25
JOINT_PROBE_ITEMS = 32

#: :meth:`LaplacianSystem.log_determinant`: exact (a dense Cholesky factor) up to this many
#: items, stochastic Lanczos quadrature above, with this many Rademacher probes and Lanczos
#: steps, and Lanczos bases of at most this many bytes at once.
EXACT_LOG_DET_ITEMS = 2000
LOG_DET_PROBES = 32
LANCZOS_STEPS = 60
LANCZOS_MEMORY = 200_000_000


class LaplacianSystem:
    """``A = L + lambda I`` of a comparison graph, applied without forming it densely.

    Parameters
    ----------
    n_items : int
    lo, hi : ndarray of int, shape (E,)
        The two items of each compared (unordered) pair, ``lo < hi``, sorted by
        ``(lo, hi)`` (as :class:`PenalisedBT` keeps them).
    prior_precision : float
        ``lambda`` > 0.

    Only the strict upper triangle is stored (a CSR matrix ``U`` of the edge weights, built
    once without sorting because the edges come sorted); ``A x = diag(A) x - U x - U^T x``.
    :meth:`set_weights` rewrites the values in place at every Newton step.
    """

    def __init__(self, n_items: int, lo: np.ndarray, hi: np.ndarray, prior_precision: float):
        self.n_items = int(n_items)
        self.prior_precision = float(prior_precision)
        self.lo, self.hi = lo, hi
        index = np.int32 if max(lo.size, self.n_items) < np.iinfo(np.int32).max else np.int64
        indptr = np.zeros(self.n_items + 1, dtype=index)
        np.cumsum(np.bincount(lo, minlength=self.n_items), out=indptr[1:])
        self.upper = sparse.csr_array((np.zeros(lo.size), hi.astype(index), indptr),
                                      shape=(self.n_items, self.n_items))
        self.link = self.upper.data
        self.diagonal = np.full(self.n_items, self.prior_precision)
        n_components, self.component = connected_components(self.upper, directed=False)
        self.component_size = np.bincount(self.component, minlength=n_components)
        self._indicator = (None if n_components == 1 else sparse.csr_array(
            (np.ones(self.n_items), (np.arange(self.n_items), self.component)),
            shape=(self.n_items, n_components)))

    def component_means(self, x: np.ndarray) -> np.ndarray:
        """Mean of each column of ``x`` (N, m) over each connected component, (C, m)."""
        if self._indicator is None:
            return x.mean(axis=0, keepdims=True)
        return (self._indicator.T @ x) / self.component_size[:, None]

    def spread(self, per_component: np.ndarray) -> np.ndarray:
        """Per-component rows (C, m) as per-item rows: (N, m), or (1, m) to broadcast when
        the graph is connected."""
        return per_component if self._indicator is None else per_component[self.component]

    def centre(self, x: np.ndarray) -> np.ndarray:
        """``P x``, in place: each column minus its mean over each item's component."""
        x -= self.spread(self.component_means(x))
        return x

    def set_weights(self, link: np.ndarray, diagonal: np.ndarray | None = None) -> None:
        """Edge weights ``link`` (shape (E,), the curvature summed over each pair) and, if
        the caller has it already, ``diag(A)`` (shape (N,): weighted degree plus ``lambda``)."""
        self.link[:] = link
        if diagonal is None:
            diagonal = (np.bincount(self.lo, link, self.n_items)
                        + np.bincount(self.hi, link, self.n_items) + self.prior_precision)
        self.diagonal = np.array(diagonal, dtype=float)

    def adjacency_product(self, x: np.ndarray) -> np.ndarray:
        """``W x`` with ``W = diag(A) - A`` the weighted adjacency; x (N, m).

        Many right-hand sides are split by column over the cores (scipy's sparse products
        run without the GIL; measured 2.6x faster on 2 cores for 96 columns at 100,000
        items, smaller column blocks also staying in cache). The pool lives for one call, so
        a process forked later never inherits a pool without threads.
        """
        workers = min(os.cpu_count() or 1, 4)
        if x.shape[1] < 2 * workers or x.size < PARALLEL_PRODUCT or workers == 1:
            return self.upper @ x + self.upper.T @ x
        blocks = np.array_split(np.arange(x.shape[1]), workers)

        def product(columns):
            part = np.ascontiguousarray(x[:, columns])
            return self.upper @ part + self.upper.T @ part

        with ThreadPoolExecutor(workers) as pool:
            return np.hstack(list(pool.map(product, blocks)))

    def product(self, x: np.ndarray) -> np.ndarray:
        """``A x``; x (N, m)."""
        return self.diagonal[:, None] * x - self.adjacency_product(x)

    def log_determinant(self, *, exact_items: int | None = None,
                        n_probes: int = LOG_DET_PROBES, steps: int = LANCZOS_STEPS,
                        seed=0) -> float:
        """``log det A`` at the current weights.

        Up to ``exact_items`` items (default :data:`EXACT_LOG_DET_ITEMS`), exact from a dense
        Cholesky factor. Above, the sum of ``log diag(A)`` plus ``tr log B`` for
        ``B = D^{-1/2} A D^{-1/2}`` (its spectrum in (0, 2)), estimated by stochastic
        Lanczos quadrature (Ubaru, Chen & Saad 2017):
        ``tr f(B) ~ N mean_z e_1^T f(T_z) e_1`` over ``n_probes`` Rademacher probes ``z``,
        ``T_z`` the tridiagonal of ``steps`` Lanczos steps from ``z`` (fully
        reorthogonalised). The probes are fixed by ``seed``, so the estimate is a smooth,
        deterministic function of the weights: differences and derivatives of it in a
        parameter that moves the weights (the reliability model's marginal likelihood) are
        far more precise than the estimate itself. Its error is the Hutchinson error of the
        trace, about ``sqrt(2 sum_{i != j} (log B)_ij^2 / n_probes)``, plus the quadrature's,
        which falls geometrically in ``steps / sqrt(cond(B))``.

        Parameters
        ----------
        exact_items : int, optional
            Most items solved exactly (default :data:`EXACT_LOG_DET_ITEMS`).
        n_probes, steps : int
            Rademacher probes and Lanczos steps of the estimate.
        seed : int or Generator
            Draws the probes (as :class:`SparsePosterior`'s ``seed``).

        Returns
        -------
        float
            ``log det A`` (nats).
        """
        n = self.n_items
        if n <= (EXACT_LOG_DET_ITEMS if exact_items is None else exact_items):
            dense = np.diag(self.diagonal) - self.upper.toarray()
            dense += np.triu(dense, 1).T
            factor = linalg.cholesky(dense, lower=True, check_finite=False)
            return 2.0 * float(np.sum(np.log(np.diag(factor))))
        scale = 1.0 / np.sqrt(self.diagonal)
        steps = min(steps, n)

        def normalised(x):
            return x - scale[:, None] * self.adjacency_product(scale[:, None] * x)

        rng = as_generator(seed)
        probes = rng.choice([-1.0, 1.0], size=(n, n_probes))
        group = max(1, min(n_probes, int(LANCZOS_MEMORY // (8 * n * (steps + 1)))))
        total = 0.0
        for start in range(0, n_probes, group):
            total += _lanczos_log_quadrature(normalised, probes[:, start:start + group],
                                             steps)
        return float(np.sum(np.log(self.diagonal)) + n * total / n_probes)

    def copy(self) -> "LaplacianSystem":
        """A snapshot whose values later :meth:`set_weights` calls do not change."""
        other = object.__new__(LaplacianSystem)
        other.__dict__.update(self.__dict__)
        other.upper = self.upper.copy()
        other.link = other.upper.data
        other.diagonal = self.diagonal.copy()
        return other

    def solve(self, rhs: np.ndarray, *, rtol=POSTERIOR_RTOL, x0: np.ndarray | None = None,
              max_iter: int | None = None) -> tuple[np.ndarray, "SolveReport"]:
        """``A^{-1} rhs`` for one or several right-hand sides, by projected Jacobi-PCG.

        Parameters
        ----------
        rhs : ndarray, shape (N,) or (N, m)
        rtol : float or array of shape (m,)
            Stop a column when ``||residual|| <= rtol * ||P rhs||`` (``P`` removes each
            component's mean; that part is solved exactly).
        x0 : ndarray, shape like ``rhs``, optional
            Warm start.
        max_iter : int, optional
            Default ``max(500, 20 sqrt(N))``.

        Returns
        -------
        (solution with the shape of ``rhs``, SolveReport)
        """
        vector = rhs.ndim == 1
        b = np.array(rhs, dtype=float, ndmin=2, copy=True)
        if vector:
            b = b.T
        m = b.shape[1]
        level = self.component_means(b)
        b -= self.spread(level)                           # P rhs, off the component levels
        rtol = np.broadcast_to(np.asarray(rtol, dtype=float), (m,))
        x = np.zeros_like(b) if x0 is None else np.array(x0, dtype=float, ndmin=2)
        if vector and x0 is not None:
            x = x.T
        self.centre(x)
        size = np.linalg.norm(b, axis=0)
        # A right-hand side constant on every component is solved by its level alone.
        x[:, size == 0] = 0.0
        inverse_diagonal = 1.0 / self.diagonal
        r = self.centre(b - self.product(x))
        target = rtol * size
        z = self.centre(r * inverse_diagonal[:, None])
        p = z.copy()
        rz = np.einsum("ij,ij->j", r, z)
        active = np.linalg.norm(r, axis=0) > target
        max_iter = max_iter or int(max(500, 20 * np.sqrt(self.n_items)))
        iterations = 0
        while active.any() and iterations < max_iter:
            iterations += 1
            # Views, not copies, while every column is still iterating (the usual case).
            cols = slice(None) if active.all() else np.flatnonzero(active)
            pc = p[:, cols]
            ap = self.centre(self.product(pc))
            alpha = rz[cols] / np.einsum("ij,ij->j", pc, ap)
            x[:, cols] += pc * alpha
            rc = r[:, cols] - ap * alpha
            r[:, cols] = rc
            zc = self.centre(rc * inverse_diagonal[:, None])
            rz_new = np.einsum("ij,ij->j", rc, zc)
            p[:, cols] = zc + pc * (rz_new / rz[cols])
            rz[cols] = rz_new
            active[cols] = np.linalg.norm(rc, axis=0) > target[cols]
        x += self.spread(level) / self.prior_precision     # A^{-1} 1_C = 1_C / lambda
        report = SolveReport(iterations, int(active.sum()), m)
        return (x[:, 0] if vector else x), report


def _lanczos_log_quadrature(apply, probes: np.ndarray, steps: int) -> float:
    """``sum_z e_1^T log(T_z) e_1`` over the columns ``z`` of ``probes`` (N, m), each
    normalised; ``T_z`` from ``steps`` Lanczos steps of the symmetric positive definite
    operator ``apply`` (N, m) -> (N, m), every column reorthogonalised against its whole
    basis (in floating point the plain recurrence loses orthogonality and repeats
    eigenvalues). A column whose Krylov space closes early (an exact invariant subspace)
    stops there."""
    n, m = probes.shape
    basis = np.empty((m, steps, n))                  # one row of vectors per probe
    alpha, beta = np.zeros((steps, m)), np.zeros((steps, m))
    q = (probes / np.linalg.norm(probes, axis=0)).T  # (m, N)
    live = np.ones(m, dtype=bool)
    length = np.full(m, steps)
    for j in range(steps):
        basis[:, j] = q
        w = np.ascontiguousarray(apply(np.ascontiguousarray(q.T)).T)
        alpha[j] = np.einsum("ij,ij->i", q, w)
        # Two passes of classical Gram-Schmidt against each probe's basis so far (batched
        # matrix-vector products).
        so_far = basis[:, :j + 1]
        for _ in range(2):
            w -= (np.matmul(np.matmul(so_far, w[:, :, None]).transpose(0, 2, 1), so_far)
                  [:, 0])
        norm = np.linalg.norm(w, axis=1)
        closed = live & (norm <= 1e-10 * np.maximum(np.abs(alpha[j]), 1e-300))
        length[closed] = j + 1
        live &= ~closed
        if j + 1 == steps or not live.any():
            break
        beta[j] = np.where(live, norm, 0.0)
        q = np.where(live[:, None], w / np.where(norm > 0, norm, 1.0)[:, None], 0.0)
    total = 0.0
    for col in range(m):
        k = length[col]
        values, vectors = linalg.eigh_tridiagonal(alpha[:k, col], beta[:k - 1, col])
        total += float(vectors[0] ** 2 @ np.log(values))
    return total


@dataclass(frozen=True)
class SolveReport:
    """CG iterations of one (block) solve and how many columns missed their tolerance."""

    iterations: int
    not_converged: int
    columns: int


def warn_unconverged(report: SolveReport, what: str) -> None:
    if report.not_converged:
        warnings.warn(f"conjugate gradients did not reach the tolerance for {what} in "
                      f"{report.iterations} iterations ({report.not_converged} of "
                      f"{report.columns} right-hand sides); the comparison graph is poorly "
                      "connected (long chains of comparisons)", ConvergenceWarning,
                      stacklevel=3)


class SchurNewtonStep:
    """Newton steps ``H^{-1} g`` by eliminating the bias block (B + 1 CG solves per step).

    ``s_b = S^{-1} (g_b - C A^{-1} g_theta)`` and ``s_theta = A^{-1} (g_theta - C^T s_b)``
    with ``S = D - C A^{-1} C^T``; ``Y = A^{-1} C^T`` is warm-started from the previous step,
    where it changes little.
    """

    def __init__(self, system: LaplacianSystem):
        self.system = system
        self.cross_solution = None      # Y = A^{-1} C^T, (N, B)
        self.schur = None               # S, (B, B)
        self.cg_iterations = 0

    def __call__(self, derivatives, *, gradient_rtol: float) -> np.ndarray:
        n = self.system.n_items
        self.system.set_weights(derivatives.link, derivatives.degree)
        grad, cross = derivatives.grad, derivatives.cross
        n_bias = cross.shape[0]
        rhs = np.empty((n, 1 + n_bias))
        rhs[:, 0] = grad[:n]
        rhs[:, 1:] = cross.T
        x0 = None
        if self.cross_solution is not None:
            x0 = np.column_stack([np.zeros(n), self.cross_solution])
        rtol = np.r_[gradient_rtol, np.full(n_bias, POSTERIOR_RTOL)]
        solution, report = self.system.solve(rhs, rtol=rtol, x0=x0)
        warn_unconverged(report, "a Newton step")
        self.cg_iterations += report.iterations
        y_grad, self.cross_solution = solution[:, 0], solution[:, 1:]
        step = np.empty_like(grad)
        if n_bias == 0:
            step[:] = y_grad
            self.schur = np.zeros((0, 0))
            return step
        schur = derivatives.block - cross @ self.cross_solution
        self.schur = 0.5 * (schur + schur.T)
        step[n:] = linalg.solve(self.schur, grad[n:] - cross @ y_grad, assume_a="pos")
        step[:n] = y_grad - self.cross_solution @ step[n:]
        return step

    def posterior(self, *, n_probes: int = DEFAULT_PROBES, rng=0) -> "SparsePosterior":
        """The Laplace posterior at the point of the last step."""
        n_bias = self.schur.shape[0]
        schur_inverse = (linalg.inv(self.schur) if n_bias else np.zeros((0, 0)))
        return SparsePosterior(self.system.copy(), self.cross_solution,
                               0.5 * (schur_inverse + schur_inverse.T), n_probes=n_probes,
                               seed=rng)


@dataclass
class SparsePosterior:
    """Laplace posterior ``N(mode, H^{-1})`` of a fit too large for an N x N covariance.

    Parameters
    ----------
    system : LaplacianSystem
        ``A`` at the mode.
    cross_solution : ndarray, shape (N, B)
        ``Y = A^{-1} C^T``.
    schur_inverse : ndarray, shape (B, B)
        ``S^{-1}``: exactly the posterior covariance of the bias parameters (and, for the
        reliability model, the log-reliabilities).
    n_probes : int
        Solve probes (one CG solve each) of the estimate of ``diag(A^{-1})`` to start with
        (more are added, up to :data:`MAX_PROBES`, while the estimate is imprecise; the
        product probes start at :data:`PRODUCT_PROBES`).
    seed : int or Generator
        Randomness of the probes (a fixed seed makes the estimate reproducible).
    max_exact : int
        Most items whose ``diag(A^{-1})`` entry is solved exactly when the probe estimate is
        not precise enough (see below; fewer on graphs of many edges).
    dense_items : int
        Most items for which a whole imprecise estimate is replaced by the exact diagonal
        of a dense factor (see below).

    Exact (to the CG tolerance, relative residual 1e-9): the bias covariance, the covariance
    of ``theta`` with the bias parameters, every contrast variance
    ``var(theta_i - theta_j)`` (:meth:`contrast_variance`, one CG solve per contrast) and
    the row sums of the covariance. Estimated: ``diag(A^{-1})``, hence the marginal
    variances (:meth:`marginal_variances`), with the standard error of each item's estimate
    (:meth:`marginal_variance_errors`).

    The diagonal estimate. With ``P`` the projection that removes each connected
    component's mean, ``A^{-1} = sum_C 1_C 1_C^T / (|C| lambda) + T`` where
    ``T = P A^{-1} P``. With ``D = diag(A)``, ``W = D - A`` and the Neumann terms
    ``N_k = (D^{-1} W)^k D^{-1}``, ``diag(T)`` is split into three parts:

    1. ``diag(P M P)`` for ``M = N_0 + N_1 + N_2``, computed exactly;
    2. ``diag(P (N_3 + N_4) P)``, estimated by Hutchinson's method from ``PRODUCT_PROBES``
       centred Rademacher probes and more, each four sparse products;
    3. ``diag(T - P (M + N_3 + N_4) P)``, estimated the same way from ``n_probes`` other
       probes, each one CG solve (the diagonal estimator of Bekas, Kokiopoulou & Saad 2007,
       with the five Neumann terms as a control variate).

    Before clipping at zero the estimate is unbiased (``P X P`` for symmetric ``X``
    satisfies ``E[z (P X P z)] = diag(P X P)`` for ``z = P r``, so centring the probes does
    not bias it). The variance of a part is about ``sum_{j != i} X_ij^2`` over its probes:
    on a well-mixed graph whose items have about ``d`` opponents each, about ``d^-3`` of
    ``diag(D^{-1})^2`` for part 2 and ``d^-5`` for part 3 (measured at 100,000 items with 20
    opponents each: 0.029 and 0.0029 relative per probe at most), so the many cheap probes
    carry the estimate and a few solves suffice. The per-item standard error combines the
    parts' (sample standard deviation over ``sqrt(probes)`` each, the two probe sets being
    independent). While some entry's relative standard error exceeds
    :data:`TARGET_ERROR`, probes are added to each part whose own error exceeds
    ``TARGET_ERROR / sqrt(2)`` -- as many as its ``1 / sqrt(probes)`` decay says it needs,
    and a fifth more -- up to :data:`MAX_PROBES` solve and :data:`MAX_PRODUCT_PROBES`
    product probes. The error is relative to ``T_ii`` plus the exact bias part, not to the
    whole variance: the level ``1 / (|C| lambda)`` cancels from centred variances and
    contrasts, and under a weak prior it would hide an imprecise ``T_ii``. Where the graph
    is not well mixed (a chain, a clique of items compared mostly among themselves) the
    probes are not enough, so the entries still above it are solved exactly instead, one
    CG solve each, the worst first (at most ``max_exact``, and ``EXACT_EDGE_BUDGET`` /
    edges); an exact entry's error is 0. When more entries than that miss the target and
    there are at most ``dense_items`` items, the whole diagonal comes from one dense
    Cholesky factor instead (exact; :meth:`_dense_factor`, where free memory allows). If
    some entry still exceeds the target,
    :meth:`marginal_variances` and the draws warn (:class:`ApproximationWarning`).
    """

    system: LaplacianSystem
    cross_solution: np.ndarray
    schur_inverse: np.ndarray
    n_probes: int = DEFAULT_PROBES
    seed: object = 0
    max_exact: int = MAX_EXACT
    dense_items: int = DENSE_DIAGONAL_ITEMS
    _cache: dict = field(default_factory=dict, repr=False)
    probes_used: int = field(default=0, init=False)
    """Solve probes the estimate took (``n_probes``, and more while imprecise)."""
    product_probes_used: int = field(default=0, init=False)
    """Product probes the estimate took (``PRODUCT_PROBES``, and more while imprecise)."""

    @property
    def n_items(self) -> int:
        return self.system.n_items

    def _level_variance(self) -> np.ndarray:
        """``1 / (|C| lambda)`` of each item's component ``C``, (N,)."""
        system = self.system
        return 1.0 / (system.component_size[system.component] * system.prior_precision)

    # -- exact pieces -----------------------------------------------------------------------
    def _bias_part(self) -> np.ndarray:
        """``Y S^{-1}``, shape (N, B)."""
        if "bias_part" not in self._cache:
            self._cache["bias_part"] = self.cross_solution @ self.schur_inverse
        return self._cache["bias_part"]

    def bias_covariance(self) -> np.ndarray:
        """Posterior covariance of the bias parameters, (B, B) (exact)."""
        return self.schur_inverse

    def row_sums(self) -> np.ndarray:
        """``Sigma 1``: each score's covariance with the sum of all scores, (N,) (exact)."""
        part = self._bias_part()
        return 1.0 / self.system.prior_precision + part @ self.cross_solution.sum(axis=0)

    def contrast_variance(self, i, j) -> np.ndarray:
        """``var(theta_i - theta_j)`` for index arrays ``i``, ``j`` (shape (K,), validated by
        the caller); exact up to the CG tolerance (one solve per contrast, together)."""
        n, k = self.n_items, np.arange(i.size)
        rhs = np.zeros((n, i.size))
        rhs[i, k] += 1.0
        rhs[j, k] -= 1.0
        solution, report = self.system.solve(rhs)
        warn_unconverged(report, "contrast variances")
        laplacian = solution[i, k] - solution[j, k]
        dy = self.cross_solution[i] - self.cross_solution[j]
        bias = np.einsum("kb,bc,kc->k", dy, self.schur_inverse, dy)
        return np.clip(laplacian + bias, 0.0, None)

    # -- the estimated diagonal -----------------------------------------------------------
    def _neumann_terms(self, z: np.ndarray, count: int) -> list:
        """``[N_0 z, ..., N_{count-1} z]``, ``N_k = (D^{-1} W)^k D^{-1}`` (the terms of the
        Neumann series of ``A^{-1}``); z (N, m), each term (N, m)."""
        inverse_diagonal = 1.0 / self.system.diagonal[:, None]
        terms = [z * inverse_diagonal]
        for _ in range(count - 1):
            terms.append(self.system.adjacency_product(terms[-1]) * inverse_diagonal)
        return terms

    def _centred_columns(self, items: np.ndarray, what: str):
        """``P e_i`` and ``A^{-1} P e_i`` for the items ``items`` (K,), both (N, K): one CG
        solve each; ``(P e_i)' A^{-1} P e_j = T_ij``."""
        unit = np.zeros((self.n_items, items.size))
        unit[items, np.arange(items.size)] = 1.0
        self.system.centre(unit)
        solved, report = self.system.solve(unit)
        warn_unconverged(report, what)
        return unit, solved

    def _exact_diagonal(self, items: np.ndarray) -> np.ndarray:
        """``T_ii`` for the items ``items`` (K,), one CG solve each."""
        unit, solved = self._centred_columns(items, "exact marginal variances")
        return np.einsum("nk,nk->k", unit, solved)

    def _centred_laplacian_diagonal(self) -> tuple[np.ndarray, np.ndarray]:
        """``diag(T)`` and the standard error of each entry, both (N,)."""
        if "centred_diagonal" in self._cache:
            return self._cache["centred_diagonal"]
        system, n = self.system, self.n_items
        d, link = system.diagonal, system.link
        second = (np.bincount(system.lo, link * link / d[system.hi], n)
                  + np.bincount(system.hi, link * link / d[system.lo], n)) / (d * d)
        # M is block diagonal by component, so (M 1_C)_i = (M 1)_i for i in C.
        neumann_row = sum(self._neumann_terms(np.ones((n, 1)), 3))
        size = system.component_size[system.component]
        exact = (1.0 / d + second - 2.0 * neumann_row[:, 0] / size
                 + system.component_means(neumann_row)[system.component, 0] / size)
        estimate, error = exact, np.zeros(n)
        if self.n_probes:
            rng = as_generator(self.seed)
            parts = {"solve": _ProbeSums(n), "product": _ProbeSums(n)}
            batches = {"solve": self.n_probes, "product": PRODUCT_PROBES}
            limits = {"solve": MAX_PROBES, "product": MAX_PRODUCT_PROBES}
            while True:
                for name, batch in batches.items():
                    if not batch:
                        continue
                    z = system.centre(rng.choice(np.array([-1.0, 1.0]), size=(n, batch)))
                    neumann = self._neumann_terms(z, 5)
                    if name == "solve":
                        solved, report = system.solve(z, rtol=PROBE_RTOL)
                        warn_unconverged(report, "the marginal variances")
                        rest = solved - sum(neumann)
                    else:
                        rest = neumann[3] + neumann[4]
                    parts[name].add(z * system.centre(rest))
                estimate = np.clip(exact + sum(p.mean() for p in parts.values()), 0.0, None)
                scale = self._precision_scale(estimate)
                error = np.sqrt(sum(p.error() ** 2 for p in parts.values()))
                if np.max(error / scale) <= TARGET_ERROR:
                    break
                # Each part gets the probes its error's 1/sqrt(probes) decay says bring it
                # to TARGET_ERROR / sqrt(2) (then the two together meet the target), and a
                # fifth more, as the standard error is itself estimated.
                share = TARGET_ERROR / np.sqrt(2.0)
                for name, part in parts.items():
                    relative = np.max(part.error() / scale)
                    wanted = int(np.ceil(part.used * (relative / share) ** 2 * 1.2))
                    batches[name] = (0 if relative <= share else
                                     min(max(wanted - part.used, 8), limits[name] - part.used))
                if not any(batches.values()):
                    break
            self.probes_used = parts["solve"].used
            self.product_probes_used = parts["product"].used
        estimate = np.clip(estimate, 0.0, None)
        relative = error / self._precision_scale(estimate)
        most = min(self.max_exact, max(32, int(EXACT_EDGE_BUDGET / max(link.size, 1))))
        imprecise = np.flatnonzero(relative > TARGET_ERROR)
        dense = None
        if imprecise.size > most:
            # A chain, clusters joined by a few comparisons: CG crawls there too. Too many
            # for exact solves one by one: one dense factor, if the pool is small enough
            # and memory allows.
            self._cache["badly_mixed"] = True
            dense = self._dense_diagonal()
        if dense is not None:
            estimate, error = dense, np.zeros(n)
        elif imprecise.size:
            worst = imprecise[np.argsort(-relative[imprecise])[:most]]
            estimate[worst] = np.clip(self._exact_diagonal(worst), 0.0, None)
            error[worst] = 0.0
        self._cache["centred_diagonal"] = (estimate, error)
        return self._cache["centred_diagonal"]

    def _dense_diagonal(self) -> np.ndarray | None:
        """``diag(T)``, (N,), exact to rounding, from a dense Cholesky factor (O(N^3) time,
        N^2 memory; :meth:`_dense_factor`), or None where that is not allowed."""
        factor = self._dense_factor()
        if factor is None:
            return None
        inverse, info = lapack.dtrtri(factor, lower=0, overwrite_c=1)
        _check_lapack(info)
        # (A + Q)^{-1} = U^{-1} U^{-T}: its diagonal is the row sums of squares of U^{-1}.
        inverse_diagonal = np.einsum("ik,ik->i", inverse, inverse)
        return np.clip(inverse_diagonal - self._shifted_level(), 0.0, None)

    def _dense_factor(self) -> np.ndarray | None:
        """The upper Cholesky factor ``U`` (N, N) of ``A + Q``, ``Q = sum_C 1_C 1_C^T / |C|``
        the projection onto the components' indicators; None above ``dense_items`` items or
        when the memory available (:func:`available_memory`) could not hold it twice.

        ``Q`` moves the eigenvalue ``lambda`` of every component's indicator to
        ``lambda + 1`` and leaves the rest of ``A`` as it is, so ``(A + Q)^{-1} = T +
        sum_C 1_C 1_C^T / (|C| (lambda + 1))``: ``T`` is recovered without subtracting a
        level of ``1 / (|C| lambda)``, which under a weak prior would swamp it in rounding.
        """
        system, n = self.system, self.n_items
        available = available_memory()
        if n > self.dense_items or (available is not None and 16 * n * n > available):
            return None
        dense = np.zeros((n, n), order="F")
        sizes = system.component_size
        if sizes.size == 1:
            dense += 1.0 / n
        else:
            for component in np.flatnonzero(sizes > 1):
                members = np.flatnonzero(system.component == component)
                dense[np.ix_(members, members)] += 1.0 / members.size
            alone = sizes[system.component] == 1
            dense[np.flatnonzero(alone), np.flatnonzero(alone)] += 1.0
        dense[system.lo, system.hi] -= system.link
        dense[np.diag_indices(n)] += system.diagonal
        factor, info = lapack.dpotrf(dense, lower=0, clean=1, overwrite_a=1)
        _check_lapack(info)
        return factor

    def _shifted_level(self) -> np.ndarray:
        """``1 / (|C| (lambda + 1))`` of each item's component, (N,): the level part of
        ``(A + Q)^{-1}`` (:meth:`_dense_factor`)."""
        system = self.system
        return 1.0 / (system.component_size[system.component] * (system.prior_precision + 1))

    @property
    def joint_capacity(self) -> int:
        """Most items :meth:`joint_block` serves (:data:`MAX_JOINT_ITEMS`; beyond
        ``dense_items`` items, also :data:`JOINT_EDGE_BUDGET` over the edges)."""
        if self.n_items <= self.dense_items:
            return MAX_JOINT_ITEMS
        edges = max(self.system.link.size, 1)
        return int(min(MAX_JOINT_ITEMS, max(2, JOINT_EDGE_BUDGET // edges)))

    def needs_joint(self, index: np.ndarray) -> bool:
        """Whether the items ``index`` (K,), ordered nearest the boundary first, should be
        drawn jointly. Yes when the graph is not well mixed (the diagonal estimate needed a
        dense factor or more exact solves than allowed); when two of them are compared so
        often with each other that their first-order correlation ``w_ij / sqrt(d_i d_j)``
        (the first Neumann term of ``T``) reaches :data:`JOINT_COUPLING` (an A/B pair); or
        when the exact block of ``T`` over the first :data:`JOINT_PROBE_ITEMS` of them
        holds a correlation that large (a group of items compared heavily with each other
        correlates through all its pairs, each pair's first-order term staying small)."""
        index = _check_items(index, self.n_items)
        memo = ("needs_joint", index.tobytes())  # (asked again for the same draws' table)
        if memo not in self._cache:
            self._cache[memo] = self._badly_mixed or self._strongly_correlated(index)
        return self._cache[memo]

    @property
    def _badly_mixed(self) -> bool:
        """Whether the diagonal estimate needed a dense factor or more exact solves than
        allowed (it is computed first if need be)."""
        self._centred_laplacian_diagonal()
        return "badly_mixed" in self._cache

    def _strongly_correlated(self, index: np.ndarray) -> bool:
        """The coupling and exact-block tests of :meth:`needs_joint`."""
        system = self.system
        chosen = np.zeros(self.n_items, dtype=bool)
        chosen[index] = True
        inside = chosen[system.lo] & chosen[system.hi]
        coupling = system.link[inside] / np.sqrt(system.diagonal[system.lo[inside]]
                                                 * system.diagonal[system.hi[inside]])
        if coupling.size and coupling.max() >= JOINT_COUPLING:
            return True
        probe = index[:min(JOINT_PROBE_ITEMS, self.joint_capacity)]
        if probe.size < 2:
            return False
        block = self.joint_block(probe)
        spread = np.sqrt(np.clip(np.diag(block), 1e-300, None))
        correlation = np.abs(block / spread[:, None] / spread[None, :])
        np.fill_diagonal(correlation, 0.0)
        return bool(correlation.max() >= JOINT_COUPLING)

    def joint_block(self, index: np.ndarray) -> np.ndarray:
        """``T``'s block over the items ``index`` (K,), (K, K), exact: K CG solves, or one
        dense factor (:meth:`_dense_factor`, where allowed) when the graph is not well mixed
        (CG would crawl) or the solves would exceed :data:`JOINT_EDGE_BUDGET`."""
        index = _check_items(index, self.n_items)
        costly = index.size * max(self.system.link.size, 1) > JOINT_EDGE_BUDGET
        factor = self._dense_factor() if costly or self._badly_mixed else None
        if factor is not None:
            unit = np.zeros((self.n_items, index.size))
            unit[index, np.arange(index.size)] = 1.0
            # (A + Q)^{-1} = U^{-1} U^{-T}: its block is X^T X with U^T X = E_index.
            solved = linalg.solve_triangular(factor, unit, trans="T", lower=False,
                                             overwrite_b=True)
            block = solved.T @ solved
            component = self.system.component[index]
            block -= np.where(component[:, None] == component[None, :],
                              self._shifted_level()[index][:, None], 0.0)
        else:
            unit, solved = self._centred_columns(index, "joint posterior draws")
            block = unit.T @ solved
        return 0.5 * (block + block.T)

    def _bias_variance(self) -> np.ndarray:
        """The exact bias part of each marginal variance, ``diag(Y S^{-1} Y^T)``, (N,)."""
        if "bias_variance" not in self._cache:
            self._cache["bias_variance"] = np.einsum("nb,nb->n", self._bias_part(),
                                                     self.cross_solution)
        return self._cache["bias_variance"]

    def _precision_scale(self, estimate: np.ndarray) -> np.ndarray:
        """What the error of each ``T_ii`` estimate is measured against, (N,): ``T_ii`` plus
        the exact bias part, what is left of a variance once the level ``1 / (|C| lambda)``
        cancels (centred variances, contrasts; the level is exact, and under a weak prior it
        would hide an imprecise ``T_ii``). An estimate below the exact lower bound
        ``T_ii >= (u^T u)^2 / (u^T A u) = (1 - 1/|C|)^2 / (d_i - lambda / |C|)``
        (``u = P e_i``, Cauchy-Schwarz) is measured against the bound."""
        system = self.system
        size = system.component_size[system.component]
        bound = (1.0 - 1.0 / size) ** 2 / np.maximum(
            system.diagonal - system.prior_precision / size, 1e-300)
        return np.maximum(np.maximum(estimate, bound) + self._bias_variance(), 1e-300)

    def max_relative_error(self) -> float:
        """The largest standard error of an estimated marginal variance, relative to that
        variance less the prior's level (exact, and cancelled by centring); 0 when every
        entry is exact."""
        diagonal, error = self._centred_laplacian_diagonal()
        return float(np.max(error / self._precision_scale(diagonal)))

    def _warn_if_imprecise(self, stacklevel: int) -> None:
        """Warn, once, where the estimate of ``diag(T)`` stayed above its target error."""
        if "warned" in self._cache:
            return
        self._cache["warned"] = True
        relative = self.max_relative_error()
        if relative > TARGET_ERROR:
            warnings.warn(
                f"the sparse solver's marginal variances, and the posterior draws behind "
                f"top-k membership and rank intervals, carry a relative standard error up to "
                f"{relative:.1%} on this comparison graph (not well mixed: chains or clusters "
                f"of items compared mostly among themselves, or edge weights that differ "
                f"widely, as with judges of very different reliability) after solving the "
                f"worst entries exactly; the true error can be several times the standard "
                f"error; fit with solver='dense' for exact ones",
                ApproximationWarning, stacklevel=stacklevel + 1)

    def marginal_variances(self) -> np.ndarray:
        """``var(theta_i)``, shape (N,): estimated ``diag(A^{-1})`` plus the exact bias part."""
        diagonal = self._centred_laplacian_diagonal()[0]
        self._warn_if_imprecise(stacklevel=3)
        return diagonal + self._level_variance() + self._bias_variance()

    def marginal_variance_errors(self) -> np.ndarray:
        """Standard error of each :meth:`marginal_variances` entry (Monte-Carlo), (N,)."""
        return self._centred_laplacian_diagonal()[1]

    def centred_variances(self) -> np.ndarray:
        """``var(theta_i - mean(theta))``, shape (N,) (same estimate; the level cancels)."""
        n = self.n_items
        rows = self.row_sums()
        return np.clip(self.marginal_variances() - 2.0 * rows / n + rows.mean() / n, 0.0, None)

    def conditional_centred_variances(self) -> np.ndarray:
        """``var(theta_i - mean(theta))`` were the bias parameters known, (N,)."""
        n = self.n_items
        diagonal = self._centred_laplacian_diagonal()[0] + self._level_variance()
        rows = 1.0 / self.system.prior_precision
        return np.clip(diagonal - 2.0 * rows / n + rows / n, 0.0, None)

    def covariance_block(self, index, *, exact: bool | None = None) -> np.ndarray:
        """Posterior covariance of the scores of the items ``index`` (shape (K,)), (K, K).

        ``exact=True`` solves ``T``'s columns of ``index`` (K CG solves); ``False`` keeps
        only ``T``'s diagonal, as :meth:`samples` does. The bias and level parts are exact
        either way. Default: exact when the K solves cost at most about as much as 10^8
        edge visits.
        """
        index = np.asarray(index, dtype=np.int64)
        system = self.system
        if exact is None:
            exact = index.size * max(system.link.size, 1) <= 1e8
        rows = self.cross_solution[index]
        block = rows @ self.schur_inverse @ rows.T
        component = system.component[index]
        same = component[:, None] == component[None, :]
        block += np.where(same, self._level_variance()[index][:, None], 0.0)
        if exact:
            unit, solved = self._centred_columns(index, "a covariance block")
            block += unit.T @ solved
        else:
            block[np.diag_indices(index.size)] += self._centred_laplacian_diagonal()[0][index]
        return 0.5 * (block + block.T)

    # -- samples -----------------------------------------------------------------------------
    def samples(self, mean: np.ndarray, n_samples: int, rng, *, chunk: int | None = None,
                joint=None):
        """Approximate posterior draws, yielded in blocks of shape (m, N).

        Each draw is ``mean + sqrt(diag T) * xi + Y L zeta + sum_C sqrt(1 / (|C| lambda))
        nu_C 1_C`` (``L L^T = S^{-1}``; ``xi``, ``zeta``, ``nu`` standard normal). Its
        covariance is ``diag(T) + Y S^{-1} Y^T + sum_C 1_C 1_C^T / (|C| lambda)``: the exact
        posterior except that ``T`` (the centred part of ``A^{-1}``) is replaced by its
        diagonal. So every marginal variance is the posterior's, the uncertainty of the
        bias terms and of each component's level move its items together as they should,
        and only the residual correlations between the scores of items compared with each
        other are dropped (of order one over an item's number of opponents on a well-mixed
        graph, but not for two items compared hundreds of times with each other, a core of
        items compared heavily among themselves, or a cluster joined to the rest by a few
        comparisons). ``joint`` lists items whose ``T`` block is
        drawn exactly instead (see :meth:`block_makers`). :meth:`BTFit.topk_membership`
        passes the items whose membership is in doubt (up to :attr:`joint_capacity` of
        them, the nearest the boundary first) when :meth:`needs_joint` finds their
        correlations strong: membership then keeps the correlations among the items that
        decide it, and drops only their correlations with items all but surely in or out.
        Rank intervals of the other items carry the approximation;
        :func:`fairjudge.models.topk_membership` on a dense covariance is exact.
        """
        for make in self.block_makers(mean, n_samples, rng, chunk=chunk, joint=joint):
            yield make()

    def block_makers(self, mean: np.ndarray, n_samples: int, rng, *,
                     chunk: int | None = None, joint=None) -> list:
        """The draws of :meth:`samples` as callables, one per block, each with its own
        generator seeded in order from ``rng``: blocks may be drawn on several threads (numpy
        draws without the GIL) and the result does not depend on which thread drew which.

        ``joint`` (item indices, optional): items whose part of ``T`` is drawn from its exact
        block (:meth:`joint_block`) rather than its diagonal, so that their correlations --
        two items compared hundreds of times with each other, a core compared heavily among
        itself, a cluster joined to the rest by a few comparisons -- are kept among them.
        :meth:`BTFit.posterior_samples` passes the items whose top-k membership is in doubt
        when :meth:`needs_joint` finds their correlations strong.
        """
        generator = as_generator(rng)
        n = self.n_items
        system = self.system
        spread = np.sqrt(self._centred_laplacian_diagonal()[0])
        self._warn_if_imprecise(stacklevel=4)
        joint = None if joint is None else _check_items(joint, n)
        joint_factor = None
        if joint is not None and joint.size > 1:
            joint_factor = _psd_factor(self.joint_block(joint))
        factor = (linalg.cholesky(self.schur_inverse, lower=True)
                  if self.schur_inverse.size else np.zeros((0, 0)))
        shared = self.cross_solution @ factor
        level = np.sqrt(1.0 / (system.component_size * system.prior_precision))
        chunk = chunk or max(1, min(n_samples, (1 << 23) // max(n, 1)))
        sizes = [min(chunk, n_samples - start) for start in range(0, n_samples, chunk)]
        seeds = generator.integers(0, 2**63, size=len(sizes))

        def make(m: int, seed: int) -> np.ndarray:
            draw = np.random.default_rng(seed)
            # float32 normals are drawn twice as fast; the draws themselves stay float64.
            block = draw.standard_normal((m, n), dtype=np.float32).astype(np.float64)
            block *= spread
            if joint_factor is not None:
                block[:, joint] = draw.standard_normal((m, joint.size)) @ joint_factor.T
            block += mean
            if shared.size:
                block += draw.standard_normal((m, shared.shape[1])) @ shared.T
            levels = draw.standard_normal((m, level.size)) * level
            block += levels if level.size == 1 else levels[:, system.component]
            return block

        return [functools.partial(make, m, int(seed)) for m, seed in zip(sizes, seeds)]


def _check_items(index, n_items: int) -> np.ndarray:
    """``index`` as distinct item indices in ``[0, n_items)``, (K,) int64, or a clear error."""
    index = np.asarray(index)
    if (index.ndim != 1 or not np.issubdtype(index.dtype, np.integer)
            or (index.size and (index.min() < 0 or index.max() >= n_items))
            or np.unique(index).size != index.size):
        raise FairjudgeInputError(f"items must be a 1-d array of distinct integer indices in "
                                  f"[0, {n_items}); got {index!r}")
    return index.astype(np.int64)


def _check_lapack(info: int) -> None:
    """A dense factor of the posterior precision failed: it is positive definite, so only
    rounding can bring this about."""
    if info != 0:
        raise np.linalg.LinAlgError(f"dense factor of the posterior precision failed "
                                    f"(LAPACK info {info})")


def _psd_factor(covariance: np.ndarray) -> np.ndarray:
    """A factor ``F`` with ``F F^T = covariance`` (K, K): Cholesky, or the eigenvalue
    square root (negative rounding clipped) for a covariance singular to rounding."""
    try:
        return linalg.cholesky(covariance, lower=True)
    except linalg.LinAlgError:
        values, vectors = linalg.eigh(covariance)
        return vectors * np.sqrt(np.clip(values, 0.0, None))


class _ProbeSums:
    """Running sums of one set of Hutchinson probe terms, each (N,): their mean and the
    standard error of the mean, per entry."""

    def __init__(self, n: int):
        self.used, self.total, self.squares = 0, np.zeros(n), np.zeros(n)

    def add(self, terms: np.ndarray) -> None:
        """Terms of new probes, (N, m)."""
        self.used += terms.shape[1]
        self.total += terms.sum(axis=1)
        self.squares += np.einsum("ij,ij->i", terms, terms)

    def mean(self) -> np.ndarray:
        return self.total / max(self.used, 1)

    def error(self) -> np.ndarray:
        """Sample standard deviation over sqrt(probes); zero with fewer than two probes."""
        if self.used < 2:
            return np.zeros_like(self.total)
        spread = np.clip(self.squares - self.total * self.total / self.used, 0.0, None)
        return np.sqrt(spread / (self.used - 1) / self.used)
