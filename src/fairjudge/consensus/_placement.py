"""New contestants placed on a frozen leaderboard [the multi-judge issue §2, stability].

Refitting a leaderboard when a model joins moves every published score: on the mean
scale by the newcomer's pull on the mean, and on any scale by what the newcomer's games
teach about the others through loops (measured in ``benchmarks/consensus_stability.py``).
The frozen rule removes both: the published contestants keep their scores exactly, and a
newcomer is placed on their scale.

Model: the joint model of :func:`fairjudge.consensus.consensus` (judge j prefers a over b
with probability ``sigma(theta_a - theta_b + kappa_j + s_j (x_a - x_b))``, x the
``self`` or ``own`` indicator) with every published contestant's theta fixed at its
published value, ``(score - 1000) / (400 / ln 10)``, as an offset. Free: the newcomers'
theta (prior N(0, 1) around the leaderboard's reference, Elo 1000, as the bias-aware
model's), each judge's kappa_j and s_j (prior N(0, 10), as the joint model's). Verdicts
between two published contestants inform only kappa_j and s_j. The posterior mode is a
penalised logistic regression with an offset.

Uncertainty: the conditional Laplace covariance ``I_ff^-1`` of the free parameters plus
the published scores' own uncertainty carried by the delta method. The mode depends on the
published thetas through ``S = d(free)/d(theta_o) = -I_ff^-1 I_fo``, so
``Cov(free) = I_ff^-1 + S Sigma_o S^T`` and ``Cov(free, theta_o) = S Sigma_o``, which makes
the placed leaderboard itself a leaderboard to place the next newcomer on. ``Sigma_o`` is
the published covariance (``consensus --json`` writes it as ``covariance``); a leaderboard
with marginal intervals only has its correlations taken as zero, which a note says.
Assumed: the newcomers' games are independent of the verdicts the leaderboard was fitted
on (verdicts shared with it enter only kappa_j and s_j, a second-order dependence).
"""

from __future__ import annotations

import json
import math
from dataclasses import dataclass
from pathlib import Path

import numpy as np
import pandas as pd
from scipy import special, stats

from fairjudge._util._warnings import FairjudgeInputError
from fairjudge.consensus._panel import ELO_SCALE

THETA_PRECISION = 1.0   # the bias-aware model's prior on quality
TERM_PRECISION = 0.1    # the joint model's N(0, 10) prior on kappa_j and s_j


@dataclass(frozen=True)
class PublishedLeaderboard:
    """Contestant scores to hold fixed while newcomers are placed.

    Attributes
    ----------
    scores : pandas.DataFrame
        Per contestant: ``estimate``, ``ci_low``, ``ci_high`` on the Elo scale (an
        interval may be NaN: a reference contestant held at 1000 has none).
    covariance : pandas.DataFrame or None
        Contestants × contestants, the scores' covariance (Elo squared); None when only
        the marginal intervals are known.
    level : float
        The intervals' level.
    per_judge : pandas.DataFrame or None
        Contestants × judges, each judge's own scores, carried into the placed table.
    inter_judge_sd : pandas.Series or None
    """

    scores: pd.DataFrame
    covariance: pd.DataFrame | None = None
    level: float = 0.95
    per_judge: pd.DataFrame | None = None
    inter_judge_sd: pd.Series | None = None

    def __post_init__(self):
        check_leaderboard(self)

    @classmethod
    def from_consensus(cls, result) -> PublishedLeaderboard:
        """The leaderboard of a :class:`~fairjudge.consensus.Consensus`.

        Raises
        ------
        FairjudgeInputError
            For a method without intervals (``elo``, ``uda``).
        """
        _check_method(result.method, "the leaderboard")
        return cls(result.scores, result.covariance, result.level, result.per_judge,
                   result.inter_judge_sd)

    @classmethod
    def from_json(cls, source, *, name: str = "the leaderboard") -> PublishedLeaderboard:
        """Read ``consensus --json`` output: a path, or the parsed dict (``name`` then
        says where it came from in messages).

        Raises
        ------
        FairjudgeInputError
            Naming the file and the field: unreadable or not JSON, no ``scores``, a score
            that is not a finite number inside a finite interval, a covariance that is not
            a symmetric positive semi-definite matrix over the contestants, a ``level``
            outside (0, 1), per-judge scores or spreads that are not numbers, or a method
            without intervals.
        """
        if isinstance(source, (str, Path)):
            name = str(source)
            try:
                source = json.loads(Path(source).read_text())
            except OSError as error:
                raise FairjudgeInputError(f"{name}: cannot read it ({error.strerror})") \
                    from None
            except (json.JSONDecodeError, UnicodeDecodeError) as error:
                raise FairjudgeInputError(f"{name}: not JSON ({error}); expected the output "
                                          "of `fairjudge consensus --json`") from None
        scores = source.get("scores") if isinstance(source, dict) else None
        if not isinstance(scores, dict) or not scores:
            raise FairjudgeInputError(f"{name}: expected an object with `scores` (contestant "
                                      "-> estimate, ci_low, ci_high), the output of "
                                      "`fairjudge consensus --json`")
        _check_method(source.get("method", "joint"), name)
        rows = {}
        for contestant, row in scores.items():
            values = row if isinstance(row, dict) else {}
            rows[str(contestant)] = [_number(values.get(key), f"{name}: scores.{contestant}."
                                             f"{key}", missing=key != "estimate")
                                     for key in ("estimate", "ci_low", "ci_high")]
        table = pd.DataFrame.from_dict(rows, orient="index",
                                       columns=["estimate", "ci_low", "ci_high"])
        covariance = source.get("covariance")
        if covariance is not None:
            covariance = pd.DataFrame(_table_of_numbers(
                covariance, f"{name}: covariance", "each contestant to its row")).T.reindex(
                    index=table.index, columns=table.index)
        level = source.get("level", 0.95)
        if not isinstance(level, (int, float)) or isinstance(level, bool):
            raise FairjudgeInputError(f"{name}: `level` must be a number between 0 and 1; "
                                      f"got {level!r}")
        per_judge = source.get("per_judge")
        if per_judge is not None:
            per_judge = pd.DataFrame(_table_of_numbers(
                per_judge, f"{name}: per_judge", "each judge to its scores", missing=True),
                dtype=float).reindex(table.index)
        spread = source.get("inter_judge_sd")
        if spread is not None:
            if not isinstance(spread, dict):
                raise FairjudgeInputError(f"{name}: `inter_judge_sd` must map each "
                                          "contestant to a number")
            spread = pd.Series({c: _number(v, f"{name}: inter_judge_sd.{c}", missing=True)
                                for c, v in spread.items()}, dtype=float).reindex(table.index)
        try:
            return cls(table, covariance, float(level), per_judge, spread)
        except FairjudgeInputError as error:
            raise FairjudgeInputError(f"{name}: {error}") from None

    def theta_covariance(self) -> tuple[np.ndarray, bool]:
        """The scores' covariance in logits squared, shape (C, C) in the order of
        ``scores``, and whether it is the published one (False: from the marginal
        intervals, correlations unknown and taken as zero)."""
        if self.covariance is not None:
            order = self.scores.index
            return self.covariance.reindex(index=order, columns=order).to_numpy(float) \
                / ELO_SCALE ** 2, True
        z = float(stats.norm.ppf(0.5 + self.level / 2))
        half = ((self.scores["ci_high"] - self.scores["ci_low"]) / 2).fillna(0.0)
        return np.diag((half.to_numpy(float) / z / ELO_SCALE) ** 2), False


#: Methods whose scores are Bradley–Terry logits on the Elo scale with intervals.
PLACEABLE = ("joint", "pooled", "majority")


def _check_method(method, name: str) -> None:
    if method not in PLACEABLE:
        raise FairjudgeInputError(
            f"{name}: {method!r} scores cannot be frozen: newcomers are placed on "
            "Bradley–Terry scores with intervals (the joint, pooled or majority method); "
            "Elo and UDA ratings have neither that scale nor intervals")


def _table_of_numbers(value, field: str, what: str, *, missing: bool = False) -> dict:
    """A JSON mapping of mappings of finite numbers (null allowed with ``missing``)."""
    if not isinstance(value, dict) or not all(isinstance(row, dict) for row in value.values()):
        raise FairjudgeInputError(f"{field.replace(': ', ': `', 1)}` must map {what} "
                                  "(contestant -> number)")
    return {outer: {inner: _number(v, f"{field}.{outer}.{inner}", missing=missing)
                    for inner, v in row.items()} for outer, row in value.items()}


def _number(value, field: str, *, missing: bool = False) -> float:
    """A finite JSON number (NaN for null when ``missing`` is allowed)."""
    if value is None and missing:
        return np.nan
    if isinstance(value, bool) or not isinstance(value, (int, float)) \
            or not math.isfinite(value):
        raise FairjudgeInputError(f"{field} must be a finite number; got {value!r}")
    return float(value)


def check_leaderboard(board: PublishedLeaderboard) -> None:
    """Raise :class:`FairjudgeInputError` unless ``board`` can be frozen: finite scores;
    every interval finite, around its score, missing only for one reference contestant at
    1000; a symmetric positive semi-definite covariance over the contestants; level in
    (0, 1)."""
    scores = board.scores
    if not 0 < board.level < 1:
        raise FairjudgeInputError(f"level must be between 0 and 1; got {board.level!r}")
    values = scores[["estimate", "ci_low", "ci_high"]].to_numpy(float)
    if not np.isfinite(values[:, 0]).all():
        raise FairjudgeInputError("every score must be a finite number")
    no_interval = ~np.isfinite(values[:, 1:]).all(axis=1)
    reference = no_interval & np.isclose(values[:, 0], 1000.0)
    if (no_interval & ~reference).any() or reference.sum() > 1:
        bad = scores.index[no_interval][0] if (no_interval & ~reference).any() \
            else scores.index[reference][1]
        raise FairjudgeInputError(f"scores.{bad} has no interval: only one reference "
                                  "contestant (held at 1000) may lack one, and newcomers "
                                  "cannot be placed on scores of unknown uncertainty")
    inside = (values[:, 1] <= values[:, 0]) & (values[:, 0] <= values[:, 2])
    if not (inside | no_interval).all():
        bad = scores.index[~(inside | no_interval)][0]
        raise FairjudgeInputError(f"scores.{bad}: the interval must hold the estimate "
                                  "(ci_low <= estimate <= ci_high)")
    if board.covariance is not None:
        matrix = board.covariance.reindex(index=scores.index,
                                          columns=scores.index).to_numpy(float)
        if not np.isfinite(matrix).all():
            raise FairjudgeInputError("covariance must give a number for every pair of "
                                      "contestants in scores")
        scale = max(float(np.abs(matrix).max()), 1e-300)
        if not np.allclose(matrix, matrix.T, rtol=1e-6, atol=1e-9 * scale) \
                or np.linalg.eigvalsh((matrix + matrix.T) / 2).min() < -1e-8 * scale:
            raise FairjudgeInputError("covariance must be symmetric and positive "
                                      "semi-definite")


@dataclass(frozen=True)
class Placement:
    """Newcomers placed on a published leaderboard.

    Attributes
    ----------
    published, newcomers : list of str
        ``contestants`` is their concatenation, the order of ``theta`` and ``covariance``.
    theta : numpy.ndarray, shape (C,)
        Logits from the leaderboard's reference (the published values first).
    covariance : numpy.ndarray, shape (C, C)
        Logits squared: the published block, the newcomers' total and their
        cross-covariance.
    judges : list of str
    kappa, term, term_se : numpy.ndarray, shape (J,)
        Each judge's first-slot lean, its ``covariate`` term (logits) and that term's
        standard error (with the published scores' uncertainty).
    covariate : str
    published_covariance : bool
        Whether the leaderboard gave its covariance (else correlations were taken as 0).
    converged : bool
    """

    published: list
    newcomers: list
    theta: np.ndarray
    covariance: np.ndarray
    judges: list
    kappa: np.ndarray
    term: np.ndarray
    term_se: np.ndarray
    covariate: str
    published_covariance: bool
    converged: bool

    @property
    def contestants(self) -> list:
        return self.published + self.newcomers

    def scores(self, level: float = 0.95) -> pd.DataFrame:
        """Elo-scale ``estimate``, ``ci_low``, ``ci_high`` of every contestant (NaN
        interval for a published contestant that had none, such as a reference)."""
        z = float(stats.norm.ppf(0.5 + level / 2))
        se = np.sqrt(np.maximum(np.diag(self.covariance), 0.0))
        se[:len(self.published)][se[:len(self.published)] == 0] = np.nan
        return pd.DataFrame({"estimate": 1000 + ELO_SCALE * self.theta,
                             "ci_low": 1000 + ELO_SCALE * (self.theta - z * se),
                             "ci_high": 1000 + ELO_SCALE * (self.theta + z * se)},
                            index=pd.Index(self.contestants, name="contestant"))

    def terms(self, level: float = 0.95) -> pd.DataFrame:
        """Per judge: its ``covariate`` term with an interval (logits)."""
        z = float(stats.norm.ppf(0.5 + level / 2))
        return pd.DataFrame({"estimate": self.term, "ci_low": self.term - z * self.term_se,
                             "ci_high": self.term + z * self.term_se},
                            index=pd.Index(self.judges, name="judge"))


def place_contestants(table: pd.DataFrame, leaderboard: PublishedLeaderboard, *,
                      covariate: str = "self") -> Placement:
    """Place the contestants of ``table`` that ``leaderboard`` lacks on its scale, the
    published ones held fixed (see the module docstring for the model).

    Parameters
    ----------
    table : pandas.DataFrame
        Contestant-level verdicts (:func:`~fairjudge.consensus.contestant_verdicts`):
        ``item_a``, ``item_b``, ``winner`` in a/b/tie, ``judge``, ``<covariate>_a``/``_b``.
    leaderboard : PublishedLeaderboard
    covariate : str
        The judge term's indicator: ``self`` (own family) or ``own`` (own answers).

    Returns
    -------
    Placement

    Raises
    ------
    FairjudgeInputError
        For a wrong argument, when no verdict names a newcomer, or when a newcomer is
        connected to no published contestant through the verdicts (only the prior would
        place it).

    Examples
    --------
    >>> import pandas as pd
    >>> board = PublishedLeaderboard(pd.DataFrame(
    ...     {"estimate": [1000.0], "ci_low": [float("nan")], "ci_high": [float("nan")]},
    ...     index=["ref"]))
    >>> duel = pd.DataFrame({"item_a": ["new", "ref"], "item_b": ["ref", "new"],
    ...                      "winner": ["a", "b"], "judge": "j", "self_a": 0.0,
    ...                      "self_b": 0.0})
    >>> placed = place_contestants(duel, board)
    >>> placed.newcomers, bool(placed.theta[1] > 0)
    (['new'], True)
    """
    from fairjudge.stats._logistic import logistic_regression

    if not isinstance(leaderboard, PublishedLeaderboard):
        raise FairjudgeInputError("`leaderboard` must be a PublishedLeaderboard (from_json or "
                                  f"from_consensus); got {type(leaderboard).__name__}")
    if covariate not in ("self", "own"):
        raise FairjudgeInputError(f"`covariate` must be 'self' or 'own'; got {covariate!r}")
    needed = {"item_a", "item_b", "winner", "judge", f"{covariate}_a", f"{covariate}_b"}
    if not needed <= set(table.columns):
        missing = ", ".join(sorted(needed - set(table.columns)))
        raise FairjudgeInputError(f"the verdicts lack {missing}: give contestant-level "
                                  "verdicts (contestant_verdicts)")
    published = list(leaderboard.scores.index.astype(str))
    rows = table[table["winner"].isin(["a", "b", "tie"])]
    seen = sorted(set(rows["item_a"]) | set(rows["item_b"]))
    newcomers = [c for c in seen if c not in set(published)]
    if not newcomers:
        raise FairjudgeInputError("every contestant in the verdicts is on the leaderboard: "
                                  "there is no newcomer to place")
    _check_reachable(rows, published, newcomers)
    position = {c: i for i, c in enumerate(published + newcomers)}
    a = rows["item_a"].map(position).to_numpy()
    b = rows["item_b"].map(position).to_numpy()
    judges = sorted(rows["judge"].astype(str).unique())
    j = rows["judge"].astype(str).map({g: i for i, g in enumerate(judges)}).to_numpy()
    y = np.where(rows["winner"] == "a", 1.0, np.where(rows["winner"] == "b", 0.0, 0.5))
    x = rows[f"{covariate}_a"].to_numpy(float) - rows[f"{covariate}_b"].to_numpy(float)
    n, n_o, n_j = len(rows), len(published), len(judges)
    # Signed incidence of each verdict on every contestant: +1 first slot, -1 second.
    incidence = np.zeros((n, n_o + len(newcomers)))
    incidence[np.arange(n), a] += 1.0
    incidence[np.arange(n), b] -= 1.0
    judge_columns = np.zeros((n, n_j))
    judge_columns[np.arange(n), j] = 1.0
    design = np.hstack([incidence[:, n_o:], judge_columns, judge_columns * x[:, None]])
    theta_o = ((leaderboard.scores["estimate"].to_numpy(float) - 1000.0) / ELO_SCALE)
    penalty = np.r_[np.full(len(newcomers), THETA_PRECISION), np.full(2 * n_j, TERM_PRECISION)]
    fit = logistic_regression(design, y, l2=penalty, fit_intercept=False,
                              offset=incidence[:, :n_o] @ theta_o)
    mu = special.expit(design @ fit.coef + incidence[:, :n_o] @ theta_o)
    weight = mu * (1.0 - mu)
    # Sensitivity of the mode to the published thetas, and the uncertainty it carries.
    sensitivity = -fit.covariance @ (design.T @ (incidence[:, :n_o] * weight[:, None]))
    sigma_o, given = leaderboard.theta_covariance()
    cross = sensitivity @ sigma_o
    total = fit.covariance + cross @ sensitivity.T
    k = len(newcomers)
    covariance = np.block([[sigma_o, cross[:k].T], [cross[:k], total[:k, :k]]])
    term_se = np.sqrt(np.maximum(np.diag(total)[k + n_j:], 0.0))
    return Placement(published, newcomers, np.r_[theta_o, fit.coef[:k]],
                     (covariance + covariance.T) / 2, judges, fit.coef[k:k + n_j],
                     fit.coef[k + n_j:], term_se, covariate, given, fit.converged)


def _check_reachable(rows: pd.DataFrame, published: list, newcomers: list) -> None:
    """Every newcomer must reach a published contestant through the verdicts."""
    from fairjudge.models._graph import pair_components

    names = published + newcomers
    index = {c: i for i, c in enumerate(names)}
    components = pair_components(len(names), rows["item_a"].map(index),
                                 rows["item_b"].map(index))
    stranded = [names[i] for c in components if c.min() >= len(published) for i in c]
    if stranded:
        raise FairjudgeInputError(f"no verdict connects {', '.join(sorted(stranded))} to a "
                                  "contestant on the leaderboard, so nothing places it on "
                                  "the leaderboard's scale")
