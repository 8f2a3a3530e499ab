"""The synthetic biased judge and oracle matrices of [bias-aware-active-topk, Appendix].

A *verdict matrix* ``M`` (shape (N, N)) records one verdict per ordered pair: ``M[i, j]`` is
the credit to item ``i`` when ``i`` is shown first and ``j`` second (1 win, 0 loss, 0.5 tie)
and NaN where nothing was recorded (always on the diagonal).
"""

from __future__ import annotations

from dataclasses import dataclass

import numpy as np
import pandas as pd

from fairjudge._util._rng import as_generator
from fairjudge._util._warnings import FairjudgeInputError
from fairjudge.data._schema import TIE_SCORE, Outcome


def balanced_binary_covariate(quality, rng, *, max_abs_corr: float = 0.12,
                              max_tries: int = 10_000) -> np.ndarray:
    """A 0/1 covariate with ``floor(N/2)`` zeros, shuffled until
    ``|corr(quality, x)| < max_abs_corr``.

    This is the paper's verbosity assignment: a balanced shuffle, rejected unless nearly
    uncorrelated with quality, so that verbosity is decoupled from quality by construction.
    """
    rng = as_generator(rng)
    quality = np.asarray(quality, dtype=float)
    n = quality.size
    if n < 2:
        raise FairjudgeInputError(f"need at least 2 items; got {n}")
    x = np.zeros(n)
    x[n // 2:] = 1.0
    for _ in range(max_tries):
        rng.shuffle(x)
        if np.std(quality) == 0 or abs(np.corrcoef(quality, x)[0, 1]) < max_abs_corr:
            return x.copy()
    raise RuntimeError(f"no balanced assignment with |corr| < {max_abs_corr} in {max_tries} "
                       "shuffles; raise `max_abs_corr`")


def simulate_items(n_items: int = 30, *, quality_sd: float = 1.25, max_abs_corr: float = 0.12,
                   rng=None) -> pd.DataFrame:
    """Items of the paper's simulator: ``theta ~ N(0, quality_sd^2)`` and a binary verbosity.

    Returns
    -------
    pandas.DataFrame
        Indexed by id (``item00``, ``item01``, ...), with ``quality`` and ``verbose`` (0/1),
        ready for :func:`fairjudge.rank` / :func:`fairjudge.select`.
    """
    if not (isinstance(n_items, (int, np.integer)) and n_items >= 2):
        raise FairjudgeInputError(f"`n_items` must be an integer >= 2; got {n_items!r}")
    rng = as_generator(rng)
    quality = rng.normal(0.0, quality_sd, n_items)
    verbose = balanced_binary_covariate(quality, rng, max_abs_corr=max_abs_corr)
    width = len(str(n_items - 1))
    ids = [f"item{i:0{width}d}" for i in range(n_items)]
    items = pd.DataFrame({"quality": quality, "verbose": verbose},
                         index=pd.Index(ids, name="id"))
    items.attrs["source"] = "simulated items"
    return items


@dataclass
class SimulatedJudge:
    """A judge whose verdicts follow Eq. (1) with chosen biases [bias-aware-active-topk §3].

    ``P(first preferred) = sigmoid(tau (theta_a - theta_b) + bias . (x_a - x_b) + position)``

    Parameters
    ----------
    quality : ndarray, shape (N,)
        True ``theta``.
    covariates : ndarray, shape (N, d) or (N,)
        Item covariates on the user's scale (e.g. binary verbosity).
    bias : float or ndarray, shape (d,)
        ``c*``: logits per covariate unit.
    position : float
        ``kappa*``: logits added to the first-shown item.
    rng : seed or Generator
        Drives the verdict draws.
    reliability : float
        ``tau``: temperature on the quality difference (1: the paper's judge; below 1 a
        noisier, cheaper judge, as in :func:`fairjudge.models.reliability_bt`).
    """

    quality: np.ndarray
    covariates: np.ndarray
    bias: object = 0.0
    position: float = 0.0
    rng: object = None
    reliability: float = 1.0

    def __post_init__(self):
        self.quality = np.asarray(self.quality, dtype=float)
        x = np.asarray(self.covariates, dtype=float)
        self.covariates = x[:, None] if x.ndim == 1 else x
        self.bias = np.broadcast_to(np.asarray(self.bias, dtype=float),
                                    (self.covariates.shape[1],)).copy()
        if self.covariates.shape[0] != self.quality.shape[0]:
            raise FairjudgeInputError("`quality` and `covariates` must describe the same items")
        self.rng = as_generator(self.rng)
        if not (np.isfinite(self.reliability) and self.reliability > 0):
            raise FairjudgeInputError(f"`reliability` must be positive; got {self.reliability!r}")

    def probability_first(self, first, second) -> np.ndarray:
        """``P(first-shown preferred)`` for index arrays ``first`` and ``second``."""
        first, second = np.asarray(first), np.asarray(second)
        eta = (self.reliability * (self.quality[first] - self.quality[second])
               + (self.covariates[first] - self.covariates[second]) @ self.bias + self.position)
        return 1.0 / (1.0 + np.exp(-eta))

    def __call__(self, first: int, second: int) -> Outcome:
        """One fresh verdict on ``first`` shown before ``second``."""
        return Outcome.A if self.rng.random() < self.probability_first(first, second) else Outcome.B

    def verdict_matrix(self) -> np.ndarray:
        """One draw for every ordered pair: the full oracle matrix, shape (N, N)."""
        n = self.quality.shape[0]
        i, j = np.meshgrid(np.arange(n), np.arange(n), indexing="ij")
        p = self.probability_first(i, j)
        matrix = (self.rng.random((n, n)) < p).astype(float)
        matrix[np.diag_indices(n)] = np.nan
        return matrix


def matrix_to_verdicts(matrix: np.ndarray, item_ids, *, judge: str = "judge") -> pd.DataFrame:
    """Verdict table with one row per recorded ordered pair of a verdict matrix.

    ``pair_id`` names the unordered pair (its ids, lower index first) and ``order`` is
    ``ab`` where the lower-index item was shown first.
    """
    matrix = np.asarray(matrix, dtype=float)
    first, second = np.nonzero(np.isfinite(matrix))
    score = matrix[first, second]
    winner = np.where(score == 1.0, Outcome.A.value,
                      np.where(score == 0.0, Outcome.B.value, Outcome.TIE.value))
    ids = np.asarray(list(item_ids), dtype=object)
    lo, hi = np.minimum(first, second), np.maximum(first, second)
    pair_id = [f"{a}|{b}" for a, b in zip(ids[lo], ids[hi])]
    return pd.DataFrame({"pair_id": pair_id, "item_a": ids[first], "item_b": ids[second],
                         "winner": winner, "judge": judge,
                         "order": np.where(first < second, "ab", "ba")})


def verdicts_to_matrix(verdicts: pd.DataFrame, item_ids) -> np.ndarray:
    """Verdict matrix from a validated verdict table holding at most one verdict per ordered pair.

    Raises
    ------
    FairjudgeInputError
        If an ordered pair is recorded twice (naming both lines) or names an unknown item.
    """
    index = pd.Index(list(item_ids))
    first = index.get_indexer(verdicts["item_a"])
    second = index.get_indexer(verdicts["item_b"])
    source = verdicts.attrs.get("source", "<verdicts>")
    unit = verdicts.attrs.get("location", "row")
    for codes, field in ((first, "item_a"), (second, "item_b")):
        if (codes < 0).any():
            row = int(np.flatnonzero(codes < 0)[0])
            raise FairjudgeInputError(
                f"{source} {unit} {verdicts.index[row]}: field `{field}` names unknown item "
                f"{verdicts[field].iloc[row]!r}")
    n = len(index)
    key = first * n + second
    dup = pd.Series(key).duplicated(keep=False).to_numpy()
    if dup.any():
        rows = np.flatnonzero(key == key[np.flatnonzero(dup)[0]])
        raise FairjudgeInputError(
            f"{source}: ordered pair ({verdicts['item_a'].iloc[rows[0]]!r} shown first, "
            f"{verdicts['item_b'].iloc[rows[0]]!r} second) is recorded more than once "
            f"({unit}s {', '.join(str(verdicts.index[r]) for r in rows[:4])}); a verdict "
            "matrix holds one verdict per ordered pair")
    matrix = np.full((n, n), np.nan)
    score = verdicts["winner"].map({"a": 1.0, "b": 0.0, "tie": TIE_SCORE}).to_numpy(dtype=float)
    matrix[first, second] = score
    return matrix
