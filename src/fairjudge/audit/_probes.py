"""Controlled bias probes: pairs built so that an unbiased judge has a known answer.

Five probe kinds follow the controlled dataset of [debiasing-strategies-study App. A]:

``POSITION``
    The same answer in both slots (expected: tie).
``STYLE`` / ``STYLE_BA``
    The same words as markdown and as plain prose (expected: tie); ``STYLE`` puts the
    markdown in slot a, its mirror ``STYLE_BA`` in slot b, so the two halves together give a
    position-averaged style bias.
``LENGTH``
    An answer and a content-free expansion of it, about 2.5 times longer (expected: tie).
``TRUNCATION``
    A complete answer and its first sentences, about 40% of its words (expected: the
    complete answer).
``MODEL_ORIGIN``
    Two sources' answers to the same question, every pair of sources in turn (expected: tie).

:func:`build_probes` builds them from answers the user supplies, deterministically for a
seed; :func:`score_probes` turns the verdicts of a judge on them into signed bias scores
``b = P(target) - P(non-target)`` [debiasing-strategies-study §3.5].
"""

from __future__ import annotations

import itertools
import math
import re
import warnings
from collections.abc import Callable, Mapping, Sequence
from dataclasses import dataclass

import numpy as np
import pandas as pd

from fairjudge._util._rng import as_generator, content_seed
from fairjudge._util._warnings import FairjudgeInputError, FairjudgeWarning
from fairjudge.data._features import text_features
from fairjudge.data._statement_banks import ELABORATION_CLAUSES
from fairjudge.stats._estimate import Estimate

#: Probe kinds :func:`build_probes` can build (``STYLE`` also yields its mirror ``STYLE_BA``).
PROBE_KINDS = ("POSITION", "STYLE", "LENGTH", "TRUNCATION", "MODEL_ORIGIN")
#: Values of the ``bias_type`` column of a probe table, in table order.
BIAS_TYPES = ("POSITION", "STYLE", "STYLE_BA", "LENGTH", "TRUNCATION", "MODEL_ORIGIN")
#: Columns of the probe table, in order.
PROBE_COLUMNS = ("id", "bias_type", "question", "a", "b", "expected_verdict", "target",
                 "source_a", "source_b", "construction_notes", "record_id")
#: Columns of the score table, in order.
SCORE_COLUMNS = ("bias_type", "target", "n", "n_invalid", "n_missing", "p_target",
                 "p_non_target", "p_tie", "bias", "ci_low", "ci_high", "wilson_low",
                 "wilson_high", "accuracy", "level")

#: Share of the answer's words a TRUNCATION probe keeps [debiasing-strategies-study App. A].
TRUNCATION_SHARE = 0.4
#: Length ratio a LENGTH expansion aims at (the study's expansions were 2.8x on average).
EXPANSION_RATIO = 2.5
STYLE_POOLED = "STYLE (position-averaged)"


class ProbeWarning(FairjudgeWarning):
    """A probe could not be built for some records, or a score could not be computed as asked.

    The skipped records are listed in ``probes.attrs["skipped"]``.
    """


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
_LIST_NUMBER = re.compile(r"(?:^|\n)[ \t]*\d+[.)]$")
_FENCED_BLOCK = re.compile(r"^[ \t]*(```|~~~)[^\n]*\n.*?^[ \t]*\1[ \t]*$",
                           re.MULTILINE | re.DOTALL)
_HEADER_LINE = re.compile(r"^[ \t]{0,3}#{1,6}[ \t]")
_TABLE_LINE = re.compile(r"^[ \t]*\|.*\|[ \t]*$")
_BLOCK_START = re.compile(r"^[ \t]*(?:#{1,6}[ \t]|[-*+][ \t]|\d+[.)][ \t]|>|\||```|~~~)")


def _sentence_spans(text: str) -> list[tuple[int, int]]:
    """``(start, end)`` offsets of the sentences of ``text`` (see :func:`split_sentences`)."""
    regions, pos = [], 0
    for m in _FENCED_BLOCK.finditer(text):
        regions.append((pos, m.start(), False))
        regions.append((m.start(), m.end(), True))
        pos = m.end()
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
            if (_BLOCK_START.match(following) or _HEADER_LINE.match(previous)
                    or _TABLE_LINE.match(previous)):
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


def _n_words(text: str) -> int:
    return len(text.split())


# --------------------------------------------------------------------------------------------
# Markdown <-> prose

_INLINE_CODE = re.compile(r"`[^`\n]+`")
# A link or image; "k2[C2H4](x)" (a bracket glued to a word) is a formula, not a link.
_LINK = re.compile(r"(?<!\w)!?\[([^\]\n]*)\]\(([^)\n]*)\)")
_BOLD = re.compile(r"\*\*(?=\S)(.+?)(?<=\S)\*\*")
_BOLD_UNDERSCORE = re.compile(r"(?<!\w)__(?=\S)(.+?)(?<=\S)__(?!\w)")
_STRIKE = re.compile(r"~~(?=\S)(.+?)(?<=\S)~~")
_ITALIC = re.compile(r"(?<![\w*])\*(?=[^\s*])([^*\n]+?)(?<=[^\s*])\*(?![\w*])")
_ITALIC_UNDERSCORE = re.compile(r"(?<![\w_])_(?=[^\s_])([^_\n]+?)(?<=[^\s_])_(?![\w_])")
_FENCE_OPEN = re.compile(r"^[ \t]*(```|~~~)[ \t]*([^\n`]*?)[ \t]*$")
_HEADER = re.compile(r"^[ \t]{0,3}#{1,6}[ \t]+(.*?)[ \t]*#*[ \t]*$")
_RULE = re.compile(r"^[ \t]*([-*_])(?:[ \t]*\1){2,}[ \t]*$")
_TABLE_SEPARATOR = re.compile(
    r"^[ \t]*\|?[ \t]*:?-{2,}:?[ \t]*(?:\|[ \t]*:?-{2,}:?[ \t]*)*\|?[ \t]*$")
_BULLET = re.compile(r"^([ \t]*)[-*+][ \t]+(.*)$")
_ORDERED = re.compile(r"^([ \t]*)(\d+)[.)][ \t]+(.*)$")
_QUOTE = re.compile(r"^[ \t]*>[ \t]?(.*)$")
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


def _has_markdown(text: str) -> bool:
    if int(text_features([text]).loc[0, "markdown"]) > 0:
        return True
    return bool(_INLINE_CODE.search(text) or _LINK.search(text)
                or any(_TABLE_LINE.match(line) for line in text.split("\n")))


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
    text = _unwrap(_LINK, text, lambda m: f"{m.group(1)} ({m.group(2)})" if m.group(2)
                   else m.group(1))
    text = _unwrap(_INLINE_CODE, text, lambda m: m.group(0).strip("`"))
    for pattern in (_BOLD, _BOLD_UNDERSCORE, _STRIKE, _ITALIC, _ITALIC_UNDERSCORE):
        text = _unwrap(pattern, text, lambda m: m.group(1))
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
    blocks: list[list] = []
    i = 0
    while i < len(lines):
        line = lines[i]
        fence = _FENCE_OPEN.match(line)
        if fence:
            close = next((j for j in range(i + 1, len(lines))
                          if re.match(rf"^[ \t]*{re.escape(fence.group(1))}[ \t]*$", lines[j])),
                         None)
            if close is not None:
                blocks.append(["code", fence.group(2), lines[i + 1:close]])
                i = close + 1
                continue
        underline = lines[i + 1] if i + 1 < len(lines) else ""
        if line.strip() and not _BLOCK_START.match(line) and _SETEXT.match(underline):
            blocks.append(["header", line.strip()])  # "Title" over "=====" or "-----"
            i += 2
            continue
        if not line.strip():
            blocks.append(["blank"])
        elif _HEADER.match(line):
            blocks.append(["header", _HEADER.match(line).group(1)])
        elif _RULE.match(line) or (_TABLE_SEPARATOR.match(line) and "|" in line):
            pass
        elif _TABLE_LINE.match(line):
            cells = [c.strip() for c in line.strip().strip("|").split("|")]
            blocks.append(["row", ", ".join(c for c in cells if c)])
        elif _BULLET.match(line):
            blocks.append(["item", None, _BULLET.match(line).group(2)])
        elif _ORDERED.match(line):
            m = _ORDERED.match(line)
            blocks.append(["item", m.group(2), m.group(3)])
        else:
            content = _QUOTE.match(line).group(1) if _QUOTE.match(line) else line
            if blocks and blocks[-1][0] == "item" and not _QUOTE.match(line):
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


# --------------------------------------------------------------------------------------------
# Length: expansion and truncation


def _expand(answer: str, clause_order: Sequence[int]) -> tuple[str, int] | None:
    """Append elaboration clauses to sentences, round robin, to about 2.5x the words.

    Returns the expanded text and the number of clauses, or None when no sentence can take
    a clause (code blocks, headers, table rows and sentences ending in ``?``, ``:`` or a
    quote are left alone).
    """
    spans = _sentence_spans(answer)
    eligible = []
    for index, (s, e) in enumerate(spans):
        sentence = answer[s:e]
        if sentence.lstrip().startswith(("```", "~~~", "|")) or _HEADER_LINE.match(sentence):
            continue  # a code block, table row or header takes no clause
        if sentence[-1] in ".!" or sentence[-1].isalnum() or sentence[-1] in "*`)%":
            eligible.append(index)
    if not eligible:
        return None
    words = _n_words(answer)
    goal = EXPANSION_RATIO * words
    per_sentence: dict[int, list[str]] = {i: [] for i in eligible}
    total, n_clauses = words, 0
    while True:
        sentence = eligible[n_clauses % len(eligible)]
        clause = ELABORATION_CLAUSES[clause_order[n_clauses % len(clause_order)]]
        added = _n_words(clause) + (1 if len(per_sentence[sentence]) == 1 else 0)  # "and"
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


def _truncate(answer: str) -> tuple[str, int, int] | None:
    """The first k sentences closest to 40% of the words (1 <= k < n); None if n < 3.

    Returns the prefix, k and the number of sentences n.
    """
    spans = _sentence_spans(answer)
    if len(spans) < 3:
        return None
    goal = TRUNCATION_SHARE * _n_words(answer)
    best = min(range(1, len(spans)),
               key=lambda k: (abs(_n_words(answer[:spans[k - 1][1]]) - goal), k))
    return answer[:spans[best - 1][1]], best, len(spans)


# --------------------------------------------------------------------------------------------
# Building


@dataclass(frozen=True)
class _Record:
    rid: str
    question: str
    answer: str
    source: str | None


def _missing(value) -> bool:
    if value is None or value is pd.NA:
        return True
    return isinstance(value, float) and math.isnan(value)


def _as_records(records) -> list[_Record]:
    if isinstance(records, pd.DataFrame):
        rows = records.to_dict("records")
    elif isinstance(records, (list, tuple)):
        rows = list(records)
        bad = next((i for i, r in enumerate(rows) if not isinstance(r, Mapping)), None)
        if bad is not None:
            raise TypeError(f"`records` must hold dicts; record {bad} is "
                            f"{type(rows[bad]).__name__}")
    else:
        raise TypeError(f"`records` must be a pandas DataFrame or a list of dicts; got "
                        f"{type(records).__name__}")
    if not rows:
        raise FairjudgeInputError("`records` is empty; give at least one record with a "
                                  "question and an answer")
    has_ids = any("id" in r for r in rows)
    out, seen = [], {}
    for position, row in enumerate(rows):
        for field in ("question", "answer"):
            value = row.get(field)
            if _missing(value) or not isinstance(value, str) or not value.strip():
                raise FairjudgeInputError(
                    f"`records` record {position}: field `{field}` must be a non-empty "
                    f"string; got {value!r}")
        if has_ids:
            if _missing(row.get("id")) or not str(row.get("id")).strip():
                raise FairjudgeInputError(
                    f"`records` record {position}: field `id` is missing; give every record "
                    "an id or none")
            rid = str(row["id"]).strip()
        else:
            rid = str(position)
        if rid in seen:
            raise FairjudgeInputError(f"`records` records {seen[rid]} and {position} share "
                                      f"the id {rid!r}; ids must be unique")
        seen[rid] = position
        source = row.get("source")
        source = None if _missing(source) or not str(source).strip() else str(source).strip()
        out.append(_Record(rid, row["question"].strip(), row["answer"].strip(), source))
    return out


def _check_build_args(kinds, seed, rewriter, per_kind) -> tuple[tuple, dict]:
    if isinstance(seed, bool) or not isinstance(seed, (int, np.integer)) or seed < 0:
        raise ValueError(f"`seed` must be a non-negative integer; got {seed!r}")
    if rewriter is not None and not callable(rewriter):
        raise TypeError(f"`rewriter` must be a callable rewriter(question, answer) -> str or "
                        f"None; got {type(rewriter).__name__}")
    if isinstance(kinds, str):
        kinds = (kinds,)
    if not isinstance(kinds, (list, tuple)) or not kinds:
        raise ValueError(f"`kinds` must be a non-empty list of {', '.join(PROBE_KINDS)}; got "
                         f"{kinds!r}")
    chosen = []
    for kind in kinds:
        name = str(kind).upper()
        if name == "STYLE_BA":
            raise ValueError("`kinds` names STYLE_BA; it is built with STYLE (its mirror), "
                             "so ask for STYLE")
        if name not in PROBE_KINDS:
            raise ValueError(f"`kinds` must be chosen from {', '.join(PROBE_KINDS)}; got "
                             f"{kind!r}")
        if name not in chosen:
            chosen.append(name)
    caps: dict[str, int | None] = {k: None for k in chosen}
    if per_kind is not None:
        if isinstance(per_kind, Mapping):
            entries = {str(k).upper(): v for k, v in per_kind.items()}
            unknown = [k for k in entries if k not in chosen]
            if unknown:
                raise ValueError(f"`per_kind` names {unknown[0]!r}, which is not among the "
                                 f"requested kinds {', '.join(chosen)}")
        else:
            entries = {k: per_kind for k in chosen}
        for kind, cap in entries.items():
            if isinstance(cap, bool) or not isinstance(cap, (int, np.integer)) or cap < 1:
                raise ValueError(f"`per_kind` must be a positive integer (or a mapping of "
                                 f"kind to one); got {cap!r} for {kind}")
            caps[kind] = int(cap)
    order = tuple(k for k in PROBE_KINDS if k in chosen)
    return order, caps


def _select(kind: str, records: list, cap: int | None, seed: int) -> list:
    """At most ``cap`` records, chosen by a content hash of (kind, seed, record), in order."""
    if cap is None or cap >= len(records):
        return records
    keyed = sorted(range(len(records)),
                   key=lambda i: content_seed("probe-select", kind, seed, records[i].rid))
    keep = set(keyed[:cap])
    return [r for i, r in enumerate(records) if i in keep]


def _swaps(key: str, n: int, seed: int) -> np.ndarray:
    """Balanced, seeded slot swaps: half of ``n`` (the odd one drawn at random) swapped."""
    rng = np.random.default_rng(content_seed("probe-slots", key, seed))
    flags = np.arange(n) % 2 == 1
    if n % 2 and rng.random() < 0.5:
        flags = ~flags
    return rng.permutation(flags)


def _row(kind, n, question, a, b, expected, target, notes, record_id, source_a=None,
         source_b=None) -> dict:
    return {"id": f"{kind}-{n}", "bias_type": kind, "question": question, "a": a, "b": b,
            "expected_verdict": expected, "target": target, "source_a": source_a,
            "source_b": source_b, "construction_notes": notes, "record_id": record_id}


def build_probes(records, *, seed: int = 0, kinds: Sequence[str] = PROBE_KINDS,
                 rewriter: Callable[[str, str], str] | None = None,
                 per_kind: int | Mapping[str, int] | None = None) -> pd.DataFrame:
    """Build controlled bias-probe pairs from answers [debiasing-strategies-study App. A].

    Every record yields one probe of each single-answer kind (POSITION, STYLE and its mirror
    STYLE_BA, LENGTH, TRUNCATION); MODEL_ORIGIN pairs two records. Construction rules:

    * POSITION: the answer in both slots; expected tie; target slot a.
    * STYLE: markdown in slot a, prose in slot b, expected tie, target the markdown side.
      A prose answer (no markdown found) is kept as the prose side and
      :func:`prose_to_markdown` makes the markdown side; a markdown answer is kept as the
      markdown side and :func:`markdown_to_prose` makes the prose side. Both keep the
      multiset of :func:`content_words`. STYLE_BA (``STYLE_BA-n`` mirrors ``STYLE-n``) swaps
      the slots.
    * LENGTH: the answer and an expansion of it; expected tie; target the side with more
      words (``str.split``). Without ``rewriter``, content-free clauses from
      ``ELABORATION_CLAUSES`` (in a seeded order) are appended round robin to the answer's
      sentences until the word count is closest to 2.5x (at least one clause); code blocks,
      headers, table rows and questions get none. With ``rewriter``, its output
      ``rewriter(question, answer)`` is the expansion. Which slot holds the expansion is
      seeded and balanced over the LENGTH probes.
    * TRUNCATION: the answer and its first k sentences (:func:`split_sentences`), the
      sentence boundary whose cumulative word count is closest to 40% of the words (ties to
      the shorter cut; at least one sentence kept and one dropped); expected and target the
      complete side, slots seeded and balanced. Answers with fewer than 3 sentences are
      skipped.
    * MODEL_ORIGIN: for every unordered pair of distinct sources (alphabetical), the two
      sources' answers to the same question (records grouped by exact question text, the
      j-th answer of one source paired with the j-th of the other); the source pairs take
      turns (round robin) and each source pair starts at a different question, so a
      ``per_kind`` cap spreads over source pairs and questions. Expected tie; ``target`` is
      empty and ``source_a``/``source_b`` name the sources; slots seeded and balanced per
      source pair. Skipped with fewer than two sources.

    Parameters
    ----------
    records : pandas.DataFrame or list of dict
        ``question`` and ``answer`` (non-empty strings; surrounding whitespace is removed),
        optional ``source`` (the model that wrote the answer) and ``id`` (unique; the row
        position otherwise).
    seed : int
        Fixes every random choice (slots, clause order, which records a cap keeps). The same
        records and seed give byte-identical output.
    kinds : sequence of str
        Among ``POSITION``, ``STYLE``, ``LENGTH``, ``TRUNCATION``, ``MODEL_ORIGIN``.
    rewriter : callable, optional
        ``rewriter(question, answer) -> str`` making LENGTH expansions (e.g. an LLM).
    per_kind : int or mapping, optional
        At most this many probes of each kind (STYLE_BA follows STYLE), or a mapping of kind
        to cap; records are chosen by a seeded hash.

    Returns
    -------
    pandas.DataFrame
        One row per probe with columns ``id`` (``f"{bias_type}-{n}"``), ``bias_type``,
        ``question``, ``a``, ``b`` (the pair's own a/b frame), ``expected_verdict`` (``tie``,
        ``a`` or ``b``), ``target`` (``a`` or ``b``, the side a positive bias prefers; None
        for MODEL_ORIGIN), ``source_a``, ``source_b`` (MODEL_ORIGIN only, else None),
        ``construction_notes`` and ``record_id`` (``"<a's record>+<b's record>"`` for
        MODEL_ORIGIN). ``attrs`` hold ``seed`` and ``skipped``: one dict (``bias_type``,
        ``record_id``, ``reason``) per record a kind could not use.

    Raises
    ------
    ValueError
        If ``records``, ``kinds``, ``seed`` or ``per_kind`` break their rules (the message
        names the argument), or ``rewriter`` returns something other than a non-empty string.
    TypeError
        If ``records`` is not a table or list of dicts, or ``rewriter`` is not callable.

    Warns
    -----
    ProbeWarning
        When a kind skips records (fewer than 3 sentences, fewer than two sources ...).

    Examples
    --------
    >>> recs = [{"question": "Why water plants?", "answer": "Roots take up water. Leaves "
    ...          "lose it through pores. Without water, cells wilt."}]
    >>> probes = build_probes(recs, kinds=["POSITION", "STYLE", "TRUNCATION"])
    >>> probes[["id", "expected_verdict", "target"]].values.tolist()
    [['POSITION-0', 'tie', 'a'], ['STYLE-0', 'tie', 'a'], ['STYLE_BA-0', 'tie', 'b'], \
['TRUNCATION-0', 'b', 'b']]
    >>> print(probes.loc[1, "a"])
    - **Roots take** up water.
    - **Leaves lose** it through pores.
    - **Without water**, cells wilt.
    """
    order, caps = _check_build_args(kinds, seed, rewriter, per_kind)
    recs = _as_records(records)
    seed = int(seed)
    rows: list[dict] = []
    skipped: list[dict] = []

    def skip(kind, rid, reason):
        skipped.append({"bias_type": kind, "record_id": rid, "reason": reason})

    if "POSITION" in order:
        for n, r in enumerate(_select("POSITION", recs, caps["POSITION"], seed)):
            rows.append(_row("POSITION", n, r.question, r.answer, r.answer, "tie", "a",
                             f"the answer of record {r.rid} in both slots "
                             f"({_n_words(r.answer)} words)", r.rid))
    if "STYLE" in order:
        style, mirror = [], []
        for r in _select("STYLE", recs, caps["STYLE"], seed):
            if _has_markdown(r.answer):
                markdown, prose = r.answer, markdown_to_prose(r.answer)
                how = ("the record's markdown answer; the prose side strips headers, list "
                       "markers, bold/italic/code markup and joins items into sentences")
            else:
                markdown, prose = prose_to_markdown(r.answer), r.answer
                how = ("the record's prose answer; the markdown side turns each sentence "
                       "into a '- ' bullet with its lead-in bolded")
            if markdown == prose or not prose.strip():
                skip("STYLE", r.rid, "the markdown and prose versions coincide")
                continue
            n = len(style)
            style.append(_row("STYLE", n, r.question, markdown, prose, "tie", "a",
                              f"markdown in slot a, prose in slot b, same words: {how} "
                              f"(record {r.rid})", r.rid))
            mirror.append(_row("STYLE_BA", n, r.question, prose, markdown, "tie", "b",
                               f"mirror of STYLE-{n}: prose in slot a, markdown in slot b "
                               f"(record {r.rid})", r.rid))
        rows += style + mirror
    if "LENGTH" in order:
        built = []
        for r in _select("LENGTH", recs, caps["LENGTH"], seed):
            if rewriter is not None:
                longer = rewriter(r.question, r.answer)
                if not isinstance(longer, str) or not longer.strip():
                    raise ValueError(f"`rewriter` returned {longer!r} for record {r.rid!r}; "
                                     "it must return a non-empty string")
                longer = longer.strip()
                how = "rewritten by `rewriter`"
            else:
                order_rng = np.random.default_rng(content_seed("probe-clauses", seed, r.rid,
                                                               r.answer))
                expanded = _expand(r.answer, order_rng.permutation(len(ELABORATION_CLAUSES)))
                if expanded is None:
                    skip("LENGTH", r.rid, "no sentence can take an elaboration clause")
                    continue
                longer, n_clauses = expanded
                how = (f"{n_clauses} content-free elaboration clauses appended to its "
                       "sentences")
            w0, w1 = _n_words(r.answer), _n_words(longer)
            if w0 == w1:
                skip("LENGTH", r.rid, "the rewritten answer has the same number of words")
                continue
            built.append((r, longer, how, w0, w1))
        for n, ((r, longer, how, w0, w1), swap) in enumerate(
                zip(built, _swaps("LENGTH", len(built), seed))):
            a, b = (longer, r.answer) if swap else (r.answer, longer)
            slot_orig, slot_new = ("b", "a") if swap else ("a", "b")
            target = slot_new if w1 > w0 else slot_orig
            rows.append(_row(
                "LENGTH", n, r.question, a, b, "tie", target,
                f"slot {slot_orig} is the answer of record {r.rid} ({w0} words); slot "
                f"{slot_new} is it {how} ({w1} words, {w1 / w0:.2f}x); no new content; "
                f"target = the longer side ({target})", r.rid))
    if "TRUNCATION" in order:
        built = []
        eligible = []
        for r in recs:
            cut = _truncate(r.answer)
            if cut is None:
                skip("TRUNCATION", r.rid, f"fewer than 3 sentences "
                     f"({len(_sentence_spans(r.answer))})")
            else:
                eligible.append(r)
                built.append(cut)
        by_rid = dict(zip((r.rid for r in eligible), built))
        chosen = _select("TRUNCATION", eligible, caps["TRUNCATION"], seed)
        for n, (r, swap) in enumerate(zip(chosen, _swaps("TRUNCATION", len(chosen), seed))):
            short, k, n_sent = by_rid[r.rid]
            complete = "b" if swap else "a"
            a, b = (short, r.answer) if swap else (r.answer, short)
            ws, wc = _n_words(short), _n_words(r.answer)
            rows.append(_row(
                "TRUNCATION", n, r.question, a, b, complete, complete,
                f"slot {'a' if swap else 'b'} is the first {k} of {n_sent} sentences of the "
                f"answer of record {r.rid} ({ws} of {wc} words, {ws / wc:.0%}), cut at a "
                f"sentence boundary; slot {complete} is complete and the expected winner",
                r.rid))
    if "MODEL_ORIGIN" in order:
        rows += _model_origin(recs, caps["MODEL_ORIGIN"], seed, skip)
    frame = pd.DataFrame(rows, columns=list(PROBE_COLUMNS))
    for column in ("target", "source_a", "source_b"):  # empty is None, not NaN
        frame[column] = pd.Series([r[column] for r in rows], index=frame.index, dtype=object)
    frame.attrs["seed"] = seed
    frame.attrs["skipped"] = skipped
    if skipped:
        parts = []
        for kind in dict.fromkeys(s["bias_type"] for s in skipped):
            mine = [s for s in skipped if s["bias_type"] == kind]
            reasons = list(dict.fromkeys(s["reason"] for s in mine))
            why = reasons[0] + ("; ..." if len(reasons) > 1 else "")
            if mine[0]["record_id"] is None:  # the whole kind could not be built
                parts.append(f"{kind}: none built ({why})")
            else:
                parts.append(f"{kind}: {len(mine)} record(s) skipped ({why})")
        warnings.warn(f"some probes could not be built: {'; '.join(parts)}; see "
                      "probes.attrs['skipped']", ProbeWarning, stacklevel=2)
    return frame


def _model_origin(recs: list[_Record], cap: int | None, seed: int, skip) -> list[dict]:
    sources = sorted({r.source for r in recs if r.source is not None})
    if len(sources) < 2:
        skip("MODEL_ORIGIN", None, f"fewer than two sources ({len(sources)}); records need a "
             "`source` column naming the model that wrote each answer")
        return []
    questions: dict[str, dict[str, list[_Record]]] = {}
    for r in recs:
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
        skip("MODEL_ORIGIN", None, "no question was answered by two different sources")
        return []
    interleaved = [(pair, cand[r]) for r in range(max(len(c) for _, c in per_pair))
                   for pair, cand in per_pair if r < len(cand)]
    if cap is not None:
        interleaved = interleaved[:cap]
    swaps = {}
    for (x, y), _ in per_pair:
        count = sum(pair == (x, y) for pair, _ in interleaved)
        swaps[(x, y)] = list(_swaps(f"MODEL_ORIGIN:{x}\x1f{y}", count, seed))
    rows = []
    for n, ((x, y), (q, rx, ry)) in enumerate(interleaved):
        first, second = (ry, rx) if swaps[(x, y)].pop(0) else (rx, ry)
        rows.append(_row(
            "MODEL_ORIGIN", n, q, first.answer, second.answer, "tie", None,
            f"independent answers to the same question by {first.source} (slot a, record "
            f"{first.rid}) and {second.source} (slot b, record {second.rid}); slots drawn "
            "from the seed", f"{first.rid}+{second.rid}", first.source, second.source))
    return rows


# --------------------------------------------------------------------------------------------
# Scoring


def _cluster_bootstrap(scores: np.ndarray, clusters: np.ndarray, *, level: float, n_boot: int,
                       rng: np.random.Generator) -> Estimate:
    """Mean score with a percentile bootstrap that resamples clusters (probes, or a STYLE
    pair with its mirror) and divides resampled sums by resampled counts."""
    n = scores.size
    if n == 0:
        return Estimate(math.nan, math.nan, math.nan, 0, level)
    codes, inverse = np.unique(clusters, return_inverse=True)
    sums = np.bincount(inverse, weights=scores, minlength=codes.size)
    counts = np.bincount(inverse, minlength=codes.size).astype(float)
    draws = rng.integers(0, codes.size, (n_boot, codes.size))
    means = sums[draws].sum(axis=1) / counts[draws].sum(axis=1)
    alpha = (1 - level) / 2
    low, high = np.quantile(means, [alpha, 1 - alpha])
    return Estimate(float(scores.mean()), float(low), float(high), int(n), level)


def _check_score_args(probes, verdicts, calls, judge_family, level, n_boot) -> None:
    if not isinstance(probes, pd.DataFrame):
        raise TypeError(f"`probes` must be the DataFrame from build_probes; got "
                        f"{type(probes).__name__}")
    for column in ("id", "bias_type", "target"):
        if column not in probes.columns:
            raise ValueError(f"`probes` needs a `{column}` column (the table build_probes "
                             "returns)")
    if probes["id"].astype(str).duplicated().any():
        dup = probes["id"].astype(str)[probes["id"].astype(str).duplicated()].iloc[0]
        raise ValueError(f"`probes` has the id {dup!r} more than once; ids must be unique")
    unknown = sorted(set(probes["bias_type"]) - set(BIAS_TYPES))
    if unknown:
        raise ValueError(f"`probes` column `bias_type` must be one of {', '.join(BIAS_TYPES)}; "
                         f"got {unknown[0]!r}")
    single = probes["bias_type"] != "MODEL_ORIGIN"
    bad = single & ~probes["target"].isin(["a", "b"])
    if bad.any():
        raise ValueError(f"`probes` row {probes.loc[bad, 'id'].iloc[0]!r}: `target` must be a "
                         f"or b; got {probes.loc[bad, 'target'].iloc[0]!r}")
    if (~single).any() and not {"source_a", "source_b"} <= set(probes.columns):
        raise ValueError("`probes` has MODEL_ORIGIN rows but no `source_a`/`source_b` columns")
    if not isinstance(verdicts, pd.DataFrame):
        raise TypeError(f"`verdicts` must be a DataFrame (judge_pairs(...).aggregate); got "
                        f"{type(verdicts).__name__}")
    for column in ("id", "winner"):
        if column not in verdicts.columns:
            raise ValueError(f"`verdicts` needs columns id and winner; `{column}` is missing")
    if "order" in verdicts.columns:
        raise ValueError("`verdicts` has an `order` column, so it looks like a per-call "
                         "table whose winners are in the shown order; pass "
                         "judge_pairs(...).aggregate as `verdicts` (and .calls as `calls`)")
    ids = verdicts["id"].astype(str)
    if ids.duplicated().any():
        raise ValueError(f"`verdicts` has more than one row for pair "
                         f"{ids[ids.duplicated()].iloc[0]!r}; give one aggregated verdict per "
                         "probe (judge_pairs(...).aggregate)")
    stray = sorted(set(ids) - set(probes["id"].astype(str)))
    if stray:
        raise ValueError(f"`verdicts` names pair {stray[0]!r}, which is not in `probes`")
    winners = verdicts["winner"].map(lambda w: "" if _missing(w) else str(w).strip().lower())
    bad = ~winners.isin(["a", "b", "tie", ""])
    if bad.any():
        raise ValueError(f"`verdicts` pair {ids[bad].iloc[0]!r}: `winner` must be a, b, tie "
                         f"or empty (abstain/invalid); got "
                         f"{verdicts.loc[bad, 'winner'].iloc[0]!r}")
    if calls is not None:
        if not isinstance(calls, pd.DataFrame) or not {"id", "order"} <= set(calls.columns):
            raise ValueError("`calls` must be the per-call table judge_pairs(...).calls, with "
                             "columns id and order")
        bad_order = ~calls["order"].isin(["ab", "ba"])
        if bad_order.any():
            raise ValueError(f"`calls` column `order` must be ab or ba; got "
                             f"{calls.loc[bad_order, 'order'].iloc[0]!r}")
    if judge_family is not None and (not isinstance(judge_family, str)
                                     or not judge_family.strip()):
        raise ValueError(f"`judge_family` must be a non-empty string or None; got "
                         f"{judge_family!r}")
    if not isinstance(level, (float, int)) or isinstance(level, bool) or not 0 < level < 1:
        raise ValueError(f"`level` must be between 0 and 1; got {level!r}")
    if isinstance(n_boot, bool) or not isinstance(n_boot, (int, np.integer)) or n_boot < 1:
        raise ValueError(f"`n_boot` must be a positive integer; got {n_boot!r}")


def score_probes(probes: pd.DataFrame, verdicts: pd.DataFrame, *,
                 calls: pd.DataFrame | None = None, judge_family: str | None = None,
                 level: float = 0.95, n_boot: int = 2000, rng=0) -> pd.DataFrame:
    """Signed bias scores of a judge on controlled probes [debiasing-strategies-study §3.5].

    For each group of probes, ``bias = P(target) - P(non-target)`` over valid verdicts
    (ties count in the denominator and for neither side), in [-1, 1], positive when the
    judge shows the bias of interest. Targets:

    * POSITION: the answer shown first. With ``calls`` (one presentation order per pair),
      that is the pair's a or b as actually shown; otherwise, and for pairs shown in both
      orders, slot a. ``judge_pairs`` strategies show each pair in an order hashed from its
      id (B0, S2, S4-S6) or in both orders (S1, S7, S8), so without ``calls`` the POSITION
      score measures the strategy's residual slot-a preference (about 0 by design), not the
      judge's first-position lean; a :class:`ProbeWarning` says so when ``verdicts`` come
      from ``judge_pairs``.
    * STYLE / STYLE_BA: the markdown side; a third row, ``STYLE (position-averaged)``,
      pools both halves (bootstrap over records, each with its mirror) when both exist.
    * LENGTH: the longer answer (length-aware, as built).
    * TRUNCATION: the complete answer; ``accuracy`` is the share of valid verdicts choosing
      it (ties count as wrong), which equals ``p_target``.
    * MODEL_ORIGIN: with ``judge_family``, the answer whose source equals it
      (case-insensitive) in one self-preference row; pairs without that source are dropped.
      Without ``judge_family`` (or when no pair has that source, with a
      :class:`ProbeWarning`), one model-preference row per source pair, target the
      alphabetically first source: positive means it is preferred.

    Parameters
    ----------
    probes : pandas.DataFrame
        From :func:`build_probes`.
    verdicts : pandas.DataFrame
        One aggregated verdict per probe in the probe's own a/b frame
        (``judge_pairs(...).aggregate``): ``id`` and ``winner`` in {a, b, tie}, empty for an
        abstention or invalid output (excluded from ``n`` and counted in ``n_invalid``).
        Probes without a verdict are counted in ``n_missing``.
    calls : pandas.DataFrame, optional
        ``judge_pairs(...).calls``; only ``id`` and ``order`` are used (POSITION target).
    judge_family : str, optional
        The judge's own source name, for self-preference.
    level : float
        Level of both intervals.
    n_boot : int
        Bootstrap replicates (the study uses 2000).
    rng : seed or numpy.random.Generator
        For the bootstrap.

    Returns
    -------
    pandas.DataFrame
        One row per group: ``bias_type`` (label), ``target`` (what counts as positive),
        ``n``, ``n_invalid``, ``n_missing``, ``p_target``, ``p_non_target``, ``p_tie``,
        ``bias``, ``ci_low``/``ci_high`` (percentile bootstrap of ``bias`` resampling probes),
        ``wilson_low``/``wilson_high`` (Wilson interval of ``p_target``), ``accuracy``
        (TRUNCATION only, else NaN) and ``level``. Statistics are NaN when ``n`` is 0.

    Raises
    ------
    ValueError, TypeError
        If an argument breaks its rule; the message names it.

    Examples
    --------
    >>> probes = build_probes([{"question": "Q?", "answer": "One. Two. Three."}],
    ...                       kinds=["POSITION", "TRUNCATION"])
    >>> verdicts = probes[["id", "target"]].rename(columns={"target": "winner"})
    >>> score_probes(probes, verdicts, n_boot=200)[["bias_type", "n", "bias"]].values.tolist()
    [['POSITION', 1, 1.0], ['TRUNCATION', 1, 1.0]]
    """
    _check_score_args(probes, verdicts, calls, judge_family, level, n_boot)
    from fairjudge.stats._agreement import wilson_interval  # lazily: added alongside

    gen = as_generator(rng)
    table = probes.copy()
    table["id"] = table["id"].astype(str)
    # None: no verdict for the probe; "": an abstention or invalid output
    given = {str(i): "" if _missing(w) else str(w).strip().lower()
             for i, w in zip(verdicts["id"], verdicts["winner"])}
    table["winner"] = pd.Series([given.get(i) for i in table["id"]], index=table.index,
                                dtype=object)
    table["cluster"] = table["id"]
    if "record_id" in table.columns:
        style = table["bias_type"].isin(["STYLE", "STYLE_BA"])
        table.loc[style, "cluster"] = "style:" + table.loc[style, "record_id"].astype(str)

    position = table["bias_type"] == "POSITION"
    position_target = "slot a (the answer shown first)"
    if calls is not None and position.any():
        shown = calls.assign(id=calls["id"].astype(str)).groupby("id")["order"].agg(
            lambda o: o.iloc[0] if o.nunique() == 1 else "both")
        orders = table.loc[position, "id"].map(shown)
        table.loc[position, "target"] = np.where(orders == "ba", "b", "a")
        known = orders.isin(["ab", "ba"])
        position_target = ("the answer shown first" if known.all() else
                           "the answer shown first (slot a where shown in both orders or "
                           "not judged)")
    elif position.any() and "strategy" in verdicts.columns:
        warnings.warn(
            "POSITION verdicts come from judge_pairs, which shows each pair in an order hashed "
            "from its id or in both orders; without `calls`, slot a is taken as shown first, "
            "so the POSITION score is the strategy's residual slot-a preference (about 0 by "
            "design), not the judge's first-position lean; pass calls=result.calls",
            ProbeWarning, stacklevel=2)

    groups: list[tuple[str, str, pd.DataFrame]] = []
    descriptions = {"POSITION": position_target, "STYLE": "the markdown answer (slot a)",
                    "STYLE_BA": "the markdown answer (slot b)",
                    "LENGTH": "the longer answer",
                    "TRUNCATION": "the complete answer"}
    for kind in BIAS_TYPES[:-1]:
        part = table[table["bias_type"] == kind]
        if len(part):
            groups.append((kind, descriptions[kind], part))
        if kind == "STYLE_BA" and {"STYLE", "STYLE_BA"} <= set(table["bias_type"]):
            groups.append((STYLE_POOLED, "the markdown answer (both slots)",
                           table[table["bias_type"].isin(["STYLE", "STYLE_BA"])]))
    origin = table[table["bias_type"] == "MODEL_ORIGIN"].copy()
    if len(origin):
        groups += _origin_groups(origin, judge_family)

    rows = []
    for label, description, part in groups:
        present = part[part["winner"].notna()]
        valid = present[present["winner"].isin(["a", "b", "tie"])]
        winner, target = valid["winner"].to_numpy(object), valid["target"].to_numpy(object)
        hit = winner == target
        tie = winner == "tie"
        miss = ~hit & ~tie
        n = len(valid)
        row = {"bias_type": label, "target": description, "n": n,
               "n_invalid": len(present) - n, "n_missing": len(part) - len(present),
               "p_target": math.nan, "p_non_target": math.nan, "p_tie": math.nan,
               "bias": math.nan, "ci_low": math.nan, "ci_high": math.nan,
               "wilson_low": math.nan, "wilson_high": math.nan, "accuracy": math.nan,
               "level": float(level)}
        if n:
            scores = hit.astype(float) - miss.astype(float)
            estimate = _cluster_bootstrap(scores, valid["cluster"].to_numpy(str), level=level,
                                          n_boot=int(n_boot), rng=gen)
            wilson = wilson_interval(int(hit.sum()), n, level=level)
            row.update(p_target=float(hit.mean()), p_non_target=float(miss.mean()),
                       p_tie=float(tie.mean()), bias=estimate.estimate,
                       ci_low=estimate.ci_low, ci_high=estimate.ci_high,
                       wilson_low=float(wilson.low), wilson_high=float(wilson.high))
            if label == "TRUNCATION":
                row["accuracy"] = float(hit.mean())
        rows.append(row)
    return pd.DataFrame(rows, columns=list(SCORE_COLUMNS))


def _origin_groups(origin: pd.DataFrame, judge_family: str | None) -> list:
    sa = origin["source_a"].astype(str)
    sb = origin["source_b"].astype(str)
    if judge_family is not None:
        family = judge_family.strip().lower()
        is_a, is_b = sa.str.lower() == family, sb.str.lower() == family
        own = origin[is_a | is_b].copy()
        if len(own):
            own["target"] = np.where(is_a[is_a | is_b], "a", "b")
            return [(f"MODEL_ORIGIN self-preference ({judge_family})",
                     f"the answer by {judge_family} (the judge's family)", own)]
        warnings.warn(
            f"no MODEL_ORIGIN probe has an answer by `judge_family`={judge_family!r} (sources: "
            f"{', '.join(sorted(set(sa) | set(sb)))}); reporting model preference per source "
            "pair instead of self-preference", ProbeWarning, stacklevel=3)
    groups = []
    pair = pd.Series([tuple(sorted(p)) for p in zip(sa, sb)], index=origin.index)
    for first, second in sorted(set(pair)):
        part = origin[pair == (first, second)].copy()
        part["target"] = np.where(part["source_a"].astype(str) == first, "a", "b")
        groups.append((f"MODEL_ORIGIN {first} vs {second}", f"the answer by {first}", part))
    return groups
