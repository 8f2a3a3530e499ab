"""Probe kinds made of an answer and a rewrite of it, including kinds defined by data.

LENGTH is one (the rewrite is a content-free expansion); a bias factor discovered from
data (HUB-J) is another: a name, a definition and a function that rewrites an answer to
carry more (or less) of the factor become a kind with :func:`factor_probe_kind`.
"""

from __future__ import annotations

from collections.abc import Callable, Sequence
from dataclasses import dataclass

from fairjudge._util._warnings import FairjudgeInputError
from fairjudge.probes._registry import AnswerRecord, BuildContext, Probe, ProbeKind


@dataclass(frozen=True)
class Rewrite:
    """A rewritten answer and how it was made (for the construction notes)."""

    text: str
    how: str


def rewrite_pairs(records: Sequence[AnswerRecord], context: BuildContext,
                  rewrite: Callable[[AnswerRecord, BuildContext], Rewrite | None], *,
                  rewrite_is_target: Callable[[AnswerRecord, Rewrite], bool],
                  notes: Callable[[AnswerRecord, Rewrite, str, str, str], str],
                  expected: str = "tie") -> list[Probe]:
    """One probe per selected record: the answer and its rewrite, slots seeded and balanced.

    Parameters
    ----------
    records, context
        As a kind's builder receives them; ``context.cap`` is applied first.
    rewrite : callable
        ``rewrite(record, context) -> Rewrite``, or None after ``context.skip(...)`` for a
        record it cannot use.
    rewrite_is_target : callable
        ``rewrite_is_target(record, rewrite) -> bool``: whether the rewritten side is the
        target (else the original is).
    notes : callable
        ``notes(record, rewrite, slot_original, slot_rewrite, target) -> str``.
    expected : {"tie", "target"}
        The expected verdict: a tie, or the target side.
    """
    built = []
    for record in context.select(records):
        rewritten = rewrite(record, context)
        if rewritten is not None:
            built.append((record, rewritten))
    probes = []
    for (record, rewritten), swap in zip(built, context.swaps(len(built))):
        a, b = (rewritten.text, record.answer) if swap else (record.answer, rewritten.text)
        slot_original, slot_rewrite = ("b", "a") if swap else ("a", "b")
        target = slot_rewrite if rewrite_is_target(record, rewritten) else slot_original
        probes.append(Probe(
            context.kind, record.question, a, b, target if expected == "target" else "tie",
            target, notes(record, rewritten, slot_original, slot_rewrite, target), record.id))
    return probes


def factor_probe_kind(name: str, definition: str, rewrite: Callable[[str, str], str | None],
                      *, direction: str = "more", expected: str = "tie") -> ProbeKind:
    """A probe kind for a bias factor given as data: pairs of an answer and a rewrite of it.

    Each record gives one probe: its answer and ``rewrite(question, answer)``, in slots
    drawn from the seed and balanced over the kind's probes (like LENGTH). The target is
    the side carrying more of the factor, so a positive bias score means the judge prefers
    more of it. Register the result with :func:`register_probe_kind`.

    Parameters
    ----------
    name : str
        Upper-case name (``A-Z``, digits, ``_``), e.g. ``"HEDGING"``.
    definition : str
        What the factor is, in a sentence; kept in the kind and in every probe's notes.
    rewrite : callable
        ``rewrite(question, answer) -> str or None``: the answer rewritten to carry more of
        the factor (``direction="more"``) or less of it (``"less"``), the rest unchanged;
        None skips the record (with a :class:`ProbeWarning`).
    direction : {"more", "less"}
        Whether ``rewrite`` adds the factor (the rewrite is the target) or removes it (the
        original is the target).
    expected : {"tie", "target"}
        ``"tie"`` when the factor should not matter to a judge (a bias); ``"target"`` when
        more of it is genuinely better (a control, which then reports ``accuracy``).

    Returns
    -------
    ProbeKind

    Raises
    ------
    ValueError, TypeError
        If an argument breaks its rule; while building, if ``rewrite`` returns something
        other than a non-empty string or None.

    Examples
    --------
    >>> hedging = factor_probe_kind(
    ...     "HEDGING", "the answer qualifies its claims",
    ...     lambda question, answer: "It may be that " + answer[0].lower() + answer[1:])
    >>> hedging.name, hedging.target
    ('HEDGING', 'the answer with more HEDGING')
    """
    if not isinstance(definition, str) or not definition.strip():
        raise FairjudgeInputError(f"`definition` must be a non-empty string; got {definition!r}")
    if not callable(rewrite):
        raise TypeError(f"`rewrite` must be a callable rewrite(question, answer) -> str or "
                        f"None; got {type(rewrite).__name__}")
    if direction not in ("more", "less"):
        raise FairjudgeInputError(f"`direction` must be more or less; got {direction!r}")
    definition = definition.strip()

    def apply(record: AnswerRecord, context: BuildContext) -> Rewrite | None:
        text = rewrite(record.question, record.answer)
        if text is None:
            context.skip(record.id, "`rewrite` returned None")
            return None
        if not isinstance(text, str) or not text.strip():
            raise FairjudgeInputError(f"kind {name}: `rewrite` returned {text!r} for record "
                                      f"{record.id!r}; it must return a non-empty string or None")
        if text.strip() == record.answer:
            context.skip(record.id, "the rewrite equals the answer")
            return None
        return Rewrite(text.strip(), f"rewritten to carry {direction} {name}")

    def notes(record, rewritten, slot_original, slot_rewrite, target):
        return (f"slot {slot_original} is the answer of record {record.id}; slot "
                f"{slot_rewrite} is it {rewritten.how} ({definition}); target = the side "
                f"with more {name} ({target})")

    def build(records, context):
        return rewrite_pairs(records, context, apply,
                             rewrite_is_target=lambda record, rewritten: direction == "more",
                             notes=notes, expected=expected)

    return ProbeKind(name, build, definition=definition, target=f"the answer with more {name}",
                     expected=expected)


def _scoring_only(question: str, answer: str):
    return None


def register_table_kinds(probes) -> list[str]:
    """Register the data-defined kinds a probe table describes and the registry lacks:
    every ``bias_type`` of rows with a ``factor_definition`` (as
    :func:`fairjudge.discovery.factor_probes` writes) becomes a :func:`factor_probe_kind`.
    Kinds made from data thus travel with their probes; building more of them needs their
    rewrite, so these registrations can only score. Returns the names registered."""
    from fairjudge.probes._registry import kind_of_bias_type, register_probe_kind

    if "factor_definition" not in getattr(probes, "columns", ()):
        return []
    added = []
    described = probes.dropna(subset=["factor_definition"])
    for bias_type, definition in described.groupby("bias_type")["factor_definition"].first(
            ).items():
        if kind_of_bias_type(str(bias_type)) is None and str(definition).strip():
            register_probe_kind(factor_probe_kind(str(bias_type), str(definition),
                                                  _scoring_only))
            added.append(str(bias_type))
    return added
