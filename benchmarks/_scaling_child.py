"""One method on one scaling cell, in a fresh interpreter: the child of ``bench_fit.py --scaling``.

Run by the parent as ``python benchmarks/_scaling_child.py SPEC_JSON``; not meant to be run
by hand. It regenerates the cell's synthetic data from its seed, runs one method, saves the
centred scores (and, for the fairjudge fit and the dense reference, the marginal variances)
to ``.npy`` files in ``SPEC["out_dir"]`` and reports on stdout, one JSON object per line:

* ``{"event": "data", "seconds": ..., "rss_mb": ..., "peak_mb": ...}`` once the method's
  package is imported and the data exist (the parent starts the method's deadline then);
* ``{"event": "result", "rows": [...]}`` at the end, each row with ``seconds``,
  ``peak_mb`` (:func:`peak_rss_mb` read right after that row's work), ``runs`` and
  ``notes``; or ``{"event": "error", "peak_mb": ...}`` if the method raised.

This file imports only numpy, scipy and pandas at the top; each method imports its own
package, so a child's peak RSS holds the data, the interpreter and that one package.
"""

from __future__ import annotations

import gc
import importlib
import json
import resource
import sys
import time
import warnings
from pathlib import Path

import numpy as np
from scipy import linalg
from scipy.special import expit

# --- data generator (see bench_fit.py's docstring, "Scaling mode") -------------------------
LENGTH_RANGE = (50, 800)        # words, inclusive
LENGTH_EFFECT = 0.3             # c: logits per standard deviation of length difference
KAPPA_RANGE = (0.1, 0.5)        # judge j's position bias, evenly spaced over this range

# --- settings ------------------------------------------------------------------------------
REPEATS = 3                     # best of this many runs ...
REPEAT_BELOW_S = 5.0            # ... when one run is shorter than this and fits the deadline
DENSE_TOL = 1e-10               # Newton step tolerance of the dense reference
ML_PRIOR, ML_TOL = 1e-8, 1e-7   # near maximum-likelihood naive fit (evalica has no prior)
EVALICA_TOL, EVALICA_LIMIT = 1e-10, 100_000
SKLEARN_TOL, SKLEARN_MAX_ITER = 1e-10, 10_000
RANK_K, RANK_SAMPLES = 10, 1500


def _status_mb(field: str) -> float | None:
    """A ``/proc/self/status`` memory field in MiB, or ``None`` where /proc is missing."""
    try:
        with open("/proc/self/status") as status:
            for line in status:
                if line.startswith(field + ":"):
                    return int(line.split()[1]) / 1024
    except OSError:
        pass
    return None


def peak_rss_mb() -> float:
    """Peak resident set size of this process so far, in MiB.

    ``VmHWM``, the high-water mark of this process's own address space. Not ``ru_maxrss``:
    on Linux, exec keeps the larger of its value and the pre-exec image's, so a child
    started by ``subprocess`` reports at least its parent's resident set at the fork (a
    child of a 170 MB parent never reads below 170 MB). ``ru_maxrss`` only where /proc is
    missing.
    """
    hwm = _status_mb("VmHWM")
    if hwm is not None:
        return hwm
    return resource.getrusage(resource.RUSAGE_SELF).ru_maxrss / 1024   # KiB on Linux


def current_rss_mb() -> float:
    """Resident set size now (``VmRSS``), or ``nan`` where /proc is missing."""
    rss = _status_mb("VmRSS")
    return float("nan") if rss is None else rss


def emit(event: str, **fields) -> None:
    print(json.dumps({"event": event, **fields}), flush=True)


# =========================================================================================
# Data
# =========================================================================================
def make_cell(n: int, m: int, n_judges: int, seed: int, *, frames: bool) -> dict:
    """Synthetic verdicts of one cell; the same for every child given the same arguments.

    Returns a dict with ``ids`` and ``length`` and either the arrays ``first``, ``second``,
    ``judge``, ``first_won`` (``frames=False``) or the pandas tables ``verdicts`` (``item_a``,
    ``item_b``, ``winner``, ``judge``) and ``items`` (``id``, ``length``) (``frames=True``).
    """
    rng = np.random.default_rng([seed, n, m, n_judges])
    theta = rng.standard_normal(n)
    length = rng.integers(LENGTH_RANGE[0], LENGTH_RANGE[1] + 1, size=n).astype(np.int64)
    kappa = np.linspace(*KAPPA_RANGE, n_judges) if n_judges > 1 else np.array([KAPPA_RANGE[1]])
    judge = rng.integers(0, n_judges, size=m).astype(np.int64)
    first = rng.integers(0, n, size=m).astype(np.int64)
    second = (first + rng.integers(1, n, size=m)) % n   # uniform over the other items
    x = length / length.std()
    eta = theta[first] - theta[second]
    eta += LENGTH_EFFECT * (x[first] - x[second])
    eta += kappa[judge]
    first_won = rng.random(m) < expit(eta, out=eta)
    del eta
    width = max(4, len(str(n - 1)))
    ids = tuple(f"m{i:0{width}d}" for i in range(n))
    judges = tuple(f"judge{j}" for j in range(n_judges))
    cell = {"ids": ids, "judges": judges, "length": length}
    if not frames:
        cell.update(first=first, second=second, judge=judge, first_won=first_won)
        return cell
    import pandas as pd
    id_array = np.asarray(ids, dtype=object)
    cell["verdicts"] = pd.DataFrame({
        "item_a": id_array[first],
        "item_b": id_array[second],
        "winner": np.array(["b", "a"], dtype=object)[first_won.view(np.int8)],
        "judge": np.asarray(judges, dtype=object)[judge],
    })
    cell["items"] = pd.DataFrame({"id": list(ids), "length": length})
    return cell


def standardised_length(length: np.ndarray) -> np.ndarray:
    """``(x - mean) / std`` (population std), as fairjudge standardises item covariates."""
    x = np.asarray(length, dtype=float)
    return (x - x.mean()) / x.std()


# =========================================================================================
# Timing
# =========================================================================================
def best_of(fn, deadline_left: float):
    """Run ``fn`` once, then again up to ``REPEATS`` runs while runs are short.

    Returns (last result, best seconds, runs, warning messages).
    """
    times, messages, result = [], [], None
    while True:
        gc.collect()
        with warnings.catch_warnings(record=True) as caught:
            warnings.simplefilter("always")
            start = time.perf_counter()
            result = fn()
            times.append(time.perf_counter() - start)
        for w in caught:
            text = f"{w.category.__name__}: {str(w.message).splitlines()[0][:80]}"
            if text not in messages:
                messages.append(text)
        spent = sum(times)
        if (len(times) >= REPEATS or times[-1] > REPEAT_BELOW_S
                or spent + 1.5 * times[-1] > 0.5 * deadline_left):
            return result, min(times), len(times), messages


def row(label: str, seconds: float, runs: int, notes: list) -> dict:
    return {"label": label, "seconds": seconds, "runs": runs, "peak_mb": peak_rss_mb(),
            "notes": notes}


def save(out_dir: Path, name: str, values) -> None:
    values = np.asarray(values, dtype=float)
    np.save(out_dir / f"{name}.npy", values)


# =========================================================================================
# Methods: each takes (spec, cell, out_dir) and returns a list of rows
# =========================================================================================
def _comparisons(cell: dict):
    from fairjudge.data import Comparisons
    m = cell["first"].shape[0]
    return Comparisons(first=cell["first"], second=cell["second"],
                       first_score=cell["first_won"].astype(float), weight=np.ones(m),
                       judge=cell["judge"], item_ids=cell["ids"], judges=cell["judges"])


def marginal_variances(fit) -> tuple[np.ndarray, str]:
    """Posterior variance of each ``theta_i`` (marginal over the bias terms), and how.

    ``fit.marginal_variances()`` where the fit has it (the matrix-free path), else the
    diagonal of the dense ``fit.covariance``.
    """
    method = getattr(fit, "marginal_variances", None)
    if callable(method):
        return np.asarray(method(), dtype=float), "fit.marginal_variances()"
    if method is not None:
        return np.asarray(method, dtype=float), "fit.marginal_variances"
    return np.diag(np.asarray(fit.covariance)).copy(), "np.diag(fit.covariance)"


def run_bias_aware(spec: dict, cell: dict, out_dir: Path, deadline_left) -> list:
    """fairjudge ``bias_aware_bt`` on integer arrays; then the marginal variances."""
    from fairjudge.models import bias_aware_bt
    comparisons = _comparisons(cell)
    for key in ("first", "second", "judge", "first_won"):
        del cell[key]   # the Comparisons hold their own copies where they need them
    gc.collect()
    x = cell["length"].reshape(-1, 1).astype(float)

    def fit():
        return bias_aware_bt(comparisons, x, covariate_names=["length"],
                             prior_precision=spec["prior"],
                             bias_prior_precision=spec["bias_prior"])

    result, seconds, runs, notes = best_of(fit, deadline_left())
    notes.insert(0, f"{result.n_iter} Newton its; default tol")
    save(out_dir, "bias_aware_scores", result.scores)
    rows = [row("fairjudge bias_aware_bt (arrays)", seconds, runs, notes)]
    # One call: a sparse fit computes its variances once and caches them.
    start = time.perf_counter()
    var, how = marginal_variances(result)
    seconds = time.perf_counter() - start
    save(out_dir, "bias_aware_var", var)
    rows.append(row("  + marginal variances", seconds, 1, [how, "first call"]))
    if hasattr(result, "posterior_samples"):
        start = time.perf_counter()
        result.topk_membership(10, n_samples=1500, rng=0)
        seconds = time.perf_counter() - start
        rows.append(row("  + top-10 membership", seconds, 1,
                        [f"1500 draws ({result.solver} posterior)"]))
    return rows


def run_naive(spec: dict, cell: dict, out_dir: Path, deadline_left) -> list:
    """fairjudge ``bt_pairwise`` on integer arrays; then an untimed near-ML fit."""
    from fairjudge.models import bt_pairwise
    comparisons = _comparisons(cell)
    for key in ("first", "second", "judge", "first_won"):
        del cell[key]
    gc.collect()
    result, seconds, runs, notes = best_of(
        lambda: bt_pairwise(comparisons, prior_precision=spec["prior"]), deadline_left())
    notes.insert(0, f"{result.n_iter} Newton its; default tol")
    save(out_dir, "naive_scores", result.scores)
    rows = [row("fairjudge bt_pairwise (arrays)", seconds, runs, notes)]
    del result
    gc.collect()
    with warnings.catch_warnings():
        warnings.simplefilter("ignore")   # the mean direction is flat; rounding noise only
        ml = bt_pairwise(comparisons, prior_precision=ML_PRIOR, tol=ML_TOL, max_iter=200)
    save(out_dir, "ml_scores", ml.scores)
    return rows


def dense_newton(first, second, judge, first_won, x_std, n: int, n_judges: int,
                 prior: float, bias_prior: float, *, tol: float = DENSE_TOL,
                 max_iter: int = 50):
    """MAP of fairjudge's bias-aware model and its exact marginal variances, densely.

    Parameters ``(theta_0..theta_{n-1}, c_0, kappa_0, c_1, kappa_1, ...)``: per verdict
    ``eta = theta_a - theta_b + c_j (x_a - x_b) + kappa_j`` with ``x`` the standardised
    length, priors ``lambda ||theta||^2 / 2`` and ``lambda_b (c_j^2 + kappa_j^2) / 2``.
    Written from the model, not from fairjudge's code, so it checks the library.

    Newton steps are solved by Jacobi-preconditioned conjugate gradients on the sparse
    Hessian (to a relative residual of 1e-13) until a step is below ``1e3 * tol``; then one
    Newton step with the dense Hessian's Cholesky factor ``L`` gives the answer, and
    ``diag(H^-1)`` is the column sums of squares of ``L^-1``. Only the last step and the
    variances pay the O(P^3) dense cost.

    Returns (beta, marginal variances of theta, Newton iterations, converged).
    """
    from scipy import sparse
    from scipy.sparse.linalg import LinearOperator, cg
    p_total = n + 2 * n_judges
    dx = x_std[first] - x_std[second]
    y = first_won.astype(float)
    c_col = n + 2 * judge
    beta = np.zeros(p_total)
    prior_diag = np.full(p_total, bias_prior)
    prior_diag[:n] = prior

    def working(beta):
        eta = beta[first] - beta[second] + beta[c_col] * dx + beta[c_col + 1]
        p = expit(eta)
        return y - p, p * (1.0 - p)

    def gradient(beta, r):
        grad = np.zeros(p_total)
        grad[:n] = np.bincount(first, r, n) - np.bincount(second, r, n)
        grad[n::2] = np.bincount(judge, r * dx, n_judges)
        grad[n + 1::2] = np.bincount(judge, r, n_judges)
        return grad - prior_diag * beta

    def bias_blocks(w):
        """Rows of the Hessian for each judge's (c_j, kappa_j), shape (2J, P)."""
        rows = np.zeros((2 * n_judges, p_total))
        for j in range(n_judges):
            sel = judge == j
            wj, dj, fj, sj = w[sel], dx[sel], first[sel], second[sel]
            c, k = 2 * j, 2 * j + 1
            rows[c, :n] = np.bincount(fj, wj * dj, n) - np.bincount(sj, wj * dj, n)
            rows[k, :n] = np.bincount(fj, wj, n) - np.bincount(sj, wj, n)
            rows[c, n + c] = np.dot(wj, dj * dj)
            rows[c, n + k] = rows[k, n + c] = np.dot(wj, dj)
            rows[k, n + k] = wj.sum()
        return rows

    def degree(w):
        return np.bincount(first, w, n) + np.bincount(second, w, n)

    def sparse_hessian(w):
        """Negative log-posterior Hessian as a CSR matrix."""
        pairs = sparse.coo_matrix((-w, (first, second)), shape=(n, n)).tocsr()
        theta = pairs + pairs.T + sparse.diags(degree(w) + prior_diag[:n])
        rows = bias_blocks(w)
        cross = sparse.csr_matrix(rows[:, :n])
        block = rows[:, n:] + np.diag(prior_diag[n:])
        return sparse.bmat([[theta, cross.T], [cross, sparse.csr_matrix(block)]],
                           format="csr")

    def dense_hessian(w):
        h = np.zeros((p_total, p_total))
        pair = np.bincount(first * n + second, weights=w, minlength=n * n).reshape(n, n)
        h[:n, :n] -= pair
        h[:n, :n] -= pair.T
        del pair
        h[np.arange(n), np.arange(n)] += degree(w)
        rows = bias_blocks(w)
        h[n:, :] = rows
        h[:n, n:] = rows[:, :n].T
        h[np.arange(p_total), np.arange(p_total)] += prior_diag
        return h

    converged, it = False, 0
    for it in range(1, max_iter + 1):
        r, w = working(beta)
        grad = gradient(beta, r)
        h = sparse_hessian(w)
        inv_diag = 1.0 / h.diagonal()
        precond = LinearOperator(h.shape, matvec=lambda v: inv_diag * v)
        step, info = cg(h, grad, rtol=1e-13, atol=0.0, maxiter=10 * p_total, M=precond)
        if info != 0:
            raise RuntimeError(f"conjugate gradients did not converge (info={info})")
        beta += step
        if np.max(np.abs(step)) < 1e3 * tol:
            break
    r, w = working(beta)
    grad = gradient(beta, r)
    chol = linalg.cholesky(dense_hessian(w), lower=True, overwrite_a=True, check_finite=False)
    step = linalg.cho_solve((chol, True), grad, check_finite=False)
    beta += step
    it += 1
    converged = bool(np.max(np.abs(step)) < tol)
    # diag(H^-1) = column sums of squares of L^-1, where H = L L^T.
    inv_l, info = linalg.lapack.dtrtri(chol, lower=1, overwrite_c=1)
    if info != 0:
        raise RuntimeError(f"dtrtri failed (info={info})")
    var = np.einsum("ij,ij->j", inv_l[:, :n], inv_l[:, :n])
    return beta, var, it, converged


def run_dense(spec: dict, cell: dict, out_dir: Path, deadline_left) -> list:
    """The dense reference: :func:`dense_newton` from zero, one run."""
    x_std = standardised_length(cell["length"])
    n, n_judges = len(cell["ids"]), len(cell["judges"])
    start = time.perf_counter()
    beta, var, it, converged = dense_newton(
        cell["first"], cell["second"], cell["judge"], cell["first_won"], x_std, n, n_judges,
        spec["prior"], spec["bias_prior"])
    seconds = time.perf_counter() - start
    save(out_dir, "dense_scores", beta[:n])
    save(out_dir, "dense_var", var)
    notes = [f"{it} Newton its (last dense) to step < {DENSE_TOL:g}; exact variances"]
    if not converged:
        notes.append("NOT CONVERGED")
    return [row("dense reference (numpy Newton)", seconds, 1, notes)]


def run_rank(spec: dict, cell: dict, out_dir: Path, deadline_left) -> list:
    """``fairjudge.rank`` from the DataFrames (validate, encode, fit, leaderboard, top-k)."""
    import fairjudge
    verdicts, items = cell["verdicts"], cell["items"]
    result, seconds, runs, notes = best_of(
        lambda: fairjudge.rank(verdicts, items=items, k=RANK_K, model="bias-aware",
                               prior_precision=spec["prior"],
                               bias_prior_precision=spec["bias_prior"],
                               n_samples=RANK_SAMPLES, rng=0),
        deadline_left())
    save(out_dir, "rank_scores", result.scores.reindex(list(cell["ids"])).to_numpy(float))
    notes.insert(0, f"k={RANK_K}, S={RANK_SAMPLES}: validate+encode+fit+leaderboard")
    return [row("fairjudge.rank (DataFrames in)", seconds, runs, notes)]


def run_evalica(spec: dict, cell: dict, out_dir: Path, deadline_left) -> list:
    """evalica ``bradley_terry`` from the same DataFrames (no covariate, no position)."""
    import evalica
    verdicts = cell["verdicts"]
    codes = {"a": evalica.Winner.X, "b": evalica.Winner.Y, "tie": evalica.Winner.Draw}

    def call():
        winners = verdicts["winner"].map(codes)
        return evalica.bradley_terry(verdicts["item_a"], verdicts["item_b"], winners,
                                     tolerance=EVALICA_TOL, limit=EVALICA_LIMIT)

    result, seconds, runs, notes = best_of(call, deadline_left())
    strength = result.scores.reindex(list(cell["ids"])).to_numpy(dtype=float)
    save(out_dir, "evalica_scores", np.log(strength))
    notes.insert(0, f"log(strength); ML; tol={EVALICA_TOL:g}; {result.iterations} its")
    return [row("evalica bradley_terry (DataFrames in)", seconds, runs, notes)]


def sklearn_design(verdicts, items, prior: float, bias_prior: float):
    """DataFrames -> CSR design (+1/-1 per item, per-judge length and position) and target.

    Column ``n + 2j`` holds the standardised length difference and ``n + 2j + 1`` a
    constant for verdicts of judge ``j``. LogisticRegression's penalty ``||w||^2 / (2C)``
    with ``C = 1/lambda`` is the theta prior; a bias column scaled by
    ``sqrt(lambda / lambda_b)`` gets the prior ``lambda_b``: fairjudge's MAP problem.
    """
    import pandas as pd
    from scipy import sparse
    index = pd.Index(items["id"])
    n = len(index)
    first = index.get_indexer(verdicts["item_a"])
    second = index.get_indexer(verdicts["item_b"])
    if (first < 0).any() or (second < 0).any():
        raise ValueError("a verdict names an unknown item")
    judge, _ = pd.factorize(verdicts["judge"], sort=True)
    x_std = standardised_length(items["length"].to_numpy(dtype=float))
    scale = np.sqrt(prior / bias_prior)
    m = first.shape[0]
    data = np.empty((m, 4))
    data[:, 0], data[:, 1] = 1.0, -1.0
    data[:, 2] = (x_std[first] - x_std[second]) * scale
    data[:, 3] = scale
    cols = np.empty((m, 4), dtype=np.int64)
    cols[:, 0], cols[:, 1] = first, second
    cols[:, 2] = n + 2 * judge
    cols[:, 3] = n + 2 * judge + 1
    indptr = np.arange(0, 4 * m + 1, 4, dtype=np.int64)
    n_judges = int(judge.max()) + 1
    design = sparse.csr_matrix((data.ravel(), cols.ravel(), indptr), shape=(m, n + 2 * n_judges))
    return design, (verdicts["winner"] == "a").to_numpy(dtype=bool)


def run_sklearn(spec: dict, cell: dict, out_dir: Path, deadline_left) -> list:
    """scikit-learn LogisticRegression (lbfgs) from the same DataFrames: build + fit."""
    from sklearn.linear_model import LogisticRegression
    verdicts, items = cell["verdicts"], cell["items"]
    prior, bias_prior = spec["prior"], spec["bias_prior"]
    build_s = []

    def call():
        start = time.perf_counter()
        design, target = sklearn_design(verdicts, items, prior, bias_prior)
        build_s.append(time.perf_counter() - start)
        model = LogisticRegression(C=1.0 / prior, fit_intercept=False, solver="lbfgs",
                                   tol=SKLEARN_TOL, max_iter=SKLEARN_MAX_ITER)
        return model.fit(design, target)

    result, seconds, runs, notes = best_of(call, deadline_left())
    save(out_dir, "sklearn_scores", result.coef_[0, :len(cell["ids"])])
    notes.insert(0, f"build {min(build_s):.2f} s + lbfgs tol={SKLEARN_TOL:g}, "
                    f"{int(result.n_iter_[0])} its; C=1/lambda, scaled bias cols")
    return [row(f"sklearn LR tol={SKLEARN_TOL:g} (DataFrames in)", seconds, runs, notes)]


# key -> (runner, needs DataFrames, modules it imports before its data are drawn: each
# method's own modules, so no timing includes an import; `fairjudge.rank` loads
# `fairjudge._api` lazily on first use, as scikit-learn's estimators are imported above)
METHODS = {
    "bias_aware": (run_bias_aware, False, ("fairjudge.data", "fairjudge.models")),
    "dense": (run_dense, False, ("scipy.sparse.linalg",)),
    "naive": (run_naive, False, ("fairjudge.data", "fairjudge.models")),
    "rank": (run_rank, True, ("fairjudge", "fairjudge._api")),
    "evalica": (run_evalica, True, ("evalica",)),
    "sklearn": (run_sklearn, True, ("sklearn.linear_model",)),
}


def main(argv: list) -> int:
    spec = json.loads(argv[1])
    if spec.get("max_memory_gb"):
        # An address-space cap makes a method that needs too much fail with MemoryError
        # instead of pushing the shared machine into swap or the OOM killer.
        limit = int(spec["max_memory_gb"] * 2**30)
        resource.setrlimit(resource.RLIMIT_AS, (limit, limit))
    runner, frames, modules = METHODS[spec["method"]]
    # Imported first, so that the "data" RSS holds interpreter, package and data, and the
    # peak's excess over it is the method's own working memory.
    for module in modules:
        importlib.import_module(module)
    start = time.perf_counter()
    cell = make_cell(spec["n"], spec["m"], spec["judges"], spec["seed"], frames=frames)
    gc.collect()
    emit("data", seconds=time.perf_counter() - start, rss_mb=current_rss_mb(),
         peak_mb=peak_rss_mb())
    began = time.monotonic()

    def deadline_left() -> float:
        return spec["deadline"] - (time.monotonic() - began)

    try:
        rows = runner(spec, cell, Path(spec["out_dir"]), deadline_left)
    except BaseException:
        emit("error", peak_mb=peak_rss_mb())   # the traceback goes to stderr
        raise
    emit("result", rows=rows)
    return 0


if __name__ == "__main__":
    sys.exit(main(sys.argv))
