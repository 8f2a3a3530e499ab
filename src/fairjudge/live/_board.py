"""A leaderboard that updates as verdicts arrive [the multi-fidelity issue §5].

:class:`LiveLeaderboard` keeps the verdicts as counts per (judge, item shown first, item
shown second, outcome), which is all the likelihood of every Bradley–Terry model in
:mod:`fairjudge.models` depends on. ``update`` adds a batch of verdicts to the counts (its
cost is that of the batch); ``snapshot`` refits the posterior warm-started from the last
fit, padded with zeros for items and judges seen since. A refit's cost grows with the
number of distinct (judge, pair, order) cells and the number of items, never with the
number of verdicts behind them, so the cost of keeping the board current is sub-linear in
the verdicts seen (``benchmarks/live_leaderboard.py`` measures the curve). The snapshot
after every verdict equals the batch fit of :func:`fairjudge.rank` on the same verdicts to
the solver's tolerance (Newton stops at a step below 1e-7, the error then of order 1e-14).
"""

from __future__ import annotations

import numpy as np
import pandas as pd

from fairjudge._util._rng import as_generator
from fairjudge._util._warnings import FairjudgeInputError
from fairjudge.data._encode import Comparisons
from fairjudge.data._schema import TIE_SCORE


class LiveLeaderboard:
    """A Bradley–Terry leaderboard fed verdict by verdict (module docstring).

    Parameters
    ----------
    items : path or pandas.DataFrame, optional
        The item table, fixing the items (a verdict naming another item is an error) and
        holding ``covariates``. Without it, items are added as verdicts name them and the
        model has no item covariates.
    covariates : list of str, optional
        Item covariates for the bias-aware model (columns of ``items``; default the item
        table's default set).
    model : {"bias-aware", "naive"}
    position : bool
        Each judge's position term (bias-aware).
    k : int, optional
        Top-k membership probabilities in each snapshot.
    level : float
    n_samples : int
        Posterior samples for rank intervals and membership.
    prior_precision, bias_prior_precision : float
    rng : seed or numpy.random.Generator
    """

    def __init__(self, items=None, *, covariates=None, model: str = "bias-aware",
                 position: bool = True, k: int | None = None, level: float = 0.95,
                 n_samples: int = 1500, prior_precision: float = 1.0,
                 bias_prior_precision: float = 0.1, rng=0):
        from fairjudge._api import _covariate_matrix
        from fairjudge.data import load_items

        if model not in ("bias-aware", "naive"):
            raise FairjudgeInputError(f"a live leaderboard fits the bias-aware or the naive "
                                      f"model; got {model!r}")
        self.model, self.position, self.k, self.level = model, position, k, level
        self.n_samples = n_samples
        self.prior_precision, self.bias_prior_precision = prior_precision, bias_prior_precision
        self.rng = as_generator(rng)
        self._fixed_items = items is not None
        self._covariates_named = covariates is not None
        self._x, self._names = None, None
        if items is not None:
            table = load_items(items, covariates)
            self._item_ids = [str(i) for i in table.index]
            if model == "bias-aware":
                self._x, self._names = _covariate_matrix(table, covariates)
        elif covariates:
            raise FairjudgeInputError("`covariates` need an item table to read them from")
        else:
            self._item_ids = []
        self._item_index = {item: i for i, item in enumerate(self._item_ids)}
        self._judges: list[str] = []
        # Counts per (judge, first, second, first_score): the sufficient statistics.
        self._counts = pd.Series(dtype=float)
        self._n_verdicts = 0
        self._n_invalid = 0
        self._fit = None
        self._fit_shape = (0, 0)

    @property
    def n_verdicts(self) -> int:
        """Verdicts with an outcome counted so far."""
        return self._n_verdicts

    @property
    def n_cells(self) -> int:
        """Distinct (judge, first, second, outcome) cells: what a refit's cost grows with."""
        return int(self._counts.size)

    def update(self, verdicts) -> int:
        """Count a batch of verdicts (a verdict table or its path); returns how many carried
        an outcome (a, b or tie). Rows without one (invalid, abstained) are counted apart.

        Raises
        ------
        FairjudgeInputError
            For an invalid table, or an item outside a fixed item table.
        """
        from fairjudge.data import load_verdicts

        table = load_verdicts(verdicts)
        decided = table[table["winner"].isin(["a", "b", "tie"])]
        self._n_invalid += len(table) - len(decided)
        if decided.empty:
            return 0
        first = self._indices(decided["item_a"].astype(str))
        second = self._indices(decided["item_b"].astype(str))
        judges = (decided["judge"].astype(str) if "judge" in decided.columns
                  else pd.Series("judge", index=decided.index))
        for judge in judges.unique():
            if judge not in self._judges:
                self._judges.append(judge)
        judge_code = judges.map({j: i for i, j in enumerate(self._judges)}).to_numpy()
        score = decided["winner"].map({"a": 1.0, "b": 0.0, "tie": TIE_SCORE}).to_numpy()
        batch = pd.Series(1.0, index=pd.MultiIndex.from_arrays(
            [judge_code, first, second, score])).groupby(level=[0, 1, 2, 3]).sum()
        self._counts = batch if self._counts.empty else self._counts.add(batch, fill_value=0.0)
        self._n_verdicts += len(decided)
        return len(decided)

    def _indices(self, ids: pd.Series) -> np.ndarray:
        unknown = [i for i in pd.unique(ids) if i not in self._item_index]
        if unknown and self._fixed_items:
            raise FairjudgeInputError(f"verdict names item {unknown[0]!r}, which is not in "
                                      "the item table")
        for item in unknown:
            self._item_index[item] = len(self._item_ids)
            self._item_ids.append(item)
        return ids.map(self._item_index).to_numpy()

    def comparisons(self) -> Comparisons:
        """The counted verdicts as weighted comparisons (one row per cell)."""
        if self._counts.empty:
            raise FairjudgeInputError("no verdict with an outcome yet")
        judge, first, second, score = (self._counts.index.get_level_values(i).to_numpy()
                                       for i in range(4))
        return Comparisons(first.astype(np.int64), second.astype(np.int64),
                           score.astype(float), self._counts.to_numpy(float),
                           judge.astype(np.int64), tuple(self._item_ids), tuple(self._judges))

    def snapshot(self):
        """The current leaderboard: a :class:`fairjudge.Ranking` of the verdicts so far,
        refitted from the last fit.

        Raises
        ------
        FairjudgeInputError
            Before any verdict with an outcome.
        """
        from fairjudge._api import ranking_from_fit
        from fairjudge.models._dispatch import fit_model

        comparisons = self.comparisons()
        fit = fit_model(self.model, comparisons, self._x, covariate_names=self._names,
                        prior_precision=self.prior_precision,
                        bias_prior_precision=self.bias_prior_precision,
                        position=self.position, init=self._warm_start(), check_graph=False)
        self._fit = fit
        self._fit_shape = (len(self._item_ids), len(self._judges))
        from fairjudge.models._graph import comparison_components

        weight, score = comparisons.weight, comparisons.first_score
        diagnostics = {"n_verdicts": self._n_verdicts, "n_invalid": self._n_invalid,
                       "n_items": len(self._item_ids), "n_judges": len(self._judges),
                       "judges": list(self._judges), "n_cells": self.n_cells,
                       "ties": int(weight[score == TIE_SCORE].sum()),
                       # Among decisive verdicts: a tie favours neither slot.
                       "first_shown_win_rate": float(weight[score == 1.0].sum()
                                                     / weight[score != TIE_SCORE].sum()),
                       "components": len(comparison_components(comparisons)),
                       "covariates": list(self._names or []),
                       "covariates_named": self._covariates_named,
                       "converged": fit.converged, "n_iter": fit.n_iter,
                       "notes": list(fit.notes), "live": True}
        return ranking_from_fit(fit, k=self.k, level=self.level, n_samples=self.n_samples,
                                rng=self.rng, diagnostics=diagnostics)

    def _warm_start(self):
        """The last fit's parameters, zeros inserted for items and judges seen since."""
        if self._fit is None:
            return None
        n_old, j_old = self._fit_shape
        n_new, j_new = len(self._item_ids), len(self._judges)
        params = self._fit.params
        q = (params.size - n_old) // j_old if j_old else 0
        theta = np.concatenate([params[:n_old], np.zeros(n_new - n_old)])
        bias = np.concatenate([params[n_old:], np.zeros((j_new - j_old) * q)])
        return np.concatenate([theta, bias])
