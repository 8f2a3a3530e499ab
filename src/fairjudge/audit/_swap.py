"""Swap-test a sample first, then decide whether the full run needs both orders.

The workflow of [position-bias-swap, "What the swap costs"]: "swap-test a sampled subset to
estimate your judge's position consistency, then decide whether the full double-order is
warranted". :func:`swap_test_plan` does it on verdicts that hold both orders of the sampled
pairs (recorded runs, where sub-sampling simulates "sample first"); :func:`run_swap_test`
samples pairs, judges them in both orders through a backend, and plans from those.
"""

from __future__ import annotations

import math
from dataclasses import dataclass, field

import numpy as np
import pandas as pd

from fairjudge._util._warnings import FairjudgeInputError
from fairjudge.audit._position import pair_consistency
from fairjudge.stats._agreement import proportion_estimate, wilson_interval
from fairjudge.stats._estimate import Estimate

#: Default pairs to swap-test: the Wilson 95% interval at a consistency of 0.9 is then about
#: +-0.05 wide (1.96^2 * 0.9 * 0.1 / 0.05^2 = 138, rounded up).
DEFAULT_SAMPLE_SIZE = 150
#: Default lowest acceptable consistency: at most one pair in ten may change winner with
#: the order, i.e. at most 10% of single-order verdicts are ones the swap would have turned
#: into abstentions. The article gives no number; this is fairjudge's choice, an option.
DEFAULT_THRESHOLD = 0.90

SINGLE = "single order"
BOTH = "both orders"


@dataclass(frozen=True)
class SwapPlan:
    """The decision of a swap test for one judge, with the numbers behind it.

    Attributes
    ----------
    judge : str
    decision : {"single order", "both orders"}
        Whether the pairs outside the sample may be judged once each (in a content-seeded
        random order) or need both orders.
    reason : str
        One paragraph: the consistency, its interval, the threshold and why.
    consistency : Estimate
        Position consistency of the sampled pairs with its Wilson interval (``n`` pairs; no
        finite-population correction, so conservative when the sample is much of the run).
    threshold : float
        The lowest acceptable consistency; single order needs ``consistency.ci_low >=
        threshold`` (the lower bound, so a small lucky sample cannot skip the swap).
    sample_size : int
        Pairs swap-tested (judged in both orders).
    n_pairs : int
        Pairs in the full run (the sample included).
    calls_swap_all, calls_plan, calls_saved : int
        Judge calls to swap every pair (``2 n``), calls of this plan (``2 m + (n - m)`` for
        single order, ``2 n`` for both; the sample's calls are part of the run) and their
        difference (``n - m`` or 0).
    cost_per_call : float or None
        Dollars per call (given, or the mean recorded ``cost``), None when unknown.
    money_saved : float or None
        ``calls_saved * cost_per_call`` in dollars.
    full_consistency : Estimate or None
        On recorded data holding more pairs than the sample: the consistency of every pair
        judged in both orders, to see how well the sample predicted it.
    pairs_needed : int or None
        When the estimate clears the threshold but its lower bound does not: the sample
        size at which the same estimate's lower bound would clear it (None otherwise, or
        when no size up to ``n_pairs`` would).
    sampled_pairs : tuple of str
        The sampled pair ids.
    """

    judge: str
    decision: str
    reason: str
    consistency: Estimate
    threshold: float
    sample_size: int
    n_pairs: int
    calls_swap_all: int
    calls_plan: int
    calls_saved: int
    cost_per_call: float | None = None
    money_saved: float | None = None
    full_consistency: Estimate | None = None
    pairs_needed: int | None = None
    sampled_pairs: tuple = field(default=(), repr=False)

    def to_dict(self) -> dict:
        out = {k: getattr(self, k) for k in (
            "judge", "decision", "reason", "threshold", "sample_size", "n_pairs",
            "calls_swap_all", "calls_plan", "calls_saved", "cost_per_call", "money_saved",
            "pairs_needed")}
        out["consistency"] = self.consistency.as_dict()
        out["full_consistency"] = (None if self.full_consistency is None
                                   else self.full_consistency.as_dict())
        out["sampled_pairs"] = list(self.sampled_pairs)
        return out


def plan_calls(n_pairs: int, sample_size: int, decision: str) -> tuple[int, int, int]:
    """Calls to swap everything, calls of the plan and calls saved.

    ``(2 n, 2 m + (n - m), n - m)`` for a single-order decision, ``(2 n, 2 n, 0)`` for both
    orders: the ``m`` sampled pairs are judged twice either way and stay in the run.
    """
    swap_all = 2 * n_pairs
    plan = swap_all if decision == BOTH else 2 * sample_size + (n_pairs - sample_size)
    return swap_all, plan, swap_all - plan


def _pairs_needed(p: float, threshold: float, n_max: int, level: float) -> int | None:
    """Smallest sample size whose Wilson lower bound at proportion ``p`` reaches
    ``threshold`` (None if none up to ``n_max``); the bound rises with n, so bisect."""
    def low(n):
        return wilson_interval(p * n, n, level=level).low

    if p < threshold or n_max < 1 or low(n_max) < threshold:
        return None
    lo, hi = 1, n_max
    while lo < hi:
        mid = (lo + hi) // 2
        if low(mid) >= threshold:
            hi = mid
        else:
            lo = mid + 1
    return lo


def _check(sample_size, threshold, n_pairs, cost_per_call, level):
    if isinstance(sample_size, bool) or not isinstance(sample_size, (int, np.integer)) \
            or sample_size < 1:
        raise FairjudgeInputError(f"`sample_size` must be a positive integer number of pairs; "
                                  f"got {sample_size!r}")
    if not isinstance(threshold, (int, float)) or not 0 < threshold <= 1:
        raise FairjudgeInputError(f"`threshold` must be a consistency in (0, 1]; got "
                                  f"{threshold!r}")
    if n_pairs is not None and (isinstance(n_pairs, bool) or not isinstance(
            n_pairs, (int, np.integer)) or n_pairs < 1):
        raise FairjudgeInputError(f"`n_pairs` must be a positive integer; got {n_pairs!r}")
    if cost_per_call is not None and (not isinstance(cost_per_call, (int, float))
                                      or not math.isfinite(cost_per_call) or cost_per_call < 0):
        raise FairjudgeInputError(f"`cost_per_call` must be a non-negative number of dollars; "
                                  f"got {cost_per_call!r}")
    if not 0 < level < 1:
        raise FairjudgeInputError(f"`level` must be between 0 and 1; got {level!r}")


def swap_test_plan(verdicts: pd.DataFrame, *, sample_size: int = DEFAULT_SAMPLE_SIZE,
                   threshold: float = DEFAULT_THRESHOLD, n_pairs: int | None = None,
                   cost_per_call: float | None = None, level: float = 0.95,
                   rng=0) -> dict[str, SwapPlan]:
    """Swap-test a random sample of pairs and decide, per judge, whether the run needs both
    orders [position-bias-swap, "What the swap costs, and why it is still worth it"].

    Parameters
    ----------
    verdicts : pandas.DataFrame
        Validated verdicts; the pairs a judge judged in both orders are the pool the sample
        is drawn from (a recorded full run simulates "sample first" by sub-sampling it).
    sample_size : int
        Pairs to swap-test per judge (``m``); all of the pool when it is smaller.
    threshold : float
        Lowest acceptable position consistency. Single order is chosen only when the
        Wilson interval's lower bound reaches it: a pair whose winner changes with the
        order gets, from one order, a verdict that is an artifact of the seat (the swap
        would have made it an abstention), so ``1 - ci_low`` bounds the share of such
        verdicts in a single-order run.
    n_pairs : int, optional
        Pairs of the full run (``n``); default the judge's distinct pairs in ``verdicts``.
    cost_per_call : float, optional
        Dollars per call; default the mean of the judge's recorded ``cost`` when present.
    level : float
        Interval level.
    rng : seed or numpy.random.Generator
        Draws the sample (without replacement, from the pool sorted by pair id, so the draw
        does not depend on row order). A seed restarts for every judge: judges with the
        same pairs get the same sample.

    Returns
    -------
    dict of str -> SwapPlan

    Raises
    ------
    FairjudgeInputError
        On a bad argument, or a judge with no pair judged in both orders, or ``n_pairs``
        smaller than the sample.

    Examples
    --------
    >>> import pandas as pd
    >>> v = pd.DataFrame({"item_a": ["x", "y"] * 2, "item_b": ["y", "x"] * 2,
    ...                   "winner": ["a", "b", "a", "a"], "pair_id": [1, 1, 2, 2]})
    >>> plan = swap_test_plan(v, n_pairs=1000)["judge"]
    >>> plan.decision, plan.consistency.estimate, plan.calls_saved
    ('both orders', 0.5, 0)
    """
    _check(sample_size, threshold, n_pairs, cost_per_call, level)
    # A seed starts afresh for every judge, so judges that share pairs are swap-tested on
    # the same sample (their plans compare like with like); a Generator is used as given.
    shared = rng if isinstance(rng, np.random.Generator) else None
    table = pair_consistency(verdicts)
    judges = (verdicts["judge"].astype(str) if "judge" in verdicts.columns
              else pd.Series("judge", index=verdicts.index))
    pair_keys = (verdicts["pair_id"].astype(str) if "pair_id" in verdicts.columns else None)
    plans = {}
    for judge in sorted(judges.unique()):
        pool = table[table["judge"].astype(str) == judge].sort_values("pair_id", kind="stable")
        if pool.empty:
            raise FairjudgeInputError(
                f"judge {judge!r} has no pair judged in both orders; a swap test needs both "
                "orders of the sampled pairs (`order`/`pair_id` columns, or the two item "
                "orders of one pair)")
        m = min(int(sample_size), len(pool))
        generator = shared if shared is not None else np.random.default_rng(rng)
        chosen = np.sort(generator.choice(len(pool), size=m, replace=False))
        sample = pool.iloc[chosen]
        k = int(sample["consistent"].sum())
        consistency = proportion_estimate(k, m, level=level)
        mine = (judges == judge).to_numpy()
        if n_pairs is not None:
            full_n = int(n_pairs)
        elif pair_keys is not None:
            full_n = int(pair_keys[mine].nunique())
        else:
            full_n = len(pool) + int(_single_order_pairs(verdicts[mine], pool))
        if full_n < m:
            raise FairjudgeInputError(f"`n_pairs` ({full_n}) is smaller than the swap-test "
                                      f"sample ({m} pairs) of judge {judge!r}")
        decision = SINGLE if consistency.ci_low >= threshold else BOTH
        swap_all, plan_n, saved = plan_calls(full_n, m, decision)
        price = cost_per_call
        if price is None and "cost" in verdicts.columns:
            costs = pd.to_numeric(verdicts.loc[mine, "cost"], errors="coerce").dropna()
            price = float(costs.mean()) if len(costs) else None
        full = None
        if len(pool) > m:
            full = proportion_estimate(int(pool["consistent"].sum()), len(pool), level=level)
        needed = None
        if decision == BOTH and consistency.estimate >= threshold:
            needed = _pairs_needed(consistency.estimate, threshold, full_n, level)
        reason = _reason(decision, consistency, threshold, m, full_n, needed)
        plans[judge] = SwapPlan(
            judge=judge, decision=decision, reason=reason, consistency=consistency,
            threshold=float(threshold), sample_size=m, n_pairs=full_n,
            calls_swap_all=swap_all, calls_plan=plan_n, calls_saved=saved,
            cost_per_call=price, money_saved=None if price is None else saved * price,
            full_consistency=full, pairs_needed=needed,
            sampled_pairs=tuple(str(p) for p in sample["pair_id"]))
    return plans


def _single_order_pairs(verdicts: pd.DataFrame, pool: pd.DataFrame) -> int:
    """Pairs of one judge judged in one order only (they belong to the full run too)."""
    from fairjudge.data._schema import verdict_pairs

    return max(0, len(set(verdict_pairs(verdicts).code)) - len(pool))


def _reason(decision, consistency, threshold, m, n, needed) -> str:
    c = consistency
    head = (f"position consistency {c.estimate:.3f} [{c.ci_low:.3f}, {c.ci_high:.3f}] "
            f"({c.level:.0%} Wilson) on {m} swap-tested pairs; threshold {threshold:.2f} "
            f"(single order only if at most {1 - threshold:.0%} of pairs can change winner "
            "with the order, judged by the interval's lower bound)")
    if decision == SINGLE:
        return (f"{head}. The lower bound {c.ci_low:.3f} clears it: judge the other {n - m} "
                "pairs once each, in a content-seeded random order, and keep the sample's "
                "both-order verdicts.")
    text = (f"{head}. The lower bound {c.ci_low:.3f} is below it: up to "
            f"{1 - c.ci_low:.0%} of single-order verdicts could be seat artifacts, so judge "
            "every pair in both orders and count only wins that survive the swap.")
    if c.estimate >= threshold:
        text += (f" The estimate itself clears the threshold; a sample of about {needed} "
                 "pairs with the same consistency would settle it." if needed else
                 " The estimate itself clears the threshold, but no sample within the run "
                 "would make the lower bound clear it.")
    return text


def run_swap_test(backends, pairs, *, sample_size: int = DEFAULT_SAMPLE_SIZE,
                  threshold: float = DEFAULT_THRESHOLD, items=None, cache=None, options=None,
                  settings=None, cost_per_call: float | None = None, level: float = 0.95,
                  seed: int = 0):
    """Draw ``sample_size`` of ``pairs``, judge them in both orders (S1) through each backend
    and plan the full run over all ``pairs`` with :func:`swap_test_plan`.

    Parameters
    ----------
    backends : list of JudgeBackend
    pairs : path or pandas.DataFrame
        The pairs of the full run (:func:`fairjudge.data.load_pairs`).
    cache, options, settings
        As for :func:`fairjudge.strategies.judge_pairs`; every call is cached.
    seed : int
        Draws the sample (``numpy.random.default_rng(seed)``) and seeds the run.

    Returns
    -------
    (dict of str -> SwapPlan, fairjudge.judges.RunReport, pandas.DataFrame)
        The plans, the run's calls and money, and the sample's verdicts.
    """
    from fairjudge.audit._run import _judge_live
    from fairjudge.data._io import read_table
    from fairjudge.data._pairs import load_pairs

    _check(sample_size, threshold, None, cost_per_call, level)
    table = load_pairs(pairs, items=items)  # validates every pair of the run up front
    raw = pairs if isinstance(pairs, pd.DataFrame) else read_table(pairs)
    m = min(int(sample_size), len(table))
    chosen = np.sort(np.random.default_rng(seed).choice(len(table), size=m, replace=False))
    verdicts, report, _ = _judge_live(
        backends, pairs=raw.iloc[chosen].reset_index(drop=True), probes=None, items=items,
        strategy="S1", pair_strategy="S1", cache=cache, options=options, settings=settings,
        seed=seed)
    plans = swap_test_plan(verdicts, sample_size=m, threshold=threshold, n_pairs=len(table),
                           cost_per_call=cost_per_call, level=level, rng=seed)
    return plans, report, verdicts
