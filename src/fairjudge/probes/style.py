"""STYLE probes: the same words as markdown and as prose [debiasing-strategies-study App. A].

``STYLE`` puts the markdown in slot a and its mirror ``STYLE_BA`` in slot b, so the two
halves together give a position-averaged style bias. Whether an answer is markdown is the
``markdown > 0`` of :func:`fairjudge.data.text_features` (one definition,
:mod:`fairjudge.data._markdown`).
"""

from __future__ import annotations

import pandas as pd

from fairjudge.probes._registry import Probe, ProbeKind, ScoreGroup, register_probe_kind
from fairjudge.probes._text import has_markdown, markdown_to_prose, prose_to_markdown

STYLE_POOLED = "STYLE (position-averaged)"


def build_style(records, context) -> list[Probe]:
    """A markdown and a prose version of each selected answer, and the mirrored pair."""
    style, mirror = [], []
    for r in context.select(records):
        if has_markdown(r.answer):
            markdown, prose = r.answer, markdown_to_prose(r.answer)
            how = ("the record's markdown answer; the prose side strips headers, list "
                   "markers, bold/italic/code markup and joins items into sentences")
        else:
            markdown, prose = prose_to_markdown(r.answer), r.answer
            how = ("the record's prose answer; the markdown side turns each sentence "
                   "into a '- ' bullet with its lead-in bolded")
        if markdown == prose or not prose.strip():
            context.skip(r.id, "the markdown and prose versions coincide")
            continue
        n = len(style)
        style.append(Probe("STYLE", r.question, markdown, prose, "tie", "a",
                           f"markdown in slot a, prose in slot b, same words: {how} "
                           f"(record {r.id})", r.id))
        mirror.append(Probe("STYLE_BA", r.question, prose, markdown, "tie", "b",
                            f"mirror of STYLE-{n}: prose in slot a, markdown in slot b "
                            f"(record {r.id})", r.id))
    return style + mirror


def score_style(rows: pd.DataFrame, context) -> list[ScoreGroup]:
    """Target: the markdown side; a pooled group when both halves exist, resampling each
    record together with its mirror."""
    if "record_id" in rows.columns:
        record = rows["record_id"].where(rows["record_id"].notna(), rows["id"])
        rows = rows.assign(cluster="style:" + record.astype(str))
    groups = [ScoreGroup(bias_type, description, part)
              for bias_type, description in (("STYLE", "the markdown answer (slot a)"),
                                             ("STYLE_BA", "the markdown answer (slot b)"))
              if len(part := rows[rows["bias_type"] == bias_type])]
    if len(groups) == 2:
        groups.append(ScoreGroup(STYLE_POOLED, "the markdown answer (both slots)", rows))
    return groups


STYLE = register_probe_kind(ProbeKind(
    "STYLE", build_style, bias_types=("STYLE", "STYLE_BA"),
    definition="the same words as markdown and as plain prose",
    target="the markdown answer", score=score_style))
