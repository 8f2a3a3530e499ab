"""One markdown definition (fairjudge.data._markdown) for the covariates and the STYLE probes.

The covariates (text_features) and the STYLE probes must agree on what is markdown: a text
the STYLE converter turns into prose has ``markdown == 0``, a text it turns into markdown
has ``markdown > 0``, and inline code, links and tables count for both.
"""

from __future__ import annotations

import pytest

from fairjudge.data import text_features
from fairjudge.data._markdown import MarkdownCounts, fenced_blocks, markdown_counts
from fairjudge.probes import (build_probes, content_words, has_markdown, markdown_to_prose,
                              prose_to_markdown)

MARKDOWN_ANSWERS = {
    "headers and lists": "# Care\n\n## Light\n- bright\n  - not direct\n1. water\n2) feed",
    "bold": "Water it **weekly** and __never__ in the sun.",
    "inline code only": "Run `pip install fern` and wait.",
    "link only": "See [the guide](https://example.org/ferns) for details.",
    "image only": "Here: ![a fern](fern.png) in bloom.",
    "table only": "| Pot | Size |\n|---|---|\n| small | 10 cm |",
    "table without separator": "| a | b |\n| c | d |",
    "setext and rule": "Title\n=====\n\nBody text here.\n\n- - -\n\n- item",
    "quote and list": "> quoted advice\n\n* one\n* two",
    "nested emphasis": "**Answer: ***3***** and ``double`` spans.",
    "tilde fence with prose": "Intro line.\n~~~\nprint(1)\n~~~\n- after the code",
}
PROSE_ANSWERS = {
    "plain": "Water the fern weekly. In dry rooms, mist it daily. Is it drooping? Move it.",
    "arithmetic stars": "It costs 2 * 3 * 4 dollars, and snake__case__name is an identifier.",
    "formula bracket": "Then k2[C2H4](k1/k4) holds at 9 a.m. every day.",
    "italics only": "It is *very* important to _never_ overwater.",
    "hash mid-line": "Use the # key, then press enter. Done.",
}


def _markdown(text: str) -> int:
    return int(text_features([text]).loc[0, "markdown"])


@pytest.mark.parametrize("name", sorted(MARKDOWN_ANSWERS))
def test_what_the_converter_turns_into_prose_has_no_markdown(name):
    text = MARKDOWN_ANSWERS[name]
    assert has_markdown(text) and _markdown(text) > 0
    prose = markdown_to_prose(text)
    assert _markdown(prose) == 0 and not has_markdown(prose), prose
    assert content_words(prose) == content_words(text)


@pytest.mark.parametrize("name", sorted(PROSE_ANSWERS))
def test_what_the_converter_turns_into_markdown_has_markdown(name):
    text = PROSE_ANSWERS[name]
    assert not has_markdown(text) and _markdown(text) == 0
    markdown = prose_to_markdown(text)
    assert _markdown(markdown) > 0 and has_markdown(markdown)
    assert content_words(markdown) == content_words(text)


@pytest.mark.parametrize("name, column", [("inline code only", "md_inline_code"),
                                          ("link only", "md_links"),
                                          ("image only", "md_links"),
                                          ("table only", "md_tables")])
def test_inline_code_links_and_tables_count_on_both_sides(name, column):
    # These three once disagreed: STYLE took such an answer as markdown while the
    # covariates gave it markdown == 0.
    text = MARKDOWN_ANSWERS[name]
    features = text_features([text]).loc[0]
    assert features[column] == 1 and features["markdown"] == 1
    probes = build_probes([{"id": "r", "question": "Q?", "answer": text}], kinds=["STYLE"])
    style = probes[probes["bias_type"] == "STYLE"].iloc[0]
    assert style["a"] == text  # kept as the markdown side, as the covariates see it
    assert text_features([style["b"]]).loc[0, "markdown"] == 0


def test_the_style_probe_table_agrees_with_the_covariates():
    answers = {**MARKDOWN_ANSWERS, **PROSE_ANSWERS}
    records = [{"id": name, "question": "Q?", "answer": text} for name, text in answers.items()]
    probes = build_probes(records, kinds=["STYLE"])
    style = probes[probes["bias_type"] == "STYLE"]
    assert len(style) == len(answers)
    features_a = text_features(style["a"])
    features_b = text_features(style["b"])
    assert (features_a["markdown"] > 0).all() and (features_b["markdown"] == 0).all()
    for row in style.itertuples():  # the original side is the one the covariates name
        original = answers[row.record_id]
        assert original == (row.a if _markdown(original) > 0 else row.b)


def test_markdown_inside_code_does_not_count():
    text = ("Intro `**not bold** [not](link) | no |` end.\n"
            "```yaml\n# not a header\n- not an item\n| not | a table |\n**not bold**\n```\n"
            "~~~\n[not](a link)\n~~~")
    counts = markdown_counts(text)
    assert counts == MarkdownCounts(code_blocks=2, inline_code=1)
    assert counts.total == _markdown(text) == 3


@pytest.mark.parametrize("text, expected", [
    # ATX headers: up to 3 spaces of indentation (4 is indented code), then a space or tab.
    ("# a\n   ### b\n#\tc\n    # code\n#no\n####### seven", {"headers": 3}),
    # A thematic break is not a list item; a list item needs a space or tab after its marker.
    ("* * *\n- - -\n---\n-\tx\n- y\n10) z\n3.14 no", {"list_items": 3}),
    # A table is a run of rows; a line between two rows starts a new table.
    ("| a | b |\n|---|---|\n| 1 | 2 |\n\ntext\n| c |\n| d |\nx\n| e |", {"tables": 3}),
    # Links not glued to a word; images count as links.
    ("[a](b) and ![c](d) but k2[C2H4](x) and [e] (f)", {"links": 2}),
    # Bold opens and closes on non-space, never across a nested delimiter.
    ("**a** __b__ ** c** snake__case__name ****", {"bold": 2}),
    # Inline code spans on one line; bold is looked for outside them.
    ("`a` and `**b**` on one line\na lone ` here\nand an empty `` there", {"inline_code": 2}),
])
def test_the_definition(text, expected):
    counts = markdown_counts(text).as_dict()
    assert {k: counts[k] for k in expected} == expected


def test_fences_close_only_on_a_bare_fence_of_the_same_kind_at_least_as_long():
    lines = ["```py", "code", "```js", "~~~", "```", "````", "x", "```", "`````", "```D```",
             "~~~~", "y", "~~~~~"]
    assert [(b.start, b.end, b.info) for b in fenced_blocks(lines)] == [(0, 4, "py"),
                                                                       (5, 8, ""),
                                                                       (10, 12, "")]
    # "```D```" is inline code, not a fence, and an unclosed fence opens nothing.
    assert markdown_counts("```D```\n```never closed\n# header").as_dict() == {
        "headers": 1, "list_items": 0, "bold": 0, "code_blocks": 0, "inline_code": 1,
        "links": 0, "tables": 0}


def test_markdown_counts_needs_a_string():
    with pytest.raises(TypeError, match="`text` must be a string; got int"):
        markdown_counts(3)
