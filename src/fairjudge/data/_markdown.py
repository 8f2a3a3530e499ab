"""The one definition of markdown formatting, shared by the covariates and the STYLE probes.

:func:`fairjudge.data.text_features` counts markdown with it (the ``md_*`` covariates) and the
STYLE probes (:mod:`fairjudge.probes.style`) use it to decide whether an answer is markdown
or prose and to convert one into the other, so "has markdown" means the same thing to both:
a text the STYLE converter turns into prose has ``markdown == 0``, and one it turns into
markdown has ``markdown > 0``.

The definition is line based, uses fixed regular expressions (no renderer) and follows
CommonMark/GitHub markdown where that is cheap:

========================= ================================================================
construct                 rule
========================= ================================================================
text lines                ``text.split("\\n")``; a trailing ``\\r`` counts as whitespace
fenced code block         an opening line of 3+ backticks or 3+ tildes (any indentation,
                          then an optional info string, which for backtick fences holds no
                          backtick) and the next line that is only a fence of the same
                          character at least as long. An opening fence that is never
                          closed opens nothing: its lines are prose.
prose                     every line outside fenced code blocks (the fence lines included
                          in the block). Markdown is counted in prose only: ``# comment``
                          in Python or ``- item`` in YAML is code, not formatting.
header                    0-3 spaces, 1-6 ``#``, then a space or tab (ATX header)
list item                 optional indentation (so nested items count), ``-``, ``*``,
                          ``+`` or 1-9 digits and ``.`` or ``)``, then a space or tab; a
                          thematic break (``- - -``, ``* * *``) is not an item
table row                 a line that starts and ends with ``|`` (indentation and trailing
                          whitespace aside); a *table* is a run of consecutive table rows
inline code span          `` `...` ``: one backtick, at least one character that is not a
                          backtick, one backtick, on one line. Bold and links are looked
                          for only after the code spans are removed.
bold                      ``**...**`` or ``__...__`` on one line, opening and closing on a
                          non-space character, with no ``**`` (``__``) inside; underscore
                          bold does not touch a letter or digit outside
                          (``snake__case__name`` is not bold)
link                      ``[text](url)`` or an image ``![alt](url)`` on one line, not glued
                          to a preceding letter or digit (``k2[C2H4](x)`` is a formula)
========================= ================================================================

Not counted: italics and strike-through (a lone ``*`` or ``_`` pair is too often arithmetic,
a footnote marker or part of an identifier in plain text), block quotes, thematic breaks,
setext headers, bare URLs and indented (unfenced) code. The STYLE converter still removes
emphasis, quote markers, rules and setext underlines when it writes prose, so the prose side
is plain text.

Examples
--------
>>> counts = markdown_counts("## Use\\n- run `make`\\n| a | b |\\n|---|---|\\nSee [docs](u).")
>>> counts.as_dict()  # doctest: +NORMALIZE_WHITESPACE
{'headers': 1, 'list_items': 1, 'bold': 0, 'code_blocks': 0, 'inline_code': 1,
 'links': 1, 'tables': 1}
>>> markdown_counts("x = 2 * 3 * 4, plain prose").total
0
"""

from __future__ import annotations

import re
from collections.abc import Sequence
from dataclasses import asdict, dataclass

#: An opening code fence: indentation, the fence, an optional info string (language tag).
FENCE_OPEN = re.compile(r"^[ \t]*(?P<fence>`{3,}|~{3,})[ \t]*(?P<info>.*?)\s*$")
_FENCE_ONLY = re.compile(r"^[ \t]*(`{3,}|~{3,})\s*$")
#: An ATX header line; ``title`` is its text without the closing ``#`` run.
HEADER = re.compile(r"^ {0,3}#{1,6}[ \t]+(?P<title>.*?)[ \t]*#*\s*$")
_HEADER_START = re.compile(r"^ {0,3}#{1,6}[ \t]")
#: A bullet list item; ``indent`` and ``content`` are captured.
BULLET = re.compile(r"^(?P<indent>[ \t]*)[-*+][ \t]+(?P<content>.*?)\s*$")
#: A numbered list item; ``indent``, ``number`` and ``content`` are captured.
ORDERED = re.compile(r"^(?P<indent>[ \t]*)(?P<number>\d{1,9})[.)][ \t]+(?P<content>.*?)\s*$")
_LIST_START = re.compile(r"^[ \t]*(?:[-*+]|\d{1,9}[.)])[ \t]")
#: A thematic break (horizontal rule): three or more ``-``, ``*`` or ``_``, maybe spaced.
THEMATIC_BREAK = re.compile(r"^[ \t]*([-*_])(?:[ \t]*\1){2,}\s*$")
#: A table row: a line that starts and ends with a pipe.
TABLE_ROW = re.compile(r"^[ \t]*\|.*\|\s*$")
#: The delimiter row under a table header (``|---|:--:|``).
TABLE_SEPARATOR = re.compile(
    r"^[ \t]*\|?[ \t]*:?-{2,}:?[ \t]*(?:\|[ \t]*:?-{2,}:?[ \t]*)*\|?\s*$")
#: A block quote line; ``content`` is the quoted text.
QUOTE = re.compile(r"^[ \t]*>[ \t]?(?P<content>.*)$")

#: An inline code span on one line.
INLINE_CODE = re.compile(r"`[^`\n]+`")
#: Bold with stars; ``inner`` is the bold text.
BOLD_STARS = re.compile(r"\*\*(?P<inner>(?=[^\s*])(?:[^*\n]|\*(?!\*))*?(?<=\S))\*\*")
#: Bold with underscores, not touching a letter or digit outside; ``inner`` is the bold text.
BOLD_UNDERSCORES = re.compile(
    r"(?<!\w)__(?P<inner>(?=[^\s_])(?:[^_\n]|_(?!_))*?(?<=\S))__(?!\w)")
#: A link or image; ``text`` and ``url`` are captured.
LINK = re.compile(r"(?<!\w)!?\[(?P<text>[^\]\n]*)\]\((?P<url>[^)\n]*)\)")


def is_header(line: str) -> bool:
    """Whether a line is an ATX header (0-3 spaces, 1-6 ``#``, a space or tab)."""
    return bool(_HEADER_START.match(line))


def is_list_item(line: str) -> bool:
    """Whether a line is a bullet or numbered list item (not a thematic break)."""
    return bool(_LIST_START.match(line)) and not THEMATIC_BREAK.match(line)


def is_table_row(line: str) -> bool:
    """Whether a line is a table row (starts and ends with ``|``)."""
    return bool(TABLE_ROW.match(line))


@dataclass(frozen=True)
class FencedBlock:
    """A fenced code block of a text split into lines.

    Attributes
    ----------
    start, end : int
        Line index of the opening and of the closing fence.
    info : str
        The info string of the opening fence (usually a language tag; may be empty).
    """

    start: int
    end: int
    info: str


def _closes(line: str, fence: str) -> bool:
    bare = _FENCE_ONLY.match(line)
    return bool(bare) and bare.group(1)[0] == fence[0] and len(bare.group(1)) >= len(fence)


def fenced_blocks(lines: Sequence[str]) -> list[FencedBlock]:
    """The fenced code blocks of a text given as lines (see the module's definition).

    Examples
    --------
    >>> fenced_blocks(["intro", "```py", "# code", "```", "```never closed"])
    [FencedBlock(start=1, end=3, info='py')]
    """
    blocks, i = [], 0
    while i < len(lines):
        opening = FENCE_OPEN.match(lines[i])
        if opening and not (opening["fence"][0] == "`" and "`" in opening["info"]):
            close = next((j for j in range(i + 1, len(lines))
                          if _closes(lines[j], opening["fence"])), None)
            if close is not None:
                blocks.append(FencedBlock(i, close, opening["info"]))
                i = close + 1
                continue
        i += 1
    return blocks


def prose_lines(lines: Sequence[str]) -> list[tuple[int, str]]:
    """``(index, line)`` of the lines outside fenced code blocks, in order."""
    inside = set()
    for block in fenced_blocks(lines):
        inside.update(range(block.start, block.end + 1))
    return [(i, line) for i, line in enumerate(lines) if i not in inside]


@dataclass(frozen=True)
class MarkdownCounts:
    """Markdown constructs in one text, counted in prose only (see the module's definition).

    Attributes
    ----------
    headers, list_items : int
        Header lines and list-item lines.
    bold : int
        Bold spans.
    code_blocks : int
        Fenced code blocks.
    inline_code : int
        Inline code spans.
    links : int
        Links and images.
    tables : int
        Tables (runs of consecutive table rows).
    """

    headers: int = 0
    list_items: int = 0
    bold: int = 0
    code_blocks: int = 0
    inline_code: int = 0
    links: int = 0
    tables: int = 0

    @property
    def total(self) -> int:
        """All constructs together: the ``markdown`` covariate."""
        return (self.headers + self.list_items + self.bold + self.code_blocks
                + self.inline_code + self.links + self.tables)

    def as_dict(self) -> dict:
        return asdict(self)


def markdown_counts(text: str) -> MarkdownCounts:
    """Count the markdown constructs of a text (see the module's definition).

    Parameters
    ----------
    text : str

    Returns
    -------
    MarkdownCounts

    Examples
    --------
    >>> markdown_counts("# Title\\n```py\\n# a comment\\n```\\n**bold** `**not bold**`").as_dict()
    ... # doctest: +NORMALIZE_WHITESPACE
    {'headers': 1, 'list_items': 0, 'bold': 1, 'code_blocks': 1, 'inline_code': 1,
     'links': 0, 'tables': 0}
    """
    if not isinstance(text, str):
        raise TypeError(f"`text` must be a string; got {type(text).__name__}")
    lines = text.split("\n")
    headers = list_items = bold = inline_code = links = tables = 0
    last_row = None  # index of the last table row seen, so a run is one table
    for i, line in prose_lines(lines):
        headers += is_header(line)
        list_items += is_list_item(line)
        if is_table_row(line):
            tables += last_row != i - 1
            last_row = i
        inline_code += len(INLINE_CODE.findall(line))
        rest = INLINE_CODE.sub(" ", line)
        links += len(LINK.findall(rest))
        bold += len(BOLD_STARS.findall(rest)) + len(BOLD_UNDERSCORES.findall(rest))
    return MarkdownCounts(headers, list_items, bold, len(fenced_blocks(lines)), inline_code,
                          links, tables)
