"""Top-k membership probabilities under a Gaussian posterior."""

from __future__ import annotations

import numpy as np
from scipy import linalg

from fairjudge._util._rng import as_generator
from fairjudge._util._warnings import FairjudgeInputError


def gaussian_samples(mean: np.ndarray, covariance: np.ndarray, n_samples: int,
                     rng) -> np.ndarray:
    """``n_samples`` draws from ``N(mean, covariance)``, shape (n_samples, N).

    Uses a Cholesky factor, adding the smallest diagonal jitter that makes the factorisation
    succeed when ``covariance`` is only positive semi-definite (e.g. after residualisation).
    """
    rng = as_generator(rng)
    n = mean.shape[0]
    jitter = 0.0
    scale = float(np.mean(np.diag(covariance))) or 1.0
    for _ in range(8):
        try:
            chol = linalg.cholesky(covariance + jitter * np.eye(n), lower=True,
                                   check_finite=False)
            break
        except linalg.LinAlgError:
            jitter = max(jitter * 10.0, 1e-12 * scale)
    else:  # fall back to the symmetric square root, which always exists
        w, v = np.linalg.eigh(covariance)
        chol = v * np.sqrt(np.clip(w, 0.0, None))
    z = rng.standard_normal((n_samples, n))
    return mean + z @ chol.T


def topk_membership(scores, covariance, k: int, *, n_samples: int = 1500,
                    rng=0) -> np.ndarray:
    """Monte-Carlo estimate of ``p_i = P(i in top-k)`` under ``theta ~ N(scores, covariance)``.

    Draws ``n_samples`` posterior samples and counts how often each item is among the ``k``
    largest [bias-aware-active-topk §3 "Posterior summaries"]; the Monte-Carlo error of each
    ``p_i`` is at most ``0.5 / sqrt(n_samples)``. The estimates sum to ``k``.

    Parameters
    ----------
    scores : array_like, shape (N,)
    covariance : array_like, shape (N, N)
    k : int
        1 <= k <= N.
    n_samples : int
        ``S`` (paper default 1500).
    rng : seed or numpy.random.Generator

    Returns
    -------
    ndarray, shape (N,)

    Examples
    --------
    >>> p = topk_membership([3.0, 0.0, -3.0], 0.01 * np.eye(3), 1, rng=0)
    >>> p.tolist()
    [1.0, 0.0, 0.0]
    """
    scores = np.asarray(scores, dtype=float)
    covariance = np.asarray(covariance, dtype=float)
    n = scores.shape[0]
    if covariance.shape != (n, n):
        raise FairjudgeInputError(
            f"`covariance` must have shape ({n}, {n}); got {covariance.shape}")
    if not (isinstance(k, (int, np.integer)) and 1 <= k <= n):
        raise FairjudgeInputError(f"`k` must be an integer between 1 and n_items={n}; got {k!r}")
    check_n_samples(n_samples)
    if k == n:
        return np.ones(n)
    return membership_from_samples([gaussian_samples(scores, covariance, n_samples, rng)], k, n)


def check_n_samples(n_samples) -> None:
    if isinstance(n_samples, bool) or not (isinstance(n_samples, (int, np.integer))
                                           and n_samples >= 1):
        raise FairjudgeInputError(f"`n_samples` must be a positive integer; got {n_samples!r}")


def membership_from_samples(blocks, k: int, n_items: int) -> np.ndarray:
    """Share of draws in which each item is among the ``k`` largest, shape (N,).

    ``blocks`` yields arrays of draws of shape (m, N); 1 <= k < N.
    """
    counts = np.zeros(n_items)
    total = 0
    for block in blocks:
        top = np.argpartition(-block, k - 1, axis=1)[:, :k]
        counts += np.bincount(top.ravel(), minlength=n_items)
        total += block.shape[0]
    return counts / total
