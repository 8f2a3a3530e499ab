"""Text transforms the probe kinds share: sentences, content words, markdown <-> prose.

Which line is a header, a list item, a table row or a fence, and what counts as bold, inline
code or a link, comes from :mod:`fairjudge.data._markdown`, the definition the ``md_*``
covariates use too; this module only adds what converting needs (sentence boundaries, and
the removal of emphasis, quotes and rules that the definition does not count).
"""

from __future__ import annotations

import re
from collections.abc import Callable

from fairjudge.data._markdown import (
    BOLD_STARS,
    BOLD_UNDERSCORES,
    BULLET,
    HEADER,
    INLINE_CODE,
    LINK,
    ORDERED,
    QUOTE,
    TABLE_SEPARATOR,
    THEMATIC_BREAK,
    fenced_blocks,
    is_header,
    is_list_item,
    is_table_row,
    markdown_counts,
)

# --------------------------------------------------------------------------------------------
# Sentences

# Abbreviations whose final period does not end a sentence (compared lower-cased, with any
# opening bracket or quote removed). Dotted letter sequences (e.g., i.e., U.S., a.m.) and single
# capital initials (J. K. Rowling) are recognised by pattern instead.
_ABBREVIATIONS = frozenset({
    "dr.", "mr.", "mrs.", "ms.", "prof.", "sr.", "jr.", "st.", "vs.", "cf.", "fig.", "figs.",
    "approx.", "eq.", "eqs.", "sec.", "ch.", "vol.", "dept.", "gen.", "gov.", "lt.", "col.",
    "capt.", "sgt.", "rev.", "hon.", "jan.", "feb.", "mar.", "apr.", "jun.", "jul.", "aug.",
    "sep.", "sept.", "oct.", "nov.", "dec."})
_DOTTED = re.compile(r"^(?:[a-z]\.){2,}$", re.IGNORECASE)
_INITIAL = re.compile(r"^[A-Z]\.$")
# A sentence end: . ! or ? (and any closing quotes or brackets), then whitespace and the start
# of a new sentence (an uppercase letter or digit, possibly behind an opening quote/bracket).
_SENTENCE_END = re.compile(r"[.!?][\"'\u201d\u2019)\]]*(?=\s+[\"'\u201c\u2018(\[]?[A-Z0-9])")
_BLANK_LINE = re.compile(r"\n[ \t]*\n")
_LIST_NUMBER = re.compile(r"(?:^|\n)[ \t]*\d{1,9}[.)]$")
_FENCE_START = re.compile(r"^[ \t]*(?:```|~~~)")


def _opens_block(line: str) -> bool:
    """Whether a line opens a markdown block: a header, list item, thematic break, quote,
    table row or code fence (as :mod:`fairjudge.data._markdown` defines them)."""
    return bool(is_header(line) or is_list_item(line) or THEMATIC_BREAK.match(line)
                or QUOTE.match(line) or is_table_row(line) or _FENCE_START.match(line))


def _fenced_spans(text: str) -> list[tuple[int, int]]:
    """Character ``(start, end)`` of each fenced code block, from the start of its opening
    fence line to the end of its closing fence line."""
    lines = text.split("\n")
    starts = [0]
    for line in lines:
        starts.append(starts[-1] + len(line) + 1)
    return [(starts[b.start], starts[b.end] + len(lines[b.end])) for b in fenced_blocks(lines)]


def _sentence_spans(text: str) -> list[tuple[int, int]]:
    """``(start, end)`` offsets of the sentences of ``text`` (see :func:`split_sentences`)."""
    regions, pos = [], 0
    for block_start, block_end in _fenced_spans(text):
        regions.append((pos, block_start, False))
        regions.append((block_start, block_end, True))
        pos = block_end
    regions.append((pos, len(text), False))
    spans = []
    for start, end, code in regions:
        if code:
            spans.append((start, end))
            continue
        chunk = text[start:end]
        cuts = {0, len(chunk)}
        for m in _SENTENCE_END.finditer(chunk):
            before = chunk[:m.start() + 1]
            if _LIST_NUMBER.search(before):
                continue  # "2. In June ..." opens a numbered item; it ends nothing
            word = re.search(r"(\S+)$", before).group(1).lstrip("\"'([{\u201c\u2018")
            if word.lower() in _ABBREVIATIONS or _DOTTED.match(word) or _INITIAL.match(word):
                continue
            cuts.add(m.end())
        cuts.update(m.start() for m in _BLANK_LINE.finditer(chunk))
        lines = chunk.split("\n")
        offset = 0
        for previous, following in zip(lines, lines[1:]):
            offset += len(previous) + 1
            # A newline that opens a markdown block, or closes a header or table row, ends
            # a sentence even without punctuation (list items rarely end with a period).
            if _opens_block(following) or is_header(previous) or is_table_row(previous):
                cuts.add(offset - 1)
        ordered = sorted(cuts)
        for lo, hi in zip(ordered, ordered[1:]):
            piece = chunk[lo:hi]
            if piece.strip():
                lead = len(piece) - len(piece.lstrip())
                trail = len(piece) - len(piece.rstrip())
                spans.append((start + lo + lead, start + hi - trail))
    return spans


def split_sentences(text: str) -> list[str]:
    """Split a text into sentences with a fixed, documented rule.

    A sentence ends after ``.``, ``!`` or ``?`` (and any closing quotes or brackets) that is
    followed by whitespace and then an uppercase letter, a digit or an opening quote or
    bracket; but not after a known abbreviation (``Dr.``, ``Mr.``, ``vs.``, ``cf.``, month
    names ...), a dotted letter sequence (``e.g.``, ``i.e.``, ``U.S.``, ``a.m.``) or a single
    capital initial (``J.``), nor after the number that opens a numbered list item
    (``2. In June``). A blank line also ends a sentence, and so does a line break that
    opens a markdown block (header, list item, quote, table row, code fence) or closes a
    header or table row. A fenced code block is one sentence and is never split inside.
    Sentences are returned without surrounding whitespace; joining the original text between
    them is whitespace only.

    Parameters
    ----------
    text : str

    Returns
    -------
    list of str

    Examples
    --------
    >>> split_sentences("Use e.g. Dr. Smith's method. It works! Does it? Yes.")
    ["Use e.g. Dr. Smith's method.", 'It works!', 'Does it?', 'Yes.']
    >>> split_sentences("Steps:\\n- install it\\n- run it")
    ['Steps:', '- install it', '- run it']
    """
    if not isinstance(text, str):
        raise TypeError(f"`text` must be a string; got {type(text).__name__}")
    return [text[s:e] for s, e in _sentence_spans(text)]


def n_words(text: str) -> int:
    """Number of words: whitespace-separated tokens (``str.split``), as the ``length``
    covariate counts them."""
    return len(text.split())


# --------------------------------------------------------------------------------------------
# Markdown <-> prose

# Emphasis and setext underlines are not counted as markdown (see fairjudge.data._markdown),
# but prose is written without them.
_STRIKE = re.compile(r"~~(?=\S)(.+?)(?<=\S)~~")
_ITALIC = re.compile(r"(?<![\w*])\*(?=[^\s*])([^*\n]+?)(?<=[^\s*])\*(?![\w*])")
_ITALIC_UNDERSCORE = re.compile(r"(?<![\w_])_(?=[^\s_])([^_\n]+?)(?<=[^\s_])_(?![\w_])")
_SETEXT = re.compile(r"^[ \t]{0,3}(?:=+|-{2,})[ \t]*$")
_TOKENS = re.compile(r"[a-z0-9]+")


def content_words(text: str) -> list[str]:
    """The sorted multiset of word tokens of a text: lower-cased runs of ``[a-z0-9]``.

    Markdown markup (``#``, ``-``, ``**``, backticks) holds no such token, so a style
    conversion that keeps the content keeps this multiset.

    Examples
    --------
    >>> content_words("- **Fast** start-up, e.g. 2x.") == content_words("Fast start up e g 2x")
    True
    """
    return sorted(_TOKENS.findall(text.lower()))


def has_markdown(text: str) -> bool:
    """Whether a text holds markdown: ``markdown > 0`` in :func:`fairjudge.data.text_features`.

    Examples
    --------
    >>> has_markdown("Run `make`."), has_markdown("Run make.")
    (True, False)
    """
    return markdown_counts(text).total > 0


def _unwrap(pattern: re.Pattern, text: str, inner: Callable[[re.Match], str]) -> str:
    """Replace each match by ``inner(match)``; a hyphen keeps it apart from a letter or digit
    it touches (``n`` + code span ``th`` would otherwise merge into one word ``nth``)."""
    def replace(m: re.Match) -> str:
        body = inner(m)
        glued_before = m.start() > 0 and text[m.start() - 1].isalnum()
        glued_after = m.end() < len(text) and text[m.end()].isalnum()
        before = "-" if glued_before and body[:1].isalnum() else ""
        after = "-" if glued_after and body[-1:].isalnum() else ""
        return before + body + after
    return pattern.sub(replace, text)


def _inline_to_plain(text: str) -> str:
    # Removing one span can complete another (``**a ***b*****``, a double-backtick span),
    # so repeat until nothing that counts as markdown is left (one pass for normal text).
    for _ in range(4):
        before = text
        text = _unwrap(LINK, text, lambda m: f"{m['text']} ({m['url']})" if m["url"]
                       else m["text"])
        text = _unwrap(INLINE_CODE, text, lambda m: m.group(0).strip("`"))
        for pattern in (BOLD_STARS, BOLD_UNDERSCORES, _STRIKE, _ITALIC, _ITALIC_UNDERSCORE):
            text = _unwrap(pattern, text, lambda m: m.group(1))
        if text == before or not any(p.search(text) for p in (LINK, INLINE_CODE, BOLD_STARS,
                                                             BOLD_UNDERSCORES)):
            break
    return re.sub(r"[ \t]+", " ", text).strip()


def _as_sentence(text: str, *, capitalise: bool) -> str:
    if capitalise and text[:1].islower():
        text = text[0].upper() + text[1:]
    return text if text[-1:] in ".!?:;" else text + "."


def markdown_to_prose(text: str) -> str:
    """Strip markdown formatting from a text, keeping every word.

    Headers (``#`` or underlined) become a lead-in (``Header: first sentence``), or a
    sentence of their own when another header or a code block follows; bullet items become
    sentences (capitalised, with a final period), or a ``;``-separated series when the line
    before them ends with a colon; numbered items become ``(1) ...``, keeping their numbers;
    table rows become comma-joined sentences; bold, italics, strike-through and inline-code
    markers are removed (with a hyphen where the span touches a letter, so `` `n`th `` is
    ``n-th``, not one word); links become ``text (url)``; a fenced code block is kept line by
    line without its fences, its language tag (if any) as a ``tag:`` line before it;
    horizontal rules and table separator rows are dropped. Paragraphs are separated by a
    blank line. The multiset of :func:`content_words` is unchanged.

    Code is kept verbatim, so the prose of an answer with code may still hold lines that
    look like markdown (a ``# comment``); code that is not fenced is treated as text.

    Examples
    --------
    >>> print(markdown_to_prose("## Tips\\n- **Water** daily\\n- prune in spring\\n1. rest"))
    Tips: Water daily. Prune in spring. (1) Rest.
    """
    lines = text.split("\n")
    code_at = {b.start: b for b in fenced_blocks(lines)}
    blocks: list[list] = []
    i = 0
    while i < len(lines):
        line = lines[i]
        if i in code_at:
            fence = code_at[i]
            blocks.append(["code", fence.info, lines[i + 1:fence.end]])
            i = fence.end + 1
            continue
        underline = lines[i + 1] if i + 1 < len(lines) else ""
        if line.strip() and not _opens_block(line) and _SETEXT.match(underline):
            blocks.append(["header", line.strip()])  # "Title" over "=====" or "-----"
            i += 2
            continue
        header, bullet, ordered = HEADER.match(line), BULLET.match(line), ORDERED.match(line)
        if not line.strip():
            blocks.append(["blank"])
        elif header:
            blocks.append(["header", header["title"]])
        elif THEMATIC_BREAK.match(line) or (TABLE_SEPARATOR.match(line) and "|" in line):
            pass
        elif is_table_row(line):
            cells = [c.strip() for c in line.strip().strip("|").split("|")]
            blocks.append(["row", ", ".join(c for c in cells if c)])
        elif bullet:
            blocks.append(["item", None, bullet["content"]])
        elif ordered:
            blocks.append(["item", ordered["number"], ordered["content"]])
        else:
            quote = QUOTE.match(line)
            content = quote["content"] if quote else line
            if blocks and blocks[-1][0] == "item" and not quote:
                blocks[-1][2] += " " + content.strip()  # a continuation line of a list item
            else:
                blocks.append(["text", content])
        i += 1

    paragraphs: list[str] = []
    current: list[str] = []
    pending_header: str | None = None

    def flush():
        if current:
            paragraphs.append(" ".join(current))
            current.clear()

    def add(piece: str):
        nonlocal pending_header
        if not piece:
            return
        if pending_header is not None:
            flush()
            lead = pending_header if pending_header[-1:] in ".!?:" else pending_header + ":"
            current.append(lead)
            pending_header = None
        current.append(piece)

    k = 0
    while k < len(blocks):
        block = blocks[k]
        kind = block[0]
        if kind == "blank":
            if pending_header is None:
                flush()
        elif kind == "header":
            if pending_header is not None:
                flush()
                paragraphs.append(_as_sentence(pending_header, capitalise=False))
            flush()
            pending_header = _inline_to_plain(block[1]) or None
        elif kind == "code":
            flush()
            if pending_header is not None:
                paragraphs.append(_as_sentence(pending_header, capitalise=False))
                pending_header = None
            body = "\n".join(block[2])
            paragraphs.append(f"{block[1]}:\n{body}" if block[1] else body)
        elif kind == "row":
            add(_as_sentence(_inline_to_plain(block[1]), capitalise=True))
        elif kind == "text":
            add(_inline_to_plain(block[1]))
        elif kind == "item":
            run = []
            while k < len(blocks) and blocks[k][0] == "item":
                run.append(blocks[k])
                k += 1
            k -= 1
            previous = pending_header or (current[-1] if current else
                                          paragraphs[-1] if paragraphs else "")
            items = [(b[1], _inline_to_plain(b[2]), b[2].lstrip()[:1].islower()) for b in run]
            items = [(number, plain, lower) for number, plain, lower in items if plain]
            if previous.endswith(":"):
                parts = [(f"({n}) " if n else "") + t.rstrip(".;") for n, t, _ in items]
                series = "; ".join(parts) + "."
                if not current and pending_header is None and paragraphs:
                    paragraphs[-1] += " " + series  # "Intro:" + blank line + list
                else:
                    add(series)
            else:
                for number, plain, lower in items:
                    sentence = _as_sentence(plain, capitalise=lower)
                    add(f"({number}) {sentence}" if number else sentence)
        k += 1
    if pending_header is not None:
        current.append(_as_sentence(pending_header, capitalise=False))
    flush()
    return "\n\n".join(p for p in paragraphs if p.strip())


_LEAD_IN = re.compile(r"^([^,:;]+?)([,:;])\s")


def _bold_lead(sentence: str) -> str:
    """Bold a short lead-in phrase (before the first comma or colon, up to 4 words), else the
    first two words (or the whole sentence when it has at most two)."""
    lead = _LEAD_IN.match(sentence)
    if lead and len(lead.group(1).split()) <= 4:
        return f"**{lead.group(1)}**{sentence[lead.end(1):]}"
    words = sentence.split(" ")
    if len(words) <= 2:
        core = sentence.rstrip(".!?")
        return f"**{core}**{sentence[len(core):]}" if core else sentence
    head = " ".join(words[:2])
    trimmed = head.rstrip(".,;:!?\"')")
    return f"**{trimmed}**{head[len(trimmed):]} " + " ".join(words[2:])


def prose_to_markdown(text: str) -> str:
    """Format plain prose as markdown without adding or removing a word.

    Each paragraph becomes a bullet list with one ``- `` item per sentence (see
    :func:`split_sentences`), and each item's lead-in phrase is bolded: the words before its
    first comma or colon when there are at most four, else its first two words. No header is
    added (it would add words). The multiset of :func:`content_words` is unchanged.

    Examples
    --------
    >>> print(prose_to_markdown("In short, water daily. The roots need air."))
    - **In short**, water daily.
    - **The roots** need air.
    """
    lists = []
    for paragraph in re.split(r"\n[ \t]*\n", text.strip()):
        sentences = [re.sub(r"\s+", " ", s) for s in split_sentences(paragraph)]
        if sentences:
            lists.append("\n".join("- " + _bold_lead(s) for s in sentences))
    return "\n\n".join(lists)
