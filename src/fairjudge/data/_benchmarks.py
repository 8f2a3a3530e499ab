"""Loaders of recorded LLM-judge datasets (LLMBar, JudgeBench, PRD Vicuna-80, AlpacaEval).

The datasets are real, already-recorded judge outputs staged byte-for-byte in ``../shared/data``
next to the repository (see its ``MANIFEST.md``). They are read in place, never copied, and
turned into fairjudge tables:

* ``items``: one row per answer, indexed by a string id, with its text and
  :func:`~fairjudge.data.text_features` covariates;
* ``questions``: one row per prompt;
* ``pairs``: one row per judged pair in the dataset's own frame (its first/second answer);
* ``verdicts``: one row per recorded judge call *as shown* (``item_a`` is the answer the judge
  saw first), in the verdict-table format of :mod:`fairjudge.data._schema`, plus the order
  relative to the pair's frame and the judge's raw text;
* ``gold``: the ground-truth label of each pair, in the pair's frame.

A judge output that could not be parsed is kept as a row with ``winner`` ``<NA>`` and
``outcome_detail`` ``"invalid"``: it is part of what the judge did (null rates are a bias
statistic), but it is never mapped to a side. Drop those rows before
:func:`~fairjudge.data.validate_verdicts`.
"""

from __future__ import annotations

import itertools
import json
import os
import re
from dataclasses import dataclass
from pathlib import Path

import pandas as pd

from fairjudge._util._warnings import FairjudgeInputError
from fairjudge.data._features import text_features
from fairjudge.data._io import _open_text, iter_jsonl
from fairjudge.data._schema import Outcome

#: Environment variable that points at the staged datasets (the ``shared/data`` directory).
SHARED_DATA_ENV = "FAIRJUDGE_SHARED_DATA"

_WHERE_DATA = (
    "the recorded datasets live in ../shared/data next to the repository (see its "
    f"MANIFEST.md); pass `root=` or set {SHARED_DATA_ENV} to read them from elsewhere"
)

_LLMBAR_DIRS = {
    "Natural": "LLMBar/Natural",
    "Neighbor": "LLMBar/Adversarial/Neighbor",
    "GPTInst": "LLMBar/Adversarial/GPTInst",
    "GPTOut": "LLMBar/Adversarial/GPTOut",
    "Manual": "LLMBar/Adversarial/Manual",
    "MT-Bench": "Processed/MT-Bench",
    "LLMEval^2": "Processed/LLMEval^2",
    "FairEval": "Processed/FairEval",
}
# LLMBar's result.json runs both orders; "swap = True" shows output_2 first.
_LLMBAR_RUNS = (("swap = False", "ab"), ("swap = True", "ba"))

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

#: The five PRD Vicuna-80 models whose answers are staged (also the five LLM reviewers).
PRD_MODELS = ("bard", "claude", "gpt35", "gpt4", "vicuna-13b")
_PRD_SCORES = {1: Outcome.A.value, 2: Outcome.B.value, 3: Outcome.TIE.value}
# ``answer_<X>-vs-answer_<Y>-<reviewer>-reviewer[_-]threeclass.jsonl``; the vicuna-13b reviewer
# files have no ``threeclass`` suffix. Lazy groups work because "-vs-answer_" and
# "-<reviewer>-reviewer" are literal, so ``vicuna-13b`` is never split at its dash.
_PRD_FILE = ("^answer_(?P<x>.+?)-vs-answer_(?P<y>.+?)-{reviewer}-reviewer"
             "(?:[_-]threeclass)?\\.jsonl$")

_ALPACAEVAL_FILES = {
    "leaderboard": ("src/alpaca_eval/leaderboards/data_AlpacaEval_2/"
                    "weighted_alpaca_eval_gpt4_turbo_leaderboard.csv", "model"),
    "leaderboard_v1": ("src/alpaca_eval/leaderboards/data_AlpacaEval/"
                       "alpaca_eval_gpt4_leaderboard.csv", "model"),
    "benchmarks": ("notebooks/benchmarks.csv", "model"),
    "evaluators": ("src/alpaca_eval/leaderboards/evaluators/evaluators_leaderboard.csv",
                   "annotator"),
}

VERDICT_COLUMNS = ("item_a", "item_b", "winner", "judge", "question_id", "pair_id", "strategy",
                   "order", "outcome_detail", "raw")
GOLD_COLUMNS = ("pair_id", "question_id", "item_a", "item_b", "winner")


# The tables hold DataFrames, so the generated __eq__ (which compares fields as a tuple) would
# raise on DataFrame truthiness; identity equality is the honest choice, and the generated repr
# would print every table in full.
@dataclass(frozen=True, eq=False, repr=False)
class RecordedBenchmark:
    """A recorded judge dataset as fairjudge tables.

    Attributes
    ----------
    name : str
        ``"llmbar/<subset>"``, ``"judgebench/<pairs>"`` or ``"prd-vicuna80"``.
    items : pandas.DataFrame
        Indexed by the string item id. Columns ``text``, ``question_id``, ``source`` (the
        model that wrote the answer, or the dataset slot such as ``"output_1"`` when the
        model is unknown) and every :func:`~fairjudge.data.text_features` column.
    questions : pandas.DataFrame
        Indexed by ``question_id``. Column ``question`` (the prompt) and ``category`` when
        the dataset has one.
    pairs : pandas.DataFrame
        One row per judged pair in the dataset's own frame: ``id``, ``question_id``,
        ``item_a`` (the dataset's first answer) and ``item_b`` (its second answer).
    verdicts : pandas.DataFrame
        One row per recorded judge call, as shown: ``item_a`` (shown first), ``item_b``
        (shown second), ``winner`` in {``a``, ``b``, ``tie``} or ``<NA>`` when the output was
        unparseable, ``judge``, ``question_id``, ``pair_id`` (``pairs.id``), ``strategy``
        (prompting strategy), ``order`` (``"ab"`` if shown in the pair's frame, ``"ba"`` if
        swapped), ``outcome_detail`` in {``win``, ``tie``, ``invalid``} and ``raw`` (the judge's
        raw text; ``<NA>`` when the file holds none or an empty string).
    gold : pandas.DataFrame
        One row per pair with a ground-truth label, in the pair's frame: ``pair_id``,
        ``question_id``, ``item_a``, ``item_b`` and ``winner`` in {``a``, ``b``, ``tie``}
        naming the better item of that row; PRD adds ``n_annotators``.
    """

    name: str
    items: pd.DataFrame
    questions: pd.DataFrame
    pairs: pd.DataFrame
    verdicts: pd.DataFrame
    gold: pd.DataFrame

    def __repr__(self) -> str:
        judges = sorted(self.verdicts["judge"].dropna().unique()) if len(self.verdicts) else []
        return (f"RecordedBenchmark(name={self.name!r}, items={len(self.items)}, "
                f"questions={len(self.questions)}, pairs={len(self.pairs)}, "
                f"verdicts={len(self.verdicts)}, gold={len(self.gold)}, judges={judges})")


# ----------------------------------------------------------------------------- locating data

def _repo_root() -> Path | None:
    """The nearest ancestor of this file holding a ``pyproject.toml``."""
    for parent in Path(__file__).resolve().parents:
        if (parent / "pyproject.toml").is_file():
            return parent
    return None


def shared_data_dir(root: str | os.PathLike | None = None) -> Path | None:
    """Locate the staged recorded datasets (the ``shared/data`` directory).

    Parameters
    ----------
    root : path, optional
        Use this directory. It is returned as given, whether or not it exists.

    Returns
    -------
    pathlib.Path or None
        ``root`` if given; else the directory named by the environment variable
        ``FAIRJUDGE_SHARED_DATA``; else the first existing of ``<cwd>/../shared/data`` and
        ``<repository root>/../shared/data``, where the repository root is the nearest
        ancestor of this module holding a ``pyproject.toml``. None if none of those exists.

    Raises
    ------
    TypeError
        If ``root`` is not a path.

    Examples
    --------
    >>> shared_data_dir("/data/shared").as_posix()
    '/data/shared'
    """
    if root is not None:
        if not isinstance(root, (str, os.PathLike)):
            raise TypeError(f"`root` must be a path to the shared data directory; got "
                            f"{type(root).__name__}")
        return Path(root).expanduser()
    env = os.environ.get(SHARED_DATA_ENV)
    if env:
        return Path(env).expanduser()
    candidates = [Path.cwd() / ".." / "shared" / "data"]
    repo = _repo_root()
    if repo is not None:
        candidates.append(repo.parent / "shared" / "data")
    for candidate in candidates:
        if candidate.is_dir():
            return candidate.resolve()
    return None


def _data_root(root) -> Path:
    found = shared_data_dir(root)
    if found is None:
        raise FileNotFoundError(
            f"recorded datasets not found: neither ../shared/data (from the working directory "
            f"or the repository) exists nor is {SHARED_DATA_ENV} set; {_WHERE_DATA}"
        )
    return found


def _require(path: Path) -> Path:
    if not path.is_file():
        raise FileNotFoundError(f"{path}: no such file; {_WHERE_DATA}")
    return path


def _read_json(path: Path):
    with _open_text(_require(path)) as handle:
        try:
            return json.load(handle)
        except json.JSONDecodeError as err:
            raise FairjudgeInputError(
                f"{path.name} line {err.lineno}: not valid JSON ({err.msg})") from None


def _read_jsonl(path: Path) -> list[dict]:
    return [record for _, record in iter_jsonl(_require(path))]


def _first_record(path: Path) -> dict:
    """The first JSON line of a file, to learn a run's judge before reading it in full."""
    with _open_text(_require(path)) as handle:
        for number, line in enumerate(handle, start=1):
            if line.strip():
                try:
                    return json.loads(line)
                except json.JSONDecodeError as err:
                    raise FairjudgeInputError(
                        f"{path.name} line {number}: not valid JSON ({err.msg})") from None
    raise FairjudgeInputError(f"{path.name}: file is empty (no JSON records)")


def _name_filter(names, what: str) -> tuple[str, ...] | None:
    """Normalise a ``judges=``/``strategies=``/``reviewers=`` argument (one name or several)."""
    if names is None:
        return None
    if isinstance(names, str):
        return (names,)
    try:
        names = tuple(names)
    except TypeError:
        raise TypeError(f"`{what}` must be a name or a list of names; got "
                        f"{type(names).__name__}") from None
    if not names or not all(isinstance(n, str) for n in names):
        raise TypeError(f"`{what}` must be a non-empty list of names; got {names!r}")
    return names


def _check_known(requested, available, what: str, where: str) -> None:
    if requested is None:
        return
    unknown = [n for n in requested if n not in available]
    if unknown:
        raise FairjudgeInputError(
            f"`{what}` names {', '.join(map(repr, unknown))}, not found in {where}; "
            f"available: {', '.join(sorted(available)) or 'none'}"
        )


# ----------------------------------------------------------------------------- table builders

def _str_index(values, name: str) -> pd.Index:
    return pd.Index(values, dtype="string", name=name)


def _items_frame(ids, texts, question_ids, sources) -> pd.DataFrame:
    items = pd.DataFrame(
        {
            "text": pd.array(texts, dtype="string"),
            "question_id": pd.array(question_ids, dtype="string"),
            "source": pd.array(sources, dtype="string"),
        },
        index=_str_index(ids, "id"),
    )
    features = text_features(list(texts))
    features.index = items.index
    return pd.concat([items, features], axis=1)


def _questions_frame(question_ids, questions, **extra) -> pd.DataFrame:
    columns = {"question": pd.array(questions, dtype="string")}
    columns.update({k: pd.array(v, dtype="string") for k, v in extra.items()})
    return pd.DataFrame(columns, index=_str_index(question_ids, "question_id"))


def _pairs_frame(ids, question_ids, items_a, items_b) -> pd.DataFrame:
    return pd.DataFrame({
        "id": pd.array(ids, dtype="string"),
        "question_id": pd.array(question_ids, dtype="string"),
        "item_a": pd.array(items_a, dtype="string"),
        "item_b": pd.array(items_b, dtype="string"),
    })


def _gold_frame(rows: dict) -> pd.DataFrame:
    frame = pd.DataFrame({c: pd.array(rows[c], dtype="string") for c in GOLD_COLUMNS})
    for extra in rows.keys() - set(GOLD_COLUMNS):
        frame[extra] = pd.array(rows[extra], dtype="int64")
    return frame


class _VerdictRows:
    """Column-wise accumulator of verdict rows (cheaper than one dict per row)."""

    def __init__(self) -> None:
        self.columns: dict[str, list] = {c: [] for c in VERDICT_COLUMNS}

    def add(self, *, item_a, item_b, winner, judge, question_id, pair_id, strategy, order,
            raw) -> None:
        if winner is None:
            detail = Outcome.INVALID.value
        elif winner == Outcome.TIE.value:
            detail = "tie"
        else:
            detail = "win"
        row = dict(item_a=item_a, item_b=item_b, winner=winner, judge=judge,
                   question_id=question_id, pair_id=pair_id, strategy=strategy, order=order,
                   outcome_detail=detail, raw=raw)
        for column, value in row.items():
            self.columns[column].append(value)

    def frame(self, name: str) -> pd.DataFrame:
        frame = pd.DataFrame({c: pd.array(v, dtype="string") for c, v in self.columns.items()})
        frame.attrs["source"] = f"{name} verdicts"
        frame.attrs["location"] = "row"
        return frame


def _raw_text(value):
    """The judge's raw text, or None (-> <NA>) when the file holds none (missing or empty)."""
    return value if isinstance(value, str) and value != "" else None


# ----------------------------------------------------------------------------- LLMBar

def llmbar_subsets() -> tuple[str, ...]:
    """Names of the LLMBar subsets accepted by :func:`load_llmbar`.

    The five LLMBar subsets (``Natural`` and the adversarial ``Neighbor``, ``GPTInst``,
    ``GPTOut``, ``Manual``) have expert gold labels; ``MT-Bench``, ``LLMEval^2`` and
    ``FairEval`` are LLMBar's processed human-labelled sets (human majority, ties removed).

    Examples
    --------
    >>> llmbar_subsets()[:2]
    ('Natural', 'Neighbor')
    """
    return tuple(_LLMBAR_DIRS)


def load_llmbar(subset: str, *, judges=None, strategies=None, root=None) -> RecordedBenchmark:
    """Load an LLMBar subset with every recorded judge run [Zeng et al., ICLR 2024].

    Parameters
    ----------
    subset : str
        One of :func:`llmbar_subsets`.
    judges : str or list of str, optional
        Judge directories to read (``"GPT-4"``, ``"ChatGPT"``, ``"ChatGPT-0301"``,
        ``"LLaMA2"``, ``"PaLM2"``, ``"Falcon"``); default all present.
    strategies : str or list of str, optional
        Prompting strategies to read (``"Vanilla_NoRules"``, ``"Metrics_Reference"``);
        default all present.
    root : path, optional
        The shared data directory; default :func:`shared_data_dir`.

    Returns
    -------
    RecordedBenchmark
        ``name`` is ``"llmbar/<subset>"``. Record ``i`` of ``dataset.json`` is question and
        pair ``llmbar/<subset>/<i>`` with items ``.../1`` (``output_1``) and ``.../2``
        (``output_2``); ``source`` is ``"output_1"``/``"output_2"``. Each judge run gives two
        verdicts per pair: ``swap = False`` shows ``(output_1, output_2)`` (order ``"ab"``)
        and ``swap = True`` shows ``(output_2, output_1)`` (order ``"ba"``); ``raw`` is the
        completion text (``<NA>`` for the empty completions of filtered or failed calls). Gold: ``label`` 1 -> ``a``, 2 -> ``b`` in the pair's frame.

    Raises
    ------
    FileNotFoundError
        If ``dataset.json`` is missing (naming the path).
    FairjudgeInputError
        On an unknown subset, judge or strategy, or a malformed record.

    Examples
    --------
    >>> bench = load_llmbar("Natural", judges="GPT-4")  # doctest: +SKIP
    >>> len(bench.pairs), bench.verdicts["order"].value_counts().to_dict()  # doctest: +SKIP
    (100, {'ab': 200, 'ba': 200})
    """
    if not isinstance(subset, str) or subset not in _LLMBAR_DIRS:
        raise FairjudgeInputError(
            f"`subset` must be one of {', '.join(_LLMBAR_DIRS)}; got {subset!r}")
    judges = _name_filter(judges, "judges")
    strategies = _name_filter(strategies, "strategies")
    base = _data_root(root) / "llmbar" / "Dataset" / _LLMBAR_DIRS[subset]
    dataset_path = base / "dataset.json"
    dataset = _read_json(dataset_path)
    if not isinstance(dataset, list) or not dataset:
        raise FairjudgeInputError(f"{dataset_path}: expected a non-empty JSON list of records")

    name = f"llmbar/{subset}"
    qids, texts, item_ids, item_qids, sources = [], [], [], [], []
    gold = {c: [] for c in GOLD_COLUMNS}
    for i, record in enumerate(dataset):
        for field in ("input", "output_1", "output_2", "label"):
            if not isinstance(record, dict) or field not in record:
                raise FairjudgeInputError(f"dataset.json record {i}: missing field `{field}`")
        qid = f"{name}/{i}"
        qids.append(qid)
        for slot in ("1", "2"):
            item_ids.append(f"{qid}/{slot}")
            texts.append(record[f"output_{slot}"])
            item_qids.append(qid)
            sources.append(f"output_{slot}")
        label = str(record["label"])
        if label not in ("1", "2"):
            raise FairjudgeInputError(
                f"dataset.json record {i}: field `label` must be 1 or 2; got {record['label']!r}")
        gold["pair_id"].append(qid)
        gold["question_id"].append(qid)
        gold["item_a"].append(f"{qid}/1")
        gold["item_b"].append(f"{qid}/2")
        gold["winner"].append(Outcome.A.value if label == "1" else Outcome.B.value)

    runs = []
    evaluators = base / "evaluators"
    if evaluators.is_dir():
        runs = sorted((p.parent.parent.name, p.parent.name, p)
                      for p in evaluators.glob("*/*/result.json"))
    _check_known(judges, {j for j, _, _ in runs}, "judges", f"{evaluators}")
    _check_known(strategies, {s for _, s, _ in runs}, "strategies", f"{evaluators}")
    verdicts = _VerdictRows()
    for judge, strategy, path in runs:
        if (judges is not None and judge not in judges) or (
                strategies is not None and strategy not in strategies):
            continue
        results = _read_json(path)
        if not isinstance(results, list) or len(results) != len(dataset):
            raise FairjudgeInputError(
                f"{path}: expected one record per dataset.json record ({len(dataset)}); got "
                f"{len(results) if isinstance(results, list) else type(results).__name__}")
        for i, (record, result) in enumerate(zip(dataset, results)):
            if result.get("output_1") != record["output_1"]:
                raise FairjudgeInputError(
                    f"{path.name} record {i}: `output_1` differs from dataset.json record {i}; "
                    "the run does not belong to this dataset")
            try:
                last = result["results"][-1]
            except (KeyError, IndexError, TypeError):
                raise FairjudgeInputError(
                    f"{path.name} record {i}: field `results` must be a non-empty list") from None
            qid = qids[i]
            first, second = f"{qid}/1", f"{qid}/2"
            for run, order in _LLMBAR_RUNS:
                outcome = last.get(run) or {}
                # `winner` is already mapped back to the original output index in both runs.
                better = outcome.get("winner")
                better = str(better) if isinstance(better, (str, int)) else None
                if order == "ab":
                    shown = (first, second)
                    winner = {"1": Outcome.A.value, "2": Outcome.B.value}.get(better)
                else:  # output_2 was shown first, so output_1 winning is the second-shown
                    shown = (second, first)
                    winner = {"1": Outcome.B.value, "2": Outcome.A.value}.get(better)
                completion = outcome.get("completion")
                raw = completion[0] if isinstance(completion, list) and completion else None
                verdicts.add(item_a=shown[0], item_b=shown[1], winner=winner, judge=judge,
                             question_id=qid, pair_id=qid, strategy=strategy, order=order,
                             raw=_raw_text(raw))

    return RecordedBenchmark(
        name=name,
        items=_items_frame(item_ids, texts, item_qids, sources),
        questions=_questions_frame(qids, [r["input"] for r in dataset]),
        pairs=_pairs_frame(qids, qids, gold["item_a"], gold["item_b"]),
        verdicts=verdicts.frame(name),
        gold=_gold_frame(gold),
    )


# ----------------------------------------------------------------------------- JudgeBench

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
        The shared data directory; default :func:`shared_data_dir`.

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
    judges = _name_filter(judges, "judges")
    response_model = _JUDGEBENCH_RESPONSE_MODELS[pairs]
    base = _data_root(root) / "judgebench"
    data_path = base / "data" / f"dataset=judgebench,response_model={response_model}.jsonl.gz"
    records = _read_jsonl(data_path)

    name = f"judgebench/{pairs}"
    item_ids, texts, item_qids, qids, questions, categories = [], [], [], [], [], []
    gold = {c: [] for c in GOLD_COLUMNS}
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
        gold["pair_id"].append(pid)
        gold["question_id"].append(pid)
        gold["item_a"].append(f"judgebench/{pid}/A")
        gold["item_b"].append(f"judgebench/{pid}/B")
        gold["winner"].append(winner)

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
                first = _first_record(path)
                games = first.get("judgments") or [{}]
                judge = (games[0].get("judgment") or {}).get("judge_model") or judge
            runs.append((judge, match["judge_name"], path))
    _check_known(judges, {j for j, _, _ in runs}, "judges",
                 f"the {response_model} outputs under {base}")

    verdicts = _VerdictRows()
    for judge, judge_name, path in runs:
        if judges is not None and judge not in judges:
            continue
        for line, record in enumerate(_read_jsonl(path), start=1):
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
                             raw=_raw_text(raw))

    return RecordedBenchmark(
        name=name,
        items=_items_frame(item_ids, texts, item_qids, [response_model] * len(item_ids)),
        questions=_questions_frame(qids, questions, category=categories),
        pairs=_pairs_frame(qids, qids, gold["item_a"], gold["item_b"]),
        verdicts=verdicts.frame(name),
        gold=_gold_frame(gold),
    )


# ----------------------------------------------------------------------------- PRD Vicuna-80

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
        The shared data directory; default :func:`shared_data_dir`.

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
    reviewers = _name_filter(reviewers, "reviewers")
    _check_known(reviewers, set(PRD_MODELS), "reviewers", "the PRD reviewers")
    reviewers = PRD_MODELS if reviewers is None else tuple(r for r in PRD_MODELS if r in reviewers)
    base = _data_root(root) / "prd-vicuna80" / "data" / "vicuna80"
    name = "prd-vicuna80"

    question_path = base / "prompts" / "vicuna_questions.jsonl"
    question_records = _read_jsonl(question_path)
    qids = [str(r["question_id"]) for r in question_records]
    question_text = {str(r["question_id"]): r["text"] for r in question_records}
    questions = _questions_frame(qids, [r["text"] for r in question_records],
                                 category=[r.get("category") for r in question_records])

    item_ids, texts, item_qids, sources = [], [], [], []
    answer_item = {}  # answer_id -> item id, to check that reviews name the answers we expect
    for model in PRD_MODELS:
        path = base / "generations" / f"answer_{model}.jsonl"
        for line, record in enumerate(_read_jsonl(path), start=1):
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
    pairs = _pairs_frame([p[0] for p in pair_rows], [p[3] for p in pair_rows],
                         [p[1] for p in pair_rows], [p[2] for p in pair_rows])

    verdicts = _VerdictRows()
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
            for line, record in enumerate(_read_jsonl(path), start=1):
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
                             order="ab" if x_low else "ba", raw=_raw_text(record.get("text")))

    return RecordedBenchmark(
        name=name,
        items=_items_frame(item_ids, texts, item_qids, sources),
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
        raise FileNotFoundError(f"{directory}: no such directory; {_WHERE_DATA}")
    pattern = re.compile(r"^answer_(?P<x>.+?)-vs-answer_(?P<y>.+?)-human-reviewer")
    votes: dict[tuple[int, str], list[str]] = {}  # (question number, pair id) -> labels
    frames: dict[str, tuple[str, str, str]] = {}  # pair id -> (question id, item_a, item_b)
    for path in sorted(directory.glob("answer_*-vs-answer_*-human-reviewer*.jsonl")):
        match = pattern.match(path.name)
        x, y = match["x"], match["y"]
        if x not in PRD_MODELS or y not in PRD_MODELS:
            continue  # guanaco-*: their answers are not staged
        for line, record in enumerate(_read_jsonl(path), start=1):
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

    rows = {c: [] for c in GOLD_COLUMNS}
    rows["n_annotators"] = []
    for (_, pair_id), labels in sorted(votes.items()):
        counts = {label: labels.count(label) for label in set(labels)}
        best = max(counts, key=counts.__getitem__)
        # Strict majority (more than half the ratings) or else a tie; a tie majority is a tie.
        winner = best if 2 * counts[best] > len(labels) else Outcome.TIE.value
        qid, item_a, item_b = frames[pair_id]
        for column, value in zip(GOLD_COLUMNS + ("n_annotators",),
                                 (pair_id, qid, item_a, item_b, winner, len(labels))):
            rows[column].append(value)
    return _gold_frame(rows)


# ----------------------------------------------------------------------------- AlpacaEval

def load_alpacaeval(*, root=None) -> dict[str, pd.DataFrame]:
    """Load AlpacaEval's model- and annotator-level tables, as published.

    Parameters
    ----------
    root : path, optional
        The shared data directory; default :func:`shared_data_dir`.

    Returns
    -------
    dict of str to pandas.DataFrame
        ``"leaderboard"``: AlpacaEval 2 with the weighted GPT-4-turbo annotator (win rate,
        length-controlled win rate, average length, ...); ``"leaderboard_v1"``: AlpacaEval 1
        (GPT-4 annotator); ``"benchmarks"``: per-model Arena Elo, AlpacaEval and other
        benchmark scores (``notebooks/benchmarks.csv``); ``"evaluators"``: per-annotator
        human agreement and biases (``Proba. prefer longer``, ``Proba. prefer lists``,
        ``Proba. prefer 1``). Each is indexed by its first column, the model or annotator
        name (named ``model``/``annotator`` where the file leaves it unnamed); the other
        columns are as in the file.

    Raises
    ------
    FileNotFoundError
        If a file is missing (naming the path).

    Examples
    --------
    >>> tables = load_alpacaeval()  # doctest: +SKIP
    >>> sorted(tables)  # doctest: +SKIP
    ['benchmarks', 'evaluators', 'leaderboard', 'leaderboard_v1']
    """
    base = _data_root(root) / "alpacaeval"
    tables = {}
    for key, (relative, index_name) in _ALPACAEVAL_FILES.items():
        frame = pd.read_csv(_require(base / relative), index_col=0)
        if frame.index.name is None or str(frame.index.name).startswith("Unnamed"):
            frame.index.name = index_name
        tables[key] = frame
    return tables
