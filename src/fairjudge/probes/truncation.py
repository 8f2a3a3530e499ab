"""TRUNCATION probes: a complete answer and its first sentences [debiasing-strategies-study
App. A].

A control, not a bias: the complete answer is genuinely better, so the expected verdict
and the target are the complete side and the score table reports ``accuracy``.
"""

from __future__ import annotations

from fairjudge.probes._registry import Probe, ProbeKind, register_probe_kind
from fairjudge.probes._text import _sentence_spans, n_words

#: Share of the answer's words a TRUNCATION probe keeps [debiasing-strategies-study App. A].
TRUNCATION_SHARE = 0.4


def truncate(answer: str) -> tuple[str, int, int] | None:
    """The first k sentences closest to 40% of the words (1 <= k < n); None if n < 3.

    Returns the prefix, k and the number of sentences n.
    """
    spans = _sentence_spans(answer)
    if len(spans) < 3:
        return None
    goal = TRUNCATION_SHARE * n_words(answer)
    best = min(range(1, len(spans)),
               key=lambda k: (abs(n_words(answer[:spans[k - 1][1]]) - goal), k))
    return answer[:spans[best - 1][1]], best, len(spans)


def build_truncation(records, context) -> list[Probe]:
    """Each answer with at least 3 sentences against its prefix; slots seeded and balanced.

    The cap applies to the eligible answers only, so it is never spent on short ones.
    """
    cuts = {}
    for r in records:
        cut = truncate(r.answer)
        if cut is None:
            context.skip(r.id, f"fewer than 3 sentences ({len(_sentence_spans(r.answer))})")
        else:
            cuts[r.id] = cut
    chosen = context.select([r for r in records if r.id in cuts])
    probes = []
    for r, swap in zip(chosen, context.swaps(len(chosen))):
        short, k, n_sent = cuts[r.id]
        complete = "b" if swap else "a"
        a, b = (short, r.answer) if swap else (r.answer, short)
        ws, wc = n_words(short), n_words(r.answer)
        probes.append(Probe(
            "TRUNCATION", r.question, a, b, complete, complete,
            f"slot {'a' if swap else 'b'} is the first {k} of {n_sent} sentences of the "
            f"answer of record {r.id} ({ws} of {wc} words, {ws / wc:.0%}), cut at a "
            f"sentence boundary; slot {complete} is complete and the expected winner", r.id))
    return probes


TRUNCATION = register_probe_kind(ProbeKind(
    "TRUNCATION", build_truncation,
    definition="a complete answer and its first sentences, about 40% of its words",
    target="the complete answer", expected="target"))
