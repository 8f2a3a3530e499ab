"""McNemar's test, Holm's adjustment and McNemar's MDE against external references.

Reference values: ``reference/mcnemar.json`` and ``reference/holm.json`` (statsmodels), made by
``reference/make_references.py``; the paper's Table 4; closed forms.
"""

import json
from pathlib import Path

import numpy as np
import pytest
from scipy import stats

from fairjudge.stats._mcnemar import (McNemarResult, holm_bonferroni, mcnemar, mcnemar_from_counts,
                                      mcnemar_mde)

REFERENCE = Path(__file__).parent / "reference"
MCNEMAR = json.loads((REFERENCE / "mcnemar.json").read_text())["rows"]
HOLM = json.loads((REFERENCE / "holm.json").read_text())["cases"]


def _arrays(b, c, both_right=40, both_wrong=20):
    """Correctness vectors with b (baseline right, other wrong) and c (the reverse)."""
    baseline = [1] * both_right + [0] * both_wrong + [1] * b + [0] * c
    other = [1] * both_right + [0] * both_wrong + [0] * b + [1] * c
    return np.array(baseline), np.array(other)


def test_paper_example_claude_s8():
    # Table 4: b = 23, c = 69 -> chi2 = (|23 - 69| - 1)^2 / 92 = 2025 / 92 = 22.0108695652...
    result = mcnemar_from_counts(23, 69)
    assert result.statistic == pytest.approx(2025 / 92, rel=1e-12)
    assert result.statistic == pytest.approx(22.0108695652, abs=1e-9)
    assert result.p_value == pytest.approx(stats.chi2.sf(2025 / 92, 1), rel=1e-12)
    assert result.p_value < 1e-4
    assert (result.b, result.c, result.n, result.corrected) == (23, 69, 92, True)


@pytest.mark.parametrize("row", MCNEMAR, ids=lambda r: f"b{r['b']}-c{r['c']}")
def test_counts_match_statsmodels(row):
    corrected = mcnemar_from_counts(row["b"], row["c"])
    plain = mcnemar_from_counts(row["b"], row["c"], correction=False)
    if row["b"] != row["c"]:  # statsmodels over-corrects b == c (see mcnemar's Notes)
        assert corrected.statistic == pytest.approx(row["chi2_corrected"], rel=1e-9, abs=1e-12)
        assert corrected.p_value == pytest.approx(row["p_corrected"], rel=1e-9, abs=1e-12)
    assert plain.statistic == pytest.approx(row["chi2_uncorrected"], rel=1e-9, abs=1e-12)
    assert plain.p_value == pytest.approx(row["p_uncorrected"], rel=1e-9, abs=1e-12)
    assert corrected.exact_p_value == pytest.approx(row["exact_p"], rel=1e-9, abs=1e-12)
    if row["printed_chi2"] is not None:  # the paper prints 2 decimals
        assert corrected.statistic == pytest.approx(row["printed_chi2"], abs=0.0051)


def test_paper_table4_significance_marks():
    # * p < 0.05 for the first five rows of Table 4, not for the last four.
    significant = [mcnemar_from_counts(r["b"], r["c"]).p_value < 0.05 for r in MCNEMAR[:9]]
    assert significant == [True] * 5 + [False] * 4


def test_arrays_follow_table4_convention():
    baseline, other = _arrays(23, 69)
    result = mcnemar(baseline, other)
    assert (result.b, result.c, result.n) == (23, 69, baseline.size)
    counts = mcnemar_from_counts(23, 69)
    assert (result.statistic, result.p_value, result.exact_p_value) == (
        counts.statistic, counts.p_value, counts.exact_p_value)
    # Swapping the roles swaps b and c but not the (two-sided) test.
    swapped = mcnemar(other, baseline)
    assert (swapped.b, swapped.c) == (69, 23)
    assert swapped.p_value == result.p_value


def test_booleans_and_uncorrected_closed_form():
    baseline, other = _arrays(5, 12)
    result = mcnemar(baseline.astype(bool), other.astype(bool), correction=False)
    assert result.statistic == pytest.approx((5 - 12) ** 2 / 17)
    assert not result.corrected


def test_no_discordant_pairs():
    baseline, other = _arrays(0, 0)
    result = mcnemar(baseline, other)
    assert (result.statistic, result.p_value, result.exact_p_value) == (0.0, 1.0, 1.0)
    assert mcnemar_from_counts(0, 0).p_value == 1.0


def test_balanced_counts_give_zero_statistic_with_correction():
    # R's mcnemar.test: the correction is not applied past zero.
    assert mcnemar_from_counts(7, 7).statistic == 0.0
    assert mcnemar_from_counts(7, 8).statistic == 0.0


def test_as_dict():
    result = mcnemar_from_counts(17, 47)
    assert isinstance(result, McNemarResult)
    assert result.as_dict() == {"b": 17, "c": 47, "statistic": result.statistic,
                                "p_value": result.p_value,
                                "exact_p_value": result.exact_p_value, "n": 64}


@pytest.mark.parametrize("case", HOLM, ids=lambda c: f"m{len(c['p_values'])}")
def test_holm_matches_statsmodels(case):
    adjusted = holm_bonferroni(case["p_values"])
    np.testing.assert_allclose(adjusted, case["adjusted"], rtol=1e-12, atol=1e-15)


def test_holm_properties():
    p = np.random.default_rng(3).uniform(0, 0.3, 25)
    adjusted = holm_bonferroni(p)
    order = np.argsort(p)
    assert np.all(np.diff(adjusted[order]) >= 0)          # monotone in the raw p-values
    assert np.all(adjusted >= p) and np.all(adjusted <= 1)
    assert adjusted[order[0]] == pytest.approx(25 * p[order[0]])
    assert holm_bonferroni([]).shape == (0,)


def test_mde_matches_paper_statement():
    # App. D: n = 400, 40-50 discordant pairs (psi = 0.100-0.125) -> MDE of about 4-5 pp.
    low, mid, high = (mcnemar_mde(400, k / 400) for k in (40, 45, 50))
    assert 0.04 < low < mid < high < 0.05
    assert (round(100 * low, 1), round(100 * mid, 1), round(100 * high, 1)) == (4.4, 4.7, 4.9)


@pytest.mark.parametrize("n, psi, alpha, power", [(400, 0.1125, 0.05, 0.8),
                                                  (250, 0.3, 0.01, 0.9),
                                                  (1000, 0.05, 0.05, 0.5)])
def test_mde_inverts_connors_sample_size_formula(n, psi, alpha, power):
    delta = mcnemar_mde(n, psi, alpha=alpha, power=power)
    z_a, z_b = stats.norm.ppf(1 - alpha / 2), stats.norm.ppf(power)
    n_needed = (z_a * np.sqrt(psi) + z_b * np.sqrt(psi - delta ** 2)) ** 2 / delta ** 2
    assert n_needed == pytest.approx(n, rel=1e-9)


def test_mde_has_the_stated_power():
    """McNemar's test at the MDE has about the stated 80% power, computed exactly.

    The discordant count D is Binomial(n, psi) and, given D, c is Binomial(D, p01 / psi), so
    the power of the chi-square test (rejecting in the direction c > b) is a finite sum. It is
    0.8126: the MDE formula is a normal approximation. (A 20000-draw simulation, as this test
    used to run, landed at 0.810-0.815 for four seeds: within 0.02 of 0.8 with only ~2.6
    simulation SEs to spare.)
    """
    n, psi = 400, 0.1125
    delta = mcnemar_mde(n, psi)
    p10, p01 = (psi - delta) / 2, (psi + delta) / 2
    critical = stats.chi2.ppf(0.95, 1)
    power = 0.0
    for d in range(1, n + 1):
        c = np.arange(d + 1)
        b = d - c
        rejects = ((b - c) ** 2 / d > critical) & (c > b)
        power += stats.binom.pmf(d, n, psi) * stats.binom.pmf(c[rejects], d, p01 / psi).sum()
    assert abs(power - 0.8) < 0.02


def test_mde_monotone():
    assert mcnemar_mde(800, 0.1) < mcnemar_mde(400, 0.1)
    assert mcnemar_mde(400, 0.2) > mcnemar_mde(400, 0.1)


def test_argument_errors():
    with pytest.raises(ValueError, match="`correct_baseline` must contain only 0/1"):
        mcnemar([1, 2, 0], [1, 0, 0])
    with pytest.raises(ValueError, match="`correct_other` must contain only 0/1"):
        mcnemar([1, 0, 0], [1, np.nan, 0])
    with pytest.raises(ValueError, match="`correct_other` must contain only 0/1"):
        mcnemar([1, 0], ["yes", "no"])
    with pytest.raises(ValueError, match="`correct_baseline` must be 1-d"):
        mcnemar([[1, 0]], [1, 0])
    with pytest.raises(ValueError, match="must have equal length"):
        mcnemar([1, 0, 1], [1, 0])
    with pytest.raises(ValueError, match="`b` must be a non-negative integer count"):
        mcnemar_from_counts(-1, 3)
    with pytest.raises(ValueError, match="`c` must be a non-negative integer count"):
        mcnemar_from_counts(1, 2.5)
    with pytest.raises(ValueError, match="`p_values` must be 1-d"):
        holm_bonferroni([[0.1, 0.2]])
    with pytest.raises(ValueError, match="`p_values` must all be between 0 and 1"):
        holm_bonferroni([0.1, 1.2])
    with pytest.raises(ValueError, match="`p_values` must all be between 0 and 1"):
        holm_bonferroni([0.1, np.nan])


def test_mde_argument_errors():
    with pytest.raises(ValueError, match="`n` must be a positive integer"):
        mcnemar_mde(0, 0.1)
    with pytest.raises(ValueError, match="`p_discordant` must be in"):
        mcnemar_mde(400, 0.0)
    with pytest.raises(ValueError, match="`alpha` must be between 0 and 1"):
        mcnemar_mde(400, 0.1, alpha=1.5)
    with pytest.raises(ValueError, match="`power` must be between alpha/2"):
        mcnemar_mde(400, 0.1, power=0.01)
    with pytest.raises(ValueError, match="no accuracy difference .* increase `n`"):
        mcnemar_mde(10, 0.05)
