"""LENGTH probes: an answer and a content-free expansion of it [debiasing-strategies-study
App. A].

An unbiased judge ties. The target is the side with more words, whichever slot it is in
(``b_verb`` is length-aware, [debiasing-strategies-study §3.5]).
"""

from __future__ import annotations

from collections.abc import Sequence

import numpy as np

from fairjudge._util._rng import content_seed
from fairjudge._util._warnings import FairjudgeInputError
from fairjudge.data._markdown import is_header
from fairjudge.data._statement_banks import ELABORATION_CLAUSES
from fairjudge.probes._factor import Rewrite, rewrite_pairs
from fairjudge.probes._registry import Probe, ProbeKind, register_probe_kind
from fairjudge.probes._text import _sentence_spans, n_words

#: Length ratio a LENGTH expansion aims at (the study's expansions were 2.8x on average).
EXPANSION_RATIO = 2.5


def expand(answer: str, clause_order: Sequence[int]) -> tuple[str, int] | None:
    """Append elaboration clauses to sentences, round robin, to about 2.5x the words.

    Returns the expanded text and the number of clauses, or None when no sentence can take
    a clause (code blocks, headers, table rows and sentences ending in ``?``, ``:`` or a
    quote are left alone).
    """
    spans = _sentence_spans(answer)
    eligible = []
    for index, (s, e) in enumerate(spans):
        sentence = answer[s:e]
        if sentence.lstrip().startswith(("```", "~~~", "|")) or is_header(sentence):
            continue  # a code block, table row or header takes no clause
        if sentence[-1] in ".!" or sentence[-1].isalnum() or sentence[-1] in "*`)%":
            eligible.append(index)
    if not eligible:
        return None
    words = n_words(answer)
    goal = EXPANSION_RATIO * words
    per_sentence: dict[int, list[str]] = {i: [] for i in eligible}
    total, n_clauses = words, 0
    while True:
        sentence = eligible[n_clauses % len(eligible)]
        clause = ELABORATION_CLAUSES[clause_order[n_clauses % len(clause_order)]]
        added = n_words(clause) + (1 if len(per_sentence[sentence]) == 1 else 0)  # "and"
        if n_clauses and abs(total + added - goal) >= abs(total - goal):
            break
        per_sentence[sentence].append(clause)
        total += added
        n_clauses += 1
    out = answer
    for index in sorted(per_sentence, reverse=True):
        clauses = per_sentence[index]
        if not clauses:
            continue
        s, e = spans[index]
        sentence = answer[s:e]
        stem, end = (sentence[:-1], sentence[-1]) if sentence[-1] in ".!" else (sentence, "")
        if len(clauses) == 1:
            tail = clauses[0]
        elif len(clauses) == 2:
            tail = f"{clauses[0]} and {clauses[1]}"
        else:
            tail = ", ".join(clauses[:-1]) + f", and {clauses[-1]}"
        out = out[:s] + f"{stem}, {tail}{end}" + out[e:]
    return out, n_clauses


def _lengthen(record, context) -> Rewrite | None:
    if context.rewriter is not None:
        longer = context.rewriter(record.question, record.answer)
        if not isinstance(longer, str) or not longer.strip():
            raise FairjudgeInputError(
                f"`rewriter` returned {longer!r} for record {record.id!r}; it "
                "must return a non-empty string")
        longer, how = longer.strip(), "rewritten by `rewriter`"
    else:
        order_rng = np.random.default_rng(content_seed("probe-clauses", context.seed,
                                                       record.id, record.answer))
        expanded = expand(record.answer, order_rng.permutation(len(ELABORATION_CLAUSES)))
        if expanded is None:
            context.skip(record.id, "no sentence can take an elaboration clause")
            return None
        longer, n_clauses = expanded
        how = f"{n_clauses} content-free elaboration clauses appended to its sentences"
    if n_words(longer) == n_words(record.answer):
        context.skip(record.id, "the rewritten answer has the same number of words")
        return None
    return Rewrite(longer, how)


def _notes(record, rewritten, slot_original, slot_rewrite, target) -> str:
    w0, w1 = n_words(record.answer), n_words(rewritten.text)
    return (f"slot {slot_original} is the answer of record {record.id} ({w0} words); slot "
            f"{slot_rewrite} is it {rewritten.how} ({w1} words, {w1 / w0:.2f}x); no new "
            f"content; target = the longer side ({target})")


def build_length(records, context) -> list[Probe]:
    """Each selected answer and its expansion (``context.rewriter``'s output, or clauses
    from ``ELABORATION_CLAUSES`` in a seeded order); target the side with more words."""
    return rewrite_pairs(
        records, context, _lengthen, notes=_notes,
        rewrite_is_target=lambda record, rewritten: (n_words(rewritten.text)
                                                     > n_words(record.answer)))


LENGTH = register_probe_kind(ProbeKind(
    "LENGTH", build_length,
    definition="an answer and a content-free expansion of it, about 2.5 times longer",
    target="the longer answer"))
