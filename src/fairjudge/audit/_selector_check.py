"""Algorithm 1 of the debiasing study beside a comparison's data-driven recommendation
[debiasing-strategies-study §5.4]: what each picks and where they disagree."""

from __future__ import annotations

from dataclasses import dataclass

import pandas as pd

from fairjudge._util._warnings import FairjudgeInputError
from fairjudge.strategies._selector import StrategyChoice, judge_strategy_selector, study_model
from fairjudge.strategies._strategies import STRATEGIES


@dataclass(frozen=True)
class SelectorCheck:
    """Algorithm 1's choice for a comparison's judge, set against the data's recommendation.

    Attributes
    ----------
    choice : StrategyChoice
        What Algorithm 1 returns for this judge (``model``), task type and budget.
    recommended : str
        The configuration the data-driven recommendation picks ("" if none).
    recommended_strategy : str or None
        Its strategy name, when it is one of :data:`fairjudge.strategies.STRATEGIES`.
    recommended_judge : str or None
        Its judge, when known.
    agree : bool or None
        Whether both pick the same strategy (and, on Algorithm 1's lines 2 and 5, which
        name their own judges, a judge of the named model); ``None`` when it cannot be told.
    compared : bool
        Whether a strategy Algorithm 1 returns was among the compared configurations.
    summary : str
        One line saying where they agree or disagree and why.
    """

    choice: StrategyChoice
    recommended: str
    recommended_strategy: str | None
    recommended_judge: str | None
    agree: bool | None
    compared: bool
    summary: str

    def as_dict(self) -> dict:
        return {"algorithm_1": self.choice.as_dict(), "data_recommends": self.recommended or None,
                "data_recommends_strategy": self.recommended_strategy,
                "data_recommends_judge": self.recommended_judge, "agree": self.agree,
                "algorithm_1_strategy_compared": self.compared, "summary": self.summary}


def _strategy_id(value) -> str | None:
    """The registry name of a strategy written ``value`` (case-insensitive), else None."""
    if value is None or (isinstance(value, float) and value != value):
        return None
    text = str(value).strip()
    for name in STRATEGIES:
        if text.lower() == name.lower():
            return name
    return None


def configuration_identity(name: str, table: pd.DataFrame,
                           strategy_ids: dict | None = None) -> tuple[str | None, str | None]:
    """(judge, strategy name) of one configuration's verdict table.

    The strategy is ``strategy_ids[name]`` when given, else the table's single ``strategy``
    value or, failing that, ``name`` itself when either is a strategy name (B0, S1 ... S8,
    CWO, SW); the judge is the table's single ``judge`` value. Either is ``None`` if unknown.

    Raises
    ------
    FairjudgeInputError
        If ``strategy_ids[name]`` is not a strategy name.
    """
    strategy = None
    if strategy_ids and name in strategy_ids:
        strategy = _strategy_id(strategy_ids[name])
        if strategy is None:
            raise FairjudgeInputError(
                f"`strategy_ids`: {name!r} is mapped to {strategy_ids[name]!r}, which is not a "
                f"strategy; choose from {', '.join(STRATEGIES)}")
    if strategy is None and "strategy" in table.columns:
        values = table["strategy"].dropna().unique()
        if len(values) == 1:
            strategy = _strategy_id(values[0])
    if strategy is None:
        strategy = _strategy_id(name)
    judge = None
    if "judge" in table.columns:
        values = table["judge"].dropna().unique()
        if len(values) == 1:
            judge = str(values[0])
    return judge, strategy


def selector_check(*, model: str | None, recommended: str, identities: dict,
                   task: str = "natural", budget_multiplier: int | None = None,
                   cost_matters: bool = True, evidence: dict | None = None) -> SelectorCheck:
    """Algorithm 1 for ``model`` beside the configuration the data recommend.

    Parameters
    ----------
    model : str or None
        The judge of the comparison (Algorithm 1's M); ``None`` when the configurations
        are several judges or the judge is unknown.
    recommended : str
        Name of the configuration the data-driven recommendation picks ("" for none).
    identities : dict of str -> (judge, strategy)
        Every compared configuration's judge and strategy (:func:`configuration_identity`).
    task, budget_multiplier, cost_matters
        Algorithm 1's inputs (:func:`fairjudge.strategies.judge_strategy_selector`).
    evidence : dict of str -> str, optional
        What the data measured for each configuration (agreement, gain, Holm p), quoted in
        the summary for the data's pick and for Algorithm 1's when it was compared.

    Returns
    -------
    SelectorCheck

    References
    ----------
    [debiasing-strategies-study §5.4, Algorithm 1]
    """
    choice = judge_strategy_selector(task, budget_multiplier=budget_multiplier, model=model,
                                     cost_matters=cost_matters)
    judge, strategy = identities.get(recommended, (None, None)) if recommended else (None, None)
    compared_strategies = {s for _, s in identities.values() if s is not None}
    compared = any(s in compared_strategies for s in choice.strategies)
    picks = " or ".join(choice.strategies)
    if choice.line in (2, 5):
        names_judge = " or ".join(choice.judges)
        judge_ok = None if judge is None and model is None else \
            study_model(judge or model) in {study_model(j) for j in choice.judges}
    else:
        names_judge, judge_ok = "", True
    if not recommended:
        agree, text = None, "the data recommend no configuration (nothing to compare)"
    elif strategy is None:
        agree = None
        text = (f"cannot tell: the data pick {recommended}, which is not labelled with one of "
                f"the study's strategies (say which, if any, with strategy_ids / --study-id "
                f"{recommended}=<B0 ... S8>)")
    else:
        agree = (strategy in choice.strategies) and (judge_ok is not False)
        if judge_ok is None and strategy in choice.strategies:
            agree = None
        evidence = evidence or {}
        label = recommended if recommended == strategy else f"{recommended} ({strategy})"
        where = f"the data pick {label}" + (f": {evidence[recommended]}"
                                            if recommended in evidence else "")
        if agree:
            text = f"agree: both pick {strategy}" + (
                f" ({names_judge} named by Algorithm 1)" if names_judge else "")
        elif agree is None:
            text = (f"strategies agree ({strategy}), but Algorithm 1 names its judge "
                    f"({names_judge}) and this judge is unknown")
        elif strategy not in choice.strategies and not compared:
            text = (f"differ, untested: Algorithm 1 picks {picks}, which was not among the "
                    f"compared configurations, so these data neither confirm nor refute it; "
                    f"{where}")
        elif strategy not in choice.strategies:
            text = f"DISAGREE: Algorithm 1 picks {picks}; {where}"
            measured = [f"{name}: {evidence[name]}" for name, (_, s) in identities.items()
                        if s in choice.strategies and name in evidence]
            if measured:
                text += f" (measured here, {'; '.join(measured)})"
        else:
            text = (f"DISAGREE on the judge: Algorithm 1 picks {picks} with {names_judge}; "
                    f"this judge ({judge or model}) is none of those")
    if judge_ok is False and not text.startswith("DISAGREE on the judge"):
        text += (f"; and Algorithm 1's judge is {names_judge}, which the data's judge "
                 f"({judge or model}) is not")
    return SelectorCheck(choice, recommended, strategy, judge, agree, compared, text)
