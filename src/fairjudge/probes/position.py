"""POSITION probes: the same answer in both slots [debiasing-strategies-study App. A].

An unbiased judge ties; any preference is for a slot. The target is the answer the judge
saw first: from the ``order`` of each call when the verdicts are per call, else slot a
(``b_pos``, [debiasing-strategies-study §3.5]).
"""

from __future__ import annotations

from fairjudge.probes._registry import Probe, ProbeKind, ScoreGroup, register_probe_kind
from fairjudge.probes._text import n_words


def build_position(records, context) -> list[Probe]:
    """The answer of each selected record in both slots; expected tie, target slot a."""
    return [Probe("POSITION", r.question, r.answer, r.answer, "tie", "a",
                  f"the answer of record {r.id} in both slots ({n_words(r.answer)} words)",
                  r.id)
            for r in context.select(records)]


def score_position(rows, context) -> list[ScoreGroup]:
    """Target: the side shown first (per call), or slot a when the order is unknown."""
    rows = rows.assign(target=rows["shown_first"].where(rows["shown_first"].notna(),
                                                        rows["target"]))
    if context.per_call:
        description = "the answer shown first"
    else:
        description = "slot a (the answer shown first)"
        if context.from_strategy:
            context.warn(
                "POSITION verdicts are one aggregate per probe from a judging strategy, which "
                "shows each pair in an order hashed from its id or in both orders; without "
                "the order shown, slot a is taken as shown first, so the POSITION score is "
                "the strategy's residual slot-a preference (about 0 by design), not the "
                "judge's first-position lean; pass the per-call table (result.calls, or the "
                "file `fairjudge judge` writes) instead")
    return [ScoreGroup("POSITION", description, rows)]


POSITION = register_probe_kind(ProbeKind(
    "POSITION", build_position,
    definition="the same answer in both slots; any preference is for a position",
    target="the answer shown first", score=score_position))
