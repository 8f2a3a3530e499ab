"""Controlled bias probes: pairs built so that an unbiased judge has a known answer.

Probe kinds live in a registry [debiasing-strategies-study §3.5, App. A]. The built-in
kinds, one module each:

``POSITION`` (:mod:`~fairjudge.probes.position`)
    The same answer in both slots (expected: tie).
``STYLE`` / ``STYLE_BA`` (:mod:`~fairjudge.probes.style`)
    The same words as markdown and as plain prose (expected: tie); ``STYLE`` puts the
    markdown in slot a, its mirror ``STYLE_BA`` in slot b, so the two halves together give a
    position-averaged style bias.
``LENGTH`` (:mod:`~fairjudge.probes.length`)
    An answer and a content-free expansion of it, about 2.5 times longer (expected: tie).
``TRUNCATION`` (:mod:`~fairjudge.probes.truncation`)
    A complete answer and its first sentences, about 40% of its words (expected: the
    complete answer).
``MODEL_ORIGIN`` (:mod:`~fairjudge.probes.model_origin`)
    Two sources' answers to the same question, every pair of sources in turn (expected: tie).

:func:`build_probes` builds every requested kind from answers the user supplies,
deterministically for a seed; :func:`score_probes` turns a judge's verdicts on them (the
per-call table ``fairjudge judge`` writes) into signed bias scores
``b = P(target) - P(non-target)``. Records with a ``category`` (or ``topic``) give their
probes a ``category`` column; :func:`probe_outcomes` scores each verdict per judge and
strategy, and from it :func:`style_bias_by_topic` (Table 7), :func:`bias_by_category`
(Fig. 3), :func:`cross_bias_interactions` (Fig. 2) and :func:`cross_bias_correlation`
break the results down [debiasing-strategies-study §4.3, App. E]. A new kind is a
:class:`ProbeKind` passed to :func:`register_probe_kind`; :func:`factor_probe_kind` makes
one from data (a bias factor's name, definition and a function that rewrites an answer to
carry more or less of it).
"""

from fairjudge.probes._build import CATEGORY_FIELDS, PROBE_COLUMNS, answer_records, build_probes
from fairjudge.probes._factor import factor_probe_kind, register_table_kinds
from fairjudge.probes._registry import (
                                        AnswerRecord,
                                        BuildContext,
                                        Probe,
                                        ProbeKind,
                                        ProbeWarning,
                                        ScoreContext,
                                        ScoreGroup,
                                        get_probe_kind,
                                        probe_kinds,
                                        register_probe_kind,
                                        unregister_probe_kind,
)
from fairjudge.probes._score import (
                                        SCORE_COLUMNS,
                                        ProbeScore,
                                        ProbeScores,
                                        score_probes,
                                        to_probe_frame,
)
from fairjudge.probes._text import (
                                        content_words,
                                        has_markdown,
                                        markdown_to_prose,
                                        prose_to_markdown,
                                        split_sentences,
)

# The built-in kinds register themselves on import, in this order (the table order).
from fairjudge.probes.position import POSITION  # noqa: E402  isort: skip
from fairjudge.probes.style import STYLE, STYLE_POOLED  # noqa: E402  isort: skip
from fairjudge.probes.length import EXPANSION_RATIO, LENGTH  # noqa: E402  isort: skip
from fairjudge.probes.truncation import TRUNCATION, TRUNCATION_SHARE  # noqa: E402  isort: skip
from fairjudge.probes.model_origin import MODEL_ORIGIN  # noqa: E402  isort: skip

# After the kinds: it imports style, which must not register before position.
from fairjudge.probes._breakdown import (  # noqa: E402  isort: skip
                                        BREAKDOWN_COLUMNS,
                                        OUTCOME_COLUMNS,
                                        CrossBiasCorrelation,
                                        ProbeBreakdown,
                                        bias_by_category,
                                        cross_bias_correlation,
                                        cross_bias_interactions,
                                        probe_bias_table,
                                        probe_breakdown,
                                        probe_outcomes,
                                        style_bias_by_topic,
)

#: The built-in probe kinds, in table order.
BUILTIN_KINDS = (POSITION, STYLE, LENGTH, TRUNCATION, MODEL_ORIGIN)
#: Names of the built-in kinds (``STYLE`` also yields its mirror ``STYLE_BA``).
PROBE_KINDS = tuple(kind.name for kind in BUILTIN_KINDS)
#: ``bias_type`` values of the built-in kinds, in table order.
BIAS_TYPES = tuple(bias_type for kind in BUILTIN_KINDS for bias_type in kind.bias_types)

__all__ = [
    "BIAS_TYPES",
    "BREAKDOWN_COLUMNS",
    "BUILTIN_KINDS",
    "CATEGORY_FIELDS",
    "OUTCOME_COLUMNS",
    "CrossBiasCorrelation",
    "ProbeBreakdown",
    "bias_by_category",
    "cross_bias_correlation",
    "cross_bias_interactions",
    "probe_bias_table",
    "probe_breakdown",
    "probe_outcomes",
    "style_bias_by_topic",
    "EXPANSION_RATIO",
    "PROBE_COLUMNS",
    "PROBE_KINDS",
    "SCORE_COLUMNS",
    "STYLE_POOLED",
    "TRUNCATION_SHARE",
    "AnswerRecord",
    "BuildContext",
    "Probe",
    "ProbeKind",
    "ProbeScore",
    "ProbeScores",
    "ProbeWarning",
    "ScoreContext",
    "ScoreGroup",
    "answer_records",
    "build_probes",
    "content_words",
    "factor_probe_kind",
    "get_probe_kind",
    "register_table_kinds",
    "has_markdown",
    "markdown_to_prose",
    "probe_kinds",
    "prose_to_markdown",
    "register_probe_kind",
    "score_probes",
    "split_sentences",
    "to_probe_frame",
    "unregister_probe_kind",
]
