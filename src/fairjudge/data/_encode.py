"""Encoded comparisons: the array form of a verdict table that the models consume."""

from __future__ import annotations

from dataclasses import dataclass
from typing import Sequence

import numpy as np
import pandas as pd

from fairjudge._util._warnings import FairjudgeInputError
from fairjudge.data._schema import (
    TIE_SCORE,
    WINNER_VALUES,
    Outcome,
    positions_in,
    unknown_item_error,
    verdict_covariate_differences,
)


@dataclass(frozen=True)
class Comparisons:
    """Pairwise verdicts as integer-coded arrays.

    Attributes
    ----------
    first, second : ndarray of int64, shape (M,)
        Indices (into ``item_ids``) of the item shown first and second.
    first_score : ndarray of float64, shape (M,)
        Credit to the first-shown item: 1 (it won), 0 (it lost) or ``TIE_SCORE`` (a tie is
        half a win for each side).
    weight : ndarray of float64, shape (M,)
        Positive weight of each verdict.
    judge : ndarray of int64, shape (M,)
        Index (into ``judges``) of the judge that gave each verdict.
    item_ids : tuple of str, length N
    judges : tuple of str, length J
    covariate_diff : ndarray of float64, shape (M, d_v)
        Per-verdict covariates, first-shown minus second-shown answer, on the user's scale
        (``d_v = 0`` when there are none): properties of the battle rather than of the item,
        such as the lengths of the two responses in Chatbot Arena's style control.
    covariate_names : tuple of str, length d_v
    """

    first: np.ndarray
    second: np.ndarray
    first_score: np.ndarray
    weight: np.ndarray
    judge: np.ndarray
    item_ids: tuple
    judges: tuple
    covariate_diff: np.ndarray | None = None
    covariate_names: tuple = ()

    def __post_init__(self):
        m = self.first.shape[0]
        for name in ("second", "first_score", "weight", "judge"):
            if getattr(self, name).shape != (m,):
                raise FairjudgeInputError(f"`{name}` must have shape ({m},); got "
                                          f"{getattr(self, name).shape}")
        d_v = len(self.covariate_names)
        diff = (np.zeros((m, 0)) if self.covariate_diff is None
                else np.asarray(self.covariate_diff, dtype=float))
        if diff.ndim == 1 and d_v == 1:
            diff = diff[:, None]
        if diff.shape != (m, d_v):
            raise FairjudgeInputError(f"`covariate_diff` must have shape ({m}, {d_v}) for "
                                      f"{d_v} covariate names; got {diff.shape}")
        if not np.all(np.isfinite(diff)):
            raise FairjudgeInputError("`covariate_diff` must be finite")
        object.__setattr__(self, "covariate_diff", diff)
        object.__setattr__(self, "covariate_names", tuple(str(c) for c in self.covariate_names))
        n, j = len(self.item_ids), len(self.judges)
        if m and (min(self.first.min(), self.second.min()) < 0
                  or max(self.first.max(), self.second.max()) >= n):
            raise FairjudgeInputError(f"item indices must be between 0 and n_items-1={n - 1}")
        if m and np.any(self.first == self.second):
            bad = int(np.flatnonzero(self.first == self.second)[0])
            raise FairjudgeInputError(f"comparison {bad} compares item {self.first[bad]} with "
                                      "itself")
        if m and (self.judge.min() < 0 or self.judge.max() >= j):
            raise FairjudgeInputError(f"judge indices must be between 0 and n_judges-1={j - 1}")
        if m and not np.all(np.isin(self.first_score, (0.0, TIE_SCORE, 1.0))):
            raise FairjudgeInputError(f"`first_score` values must be 0, {TIE_SCORE} or 1")
        if m and not np.all(np.isfinite(self.weight) & (self.weight > 0)):
            raise FairjudgeInputError("`weight` must be positive and finite")

    @property
    def n_items(self) -> int:
        return len(self.item_ids)

    @property
    def n_judges(self) -> int:
        return len(self.judges)

    def __len__(self) -> int:
        return int(self.first.shape[0])

    @classmethod
    def from_outcomes(
        cls,
        first: Sequence[int],
        second: Sequence[int],
        outcomes: Sequence,
        *,
        n_items: int | None = None,
        item_ids: Sequence[str] | None = None,
        weight: Sequence[float] | None = None,
        judge: Sequence[int] | None = None,
        judges: Sequence[str] | None = None,
        covariate_diff=None,
        covariate_names: Sequence[str] = (),
    ) -> "Comparisons":
        """Build from item indices and :class:`Outcome` values (or ``"a"``/``"b"``/``"tie"``).

        Outcomes that carry no verdict (``ABSTAIN``, ``INVALID``) are dropped.

        Examples
        --------
        >>> c = Comparisons.from_outcomes([0, 1], [1, 2], ["a", Outcome.TIE], n_items=3)
        >>> c.first_score.tolist(), c.item_ids
        ([1.0, 0.5], ('0', '1', '2'))
        """
        first = np.asarray(first, dtype=np.int64)
        second = np.asarray(second, dtype=np.int64)
        scores = np.array([Outcome(o).first_score for o in outcomes], dtype=float)
        keep = np.isfinite(scores)
        if item_ids is None:
            if n_items is None:
                n_items = int(max(first.max(initial=-1), second.max(initial=-1)) + 1)
            item_ids = tuple(str(i) for i in range(n_items))
        weight = np.ones(first.shape[0]) if weight is None else np.asarray(weight, dtype=float)
        judge = np.zeros(first.shape[0], np.int64) if judge is None else np.asarray(judge, np.int64)
        if judges is None:
            judges = tuple(f"judge{j}" for j in range(int(judge.max(initial=0)) + 1))
            if len(judges) == 1:
                judges = ("judge",)
        diff = (np.zeros((first.shape[0], 0)) if covariate_diff is None
                else np.asarray(covariate_diff, dtype=float))
        if diff.ndim == 1:
            diff = diff[:, None]
        return cls(first[keep], second[keep], scores[keep], weight[keep], judge[keep],
                   tuple(item_ids), tuple(judges), diff[keep], tuple(covariate_names))

    def subset(self, mask: np.ndarray) -> "Comparisons":
        """The comparisons selected by a boolean mask or index array."""
        return Comparisons(self.first[mask], self.second[mask], self.first_score[mask],
                           self.weight[mask], self.judge[mask], self.item_ids, self.judges,
                           self.covariate_diff[mask], self.covariate_names)

    def without_covariates(self) -> "Comparisons":
        """The same verdicts without per-verdict covariates."""
        if not self.covariate_names:
            return self
        return Comparisons(self.first, self.second, self.first_score, self.weight, self.judge,
                           self.item_ids, self.judges)

    def concat(self, other: "Comparisons") -> "Comparisons":
        """These comparisons followed by ``other`` (same items, judges and covariates)."""
        if (other.item_ids != self.item_ids or other.judges != self.judges
                or other.covariate_names != self.covariate_names):
            raise FairjudgeInputError(
                "only comparisons over the same items, judges and per-verdict "
                "covariates can be concatenated")
        return Comparisons(np.concatenate([self.first, other.first]),
                           np.concatenate([self.second, other.second]),
                           np.concatenate([self.first_score, other.first_score]),
                           np.concatenate([self.weight, other.weight]),
                           np.concatenate([self.judge, other.judge]), self.item_ids, self.judges,
                           np.vstack([self.covariate_diff, other.covariate_diff]),
                           self.covariate_names)


def encode_verdicts(verdicts: pd.DataFrame, items: pd.DataFrame | None = None, *,
                    verdict_covariates=(), judges=None) -> Comparisons:
    """Encode a validated verdict table as :class:`Comparisons`.

    Parameters
    ----------
    verdicts : pandas.DataFrame
        Output of :func:`fairjudge.data.load_verdicts`.
    items : pandas.DataFrame, optional
        Output of :func:`fairjudge.data.load_items`; fixes the item order and must contain
        every item the verdicts name. Without it, items are ordered by first appearance.
    verdict_covariates : sequence of str
        Names of per-verdict covariates, read from ``<name>_a``/``<name>_b`` (or
        ``<name>_diff``) columns (see :func:`fairjudge.data.verdict_covariate_differences`).
    judges : sequence of str, optional
        Fixes the judge order (every judge in the table must be listed); default: sorted.

    Rows without a winner (abstentions, invalid outputs) carry no preference and are left
    out.

    Raises
    ------
    FairjudgeInputError
        If a verdict names an item that is not in ``items``.
    """
    # One pass over each column: codes of the few distinct values, looked up once.
    winner_codes, winners = pd.factorize(verdicts["winner"])
    outcome_of = pd.Index(WINNER_VALUES).get_indexer(winners)
    if (outcome_of < 0).any():
        raise FairjudgeInputError(
            "`verdicts` must be validated first (fairjudge.data.load_verdicts): "
            "a winner is not one of a, b, tie")
    has_winner = winner_codes >= 0
    if not has_winner.all():  # abstentions and invalid outputs
        verdicts = verdicts[has_winner]
        winner_codes = winner_codes[has_winner]
    score_of = np.array([Outcome(w).first_score for w in WINNER_VALUES])[outcome_of]
    if items is not None:
        index = pd.Index(items.index)
        first = positions_in(verdicts["item_a"], index)
        second = positions_in(verdicts["item_b"], index)
        for field, codes in (("item_a", first), ("item_b", second)):
            if (codes < 0).any():
                raise unknown_item_error(verdicts, items, field, int(np.argmax(codes < 0)))
    else:
        index, first, second = _first_appearance(verdicts["item_a"], verdicts["item_b"])
    if judges is None:
        judge_codes, judges = pd.factorize(verdicts["judge"], sort=True)
    else:
        judges = pd.Index([str(j) for j in judges])
        codes, uniques = pd.factorize(verdicts["judge"])
        judge_codes = np.append(judges.get_indexer([str(u) for u in uniques]), -1)[codes]
        if (judge_codes < 0).any():
            unknown = verdicts["judge"].iloc[int(np.argmax(judge_codes < 0))]
            raise FairjudgeInputError(f"judge {unknown!r} is not among `judges` {list(judges)}")
    verdict_covariates = tuple(verdict_covariates)
    return Comparisons(
        first=first,
        second=second,
        first_score=score_of[winner_codes],
        weight=verdicts["weight"].to_numpy(dtype=float),
        judge=np.asarray(judge_codes).astype(np.int64),
        item_ids=tuple(index.astype(str)),
        judges=tuple(str(j) for j in judges),
        covariate_diff=(verdict_covariate_differences(verdicts, verdict_covariates)
                        if verdict_covariates else None),
        covariate_names=verdict_covariates,
    )


def _first_appearance(item_a: pd.Series, item_b: pd.Series):
    """The items in order of first appearance (down ``item_a``, then down ``item_b``) and
    the positions of both columns in that order."""
    codes_a, uniques_a = pd.factorize(item_a)
    codes_b, uniques_b = pd.factorize(item_b)
    index = pd.Index(pd.unique(np.concatenate([np.asarray(uniques_a, dtype=object),
                                               np.asarray(uniques_b, dtype=object)])))
    return (index,
            index.get_indexer(uniques_a).astype(np.int64)[codes_a],
            index.get_indexer(uniques_b).astype(np.int64)[codes_b])
