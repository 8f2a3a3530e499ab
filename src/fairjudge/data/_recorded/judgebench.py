"""JudgeBench objective-correctness pairs and staged judge runs [Tan et al., 2024]."""

from __future__ import annotations

import re
from functools import partial

from fairjudge._util._warnings import FairjudgeInputError
from fairjudge.data._recorded._common import (
    GoldRows,
    RecordedBenchmark,
    VerdictRows,
    check_known,
    data_root,
    first_record,
    items_frame,
    name_filter,
    pairs_frame,
    questions_frame,
    raw_text,
    read_jsonl,
)
from fairjudge.data._recorded._registry import RecordedDataset, register_recorded
from fairjudge.data._schema import Outcome

_JUDGEBENCH_RESPONSE_MODELS = {
    "claude": "claude-3-5-sonnet-20240620",
    "gpt-4o": "gpt-4o-2024-05-13",
}
_JUDGEBENCH_OUTPUT_DIRS = ("outputs", "fork-devcomfort-research/outputs")
_JUDGEBENCH_FILE = re.compile(
    r"response_model=(?P<response_model>[^,]+),judge_name=(?P<judge_name>[^,]+),"
    r"judge_model=(?P<judge_model>.+?)\.jsonl(?:\.gz)?$"
)
# Decisions are written in the presentation frame of their game: "A" is the answer shown first.
_JUDGEBENCH_DECISIONS = {"A>B": Outcome.A.value, "B>A": Outcome.B.value, "A=B": Outcome.TIE.value}


def load_judgebench(pairs: str = "claude", *, judges=None, root=None) -> RecordedBenchmark:
    """Load JudgeBench objective-correctness pairs and the staged judge runs [Tan et al., 2024].

    Parameters
    ----------
    pairs : {"claude", "gpt-4o"}
        Which pair set: responses by ``claude-3-5-sonnet-20240620`` (270 pairs) or
        ``gpt-4o-2024-05-13`` (350 pairs).
    judges : str or list of str, optional
        Judges to read, by their ``judge`` name in the verdict table (the ``judge_model`` of
        the judgments, e.g. ``"claude-3-haiku-20240307"`` or
        ``"openrouter/inception/mercury"``; for reward models the ``judge_model`` part of the
        file name, e.g. ``"Skywork_Skywork-Reward-Gemma-2-27B"``); default all staged.
    root : path, optional
        The shared data directory; default :func:`~fairjudge.data.shared_data_dir`.

    Returns
    -------
    RecordedBenchmark
        ``name`` is ``"judgebench/<pairs>"``. Items ``judgebench/<pair_id>/A`` and ``/B``
        (``source`` is the response model, which wrote both answers); the question and pair
        id is the ``pair_id``; ``questions.category`` is the record's ``source`` (e.g.
        ``mmlu-pro-law``). Game 0 shows ``(A, B)`` (order ``"ab"``), game 1 shows ``(B, A)``
        (order ``"ba"``); each decision is in its game's presentation frame, so ``"A>B"``
        means the first-shown answer won (``a``), ``"B>A"`` -> ``b``, ``"A=B"`` -> ``tie`` and
        anything else (null, ``"A>A"``) is invalid. ``strategy`` is the file's ``judge_name``
        (``arena_hard`` or ``reward_model``); ``raw`` is the judge's response text (reward
        models store none). Gold: ``label`` ``"A>B"`` -> ``a``, ``"B>A"`` -> ``b``.

    Raises
    ------
    FileNotFoundError
        If the pair file is missing (naming the path).
    FairjudgeInputError
        On an unknown pair set or judge, or a malformed record.

    Examples
    --------
    >>> bench = load_judgebench("claude", judges="claude-3-haiku-20240307")  # doctest: +SKIP
    >>> len(bench.pairs), len(bench.verdicts)  # doctest: +SKIP
    (270, 540)
    """
    if pairs not in _JUDGEBENCH_RESPONSE_MODELS:
        raise FairjudgeInputError(
            f"`pairs` must be one of {', '.join(_JUDGEBENCH_RESPONSE_MODELS)}; got {pairs!r}")
    judges = name_filter(judges, "judges")
    response_model = _JUDGEBENCH_RESPONSE_MODELS[pairs]
    base = data_root(root) / "judgebench"
    data_path = base / "data" / f"dataset=judgebench,response_model={response_model}.jsonl.gz"
    records = read_jsonl(data_path)

    name = f"judgebench/{pairs}"
    item_ids, texts, item_qids, qids, questions, categories = [], [], [], [], [], []
    gold = GoldRows()
    known = set()
    for line, record in enumerate(records, start=1):
        for field in ("pair_id", "question", "response_A", "response_B", "label"):
            if field not in record:
                raise FairjudgeInputError(f"{data_path.name} line {line}: missing field `{field}`")
        pid = str(record["pair_id"])
        if pid in known:
            raise FairjudgeInputError(f"{data_path.name} line {line}: duplicate pair_id {pid!r}")
        known.add(pid)
        winner = {"A>B": Outcome.A.value, "B>A": Outcome.B.value}.get(record["label"])
        if winner is None:
            raise FairjudgeInputError(f"{data_path.name} line {line}: field `label` must be "
                                      f"'A>B' or 'B>A'; got {record['label']!r}")
        qids.append(pid)
        questions.append(record["question"])
        categories.append(record.get("source"))
        for slot in ("A", "B"):
            item_ids.append(f"judgebench/{pid}/{slot}")
            texts.append(record[f"response_{slot}"])
            item_qids.append(pid)
        gold.add(pair_id=pid, question_id=pid, item_a=f"judgebench/{pid}/A",
                 item_b=f"judgebench/{pid}/B", winner=winner)

    runs = []  # (judge, judge_name, path), judge known from the first record of each file
    for folder in _JUDGEBENCH_OUTPUT_DIRS:
        directory = base / folder
        if not directory.is_dir():
            continue
        for path in sorted(directory.iterdir()):
            match = _JUDGEBENCH_FILE.search(path.name)
            if match is None or match["response_model"] != response_model:
                continue
            judge = match["judge_model"]
            if match["judge_name"] != "reward_model":
                first = first_record(path)
                games = first.get("judgments") or [{}]
                judge = (games[0].get("judgment") or {}).get("judge_model") or judge
            runs.append((judge, match["judge_name"], path))
    check_known(judges, {j for j, _, _ in runs}, "judges",
                f"the {response_model} outputs under {base}")

    verdicts = VerdictRows()
    for judge, judge_name, path in runs:
        if judges is not None and judge not in judges:
            continue
        for line, record in enumerate(read_jsonl(path), start=1):
            pid = str(record.get("pair_id"))
            if pid not in known:
                raise FairjudgeInputError(f"{path.name} line {line}: pair_id {pid!r} is not in "
                                          f"{data_path.name}")
            games = record.get("judgments")
            if not isinstance(games, list) or len(games) != 2:
                raise FairjudgeInputError(f"{path.name} line {line}: field `judgments` must "
                                          "hold 2 games")
            item_a, item_b = f"judgebench/{pid}/A", f"judgebench/{pid}/B"
            for game, (shown, order) in zip(games, (((item_a, item_b), "ab"),
                                                   ((item_b, item_a), "ba"))):
                game = game or {}
                decision = game.get("decision")
                winner = _JUDGEBENCH_DECISIONS.get(decision) if isinstance(decision, str) else None
                raw = (game.get("judgment") or {}).get("response")
                verdicts.add(item_a=shown[0], item_b=shown[1], winner=winner, judge=judge,
                             question_id=pid, pair_id=pid, strategy=judge_name, order=order,
                             raw=raw_text(raw))

    return RecordedBenchmark(
        name=name,
        items=items_frame(item_ids, texts, item_qids, [response_model] * len(item_ids)),
        questions=questions_frame(qids, questions, category=categories),
        pairs=pairs_frame(qids, qids, gold["item_a"], gold["item_b"]),
        verdicts=verdicts.frame(name),
        gold=gold.frame(),
    )


def _register() -> None:
    for pairs, model in _JUDGEBENCH_RESPONSE_MODELS.items():
        register_recorded(RecordedDataset(
            f"judgebench/{pairs}",
            f"JudgeBench: objective-correctness pairs answered by {model}, both orders per judge",
            partial(load_judgebench, pairs)))


_register()
