"""Benchmark: fitting a Bradley–Terry model, fairjudge against other Python packages.

What is measured
----------------
Synthetic pairwise verdicts are drawn for each problem size ``(N items, M comparisons)``
(default ``50x10000, 200x100000, 1000x1000000``):

* ``theta ~ N(0, 1)`` per item and an integer ``length`` covariate per item (uniform on
  50..800 words);
* ``M`` comparisons with ``item_a`` uniform and ``item_b`` uniform among the other items;
  the first-shown item wins with probability
  ``sigmoid(theta_a - theta_b + 0.004 (len_a - len_b) + 0.3)``; no ties.

The same data are given to every method in the form it expects (integer arrays, a list of
``(winner, loser)`` pairs, count matrices, a sparse design, or pandas DataFrames). Only the
call that fits is timed, unless the row says otherwise ("DataFrames in" rows time the whole
way from the tables).

Columns of the table:

``seconds``
    Best of 3 runs (2 for the largest size) of ``time.perf_counter``. A method whose single
    run takes more than 60 s is not repeated; the choix solvers run in a forked child that is
    stopped after a deadline, in which case the row shows ``>deadline``.
``peak MB``
    ``tracemalloc`` peak during one extra run of the call: every Python-heap allocation,
    which includes numpy array buffers. It does not see BLAS/LAPACK work space or memory a
    native extension allocates itself (evalica's Rust core, for instance).
``max|dev|``
    ``max_i |(theta_i - mean theta) - (ref_i - mean ref)|`` on the logit scale, against a
    tightly converged reference (fairjudge's Newton solver at ``tol=1e-12``) with the same
    Gaussian prior ``lambda ||theta||^2 / 2``: the bias-aware fit for rows that use the
    covariate, the naive fit for the others. Packages without that prior are also compared
    with a maximum-likelihood reference (``vs ML`` in the note), which tells convergence
    apart from a different objective.

An acquisition step of the active top-k loop (``topk_membership`` with S=1500 samples, then
``pair_scores("topk", ...)``) is timed at N=300 and N=2000 on a posterior fitted to 20 N
random verdicts, and the script ends with the performance targets, MET or NOT MET.

How to run
----------
::

    pip install -e '.[bench]'           # choix, evalica, arenakit, scikit-learn, pyarrow
    python benchmarks/bench_fit.py --quick
    python benchmarks/bench_fit.py      # all sizes; a few minutes on 2 cores
    python benchmarks/bench_fit.py --sizes 50x10000,200x100000

A competitor that is not installed gets a row saying so; the other rows still run.

Scaling mode (``--scaling``)
----------------------------
The table of the "Scale" goals: each cell ``(N, M)`` of ``--grid`` (default N in {1k, 10k,
100k} times M in {1M, 10M}) is one synthetic problem with ``--judges`` judges (default 2):

* ``theta ~ N(0, 1)``, an integer ``length`` per item (uniform on 50..800 words);
* per verdict a judge ``j`` uniform, ``item_a`` uniform, ``item_b`` uniform among the
  others; the first-shown item wins with probability
  ``sigmoid(theta_a - theta_b + 0.3 (len_a - len_b) / sd(len) + kappa_j)``, ``kappa_j``
  evenly spaced on 0.1..0.5; no ties.

Every method runs in its own fresh interpreter (``benchmarks/_scaling_child.py``), which
draws the cell's data from the seed, so its peak memory is its own. All share the MAP
problem of fairjudge's bias-aware model with ``lambda = 1`` on theta and ``lambda_b = 0.1``
on each judge's (standardised) length and position terms; the rows are

``fairjudge bias_aware_bt (arrays)``
    The fit from integer arrays (``Comparisons``), length covariate, per-judge position.
``  + marginal variances``
    Then the posterior variance of each theta (``fit.marginal_variances()`` where the fit
    has it, else ``np.diag(fit.covariance)``), timed separately in the same child.
``  + top-10 membership``
    Then ``fit.topk_membership(10)`` from 1500 posterior draws (for a sparse fit, the
    approximate draws of ``SparsePosterior.samples``), timed once.
``dense reference (numpy Newton)``
    The same MAP and its exact marginal variances, written from the model in the child
    module (not from fairjudge's code): Newton steps by conjugate gradients on the sparse
    Hessian, then a last step and ``diag(H^-1)`` from the dense Hessian's Cholesky factor;
    only for N <= ``--dense-max-n`` (default 10000; it holds two (N+2J)^2 arrays).
``fairjudge bt_pairwise (arrays)``
    The naive fit (no covariate, no position): the reference of rows without covariates.
``fairjudge.rank (DataFrames in)``
    ``fairjudge.rank`` from a verdict table (``item_a``, ``item_b``, ``winner``, ``judge``)
    and an item table (``id``, ``length``): validation, encoding, fit, leaderboard, top-10.
``evalica bradley_terry (DataFrames in)``
    From the same verdict table; no covariate, no position, no prior.
``sklearn LR tol=1e-10 (DataFrames in)``
    ``LogisticRegression(lbfgs)`` on a sparse design built from the same tables: +1/-1 per
    item, the standardised length difference and a position constant per judge, scaled so
    that ``C = 1/lambda`` gives every coefficient fairjudge's prior.

Columns: ``seconds`` -- best of up to 3 runs (1 when a run takes over 5 s or the deadline
leaves no room) of ``time.perf_counter`` around the call, data generation excluded;
``data MB`` -- the child's resident set (``VmRSS``) once the method's package is imported
and the data exist; ``peak MB`` -- the child's peak resident set (``VmHWM``, which sees
numpy, BLAS and native allocations alike, unlike tracemalloc), read right after the row's
work, so ``peak - data`` is about what the method itself added (``ru_maxrss`` would not do:
on Linux it survives exec, so every child would read at least this script's own resident
set at the fork, about 170 MB); ``max|dev|`` --
``max_i |(s_i - mean s) - (r_i - mean r)|`` against the fairjudge bias-aware fit for rows
that model the covariate (the fairjudge row itself: against the dense reference), against
the naive fit for those that do not (with the near maximum-likelihood naive fit,
``lambda = 1e-8``, in the note for evalica, which has no prior). The marginal-variance row
gives ``max_i |v_i / v_dense_i - 1|`` (uncentred variances) in its note.

A method still running ``--deadline`` seconds (default 120) after its data exist is killed
(SIGKILL); its row shows ``>deadline`` and its peak until then. Each child runs under
an address-space limit (``--max-memory-gb``, default 16) so that a method that needs more
fails with a MemoryError instead of swapping the shared machine. The goals of the issue are
printed last, MET or NOT MET with the numbers measured (NOT RUN for cells not in the grid):

* 100k x 10M: bias-aware fit + marginal variances <= 60 s and peak RSS <= 6 GB;
* 10k x 1M: the same <= 10 s;
* wherever the dense reference ran: scores within 1e-6, marginal variances within 2%;
* 1k x 1M: the bias-aware fit <= 0.25 s;
* per cell: ``rank`` from the DataFrames >= 5x faster than scikit-learn (tol=1e-10, the
  accuracy it reaches is shown beside it) and at least as fast as evalica.

::

    python benchmarks/bench_fit.py --scaling --quick      # 1000x100000, 5000x200000
    python benchmarks/bench_fit.py --scaling              # the full 3x2 grid; long
    python benchmarks/bench_fit.py --scaling --grid 1000x1000000,10000x1000000 \\
        --methods bias_aware,dense,rank,sklearn --deadline 60
"""

from __future__ import annotations

import argparse
import gc
import json
import multiprocessing
import os
import platform
import select
import subprocess
import sys
import tempfile
import time
import traceback
import tracemalloc
import warnings
from dataclasses import dataclass, field
from importlib import metadata
from typing import Any, Callable

import numpy as np
import pandas as pd
import scipy
from scipy import sparse
from scipy.special import expit

import fairjudge
from fairjudge.active import pair_scores
from fairjudge.data import Comparisons
from fairjudge.models import bias_aware_bt, bt_pairwise, topk_membership

# --- data generator ----------------------------------------------------------------------
LENGTH_RANGE = (50, 800)        # words, inclusive
LENGTH_EFFECT = 0.004           # c: logits per word of length difference
POSITION_EFFECT = 0.3           # kappa: logits for being shown first

# --- model settings shared by every method -----------------------------------------------
DEFAULT_PRIOR = 1e-3            # lambda: theta ~ N(0, 1/lambda)
BIAS_PRIOR = 0.1                # fairjudge's prior precision on (standardised) bias terms
REF_TOL = 1e-12                 # Newton step tolerance of the references
ML_PRIOR = 1e-8                 # "maximum-likelihood" reference: a vanishing prior
ML_TOL = 1e-7                   # the mean direction is flat there; tighter only adds rounding

# --- competitor settings chosen to reach the reference ------------------------------------
CHOIX_ILSR_ALPHA = 1e-8         # ILSR's alpha is a Markov-chain pseudo-rate, not a prior
CHOIX_OPT_TOL = 1e-10           # scipy Newton-CG xtol (mean relative change)
EVALICA_TOL, EVALICA_LIMIT = 1e-10, 100_000
SKLEARN_TOL_COMMON = 1e-6       # what a user typically writes
SKLEARN_TOL_EQUAL = 1e-10       # what it takes to reach ~1e-6 here
SKLEARN_MAX_ITER = 10_000

# --- timing policy ------------------------------------------------------------------------
SLOW_S = 60.0                   # a run longer than this is not repeated
MEMORY_RUN_MAX_S = 15.0         # no extra tracemalloc run for calls slower than this
CHILD_DEADLINE_S = 120.0        # choix runs are stopped after this
LARGEST_REPEATS, SMALL_REPEATS = 2, 3

ACQ_K, ACQ_SAMPLES, ACQ_REPEATS = 10, 1500, 5
ACQ_PRIOR = 1.0                 # posterior for the acquisition step: library defaults
INSTALL_HINT = "not installed: pip install 'fairjudge[bench]'"


# =========================================================================================
# Data
# =========================================================================================
@dataclass
class Problem:
    """One synthetic data set in every form the methods need.

    Attributes
    ----------
    n, m : int
        Items and comparisons.
    theta : ndarray, shape (n,)
        True quality.
    length : ndarray of int64, shape (n,)
        Item covariate (words).
    first, second : ndarray of int64, shape (m,)
        Indices of the item shown first and second.
    first_won : ndarray of bool, shape (m,)
    ids : tuple of str
        Item ids ``m0000``, ``m0001``, ...
    comparisons : Comparisons
    verdicts, items : pandas.DataFrame or None
        The verdict table (``item_a``, ``item_b``, ``winner``) and item table (``id``,
        ``length``); ``None`` when not built.
    """

    n: int
    m: int
    theta: np.ndarray
    length: np.ndarray
    first: np.ndarray
    second: np.ndarray
    first_won: np.ndarray
    ids: tuple
    comparisons: Comparisons
    verdicts: pd.DataFrame | None = None
    items: pd.DataFrame | None = None

    @property
    def winner(self) -> np.ndarray:
        return np.where(self.first_won, self.first, self.second)

    @property
    def loser(self) -> np.ndarray:
        return np.where(self.first_won, self.second, self.first)


def make_problem(n: int, m: int, seed: int, *, frames: bool = True) -> Problem:
    """Draw a synthetic problem (see the module docstring for the model).

    Parameters
    ----------
    n, m : int
        Number of items and of comparisons.
    seed : int
        Seed of the ``numpy.random.Generator``.
    frames : bool
        Also build the pandas verdict and item tables.

    Returns
    -------
    Problem
    """
    rng = np.random.default_rng(seed)
    theta = rng.standard_normal(n)
    length = rng.integers(LENGTH_RANGE[0], LENGTH_RANGE[1] + 1, size=n).astype(np.int64)
    first = rng.integers(0, n, size=m).astype(np.int64)
    second = (first + rng.integers(1, n, size=m)) % n   # uniform over the other items
    eta = (theta[first] - theta[second]
           + LENGTH_EFFECT * (length[first] - length[second]) + POSITION_EFFECT)
    first_won = rng.random(m) < expit(eta)
    width = max(4, len(str(n - 1)))
    ids = tuple(f"m{i:0{width}d}" for i in range(n))
    comparisons = Comparisons(
        first=first, second=second, first_score=first_won.astype(float), weight=np.ones(m),
        judge=np.zeros(m, np.int64), item_ids=ids, judges=("judge",))
    problem = Problem(n, m, theta, length, first, second, first_won, ids, comparisons)
    if frames:
        id_array = np.asarray(ids, dtype=object)
        problem.verdicts = pd.DataFrame({
            "item_a": id_array[first],
            "item_b": id_array[second],
            "winner": np.where(first_won, "a", "b").astype(object),
        })
        problem.items = pd.DataFrame({"id": list(ids), "length": length})
    return problem


# =========================================================================================
# Timing
# =========================================================================================
class DeadlineExceeded(RuntimeError):
    """A run in a child process did not finish before its deadline."""


class MissingPackage(RuntimeError):
    """A competitor package is not installed."""


@dataclass
class Timing:
    """Outcome of :func:`timed`: the last result, best wall time, runs and memory."""

    result: Any
    seconds: float
    runs: int
    peak_mb: float | None
    notes: list = field(default_factory=list)


def _run_once(fn: Callable[[], Any], *, trace: bool) -> tuple[Any, float, float | None, list]:
    """Run ``fn`` once in this process; return (result, seconds, peak bytes, warnings)."""
    gc.collect()
    with warnings.catch_warnings(record=True) as caught:
        warnings.simplefilter("always")
        if trace:
            tracemalloc.start()
            tracemalloc.reset_peak()
            base = tracemalloc.get_traced_memory()[0]
        try:
            start = time.perf_counter()
            result = fn()
            seconds = time.perf_counter() - start
            peak = tracemalloc.get_traced_memory()[1] - base if trace else None
        finally:
            if trace:
                tracemalloc.stop()
    messages = [f"{w.category.__name__}: {str(w.message).splitlines()[0][:90]}" for w in caught]
    return result, seconds, peak, messages


def _run_in_child(fn: Callable[[], Any], *, trace: bool,
                  deadline: float) -> tuple[Any, float, float | None, list]:
    """Like :func:`_run_once`, in a forked child stopped after ``deadline`` seconds."""
    ctx = multiprocessing.get_context("fork")
    receiver, sender = ctx.Pipe(duplex=False)

    def target():
        try:
            sender.send(("ok", _run_once(fn, trace=trace)))
        except BaseException:  # noqa: BLE001 - reported to the parent
            sender.send(("error", traceback.format_exc()))

    child = ctx.Process(target=target, daemon=True)
    child.start()
    sender.close()
    try:
        if not receiver.poll(deadline):
            raise DeadlineExceeded(f"no result within {deadline:.0f} s")
        status, payload = receiver.recv()
        child.join(10)
    finally:
        if child.is_alive():
            child.terminate()
            child.join(5)
        receiver.close()
    if status == "error":
        raise RuntimeError(f"child process failed:\n{payload}")
    return payload


def timed(fn: Callable[[], Any], repeats: int, *, deadline: float | None = None,
          memory: bool = True) -> Timing:
    """Time ``fn`` (best of ``repeats``) and measure its tracemalloc peak in one more run.

    Parameters
    ----------
    fn : callable
        Takes no argument; its return value is kept from the last timed run.
    repeats : int
        Number of timed runs; stops early after a run longer than ``SLOW_S``.
    deadline : float, optional
        Run every call in a forked child and give up after this many seconds.
    memory : bool
        Measure the peak in an extra traced run (skipped if a run took longer than
        ``MEMORY_RUN_MAX_S``).

    Returns
    -------
    Timing

    Raises
    ------
    DeadlineExceeded
        If the first run does not finish before ``deadline``.
    """
    def once(trace: bool):
        if deadline is None:
            return _run_once(fn, trace=trace)
        return _run_in_child(fn, trace=trace, deadline=deadline)

    times, notes, result = [], [], None
    for i in range(repeats):
        result, seconds, _, caught = once(False)
        times.append(seconds)
        notes.extend(c for c in caught if c not in notes)
        if seconds > SLOW_S and i + 1 < repeats:
            notes.append(f"1 run only (> {SLOW_S:.0f} s)")
            break
    peak_mb = None
    if memory and min(times) <= MEMORY_RUN_MAX_S:
        _, _, peak, _ = once(True)
        peak_mb = peak / 2**20
    return Timing(result, min(times), len(times), peak_mb, notes)


# =========================================================================================
# References and accuracy
# =========================================================================================
@dataclass
class References:
    """Tightly converged fits every method is compared with."""

    bias_aware: np.ndarray
    naive: np.ndarray
    ml: np.ndarray
    notes: list


def centered_deviation(scores, reference) -> float:
    """``max |(s - mean s) - (r - mean r)|``: scores are identified only up to a shift."""
    s = np.asarray(scores, dtype=float)
    r = np.asarray(reference, dtype=float)
    return float(np.max(np.abs((s - s.mean()) - (r - r.mean()))))


def compute_references(problem: Problem, prior: float) -> References:
    """Fit the bias-aware, naive and (near) maximum-likelihood references."""
    notes = []
    with warnings.catch_warnings(record=True) as caught:
        warnings.simplefilter("always")
        bias = bias_aware_bt(problem.comparisons, problem.length.reshape(-1, 1),
                             covariate_names=["length"], prior_precision=prior,
                             bias_prior_precision=BIAS_PRIOR, tol=REF_TOL, max_iter=200)
        naive = bt_pairwise(problem.comparisons, prior_precision=prior, tol=REF_TOL,
                            max_iter=200)
        ml = bt_pairwise(problem.comparisons, prior_precision=ML_PRIOR, tol=ML_TOL,
                         max_iter=200)
    for name, fit, tol in (("bias-aware", bias, REF_TOL), ("naive", naive, REF_TOL),
                           ("ML", ml, ML_TOL)):
        if not fit.converged:
            notes.append(f"{name} reference did not meet step tol {tol:g} in {fit.n_iter} "
                         "Newton iterations (rounding noise; scores still used)")
    for w in caught:
        if "did not converge" not in str(w.message):
            notes.append(f"{w.category.__name__}: {str(w.message).splitlines()[0][:100]}")
    return References(bias.scores, naive.scores, ml.scores, notes)


# =========================================================================================
# Methods: each returns (scores on the logit scale, Timing)
# =========================================================================================
def _import(name: str):
    try:
        return __import__(name)
    except ImportError as err:
        raise MissingPackage(INSTALL_HINT) from err


def fairjudge_bias_aware(p: Problem, prior: float, repeats: int):
    """``bias_aware_bt`` with the length covariate and the position term (arrays in)."""
    x = p.length.reshape(-1, 1).astype(float)
    t = timed(lambda: bias_aware_bt(p.comparisons, x, covariate_names=["length"],
                                    prior_precision=prior, bias_prior_precision=BIAS_PRIOR),
              repeats)
    t.notes.append(f"{t.result.n_iter} Newton its; default tol; incl. Laplace covariance")
    return t.result.scores, t


def fairjudge_naive(p: Problem, prior: float, repeats: int):
    """``bt_pairwise`` (no covariate, no position term)."""
    t = timed(lambda: bt_pairwise(p.comparisons, prior_precision=prior), repeats)
    t.notes.append(f"{t.result.n_iter} Newton its; incl. Laplace covariance")
    return t.result.scores, t


def fairjudge_rank(p: Problem, prior: float, repeats: int):
    """``fairjudge.rank`` end to end: DataFrames in, top-k and membership (S=1500) out."""
    t = timed(lambda: fairjudge.rank(p.verdicts, items=p.items, k=10, model="bias-aware",
                                     prior_precision=prior, bias_prior_precision=BIAS_PRIOR,
                                     n_samples=1500, rng=0), repeats)
    scores = t.result.scores.reindex(list(p.ids)).to_numpy(dtype=float)
    t.notes.append("validate+encode+fit+membership")
    return scores, t


def choix_ilsr(p: Problem, prior: float, repeats: int):
    """choix ``ilsr_pairwise`` on a list of (winner, loser) pairs."""
    choix = _import("choix")
    data = list(zip(p.winner.tolist(), p.loser.tolist()))
    t = timed(lambda: choix.ilsr_pairwise(p.n, data, alpha=CHOIX_ILSR_ALPHA, max_iter=1000),
              repeats, deadline=CHILD_DEADLINE_S)
    t.notes.append(f"alpha={CHOIX_ILSR_ALPHA:g} (pseudo-rate, not the prior); ML")
    return np.asarray(t.result, dtype=float), t


def choix_opt(p: Problem, prior: float, repeats: int):
    """choix ``opt_pairwise`` (Newton-CG) with the matching Gaussian prior."""
    choix = _import("choix")
    data = list(zip(p.winner.tolist(), p.loser.tolist()))
    # choix penalises alpha * ||theta||^2, so alpha = lambda / 2 is the same prior.
    t = timed(lambda: choix.opt_pairwise(p.n, data, alpha=prior / 2, method="Newton-CG",
                                         tol=CHOIX_OPT_TOL),
              repeats, deadline=CHILD_DEADLINE_S)
    t.notes.append(f"alpha=lambda/2 (same prior); xtol={CHOIX_OPT_TOL:g}")
    return np.asarray(t.result, dtype=float), t


def evalica_bt(p: Problem, prior: float, repeats: int):
    """evalica ``bradley_terry`` (Rust core) on index arrays and a list of winners."""
    evalica = _import("evalica")
    index = pd.RangeIndex(p.n)
    codes = np.where(p.first_won, int(evalica.Winner.X), int(evalica.Winner.Y))

    def call():
        # The Rust core takes a Python list of outcomes; the conversion is part of its API.
        return evalica.bradley_terry(p.first, p.second, codes.tolist(), index=index,
                                     tolerance=EVALICA_TOL, limit=EVALICA_LIMIT)

    t = timed(call, repeats)
    strength = t.result.scores.reindex(index).to_numpy(dtype=float)
    t.notes.append(f"log(strength); ML; tol={EVALICA_TOL:g}; {t.result.iterations} its")
    return np.log(strength), t


def _arenakit_counts(p: Problem):
    from arenakit.schema import PairCounts
    n = p.n
    key = p.first * n + p.second
    won = np.bincount(key, weights=p.first_won, minlength=n * n).reshape(n, n)
    total = np.bincount(key, minlength=n * n).reshape(n, n).astype(float)
    return PairCounts(wf=won, ws=total - won, tt=np.zeros((n, n)))


def arenakit_bt(p: Problem, prior: float, repeats: int, *, battles_prior: float | None = None):
    """arenakit ``fit_bt`` (MM); ``battles_prior=None`` keeps the package default."""
    arenakit = _import("arenakit")

    def call():
        counts = _arenakit_counts(p)
        if battles_prior is None:
            return arenakit.fit_bt(counts)
        return arenakit.fit_bt(counts, prior=battles_prior)

    t = timed(call, repeats)
    what = "default prior=0.5 battles" if battles_prior is None else f"prior={battles_prior:g}"
    t.notes.append(f"log-strength; {what}; incl. counts; {t.result.n_iter} MM its")
    return np.asarray(t.result.scores, dtype=float), t


def _sklearn_design(first, second, length, n: int, prior: float) -> sparse.csr_matrix:
    """One-hot difference design with length and position columns, scaled to the priors.

    Row ``r``: +1 in column ``first[r]``, -1 in column ``second[r]``, the standardised
    length difference in column ``n`` and a constant in column ``n + 1`` (position).
    LogisticRegression's l2 penalty ``||w||^2 / (2C)`` with ``C = 1/lambda`` is the theta
    prior; scaling a column by ``sqrt(lambda / lambda_b)`` turns that same penalty into the
    bias prior ``lambda_b`` on its coefficient, so the model is exactly fairjudge's.
    """
    m = first.shape[0]
    length = np.asarray(length, dtype=float)
    scale = np.sqrt(prior / BIAS_PRIOR)
    dlen = (length[first] - length[second]) / length.std() * scale
    data = np.empty((m, 4))
    data[:, 0], data[:, 1], data[:, 2], data[:, 3] = 1.0, -1.0, dlen, scale
    cols = np.empty((m, 4), dtype=np.int64)
    cols[:, 0], cols[:, 1], cols[:, 2], cols[:, 3] = first, second, n, n + 1
    indptr = np.arange(0, 4 * m + 1, 4, dtype=np.int64)
    return sparse.csr_matrix((data.ravel(), cols.ravel(), indptr), shape=(m, n + 2))


def _sklearn_fit(design, target, prior: float, tol: float):
    from sklearn.linear_model import LogisticRegression
    model = LogisticRegression(C=1.0 / prior, fit_intercept=False, solver="lbfgs", tol=tol,
                               max_iter=SKLEARN_MAX_ITER)
    return model.fit(design, target)


def _design_from_frames(verdicts: pd.DataFrame, items: pd.DataFrame, prior: float):
    """The scikit-learn way from the tables: ids -> column codes -> CSR design, target."""
    index = pd.Index(items["id"])
    first = index.get_indexer(verdicts["item_a"])
    second = index.get_indexer(verdicts["item_b"])
    if (first < 0).any() or (second < 0).any():
        raise ValueError("a verdict names an unknown item")
    design = _sklearn_design(first, second, items["length"].to_numpy(dtype=float),
                             len(index), prior)
    return design, (verdicts["winner"] == "a").to_numpy()


def sklearn_fit(p: Problem, prior: float, repeats: int, *, tol: float):
    """LogisticRegression (lbfgs) on a prebuilt sparse design."""
    _import("sklearn")
    design = _sklearn_design(p.first, p.second, p.length, p.n, prior)
    t = timed(lambda: _sklearn_fit(design, p.first_won, prior, tol), repeats)
    t.notes.append(f"design prebuilt; C=1/lambda, scaled cols; tol={tol:g}; "
                   f"{int(t.result.n_iter_[0])} its")
    return t.result.coef_[0, :p.n].copy(), t


def sklearn_build(p: Problem, prior: float, repeats: int):
    """Building the sparse design and target from the DataFrames (no fit)."""
    _import("sklearn")
    t = timed(lambda: _design_from_frames(p.verdicts, p.items, prior), repeats)
    t.notes.append("DataFrames -> CSR design + target only")
    return None, t


def sklearn_frames(p: Problem, prior: float, repeats: int, *, tol: float):
    """The scikit-learn way end to end: DataFrames -> sparse design -> fit."""
    _import("sklearn")

    def call():
        design, target = _design_from_frames(p.verdicts, p.items, prior)
        return _sklearn_fit(design, target, prior, tol)

    t = timed(call, repeats)
    t.notes.append(f"build + fit; tol={tol:g}; {int(t.result.n_iter_[0])} its")
    return t.result.coef_[0, :p.n].copy(), t


@dataclass(frozen=True)
class Method:
    """A row of the table: label, whether it models the covariate, and its runner."""

    label: str
    covariate: bool
    run: Callable
    ml_note: bool = False       # the package has no Gaussian prior: also compare with ML


METHODS = (
    Method("fairjudge bias_aware_bt", True, fairjudge_bias_aware),
    Method("fairjudge bt_pairwise", False, fairjudge_naive),
    Method("fairjudge.rank (DataFrames in)", True, fairjudge_rank),
    Method("choix ilsr_pairwise", False, choix_ilsr, ml_note=True),
    Method("choix opt_pairwise", False, choix_opt),
    Method("evalica bradley_terry", False, evalica_bt, ml_note=True),
    Method("arenakit fit_bt", False, arenakit_bt, ml_note=True),
    Method("arenakit fit_bt prior=0", False,
           lambda p, prior, r: arenakit_bt(p, prior, r, battles_prior=0.0), ml_note=True),
    Method(f"sklearn LR tol={SKLEARN_TOL_COMMON:g}", True,
           lambda p, prior, r: sklearn_fit(p, prior, r, tol=SKLEARN_TOL_COMMON)),
    Method(f"sklearn LR tol={SKLEARN_TOL_EQUAL:g}", True,
           lambda p, prior, r: sklearn_fit(p, prior, r, tol=SKLEARN_TOL_EQUAL)),
    Method("sklearn design build", True, sklearn_build),
    Method("sklearn (DataFrames in)", True,
           lambda p, prior, r: sklearn_frames(p, prior, r, tol=SKLEARN_TOL_EQUAL)),
)


# =========================================================================================
# Driver
# =========================================================================================
@dataclass
class Row:
    """One printed row."""

    method: str
    n: int
    m: int
    covariate: bool
    seconds: float | None = None
    peak_mb: float | None = None
    deviation: float | None = None
    note: str = ""
    seconds_text: str | None = None


def run_method(method: Method, problem: Problem, refs: References, prior: float,
               repeats: int, errors: list) -> Row:
    """Run one method on one problem and turn the outcome into a row."""
    row = Row(method.label, problem.n, problem.m, method.covariate)
    try:
        scores, timing = method.run(problem, prior, repeats)
    except MissingPackage as err:
        row.note = str(err)
        return row
    except DeadlineExceeded:
        row.seconds_text = f">{CHILD_DEADLINE_S:.0f}"
        row.note = f"stopped after {CHILD_DEADLINE_S:.0f} s (one run)"
        return row
    except Exception as err:  # noqa: BLE001 - reported, never hidden
        errors.append((f"{method.label} at N={problem.n}, M={problem.m}",
                       traceback.format_exc()))
        row.note = f"ERROR {type(err).__name__}: {str(err).splitlines()[0][:60]}"
        return row
    row.seconds, row.peak_mb = timing.seconds, timing.peak_mb
    notes = list(timing.notes)
    if timing.peak_mb is None:
        notes.append("peak not measured (slow)")
    if scores is not None:
        reference = refs.bias_aware if method.covariate else refs.naive
        row.deviation = centered_deviation(scores, reference)
        if method.ml_note:
            vs_ml = centered_deviation(scores, refs.ml)
            notes.append(f"vs ML {vs_ml:.1e}")
            if row.deviation > 1e-6:
                notes.append("does not reach 1e-6: no such prior" if vs_ml <= 1e-6
                             else "does not reach 1e-6, not even vs ML")
        elif row.deviation > 1e-6:
            notes.append("does not reach 1e-6")
    row.note = "; ".join(notes)
    return row


def _fmt(value: float | None, spec: str, missing: str = "-") -> str:
    return missing if value is None else format(value, spec)


def print_table(rows: list) -> None:
    header = (f"{'method':<32} {'N':>5} {'M':>8} {'cov':>3} {'seconds':>9} {'peak MB':>8} "
              f"{'max|dev|':>8}  note")
    print(header)
    print("-" * len(header))
    last = None
    for r in rows:
        if last is not None and (r.n, r.m) != last:
            print()
        last = (r.n, r.m)
        seconds = r.seconds_text or _fmt(r.seconds, ".4f")
        print(f"{r.method:<32} {r.n:>5} {r.m:>8} {'yes' if r.covariate else 'no':>3} "
              f"{seconds:>9} {_fmt(r.peak_mb, '.1f'):>8} {_fmt(r.deviation, '.1e'):>8}  "
              f"{r.note}")


def acquisition_step(n: int, seed: int) -> dict:
    """Time one acquisition step on a posterior fitted to 20 n random verdicts.

    Returns
    -------
    dict
        ``total_ms``, ``membership_ms`` and ``scores_ms`` (best of ``ACQ_REPEATS``).
    """
    problem = make_problem(n, 20 * n, seed, frames=False)
    fit = bias_aware_bt(problem.comparisons, problem.length.reshape(-1, 1),
                        covariate_names=["length"], prior_precision=ACQ_PRIOR,
                        bias_prior_precision=BIAS_PRIOR)
    theta, cov = fit.scores, fit.covariance
    best = {"total_ms": np.inf, "membership_ms": np.inf, "scores_ms": np.inf}
    for _ in range(ACQ_REPEATS):
        gc.collect()
        t0 = time.perf_counter()
        p = topk_membership(theta, cov, k=ACQ_K, n_samples=ACQ_SAMPLES, rng=0)
        t1 = time.perf_counter()
        pair_scores("topk", theta, cov, p)
        t2 = time.perf_counter()
        best["total_ms"] = min(best["total_ms"], 1e3 * (t2 - t0))
        best["membership_ms"] = min(best["membership_ms"], 1e3 * (t1 - t0))
        best["scores_ms"] = min(best["scores_ms"], 1e3 * (t2 - t1))
    return best


def _version(dist: str) -> str:
    try:
        return metadata.version(dist)
    except metadata.PackageNotFoundError:
        return "not installed"


def _load_text() -> str:
    try:
        return "1/5/15-min load average " + ", ".join(f"{v:.2f}" for v in os.getloadavg())
    except OSError:
        return "load average unavailable"


def print_environment() -> None:
    """Machine, versions and BLAS: the lines every mode's header starts with."""
    affinity = len(os.sched_getaffinity(0)) if hasattr(os, "sched_getaffinity") else None
    print(f"machine : {platform.machine()} {platform.system()}, os.cpu_count()={os.cpu_count()}"
          + (f", usable cores={affinity}" if affinity is not None else ""))
    print(f"python  : {platform.python_version()}  numpy {np.__version__}  scipy "
          f"{scipy.__version__}  pandas {pd.__version__}  fairjudge {fairjudge.__version__}")
    print("bench   : " + "  ".join(f"{d} {_version(d)}" for d in
                                     ("choix", "evalica", "arenakit", "scikit-learn")))
    try:
        from threadpoolctl import threadpool_info
        blas = [f"{i.get('internal_api')} {i.get('version')} ({i.get('num_threads')} threads)"
                for i in threadpool_info() if i.get("user_api") == "blas"]
        if blas:
            print(f"blas    : {'; '.join(dict.fromkeys(blas))}")
    except ImportError:
        pass


def print_header(prior: float, sizes: list, seed: int) -> None:
    print("fairjudge fit benchmark")
    print_environment()
    print(f"problem : theta~N(0,1), length~U{{{LENGTH_RANGE[0]}..{LENGTH_RANGE[1]}}}, "
          f"c={LENGTH_EFFECT}/word, kappa={POSITION_EFFECT}, no ties, seed={seed}")
    print(f"prior   : lambda={prior:g} on theta (every method that allows it), "
          f"bias terms {BIAS_PRIOR:g} (standardised)")
    print(f"sizes   : {', '.join(f'{n}x{m}' for n, m in sizes)}")
    print(f"load    : {_load_text()} at start (other processes share these cores; "
          "timings are only as good as the machine is idle)")
    print(flush=True)


def print_notes(ref_notes: list) -> None:
    print()
    print("Notes:")
    print(f"  seconds : best of {SMALL_REPEATS} runs ({LARGEST_REPEATS} at the largest size), "
          f"time.perf_counter; a run > {SLOW_S:.0f} s is not repeated; choix runs in a forked "
          f"child stopped after {CHILD_DEADLINE_S:.0f} s.")
    print("  peak MB : tracemalloc peak during one extra run (Python heap incl. numpy arrays; "
          "not BLAS/LAPACK work space nor native allocations such as evalica's Rust core).")
    print(f"  max|dev|: max |centered theta - centered reference| on the logit scale; reference"
          f" = fairjudge Newton at tol={REF_TOL:g} with the same lambda (bias-aware for cov=yes,"
          " naive for cov=no).")
    print(f"  vs ML   : deviation from a lambda={ML_PRIOR:g} (maximum-likelihood) fit, for "
          "packages without a Gaussian prior; their max|dev| is then mostly the prior's effect.")
    print("  scales  : evalica returns strengths (compared as log); arenakit log-strengths; "
          "choix and sklearn logits (no conversion).")
    print("  sklearn : one-hot +1/-1 CSR design, standardised length difference and a "
          "position column both scaled by sqrt(lambda/0.1), C=1/lambda, no intercept: "
          "the same MAP problem as fairjudge's bias-aware fit.")
    print(f"            scikit-learn's lbfgs also stops on a fixed relative ftol (64 eps), so a"
          f" tol below {SKLEARN_TOL_EQUAL:g} does not improve max|dev| further.")
    print(f"  load    : {_load_text()} at the end.")
    for note in ref_notes:
        print(f"  ref     : {note}")


def _find(rows: list, label: str, n: int, m: int) -> Row | None:
    return next((r for r in rows if r.method == label and (r.n, r.m) == (n, m)), None)


def print_targets(rows: list, acquisition: dict) -> None:
    print()
    print("Targets:")
    n, m = 1000, 1_000_000
    fit = _find(rows, "fairjudge bias_aware_bt", n, m)
    if fit is None:
        print("  bias-aware fit N=1000,M=1M <= 0.25 s and <= 150 MB: NOT RUN "
              "(size 1000x1000000 not in --sizes)")
    elif fit.seconds is None:
        print(f"  bias-aware fit N=1000,M=1M <= 0.25 s and <= 150 MB: NOT MET ({fit.note})")
    else:
        ok_time = fit.seconds <= 0.25
        ok_mem = fit.peak_mb is not None and fit.peak_mb <= 150
        mem = _fmt(fit.peak_mb, ".1f", "n/a")
        print(f"  bias-aware fit N=1000,M=1M <= 0.25 s and <= 150 MB: "
              f"{'MET' if ok_time and ok_mem else 'NOT MET'} "
              f"(measured {fit.seconds:.3f} s {'MET' if ok_time else 'NOT MET'}, "
              f"{mem} MB {'MET' if ok_mem else 'NOT MET'})")
    ranked = _find(rows, "fairjudge.rank (DataFrames in)", n, m)
    frames = _find(rows, "sklearn (DataFrames in)", n, m)
    label = "fairjudge.rank >= 5x faster than sklearn DataFrames-in at N=1000,M=1M"
    if ranked is None or frames is None:
        print(f"  {label}: NOT RUN (size 1000x1000000 not in --sizes)")
    elif ranked.seconds is None or frames.seconds is None:
        print(f"  {label}: NOT MEASURED (rank: {ranked.note or 'ok'}; sklearn: "
              f"{frames.note or 'ok'})")
    else:
        ratio = frames.seconds / ranked.seconds
        extra = ""
        build = _find(rows, "sklearn design build", n, m)
        common = _find(rows, f"sklearn LR tol={SKLEARN_TOL_COMMON:g}", n, m)
        if build and common and build.seconds and common.seconds:
            loose = (build.seconds + common.seconds) / ranked.seconds
            extra = (f"; vs build + fit at tol={SKLEARN_TOL_COMMON:g} (max|dev| "
                     f"{_fmt(common.deviation, '.1e')}): {loose:.1f}x")
        print(f"  {label}: {'MET' if ratio >= 5 else 'NOT MET'} (rank {ranked.seconds:.3f} s, "
              f"sklearn tol={SKLEARN_TOL_EQUAL:g} {frames.seconds:.3f} s: {ratio:.1f}x{extra})")
    for size, limit_ms in ((300, 50.0), (2000, 1000.0)):
        label = f"acquisition step N={size} <= {limit_ms:g} ms"
        if size not in acquisition:
            print(f"  {label}: NOT RUN")
            continue
        res = acquisition[size]
        if "error" in res:
            print(f"  {label}: NOT MET (error: {res['error']})")
            continue
        total = res["total_ms"]
        print(f"  {label}: {'MET' if total <= limit_ms else 'NOT MET'} (measured {total:.1f} ms"
              f" = membership {res['membership_ms']:.1f} + pair_scores {res['scores_ms']:.1f})")


# =========================================================================================
# Scaling mode (--scaling): every method in its own child process
# =========================================================================================
SCALING_GRID = ("1000x1000000,1000x10000000,10000x1000000,10000x10000000,"
                "100000x1000000,100000x10000000")
SCALING_QUICK_GRID = "1000x100000,5000x200000"
SCALING_PRIOR = 1.0             # lambda on theta (library default)
SCALING_DEADLINE_S = 120.0
SCALING_MAX_MEMORY_GB = 16.0
DENSE_MAX_N = 10_000            # the dense reference holds (N+2J)^2 doubles (0.8 GB at 10k)
SCALING_METHODS = ("bias_aware", "dense", "naive", "rank", "evalica", "sklearn")
CHILD_SCRIPT = os.path.join(os.path.dirname(os.path.abspath(__file__)), "_scaling_child.py")
SCORE_TOL, VARIANCE_RTOL = 1e-6, 0.02


@dataclass
class ScalingRow:
    """One printed row of the scaling table (numbers ``None`` where not measured)."""

    key: str
    method: str
    n: int
    m: int
    seconds: float | None = None
    data_mb: float | None = None
    peak_mb: float | None = None
    deviation: float | None = None
    notes: list = field(default_factory=list)
    seconds_text: str | None = None
    var_rel_dev: float | None = None


@dataclass
class ChildOutcome:
    """What a child reported: its data event, result rows, and how it ended."""

    data: dict | None
    rows: list
    killed: bool
    returncode: int | None
    peak_mb: float | None   # of a child that was killed or raised
    stderr: str


def run_child(spec: dict, deadline: float, stderr_path: str) -> ChildOutcome:
    """Run one method in a fresh interpreter; SIGKILL it ``deadline`` s after its data exist.

    Data generation gets its own ``deadline`` seconds before that.
    """
    with open(stderr_path, "w+") as err:
        child = subprocess.Popen([sys.executable, CHILD_SCRIPT, json.dumps(spec)],
                                 stdout=subprocess.PIPE, stderr=err)
        fd, buffer, data, rows = child.stdout.fileno(), b"", None, []
        until, killed, peak = time.monotonic() + deadline, False, None
        while True:
            left = until - time.monotonic()
            if left <= 0:
                peak = _vm_hwm_mb(child.pid)
                child.kill()
                killed = True
                break
            ready, _, _ = select.select([fd], [], [], left)
            if not ready:
                continue
            chunk = os.read(fd, 1 << 16)
            if not chunk:
                break
            buffer += chunk
            *lines, buffer = buffer.split(b"\n")
            for line in lines:
                if not line.startswith(b'{"event"'):
                    continue   # something a library printed
                event = json.loads(line)
                if event["event"] == "data":
                    data = event
                    until = time.monotonic() + deadline   # the method's own clock
                elif event["event"] == "result":
                    rows = event["rows"]
                elif event["event"] == "error":
                    peak = event["peak_mb"]
        child.stdout.close()
        child.wait()
        err.seek(0)
        stderr = err.read()
    return ChildOutcome(data, rows, killed, child.returncode, peak, stderr)


def _vm_hwm_mb(pid: int) -> float | None:
    """Peak resident set (``VmHWM``) of a live process, read before it is killed."""
    try:
        with open(f"/proc/{pid}/status") as status:
            for line in status:
                if line.startswith("VmHWM:"):
                    return int(line.split()[1]) / 1024
    except OSError:
        pass
    return None


def _centred_dev(a: np.ndarray | None, b: np.ndarray | None) -> float | None:
    if a is None or b is None or a.shape != b.shape:
        return None
    return centered_deviation(a, b)


def _load(out_dir: str, name: str) -> np.ndarray | None:
    path = os.path.join(out_dir, f"{name}.npy")
    return np.load(path) if os.path.exists(path) else None


def run_scaling_cell(n: int, m: int, args, errors: list) -> list:
    """All methods of one cell, each in its own child; rows with deviations filled in."""
    rows = []
    with tempfile.TemporaryDirectory(prefix=f"bench_scaling_{n}x{m}_") as out_dir:
        for key in args.methods:
            if key == "dense" and n > args.dense_max_n:
                rows.append(ScalingRow(key, "dense reference (numpy Newton)", n, m,
                                       notes=[f"skipped: N > --dense-max-n={args.dense_max_n}"]))
                continue
            spec = {"n": n, "m": m, "judges": args.judges, "seed": args.seed, "method": key,
                    "deadline": args.deadline, "out_dir": out_dir, "prior": SCALING_PRIOR,
                    "bias_prior": BIAS_PRIOR, "max_memory_gb": args.max_memory_gb}
            outcome = run_child(spec, args.deadline, os.path.join(out_dir, f"{key}.err"))
            rows.extend(_scaling_rows(key, n, m, outcome, args.deadline, errors))
        _fill_deviations(rows, out_dir)
    return rows


def _scaling_rows(key: str, n: int, m: int, outcome: ChildOutcome, deadline: float,
                  errors: list) -> list:
    """Turn a child's report (or its failure) into rows."""
    data_mb = None if outcome.data is None else outcome.data["rss_mb"]
    if outcome.rows:
        rows = []
        for r in outcome.rows:
            # The fairjudge child reports the fit, its marginal variances and membership.
            row_key = (f"{key}_membership" if "membership" in r["label"] else
                       f"{key}_var" if r["label"].startswith("  +") else key)
            rows.append(ScalingRow(row_key, r["label"], n, m, seconds=r["seconds"], data_mb=data_mb,
                                   peak_mb=r["peak_mb"], notes=list(r["notes"])))
            if r["runs"] > 1:
                rows[-1].notes.append(f"best of {r['runs']}")
        return rows
    label = {"bias_aware": "fairjudge bias_aware_bt (arrays)",
             "dense": "dense reference (numpy Newton)",
             "naive": "fairjudge bt_pairwise (arrays)",
             "rank": "fairjudge.rank (DataFrames in)",
             "evalica": "evalica bradley_terry (DataFrames in)",
             "sklearn": "sklearn LR tol=1e-10 (DataFrames in)"}[key]
    row = ScalingRow(key, label, n, m, data_mb=data_mb, peak_mb=outcome.peak_mb)
    stage = "data generation" if outcome.data is None else "the method"
    if outcome.killed:
        row.seconds_text = f">{deadline:.0f}"
        row.notes.append(f">deadline: killed (SIGKILL) {deadline:.0f} s into {stage}; "
                         "peak until then")
    else:
        lines = outcome.stderr.strip().splitlines() or [f"exit code {outcome.returncode}"]
        # The exception line, or a native library's panic or allocation failure message.
        telling = [line for line in lines if any(word in line for word in (
            "Error", "panicked", "memory allocation", "Killed"))]
        last = (telling or lines)[-1].strip()
        if "No module named" in last:
            row.notes.append(f"{last.split(':')[-1].strip()}: {INSTALL_HINT}")
        else:
            row.notes.append(f"ERROR in {stage} (exit {outcome.returncode}): {last[:80]}")
            if "memory" in last.lower() or "MemoryError" in last:
                row.notes.append("over the --max-memory-gb address-space limit?")
            errors.append((f"{label} at N={n}, M={m}", outcome.stderr.strip()
                           or f"exit code {outcome.returncode}, no output"))
    return [row]


def _fill_deviations(rows: list, out_dir: str) -> None:
    """Compare every child's saved scores with the reference its row calls for."""
    fj, dense = _load(out_dir, "bias_aware_scores"), _load(out_dir, "dense_scores")
    fj_var, dense_var = _load(out_dir, "bias_aware_var"), _load(out_dir, "dense_var")
    naive, ml = _load(out_dir, "naive_scores"), _load(out_dir, "ml_scores")
    covariate_ref, ref_name = (fj, "fairjudge fit") if fj is not None else (dense, "dense ref")
    for row in rows:
        if row.seconds is None:
            continue
        if row.key == "bias_aware":
            row.deviation = _centred_dev(fj, dense)
            row.notes.append("vs dense reference" if row.deviation is not None
                             else "the reference of the covariate rows")
        elif row.key == "bias_aware_var":
            if fj_var is not None and dense_var is not None:
                row.var_rel_dev = float(np.max(np.abs(fj_var / dense_var - 1.0)))
                row.notes.append(f"max rel dev of variances vs dense {row.var_rel_dev:.2%}")
        elif row.key == "dense":
            row.deviation = _centred_dev(dense, fj)
            row.notes.append("vs fairjudge fit")
        elif row.key == "naive":
            row.notes.append("the reference of the rows without covariates")
        elif row.key == "evalica":
            scores = _load(out_dir, "evalica_scores")
            row.deviation = _centred_dev(scores, naive)
            vs_ml = _centred_dev(scores, ml)
            if vs_ml is not None:
                row.notes.append(f"vs ML {vs_ml:.1e} (no prior)")
        else:
            row.deviation = _centred_dev(_load(out_dir, f"{row.key}_scores"), covariate_ref)
            if row.deviation is not None and ref_name != "fairjudge fit":
                row.notes.append(f"vs {ref_name}")


def print_scaling_table(rows: list, *, header: bool) -> None:
    line = (f"{'method':<38} {'N':>6} {'M':>8} {'seconds':>8} {'data MB':>8} {'peak MB':>8} "
            f"{'max|dev|':>8}  note")
    if header:
        print(line)
        print("-" * len(line))
    for r in rows:
        seconds = r.seconds_text or _fmt(r.seconds, ".4f" if (r.seconds or 1) < 1 else ".3f")
        print(f"{r.method:<38} {r.n:>6} {r.m:>8} {seconds:>8} {_fmt(r.data_mb, '.0f'):>8} "
              f"{_fmt(r.peak_mb, '.0f'):>8} {_fmt(r.deviation, '.1e'):>8}  "
              f"{'; '.join(r.notes)}")
    print(flush=True)


def _cell_row(rows: list, n: int, m: int, key: str):
    for r in rows:
        if (r.n, r.m, r.key) == (n, m, key):
            return r
    return None


def _verdict(ok: bool) -> str:
    return "MET" if ok else "NOT MET"


def _fit_and_marginal(rows: list, n: int, m: int, limit_s: float,
                      limit_mb: float | None) -> str:
    """Goal text for 'fit + marginal intervals' at one cell."""
    fit, var = _cell_row(rows, n, m, "bias_aware"), _cell_row(rows, n, m, "bias_aware_var")
    if fit is None:
        return f"NOT RUN (cell {n}x{m} not in --grid, or bias_aware not in --methods)"
    if fit.seconds is None or var is None or var.seconds is None:
        return f"NOT MET ({'; '.join(fit.notes)})"
    total = fit.seconds + var.seconds
    parts = [f"{total:.2f} s = fit {fit.seconds:.2f} + variances {var.seconds:.2f} "
             f"{_verdict(total <= limit_s)}"]
    ok = total <= limit_s
    if limit_mb is not None:
        parts.append(f"peak RSS {var.peak_mb:.0f} MB ({var.peak_mb - var.data_mb:.0f} MB over "
                     f"the data) {_verdict(var.peak_mb <= limit_mb)}")
        ok = ok and var.peak_mb <= limit_mb
    return f"{_verdict(ok)} ({'; '.join(parts)})"


def print_scaling_goals(rows: list, deadline: float) -> None:
    print("Goals (issue 'Scale'):")
    print("  100k x 10M, length covariate + per-judge position, fit + marginal intervals "
          "<= 60 s and <= 6 GB peak RSS: "
          + _fit_and_marginal(rows, 100_000, 10_000_000, 60.0, 6 * 1024))
    membership = _cell_row(rows, 100_000, 10_000_000, "bias_aware_membership")
    print("  100k x 10M top-10 membership (1500 draws) within another 60 s: "
          + ("NOT RUN" if membership is None or membership.seconds is None else
             f"{_verdict(membership.seconds <= 60.0)} ({membership.seconds:.2f} s; "
             f"{'; '.join(membership.notes)})"))
    print("  10k x 1M fit + marginal intervals <= 10 s: "
          + _fit_and_marginal(rows, 10_000, 1_000_000, 10.0, None))

    label = (f"  scores within {SCORE_TOL:g} of the dense answer, marginal variances within "
             f"{VARIANCE_RTOL:.0%}")
    both = [(r, _cell_row(rows, r.n, r.m, "bias_aware_var")) for r in rows
            if r.key == "bias_aware" and r.deviation is not None]
    if not both:
        print(f"{label}: NOT RUN (no cell where both the fit and the dense reference ran)")
    for fit, var in both:
        ok_s = fit.deviation <= SCORE_TOL
        vdev = None if var is None else var.var_rel_dev
        ok_v = vdev is not None and vdev <= VARIANCE_RTOL
        print(f"{label} at {fit.n}x{fit.m}: {_verdict(ok_s and ok_v)} (max|dev| "
              f"{fit.deviation:.1e} {_verdict(ok_s)}; variances "
              f"{_fmt(vdev, '.2%', 'n/a')} {_verdict(ok_v)})")

    fit = _cell_row(rows, 1000, 1_000_000, "bias_aware")
    label = "  1k x 1M bias-aware fit <= 0.25 s"
    if fit is None:
        print(f"{label}: NOT RUN (cell 1000x1000000 not in --grid)")
    elif fit.seconds is None:
        print(f"{label}: NOT MET ({'; '.join(fit.notes)})")
    else:
        print(f"{label}: {_verdict(fit.seconds <= 0.25)} ({fit.seconds:.3f} s)")

    label = ("  rank from DataFrames >= 5x sklearn sparse one-hot fit (tol=1e-10) and >= "
             "evalica on the same DataFrames")
    cells = sorted({(r.n, r.m) for r in rows if r.key == "rank"})
    if not cells:
        print(f"{label}: NOT RUN (rank not in --methods)")
    for n, m in cells:
        ranked, sk, ev = (_cell_row(rows, n, m, k) for k in ("rank", "sklearn", "evalica"))
        if ranked.seconds is None:
            print(f"{label} at {n}x{m}: NOT MET (rank: {'; '.join(ranked.notes)})")
            continue
        parts, ok = [f"rank {ranked.seconds:.2f} s, max|dev| "
                     f"{_fmt(ranked.deviation, '.1e')}"], True
        for other, factor, name in ((sk, 5.0, "sklearn"), (ev, 1.0, "evalica")):
            if other is None:
                parts.append(f"{name} not run")
                ok = False
            elif other.seconds_text is not None:
                # Stopped at the deadline: the ratio is at least deadline / rank.
                bound = deadline / ranked.seconds
                parts.append(f"{name} {other.seconds_text} s: >{bound:.1f}x "
                             f"{_verdict(bound >= factor)}")
                ok = ok and bound >= factor
            elif other.seconds is None:
                parts.append(f"{name} failed")
                ok = False
            else:
                ratio = other.seconds / ranked.seconds
                parts.append(f"{name} {other.seconds:.2f} s (max|dev| "
                             f"{_fmt(other.deviation, '.1e')}): {ratio:.1f}x "
                             f"{_verdict(ratio >= factor)}")
                ok = ok and ratio >= factor
        print(f"{label} at {n}x{m}: {_verdict(ok)} ({'; '.join(parts)})")


def run_scaling(args) -> int:
    """The ``--scaling`` mode: the grid, cell by cell, then the goals."""
    grid = parse_sizes(SCALING_QUICK_GRID) if args.quick and args.grid is None else (
        args.grid or parse_sizes(SCALING_GRID))
    print("fairjudge fit benchmark: scaling")
    print_environment()
    print(f"problem : theta~N(0,1), length~U{{{LENGTH_RANGE[0]}..{LENGTH_RANGE[1]}}}, "
          f"c=0.3/sd(length), {args.judges} judges with kappa_j evenly on 0.1..0.5, no ties, "
          f"seed={args.seed}")
    print(f"prior   : lambda={SCALING_PRIOR:g} on theta, {BIAS_PRIOR:g} on each judge's "
          "standardised length and position terms (every method that allows it)")
    print(f"grid    : {', '.join(f'{n}x{m}' for n, m in grid)}; methods: "
          f"{', '.join(args.methods)}")
    print(f"limits  : {args.deadline:.0f} s per method after its data exist (then SIGKILL); "
          f"{args.max_memory_gb:g} GB address space per child; dense reference for "
          f"N <= {args.dense_max_n}")
    print(f"load    : {_load_text()} at start (other processes share these cores)")
    print(flush=True)
    rows, errors = [], []
    for i, (n, m) in enumerate(grid):
        start = time.perf_counter()
        cell = run_scaling_cell(n, m, args, errors)
        print_scaling_table(cell, header=i == 0)
        print(f"[{n}x{m} done in {time.perf_counter() - start:.0f} s]", file=sys.stderr,
              flush=True)
        rows.extend(cell)
    print(f"load    : {_load_text()} at the end")
    print()
    print_scaling_goals(rows, args.deadline)
    if errors:
        print()
        print("Errors:")
        for where, text in errors:
            print(f"--- {where}")
            print(text.rstrip()[-3000:])
    return 0


def parse_methods(text: str) -> tuple:
    """``"bias_aware,rank"`` -> ``("bias_aware", "rank")`` in the table's order."""
    names = {part.strip() for part in text.split(",") if part.strip()}
    unknown = names - set(SCALING_METHODS)
    if unknown:
        raise argparse.ArgumentTypeError(f"unknown method {sorted(unknown)[0]!r}; choose from "
                                         f"{', '.join(SCALING_METHODS)}")
    return tuple(k for k in SCALING_METHODS if k in names)


def parse_sizes(text: str) -> list:
    """``"50x10000,200x100000"`` -> ``[(50, 10000), (200, 100000)]``."""
    sizes = []
    for part in text.split(","):
        part = part.strip().lower().replace("_", "")
        if not part:
            continue
        try:
            n, m = (int(v) for v in part.split("x"))
        except ValueError:
            raise argparse.ArgumentTypeError(f"bad size {part!r}; expected NxM") from None
        if n < 11 or m < 1:
            raise argparse.ArgumentTypeError(f"bad size {part!r}; need N > 10 (k=10), M >= 1")
        sizes.append((n, m))
    if not sizes:
        raise argparse.ArgumentTypeError("no sizes given")
    return sorted(sizes)


def main(argv: list | None = None) -> int:
    parser = argparse.ArgumentParser(description=__doc__.split("\n\n")[0],
                                     formatter_class=argparse.RawDescriptionHelpFormatter)
    parser.add_argument("--sizes", type=parse_sizes,
                        default=parse_sizes("50x10000,200x100000,1000x1000000"),
                        help="comma-separated NxM problem sizes "
                             "(default: 50x10000,200x100000,1000x1000000)")
    parser.add_argument("--quick", action="store_true",
                        help="run only the smallest size and the N=300 acquisition step; "
                             "with --scaling, the grid " + SCALING_QUICK_GRID)
    parser.add_argument("--prior", type=float, default=DEFAULT_PRIOR,
                        help=f"prior precision lambda on theta (default {DEFAULT_PRIOR:g})")
    parser.add_argument("--seed", type=int, default=20240611, help="data seed")
    parser.add_argument("--acq-sizes", default="300,2000",
                        help="N for the acquisition-step timing (default: 300,2000)")
    scaling = parser.add_argument_group("scaling mode")
    scaling.add_argument("--scaling", action="store_true",
                         help="the scaling table: each method in its own process, peak RSS, "
                              "deadline (see the module docstring)")
    scaling.add_argument("--grid", type=parse_sizes, default=None,
                         help="comma-separated NxM cells (default: N in 1k,10k,100k x M in "
                              "1M,10M)")
    scaling.add_argument("--methods", type=parse_methods, default=SCALING_METHODS,
                         help=f"subset of {','.join(SCALING_METHODS)} (default: all)")
    scaling.add_argument("--deadline", type=float, default=SCALING_DEADLINE_S,
                         help="seconds a method may run once its data exist "
                              f"(default {SCALING_DEADLINE_S:g})")
    scaling.add_argument("--judges", type=int, default=2,
                         help="number of judges, each with its own position bias (default 2)")
    scaling.add_argument("--max-memory-gb", type=float, default=SCALING_MAX_MEMORY_GB,
                         help="address-space limit of each child, 0 for none "
                              f"(default {SCALING_MAX_MEMORY_GB:g})")
    scaling.add_argument("--dense-max-n", type=int, default=DENSE_MAX_N,
                         help=f"largest N for the dense reference (default {DENSE_MAX_N})")
    args = parser.parse_args(argv)
    if args.scaling:
        if args.judges < 1:
            parser.error(f"--judges must be at least 1; got {args.judges}")
        return run_scaling(args)

    sizes = args.sizes[:1] if args.quick else args.sizes
    acq_sizes = [int(v) for v in args.acq_sizes.split(",") if v.strip()]
    if args.quick:
        acq_sizes = [min(acq_sizes)]
    print_header(args.prior, sizes, args.seed)

    rows, errors, ref_notes = [], [], []
    largest = max(m for _, m in sizes)
    for n, m in sizes:
        start = time.perf_counter()
        problem = make_problem(n, m, args.seed)
        refs = compute_references(problem, args.prior)
        ref_notes.extend(f"N={n}, M={m}: {note}" for note in refs.notes)
        repeats = LARGEST_REPEATS if (m == largest and len(sizes) > 1) else SMALL_REPEATS
        for method in METHODS:
            rows.append(run_method(method, problem, refs, args.prior, repeats, errors))
        print(f"[{n}x{m} done in {time.perf_counter() - start:.0f} s]", file=sys.stderr,
              flush=True)
        del problem, refs
        gc.collect()

    acquisition = {}
    for n in acq_sizes:
        try:
            acquisition[n] = acquisition_step(n, args.seed)
        except Exception as err:  # noqa: BLE001 - reported below
            errors.append((f"acquisition step at N={n}", traceback.format_exc()))
            acquisition[n] = {"error": f"{type(err).__name__}: {err}"}

    print_table(rows)
    print()
    print(f"Acquisition step (topk_membership S={ACQ_SAMPLES}, k={ACQ_K} + pair_scores('topk');"
          f" posterior of bias_aware_bt on 20 N verdicts, lambda={ACQ_PRIOR:g}; best of "
          f"{ACQ_REPEATS}):")
    for n, res in acquisition.items():
        if "error" in res:
            print(f"  N={n:>5}: ERROR {res['error']}")
        else:
            print(f"  N={n:>5}: {res['total_ms']:8.1f} ms  (membership {res['membership_ms']:.1f}"
                  f" ms, pair_scores {res['scores_ms']:.1f} ms)")
    print_notes(ref_notes)
    print_targets(rows, acquisition)
    if errors:
        print()
        print("Errors:")
        for where, text in errors:
            print(f"--- {where}")
            print(text.rstrip())
    return 0


if __name__ == "__main__":
    sys.exit(main())
