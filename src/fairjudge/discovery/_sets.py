"""Who agrees with the humans: per judge, the pairs it decides as the human majority does
(the agreement set) and against it (the disagreement set), and the consensus sets across
judges [hubj-bias-discovery §3.1, §3.2, §4.1].

A judge decides a pair when it names the same winner in both presentation orders. A pair
it decides otherwise -- different winners in the two orders, a tie, an invalid output, or
only one order judged -- is neither agreement nor disagreement: it is set aside with its
reason, and counted. So is a pair whose human label is a tie or lacks a clear majority.
"""

from __future__ import annotations

from dataclasses import dataclass

import numpy as np
import pandas as pd

from fairjudge._util._rng import as_generator
from fairjudge._util._warnings import FairjudgeInputError

#: Statuses of a (judge, pair): the two sets, then the reasons a pair is set aside.
AGREE, DISAGREE = "agree", "disagree"
SET_ASIDE = ("order-inconsistent", "tie", "invalid", "one order only", "no gold label",
             "no human majority")


@dataclass
class HumanAgreement:
    """Every (judge, pair) with its status against the human majority.

    Attributes
    ----------
    pairs : pandas.DataFrame
        One row per judge and pair: ``judge``, ``pair_id``, ``item_a``, ``item_b`` (the
        pair's own frame), ``human`` (``a``, ``b``, or ``""`` without a usable label),
        ``judge_pick`` (``a``, ``b``, or ``""`` when the judge did not decide the pair)
        and ``status`` (:data:`AGREE`, :data:`DISAGREE` or a :data:`SET_ASIDE` reason).
    """

    pairs: pd.DataFrame

    @property
    def judges(self) -> list[str]:
        return list(dict.fromkeys(self.pairs["judge"]))

    def agreement(self, judge: str) -> pd.DataFrame:
        """D^agr_m: the pairs ``judge`` decides as the human majority does."""
        return self._of(judge, AGREE)

    def disagreement(self, judge: str) -> pd.DataFrame:
        """D^dis_m: the pairs ``judge`` decides against the human majority."""
        return self._of(judge, DISAGREE)

    def _of(self, judge: str, status: str) -> pd.DataFrame:
        if judge not in self.judges:
            raise FairjudgeInputError(f"no verdicts of judge {judge!r}; judges: "
                                      f"{', '.join(map(str, self.judges))}")
        rows = self.pairs[(self.pairs["judge"] == judge) & (self.pairs["status"] == status)]
        return rows.reset_index(drop=True)

    def consensus(self, judges=None) -> pd.DataFrame:
        """Per pair with a human label: whether every judge (of ``judges``, default all)
        decided it and picked the same response (``unanimous``), that pick
        (``judge_pick``, ``a`` or ``b`` in the pair's own frame), and whether it differs
        from the human majority (``against_human``). The consensus disagreement set
        D^dis_M of §3.2 is the rows with ``unanimous`` and ``against_human``."""
        judges = self.judges if judges is None else list(judges)
        rows = self.pairs[self.pairs["judge"].isin(judges) & (self.pairs["human"] != "")]
        if rows.empty:  # no pair has a usable human label
            return pd.DataFrame(columns=["pair_id", "item_a", "item_b", "human", "n_judges",
                                         "unanimous", "judge_pick", "against_human"])
        grouped = rows.groupby("pair_id", sort=False)
        decided = grouped["status"].agg(lambda s: s.isin([AGREE, DISAGREE]).all())
        n = grouped["judge"].nunique()
        picks = grouped["judge_pick"].agg(lambda p: p.iloc[0] if p.nunique() == 1 else "")
        first = grouped[["item_a", "item_b", "human"]].first()
        table = first.assign(n_judges=n, unanimous=decided & (n == len(judges)) & (picks != ""),
                             judge_pick=picks)
        table["against_human"] = table["unanimous"] & (table["judge_pick"] != table["human"])
        return table.reset_index()

    def consensus_disagreement(self, judges=None) -> pd.DataFrame:
        """D^dis_M: pairs every judge decides alike, against the human majority."""
        table = self.consensus(judges)
        return table[table["against_human"]].reset_index(drop=True)

    def consensus_agreement(self, judges=None) -> pd.DataFrame:
        """Pairs every judge decides alike, as the human majority does."""
        table = self.consensus(judges)
        return table[table["unanimous"] & ~table["against_human"]].reset_index(drop=True)

    def counts(self) -> pd.DataFrame:
        """Per judge: pairs in each status (agree, disagree, then each reason set aside)."""
        table = pd.crosstab(self.pairs["judge"], self.pairs["status"])
        columns = [c for c in (AGREE, DISAGREE, *SET_ASIDE) if c in table.columns]
        return table.reindex(columns=[AGREE, DISAGREE, *[c for c in columns
                                                         if c not in (AGREE, DISAGREE)]],
                             fill_value=0)


def human_agreement(verdicts: pd.DataFrame, gold: pd.DataFrame, *,
                    min_majority: float = 0.5) -> HumanAgreement:
    """Sort every pair each judge judged in both orders into agreement, disagreement, or
    set aside, against the human (or objective) label.

    Parameters
    ----------
    verdicts : pandas.DataFrame
        A validated verdict table (``judge`` column optional); the first sample of each
        order stands for it.
    gold : pandas.DataFrame
        Gold labels (:func:`fairjudge.audit.load_gold`). A ``tie`` label is no human
        majority. With an ``annotator_agreement`` column (the share of annotators who chose
        the labelled winner, in [0, 1]) a label below ``min_majority`` is set aside too
        [§4.1: "at least 50% of annotators select the same response"].
    min_majority : float
        Smallest share of annotators behind a usable label.

    Returns
    -------
    HumanAgreement
    """
    from fairjudge.audit._gold import gold_choice
    from fairjudge.audit._position import _first_of_each_order, _unit_keys
    from fairjudge.data._schema import verdict_pairs

    if not 0 < min_majority <= 1:
        raise FairjudgeInputError(f"`min_majority` must be in (0, 1]; got {min_majority!r}")
    if not len(verdicts):
        raise FairjudgeInputError("no verdicts to compare with the human labels")
    if "strategy" in verdicts.columns:
        per_judge = verdicts.groupby(verdicts["judge"] if "judge" in verdicts.columns
                                     else pd.Series("judge", index=verdicts.index))[
            "strategy"].nunique()
        mixed = per_judge[per_judge > 1]
        if len(mixed):
            judge = mixed.index[0]
            strategies = ", ".join(sorted(map(str, verdicts.loc[
                (verdicts["judge"] == judge) if "judge" in verdicts.columns else slice(None),
                "strategy"].unique())))
            raise FairjudgeInputError(
                f"judge {judge!r} has verdicts of several strategies ({strategies}); their "
                "orders would be mixed. Keep one strategy per judge (filter the table), or "
                "name each judge-strategy pair as its own judge")
    units = _unit_keys(verdicts)
    shown_gold = gold_choice(verdicts, gold, missing="keep").to_numpy(dtype=object)
    own_order = units["own_order"].to_numpy(dtype=bool)
    # The human label in the pair's own frame: "a" means own_a is better.
    flip = {"a": "b", "b": "a"}
    human = np.array([g if keep or g not in flip else flip[g]
                      for g, keep in zip(shown_gold, own_order)], dtype=object)
    if "annotator_agreement" in gold.columns:
        weak = _weak_labels(verdicts, gold, min_majority)
        human = np.where(weak & (human != ""), "weak", human)
    first = _first_of_each_order(units.assign(human=human))
    keys = verdict_pairs(verdicts).keys
    rows = []
    for (judge, pair), group in first.groupby(["judge", "pair"], sort=False):
        choices = list(group["choice"])
        label = group["human"].iloc[0]
        pick, status = "", None
        if label == "":
            status = "no gold label"
        elif label in ("tie", "weak"):
            status = "no human majority"
        elif len(group) < 2:
            status = "one order only"
        elif "=invalid" in choices:
            status = "invalid"
        elif choices[0] != choices[1]:
            status = "order-inconsistent"
        elif choices[0] == "=tie":
            status = "tie"
        else:
            pick = "a" if choices[0] == "own_a" else "b"
            status = AGREE if pick == label else DISAGREE
        rows.append({"judge": judge, "pair_id": keys[pair], "item_a": group["own_a"].iloc[0],
                     "item_b": group["own_b"].iloc[0],
                     "human": label if label in ("a", "b") else "", "judge_pick": pick,
                     "status": status})
    return HumanAgreement(pd.DataFrame(rows, columns=["judge", "pair_id", "item_a", "item_b",
                                                      "human", "judge_pick", "status"]))


def _weak_labels(verdicts: pd.DataFrame, gold: pd.DataFrame, min_majority: float) -> np.ndarray:
    """Per verdict: whether its pair's label has less than ``min_majority`` of annotators."""
    from fairjudge.audit._gold import gold_choice

    share = pd.to_numeric(gold["annotator_agreement"], errors="coerce")
    if share.isna().any() or ((share < 0) | (share > 1)).any():
        row = int(np.flatnonzero((share.isna() | (share < 0) | (share > 1)).to_numpy())[0])
        raise FairjudgeInputError(f"gold row {gold.index[row]}: `annotator_agreement` must be "
                                  "a share of annotators in [0, 1]; got "
                                  f"{gold['annotator_agreement'].iloc[row]!r}")
    strong = gold.assign(winner=np.where(share >= min_majority, gold["winner"], "tie"))
    relabelled = gold_choice(verdicts, strong, missing="keep").to_numpy(dtype=object)
    original = gold_choice(verdicts, gold, missing="keep").to_numpy(dtype=object)
    return (relabelled == "tie") & (original != "tie")


@dataclass(frozen=True)
class Splits:
    """Seeded calibration and test sets [§4.1]: the disagreement set split by share (paper:
    80/20), and agreement cases drawn by count (paper: 100 calibration, 500 test)."""

    disagreement_calibration: pd.DataFrame
    disagreement_test: pd.DataFrame
    agreement_calibration: pd.DataFrame
    agreement_test: pd.DataFrame


def split_sets(disagreement: pd.DataFrame, agreement: pd.DataFrame, *,
               calibration_share: float = 0.8, agreement_calibration: int = 100,
               agreement_test: int = 500, rng=0) -> Splits:
    """Seeded splits of a disagreement and an agreement set (rows shuffled, then cut).

    The disagreement set is cut at ``calibration_share``; the agreement set gives
    ``agreement_calibration`` then ``agreement_test`` cases (fewer when it is smaller:
    calibration first, the test set gets the rest).
    """
    if not 0 < calibration_share < 1:
        raise FairjudgeInputError(f"`calibration_share` must be between 0 and 1; got "
                                  f"{calibration_share!r}")
    for name, value in (("agreement_calibration", agreement_calibration),
                        ("agreement_test", agreement_test)):
        if isinstance(value, bool) or not isinstance(value, (int, np.integer)) or value < 0:
            raise FairjudgeInputError(f"`{name}` must be a count >= 0; got {value!r}")
    generator = as_generator(rng)
    dis = disagreement.iloc[generator.permutation(len(disagreement))].reset_index(drop=True)
    agr = agreement.iloc[generator.permutation(len(agreement))].reset_index(drop=True)
    cut = int(round(calibration_share * len(dis)))
    end = min(len(agr), agreement_calibration + agreement_test)
    return Splits(dis.iloc[:cut].reset_index(drop=True), dis.iloc[cut:].reset_index(drop=True),
                  agr.iloc[:min(agreement_calibration, end)].reset_index(drop=True),
                  agr.iloc[min(agreement_calibration, end):end].reset_index(drop=True))


def disagreement_cases(cases: pd.DataFrame, items: pd.DataFrame,
                       questions: pd.DataFrame | None = None) -> pd.DataFrame:
    """The texts of disagreement cases, as :func:`~fairjudge.discovery.identify` reads them.

    Parameters
    ----------
    cases : pandas.DataFrame
        Rows of :meth:`HumanAgreement.disagreement` or
        :meth:`HumanAgreement.consensus_disagreement` (``pair_id``, ``item_a``, ``item_b``,
        ``human``, ``judge_pick``).
    items : pandas.DataFrame
        Indexed by item id, with the responses' ``text``; its ``question`` column (or
        ``questions`` by the items' ``question_id``) gives each case's question.
    questions : pandas.DataFrame, optional
        Indexed by ``question_id`` with a ``question`` column.

    Returns
    -------
    pandas.DataFrame
        ``id``, ``question``, ``response_a``, ``response_b``, ``human``, ``judge_pick`` and
        ``group`` (the question id, or the question: cases of one question stay on one side
        of a split).

    Raises
    ------
    FairjudgeInputError
        For an item without text, or a case whose question cannot be found.
    """
    if "text" not in items.columns:
        raise FairjudgeInputError("the item table needs a `text` column (the responses)")
    index = items.index.astype(str)
    text = pd.Series(items["text"].astype(str).to_numpy(), index=index)
    for column in ("item_a", "item_b"):
        missing = ~cases[column].astype(str).isin(index)
        if missing.any():
            raise FairjudgeInputError(f"item {cases[column][missing].iloc[0]!r} has no text in "
                                      "the item table")
    first = cases["item_a"].astype(str)
    question_id = (pd.Series(items["question_id"].astype(str).to_numpy(), index=index)
                   .reindex(first).to_numpy() if "question_id" in items.columns else None)
    if "question" in items.columns:
        question = pd.Series(items["question"].astype(str).to_numpy(), index=index)
        asked = question.reindex(first).to_numpy()
    elif questions is not None and question_id is not None:
        if "question" not in questions.columns:
            raise FairjudgeInputError("the questions table needs a `question` column")
        lookup = pd.Series(questions["question"].astype(str).to_numpy(),
                           index=questions.index.astype(str))
        unknown = ~pd.Index(question_id).isin(lookup.index)
        if unknown.any():
            raise FairjudgeInputError(f"question {question_id[unknown][0]!r} of item "
                                      f"{first.iloc[int(np.flatnonzero(unknown)[0])]!r} is not "
                                      "in the questions table")
        asked = lookup.reindex(question_id).to_numpy()
    else:
        raise FairjudgeInputError("the cases need their questions: give the item table a "
                                  "`question` column, or a questions table by `question_id`")
    return pd.DataFrame({
        "id": cases["pair_id"].astype(str).to_numpy(), "question": asked,
        "response_a": text.reindex(first).to_numpy(),
        "response_b": text.reindex(cases["item_b"].astype(str)).to_numpy(),
        "human": cases["human"].to_numpy(), "judge_pick": cases["judge_pick"].to_numpy(),
        "group": question_id if question_id is not None else asked})


def agreement_cases(cases: pd.DataFrame, items: pd.DataFrame,
                    questions: pd.DataFrame | None = None) -> pd.DataFrame:
    """Agreement cases as :func:`~fairjudge.discovery.quantify` reads them: ``id``,
    ``question``, ``chosen`` (the response judge and humans prefer) and ``rejected``.

    Parameters are those of :func:`disagreement_cases`, with ``cases`` from
    :meth:`HumanAgreement.agreement` or :meth:`HumanAgreement.consensus_agreement`.
    """
    texts = disagreement_cases(cases, items, questions)
    first = texts["human"] == "a"
    return pd.DataFrame({"id": texts["id"], "question": texts["question"],
                         "chosen": np.where(first, texts["response_a"], texts["response_b"]),
                         "rejected": np.where(first, texts["response_b"], texts["response_a"])})


def explain_empty(sets: HumanAgreement, judge: str | None, status: str) -> str:
    """Why a judge's (or the consensus) set of ``status`` is empty, in words: pairs per
    status per judge, so a user sees whether gold labels are missing, the judge decided
    nothing in both orders, or every judge agrees with the humans."""
    counts = sets.counts()
    parts = []
    for name, row in counts.iterrows():
        if judge is not None and name != judge:
            continue
        parts.append(f"{name}: " + ", ".join(f"{int(v)} {k}" for k, v in row.items() if v))
    what = f"judge {judge}" if judge is not None else "all judges alike (consensus)"
    hint = ""
    if "no gold label" in counts.columns and counts["no gold label"].sum() == \
            counts.to_numpy().sum():
        hint = ("; no pair has a gold label: do the gold file's item_a/item_b (and "
                "question_id) match the verdicts'?")
    elif judge is None and len(counts) > 1:
        hint = "; try --judge NAME for one judge's own cases"
    return (f"no {status} cases for {what}. Pairs per judge: " + "; ".join(parts) + hint)
