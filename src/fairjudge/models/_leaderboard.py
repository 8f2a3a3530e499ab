"""Leaderboard summaries of a fit: Elo-scale ratings, rank intervals, bootstrap over verdicts.

Chatbot Arena reports Bradley–Terry scores on the Elo scale (``1000 + 400 / ln 10 * theta``)
with percentile intervals from refits on battles resampled with replacement; fairjudge gives
those beside its Laplace intervals, and a rank interval per item from posterior samples.
"""

from __future__ import annotations

import dataclasses
import math
import os
import warnings
from collections import deque
from concurrent.futures import ThreadPoolExecutor
from typing import Callable

import numpy as np

from fairjudge._util._rng import as_generator
from fairjudge._util._warnings import FairjudgeInputError
from fairjudge.data._encode import Comparisons

#: Elo points per logit (Arena's scale: a 400-point gap is 10:1 odds).
ELO_PER_LOGIT = 400.0 / math.log(10.0)
#: Elo rating of the average item.
ELO_CENTRE = 1000.0


def elo_ratings(scores) -> np.ndarray:
    """Scores (logits) on the Elo scale, centred so the average item rates 1000; shape as
    ``scores`` (the last axis is items, so a (B, N) array of bootstrap scores works too)."""
    scores = np.asarray(scores, dtype=float)
    return ELO_CENTRE + ELO_PER_LOGIT * (scores - scores.mean(axis=-1, keepdims=True))


def posterior_rank_summaries(blocks, k: int | None, *, level: float = 0.95
                             ) -> tuple[np.ndarray | None, np.ndarray, np.ndarray]:
    """Top-k membership (None without ``k``) and rank intervals from one set of draws.

    ``blocks`` yields draws of shape (m, N), or callables that draw such a block (drawn on
    the worker threads too; :meth:`BTFit.posterior_sample_blocks`); each block is reduced to
    int32 ranks soon after it is drawn, so the float draws are never all held at once.
    """
    ranks, counts = [], None

    def collect(result):
        nonlocal counts
        rank, top = result
        ranks.append(rank)
        if top is not None:
            counts = top if counts is None else counts + top

    # numpy sorts without the GIL: blocks are ranked on every core, a few at a time so
    # that the float draws are not all held at once.
    workers = min(os.cpu_count() or 1, 4)
    with ThreadPoolExecutor(workers) as pool:
        pending = deque()
        for block in blocks:
            pending.append(pool.submit(_rank_block, block, k))
            if len(pending) > 2 * workers:
                collect(pending.popleft().result())
        while pending:
            collect(pending.popleft().result())
        if not ranks:
            raise FairjudgeInputError("rank summaries need at least one posterior draw")
        n, draws = ranks[0].shape[0], sum(block.shape[1] for block in ranks)
        membership = None if k is None else counts / draws
        # The "inverted_cdf" quantiles (the smallest draw whose empirical CDF reaches q), both
        # from one partial sort (np.quantile would sort twice), on every core by blocks of
        # items gathered from the blocks of draws.
        tail = (1.0 - level) / 2.0
        at = [max(int(np.ceil(q * draws)) - 1, 0) for q in (tail, 1.0 - tail)]
        kth = sorted(set(at))

        def quantiles(items):
            gathered = np.concatenate([block[items] for block in ranks], axis=1)
            gathered.partition(kth, axis=1)
            return gathered[:, at].T

        low, high = np.hstack(list(pool.map(
            quantiles, [slice(start, start + 2048) for start in range(0, n, 2048)])))
    return membership, low.astype(int), high.astype(int)


def descending_order(block: np.ndarray) -> np.ndarray:
    """A stable descending argsort of each row of float64 draws ``block`` (m, N): best
    first, equal values by index; (m, N) indices.

    The sort runs on the float32 values (numpy sorts them several times faster), which
    order the draws exactly as their float64 values do except within runs of equal float32
    values; those runs (about a hundred per draw at 100,000 items, nearly all of two) are
    then put in float64 order.
    """
    keys = np.negative(block, dtype=np.float32)
    order = np.argsort(keys, axis=1)
    ordered = np.sort(keys, axis=1)  # the values in `order`, sorted faster than gathered
    tied = np.zeros((block.shape[0], block.shape[1] + 1), dtype=bool)
    np.equal(ordered[:, 1:], ordered[:, :-1], out=tied[:, 1:-1])  # tied[:, p]: p-1 == p
    rows, first = np.nonzero(tied[:, 1:-1])  # first of two equal neighbours
    if not rows.size:
        return order
    # Runs of exactly two: swap the pair where float64 (then the index) orders it the other
    # way.
    pair = ~tied[rows, first] & ~tied[rows, first + 2]
    r, p = rows[pair], first[pair]
    a, b = order[r, p], order[r, p + 1]
    swap = (block[r, a] < block[r, b]) | ((block[r, a] == block[r, b]) & (a > b))
    order[r[swap], p[swap]], order[r[swap], p[swap] + 1] = b[swap], a[swap]
    # Longer runs (rare): each sorted whole.
    for row, start in zip(rows[~pair].tolist(), first[~pair].tolist()):
        if tied[row, start]:
            continue  # inside a run already sorted from its start
        stop = start + 1
        while tied[row, stop + 1]:
            stop += 1
        run = order[row, start:stop + 1]
        order[row, start:stop + 1] = run[np.lexsort((run, -block[row, run]))]
    return order


def _rank_block(block, k: int | None):
    """Ranks (1 = best) in each draw of ``block`` (m, N, or a callable drawing it) as int32,
    item by draw (N, m: an item's ranks are contiguous for its quantiles), and how often
    each item is among the ``k`` best (None without ``k``)."""
    if callable(block):
        block = block()
    order = descending_order(block)
    n = block.shape[1]
    rank = np.empty(block.shape[::-1], dtype=np.int32)
    np.put_along_axis(rank.T, order, np.arange(1, n + 1, dtype=np.int32)[None], axis=1)
    top = None if k is None else np.bincount(order[:, :k].ravel(), minlength=n)
    return rank, top


@dataclasses.dataclass(frozen=True)
class BootstrapScores:
    """Scores refitted on verdicts resampled with replacement.

    Attributes
    ----------
    scores : ndarray, shape (n_boot, N)
    not_converged : int
        Refits that stopped before their tolerance (kept; counted for the report).
    """

    scores: np.ndarray
    not_converged: int

    def interval(self, level: float = 0.95) -> tuple[np.ndarray, np.ndarray]:
        """Percentile intervals of each item's Elo rating, as the Arena notebook reports."""
        elo = elo_ratings(self.scores)
        tail = (1.0 - level) / 2.0
        return np.quantile(elo, tail, axis=0), np.quantile(elo, 1.0 - tail, axis=0)


def bootstrap_scores(comparisons: Comparisons, refit: Callable[[Comparisons], object], *,
                     n_boot: int = 100, rng=0) -> BootstrapScores:
    """Refit on ``n_boot`` resamples of the verdicts (rows drawn with replacement, as Arena
    resamples battles).

    A resample keeps the rows drawn at least once, each weighted by its original weight
    times the number of draws. ``refit`` maps :class:`Comparisons` to a fit with
    ``scores``; items no resample compares keep the prior's say. Warnings of the refits
    (a resample may disconnect the comparison graph) are silenced; non-convergence is
    counted.
    """
    if isinstance(n_boot, bool) or not isinstance(n_boot, (int, np.integer)) or n_boot < 1:
        raise FairjudgeInputError(f"`n_boot` must be a positive integer; got {n_boot!r}")
    generator = as_generator(rng)
    m = len(comparisons.first)
    per_verdict = ("first", "second", "first_score", "weight", "judge")
    out, not_converged = [], 0
    for _ in range(int(n_boot)):
        counts = np.bincount(generator.integers(0, m, size=m), minlength=m)
        drawn = np.flatnonzero(counts)
        changes = {name: getattr(comparisons, name)[drawn] for name in per_verdict}
        changes["weight"] = changes["weight"] * counts[drawn]
        if comparisons.covariate_diff is not None:
            changes["covariate_diff"] = comparisons.covariate_diff[drawn]
        with warnings.catch_warnings():
            warnings.simplefilter("ignore")
            fit = refit(dataclasses.replace(comparisons, **changes))
        not_converged += not getattr(fit, "converged", True)
        out.append(np.asarray(fit.scores, dtype=float))
    return BootstrapScores(np.vstack(out), not_converged)
