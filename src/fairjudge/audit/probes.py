"""Controlled bias probes: build pairs with a known answer, judge them, score the biases.

See :mod:`fairjudge.audit._probes` and [debiasing-strategies-study §3.5, App. A].
"""

from fairjudge.audit._probes import (BIAS_TYPES, PROBE_COLUMNS, PROBE_KINDS, SCORE_COLUMNS,
                                     ProbeWarning, build_probes, content_words,
                                     markdown_to_prose, prose_to_markdown, score_probes,
                                     split_sentences)

__all__ = [
    "BIAS_TYPES",
    "PROBE_COLUMNS",
    "PROBE_KINDS",
    "SCORE_COLUMNS",
    "ProbeWarning",
    "build_probes",
    "content_words",
    "markdown_to_prose",
    "prose_to_markdown",
    "score_probes",
    "split_sentences",
]
