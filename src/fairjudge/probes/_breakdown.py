"""Probe results broken down: per topic, per category, across judges and strategies.

The debiasing-strategies study reports, besides one bias score per judge and strategy,
the style bias per question topic (Table 7, App. E.2), the change of every bias under each
strategy (Fig. 2, §4.3) and results per question category (Fig. 3, App. E.1). These
functions compute them from one table of verdict outcomes (:func:`probe_outcomes`), so the
per-cell numbers and the overall scores of :func:`score_probes` share one definition of
target, tie and cluster.
"""

from __future__ import annotations

import math
import warnings
from collections.abc import Mapping
from dataclasses import dataclass

import numpy as np
import pandas as pd

from fairjudge._util._rng import as_generator
from fairjudge._util._warnings import FairjudgeInputError
from fairjudge.data._schema import WINNER_VALUES
from fairjudge.probes._build import CATEGORY_FIELDS, _missing
from fairjudge.probes._factor import register_table_kinds
from fairjudge.probes._registry import ProbeWarning, ScoreContext, probe_kinds
from fairjudge.probes._score import _check_score_args, _observations
from fairjudge.probes.style import STYLE_POOLED
from fairjudge.stats._bootstrap import bootstrap_mean

#: Columns of :func:`probe_outcomes`, in order.
OUTCOME_COLUMNS = ("judge", "strategy", "bias_type", "kind", "category", "probe", "cluster",
                   "winner", "target", "score", "is_accuracy")
#: Columns of :func:`bias_by_category` (and :func:`probe_bias_table`), after the ``by``
#: columns.
BREAKDOWN_COLUMNS = ("bias_type", "n", "n_probes", "n_invalid", "bias", "ci_low", "ci_high",
                     "p_target", "p_tie", "accuracy", "accuracy_low", "accuracy_high",
                     "level")
#: Shown for probes whose records carried no category.
NO_CATEGORY = "(none)"
#: Fewest judge x strategy units a correlation is computed from (below it, a message).
MIN_CORRELATION_UNITS = 4


def _category_column(probes: pd.DataFrame) -> str | None:
    return next((c for c in CATEGORY_FIELDS if c in probes.columns), None)


def _check_outcomes(outcomes, *, need_category: bool = False) -> None:
    if not isinstance(outcomes, pd.DataFrame):
        raise TypeError(f"`outcomes` must be the DataFrame from probe_outcomes; got "
                        f"{type(outcomes).__name__}")
    missing = [c for c in OUTCOME_COLUMNS if c not in outcomes.columns]
    if missing:
        raise FairjudgeInputError(f"`outcomes` needs the columns of probe_outcomes; "
                                  f"`{missing[0]}` is missing")
    if need_category and not outcomes.attrs.get("has_category", True):
        raise FairjudgeInputError(
            "the probes carry no topic or category: give the records a `category` (or "
            "`topic`) column before `build_probes`, or add one to the probe table, to break "
            "results down by category [debiasing-strategies-study App. E]")


def _check_stats_args(level, n_boot) -> None:
    if not isinstance(level, (float, int)) or isinstance(level, bool) or not 0 < level < 1:
        raise FairjudgeInputError(f"`level` must be between 0 and 1; got {level!r}")
    if isinstance(n_boot, bool) or not isinstance(n_boot, (int, np.integer)) or n_boot < 1:
        raise FairjudgeInputError(f"`n_boot` must be a positive integer; got {n_boot!r}")


def _label(value) -> str:
    return "" if _missing(value) else str(value)


def probe_outcomes(probes: pd.DataFrame, verdicts: pd.DataFrame, *,
                   judge_family: str | Mapping[str, str] | None = None) -> pd.DataFrame:
    """One row per verdict on a probe, scored +1 / 0 / -1 for its target side.

    The verdicts are split by ``judge`` and ``strategy`` (when the table has those columns)
    and each part is read exactly as :func:`score_probes` reads it: every registered kind
    decides which side of each verdict is its target, and a verdict choosing the target
    scores +1, the other side -1 and a tie 0, so the mean score of a group is its bias
    ``b = P(target) - P(non-target)`` [debiasing-strategies-study §3.5].

    Parameters
    ----------
    probes : pandas.DataFrame
        From :func:`build_probes`; an optional ``category`` (or ``topic``) column gives each
        probe's question category.
    verdicts : pandas.DataFrame
        Per-call verdicts (with ``order``) or one aggregated verdict per probe, as for
        :func:`score_probes`; ``judge`` and ``strategy`` columns, when present, split them.
    judge_family : str or mapping of str to str, optional
        The judge's own source name for MODEL_ORIGIN self-preference, or one per judge.

    Returns
    -------
    pandas.DataFrame
        :data:`OUTCOME_COLUMNS`, one row per verdict (abstentions and invalid outputs
        included with ``score`` NaN): ``judge`` and ``strategy`` (``""`` when the verdicts
        have no such column), ``bias_type`` (the score group, e.g.
        ``"STYLE (position-averaged)"``; a verdict on a STYLE probe appears in its half's
        group and in the pooled group), ``kind``, ``category`` (:data:`NO_CATEGORY` when
        the probe has none), ``probe`` (its id), ``cluster`` (resampled together: a probe,
        or a STYLE record with its mirror), ``winner`` and ``target`` in the probe's frame,
        ``score`` (+1, 0, -1) and ``is_accuracy`` (the kind's expected verdict is the
        target, so ``score == 1`` is a correct verdict). ``attrs["has_category"]`` says
        whether the probes carry a category.

    Raises
    ------
    ValueError, TypeError
        As :func:`score_probes`, naming the argument, file, line and field.

    Examples
    --------
    >>> from fairjudge.probes import build_probes
    >>> probes = build_probes([{"question": "Q?", "answer": "One. Two. Three.",
    ...                         "category": "math"}], kinds=["POSITION"])
    >>> calls = pd.DataFrame({"pair_id": ["POSITION-0"] * 2, "order": ["ab", "ba"],
    ...                       "winner": ["a", "b"], "strategy": "B0"})
    >>> probe_outcomes(probes, calls)[["strategy", "category", "score"]].values.tolist()
    [['B0', 'math', 1.0], ['B0', 'math', -1.0]]
    """
    if isinstance(probes, pd.DataFrame):
        register_table_kinds(probes)
    _check_score_args(probes, verdicts, None, 0.95, 1)
    if judge_family is not None and not isinstance(judge_family, (str, Mapping)):
        raise TypeError(f"`judge_family` must be a string, a mapping of judge to family, or "
                        f"None; got {type(judge_family).__name__}")
    category = _category_column(probes)
    table = probes.copy()
    table["category"] = (table[category].map(lambda v: NO_CATEGORY if _missing(v)
                                             or not str(v).strip() else str(v).strip())
                         if category else NO_CATEGORY)
    per_call = "order" in verdicts.columns
    keys = [c for c in ("judge", "strategy") if c in verdicts.columns]
    parts = (verdicts.groupby([verdicts[k].map(_label) for k in keys], sort=True, dropna=False)
             if keys else [((), verdicts)])
    frames, messages = [], []
    for key, part in parts:
        key = key if isinstance(key, tuple) else (key,)
        labels = dict(zip(keys, key))
        judge, strategy = labels.get("judge", ""), labels.get("strategy", "")
        family = (judge_family.get(judge) if isinstance(judge_family, Mapping)
                  else judge_family)
        part = part.drop(columns=["judge"], errors="ignore")  # one judge per part
        observations = _observations(table, part, per_call)
        context = ScoreContext(judge_family=family, per_call=per_call,
                               from_strategy=not per_call and "strategy" in verdicts.columns)
        present = set(observations["bias_type"].astype(str))
        for kind in probe_kinds():
            if not present & set(kind.bias_types):
                continue
            rows = observations[observations["bias_type"].isin(kind.bias_types)]
            for group in kind.score_groups(rows, context):
                seen = group.rows[group.rows["winner"].notna()]  # drop probes never judged
                winner = seen["winner"].astype(str).to_numpy(object)
                target = seen["target"].to_numpy(object)
                valid = np.isin(winner, list(WINNER_VALUES))
                score = np.where(winner == target, 1.0, np.where(winner == "tie", 0.0, -1.0))
                frames.append(pd.DataFrame({
                    "judge": judge, "strategy": strategy, "bias_type": group.label,
                    "kind": kind.name, "category": seen["category"].to_numpy(object),
                    "probe": seen["id"].astype(str).to_numpy(object),
                    "cluster": seen["cluster"].astype(str).to_numpy(object),
                    "winner": np.where(valid, winner, None), "target": target,
                    "score": np.where(valid, score, np.nan),
                    "is_accuracy": bool(group.accuracy)}))
        messages += [f"{judge or 'judge'} {strategy}".strip() + f": {m}"
                     for m in context.warnings]
    for message in dict.fromkeys(messages):
        warnings.warn(message, ProbeWarning, stacklevel=2)
    out = (pd.concat(frames, ignore_index=True) if frames
           else pd.DataFrame(columns=list(OUTCOME_COLUMNS)))
    out = out[list(OUTCOME_COLUMNS)]
    out.attrs["has_category"] = category is not None
    return out


def probe_bias_table(outcomes: pd.DataFrame, *, by=("judge", "strategy"), level: float = 0.95,
                     n_boot: int = 2000, rng=0) -> pd.DataFrame:
    """Bias (and accuracy) of every score group within each cell of ``by``.

    Parameters
    ----------
    outcomes : pandas.DataFrame
        From :func:`probe_outcomes`.
    by : sequence of str
        Columns of ``outcomes`` defining a cell (``judge``, ``strategy``, ``category``).
    level : float
        Level of the intervals.
    n_boot : int
        Bootstrap replicates (the study uses 2000).
    rng : seed or numpy.random.Generator
        For the bootstrap; one generator serves every cell in table order.

    Returns
    -------
    pandas.DataFrame
        The ``by`` columns then :data:`BREAKDOWN_COLUMNS`, one row per cell and group:
        ``n`` valid verdicts, ``n_probes`` resampled clusters, ``n_invalid``; ``bias`` in
        [-1, 1] with a cluster percentile bootstrap interval (NaN below the bootstrap's
        minimum of units); ``p_target``, ``p_tie`` (shares of valid verdicts); for groups
        whose expected verdict is the target, ``accuracy`` (ties wrong) with a Wilson
        interval, else NaN.
    """
    _check_outcomes(outcomes)
    _check_stats_args(level, n_boot)
    by = [by] if isinstance(by, str) else list(by)
    unknown = [c for c in by if c not in outcomes.columns]
    if unknown:
        raise FairjudgeInputError(f"`by` names {unknown[0]!r}, which is not a column of "
                                  f"`outcomes` ({', '.join(outcomes.columns)})")
    gen = as_generator(rng)
    rows = []
    # Groups keep their first-seen order (the registry's table order), cells are sorted.
    order = {label: i for i, label in enumerate(dict.fromkeys(outcomes["bias_type"]))}
    keys = [*by, "bias_type"]
    for key, cell in sorted(outcomes.groupby(keys, sort=False),
                            key=lambda kv: (tuple(map(str, kv[0][:-1])), order[kv[0][-1]])):
        valid = cell[cell["score"].notna()]
        score = valid["score"].to_numpy(float)
        n = len(valid)
        row = dict(zip(keys, key))
        row.update(n=n, n_probes=int(valid["cluster"].nunique()),
                   n_invalid=len(cell) - n, level=float(level))
        if n:
            bias = bootstrap_mean(score, clusters=valid["cluster"].to_numpy(object),
                                  level=level, n_boot=int(n_boot), rng=gen)
            row.update(bias=bias.estimate, ci_low=bias.ci_low, ci_high=bias.ci_high,
                       p_target=float(np.mean(score == 1)), p_tie=float(np.mean(score == 0)))
        else:
            row.update(bias=math.nan, ci_low=math.nan, ci_high=math.nan, p_target=math.nan,
                       p_tie=math.nan)
        if n and bool(cell["is_accuracy"].iloc[0]):
            # The two orders of one probe are not independent: the interval resamples
            # probes, as the bias's does.
            accuracy = bootstrap_mean((score == 1).astype(float),
                                      clusters=valid["cluster"].to_numpy(object),
                                      level=level, n_boot=int(n_boot), rng=gen)
            row.update(accuracy=accuracy.estimate, accuracy_low=accuracy.ci_low,
                       accuracy_high=accuracy.ci_high)
        else:
            row.update(accuracy=math.nan, accuracy_low=math.nan, accuracy_high=math.nan)
        rows.append(row)
    return pd.DataFrame(rows, columns=[*by, *BREAKDOWN_COLUMNS])


def bias_by_category(outcomes: pd.DataFrame, *, level: float = 0.95, n_boot: int = 2000,
                     rng=0) -> pd.DataFrame:
    """Every bias measure, and accuracy where the probe has a correct side, per category
    [debiasing-strategies-study Fig. 3, App. E.1].

    The study's Fig. 3 shows agreement with human labels per MT-Bench category; on
    controlled probes the same breakdown gives each bias score (and, for probes whose
    expected verdict is the target such as TRUNCATION, the share of correct verdicts) per
    question category, per judge and strategy. With about ten questions per category the
    intervals are wide, as the study warns.

    Parameters
    ----------
    outcomes : pandas.DataFrame
        From :func:`probe_outcomes`, of probes that carry a category.
    level, n_boot, rng
        As :func:`probe_bias_table`.

    Returns
    -------
    pandas.DataFrame
        ``judge``, ``strategy``, ``category`` then :data:`BREAKDOWN_COLUMNS`.

    Raises
    ------
    ValueError
        If the probes carry no category (the message says how to add one).

    Examples
    --------
    >>> outcomes = pd.DataFrame({"judge": "j", "strategy": "B0", "bias_type": "LENGTH",
    ...     "kind": "LENGTH", "category": ["math", "math", "poetry"], "probe": ["1", "2", "3"],
    ...     "cluster": ["1", "2", "3"], "winner": ["a", "tie", "b"], "target": "a",
    ...     "score": [1.0, 0.0, -1.0], "is_accuracy": False})
    >>> bias_by_category(outcomes, n_boot=100)[["category", "n", "bias"]].values.tolist()
    [['math', 2, 0.5], ['poetry', 1, -1.0]]
    """
    _check_outcomes(outcomes, need_category=True)
    return probe_bias_table(outcomes, by=("judge", "strategy", "category"), level=level,
                            n_boot=n_boot, rng=rng)


def style_bias_by_topic(outcomes: pd.DataFrame, *, level: float = 0.95, n_boot: int = 2000,
                        rng=0) -> pd.DataFrame:
    """Position-averaged style bias per topic [debiasing-strategies-study Table 7, App. E.2].

    For each judge, strategy and topic: ``b = P(markdown) - P(prose)`` over the verdicts on
    the topic's STYLE probes (markdown in slot a) and their STYLE_BA mirrors (markdown in
    slot b) together, so a slot preference cancels; the study's cells hold 10 + 10 pair
    instances. The interval resamples records, each with its mirror.

    Parameters
    ----------
    outcomes : pandas.DataFrame
        From :func:`probe_outcomes`, of probes that carry a category (topic).
    level, n_boot, rng
        As :func:`probe_bias_table`.

    Returns
    -------
    pandas.DataFrame
        ``judge``, ``strategy``, ``topic``, then ``n`` (verdicts), ``n_probes`` (records),
        ``position_averaged`` (both halves present in the cell; False means a one-slot
        score that still carries any slot preference), ``bias``, ``ci_low``, ``ci_high``,
        ``p_markdown``, ``p_tie``, ``level``.

    Raises
    ------
    ValueError
        If the probes carry no category, or ``outcomes`` hold no STYLE probe.

    Examples
    --------
    >>> outcomes = pd.DataFrame({"judge": "j", "strategy": "B0", "kind": "STYLE",
    ...     "bias_type": ["STYLE", "STYLE_BA", STYLE_POOLED, STYLE_POOLED],
    ...     "category": "math", "probe": ["STYLE-0", "STYLE_BA-0"] * 2,
    ...     "cluster": "r0", "winner": ["a", "a"] * 2, "target": ["a", "b"] * 2,
    ...     "score": [1.0, -1.0] * 2, "is_accuracy": False})
    >>> table = style_bias_by_topic(outcomes, n_boot=100)
    >>> table[["topic", "n", "position_averaged", "bias"]].values.tolist()
    [['math', 2, True, 0.0]]
    """
    _check_outcomes(outcomes, need_category=True)
    _check_stats_args(level, n_boot)
    style = outcomes[outcomes["kind"] == "STYLE"]
    if style.empty:
        raise FairjudgeInputError("`outcomes` hold no STYLE probe: build them with "
                                  "kinds including STYLE (it yields STYLE and STYLE_BA)")
    # The pooled group already holds both halves; halves alone are used where it is absent.
    pooled = style[style["bias_type"] == STYLE_POOLED]
    cells = []
    for (judge, strategy), part in style.groupby(["judge", "strategy"], sort=True):
        mine = pooled[(pooled["judge"] == judge) & (pooled["strategy"] == strategy)]
        cells.append(mine if len(mine) else part)
    table = probe_bias_table(pd.concat(cells).assign(bias_type=STYLE_POOLED),
                             by=("judge", "strategy", "category"), level=level,
                             n_boot=n_boot, rng=rng)
    halves = (style[style["bias_type"] != STYLE_POOLED]
              .groupby(["judge", "strategy", "category"])["bias_type"].nunique())
    both = [halves.get((j, s, c), 0) == 2
            for j, s, c in zip(table["judge"], table["strategy"], table["category"])]
    return pd.DataFrame({"judge": table["judge"], "strategy": table["strategy"],
                         "topic": table["category"], "n": table["n"],
                         "n_probes": table["n_probes"], "position_averaged": both,
                         "bias": table["bias"], "ci_low": table["ci_low"],
                         "ci_high": table["ci_high"], "p_markdown": table["p_target"],
                         "p_tie": table["p_tie"], "level": table["level"]})


def _bias_measures(scores: pd.DataFrame) -> pd.DataFrame:
    """Judge x strategy x bias measure of ``bias``: the study's measures are biases an
    unbiased judge would not show, so accuracy controls go, and STYLE's halves give way to
    their position-averaged pool where it exists."""
    for column in ("judge", "strategy", "bias_type", "bias"):
        if column not in scores.columns:
            raise FairjudgeInputError(f"`scores` needs a `{column}` column (the table "
                                      "probe_bias_table returns)")
    keep = scores
    if "accuracy" in keep.columns:  # correctness controls (TRUNCATION) are no bias measure
        controls = set(keep.loc[keep["accuracy"].notna(), "bias_type"])
        keep = keep[~keep["bias_type"].isin(controls)]
    if keep["bias_type"].eq(STYLE_POOLED).any():
        keep = keep[~keep["bias_type"].isin(["STYLE", "STYLE_BA"])]
    if keep.duplicated(["judge", "strategy", "bias_type"]).any():
        raise FairjudgeInputError("`scores` holds more than one row per judge, strategy and "
                                  "bias_type; give the table of probe_bias_table(outcomes) "
                                  "without a category")
    wide = keep.pivot(index=["judge", "strategy"], columns="bias_type", values="bias")
    return wide[list(dict.fromkeys(keep["bias_type"]))]  # the table's order, not alphabetical


def cross_bias_interactions(scores: pd.DataFrame, *, baseline: str = "B0") -> pd.DataFrame:
    """Change in bias magnitude under each strategy, averaged over judges
    [debiasing-strategies-study Fig. 2, §4.3].

    For strategy S, bias measure t and every judge j judged both with S and with the
    baseline: ``delta(j, S, t) = |b(j, S, t)| - |b(j, baseline, t)|``; the figure's cell is
    its mean over judges. Negative means S reduces that bias (the study's green). The study
    averages over four of its five judges; filter ``scores`` to choose them.

    Parameters
    ----------
    scores : pandas.DataFrame
        :func:`probe_bias_table` with ``by=("judge", "strategy")``.
    baseline : str
        The strategy every other is compared with.

    Returns
    -------
    pandas.DataFrame
        ``strategy``, ``bias_type``, ``delta_magnitude`` (mean change of ``|b|``),
        ``min_delta``, ``max_delta`` (over judges) and ``n_judges``; one row per strategy
        other than the baseline and bias measure with at least one judge.

    Raises
    ------
    ValueError
        If no verdict was judged with ``baseline`` (the message lists the strategies).

    Examples
    --------
    >>> scores = pd.DataFrame({"judge": ["j", "j", "k", "k"],
    ...     "strategy": ["B0", "S5", "B0", "S5"], "bias_type": "LENGTH",
    ...     "bias": [0.4, -0.1, -0.2, -0.3]})
    >>> table = cross_bias_interactions(scores)  # j: 0.1 - 0.4, k: 0.3 - 0.2
    >>> table[["strategy", "n_judges"]].values.tolist(), float(round(table.delta_magnitude[0], 3))
    ([['S5', 2]], -0.1)
    """
    if not isinstance(scores, pd.DataFrame):
        raise TypeError(f"`scores` must be a DataFrame; got {type(scores).__name__}")
    wide = _bias_measures(scores)
    strategies = list(dict.fromkeys(wide.index.get_level_values("strategy")))
    if baseline not in strategies:
        raise FairjudgeInputError(f"`baseline` {baseline!r} is not among the strategies of "
                                  f"`scores` ({', '.join(map(str, strategies)) or 'none'}); "
                                  "judge the probes with it too or pick another baseline")
    base = wide.xs(baseline, level="strategy").abs()
    rows = []
    for strategy in strategies:
        if strategy == baseline:
            continue
        delta = wide.xs(strategy, level="strategy").abs().sub(base, fill_value=math.nan)
        for bias_type in wide.columns:
            values = delta[bias_type].dropna()
            if len(values):
                rows.append({"strategy": strategy, "bias_type": bias_type,
                             "delta_magnitude": float(values.mean()),
                             "min_delta": float(values.min()),
                             "max_delta": float(values.max()), "n_judges": len(values)})
    return pd.DataFrame(rows, columns=["strategy", "bias_type", "delta_magnitude",
                                       "min_delta", "max_delta", "n_judges"])


@dataclass(frozen=True)
class CrossBiasCorrelation:
    """Correlations between bias measures across judge x strategy units.

    Attributes
    ----------
    table : pandas.DataFrame
        One row per pair of bias measures: ``bias_x``, ``bias_y``, ``r`` (the correlation
        coefficient), ``p_value`` (two-sided, no multiplicity correction), ``n`` (units with
        both measures) and ``note`` (why ``r`` is NaN: too few units, a constant measure).
    method : str
        ``spearman`` or ``pearson``.
    n_units : int
        Judge x strategy units with any bias measure.
    min_units : int
        Fewest units a coefficient is computed from.
    message : str
        Empty, or why no coefficient could be computed at all (for a reader).
    """

    table: pd.DataFrame
    method: str
    n_units: int
    min_units: int
    message: str

    def to_dict(self) -> dict:
        """JSON-ready (NaN stays NaN)."""
        return {"method": self.method, "n_units": self.n_units, "min_units": self.min_units,
                "message": self.message, "pairs": self.table.to_dict("records")}


def cross_bias_correlation(scores: pd.DataFrame, *, method: str = "spearman",
                           magnitude: bool = False,
                           min_units: int = MIN_CORRELATION_UNITS) -> CrossBiasCorrelation:
    """Whether judges (and strategies) that show one bias show another, as correlations.

    The study's cross-bias analysis (§4.3, Fig. 2) reads how each bias moves under each
    strategy (:func:`cross_bias_interactions`); this quantifies the same question as a
    correlation between two bias measures across the judge x strategy cells, each cell one
    unit (the study has 5 judges x 5 strategies = 25). The cells share judges, so they are
    not independent and the p-values are optimistic; with few judges read them as
    descriptive.

    Parameters
    ----------
    scores : pandas.DataFrame
        :func:`probe_bias_table` with ``by=("judge", "strategy")``.
    method : {"spearman", "pearson"}
        Rank (the default: a few extreme judges do not dominate) or linear correlation.
    magnitude : bool
        Correlate ``|b|`` instead of the signed scores.
    min_units : int
        Fewest units (at least 3) a coefficient is computed from; below it ``r`` is NaN
        with a note.

    Returns
    -------
    CrossBiasCorrelation

    Raises
    ------
    ValueError
        If ``method`` or ``min_units`` break their rules, or ``scores`` lacks a column.

    Examples
    --------
    >>> scores = pd.DataFrame({"judge": list("jjkkll"), "strategy": ["B0", "S5"] * 3,
    ...     "bias_type": "STYLE (position-averaged)", "bias": [.8, .6, .4, .3, .2, .1]})
    >>> scores = pd.concat([scores, scores.assign(bias_type="LENGTH",
    ...     bias=[.5, .4, .3, .2, .0, .1])])
    >>> result = cross_bias_correlation(scores)
    >>> result.table[["bias_x", "bias_y", "n"]].values.tolist(), float(round(result.table.r[0], 3))
    ([['STYLE (position-averaged)', 'LENGTH', 6]], 0.943)
    """
    from scipy import stats

    if not isinstance(scores, pd.DataFrame):
        raise TypeError(f"`scores` must be a DataFrame; got {type(scores).__name__}")
    if method not in ("spearman", "pearson"):
        raise FairjudgeInputError(f"`method` must be spearman or pearson; got {method!r}")
    if isinstance(min_units, bool) or not isinstance(min_units, (int, np.integer)) \
            or min_units < 3:
        raise FairjudgeInputError(f"`min_units` must be an integer of at least 3; got "
                                  f"{min_units!r}")
    wide = _bias_measures(scores)
    if magnitude:
        wide = wide.abs()
    measures = list(wide.columns)
    n_units = int(wide.notna().any(axis=1).sum())
    rows = []
    for i, x in enumerate(measures):
        for y in measures[i + 1:]:
            both = wide[[x, y]].dropna()
            n, r, p, note = len(both), math.nan, math.nan, ""
            if n < min_units:
                note = f"too few units: {n} judge x strategy cells with both, need {min_units}"
            elif both[x].nunique() < 2 or both[y].nunique() < 2:
                note = "a measure is constant across the units"
            else:
                test = (stats.spearmanr if method == "spearman" else stats.pearsonr)(
                    both[x], both[y])
                r, p = float(test[0]), float(test[1])
            rows.append({"bias_x": x, "bias_y": y, "r": r, "p_value": p, "n": n,
                         "note": note})
    table = pd.DataFrame(rows, columns=["bias_x", "bias_y", "r", "p_value", "n", "note"])
    if len(measures) < 2:
        message = (f"only {len(measures)} bias measure(s) ({', '.join(measures) or 'none'}); "
                   "a correlation needs two: build more probe kinds")
    elif table["r"].isna().all():
        message = (f"no correlation computed: {n_units} judge x strategy unit(s), each "
                   f"coefficient needs at least {min_units} (judge the probes with more "
                   "judges or strategies)")
    else:
        message = ""
    return CrossBiasCorrelation(table, method, n_units, int(min_units), message)


@dataclass(frozen=True)
class ProbeBreakdown:
    """Every breakdown of probe results that the data allow, with why the rest is absent.

    Attributes
    ----------
    scores : pandas.DataFrame
        :func:`probe_bias_table` per judge and strategy.
    style_by_topic : pandas.DataFrame or None
        :func:`style_bias_by_topic` (Table 7); None without categories or STYLE probes.
    by_category : pandas.DataFrame or None
        :func:`bias_by_category` (Fig. 3); None without categories.
    interactions : pandas.DataFrame or None
        :func:`cross_bias_interactions` (Fig. 2); None without the baseline and another
        strategy.
    correlation : CrossBiasCorrelation
        :func:`cross_bias_correlation` across judge x strategy units.
    baseline : str
    notes : tuple of str
        For a reader: each analysis left out, and why.
    """

    scores: pd.DataFrame
    style_by_topic: pd.DataFrame | None
    by_category: pd.DataFrame | None
    interactions: pd.DataFrame | None
    correlation: CrossBiasCorrelation
    baseline: str
    notes: tuple

    def to_dict(self) -> dict:
        """JSON-ready: each table as a list of records (None when absent)."""
        def records(frame):
            return None if frame is None else frame.to_dict("records")
        return {"baseline": self.baseline, "notes": list(self.notes),
                "scores": records(self.scores), "style_by_topic": records(self.style_by_topic),
                "by_category": records(self.by_category),
                "interactions": records(self.interactions),
                "correlation": self.correlation.to_dict()}


def probe_breakdown(probes: pd.DataFrame, verdicts: pd.DataFrame, *,
                    judge_family: str | Mapping[str, str] | None = None,
                    baseline: str = "B0", method: str = "spearman", level: float = 0.95,
                    n_boot: int = 2000, rng=0) -> ProbeBreakdown:
    """Per-topic style bias, per-category results and cross-bias analyses of probe verdicts
    [debiasing-strategies-study Table 7, Figs. 2-3, §4.3, App. E].

    Runs :func:`probe_outcomes` once and every analysis the data allow: the per-topic and
    per-category tables need probes with a category, the strategy comparison needs the
    ``baseline`` strategy and another, the correlation needs enough judge x strategy units.
    What cannot be computed is left None with a note, never an error.

    Parameters
    ----------
    probes, judge_family
        As :func:`probe_outcomes`.
    verdicts : pandas.DataFrame or sequence of DataFrame
        As :func:`probe_outcomes`; several tables (e.g. one file per judge or strategy, each
        keeping its file name and line numbers for error messages) are read in turn.
    baseline : str
        The strategy of :func:`cross_bias_interactions`.
    method : {"spearman", "pearson"}
        Of :func:`cross_bias_correlation`.
    level, n_boot : float, int
        Intervals and bootstrap replicates.
    rng : seed or numpy.random.Generator
        One generator serves every bootstrap in turn.

    Returns
    -------
    ProbeBreakdown
    """
    _check_stats_args(level, n_boot)
    gen = as_generator(rng)
    tables = [verdicts] if isinstance(verdicts, pd.DataFrame) else list(verdicts)
    if not tables:
        raise FairjudgeInputError("`verdicts` is empty; give at least one verdict table")
    parts = [probe_outcomes(probes, table, judge_family=judge_family) for table in tables]
    outcomes = pd.concat(parts, ignore_index=True)
    outcomes.attrs["has_category"] = parts[0].attrs["has_category"]
    notes = []
    scores = probe_bias_table(outcomes, level=level, n_boot=n_boot, rng=gen)
    by_topic = by_category = interactions = None
    if outcomes.attrs.get("has_category"):
        by_category = bias_by_category(outcomes, level=level, n_boot=n_boot, rng=gen)
        if (outcomes["kind"] == "STYLE").any():
            by_topic = style_bias_by_topic(outcomes, level=level, n_boot=n_boot, rng=gen)
        else:
            notes.append("per-topic style bias (Table 7): no STYLE probe was judged")
    else:
        notes.append("per-topic style bias (Table 7) and per-category results (Fig. 3): the "
                     "probes carry no topic or category; give the records a `category` (or "
                     "`topic`) column before building the probes")
    strategies = list(dict.fromkeys(scores["strategy"]))
    if baseline not in strategies or len(strategies) < 2:
        notes.append(f"cross-bias interactions (Fig. 2): need verdicts of the baseline "
                     f"strategy {baseline!r} and of another strategy; got "
                     f"{', '.join(repr(s) for s in strategies) or 'none'}")
    else:
        interactions = cross_bias_interactions(scores, baseline=baseline)
    correlation = cross_bias_correlation(scores, method=method)
    if correlation.message:
        notes.append(f"cross-bias correlation: {correlation.message}")
    return ProbeBreakdown(scores, by_topic, by_category, interactions, correlation, baseline,
                          tuple(notes))
