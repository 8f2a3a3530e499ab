"""MODEL_ORIGIN probes: two sources' answers to the same question [debiasing-strategies-study
App. A].

An unbiased judge ties. The pairs are round robin over every pair of sources. Scoring with
the judge's family gives self-preference (target: the judge's own family's answer);
without it, model preference per source pair ([debiasing-strategies-study §3.5], ``b_self``).
"""

from __future__ import annotations

import itertools

import numpy as np
import pandas as pd

from fairjudge._util._warnings import FairjudgeInputError
from fairjudge.probes._registry import Probe, ProbeKind, ScoreGroup, register_probe_kind


def build_model_origin(records, context) -> list[Probe]:
    """For every unordered pair of sources (alphabetical), the two sources' answers to the
    same question; source pairs take turns and each starts at a different question."""
    sources = sorted({r.source for r in records if r.source is not None})
    if len(sources) < 2:
        context.skip(None, f"fewer than two sources ({len(sources)}); records need a "
                     "`source` column naming the model that wrote each answer")
        return []
    questions: dict[str, dict[str, list]] = {}
    for r in records:
        if r.source is not None:
            questions.setdefault(r.question, {}).setdefault(r.source, []).append(r)
    per_pair = []
    for k, (x, y) in enumerate(itertools.combinations(sources, 2)):
        shared = [q for q, by in questions.items() if x in by and y in by]
        if shared:
            shift = k % len(shared)
            shared = shared[shift:] + shared[:shift]
        candidates = [(q, rx, ry) for q in shared
                      for rx, ry in zip(questions[q][x], questions[q][y])]
        per_pair.append(((x, y), candidates))
    if not any(c for _, c in per_pair):
        context.skip(None, "no question was answered by two different sources")
        return []
    interleaved = [(pair, cand[r]) for r in range(max(len(c) for _, c in per_pair))
                   for pair, cand in per_pair if r < len(cand)]
    if context.cap is not None:
        interleaved = interleaved[:context.cap]
    swaps = {}
    for (x, y), _ in per_pair:
        count = sum(pair == (x, y) for pair, _ in interleaved)
        swaps[(x, y)] = list(context.swaps(count, key=f"MODEL_ORIGIN:{x}\x1f{y}"))
    probes = []
    for (x, y), (q, rx, ry) in interleaved:
        first, second = (ry, rx) if swaps[(x, y)].pop(0) else (rx, ry)
        probes.append(Probe(
            "MODEL_ORIGIN", q, first.answer, second.answer, "tie", None,
            f"independent answers to the same question by {first.source} (slot a, record "
            f"{first.id}) and {second.source} (slot b, record {second.id}); slots drawn "
            "from the seed", f"{first.id}+{second.id}", first.source, second.source))
    return probes


def score_model_origin(rows: pd.DataFrame, context) -> list[ScoreGroup]:
    """Self-preference when the judge's family is a source, else one model-preference group
    per source pair with the alphabetically first source as the target."""
    if not {"source_a", "source_b"} <= set(rows.columns):
        raise FairjudgeInputError("`probes` has MODEL_ORIGIN rows but no `source_a`/`source_b` "
                                  "columns")
    sa = rows["source_a"].astype(str)
    sb = rows["source_b"].astype(str)
    family_name = context.judge_family
    if family_name is not None:
        family = family_name.strip().lower()
        is_a, is_b = sa.str.lower() == family, sb.str.lower() == family
        own = rows[is_a | is_b].copy()
        if len(own):
            own["target"] = np.where(is_a[is_a | is_b], "a", "b")
            return [ScoreGroup(f"MODEL_ORIGIN self-preference ({family_name})",
                               f"the answer by {family_name} (the judge's family)", own)]
        context.warn(
            f"no MODEL_ORIGIN probe has an answer by `judge_family`={family_name!r} (sources: "
            f"{', '.join(sorted(set(sa) | set(sb)))}); reporting model preference per source "
            "pair instead of self-preference")
    groups = []
    pair = pd.Series([tuple(sorted(p)) for p in zip(sa, sb)], index=rows.index)
    for first, second in sorted(set(pair)):
        part = rows[pair == (first, second)].copy()
        part["target"] = np.where(part["source_a"].astype(str) == first, "a", "b")
        groups.append(ScoreGroup(f"MODEL_ORIGIN {first} vs {second}",
                                 f"the answer by {first}", part))
    return groups


MODEL_ORIGIN = register_probe_kind(ProbeKind(
    "MODEL_ORIGIN", build_model_origin,
    definition="independent answers by two different models to the same question",
    target="the answer by the judge's family (or the first source)",
    score=score_model_origin, needs_target=False))
