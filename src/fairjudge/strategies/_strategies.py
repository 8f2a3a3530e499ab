"""The debiasing strategies of [debiasing-strategies-study §3.3] and consistent-wins-only
[position-bias-swap]: which calls to make for a pair and how to combine their verdicts."""

from __future__ import annotations

import itertools
from dataclasses import dataclass

from fairjudge._util._rng import content_seed
from fairjudge._util._warnings import FairjudgeInputError
from fairjudge.data._schema import Outcome

ORDERS = ("ab", "ba")


@dataclass(frozen=True)
class Call:
    """One planned judge call for a pair.

    ``order`` is ``"ab"`` (the pair's a shown first) or ``"ba"``; ``temperature`` None
    keeps the run's setting; ``backend`` indexes the run's backends; ``sample`` numbers
    otherwise identical calls.
    """

    order: str
    temperature: float | None
    backend: int
    sample: int = 0


@dataclass(frozen=True)
class Strategy:
    """A prompting/aggregation strategy.

    Attributes
    ----------
    name, title : str
    template : str
        Prompt template name (see :data:`fairjudge.judges.BUILTIN_TEMPLATES`).
    both_orders : bool
        Show the pair in both orders; otherwise in one order drawn from a hash of the pair
        id, the strategy and the seed (so it does not depend on concurrency or restarts).
    temperatures : tuple
        One call per temperature (``None`` = the run's temperature).
    cross_family : bool
        One call per backend (needs at least two backends).
    needs_reference : bool
        The prompt shows a reference answer (given with the pair, or generated once per
        question by the first backend and cached).
    aggregation : str
        ``single``, ``swap-tie`` (agreement keeps the winner, disagreement is a tie),
        ``swap-abstain`` (disagreement is an abstention, not a tie) or ``majority``
        (a strict majority of the valid verdicts, else a tie).
    """

    name: str
    title: str
    template: str
    both_orders: bool = False
    temperatures: tuple = (None,)
    cross_family: bool = False
    needs_reference: bool = False
    aggregation: str = "single"

    def calls(self, pair_id: str, *, seed: int, n_backends: int = 1) -> list[Call]:
        """The calls for one pair, in a fixed order."""
        if self.cross_family and n_backends < 2:
            raise FairjudgeInputError(
                f"strategy {self.name} (cross-family ensemble) needs at least two "
                f"backends; got {n_backends}")
        if self.both_orders:
            orders = ORDERS
        else:
            orders = (ORDERS[content_seed(pair_id, self.name, seed) % 2],)
        backends = range(n_backends) if self.cross_family else (0,)
        return [Call(order, temperature, backend)
                for order, temperature, backend in itertools.product(
                    orders, self.temperatures, backends)]

    def cost_multiplier(self, n_backends: int = 1) -> int:
        """Judge calls per pair (a generated reference adds one call per question)."""
        return (2 if self.both_orders else 1) * len(self.temperatures) * (
            n_backends if self.cross_family else 1)

    def aggregate(self, outcomes: list[Outcome]) -> Outcome:
        """Combine call outcomes, already mapped to the pair's own a/b frame.

        ``INVALID`` calls are never mapped to a side: a single or swap strategy with an
        invalid call is ``INVALID``; a majority needs more than half of its calls valid.
        """
        if self.aggregation == "single":
            return outcomes[0]
        if self.aggregation in ("swap-tie", "swap-abstain"):
            if any(o is Outcome.INVALID for o in outcomes):
                return Outcome.INVALID
            if len(set(outcomes)) == 1:
                return outcomes[0]
            return Outcome.TIE if self.aggregation == "swap-tie" else Outcome.ABSTAIN
        valid = [o for o in outcomes if o in (Outcome.A, Outcome.B, Outcome.TIE)]
        if 2 * len(valid) <= len(outcomes):
            return Outcome.INVALID
        for candidate in (Outcome.A, Outcome.B, Outcome.TIE):
            if 2 * valid.count(candidate) > len(valid):
                return candidate
        return Outcome.TIE


ENSEMBLE_TEMPERATURES = (0.0, 0.3, 0.7)

STRATEGIES = {s.name: s for s in (
    Strategy("B0", "baseline", "baseline"),
    Strategy("S1", "position swap (tie on disagreement)", "baseline", both_orders=True,
             aggregation="swap-tie"),
    Strategy("S2", "same-family ensemble at temperatures 0, 0.3, 0.7 (majority)", "baseline",
             temperatures=ENSEMBLE_TEMPERATURES, aggregation="majority"),
    Strategy("S3", "cross-family ensemble (majority over backends)", "baseline",
             cross_family=True, aggregation="majority"),
    Strategy("S4", "calibrated rubric (five criteria scored 1-5, verdict as its own field)",
             "rubric"),
    Strategy("S5", "chain of thought", "cot"),
    Strategy("S6", "reference-guided", "reference", needs_reference=True),
    Strategy("S7", "combined full: swap x ensemble of a CoT + rubric + reference prompt "
             "(majority)", "combined-full", both_orders=True,
             temperatures=ENSEMBLE_TEMPERATURES, needs_reference=True, aggregation="majority"),
    Strategy("S8", "combined budget: swap of a merged CoT + rubric prompt (tie on "
             "disagreement)", "combined-budget", both_orders=True, aggregation="swap-tie"),
    Strategy("CWO", "consistent wins only: both orders, an inconsistent pair abstains",
             "baseline", both_orders=True, aggregation="swap-abstain"),
    Strategy("SW", "bias warning: B0 with an instruction to ignore order, length, "
             "formatting and authorship (not one of the study's nine)", "warned"),
)}


def get_strategy(name: str) -> Strategy:
    """The strategy called ``name`` (``B0``, ``S1`` ... ``S8``, ``CWO``, ``SW``)."""
    try:
        return STRATEGIES[name.upper() if name.lower() != "cwo" else "CWO"]
    except KeyError:
        raise FairjudgeInputError(f"unknown strategy {name!r}; choose from "
                                  f"{', '.join(STRATEGIES)}") from None


def to_pair_frame(outcome: Outcome, order: str) -> Outcome:
    """Map a verdict given in the shown order back to the pair's own a/b frame."""
    return outcome if order == "ab" else outcome.swapped()
