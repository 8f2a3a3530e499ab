"""PRD's Vicuna-80 peer reviews and human labels [Li et al., 2023, PRD]."""

from __future__ import annotations

import itertools
import re
from pathlib import Path

import pandas as pd

from fairjudge._util._warnings import FairjudgeInputError
from fairjudge.data._recorded._common import (
    WHERE_DATA,
    GoldRows,
    RecordedBenchmark,
    VerdictRows,
    check_known,
    data_root,
    items_frame,
    name_filter,
    pairs_frame,
    questions_frame,
    raw_text,
    read_jsonl,
)
from fairjudge.data._recorded._registry import RecordedDataset, register_recorded
from fairjudge.data._schema import Outcome

#: The five PRD Vicuna-80 models whose answers are staged (also the five LLM reviewers).
PRD_MODELS = ("bard", "claude", "gpt35", "gpt4", "vicuna-13b")
_PRD_SCORES = {1: Outcome.A.value, 2: Outcome.B.value, 3: Outcome.TIE.value}
# ``answer_<X>-vs-answer_<Y>-<reviewer>-reviewer[_-]threeclass.jsonl``; the vicuna-13b reviewer
# files have no ``threeclass`` suffix. Lazy groups work because "-vs-answer_" and
# "-<reviewer>-reviewer" are literal, so ``vicuna-13b`` is never split at its dash.
_PRD_FILE = ("^answer_(?P<x>.+?)-vs-answer_(?P<y>.+?)-{reviewer}-reviewer"
             "(?:[_-]threeclass)?\\.jsonl$")


def _prd_pair(question_id: str, x: str, y: str) -> tuple[str, str, str, bool]:
    """Pair id, its item_a and item_b (the alphabetically first model first), and whether
    ``x`` is that first model."""
    low, high = min(x, y), max(x, y)
    return (f"prd/{question_id}/{low}-vs-{high}", f"prd/{low}/{question_id}",
            f"prd/{high}/{question_id}", x == low)


def load_prd(*, reviewers=None, root=None) -> RecordedBenchmark:
    """Load PRD's Vicuna-80 peer reviews and human labels [Li et al., 2023, PRD].

    Five models answer 80 questions; each model also reviews every ordered pair of the five
    answers (so every pair is judged in both orders), and humans rated a subset.

    Parameters
    ----------
    reviewers : str or list of str, optional
        Reviewers to read, among ``bard``, ``claude``, ``gpt35``, ``gpt4``, ``vicuna-13b``;
        default all five.
    root : path, optional
        The shared data directory; default :func:`~fairjudge.data.shared_data_dir`.

    Returns
    -------
    RecordedBenchmark
        ``name`` is ``"prd-vicuna80"``. Items ``prd/<model>/<question_id>`` with
        ``source`` = model; questions indexed by the Vicuna question number (``"1"`` to
        ``"80"``) with ``category``. Pairs ``prd/<question_id>/<low>-vs-<high>`` for the 10
        unordered model pairs, ``item_a`` the alphabetically first model's answer. A review in
        ``answer_X-vs-answer_Y-...`` shows X's answer first (Assistant 1): score 1 -> ``a``,
        2 -> ``b``, 3 -> ``tie``, anything else invalid; ``order`` is ``"ab"`` when X is the
        pair's first model; ``judge`` is the reviewer, ``strategy`` ``"threeclass"``, ``raw``
        the review. Gold: the human majority per (pair, question) over the ratings of the 16
        human files that compare two of the five models, with ``n_annotators``; ``tie`` when
        no label has more than half of the ratings.

    Raises
    ------
    FileNotFoundError
        If a generations or questions file is missing (naming the path).
    FairjudgeInputError
        On an unknown reviewer or an inconsistent record.

    Examples
    --------
    >>> bench = load_prd(reviewers="gpt4")  # doctest: +SKIP
    >>> len(bench.items), len(bench.pairs), len(bench.verdicts)  # doctest: +SKIP
    (400, 800, 1600)
    """
    reviewers = name_filter(reviewers, "reviewers")
    check_known(reviewers, set(PRD_MODELS), "reviewers", "the PRD reviewers")
    reviewers = PRD_MODELS if reviewers is None else tuple(r for r in PRD_MODELS if r in reviewers)
    base = data_root(root) / "prd-vicuna80" / "data" / "vicuna80"
    name = "prd-vicuna80"

    question_path = base / "prompts" / "vicuna_questions.jsonl"
    question_records = read_jsonl(question_path)
    qids = [str(r["question_id"]) for r in question_records]
    question_text = {str(r["question_id"]): r["text"] for r in question_records}
    questions = questions_frame(qids, [r["text"] for r in question_records],
                                category=[r.get("category") for r in question_records])

    item_ids, texts, item_qids, sources = [], [], [], []
    answer_item = {}  # answer_id -> item id, to check that reviews name the answers we expect
    for model in PRD_MODELS:
        path = base / "generations" / f"answer_{model}.jsonl"
        for line, record in enumerate(read_jsonl(path), start=1):
            qid = str(record.get("question_id"))
            if qid not in question_text:
                raise FairjudgeInputError(f"{path.name} line {line}: question_id {qid!r} is not "
                                          f"in {question_path.name}")
            item_id = f"prd/{model}/{qid}"
            item_ids.append(item_id)
            texts.append(record["text"])
            item_qids.append(qid)
            sources.append(model)
            answer_item[record.get("answer_id")] = item_id
    if len(set(item_ids)) != len(item_ids):
        raise FairjudgeInputError(f"{base / 'generations'}: a model answers a question twice")

    pair_rows = [_prd_pair(q, x, y)[:3] + (q,)
                 for q in qids for x, y in itertools.combinations(sorted(PRD_MODELS), 2)]
    pairs = pairs_frame([p[0] for p in pair_rows], [p[3] for p in pair_rows],
                        [p[1] for p in pair_rows], [p[2] for p in pair_rows])

    verdicts = VerdictRows()
    for reviewer in reviewers:
        directory = base / f"ratings-{reviewer}"
        pattern = re.compile(_PRD_FILE.format(reviewer=re.escape(reviewer)))
        seen = {}
        # Only "answer_<X>-vs-answer_<Y>" names are read. ratings-gpt35 also holds two older
        # files for gpt35/gpt4 named "answer-gpt35-vs-answer-gpt4-..." (dashes after "answer"),
        # a re-run with different content that duplicates the underscore-named files; the glob
        # skips them. The "[_-]threeclass" suffix is NOT the tell: ratings-gpt4 mixes
        # "-reviewer-threeclass" and "-reviewer_threeclass" with each ordered pair only once.
        for path in sorted(directory.glob("answer_*-vs-answer_*.jsonl")):
            match = pattern.match(path.name)
            if match is None or match["x"] not in PRD_MODELS or match["y"] not in PRD_MODELS:
                raise FairjudgeInputError(
                    f"{path}: unexpected file name; expected answer_<X>-vs-answer_<Y>-"
                    f"{reviewer}-reviewer_threeclass.jsonl with X, Y among {', '.join(PRD_MODELS)}")
            x, y = match["x"], match["y"]
            if (x, y) in seen:
                raise FairjudgeInputError(f"{path}: pair {x} vs {y} already read from "
                                          f"{seen[(x, y)].name}")
            seen[(x, y)] = path
            for line, record in enumerate(read_jsonl(path), start=1):
                qid = str(record.get("question_id"))
                pair_id, low_item, high_item, x_low = _prd_pair(qid, x, y)
                shown = (low_item, high_item) if x_low else (high_item, low_item)
                if (answer_item.get(record.get("answer1_id")) != shown[0]
                        or answer_item.get(record.get("answer2_id")) != shown[1]):
                    raise FairjudgeInputError(
                        f"{path.name} line {line}: answer1_id/answer2_id do not name {x}'s and "
                        f"{y}'s answers to question {qid}")
                score = record.get("score")
                winner = _PRD_SCORES.get(score) if type(score) is int else None
                verdicts.add(item_a=shown[0], item_b=shown[1], winner=winner, judge=reviewer,
                             question_id=qid, pair_id=pair_id, strategy="threeclass",
                             order="ab" if x_low else "ba", raw=raw_text(record.get("text")))

    return RecordedBenchmark(
        name=name,
        items=items_frame(item_ids, texts, item_qids, sources),
        questions=questions,
        pairs=pairs,
        verdicts=verdicts.frame(name),
        gold=_prd_gold(base / "ratings-human", question_text),
    )


def _prd_gold(directory: Path, question_text: dict) -> pd.DataFrame:
    """Human majority labels in the pair frame, one row per (pair, question).

    How the human files were matched (checked against the staged data):

    * ``question_id`` is the Vicuna question number, the same key as
      ``vicuna_questions.jsonl``; every rating's ``text`` equals that question's text, which
      is re-checked here.
    * ``answer_X-vs-answer_Y`` shows X as Assistant 1, as in the LLM reviewer files (whose
      ``answer1_id`` names X's answer). The human files carry no answer ids, so this was
      verified by agreement: reading score 1 as "X better", human labels agree with the
      majority of the gpt4/claude/gpt35 reviewers on 72% of decisive ratings (83% in the
      claude-vs-* files); reading it as "Y better" gives 28% (17%).
    * Each (pair, question) is rated in one file only (X-vs-Y and Y-vs-X cover disjoint
      question subsets), by 3 annotators, or 1 in the claude-vs-* files, so no rating is
      counted twice.
    """
    if not directory.is_dir():
        raise FileNotFoundError(f"{directory}: no such directory; {WHERE_DATA}")
    pattern = re.compile(r"^answer_(?P<x>.+?)-vs-answer_(?P<y>.+?)-human-reviewer")
    votes: dict[tuple[int, str], list[str]] = {}  # (question number, pair id) -> labels
    frames: dict[str, tuple[str, str, str]] = {}  # pair id -> (question id, item_a, item_b)
    for path in sorted(directory.glob("answer_*-vs-answer_*-human-reviewer*.jsonl")):
        match = pattern.match(path.name)
        x, y = match["x"], match["y"]
        if x not in PRD_MODELS or y not in PRD_MODELS:
            continue  # guanaco-*: their answers are not staged
        for line, record in enumerate(read_jsonl(path), start=1):
            qid = str(record.get("question_id"))
            if question_text.get(qid) != record.get("text"):
                raise FairjudgeInputError(
                    f"{path.name} line {line}: question_id {qid!r} does not match the question "
                    "text of vicuna_questions.jsonl")
            score = record.get("score")
            label = _PRD_SCORES.get(score) if type(score) is int else None
            if label is None:
                raise FairjudgeInputError(f"{path.name} line {line}: field `score` must be 1, 2 "
                                          f"or 3; got {score!r}")
            pair_id, low_item, high_item, x_low = _prd_pair(qid, x, y)
            if not x_low:  # X was Assistant 1 but is the pair's second item
                label = Outcome(label).swapped().value
            votes.setdefault((int(qid), pair_id), []).append(label)
            frames[pair_id] = (qid, low_item, high_item)

    gold = GoldRows("n_annotators")
    for (_, pair_id), labels in sorted(votes.items()):
        counts = {label: labels.count(label) for label in set(labels)}
        best = max(counts, key=counts.__getitem__)
        # Strict majority (more than half the ratings) or else a tie; a tie majority is a tie.
        winner = best if 2 * counts[best] > len(labels) else Outcome.TIE.value
        qid, item_a, item_b = frames[pair_id]
        gold.add(pair_id=pair_id, question_id=qid, item_a=item_a, item_b=item_b, winner=winner,
                 n_annotators=len(labels))
    return gold.frame()


register_recorded(RecordedDataset(
    "prd-vicuna80",
    "PRD Vicuna-80: five models' answers peer-reviewed in both orders, human-majority gold",
    load_prd))
