"""Text transforms of the probes: sentence splitting and markdown <-> prose conversion."""

from collections import Counter

import pytest

from fairjudge.data import text_features
from fairjudge.probes import (content_words, markdown_to_prose, prose_to_markdown,
                              split_sentences)


def _markdown_count(text):
    return int(text_features([text]).loc[0, "markdown"])


@pytest.mark.parametrize("text", [
    "Water the fern weekly. In dry rooms, mist it daily! Is it drooping? Then move it, e.g. "
    "away from the heater.",
    "# Fern care\n\n- **Light:** bright but *indirect*\n- water `weekly`\n\n"
    "Steps:\n1. loosen roots\n2. repot\n\n| Pot | Size |\n|---|---|\n| small | 10 cm |\n\n"
    "See [the guide](https://example.org/ferns) for more.",
    # real-answer cases that once merged two words: a code span glued to a letter, a
    # bracket glued to a word that is a formula, not a link
    "The `n`th term is **2**nd here. Then k2[C2H4](k1/k4) holds, see [docs](https://x.y).",
])
def test_style_conversions_keep_the_word_multiset(text):
    markdown = prose_to_markdown(text) if _markdown_count(text) == 0 else text
    prose = markdown_to_prose(text) if _markdown_count(text) > 0 else text
    assert Counter(content_words(markdown)) == Counter(content_words(prose))
    assert _markdown_count(markdown) > 0 and _markdown_count(prose) == 0


def test_split_sentences_rule():
    text = ("Dr. Lee met Mr. Park at 9 a.m. on Monday. They discussed the U.S. market, e.g. "
            "prices. \"Is it growing?\" she asked. Yes! J. R. R. Tolkien was not there.\n\n"
            "```python\nx = 1. \nY = 2\n```\nDone.")
    assert split_sentences(text) == [
        "Dr. Lee met Mr. Park at 9 a.m. on Monday.",
        "They discussed the U.S. market, e.g. prices.",
        "\"Is it growing?\" she asked.", "Yes!", "J. R. R. Tolkien was not there.",
        "```python\nx = 1. \nY = 2\n```", "Done."]
    listed = "## Steps\nFirst this.\n\n1. In June it is hot.\n2) In May too.\n- **Bold** item"
    assert split_sentences(listed) == ["## Steps", "First this.", "1. In June it is hot.",
                                       "2) In May too.", "- **Bold** item"]
