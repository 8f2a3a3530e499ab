"""Algorithm 1 of the debiasing study, JUDGESTRATEGYSELECTOR, as the paper states it
[debiasing-strategies-study §5.4, Algorithm 1]."""

from __future__ import annotations

import re
from dataclasses import dataclass
from numbers import Integral

from fairjudge._util._warnings import FairjudgeInputError
from fairjudge.strategies._strategies import STRATEGIES

#: Task types of Algorithm 1's input T: "adversarial / high-stakes" (LLMBar-style) or
#: anything else (natural, MT-Bench-style data).
TASK_TYPES = ("natural", "adversarial", "high-stakes")

#: The study's judge models, in the words Algorithm 1 uses for them, and the exact model
#: the study measured under each (§3.2).
STUDY_MODELS = {
    "Claude": "Claude Sonnet 4",
    "Gemini Flash": "Gemini 2.5 Flash",
    "Llama": "Llama 3.3-70B",
    "Gemini Pro": "Gemini 2.5 Pro",
    "GPT-4o": "GPT-4o",
}

# Name fragments of the checkpoints the study measured (Appendix C), to say when a model is
# matched only by family.
_STUDIED = {"Claude": r"sonnet-4", "Gemini Flash": r"2\.5-flash", "Llama": r"3\.3-70b",
            "Gemini Pro": r"2\.5-pro", "GPT-4o": r"gpt-?4o"}


def study_model(name: str | None) -> str | None:
    """Which of Algorithm 1's model names a judge/model name falls under, or ``None``.

    Matching is by family, as Algorithm 1 names them: any ``claude`` model is "Claude", a
    ``gemini`` model with ``flash`` is "Gemini Flash" and with ``pro`` "Gemini Pro", any
    ``llama`` model is "Llama", and ``gpt-4o`` (not ``gpt-4o-mini``) is "GPT-4o". A provider
    prefix (``openai:``, ``meta/``) is ignored.

    Examples
    --------
    >>> study_model("claude-sonnet-4@20250514"), study_model("gemini-2.5-flash")
    ('Claude', 'Gemini Flash')
    >>> study_model("openai:gpt-4o-mini") is None, study_model("GPT-4") is None
    (True, True)
    """
    if name is None:
        return None
    text = str(name).lower()
    if "claude" in text:
        return "Claude"
    if "gemini" in text and "flash" in text:
        return "Gemini Flash"
    if "gemini" in text and "pro" in text:
        return "Gemini Pro"
    if "llama" in text:
        return "Llama"
    if re.search(r"gpt-?4o(?!-?mini)", text):
        return "GPT-4o"
    return None


@dataclass(frozen=True)
class StrategyChoice:
    """What Algorithm 1 returns, with the line that returned it.

    Attributes
    ----------
    judges : tuple of str
        The judge(s) it names: the given model on the model branches (lines 8-16), the
        study's names on lines 2 ("Claude", "GPT-4o", "Llama": any one of them) and 5
        ("Gemini 2.5 Flash"); empty when no model was given and line 16 returns the
        unspecified model.
    strategies : tuple of str
        The strategy, or the alternatives the paper allows ("B0" or "S1" on line 14), as
        strategy names (:data:`fairjudge.strategies.STRATEGIES`).
    line : int
        The line of Algorithm 1 that returned (2, 5, 8, 10, 12, 14 or 16).
    evidence : str
        The paper's comment on that line (its MT-Bench / LLMBar evidence).
    model : str or None
        The preferred model M as given.
    model_class : str or None
        Which of the algorithm's model names M fell under (:func:`study_model`).
    task : str
        Task type T as given.
    budget_multiplier : int or None
        Budget multiplier k as given (``None``: no limit stated).
    cost_matters : bool
    calls_per_pair : tuple of int
        Judge calls per pair of each strategy in ``strategies``.
    notes : tuple of str
        Where the returned choice stretches the paper's evidence or its own inputs: a
        strategy costing more calls than ``k`` (lines 5, 10 and 12 do not check ``k``), a
        model matched only by family.
    """

    judges: tuple
    strategies: tuple
    line: int
    evidence: str
    model: str | None
    model_class: str | None
    task: str
    budget_multiplier: int | None
    cost_matters: bool
    calls_per_pair: tuple
    notes: tuple = ()

    def describe(self) -> str:
        """One line: the judge and strategy returned, the line and the paper's evidence."""
        judge = (" or ".join(self.judges) if self.judges else "the unspecified model")
        strategy = " or ".join(f"{s} ({STRATEGIES[s].title.split(':')[0]})"
                               for s in self.strategies)
        return f"{judge} with {strategy} [Algorithm 1, line {self.line}: {self.evidence}]"

    def as_dict(self) -> dict:
        return {"judges": list(self.judges), "strategies": list(self.strategies),
                "line": self.line, "evidence": self.evidence, "model": self.model,
                "model_class": self.model_class, "task": self.task,
                "budget_multiplier": self.budget_multiplier, "cost_matters": self.cost_matters,
                "calls_per_pair": list(self.calls_per_pair), "notes": list(self.notes)}


def judge_strategy_selector(task: str = "natural", *, budget_multiplier: int | None = None,
                            model: str | None = None,
                            cost_matters: bool = True) -> StrategyChoice:
    """Algorithm 1 (JUDGESTRATEGYSELECTOR) of the debiasing study, as the paper states it.

    The checks run in the paper's order, and the first that holds returns:

    1. T adversarial / high-stakes: (Claude or GPT-4o or Llama, S5) -- line 2.
    2. M unspecified and cost matters: (Gemini 2.5 Flash, S8) -- line 5.
    3. M = Claude: (Claude, S8), or S5 if k = 1 -- line 8.
    4. M = Gemini Flash: (Flash, S8), or S1 if k = 1 -- line 10.
    5. M = Llama: (Llama, S8) -- line 12.
    6. M = Gemini Pro or GPT-4o: (M, B0 or S1) -- line 14.
    7. otherwise: (M, S5) -- line 16 (also reached with M unspecified when cost does not
       matter; the judge is then left unspecified, as in the paper).

    Parameters
    ----------
    task : {"natural", "adversarial", "high-stakes"}
        Task type T. "adversarial" and "high-stakes" are the paper's one category
        (LLMBar-style); "natural" is MT-Bench-style data.
    budget_multiplier : int, optional
        Budget multiplier k, in judge calls per pair (1 = single-call strategies only).
        Only lines 8 and 10 read it, and only as "k = 1". ``None``: not limited.
    model : str, optional
        Preferred judge model M (any name; matched by :func:`study_model`).
    cost_matters : bool
        The condition of line 4; the paper states no default, and its caption calls
        Flash + S8 "the default", so True here.

    Returns
    -------
    StrategyChoice

    Raises
    ------
    FairjudgeInputError
        If ``task`` is not a task type or ``budget_multiplier`` is not a positive integer.

    Notes
    -----
    The algorithm is followed to the letter, including where it does not hold to its own
    budget input: line 10 returns S1 for k = 1 though S1 makes two calls per pair (the
    study's single-call strategies are B0, S4 and S5), and lines 5 and 12 return S8 (two
    calls) whatever k. Those cases are returned as stated, with a note.

    References
    ----------
    [debiasing-strategies-study §5.4, Algorithm 1; evidence in Tables 1, 2, 5, App. H]

    Examples
    --------
    >>> judge_strategy_selector("natural", model="claude-sonnet-4@20250514").strategies
    ('S8',)
    >>> judge_strategy_selector("natural", model="claude-sonnet-4", budget_multiplier=1).line
    8
    >>> choice = judge_strategy_selector("adversarial")
    >>> choice.judges, choice.strategies, choice.line
    (('Claude', 'GPT-4o', 'Llama'), ('S5',), 2)
    """
    if not isinstance(task, str) or task.lower() not in TASK_TYPES:
        raise FairjudgeInputError(f"`task` must be one of {', '.join(TASK_TYPES)}; got "
                                  f"{task!r}")
    task = task.lower()
    if budget_multiplier is not None and (isinstance(budget_multiplier, bool)
                                          or not isinstance(budget_multiplier, Integral)
                                          or budget_multiplier < 1):
        raise FairjudgeInputError("`budget_multiplier` must be a positive whole number of "
                                  f"judge calls per pair (k); got {budget_multiplier!r}")
    if model is not None and (not isinstance(model, str) or not model.strip()):
        raise FairjudgeInputError(f"`model` must be a non-empty name or None; got {model!r}")
    k = None if budget_multiplier is None else int(budget_multiplier)
    single = k == 1
    cls = study_model(model)
    given = () if model is None else (model,)

    if task in ("adversarial", "high-stakes"):
        judges, strategies, line = ("Claude", "GPT-4o", "Llama"), ("S5",), 2
        evidence = "best LLMBar performance"
    elif model is None and cost_matters:
        judges, strategies, line = ("Gemini 2.5 Flash",), ("S8",), 5
        evidence = "71.0%, kappa = 0.549, p < 0.0001 (Holm), ~$0.001/eval"
    elif cls == "Claude":
        judges, strategies, line = given, ("S5",) if single else ("S8",), 8
        evidence = "+11.5 pp, p < 0.0001 (Holm); or S5 if k = 1"
    elif cls == "Gemini Flash":
        judges, strategies, line = given, ("S1",) if single else ("S8",), 10
        evidence = "+7.5 pp, p < 0.0001 (Holm); or S1 if k = 1"
    elif cls == "Llama":
        judges, strategies, line = given, ("S8",), 12
        evidence = "+4.5 pp, p = 0.011, zero API cost"
    elif cls in ("Gemini Pro", "GPT-4o"):
        judges, strategies, line = given, ("B0", "S1"), 14
        evidence = "baseline already strong; debiasing gains within MDE"
    else:
        judges, strategies, line = given, ("S5",), 16
        evidence = "safest default for unknown models"

    calls = tuple(STRATEGIES[s].cost_multiplier() for s in strategies)
    notes = []
    if k is not None and min(calls) > k:
        notes.append(f"{' or '.join(strategies)} makes {min(calls)} judge calls per pair, "
                     f"more than the budget k = {k}; Algorithm 1 returns it as stated")
    if cls is not None and line in (8, 10, 12, 14) and not re.search(
            _STUDIED[cls], re.sub(r"[\s_]+", "-", str(model).lower())):
        notes.append(f"the study measured {STUDY_MODELS[cls]}; {model!r} is matched to "
                     f"\"{cls}\" by family, as Algorithm 1 names models")
    if line == 16 and model is not None:
        notes.append(f"{model!r} is none of the study's five judges")
    return StrategyChoice(judges, strategies, line, evidence, model, cls, task, k,
                          bool(cost_matters), calls, tuple(notes))
