"""Surface features of answer texts: length and markdown formatting.

These are the covariates that judge-bias studies use most: judges are known to prefer longer
answers and answers dressed up with markdown (headers, lists, bold). Every feature is a plain
count, deterministic and independent of a markdown renderer.

What counts as markdown is defined once, in :mod:`fairjudge.data._markdown`, and the STYLE
probes use the same definition: markdown is counted in *prose* only (never inside a fenced
code block or an inline code span), and inline code, links and tables count as formatting.
"""

from __future__ import annotations

import math
from collections.abc import Iterable

import pandas as pd

from fairjudge.data._markdown import markdown_counts

#: The markdown count columns of :func:`text_features`, whose sum is ``markdown``.
MARKDOWN_COLUMNS = ("md_headers", "md_list_items", "md_bold", "md_code_blocks",
                    "md_inline_code", "md_links", "md_tables")
#: Columns of :func:`text_features`, in order.
FEATURE_COLUMNS = ("length", "chars", *MARKDOWN_COLUMNS, "markdown")


def _as_text(value, position) -> str:
    if value is None or value is pd.NA:
        return ""
    if isinstance(value, float) and math.isnan(value):
        return ""
    if not isinstance(value, str):
        raise TypeError(
            f"`texts` must hold strings (or None/NaN for a missing text); element "
            f"{position!r} is {type(value).__name__}: {value!r}"
        )
    return value


def _count(text: str) -> tuple[int, ...]:
    counts = markdown_counts(text)
    return (len(text.split()), len(text), counts.headers, counts.list_items, counts.bold,
            counts.code_blocks, counts.inline_code, counts.links, counts.tables)


def text_features(texts) -> pd.DataFrame:
    """Length and markdown counts of each text.

    Parameters
    ----------
    texts : pandas.Series or iterable of str
        The texts. ``None``, ``NaN`` and ``pandas.NA`` count as the empty text; any other
        non-string element is an error.

    Returns
    -------
    pandas.DataFrame
        One row per text, with the index of ``texts`` if it is a Series (else ``0..n-1``),
        and integer columns:

        ``length``
            Number of words: whitespace-separated tokens (``str.split()``).
        ``chars``
            Number of characters (Unicode code points), whitespace included.
        ``md_headers``
            ATX header lines: 0-3 spaces, 1 to 6 ``#``, then a space or tab.
        ``md_list_items``
            Lines starting, after optional indentation (so nested items count), with ``-``,
            ``*`` or ``+``, or with a number followed by ``.`` or ``)``, and then a space or
            tab; a thematic break (``- - -``) is not an item.
        ``md_bold``
            Bold spans ``**...**`` or ``__...__`` on one line, opening and closing on a
            non-space character, with no ``**`` (or ``__``) inside; underscore spans may not
            touch a letter or digit outside (``snake__case__name`` is not bold). Text inside
            inline code is ignored.
        ``md_code_blocks``
            Fenced code blocks: an opening fence of 3+ backticks or tildes and the next
            line that is only a fence of the same kind (at least as long). A fence that
            is never closed does not count, and its lines are prose.
        ``md_inline_code``
            Inline code spans `` `...` `` on one line.
        ``md_links``
            Links ``[text](url)`` and images ``![alt](url)``, outside inline code.
        ``md_tables``
            Tables: runs of consecutive lines that start and end with ``|``.
        ``markdown``
            The sum of the seven ``md_*`` counts.

        Every markdown count skips the lines inside fenced code blocks; the definition is
        :mod:`fairjudge.data._markdown`, shared with the STYLE probes.

    Raises
    ------
    TypeError
        If ``texts`` is a single string (pass a list of one) or holds a non-string element.

    Examples
    --------
    >>> doc = "# Title\\n\\n- **one**\\n  - two\\n1. three\\n\\n```py\\n# not a header\\n```"
    >>> text_features([doc, None]).loc[0].to_dict()  # doctest: +NORMALIZE_WHITESPACE
    {'length': 14, 'chars': 61, 'md_headers': 1, 'md_list_items': 3, 'md_bold': 1,
     'md_code_blocks': 1, 'md_inline_code': 0, 'md_links': 0, 'md_tables': 0, 'markdown': 6}
    >>> int(text_features([doc, None]).loc[1, "markdown"])
    0
    """
    if isinstance(texts, (str, bytes)):
        raise TypeError("`texts` must be a Series or a list of strings; got a single string "
                        "(wrap it in a list)")
    if isinstance(texts, pd.Series):
        index = texts.index
        values = list(texts.items())
    else:
        if not isinstance(texts, Iterable):
            raise TypeError(f"`texts` must be a Series or an iterable of strings; got "
                            f"{type(texts).__name__}")
        values = list(enumerate(texts))
        index = pd.RangeIndex(len(values))
    rows = [_count(_as_text(value, key)) for key, value in values]
    frame = pd.DataFrame(rows, index=index, columns=list(FEATURE_COLUMNS[:-1]), dtype="int64")
    frame["markdown"] = frame[list(MARKDOWN_COLUMNS)].sum(axis=1).astype("int64")
    return frame
