"""What offline and LLM discovery share: the calibration/test split of the disagreement
cases, and the validation of a factor by mean Δ on the held-out ones [hubj-bias-discovery
§4.2, Table 2, Table 7].
"""

from __future__ import annotations

import numpy as np
import pandas as pd
from scipy import stats

from fairjudge._util._warnings import FairjudgeInputError
from fairjudge.stats import Estimate


def check_text_columns(cases: pd.DataFrame, columns, what: str) -> None:
    """Every value of ``columns`` is non-empty text, or an error naming the row and column
    of the first that is not (``what`` names the table: "agreement cases")."""
    for column in columns:
        bad = [i for i, v in enumerate(cases[column]) if not isinstance(v, str) or not v.strip()]
        if bad:
            raise FairjudgeInputError(f"{what} row {bad[0]}: `{column}` must be non-empty text; "
                                      f"got {cases[column].iloc[bad[0]]!r}")


def split_by_group(n: int, groups, calibration_share: float, generator,
                   minimum: int = 5) -> tuple[np.ndarray, np.ndarray]:
    """Seeded calibration and test positions of ``n`` cases.

    With ``groups`` (a label per case: its question) whole groups go to one side, so a
    question found in calibration is never re-tested; without, each case is its own group.

    Raises
    ------
    FairjudgeInputError
        When either side would hold fewer than ``minimum`` cases.
    """
    if not 0 < calibration_share < 1:
        raise FairjudgeInputError(f"`calibration_share` must be between 0 and 1; got "
                                  f"{calibration_share!r}")
    labels = (np.arange(n) if groups is None
              else pd.factorize(pd.Series(list(groups), dtype=object))[0])
    if len(labels) != n:
        raise FairjudgeInputError("give one group label per case")
    unique = generator.permutation(np.unique(labels))
    inside = np.isin(labels, unique[:int(round(calibration_share * len(unique)))])
    calibration, test = np.flatnonzero(inside), np.flatnonzero(~inside)
    if len(test) < minimum or len(calibration) < minimum:
        raise FairjudgeInputError(
            f"{n} disagreement cases split {len(calibration)} to find factors and {len(test)} "
            f"to validate them; each side needs at least {minimum} (about "
            f"{int(np.ceil(minimum / min(calibration_share, 1 - calibration_share) - 1e-9))} "
            "cases "
            f"at a {calibration_share:.0%} split)")
    return calibration, test


def mean_delta_test(delta, level: float = 0.95) -> tuple[Estimate, float]:
    """Mean Δ = G_score(judge-preferred) - G_score(human-preferred) over held-out cases,
    with its t interval, and the one-sided paired t-test of mean Δ <= 0 against > 0 (a
    bias factor is one the judge-preferred responses have more of). NaN entries (no
    score) are left out; with fewer than two cases the estimate is missing and p is 1."""
    d = np.asarray(delta, dtype=float)
    d = d[np.isfinite(d)]
    if len(d) < 2:
        return Estimate.missing(level=level, method="paired t"), 1.0
    mean, se = float(d.mean()), float(d.std(ddof=1) / np.sqrt(len(d)))
    t_crit = float(stats.t.ppf(0.5 + level / 2, len(d) - 1))
    p = (float(stats.ttest_1samp(d, 0.0, alternative="greater").pvalue) if se > 0
         else float(mean <= 0))
    return Estimate(mean, mean - t_crit * se, mean + t_crit * se, len(d), level, "paired t"), p
