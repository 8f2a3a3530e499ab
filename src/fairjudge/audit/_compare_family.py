"""Strategy comparisons of several judges as one Holm family
[debiasing-strategies-study §4.2, Tables 1, 2 and 4: Holm–Bonferroni over all 20 judge x
strategy tests]."""

from __future__ import annotations

import dataclasses
from dataclasses import dataclass

import numpy as np
import pandas as pd

from fairjudge._util._warnings import FairjudgeInputError
from fairjudge.audit._compare import _compare, _with_recommendation
from fairjudge.audit._selector_check import configuration_identity
from fairjudge.stats._mcnemar import holm_bonferroni


@dataclass(frozen=True)
class FamilyComparison:
    """Each judge's strategy comparison, with Holm's adjustment over all judges' tests.

    Attributes
    ----------
    judges : list of str
        Judges in input order.
    comparisons : dict of str -> Comparison
        One per judge, against that judge's own baseline. Each ``table`` has ``p_holm``
        (Holm over that judge's tests only) and ``p_holm_family`` (Holm over the whole
        family); its recommendation uses the family-wide values.
    tests : pandas.DataFrame
        The family, one row per judge x configuration test in input order: ``judge``,
        ``name``, ``baseline``, ``b``, ``c``, ``statistic``, ``p`` (McNemar,
        continuity-corrected), ``p_holm_judge``, ``m_judge`` (tests of that judge),
        ``p_holm_family``, ``mixed_p`` (the configuration's coefficient in that judge's
        mixed-effects regression) and ``mixed_p_holm_family`` (Holm over those, NaN
        unless every judge's model was fitted), ``difference`` (accuracy gain as a
        proportion), ``mde``.
    m : int
        Tests in the family.
    """

    judges: list
    comparisons: dict
    tests: pd.DataFrame
    m: int

    def to_dict(self) -> dict:
        return {"holm_family": {"m": self.m, "n_judges": len(self.judges),
                                "tests": self.tests.to_dict(orient="records")},
                "judges": {j: c.to_dict() for j, c in self.comparisons.items()}}


def _mixed_p(comparison, name: str) -> float:
    """The mixed-effects p-value of configuration ``name`` against the baseline (NaN when
    the model was not fitted)."""
    mixed = comparison.mixed
    if mixed is None:
        return float("nan")
    row = mixed[mixed.iloc[:, 0] == name]
    return float(row["p_value"].iloc[0]) if len(row) else float("nan")


def split_by_judge(tables: dict, *, judges: dict | None = None,
                   baseline: str | None = None) -> dict:
    """Verdict tables regrouped as judge -> configuration -> table, for :func:`compare_by_judge`.

    Each table goes to the judge named in ``judges[label]``, or is split by its ``judge``
    column. A table whose ``strategy`` column holds several strategies is split by it too,
    each part named by its strategy; otherwise its part is named by its label.

    Parameters
    ----------
    tables : dict of str -> pandas.DataFrame
        Verdict tables (validated) keyed by label (e.g. file stem).
    judges : dict of str -> str, optional
        The judge of each table by label, overriding (or standing in for) its ``judge``
        column.
    baseline : str, optional
        Configuration to put first for every judge (it must exist for every judge);
        default: each judge's first configuration (tables in order, strategies in order of
        first appearance).

    Returns
    -------
    dict of str -> dict of str -> pandas.DataFrame

    Raises
    ------
    FairjudgeInputError
        If a table has neither a ``judge`` column nor an entry in ``judges`` (or a verdict
        without a judge), if two tables give one judge the same configuration name, or if
        ``baseline`` is missing for some judge.
    """
    grouped: dict = {}
    origin: dict = {}
    for label, table in tables.items():
        source = table.attrs.get("source", label)
        if judges and label in judges:
            judge_of = pd.Series(str(judges[label]), index=table.index)
        elif "judge" in table.columns:
            judge_of = table["judge"]
            if judge_of.isna().any():
                row = table.index[int(np.flatnonzero(judge_of.isna().to_numpy())[0])]
                raise FairjudgeInputError(
                    f"{source} {table.attrs.get('location', 'row')} {row}: field `judge` is "
                    "empty; every verdict of a family across judges needs its judge")
            judge_of = judge_of.astype(str)
        else:
            raise FairjudgeInputError(
                f"{source}: has no `judge` column; name the judge of each table (`judges`, "
                "`compare --judges`)")
        strategies = (table["strategy"].dropna().astype(str) if "strategy" in table.columns
                      else pd.Series(dtype=str))
        by_strategy = strategies.nunique() > 1
        for judge in pd.unique(judge_of):
            part = table[(judge_of == judge).to_numpy()]
            if by_strategy:
                pieces = [(s, part[(part["strategy"].astype(str) == s).to_numpy()])
                          for s in pd.unique(part["strategy"].dropna().astype(str))]
            else:
                pieces = [(label, part)]
            for name, piece in pieces:
                piece = piece.copy()
                piece.attrs = {**table.attrs, "source": f"{source} (judge {judge}"
                               + (f", strategy {name})" if by_strategy else ")")}
                configs = grouped.setdefault(judge, {})
                if name in configs:
                    raise FairjudgeInputError(
                        f"{source}: judge {judge!r} has configuration {name!r} already from "
                        f"{origin[(judge, name)]}; give distinct names")
                configs[name] = piece
                origin[(judge, name)] = source
    if baseline is not None:
        missing = [j for j, configs in grouped.items() if baseline not in configs]
        if missing:
            raise FairjudgeInputError(
                f"`baseline` {baseline!r} is missing for judge(s) {', '.join(missing)}; "
                f"their configurations: {', '.join(grouped[missing[0]])}")
        grouped = {j: {baseline: c[baseline], **{n: t for n, t in c.items() if n != baseline}}
                   for j, c in grouped.items()}
    return grouped


def compare_by_judge(tables: dict, gold: pd.DataFrame, *, costs: dict | None = None,
                     level: float = 0.95, n_boot: int = 2000, rng=0, task: str = "natural",
                     budget_multiplier: int | None = None,
                     strategy_ids: dict | None = None) -> FamilyComparison:
    """Compare each judge's configurations against its baseline, Holm-adjusted both within
    each judge and over the family of all judges' tests.

    The debiasing study tests each of five judges' strategies against that judge's B0 and
    marks the effects that survive Holm–Bonferroni "over all 20 model-strategy comparisons"
    (§4.2; Tables 1, 2 and 4). Each judge is compared as by :func:`compare_verdicts`
    (McNemar with continuity correction on exact-label correctness); then Holm's step-down
    runs once over the McNemar p-values of every judge x configuration test. Both
    adjustments are reported; each judge's data-driven recommendation (and Algorithm 1
    beside it) uses the family-wide one, since a claim about one judge is one of the
    family's claims.

    Parameters
    ----------
    tables : dict of str -> dict of str -> pandas.DataFrame
        judge -> configuration -> verdict table (see :func:`split_by_judge`); each judge's
        first configuration is its baseline.
    gold : pandas.DataFrame
        Gold labels covering every judge's pairs (judges may be on different pairs).
    costs : dict of str -> dict of str -> float, optional
        judge -> configuration -> dollars per evaluation.
    level, n_boot, rng, task, budget_multiplier, strategy_ids
        As :func:`compare_verdicts`; the same ``rng`` seeds every judge's intervals.

    Returns
    -------
    FamilyComparison

    Raises
    ------
    FairjudgeInputError
        If ``tables`` is empty or not judge -> configuration -> table, or as
        :func:`compare_verdicts` for any judge (its message names the file and judge).

    References
    ----------
    Holm (1979); [debiasing-strategies-study §4.2, §5.3, Tables 1, 2, 4, App. D]
    """
    if not isinstance(tables, dict) or not tables:
        raise FairjudgeInputError("`tables` needs at least one judge (judge -> configuration "
                                  "-> verdict table)")
    for judge, configs in tables.items():
        if not isinstance(configs, dict) or not configs:
            raise FairjudgeInputError(
                f"`tables[{judge!r}]` must map configuration names to verdict tables; got "
                f"{type(configs).__name__}")
    results, corrects, selectors = {}, {}, {}
    for judge, configs in tables.items():
        comparison, correct = _compare(
            configs, gold, costs=(costs or {}).get(judge), level=level, n_boot=n_boot, rng=rng,
            task=task, budget_multiplier=budget_multiplier, strategy_ids=strategy_ids)
        results[judge], corrects[judge] = comparison, correct
        identities = {name: configuration_identity(name, t, strategy_ids)
                      for name, t in configs.items()}
        # Algorithm 1's M is this judge, whatever its tables' columns say.
        selectors[judge] = {"task": task, "budget_multiplier": budget_multiplier,
                            "identities": {n: (judge, s) for n, (_, s) in identities.items()}}
    rows = []
    for judge, comparison in results.items():
        t = comparison.table
        m_judge = int(t["mcnemar_p"].notna().sum())
        for r in t[t["mcnemar_p"].notna()].itertuples():
            rows.append({"judge": judge, "name": r.name, "baseline": comparison.names[0],
                         "b": int(r.mcnemar_b), "c": int(r.mcnemar_c),
                         "statistic": r.mcnemar_statistic, "p": r.mcnemar_p,
                         "p_holm_judge": r.p_holm, "m_judge": m_judge,
                         "difference": r.difference, "mde": r.mde})
    tests = pd.DataFrame(rows, columns=["judge", "name", "baseline", "b", "c", "statistic",
                                        "p", "p_holm_judge", "m_judge", "difference", "mde"])
    tests["p_holm_family"] = holm_bonferroni(tests["p"].to_numpy(dtype=float))
    # The study's Table 1 daggers adjust its mixed-effects p-values over the same family
    # (§4.2: three survive that way, two by McNemar in Table 4); given when every judge's
    # model was fitted, so that the family is complete.
    mixed_p = [_mixed_p(results[r.judge], r.name) for r in tests.itertuples()]
    tests["mixed_p"] = np.array(mixed_p, dtype=float)
    # A test whose regression failed still belongs to the family: it enters Holm as p = 1
    # (it can reject nothing, and the others are adjusted for the full m), and its own
    # adjusted p-value stays NaN.
    mixed = tests["mixed_p"].to_numpy(dtype=float)
    adjusted = (holm_bonferroni(np.where(np.isfinite(mixed), mixed, 1.0)) if len(tests)
                else np.array([]))
    tests["mixed_p_holm_family"] = np.where(np.isfinite(mixed), adjusted, np.nan)
    tests = tests[["judge", "name", "baseline", "b", "c", "statistic", "p", "p_holm_judge",
                   "m_judge", "p_holm_family", "mixed_p", "mixed_p_holm_family",
                   "difference", "mde"]]
    m = len(tests)
    scope = f"all {m} tests across {len(results)} judges"
    final = {}
    for judge, comparison in results.items():
        table = comparison.table.copy()
        family_p = tests[tests["judge"] == judge].set_index("name")["p_holm_family"]
        table["p_holm_family"] = table["name"].map(family_p).astype(float)
        updated = dataclasses.replace(comparison, table=table)
        final[judge] = _with_recommendation(updated, corrects[judge], selectors[judge],
                                            p_column="p_holm_family", holm_family=scope)
    return FamilyComparison(list(results), final, tests.reset_index(drop=True), m)
