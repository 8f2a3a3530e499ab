"""Scoring probe verdicts: signed bias ``b = P(target) - P(non-target)`` per group.

The verdicts are read through the verdict data model: the probe of a call is its
``pair_id`` and the side it showed first is its ``order``; nothing is rebuilt from how ids
are spelled.
"""

from __future__ import annotations

import math
import warnings
from dataclasses import dataclass

import numpy as np
import pandas as pd

from fairjudge._util._rng import as_generator
from fairjudge._util._warnings import FairjudgeInputError
from fairjudge.data._schema import ORDERS, WINNER_VALUES
from fairjudge.probes._build import _missing
from fairjudge.probes._factor import register_table_kinds
from fairjudge.probes._registry import (
    ProbeWarning,
    ScoreContext,
    ScoreGroup,
    kind_of_bias_type,
    probe_kinds,
)
from fairjudge.stats._agreement import proportion_estimate
from fairjudge.stats._bootstrap import bootstrap_mean
from fairjudge.stats._estimate import Estimate

#: Columns of the score table (:meth:`ProbeScores.to_frame`), in order.
SCORE_COLUMNS = ("bias_type", "target", "n", "n_invalid", "n_missing", "p_target",
                 "p_non_target", "p_tie", "bias", "ci_low", "ci_high", "wilson_low",
                 "wilson_high", "accuracy", "level")
_NO_VERDICT = ("abstain", "invalid")


@dataclass(frozen=True)
class ProbeScore:
    """The bias score of one group of probes.

    Attributes
    ----------
    bias_type : str
        The group (``"LENGTH"``, ``"STYLE (position-averaged)"``,
        ``"MODEL_ORIGIN claude vs gpt4"``).
    target : str
        What counts as positive (``"the longer answer"``).
    bias : Estimate
        ``P(target) - P(non-target)`` over valid verdicts, in [-1, 1], with a percentile
        bootstrap interval resampling probes (a STYLE probe with its mirror); ``n`` counts
        the resampled clusters. NaN when there is no valid verdict.
    p_target : Estimate
        The share of valid verdicts choosing the target, with a Wilson interval (which
        treats verdicts as independent; exact for one call per probe).
    p_non_target, p_tie : float
        The shares choosing the other side and declaring a tie.
    n : int
        Valid verdicts (a, b or tie).
    n_invalid : int
        Verdicts without a winner (abstentions and unparseable outputs).
    n_missing : int
        Probes of the group without any verdict.
    accuracy : float
        For a kind whose expected verdict is the target (TRUNCATION): the share of valid
        verdicts choosing it, ties counting as wrong; NaN otherwise.
    kind : str
        The registered kind the group belongs to.
    """

    bias_type: str
    target: str
    bias: Estimate
    p_target: Estimate
    p_non_target: float
    p_tie: float
    n: int
    n_invalid: int
    n_missing: int
    accuracy: float
    kind: str

    def as_dict(self) -> dict:
        """JSON-ready; intervals through :meth:`Estimate.as_dict`."""
        return {"bias_type": self.bias_type, "kind": self.kind, "target": self.target,
                "n": self.n, "n_invalid": self.n_invalid, "n_missing": self.n_missing,
                "bias": self.bias.as_dict(), "p_target": self.p_target.as_dict(),
                "p_non_target": self.p_non_target, "p_tie": self.p_tie,
                "accuracy": self.accuracy}


@dataclass(frozen=True)
class ProbeScores:
    """What :func:`score_probes` measured: one :class:`ProbeScore` per group, in order.

    Attributes
    ----------
    scores : tuple of ProbeScore
    judge : str or None
        The judge of the verdicts (their ``judge`` column), if given.
    per_call : bool
        Whether the verdicts were per call (with the order shown) or one per probe.
    level : float
    """

    scores: tuple
    judge: str | None
    per_call: bool
    level: float

    def __iter__(self):
        return iter(self.scores)

    def __len__(self) -> int:
        return len(self.scores)

    def __getitem__(self, label: str) -> ProbeScore:
        for score in self.scores:
            if score.bias_type == label:
                return score
        raise KeyError(f"no score for {label!r}; groups: "
                       f"{', '.join(s.bias_type for s in self.scores) or 'none'}")

    def to_frame(self) -> pd.DataFrame:
        """The score table: one row per group with :data:`SCORE_COLUMNS` (``bias``,
        ``ci_low``, ``ci_high`` from :attr:`ProbeScore.bias`, ``wilson_low``,
        ``wilson_high`` from :attr:`ProbeScore.p_target`)."""
        rows = [{"bias_type": s.bias_type, "target": s.target, "n": s.n,
                 "n_invalid": s.n_invalid, "n_missing": s.n_missing,
                 "p_target": s.p_target.estimate, "p_non_target": s.p_non_target,
                 "p_tie": s.p_tie, "bias": s.bias.estimate, "ci_low": s.bias.ci_low,
                 "ci_high": s.bias.ci_high, "wilson_low": s.p_target.ci_low,
                 "wilson_high": s.p_target.ci_high, "accuracy": s.accuracy,
                 "level": float(self.level)} for s in self.scores]
        return pd.DataFrame(rows, columns=list(SCORE_COLUMNS))

    def to_dict(self) -> dict:
        """JSON-ready: the judge, whether verdicts were per call, and every score."""
        return {"judge": self.judge, "per_call": self.per_call, "level": float(self.level),
                "scores": [s.as_dict() for s in self.scores]}


# --------------------------------------------------------------------------------------------
# Validation


def _where(frame: pd.DataFrame, position: int) -> str:
    """``"verdicts.jsonl line 17"`` for a loaded table, ``"`verdicts` row 3"`` otherwise."""
    return (f"{frame.attrs.get('source', '`verdicts`')} {frame.attrs.get('location', 'row')} "
            f"{frame.index[position]}")


def _first(mask) -> int | None:
    hits = np.flatnonzero(np.asarray(mask, dtype=bool))
    return int(hits[0]) if hits.size else None


def _pair_column(verdicts: pd.DataFrame) -> str:
    if "pair_id" in verdicts.columns:
        return "pair_id"
    if "id" in verdicts.columns:
        return "id"  # judge_pairs tables before the pair column was named pair_id
    raise FairjudgeInputError(
        f"{verdicts.attrs.get('source', '`verdicts`')} needs a `pair_id` column "
        "naming the probe (its `id` in `probes`) of each verdict")


def _labels(values: pd.Series) -> np.ndarray:
    """Values stripped and lower-cased, ``""`` where missing."""
    return np.array(["" if _missing(v) else str(v).strip().lower() for v in values],
                    dtype=object)


def _winners(verdicts: pd.DataFrame) -> np.ndarray:
    """Winners as ``a``/``b``/``tie``, or ``""`` for no verdict; checked against
    ``outcome_detail`` when the table has it."""
    if "winner" not in verdicts.columns:
        raise FairjudgeInputError(
            f"{verdicts.attrs.get('source', '`verdicts`')} needs a `winner` column (a, b, tie, "
            "or empty for an abstention or invalid output)")
    winner = _labels(verdicts["winner"])
    bad = _first(~np.isin(winner, [*WINNER_VALUES, ""]))
    if bad is not None:
        raise FairjudgeInputError(
            f"{_where(verdicts, bad)}: field `winner` must be a, b, tie or empty "
            f"(abstain/invalid); got {verdicts['winner'].iloc[bad]!r}")
    if "outcome_detail" in verdicts.columns:
        detail = verdicts["outcome_detail"].astype("string").str.strip().str.lower()
        silent = detail.isin(_NO_VERDICT).fillna(False).to_numpy(dtype=bool)
        bad = _first(silent & (winner != ""))
        if bad is not None:
            raise FairjudgeInputError(f"{_where(verdicts, bad)}: field `winner` "
                                      f"{verdicts['winner'].iloc[bad]!r} does not match "
                                      f"`outcome_detail` {verdicts['outcome_detail'].iloc[bad]!r} "
                                      "(abstain and invalid need an empty winner)")
    return winner


def to_probe_frame(verdicts: pd.DataFrame) -> pd.DataFrame:
    """Per-call verdicts on probes, with each winner in its probe's own a/b frame.

    A call with ``order`` ``ab`` showed the probe's ``a`` first, so its winner is already
    in the probe's frame; a call with ``order`` ``ba`` showed ``b`` first, so ``a`` and
    ``b`` swap (a tie stays a tie). Only ``pair_id`` and ``order`` are read to do this, never
    the item ids [the verdict data model, :func:`fairjudge.data._schema.verdict_pairs`].

    Parameters
    ----------
    verdicts : pandas.DataFrame
        One row per call as ``fairjudge judge`` writes it: ``pair_id`` (the probe id; a
        table without it may use ``id``), ``order`` (``ab`` or ``ba``) and ``winner`` in
        the shown frame (empty for an abstention or invalid output); ``outcome_detail``,
        ``judge``, ``strategy`` and ``sample`` are kept when present.

    Returns
    -------
    pandas.DataFrame
        One row per call, in input order: ``id`` (the probe), ``winner`` (``a``, ``b``,
        ``tie`` in the probe's frame, or None), ``outcome_detail``, ``shown_first`` (the
        probe side shown first, ``a`` or ``b``), ``order``, and ``judge``, ``strategy``,
        ``sample`` when present.

    Raises
    ------
    ValueError
        If a column is missing or a value breaks its rule; the message names the file (or
        table), line and field.

    Examples
    --------
    >>> calls = pd.DataFrame({"pair_id": ["p1", "p1"], "order": ["ab", "ba"],
    ...                       "winner": ["a", "a"]})
    >>> to_probe_frame(calls)[["id", "winner", "shown_first"]].values.tolist()
    [['p1', 'a', 'a'], ['p1', 'b', 'b']]
    """
    if not isinstance(verdicts, pd.DataFrame):
        raise TypeError(f"`verdicts` must be a DataFrame of per-call verdicts; got "
                        f"{type(verdicts).__name__}")
    pair = _pair_column(verdicts)
    if "order" not in verdicts.columns:
        raise FairjudgeInputError(f"{verdicts.attrs.get('source', '`verdicts`')} needs an `order` "
                                  "column (ab: the probe's a shown first, ba: its b shown first)")
    order = _labels(verdicts["order"])
    bad = _first(~np.isin(order, ORDERS))
    if bad is not None:
        raise FairjudgeInputError(
            f"{_where(verdicts, bad)}: field `order` must be ab (the probe's a "
            f"shown first) or ba; got {verdicts['order'].iloc[bad]!r}")
    bad = _first(verdicts[pair].isna().to_numpy())
    if bad is not None:
        raise FairjudgeInputError(f"{_where(verdicts, bad)}: field `{pair}` is missing")
    shown = _winners(verdicts)
    swapped = order == "ba"
    flipped = np.where(shown == "a", "b", np.where(shown == "b", "a", shown))
    winner = np.where(swapped, flipped, shown)
    out = pd.DataFrame({"id": verdicts[pair].astype(str).to_numpy(),
                        "winner": pd.Series([w or None for w in winner], dtype=object)})
    if "outcome_detail" in verdicts.columns:
        detail = verdicts["outcome_detail"].to_numpy(dtype=object)
    else:
        detail = np.where(winner == "", "invalid", np.where(winner == "tie", "tie", "win"))
    out["outcome_detail"] = detail
    out["shown_first"] = np.where(swapped, "b", "a")
    out["order"] = order
    for column in ("judge", "strategy", "sample"):
        if column in verdicts.columns:
            out[column] = verdicts[column].to_numpy()
    return out


def _check_score_args(probes, verdicts, judge_family, level, n_boot) -> None:
    if not isinstance(probes, pd.DataFrame):
        raise TypeError(f"`probes` must be the DataFrame from build_probes; got "
                        f"{type(probes).__name__}")
    for column in ("id", "bias_type", "target"):
        if column not in probes.columns:
            raise FairjudgeInputError(f"`probes` needs a `{column}` column (the table build_probes "
                                      "returns)")
    ids = probes["id"].astype(str)
    if ids.duplicated().any():
        raise FairjudgeInputError(
            f"`probes` has the id {ids[ids.duplicated()].iloc[0]!r} more than "
            "once; ids must be unique")
    unknown = sorted({t for t in probes["bias_type"] if kind_of_bias_type(str(t)) is None},
                     key=str)
    if unknown:
        known = ", ".join(t for k in probe_kinds() for t in k.bias_types)
        raise FairjudgeInputError(
            f"`probes` column `bias_type` must be one of the registered kinds' "
            f"bias types {known} (register a kind with register_probe_kind); "
            f"got {unknown[0]!r}")
    needs = probes["bias_type"].map(lambda t: kind_of_bias_type(str(t)).needs_target)
    bad = _first(needs.to_numpy(dtype=bool) & ~probes["target"].isin(["a", "b"]).to_numpy())
    if bad is not None:
        raise FairjudgeInputError(
            f"`probes` row {probes['id'].iloc[bad]!r}: `target` must be a or b; "
            f"got {probes['target'].iloc[bad]!r}")
    if not isinstance(verdicts, pd.DataFrame):
        raise TypeError(f"`verdicts` must be a DataFrame (the per-call table `fairjudge "
                        f"judge` writes); got {type(verdicts).__name__}")
    if judge_family is not None and (not isinstance(judge_family, str)
                                     or not judge_family.strip()):
        raise FairjudgeInputError(f"`judge_family` must be a non-empty string or None; got "
                                  f"{judge_family!r}")
    if not isinstance(level, (float, int)) or isinstance(level, bool) or not 0 < level < 1:
        raise FairjudgeInputError(f"`level` must be between 0 and 1; got {level!r}")
    if isinstance(n_boot, bool) or not isinstance(n_boot, (int, np.integer)) or n_boot < 1:
        raise FairjudgeInputError(f"`n_boot` must be a positive integer; got {n_boot!r}")


def _judge(verdicts: pd.DataFrame) -> str | None:
    if "judge" not in verdicts.columns:
        return None
    judges = list(dict.fromkeys(str(j) for j in verdicts["judge"].dropna()))
    if len(judges) > 1:
        raise FairjudgeInputError(f"{verdicts.attrs.get('source', '`verdicts`')} holds verdicts of "
                                  f"{len(judges)} judges ({', '.join(judges)}); score each judge "
                                  "on "
                                  "its own: for judge, part in verdicts.groupby('judge'): "
                                  "score_probes(probes, part)")
    return judges[0] if judges else None


def _observations(probes: pd.DataFrame, verdicts: pd.DataFrame, per_call: bool
                  ) -> pd.DataFrame:
    """One row per verdict (several per probe when per call) and one per probe without a
    verdict, in the order of ``probes``: the probe's columns plus ``winner`` (probe frame;
    None: no verdict for the probe, ``""``: no winner), ``shown_first`` and ``cluster``."""
    table = probes.reset_index(drop=True).copy()
    table["id"] = table["id"].astype(str)
    if per_call:
        frame = to_probe_frame(verdicts)
        winner = frame["winner"].where(frame["winner"].notna(), "").to_numpy(dtype=object)
        shown = frame["shown_first"].to_numpy(dtype=object)
        pair = frame["id"].to_numpy(dtype=object)
    else:
        pair_column = _pair_column(verdicts)
        pair = verdicts[pair_column].astype(str).to_numpy(dtype=object)
        twice = pd.Series(pair).duplicated().to_numpy()
        bad = _first(twice)
        if bad is not None:
            raise FairjudgeInputError(f"{_where(verdicts, bad)}: more than one row for pair "
                                      f"{pair[bad]!r}; give one aggregated verdict per probe "
                                      "(judge_pairs(...).aggregate) or the per-call table with its "
                                      "`order` column")
        winner = _winners(verdicts)
        shown = np.full(len(pair), None, dtype=object)
    position = pd.Series(np.arange(len(table)), index=pd.Index(table["id"]))
    probe_of = pd.Series(pair, dtype=object).map(position)
    bad = _first(probe_of.isna().to_numpy())
    if bad is not None:
        raise FairjudgeInputError(
            f"{_where(verdicts, bad)}: field `{_pair_column(verdicts)}` names "
            f"pair {pair[bad]!r}, which is not a probe id in `probes`")
    probe_of = probe_of.to_numpy(dtype=np.int64)
    unjudged = np.setdiff1d(np.arange(len(table)), probe_of)
    rows = np.concatenate([probe_of, unjudged])
    order = np.argsort(rows, kind="stable")  # probes' order; calls in their own order
    out = table.iloc[rows[order]].reset_index(drop=True)
    none = np.full(len(unjudged), None, dtype=object)
    out["winner"] = pd.Series(np.concatenate([winner, none])[order], dtype=object)
    out["shown_first"] = pd.Series(np.concatenate([shown, none])[order], dtype=object)
    out["cluster"] = out["id"]
    return out


def _score(group: ScoreGroup, kind: str, *, level: float, n_boot: int,
           rng: np.random.Generator) -> ProbeScore:
    rows = group.rows
    present = rows[rows["winner"].notna()]
    valid = present[present["winner"].isin(list(WINNER_VALUES))]
    winner = valid["winner"].to_numpy(object)
    hit = winner == valid["target"].to_numpy(object)
    tie = winner == "tie"
    miss = ~hit & ~tie
    n = len(valid)
    counts = {"n": n, "n_invalid": len(present) - n, "n_missing": len(rows) - len(present)}
    if not n:
        return ProbeScore(group.label, group.target,
                          Estimate.missing(level=level, method="cluster percentile bootstrap"),
                          Estimate.missing(level=level, method="wilson"), math.nan, math.nan,
                          accuracy=math.nan, kind=kind, **counts)
    bias = bootstrap_mean(hit.astype(float) - miss.astype(float),
                          clusters=valid["cluster"].to_numpy(object), level=level,
                          n_boot=n_boot, rng=rng)
    return ProbeScore(group.label, group.target, bias,
                      proportion_estimate(int(hit.sum()), n, level=level),
                      float(miss.mean()), float(tie.mean()),
                      accuracy=float(hit.mean()) if group.accuracy else math.nan, kind=kind,
                      **counts)


def score_probes(probes: pd.DataFrame, verdicts: pd.DataFrame, *,
                 judge_family: str | None = None, level: float = 0.95, n_boot: int = 2000,
                 rng=0) -> ProbeScores:
    """Signed bias scores of a judge on controlled probes [debiasing-strategies-study §3.5].

    For each group of probes, ``bias = P(target) - P(non-target)`` over valid verdicts
    (ties count in the denominator and for neither side), in [-1, 1], positive when the
    judge shows the bias of interest. Each registered kind (:func:`probe_kinds`) says how
    the target side of a verdict is determined; the built-in kinds:

    * POSITION: the answer shown first (from each call's ``order``); with one aggregated
      verdict per probe the order is unknown and slot a is taken, with a
      :class:`ProbeWarning` when the verdicts come from a judging strategy (which shows
      pairs in a hashed order or both orders, so slot a measures the strategy's residual
      slot-a preference, not the judge's first-position lean).
    * STYLE / STYLE_BA: the markdown side; a third row, ``STYLE (position-averaged)``,
      pools both halves (bootstrap over records, each with its mirror) when both exist.
    * LENGTH: the longer answer (length-aware, as built).
    * TRUNCATION: the complete answer; ``accuracy`` is the share of valid verdicts choosing
      it (ties count as wrong), which equals ``p_target``.
    * MODEL_ORIGIN: with ``judge_family``, the answer whose source equals it
      (case-insensitive) in one self-preference row; pairs without that source are dropped.
      Without ``judge_family`` (or when no pair has that source, with a
      :class:`ProbeWarning`), one model-preference row per source pair, target the
      alphabetically first source: positive means it is preferred.

    Per-call verdicts are each one observation (a probe shown in both orders counts twice);
    the bootstrap resamples probes, so the calls of one probe stay together. Nothing reads
    the spelling of item or pair ids: relabelling them changes no number.

    Parameters
    ----------
    probes : pandas.DataFrame
        From :func:`build_probes`.
    verdicts : pandas.DataFrame
        The per-call verdict table ``fairjudge judge`` writes (``judge_pairs(...).calls``):
        ``pair_id`` (the probe's ``id``; ``id`` is accepted for tables without it),
        ``order`` (``ab``: the probe's a shown first, ``ba``: its b), ``winner`` in the
        shown frame (empty for an abstention or invalid output, counted in ``n_invalid``),
        optional ``outcome_detail`` and ``judge`` (one judge per call). A table without an
        ``order`` column is read as one aggregated verdict per probe with the winner in the
        probe's own frame (``judge_pairs(...).aggregate``). Probes without a verdict are
        counted in ``n_missing``.
    judge_family : str, optional
        The judge's own source name, for self-preference.
    level : float
        Level of both intervals.
    n_boot : int
        Bootstrap replicates (the study uses 2000).
    rng : seed or numpy.random.Generator
        For the bootstrap.

    Returns
    -------
    ProbeScores
        One :class:`ProbeScore` per group (``bias`` with a cluster percentile bootstrap
        interval, ``p_target`` with a Wilson interval, counts); ``.to_frame()`` gives the
        score table with :data:`SCORE_COLUMNS`.

    Raises
    ------
    ValueError, TypeError
        If an argument breaks its rule; the message names it (for a loaded table, the file,
        line and field).

    Warns
    -----
    ProbeWarning
        When POSITION cannot know the order shown, or no MODEL_ORIGIN probe has an answer
        by ``judge_family``.

    Examples
    --------
    >>> from fairjudge.probes import build_probes
    >>> probes = build_probes([{"question": "Q?", "answer": "One. Two. Three."}],
    ...                       kinds=["POSITION", "TRUNCATION"])
    >>> calls = pd.DataFrame({"pair_id": probes["id"], "order": ["ba", "ab"],
    ...                       "winner": ["a", probes["target"].iloc[1]]})
    >>> scores = score_probes(probes, calls, n_boot=200)
    >>> [(s.bias_type, s.n, s.bias.estimate) for s in scores]
    [('POSITION', 1, 1.0), ('TRUNCATION', 1, 1.0)]
    """
    if isinstance(probes, pd.DataFrame):
        register_table_kinds(probes)  # kinds defined by data travel with their probes
    _check_score_args(probes, verdicts, judge_family, level, n_boot)
    per_call = "order" in verdicts.columns
    judge = _judge(verdicts)
    observations = _observations(probes, verdicts, per_call)
    context = ScoreContext(judge_family=judge_family, per_call=per_call,
                           from_strategy=not per_call and "strategy" in verdicts.columns)
    present = set(observations["bias_type"].astype(str))
    groups = []
    for kind in probe_kinds():
        if present & set(kind.bias_types):
            rows = observations[observations["bias_type"].isin(kind.bias_types)]
            groups += [(kind.name, group) for group in kind.score_groups(rows, context)]
    for message in context.warnings:
        warnings.warn(message, ProbeWarning, stacklevel=2)
    gen = as_generator(rng)
    scores = tuple(_score(group, kind, level=float(level), n_boot=int(n_boot), rng=gen)
                   for kind, group in groups)
    return ProbeScores(scores, judge, per_call, float(level))
