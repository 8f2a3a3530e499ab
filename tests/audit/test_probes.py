"""Controlled bias probes: construction rules, reproducibility, scoring, and end to end."""

import itertools
import re
import warnings
from collections import Counter

import numpy as np
import pandas as pd
import pytest
from scipy import special, stats

import fairjudge.judges
import fairjudge.strategies
from fairjudge.audit.probes import (BIAS_TYPES, PROBE_COLUMNS, SCORE_COLUMNS, ProbeWarning,
                                    build_probes, content_words, markdown_to_prose,
                                    prose_to_markdown, score_probes, split_sentences)
from fairjudge.data import load_pairs, text_features
from fairjudge.data._statement_banks import ELABORATION_CLAUSES

# Three sources answer four questions; some answers are markdown, most are prose, every one
# has ten or more sentences, about 130 words (handwritten for these tests). The length gives
# the simulated judge a clear complete-vs-truncated gap, as the study's long truncation
# answers do [debiasing-strategies-study App. A].
QUESTIONS = {
    "vaccines": "How do vaccines train the immune system?",
    "seasons": "What causes the seasons on Earth?",
    "bread": "How should I store fresh bread?",
    "git": "Why is version control useful for software teams?",
}
ANSWERS = {
    ("vaccines", "gpt4"): (
        "Vaccines expose the immune system to a harmless version of a pathogen. This can "
        "be a weakened virus, an inactivated one, or just a piece of it such as a surface "
        "protein. The body responds by producing antibodies and activating T cells that "
        "recognize that piece. Some of these cells become long-lived memory cells. If the "
        "real pathogen appears later, the memory cells respond quickly and strongly. The "
        "infection is often stopped before it causes serious illness. Booster doses remind "
        "the immune system and keep the memory strong. Vaccines are tested in large "
        "clinical trials before approval. Researchers compare vaccinated and unvaccinated "
        "volunteers to measure protection and side effects. Most side effects are mild, "
        "such as a sore arm or a low fever for a day. When many people are immune, the "
        "pathogen spreads less, which also protects those who cannot be vaccinated."),
    ("vaccines", "claude"): (
        "A vaccine works like a training exercise for your immune defenses. It presents an "
        "antigen, a molecular signature of a germ, without causing the disease itself. B "
        "cells learn to make antibodies that fit the antigen, while helper T cells "
        "coordinate the response. After the exercise, memory B and T cells remain in the "
        "body for years. When the actual germ arrives, these cells recognize it at once. "
        "The second response is faster and larger than the first, which is why vaccinated "
        "people usually get less sick. Different vaccine platforms deliver the antigen in "
        "different ways. mRNA vaccines give cells instructions to build the antigen for a "
        "short time. Viral vector vaccines use a harmless virus as the delivery vehicle. "
        "Protein subunit vaccines inject the antigen directly, often with an adjuvant that "
        "strengthens the response. All of them aim for the same result, a prepared and "
        "lasting memory."),
    ("vaccines", "llama"): (
        "## How vaccines work\n\n"
        "Vaccines teach the immune system to recognize a germ before a real infection.\n\n"
        "- **Exposure:** the vaccine delivers an antigen, such as a protein from the "
        "virus.\n"
        "- **Response:** B cells produce antibodies and T cells learn to spot infected "
        "cells.\n"
        "- **Memory:** long-lived memory cells stay in the blood and lymph nodes.\n\n"
        "When the real germ appears, the memory cells react within days instead of weeks. "
        "This quick response usually prevents severe disease.\n\n"
        "## Why boosters help\n\n"
        "Immunity can fade over months or years, and some viruses change their surface "
        "proteins. A booster dose refreshes the memory cells and can update the antigen to "
        "match new variants. Public health agencies publish schedules that say when each "
        "booster is due. Following the schedule keeps protection high for individuals and "
        "for the community."),
    ("seasons", "gpt4"): (
        "The seasons are caused by the tilt of Earth's axis, which is about 23.5 degrees. "
        "As Earth orbits the Sun, the tilt stays pointed in the same direction in space. "
        "For part of the year the Northern Hemisphere leans toward the Sun. Sunlight then "
        "strikes it more directly and days are longer, so it is summer there. Six months "
        "later the Northern Hemisphere leans away and receives weaker, slanted light. "
        "Distance from the Sun matters very little, since Earth is actually closest to the "
        "Sun in January. The solstices mark the days when one hemisphere is tilted most "
        "strongly toward the Sun. The equinoxes fall between them, when day and night are "
        "roughly equal everywhere. Near the equator the seasons are mild because sunlight "
        "stays fairly direct all year. Near the poles the effect is extreme, with months "
        "of daylight in summer and months of darkness in winter."),
    ("seasons", "claude"): (
        "# Why Earth has seasons\n\n"
        "Earth's axis is tilted by roughly 23.5 degrees relative to its orbit.\n\n"
        "1. In June the Northern Hemisphere tilts toward the Sun and gets direct "
        "sunlight.\n"
        "2. In December it tilts away, so sunlight arrives at a low angle.\n"
        "3. The Southern Hemisphere experiences the opposite season at the same time.\n\n"
        "Longer days and a higher Sun angle both add energy. The changing distance between "
        "Earth and the Sun plays only a minor role.\n\n"
        "## Seasonal lag\n\n"
        "The warmest weeks usually come after the summer solstice, not on it. Oceans and "
        "land store heat and release it slowly, so temperatures keep rising for a while. "
        "The same lag makes the coldest weeks arrive after the winter solstice. Coastal "
        "places feel this delay more strongly than inland places, because water holds heat "
        "longer."),
    ("seasons", "llama"): (
        "Seasons happen because Earth spins on a tilted axis. The tilt means each "
        "hemisphere takes turns facing the Sun more directly. When your hemisphere faces "
        "the Sun, the Sun climbs higher in the sky and the days grow longer. More energy "
        "reaches the ground, and temperatures rise into summer. When your hemisphere faces "
        "away, the Sun stays low and the nights are long. Winter follows as the ground "
        "loses more heat than it gains. Spring and autumn are the transitions between "
        "these two states. Many plants and animals time their life cycles to these changes "
        "in daylight. Birds migrate, trees drop their leaves, and some mammals hibernate "
        "through the cold months. Other planets have seasons too, and their strength "
        "depends on how far each planet's axis is tilted."),
    ("bread", "gpt4"): (
        "**Short term:** keep bread at room temperature in a paper bag or a bread box.\n\n"
        "- Avoid the refrigerator, because cold air makes bread go stale faster.\n"
        "- Plastic bags keep bread soft but can trap moisture and encourage mold.\n"
        "- For longer storage, slice the loaf and freeze it in an airtight bag.\n\n"
        "Frozen slices can be toasted straight from the freezer. Most bread stays fresh "
        "for two or three days on the counter.\n\n"
        "## Reviving stale bread\n\n"
        "A slightly stale loaf can be refreshed in the oven. Run it briefly under the tap, "
        "then bake it at a moderate heat for about ten minutes. The water turns to steam "
        "and softens the crumb while the crust crisps again. Eat the revived bread soon, "
        "because it will stale quickly afterwards. Very dry bread is still useful for "
        "croutons, bread pudding, or breadcrumbs."),
    ("bread", "claude"): (
        "Fresh bread keeps best at room temperature for the first couple of days. A bread "
        "box or a cloth bag lets it breathe while slowing moisture loss. The refrigerator "
        "is a poor choice, since cold temperatures speed up staling. If you will not "
        "finish the loaf soon, slice it and freeze it. Wrap the slices tightly to prevent "
        "freezer burn. You can toast them directly from frozen whenever you need them. "
        "Homemade bread without preservatives tends to stale and mold sooner than bread "
        "from a supermarket. Sourdough keeps longer than most loaves because its acidity "
        "slows mold growth. Keep the cut side of a loaf face down on the board to protect "
        "the crumb. Check stored bread for mold before eating it, and throw away any loaf "
        "that shows fuzzy spots."),
    ("bread", "llama"): (
        "Store bread in a cool, dry place away from direct sunlight. Crusty loaves do well "
        "in a paper bag, which keeps the crust crisp. Soft sandwich bread can go in a "
        "sealed plastic bag to stay moist. Do not put bread in the fridge unless your "
        "kitchen is very humid. For anything you cannot eat within three days, freezing is "
        "the best option. Thaw slices at room temperature or toast them. Bread boxes work "
        "best when they are not packed too tightly, so air can move around the loaf. Clean "
        "the box now and then to remove crumbs that can carry mold spores. Large "
        "households may prefer to bake or buy smaller loaves more often. Leftover heels "
        "and crusts can be dried and ground into crumbs for cooking."),
    ("git", "gpt4"): (
        "Version control records every change to a codebase along with who made it and "
        "why. Teams can work on separate branches without overwriting each other's work. "
        "When a change introduces a bug, developers can compare versions and roll back "
        "quickly. Code review becomes easier because each change is a small, visible unit. "
        "The history also serves as documentation of how the project evolved. Finally, a "
        "shared remote repository acts as a backup of the entire project. Automated tests "
        "can run on every change before it is merged. Release tags mark exactly which code "
        "shipped to customers. New team members can read the history to understand why "
        "decisions were made. Together these practices make a team faster and its software "
        "more reliable."),
    ("git", "claude"): (
        "## Benefits of version control\n\n"
        "- **History:** every commit records what changed, who changed it, and why.\n"
        "- **Collaboration:** branches let several people work in parallel and merge "
        "later.\n"
        "- **Safety:** mistakes can be undone by reverting to an earlier commit.\n"
        "- **Review:** pull requests make each change easy to inspect before it lands.\n\n"
        "Tools such as `git` also keep full copies of the repository on each machine. That "
        "makes the project resilient to the loss of any single server.\n\n"
        "## Good habits\n\n"
        "Small, focused commits are easier to review and to revert. Clear commit messages "
        "explain the reason for a change, not only its content. Teams often agree on a "
        "branching model so that everyone knows where new work should start. Protected "
        "main branches prevent untested code from reaching production by accident."),
    ("git", "llama"): (
        "Without version control, a team quickly loses track of which file is the latest. "
        "Version control solves this by keeping a complete history of the project. Each "
        "developer can experiment on a branch and merge the result when it is ready. "
        "Conflicts between edits are detected and shown instead of silently lost. Releases "
        "can be tagged, so anyone can rebuild an old version exactly. It also makes "
        "automated testing and deployment much easier to set up. Blame views show who last "
        "touched each line, which helps when asking questions about old code. Bisecting "
        "the history can pinpoint the exact commit that introduced a regression. Open "
        "source projects depend on these features to accept contributions from strangers. "
        "Even solo developers benefit, because the history protects them from their own "
        "mistakes."),
}
RECORDS = [{"id": f"{q}-{s}", "question": QUESTIONS[q], "answer": text, "source": s}
           for (q, s), text in ANSWERS.items()]
SOURCES = ("claude", "gpt4", "llama")


def _markdown_count(text):
    return int(text_features([text]).loc[0, "markdown"])


@pytest.fixture(scope="module")
def probes():
    return build_probes(RECORDS, seed=0)


# ------------------------------------------------------------------ construction and seeding

def test_table_shape_and_kinds(probes):
    assert list(probes.columns) == list(PROBE_COLUMNS)
    counts = probes["bias_type"].value_counts().to_dict()
    assert counts == {"POSITION": 12, "STYLE": 12, "STYLE_BA": 12, "LENGTH": 12,
                      "TRUNCATION": 12, "MODEL_ORIGIN": 12}
    assert list(dict.fromkeys(probes["bias_type"])) == list(BIAS_TYPES)
    assert probes["id"].is_unique
    assert all(re.fullmatch(rf"{kind}-\d+", i) for i, kind in zip(probes["id"],
                                                                  probes["bias_type"]))
    expected = probes.set_index("bias_type")["expected_verdict"]
    assert set(expected.drop("TRUNCATION")) == {"tie"}
    assert probes["construction_notes"].str.len().min() > 20
    assert probes.attrs["skipped"] == []


def test_same_seed_is_byte_identical_and_another_seed_differs():
    first = build_probes(RECORDS, seed=7)
    assert first.to_json() == build_probes(RECORDS, seed=7).to_json()
    assert first.to_json() == build_probes(pd.DataFrame(RECORDS), seed=7).to_json()
    other = build_probes(RECORDS, seed=8)
    assert first.to_json() != other.to_json()
    slots = {seed: tuple(build_probes(RECORDS, seed=seed, kinds=["LENGTH", "TRUNCATION"])
                         ["target"]) for seed in range(4)}
    assert len(set(slots.values())) > 1


def test_position_probes_repeat_the_answer(probes):
    position = probes[probes["bias_type"] == "POSITION"]
    assert (position["a"] == position["b"]).all()
    assert set(position["target"]) == {"a"}
    assert sorted(position["a"]) == sorted(r["answer"] for r in RECORDS)


def test_style_keeps_the_words_in_both_directions(probes):
    style = probes[probes["bias_type"] == "STYLE"]
    originals = {r["id"]: r["answer"] for r in RECORDS}
    directions = Counter()
    for row in style.itertuples():
        original = originals[row.record_id]
        assert original in (row.a, row.b)  # the record's own answer is one side
        directions["md->prose" if original == row.a else "prose->md"] += 1
        assert content_words(row.a) == content_words(row.b)
        features = text_features([row.a, row.b])
        assert features.loc[0, "markdown"] > 0 and features.loc[1, "markdown"] == 0
        if original == row.b:  # built markdown: a bullet per sentence, lead-ins bolded
            assert features.loc[0, "md_list_items"] == len(split_sentences(original))
            assert features.loc[0, "md_bold"] == features.loc[0, "md_list_items"]
        assert "**" not in row.b and "`" not in row.b and "#" not in row.b
        assert row.target == "a" and row.expected_verdict == "tie"
    assert directions["md->prose"] == 4 and directions["prose->md"] == 8


def test_style_ba_mirrors_style(probes):
    style = probes[probes["bias_type"] == "STYLE"].reset_index(drop=True)
    mirror = probes[probes["bias_type"] == "STYLE_BA"].reset_index(drop=True)
    assert (mirror["a"] == style["b"]).all() and (mirror["b"] == style["a"]).all()
    assert set(mirror["target"]) == {"b"}
    assert list(mirror["id"].str.split("-").str[1]) == list(style["id"].str.split("-").str[1])


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


def test_truncation_is_a_sentence_prefix_near_40_percent(probes):
    truncation = probes[probes["bias_type"] == "TRUNCATION"]
    originals = {r["id"]: r["answer"] for r in RECORDS}
    for row in truncation.itertuples():
        complete = getattr(row, row.target)
        short = row.b if row.target == "a" else row.a
        assert complete == originals[row.record_id] and row.expected_verdict == row.target
        sentences = split_sentences(complete)
        k = len(split_sentences(short))
        assert 1 <= k < len(sentences)
        assert split_sentences(short) == sentences[:k]
        assert complete.startswith(short) and complete[len(short)].isspace()
        share = len(short.split()) / len(complete.split())
        assert 0.25 <= share <= 0.55
        # no other sentence boundary is closer to 40% of the words
        cumulative = [len(" ".join(sentences[:j]).split()) for j in range(1, len(sentences))]
        goal = 0.4 * len(complete.split())
        assert abs(len(short.split()) - goal) == min(abs(c - goal) for c in cumulative)
    assert set(truncation["target"]) == {"a", "b"}


def test_truncation_skips_short_answers_and_says_so():
    records = [{"id": "long", "question": "Q?", "answer": "One here. Two here. Three here."},
               {"id": "short", "question": "Q?", "answer": "Only one sentence. And two."}]
    with pytest.warns(ProbeWarning, match=r"TRUNCATION: 1 record\(s\) skipped \(fewer than 3"):
        probes = build_probes(records, kinds=["TRUNCATION"])
    assert list(probes["record_id"]) == ["long"]
    assert probes.attrs["skipped"] == [{"bias_type": "TRUNCATION", "record_id": "short",
                                        "reason": "fewer than 3 sentences (2)"}]


def test_length_expansion_is_2_to_3x_and_keeps_the_sentences(probes):
    length = probes[probes["bias_type"] == "LENGTH"]
    originals = {r["id"]: r["answer"] for r in RECORDS}
    for row in length.itertuples():
        original = originals[row.record_id]
        expanded = row.a if row.b == original else row.b
        assert original in (row.a, row.b) and expanded != original
        ratio = len(expanded.split()) / len(original.split())
        assert 2.0 <= ratio <= 3.0
        assert getattr(row, row.target) == expanded  # the longer side is the target
        assert not Counter(content_words(original)) - Counter(content_words(expanded))
        for sentence in split_sentences(original):
            assert sentence.rstrip(".!") in expanded
        assert any(clause in expanded for clause in ELABORATION_CLAUSES)
    assert (length["target"] == "a").sum() == 6  # slots balanced: half of 12, by construction


def test_length_uses_a_rewriter_and_targets_the_actually_longer_side():
    def rewriter(question, answer):
        return answer.split(".")[0] + "." if "short" in question else answer + " " + answer

    records = [{"id": "x", "question": "make it long", "answer": "Alpha beta. Gamma delta."},
               {"id": "y", "question": "make it short", "answer": "Alpha beta. Gamma delta."}]
    probes = build_probes(records, kinds=["LENGTH"], rewriter=rewriter, seed=3)
    for row in probes.itertuples():
        longer = row.a if len(row.a.split()) > len(row.b.split()) else row.b
        assert getattr(row, row.target) == longer
    assert "rewriter" in probes["construction_notes"].iloc[0]


def test_model_origin_covers_every_source_pair_and_randomises_slots(probes):
    origin = probes[probes["bias_type"] == "MODEL_ORIGIN"]
    by_record = {r["id"]: r for r in RECORDS}
    pairs = Counter(tuple(sorted(p)) for p in zip(origin["source_a"], origin["source_b"]))
    assert pairs == {pair: 4 for pair in itertools.combinations(SOURCES, 2)}
    for row in origin.itertuples():
        rec_a, rec_b = (by_record[r] for r in row.record_id.split("+"))
        assert (rec_a["answer"], rec_b["answer"]) == (row.a, row.b)
        assert rec_a["question"] == rec_b["question"] == row.question
        assert (rec_a["source"], rec_b["source"]) == (row.source_a, row.source_b)
        assert row.source_a != row.source_b and row.target is None
    for pair in itertools.combinations(SOURCES, 2):
        firsts = origin.loc[[tuple(sorted(p)) == pair for p in
                             zip(origin["source_a"], origin["source_b"])], "source_a"]
        assert set(firsts) == set(pair)  # each source of the pair sits in slot a sometimes
        questions = origin.loc[[tuple(sorted(p)) == pair for p in
                                zip(origin["source_a"], origin["source_b"])], "question"]
        assert questions.nunique() == 4
    other = build_probes(RECORDS, seed=1, kinds=["MODEL_ORIGIN"])
    assert list(other["source_a"]) != list(origin["source_a"])


def test_model_origin_needs_two_sources():
    records = [{"question": "Q?", "answer": "One. Two. Three.", "source": "gpt4"}]
    with pytest.warns(ProbeWarning, match="MODEL_ORIGIN: none built .fewer than two sources"):
        probes = build_probes(records, kinds=["POSITION", "MODEL_ORIGIN"])
    assert list(probes["bias_type"]) == ["POSITION"]


def test_per_kind_caps_and_round_robin():
    probes = build_probes(RECORDS, per_kind=3, seed=2)
    counts = probes["bias_type"].value_counts().to_dict()
    assert counts == {kind: 3 for kind in BIAS_TYPES}
    origin = probes[probes["bias_type"] == "MODEL_ORIGIN"]
    assert len({tuple(sorted(p)) for p in zip(origin["source_a"], origin["source_b"])}) == 3
    capped = build_probes(RECORDS, per_kind={"LENGTH": 2}, kinds=["LENGTH", "POSITION"])
    assert capped["bias_type"].value_counts().to_dict() == {"LENGTH": 2, "POSITION": 12}


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


# ------------------------------------------------------------------ argument validation

@pytest.mark.parametrize("kwargs, error, message", [
    ({"kinds": ["POSITION", "SHOUTING"]}, ValueError, "`kinds` must be chosen from"),
    ({"kinds": []}, ValueError, "`kinds` must be a non-empty list"),
    ({"kinds": ["STYLE_BA"]}, ValueError, "`kinds` names STYLE_BA"),
    ({"seed": -1}, ValueError, "`seed` must be a non-negative integer"),
    ({"seed": 1.5}, ValueError, "`seed` must be a non-negative integer"),
    ({"per_kind": 0}, ValueError, "`per_kind` must be a positive integer"),
    ({"per_kind": {"LENGTH": 2}, "kinds": ["POSITION"]}, ValueError,
     "`per_kind` names 'LENGTH'"),
    ({"rewriter": "gpt-4"}, TypeError, "`rewriter` must be a callable"),
])
def test_build_argument_errors(kwargs, error, message):
    with pytest.raises(error, match=re.escape(message)):
        build_probes(RECORDS, **kwargs)


@pytest.mark.parametrize("records, error, message", [
    ("answers.jsonl", TypeError, "`records` must be a pandas DataFrame or a list of dicts"),
    ([], ValueError, "`records` is empty"),
    ([{"question": "Q?"}], ValueError, "`records` record 0: field `answer` must be a "
                                       "non-empty string"),
    ([{"question": " ", "answer": "A."}], ValueError, "field `question` must be"),
    ([{"id": 1, "question": "Q?", "answer": "A."}, {"id": 1, "question": "Q?", "answer": "B."}],
     ValueError, "`records` records 0 and 1 share the id '1'"),
])
def test_record_errors(records, error, message):
    with pytest.raises(error, match=re.escape(message)):
        build_probes(records)


def test_rewriter_must_return_text():
    with pytest.raises(ValueError, match="`rewriter` returned None for record 'vaccines-gpt4'"):
        build_probes(RECORDS[:1], kinds=["LENGTH"], rewriter=lambda q, a: None)


def test_score_argument_errors(probes):
    verdicts = pd.DataFrame({"id": probes["id"], "winner": "tie"})
    cases = [
        ({"verdicts": verdicts.drop(columns="winner")},
         "`verdicts` needs columns id and winner"),
        ({"verdicts": verdicts.assign(winner="A>B")}, "`winner` must be a, b, tie or empty"),
        ({"verdicts": pd.concat([verdicts, verdicts])}, "`verdicts` has more than one row"),
        ({"verdicts": verdicts.assign(order="ab")}, "looks like a per-call table"),
        ({"verdicts": verdicts.head(1).assign(id="nope")}, "`verdicts` names pair 'nope'"),
        ({"level": 1.5}, "`level` must be between 0 and 1"),
        ({"n_boot": 0}, "`n_boot` must be a positive integer"),
        ({"judge_family": ""}, "`judge_family` must be a non-empty string"),
        ({"calls": pd.DataFrame({"id": ["POSITION-0"]})}, "`calls` must be the per-call table"),
        ({"probes": probes.drop(columns="target")}, "`probes` needs a `target` column"),
    ]
    for override, message in cases:
        kwargs = {"probes": probes, "verdicts": verdicts, **override}
        with pytest.raises(ValueError, match=re.escape(message)):
            score_probes(kwargs.pop("probes"), kwargs.pop("verdicts"), **kwargs)


# ------------------------------------------------------------------ scoring

def _verdicts(probes, choose):
    return pd.DataFrame({"id": probes["id"], "winner": [choose(r) for r in
                                                        probes.itertuples()]})


def test_scores_follow_the_definition(probes):
    # Always the target where there is one; MODEL_ORIGIN: the llama answer, else tie.
    def choose(row):
        if row.bias_type == "MODEL_ORIGIN":
            return {row.source_a: "a", row.source_b: "b"}.get("llama", "tie")
        return row.target

    verdicts = _verdicts(probes, choose)
    verdicts.loc[verdicts["id"] == "LENGTH-0", "winner"] = None  # an invalid output
    verdicts.loc[verdicts["id"] == "LENGTH-1", "winner"] = "tie"
    verdicts = verdicts[verdicts["id"] != "POSITION-0"]  # a missing verdict
    scores = score_probes(probes, verdicts, n_boot=300).set_index("bias_type")
    assert list(scores.reset_index().columns) == list(SCORE_COLUMNS)
    assert list(scores.index) == ["POSITION", "STYLE", "STYLE_BA", "STYLE (position-averaged)",
                                  "LENGTH", "TRUNCATION", "MODEL_ORIGIN claude vs gpt4",
                                  "MODEL_ORIGIN claude vs llama", "MODEL_ORIGIN gpt4 vs llama"]
    assert scores.loc["POSITION", ["n", "n_missing", "bias"]].tolist() == [11, 1, 1.0]
    assert scores.loc["STYLE (position-averaged)", "n"] == 24
    length = scores.loc["LENGTH"]
    assert (length["n"], length["n_invalid"]) == (11, 1)
    assert length["bias"] == pytest.approx(10 / 11) and length["p_tie"] == pytest.approx(1 / 11)
    assert length["ci_low"] <= length["bias"] <= length["ci_high"] <= 1
    assert length["wilson_low"] < 10 / 11 < length["wilson_high"]
    assert scores.loc["TRUNCATION", "accuracy"] == 1.0
    assert pd.isna(scores.loc["POSITION", "accuracy"])
    assert scores.loc["MODEL_ORIGIN claude vs gpt4", ["bias", "p_tie"]].tolist() == [0, 1]
    assert scores.loc["MODEL_ORIGIN claude vs llama", "bias"] == -1.0  # llama, not claude
    assert scores.loc["MODEL_ORIGIN gpt4 vs llama", "bias"] == -1.0

    self_pref = score_probes(probes, verdicts, judge_family="Llama", n_boot=300)
    row = self_pref[self_pref["bias_type"].str.startswith("MODEL_ORIGIN")]
    assert row["bias_type"].tolist() == ["MODEL_ORIGIN self-preference (Llama)"]
    assert row[["n", "bias"]].values.tolist() == [[8, 1.0]]
    with pytest.warns(ProbeWarning, match="reporting model preference per source pair"):
        fallback = score_probes(probes, verdicts, judge_family="mistral", n_boot=300)
    assert fallback["bias_type"].str.contains(" vs ").sum() == 3


def test_ties_and_the_non_target_are_scored_symmetrically(probes):
    style = probes[probes["bias_type"].isin(["STYLE", "STYLE_BA"])]
    verdicts = _verdicts(style, lambda r: "a")  # always slot a: markdown half the time
    scores = score_probes(style, verdicts, n_boot=300).set_index("bias_type")
    assert scores.loc["STYLE", "bias"] == 1.0 and scores.loc["STYLE_BA", "bias"] == -1.0
    pooled = scores.loc["STYLE (position-averaged)"]
    assert pooled["bias"] == 0.0 and pooled["p_target"] == 0.5
    assert pooled["ci_low"] == pooled["ci_high"] == 0.0  # each record contributes +1 and -1


# ------------------------------------------------------------------ end to end

def _judge(probes, **knobs):
    backend = fairjudge.judges.get_backend("simulated", **knobs)
    return fairjudge.strategies.judge_pairs(load_pairs(probes[["id", "question", "a", "b"]]),
                                            "B0", [backend])


POSITION_LOGIT = 1.0


def test_end_to_end_with_a_biased_simulated_judge(probes):
    """A judge with length and first-slot biases, run with six seeds (the simulated backend
    hashes its seed with each request, so a seed is an independent draw of every verdict).

    Per run, measured over 40 seeds: LENGTH bias always 1.0; TRUNCATION accuracy mean 0.90,
    minimum 0.75 (the old per-run ``>= 0.75`` failed ~2% of runs); POSITION bias mean 0.45,
    sd 0.24 (above 0 in 90% of runs; two pooled runs in ~99.6%). Over six runs: LENGTH bias
    > 0.5 in every run, mean TRUNCATION accuracy >= 0.75 (4 sd below its mean), and the mean
    POSITION bias within 4 standard errors of its closed form 2 sigmoid(1) - 1 = 0.46 (the
    binomial sd of one run of 12 identical-answer probes is 2 sqrt(p (1 - p) / 12)).
    """
    seeds = range(6)
    runs = []
    for seed in seeds:
        result = _judge(probes, bias=3.0, position=POSITION_LOGIT, seed=seed)
        scores = score_probes(probes, result.aggregate, calls=result.calls).set_index("bias_type")
        assert scores.loc["POSITION", "target"] == "the answer shown first"
        assert (scores["n"] + scores["n_invalid"] + scores["n_missing"] > 0).all()
        runs.append(scores)
    assert min(r.loc["LENGTH", "bias"] for r in runs) > 0.5
    assert np.mean([r.loc["TRUNCATION", "accuracy"] for r in runs]) >= 0.75
    p_first = special.expit(POSITION_LOGIT)
    position = [r.loc["POSITION", "bias"] for r in runs]
    n_probes = int(runs[0].loc["POSITION", "n"])
    se = 2 * np.sqrt(p_first * (1 - p_first) / (n_probes * len(seeds)))
    assert abs(np.mean(position) - (2 * p_first - 1)) < 4 * se, position
    # Without `calls` the first-shown slot is unknown: B0 hashes the order, so POSITION
    # would measure the strategy's residual slot-a preference; that is said out loud.
    with pytest.warns(ProbeWarning, match="pass calls=result.calls"):
        score_probes(probes, result.aggregate)


def test_end_to_end_with_an_unbiased_simulated_judge(probes):
    """An unbiased judge raises no warning, and its POSITION interval holds 0 (in 97.5% of
    40 measured seeds, so one run may miss): a one-sided binomial test over eight seeds that
    the coverage is not below 95% (fails below 5 of 8; false-failure rate 3e-5 at 97.5%)."""
    covered = 0
    for seed in range(8):
        result = _judge(probes, bias=0.0, position=0.0, seed=seed)
        with warnings.catch_warnings():
            warnings.simplefilter("error")
            scores = score_probes(probes, result.aggregate, calls=result.calls)
        position = scores.set_index("bias_type").loc["POSITION"]
        covered += position["ci_low"] <= 0 <= position["ci_high"]
    assert stats.binomtest(covered, 8, 0.95, alternative="less").pvalue > 1e-3, covered
