"""Surface features of answer texts: length and markdown formatting.

These are the covariates that judge-bias studies use most: judges are known to prefer longer
answers and answers dressed up with markdown (headers, lists, bold). Every feature is a plain
count computed line by line with fixed regular expressions, so the result is deterministic and
does not depend on a markdown renderer.

Markdown is counted in *prose* only: lines inside a fenced code block (between a pair of
```` ``` ```` fences) are skipped, because ``# comment`` in Python or ``- item`` in YAML is code,
not formatting the judge sees as a header or a list. Inline code spans are skipped for the
same reason when counting bold.
"""

from __future__ import annotations

import math
import re
from collections.abc import Iterable

import pandas as pd

#: Columns of :func:`text_features`, in order.
FEATURE_COLUMNS = ("length", "chars", "md_headers", "md_list_items", "md_bold",
                   "md_code_blocks", "markdown")

_FENCE = re.compile(r"^[ \t]*```")
_HEADER = re.compile(r"^#{1,6} ")
# A bullet (-, *, +) or an ordinal (1. or 1)) after optional indentation, then a space.
_LIST_ITEM = re.compile(r"^[ \t]*(?:[-*+]|\d+[.)]) ")
_INLINE_CODE = re.compile(r"`[^`]*`")
# A bold span opens and closes on non-space characters on the same line and holds no nested
# delimiter pair, so a stray "** " cannot swallow the rest of the line. Underscore bold must not
# touch a word character on the outside, so ``snake__case__name`` is not bold.
_BOLD_STARS = re.compile(r"\*\*(?=[^\s*])(?:[^*]|\*(?!\*))*?(?<=\S)\*\*")
_BOLD_UNDERSCORES = re.compile(r"(?<!\w)__(?=[^\s_])(?:[^_]|_(?!_))*?(?<=\S)__(?!\w)")


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


def _count(text: str) -> tuple[int, int, int, int, int, int]:
    headers = list_items = bold = 0
    fences = 0
    in_code = False
    prose_lines = []
    code_lines_since_open: list[str] = []
    for line in text.splitlines():
        if _FENCE.match(line):
            if in_code:
                fences += 1
                code_lines_since_open = []
            in_code = not in_code
            continue
        if in_code:
            code_lines_since_open.append(line)
        else:
            prose_lines.append(line)
    # An opening fence that is never closed is not a block: its lines are prose after all.
    if in_code:
        prose_lines.extend(code_lines_since_open)
    for line in prose_lines:
        if _HEADER.match(line):
            headers += 1
        if _LIST_ITEM.match(line):
            list_items += 1
        stripped = _INLINE_CODE.sub(" ", line)
        bold += len(_BOLD_STARS.findall(stripped)) + len(_BOLD_UNDERSCORES.findall(stripped))
    return len(text.split()), len(text), headers, list_items, bold, fences


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
            Lines starting with 1 to 6 ``#`` followed by a space (ATX headers).
        ``md_list_items``
            Lines starting, after optional indentation (so nested items count), with ``-``,
            ``*`` or ``+``, or with a number followed by ``.`` or ``)``, and then a space.
        ``md_bold``
            Bold spans ``**...**`` or ``__...__`` on one line, opening and closing on a
            non-space character, with no ``**`` (or ``__``) inside; underscore spans may not
            touch a letter or digit outside (``snake__case__name`` is not bold). Text inside
            inline code is ignored.
        ``md_code_blocks``
            Fenced code blocks: pairs of lines starting (after optional indentation) with
            ```` ``` ````. An unclosed last fence does not count.
        ``markdown``
            ``md_headers + md_list_items + md_bold + md_code_blocks``.

        Header, list and bold counts skip the lines inside fenced code blocks.

    Raises
    ------
    TypeError
        If ``texts`` is a single string (pass a list of one) or holds a non-string element.

    Examples
    --------
    >>> doc = "# Title\\n\\n- **one**\\n  - two\\n1. three\\n\\n```py\\n# not a header\\n```"
    >>> text_features([doc, None]).loc[0].to_dict()  # doctest: +NORMALIZE_WHITESPACE
    {'length': 14, 'chars': 61, 'md_headers': 1, 'md_list_items': 3, 'md_bold': 1,
     'md_code_blocks': 1, 'markdown': 6}
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
    frame["markdown"] = (frame["md_headers"] + frame["md_list_items"] + frame["md_bold"]
                         + frame["md_code_blocks"]).astype("int64")
    return frame
