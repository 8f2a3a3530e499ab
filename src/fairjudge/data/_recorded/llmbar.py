"""LLMBar and its processed human-labelled sets [Zeng et al., ICLR 2024]."""

from __future__ import annotations

from functools import partial

from fairjudge._util._warnings import FairjudgeInputError
from fairjudge.data._recorded._common import (
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
    read_json,
)
from fairjudge.data._recorded._registry import RecordedDataset, register_recorded
from fairjudge.data._schema import Outcome

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
        The shared data directory; default :func:`~fairjudge.data.shared_data_dir`.

    Returns
    -------
    RecordedBenchmark
        ``name`` is ``"llmbar/<subset>"``. Record ``i`` of ``dataset.json`` is question and
        pair ``llmbar/<subset>/<i>`` with items ``.../1`` (``output_1``) and ``.../2``
        (``output_2``); ``source`` is ``"output_1"``/``"output_2"``. Each judge run gives two
        verdicts per pair: ``swap = False`` shows ``(output_1, output_2)`` (order ``"ab"``)
        and ``swap = True`` shows ``(output_2, output_1)`` (order ``"ba"``); ``raw`` is the
        completion text (``<NA>`` for the empty completions of filtered or failed calls).
        Gold: ``label`` 1 -> ``a``, 2 -> ``b`` in the pair's frame.

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
    judges = name_filter(judges, "judges")
    strategies = name_filter(strategies, "strategies")
    base = data_root(root) / "llmbar" / "Dataset" / _LLMBAR_DIRS[subset]
    dataset_path = base / "dataset.json"
    dataset = read_json(dataset_path)
    if not isinstance(dataset, list) or not dataset:
        raise FairjudgeInputError(f"{dataset_path}: expected a non-empty JSON list of records")

    name = f"llmbar/{subset}"
    qids, texts, item_ids, item_qids, sources = [], [], [], [], []
    gold = GoldRows()
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
        gold.add(pair_id=qid, question_id=qid, item_a=f"{qid}/1", item_b=f"{qid}/2",
                 winner=Outcome.A.value if label == "1" else Outcome.B.value)

    runs = []
    evaluators = base / "evaluators"
    if evaluators.is_dir():
        runs = sorted((p.parent.parent.name, p.parent.name, p)
                      for p in evaluators.glob("*/*/result.json"))
    check_known(judges, {j for j, _, _ in runs}, "judges", f"{evaluators}")
    check_known(strategies, {s for _, s, _ in runs}, "strategies", f"{evaluators}")
    verdicts = VerdictRows()
    for judge, strategy, path in runs:
        if (judges is not None and judge not in judges) or (
                strategies is not None and strategy not in strategies):
            continue
        results = read_json(path)
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
                             raw=raw_text(raw))

    return RecordedBenchmark(
        name=name,
        items=items_frame(item_ids, texts, item_qids, sources),
        questions=questions_frame(qids, [r["input"] for r in dataset]),
        pairs=pairs_frame(qids, qids, gold["item_a"], gold["item_b"]),
        verdicts=verdicts.frame(name),
        gold=gold.frame(),
    )


def _register() -> None:
    for subset in _LLMBAR_DIRS:
        kind = ("expert-labelled" if _LLMBAR_DIRS[subset].startswith("LLMBar/")
                else "human-majority")
        register_recorded(RecordedDataset(
            f"llmbar/{subset}",
            f"LLMBar {subset}: instruction-following pairs, {kind} gold, both orders per judge",
            partial(load_llmbar, subset)))


_register()
