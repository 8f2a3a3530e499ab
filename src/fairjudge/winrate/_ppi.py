"""The humans' win rate by prediction-powered inference [the multi-fidelity issue §4;
Angelopoulos et al. 2023, PPI++].

Target: the rate at which humans prefer a model's answer to the baseline's, over the
records (query, model, baseline) of a preference table. The judge's preference on every
record is the prediction; human preferences on a random subset are the labels
(:func:`fairjudge.ppi.ppi_mean`). Beside it, the humans alone (the same estimator with
lambda = 0) and the judge alone (the mean of its preferences with the usual interval,
which is valid for the judge's own win rate and not for the humans').
"""

from __future__ import annotations

import numpy as np
import pandas as pd
from scipy import stats

from fairjudge._util._warnings import FairjudgeInputError
from fairjudge.ppi import ppi_mean

KEY = ["model", "baseline", "query"]


def ppi_win_rates(preferences: pd.DataFrame, gold: pd.DataFrame, *,
                  level: float = 0.95) -> pd.DataFrame:
    """Per model (each unit of ``preferences``): the humans' win rate against the baseline.

    Parameters
    ----------
    preferences : pandas.DataFrame
        The judge's preference table (``model``, ``baseline``, ``query``,
        ``preference``); a unit named ``model | judge`` (several judges) is matched to the
        human labels of ``model``.
    gold : pandas.DataFrame
        Human preferences in the same format, for a random subset of the same records.
    level : float

    Returns
    -------
    pandas.DataFrame
        Indexed by model, in percent: ``ppi``, ``ppi_low``, ``ppi_high`` and ``lambda``;
        ``human``, ``human_low``, ``human_high`` (labels alone); ``judge``, ``judge_low``,
        ``judge_high`` (predictions alone); ``n_labelled``, ``n_unlabelled``; ``note``.

    Raises
    ------
    FairjudgeInputError
        When no human label matches a record of the preferences.
    """
    missing = [c for c in KEY + ["preference"] if c not in gold.columns]
    if missing:
        raise FairjudgeInputError(f"the human labels lack `{missing[0]}`")
    human = gold.assign(query=gold["query"].astype(str)).groupby(KEY)["preference"].mean()
    judged = preferences.assign(query=preferences["query"].astype(str),
                                base=preferences["model"].astype(str).str.split(" | ",
                                                                               regex=False)
                                .str[0])
    z = float(stats.norm.ppf(0.5 + level / 2))
    rows, matched = {}, 0
    for model, records in judged.groupby("model", sort=True):
        prediction = records.groupby(["base", "baseline", "query"])["preference"].mean()
        labelled = prediction.index.isin(human.index)
        matched += int(labelled.sum())
        row = {"n_labelled": int(labelled.sum()), "n_unlabelled": int((~labelled).sum()),
               "note": ""}
        f = prediction.to_numpy(float)
        judge = f.mean()
        judge_se = f.std() / np.sqrt(f.size)
        row.update(judge=judge, judge_low=judge - z * judge_se, judge_high=judge + z * judge_se)
        if labelled.sum() >= 2 and (~labelled).sum() >= 1:
            y = human.loc[prediction.index[labelled]].to_numpy(float)
            powered = ppi_mean(y, f[labelled], f[~labelled], level=level)
            alone = ppi_mean(y, f[labelled], f[~labelled], level=level, power=0.0)
            row.update(ppi=powered.estimate, ppi_low=powered.ci_low,
                       ppi_high=powered.ci_high, **{"lambda": powered.power},
                       human=alone.estimate, human_low=alone.ci_low,
                       human_high=alone.ci_high)
        else:
            row["note"] = (f"{int(labelled.sum())} labelled and {int((~labelled).sum())} "
                           "unlabelled records: PPI needs at least 2 and 1")
        rows[model] = row
    if matched == 0:
        raise FairjudgeInputError("no human label matches a record of the judge's "
                                  "preferences (matched on model, baseline and query)")
    table = pd.DataFrame.from_dict(rows, orient="index").rename_axis("model")
    for column in ("ppi", "ppi_low", "ppi_high", "human", "human_low", "human_high",
                   "judge", "judge_low", "judge_high"):
        table[column] = 100.0 * table.get(column, np.nan)
    if "lambda" not in table.columns:
        table["lambda"] = np.nan
    return table
