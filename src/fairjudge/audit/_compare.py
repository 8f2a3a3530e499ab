"""Comparing strategies or judges on the same pairs against gold labels
[debiasing-strategies-study §3.5, §4.2, Appendix D, H; Tables 1, 3, 4, 5]."""

from __future__ import annotations

import dataclasses
import warnings
from dataclasses import dataclass

import numpy as np
import pandas as pd

from fairjudge._util._warnings import ConvergenceWarning, FairjudgeInputError
from fairjudge.audit._gold import _pair_keys, gold_choice
from fairjudge.audit._selector_check import SelectorCheck, configuration_identity, selector_check
from fairjudge.data._schema import WINNER_VALUES, Outcome
from fairjudge.stats._agreement import cohens_kappa, paired_bootstrap_difference
from fairjudge.stats._bootstrap import bootstrap_rate
from fairjudge.stats._estimate import Estimate
from fairjudge.stats._mcnemar import holm_bonferroni, mcnemar, mcnemar_mde
from fairjudge.stats._mixed import strategy_effects
from fairjudge.strategies._strategies import STRATEGIES, get_strategy

ALPHA = 0.05


@dataclass(frozen=True)
class Comparison:
    """Everything :func:`compare_verdicts` measured.

    Attributes
    ----------
    names : list of str
        Configurations in input order; the first is the baseline.
    table : pandas.DataFrame
        One row per configuration: agreement and kappa with intervals, ``n``, verdict
        counts (a, b, tie, abstain, invalid) and tie rate, cost per evaluation, McNemar
        against the baseline (``b``, ``c``, statistic, p, exact p, Holm-adjusted p) and the
        minimum detectable effect at this ``n``.
    mixed : pandas.DataFrame or None
        Mixed-effects logistic regression of correctness on configuration with an instance
        random intercept (``None`` if it could not be fitted; ``mixed_error`` says why).
    pareto : list of str
        Configurations on the cost-agreement Pareto front (needs costs).
    recommendation : str
        A recommendation derived from these measurements, with its evidence.
    n_instances : int
    recommended : str
        The configuration the recommendation picks ("" with a single configuration).
    algorithm_1 : SelectorCheck or None
        The study's Algorithm 1 for this comparison's judge beside ``recommended``
        [debiasing-strategies-study §5.4].
    holm_family : str
        What the Holm adjustment in ``table["p_holm"]`` spans; in a family across judges
        (:func:`compare_by_judge`) ``table["p_holm_family"]`` holds the family-wide values
        and the recommendation uses them.
    """

    names: list
    table: pd.DataFrame
    mixed: pd.DataFrame | None
    pareto: list
    recommendation: str
    n_instances: int
    mixed_error: str = ""
    level: float = 0.95
    interval_method: str = "cluster percentile bootstrap"
    recommended: str = ""
    algorithm_1: SelectorCheck | None = None
    holm_family: str = "the tests of this comparison"

    def to_dict(self) -> dict:
        out = {}
        for row in self.table.itertuples():
            out[row.name] = {
                "agreement": Estimate(row.agreement, row.agreement_ci_low,
                                      row.agreement_ci_high, row.n_pairs, self.level,
                                      self.interval_method).as_dict(),
                "kappa": Estimate(row.kappa, row.kappa_ci_low, row.kappa_ci_high, row.n_pairs,
                                  self.level, self.interval_method).as_dict(),
                "verdicts": {"a": row.n_a, "b": row.n_b, "tie": row.n_tie,
                             "abstain": row.n_abstain, "invalid": row.n_invalid,
                             "tie_rate": row.tie_rate},
                "cost_per_eval": row.cost_per_eval,
                "mcnemar": None if row.name == self.names[0] else {
                    "baseline": self.names[0], "b": row.mcnemar_b, "c": row.mcnemar_c,
                    "statistic": row.mcnemar_statistic, "p_value": row.mcnemar_p,
                    "exact_p_value": row.mcnemar_exact_p, "p_holm": row.p_holm,
                    "mde": row.mde},
                "pareto": row.name in self.pareto,
            }
            if "p_holm_family" in self.table.columns and out[row.name]["mcnemar"]:
                out[row.name]["mcnemar"]["p_holm_family"] = row.p_holm_family
        return {"baseline": self.names[0], "n_instances": self.n_instances,
                "configurations": out,
                "mixed_effects": None if self.mixed is None else
                self.mixed.to_dict(orient="records"),
                "mixed_effects_error": self.mixed_error or None,
                "pareto": self.pareto, "holm_family": self.holm_family,
                "recommendation": self.recommendation,
                "recommended": self.recommended or None,
                "algorithm_1": None if self.algorithm_1 is None else self.algorithm_1.as_dict()}


def _instances(table: pd.DataFrame, ordered: bool, by_pair_id: bool) -> pd.Series:
    """The instance of each verdict: its pair (``pair_id`` when every table has pair ids and
    orders, else its items), and with ``ordered`` also the order shown."""
    key = table["pair_id"].astype(str) if by_pair_id else _pair_keys(table)
    if ordered:
        shown = table["order"].astype(str) if by_pair_id else table["item_a"].astype(str)
        key = key + "\x1f" + shown
    return key


def _one_per_pair(table: pd.DataFrame, by_pair_id: bool) -> pd.DataFrame:
    """A per-call table combined into one verdict per pair by its strategy's rule (sample 0
    calls only; further samples measure stability and never vote), in the frame of the
    pair's first call, with the costs of all its calls (repeats included) summed, as
    `judge`'s aggregate table does. A pair without every call its strategy makes (an
    interrupted run) is an error, never a verdict from the calls that happen to exist."""
    source = table.attrs.get("source", "verdicts")
    named = table["strategy"].dropna().unique() if "strategy" in table.columns else []
    if len(named) != 1 or str(named[0]) not in STRATEGIES:
        raise FairjudgeInputError(
            f"{source}: holds several verdicts per pair, and no `strategy` column names the "
            f"rule that combines them (one of {', '.join(STRATEGIES)}); give its aggregate "
            "table (`fairjudge judge --aggregate`) or compare tables of one verdict per pair")
    strategy = get_strategy(str(named[0]))
    pair_cost = None
    if "cost" in table.columns:
        pair_cost = table["cost"].astype(float).groupby(
            _instances(table, False, by_pair_id).to_numpy(), sort=False).sum(min_count=1)
    if "sample" in table.columns:
        table = table[table["sample"].fillna(0).astype(int) == 0]
    detail = (table["outcome_detail"].astype(str) if "outcome_detail" in table.columns
              else pd.Series("win", index=table.index))
    outcomes = [Outcome(w) if isinstance(w, str) and w else
                Outcome.ABSTAIN if d == "abstain" else Outcome.INVALID
                for w, d in zip(table["winner"].astype(object).where(table["winner"].notna(),
                                                                     None), detail)]
    keys = _instances(table, False, by_pair_id).to_numpy()
    order = table["order"].astype(str).to_numpy() if "order" in table.columns else None
    item_a = table["item_a"].to_numpy(dtype=object)
    if strategy.cross_family:
        raise FairjudgeInputError(
            f"{source}: a per-call table of {strategy.name} (cross-family ensemble) holds "
            "several judges; compare its aggregate table (`fairjudge judge --aggregate`)")
    groups = pd.Series(np.arange(len(table))).groupby(keys, sort=False).groups
    expected = len(strategy.calls("pair", seed=0))
    short = [key for key, positions in groups.items() if len(positions) != expected]
    if short:
        raise FairjudgeInputError(
            f"{source}: {len(short):,} of {len(groups):,} pairs lack some of their "
            f"{expected} {strategy.name} calls (an interrupted or capped run?), e.g. "
            f"{str(short[0]).replace(chr(31), ' / ')!r}; rerun the judge to complete them, or "
            "compare its aggregate table (`--aggregate`), which leaves them out")
    rows = []
    for key, positions in groups.items():
        positions = np.asarray(positions)
        shown_ab = positions if order is None else positions[order[positions] == "ab"]
        first = (shown_ab if len(shown_ab) else positions)[0]  # the pair's own frame
        combined = strategy.aggregate([
            outcomes[i] if item_a[i] == item_a[first] else outcomes[i].swapped()
            for i in positions])
        row = table.iloc[first].to_dict()
        row.update({"winner": combined.value if combined.value in WINNER_VALUES else None,
                    "outcome_detail": {"a": "win", "b": "win"}.get(combined.value,
                                                                  combined.value)})
        if pair_cost is not None:
            row["cost"] = float(pair_cost[key])
        rows.append(row)
    out = pd.DataFrame(rows)
    out.attrs = dict(table.attrs)
    return out


def compare_verdicts(tables: dict, gold: pd.DataFrame, *, costs: dict | None = None,
                     level: float = 0.95, n_boot: int = 2000, rng=0, task: str = "natural",
                     budget_multiplier: int | None = None,
                     strategy_ids: dict | None = None) -> Comparison:
    """Compare configurations (strategies or judges) judged on the same pairs.

    Each table holds one configuration's verdicts, one per instance: a pair (one row per
    pair, e.g. an aggregate table) or, when every table has several rows per pair, an
    ordered pair (the order shown). When only some tables have several rows per pair (the
    per-call table of S1 beside B0's), those are combined into one verdict per pair by the
    rule of the strategy their ``strategy`` column names. Correctness is the exact label
    match with gold (a tie is right only against a gold tie; abstentions and invalid
    outputs are wrong), as in the study's Appendix D. The first table is the baseline for
    McNemar's test (continuity-corrected, with the exact binomial p and Holm–Bonferroni over
    all comparisons) and for the mixed-effects regression.

    Parameters
    ----------
    tables : dict of str -> pandas.DataFrame
        Verdict tables (validated), keyed by configuration name.
    gold : pandas.DataFrame
        Gold labels (see :func:`load_gold`).
    costs : dict of str -> float, optional
        Dollars per evaluation; defaults to the mean per-instance ``cost`` column of each
        table when present.
    task : {"natural", "adversarial", "high-stakes"}
        Task type for the study's Algorithm 1, shown beside the data-driven recommendation
        (``algorithm_1``); the data cannot tell it, so say it.
    budget_multiplier : int, optional
        Algorithm 1's budget k (judge calls per pair); ``None``: not limited.
    strategy_ids : dict of str -> str, optional
        The study strategy (B0, S1 ... S8) of configurations whose name and ``strategy``
        column do not say it, e.g. ``{"Vanilla_NoRules": "B0"}``; only Algorithm 1's
        comparison reads it.

    Raises
    ------
    FairjudgeInputError
        If a table holds several judges or strategies, if a verdict's pair has no gold
        label, or if the tables do not cover the same instances.
    """

    comparison, _ = _compare(tables, gold, costs=costs, level=level, n_boot=n_boot, rng=rng,
                             task=task, budget_multiplier=budget_multiplier,
                             strategy_ids=strategy_ids)
    return comparison


def _compare(tables: dict, gold: pd.DataFrame, *, costs, level, n_boot, rng, task,
             budget_multiplier, strategy_ids) -> tuple[Comparison, dict]:
    """:func:`compare_verdicts`, also returning each configuration's per-instance
    correctness (name -> array of 0/1), which a family across judges re-tests."""
    if len(tables) < 1:
        raise FairjudgeInputError("`tables` needs at least one verdict table")
    names = list(tables)
    for name, table in tables.items():
        for column in ("judge", "strategy"):
            if column in table.columns and table[column].nunique() > 1:
                values = ", ".join(map(str, table[column].unique()[:4]))
                raise FairjudgeInputError(
                    f"{table.attrs.get('source', name)}: holds verdicts of several "
                    f"{column}s ({values}); compare one configuration per file, or split "
                    "it by judge and strategy (`split_by_judge`, `compare --by-judge`)")
    identities = {name: configuration_identity(name, table, strategy_ids)
                  for name, table in tables.items()}
    by_pair_id = all({"pair_id", "order"} <= set(t.columns) for t in tables.values())
    several = {name: bool(_instances(t, False, by_pair_id).duplicated().any())
               for name, t in tables.items()}
    if len(set(several.values())) > 1:
        # Per-call tables of multi-call strategies (S1's two orders) beside one-verdict-per-
        # pair tables: each strategy's calls are combined by its own rule, as `judge`'s
        # aggregate table would have combined them.
        tables = {name: _one_per_pair(t, by_pair_id) if several[name] else t
                  for name, t in tables.items()}
    ordered = any(_instances(t, False, by_pair_id).duplicated().any() for t in tables.values())
    keyed = {}
    for name, table in tables.items():
        keys = _instances(table, ordered, by_pair_id)
        dup = keys.duplicated().to_numpy()
        if dup.any():
            row = int(np.flatnonzero(dup)[0])
            raise FairjudgeInputError(
                f"{table.attrs.get('source', name)} {table.attrs.get('location', 'row')} "
                f"{table.index[row]}: a second verdict for the same pair in the same order; "
                "give one verdict per instance (an aggregate table)")
        truth = gold_choice(table, gold)
        winner = table["winner"].astype("string").fillna("").to_numpy(dtype=object)
        detail = (table["outcome_detail"].astype(str).to_numpy() if "outcome_detail" in
                  table.columns else np.where(winner == "", "invalid", "win"))
        keyed[name] = pd.DataFrame({"winner": winner, "gold": truth.to_numpy(),
                                    "detail": detail,
                                    "cost": table["cost"].to_numpy(dtype=float)
                                    if "cost" in table.columns else np.nan},
                                   index=keys.to_numpy())
    common = keyed[names[0]].index
    for name in names[1:]:
        other = keyed[name].index
        if set(other) != set(common):
            extra = len(set(other) - set(common))
            missing = len(set(common) - set(other))
            raise FairjudgeInputError(
                f"{tables[name].attrs.get('source', name)}: covers different pairs than "
                f"{tables[names[0]].attrs.get('source', names[0])} ({extra} extra, {missing} "
                "missing); compare configurations on the same pairs")
    for name in names:
        keyed[name] = keyed[name].loc[common]
    n = len(common)
    correct = {name: (k["winner"] == k["gold"]).to_numpy(dtype=float) for name, k in keyed.items()}
    # With both orders as instances, the two orders of a pair are resampled together and the
    # mixed model's random intercept is per pair.
    pair_of = pd.Index(common).str.rsplit("\x1f", n=1).str[0] if ordered else pd.Index(common)
    clusters = pair_of.to_numpy()
    rows = []
    for name in names:
        k = keyed[name]
        pred = np.where(k["winner"] == "", None, k["winner"]).astype(object)
        agree = bootstrap_rate(correct[name], clusters=clusters, level=level, n_boot=n_boot,
                               rng=rng)
        kappa = cohens_kappa(pred, k["gold"].to_numpy(dtype=object), clusters=clusters,
                             level=level, n_boot=n_boot, rng=rng)
        cost = (costs or {}).get(name, float(np.nanmean(k["cost"])) if
                                 np.isfinite(k["cost"]).any() else np.nan)
        row = {"name": name, "n": n, "n_pairs": agree.n, "agreement": agree.estimate,
               "agreement_ci_low": agree.ci_low, "agreement_ci_high": agree.ci_high,
               "kappa": kappa.estimate, "kappa_ci_low": kappa.ci_low,
               "kappa_ci_high": kappa.ci_high,
               "n_a": int((k["winner"] == "a").sum()), "n_b": int((k["winner"] == "b").sum()),
               "n_tie": int((k["winner"] == "tie").sum()),
               "n_abstain": int((k["detail"] == "abstain").sum()),
               "n_invalid": int(((k["winner"] == "") & (k["detail"] != "abstain")).sum()),
               "cost_per_eval": cost}
        row["tie_rate"] = row["n_tie"] / n
        if name != names[0]:
            test = mcnemar(correct[names[0]], correct[name])
            row.update({"mcnemar_b": test.b, "mcnemar_c": test.c,
                        "mcnemar_statistic": test.statistic, "mcnemar_p": test.p_value,
                        "mcnemar_exact_p": test.exact_p_value,
                        "mde": _mde(n, correct[names[0]], correct[name]),
                        "difference": paired_bootstrap_difference(
                            correct[name], correct[names[0]], level=level, n_boot=n_boot,
                            rng=rng).estimate})
        rows.append(row)
    table = pd.DataFrame(rows)
    for column in ("mcnemar_b", "mcnemar_c", "mcnemar_statistic", "mcnemar_p", "mcnemar_exact_p",
                   "mde", "difference"):
        if column not in table.columns:
            table[column] = np.nan
    table["p_holm"] = np.nan
    tested = table["mcnemar_p"].notna().to_numpy()
    if tested.any():
        table.loc[tested, "p_holm"] = holm_bonferroni(table.loc[tested, "mcnemar_p"].to_numpy())
    mixed, mixed_error = _mixed_effects(correct, names, clusters)
    pareto = pareto_front(table)
    comparison = Comparison(names, table, mixed, pareto, "", n, mixed_error, level)
    selector = {"task": task, "budget_multiplier": budget_multiplier,
                "identities": identities}
    return _with_recommendation(comparison, correct, selector), correct


def _with_recommendation(comparison: Comparison, correct: dict, selector: dict, *,
                         p_column: str = "p_holm",
                         holm_family: str = "the tests of this comparison") -> Comparison:
    """``comparison`` with its data-driven recommendation (at the Holm p-values of
    ``p_column``) and Algorithm 1 beside it."""
    text, chosen = _recommend(comparison.table, correct, comparison.names, p_column=p_column,
                              holm_family=holm_family)
    identities = selector["identities"]
    judges = {j for j, _ in identities.values()}
    # Algorithm 1's M is the comparison's one judge; configurations of several (or unknown)
    # judges leave M unspecified, as the algorithm allows.
    model = next(iter(judges)) if len(judges) == 1 else None
    rows = comparison.table.set_index("name")
    evidence = {}
    for name in comparison.names:
        r = rows.loc[name]
        evidence[name] = f"agreement {r['agreement']:.3f}"
        if name != comparison.names[0]:
            evidence[name] += (f", {100 * r['difference']:+.1f} pp vs {comparison.names[0]}, "
                               f"Holm p {r[p_column]:.2g}")
    check = selector_check(model=model, recommended=chosen, identities=identities,
                           task=selector["task"],
                           budget_multiplier=selector["budget_multiplier"], evidence=evidence)
    return dataclasses.replace(comparison, recommendation=text, recommended=chosen,
                               algorithm_1=check, holm_family=holm_family)


def _mde(n: int, baseline_correct: np.ndarray, candidate_correct: np.ndarray) -> float:
    """Minimum detectable accuracy gain for McNemar at this ``n`` [debiasing-strategies-study,
    Appendix D]: with the observed share of discordant instances (right under one
    configuration and wrong under the other), as the paper does (40-50 of 400 give 4-5
    points). ``2 p (1 - p)``, the share were the two configurations' errors independent,
    overstates it for configurations of one judge, whose errors mostly coincide (it gave
    about 9.5 points at n = 400). At least one discordant instance is assumed."""
    discordant = max(float(np.mean(np.asarray(baseline_correct, bool)
                                   != np.asarray(candidate_correct, bool))), 1.0 / n)
    try:
        return mcnemar_mde(n, discordant)
    except ValueError:  # no gain up to the discordant share is detectable at this n
        return float("nan")


#: Gauss-Hermite nodes tried in turn for the mixed-effects regression until one converges.
MIXED_QUADRATURE_NODES = (25, 50, 100)


def _mixed_effects(correct, names, clusters):
    if len(names) < 2:
        return None, "needs at least two configurations"
    y = np.concatenate([correct[n] for n in names])
    strategy = np.repeat(names, len(clusters))
    instance = np.tile(pd.factorize(clusters)[0], len(names))
    try:
        with warnings.catch_warnings():
            # Non-convergence is reported below, in place of the coefficients.
            warnings.simplefilter("ignore", ConvergenceWarning)
            # A large instance variance makes the 25-node adaptive quadrature inaccurate
            # enough to stall the optimiser (MT-Bench, ChatGPT and PaLM2 of LLMBar's
            # recordings); more nodes are tried before the fit is declared failed.
            for nodes in MIXED_QUADRATURE_NODES:
                fit = strategy_effects(y, strategy, instance, baseline=names[0],
                                       n_quadrature=nodes)
                if fit.converged:
                    break
    except (ValueError, np.linalg.LinAlgError, FloatingPointError) as err:
        return None, str(err)
    if not fit.converged:
        # Its coefficients and standard errors are not estimates (infinite z, zero s.e.):
        # typically a configuration right or wrong on nearly every instance.
        return None, ("the fit did not converge to a proper maximum (a configuration may be "
                      "right or wrong on almost every instance, or the instance variance "
                      "ran to its bound); its coefficients would not be estimates")
    return fit.to_frame(), ""


def pareto_front(table: pd.DataFrame) -> list:
    """Names of the rows no other row beats on both cost (lower) and agreement (higher).

    ``table`` has columns ``name``, ``cost_per_eval`` and ``agreement``. Empty when any cost
    is unknown (not finite): a front over partly unknown costs would mislead.
    """
    if not np.isfinite(table["cost_per_eval"]).all():
        return []
    front = []
    for row in table.itertuples():
        dominated = ((table["cost_per_eval"] <= row.cost_per_eval)
                     & (table["agreement"] >= row.agreement)
                     & ((table["cost_per_eval"] < row.cost_per_eval)
                        | (table["agreement"] > row.agreement))).any()
        if not dominated:
            front.append(row.name)
    return front


def _recommend(table: pd.DataFrame, correct: dict, names: list, *, p_column: str = "p_holm",
               holm_family: str = "the tests of this comparison") -> tuple[str, str]:
    """Recommendation from the measurements only, and the configuration it picks.

    A configuration replaces the baseline only if it beats it by McNemar's test after
    Holm–Bonferroni (alpha 0.05) over ``holm_family`` (p-values in ``p_column``). Among the
    baseline and such configurations, those not significantly worse than the most accurate
    one are equivalent, and the cheapest of them is chosen when costs are known. No model or
    strategy name is favoured a priori.
    """
    if len(names) == 1:
        return f"only one configuration ({names[0]}); nothing to compare", ""
    rows = table.set_index("name")
    base = names[0]
    scope = "" if holm_family == "the tests of this comparison" else f" over {holm_family}"
    better = [n for n in names[1:]
              if rows.loc[n, p_column] < ALPHA and rows.loc[n, "difference"] > 0]
    if not better:
        gains = ", ".join(f"{n} {rows.loc[n, 'difference'] * 100:+.1f} pp (Holm p "
                          f"{rows.loc[n, p_column]:.2g})" for n in names[1:])
        mde = rows["mde"].iloc[1:].max()
        return (f"keep {base}: no configuration beats it significantly after Holm correction"
                f"{scope} ({gains}); at n = {int(rows.loc[base, 'n'])} the minimum detectable "
                f"gain is about {mde * 100:.1f} points, so smaller gains would go unseen."), base
    candidates = [base] + better
    best = max(candidates, key=lambda n: rows.loc[n, "agreement"])
    others = [n for n in candidates if n != best]
    tests = {n: mcnemar(correct[best], correct[n]) for n in others}
    adjusted = dict(zip(others, holm_bonferroni([tests[n].p_value for n in others]))) \
        if others else {}
    tied = [best] + [n for n in others if adjusted[n] >= ALPHA]
    costs = rows["cost_per_eval"]
    choice = min(tied, key=lambda n: (costs[n], -rows.loc[n, "agreement"])) \
        if costs[tied].notna().all() else best
    r = rows.loc[best]
    evidence = (f"{best} has the highest agreement among configurations that beat {base} "
                f"significantly ({r['agreement']:.3f} [{r['agreement_ci_low']:.3f}, "
                f"{r['agreement_ci_high']:.3f}] vs {rows.loc[base, 'agreement']:.3f}; "
                f"b = {int(r['mcnemar_b'])}, c = {int(r['mcnemar_c'])}, Holm p = "
                f"{r[p_column]:.2g}{scope}).")
    if len(tied) > 1:
        evidence += (f" Not distinguishable from it (McNemar, Holm): "
                     f"{', '.join(t for t in tied if t != best)}.")
    if choice != best:
        evidence += f" {choice} is the cheapest of these (${costs[choice]:.4g} per evaluation)."
    return f"use {choice}. " + evidence, choice
