"""The top-level API: ``fairjudge.rank`` and ``fairjudge.select`` (mirrors the CLI)."""

from __future__ import annotations

import warnings
from dataclasses import dataclass, field, replace
from pathlib import Path

import numpy as np
import pandas as pd
from scipy import stats

from fairjudge._util._errors import RunIncomplete, SpendCapReached
from fairjudge._util._json import jsonable
from fairjudge._util._rng import as_generator
from fairjudge._util._warnings import (
    CorrectionAssumptionWarning,
    FairjudgeInputError,
    ManyJudgesWarning,
    WeakIdentificationWarning,
)
from fairjudge.active._loop import ActiveResult, MatrixOracle, run_active_topk
from fairjudge.data._encode import Comparisons, encode_verdicts
from fairjudge.data._io import _as_frame, load_items, load_verdicts
from fairjudge.data._schema import (
    VERDICT_COVARIATE_SUFFIXES,
    Outcome,
    validate_items,
    verdict_covariate_columns,
)
from fairjudge.data._simulator import SimulatedJudge, verdicts_to_matrix
from fairjudge.models._anchored import HUMANS, anchored_agreement, anchored_bt
from fairjudge.models._assumption import WIDE_HALF_WIDTH, check_independence_assumption
from fairjudge.models._bt import POSITION, BTFit
from fairjudge.models._dispatch import fit_model
from fairjudge.models._gate import trusted_anchor_gate
from fairjudge.models._graph import (
    comparison_components,
    describe_components,
    pair_components,
    warn_disconnected,
)
from fairjudge.models._leaderboard import (
    ELO_PER_LOGIT,
    bootstrap_scores,
    elo_ratings,
    posterior_rank_summaries,
)
from fairjudge.models._registry import model_spec
from fairjudge.stats._estimate import Estimate

BIAS_COLUMNS = ["judge", "name", "estimate", "std_error", "ci_low", "ci_high", "level", "n",
                "method"]


def bias_frame(fit: BTFit, level: float = 0.95) -> pd.DataFrame:
    """One row per judge term: judge, name, std_error and the shared estimate fields. The
    bias coefficients, then (``"reliability"`` model) each judge's ``log_reliability``,
    ``log tau_j``."""
    rows = [{"judge": b.judge, "name": b.name, "std_error": b.std_error,
             **b.as_estimate(level).as_dict()} for b in fit.bias + fit.reliability]
    return pd.DataFrame(rows, columns=BIAS_COLUMNS)


def _ranking_payload(topk, scores, membership, bias: pd.DataFrame, level: float) -> dict:
    """The JSON fields shared by rankings and selections."""
    several = bias["judge"].nunique() > 1
    return {
        "topk": list(topk),
        "scores": {i: float(v) for i, v in scores.items()},
        "membership": {i: float(v) for i, v in membership.items()},
        "bias": {(f"{r['judge']}/{r['name']}" if several else r["name"]): {
            c: r[c] for c in BIAS_COLUMNS if c != "name"} for r in bias.to_dict("records")},
    }


@dataclass(frozen=True)
class Ranking:
    """Result of :func:`rank`.

    Attributes
    ----------
    topk : list of str
        The ``k`` items with the highest posterior-mode score, best first.
    scores : pandas.Series
        Posterior-mode quality per item id (logit scale, origin fixed by the prior).
    membership : pandas.Series
        ``P(item in top-k)`` per item id, from posterior samples.
    bias : pandas.DataFrame
        Bias coefficients on the user's scale with intervals at ``level``.
    fit : BTFit
        The underlying fit (covariance, parameters, convergence).
    k : int
    level : float
    diagnostics : dict
    """

    topk: list
    scores: pd.Series
    membership: pd.Series
    bias: pd.DataFrame
    fit: BTFit
    k: int | None
    level: float
    diagnostics: dict = field(default_factory=dict)
    leaderboard: pd.DataFrame | None = None

    def win_probability(self, item_i: str, item_j: str) -> float:
        """``P(item_i beats item_j)`` under a neutral presentation (bias terms excluded)."""
        return float(1.0 / (1.0 + np.exp(-(self.scores[item_i] - self.scores[item_j]))))

    def win_probability_matrix(self, best: int | None = None) -> pd.DataFrame:
        """``P(row beats column)`` for every pair of items, best first (Arena's predicted
        win-rate matrix; bias terms excluded); with ``best``, for the ``best`` highest-ranked
        items only (a matrix of every pair holds 8 N^2 bytes)."""
        order = self.to_frame().index
        if best is not None:
            order = order[:best]
        position = {item: i for i, item in enumerate(self.fit.item_ids)}
        scores = self.fit.scores[[position[item] for item in order]]
        values = 1.0 / (1.0 + np.exp(-(scores[:, None] - scores[None, :])))
        return pd.DataFrame(values, index=order, columns=order)

    def difference(self, item_i: str, item_j: str) -> Estimate:
        """``theta_i - theta_j`` (logits) with its Laplace interval at ``level``: pairwise
        differences are known far better than the scores' own standard errors suggest,
        since those include the overall level that only the prior fixes."""
        ids = list(self.fit.item_ids)
        try:
            i, j = ids.index(item_i), ids.index(item_j)
        except ValueError:
            missing = item_i if item_i not in ids else item_j
            raise FairjudgeInputError(f"unknown item {missing!r}") from None
        estimate = float(self.fit.scores[i] - self.fit.scores[j])
        se = float(np.sqrt(self.fit.contrast_variance(i, j)[0]))
        z = float(stats.norm.ppf(0.5 + self.level / 2.0))
        return Estimate(estimate, estimate - z * se, estimate + z * se,
                        int(self.diagnostics.get("n_verdicts", 0)), self.level,
                        "laplace (normal approximation)")

    def to_frame(self) -> pd.DataFrame:
        """Per-item table sorted by score (best first), indexed by id.

        Columns: ``rank``; ``score`` (logits; its origin is fixed by the prior) and
        ``std_error`` (which includes that origin's uncertainty); ``std_error_vs_mean``
        (the standard error of the score measured from the average item: the number to
        compare items by); ``elo`` (``1000 + 400 / ln 10`` times the score from the mean, as
        Chatbot Arena reports) with ``elo_ci_low``/``elo_ci_high`` (Laplace) and, after a
        bootstrap, ``elo_boot_low``/``elo_boot_high`` (percentiles over resampled verdicts);
        ``rank_low``/``rank_high`` (the rank's interval over posterior samples);
        ``membership`` (P(in top-k); NaN without ``k``) and ``in_topk``.
        """
        return self.leaderboard.copy()

    def to_dict(self) -> dict:
        """JSON-ready summary: topk, scores, membership, bias (name -> estimate, interval),
        the leaderboard (one record per item, best first) and diagnostics."""
        board = self.leaderboard.reset_index()
        return {"model": self.fit.model, "k": self.k,
                **_ranking_payload(self.topk, self.scores, self.membership, self.bias,
                                   self.level),
                "leaderboard": jsonable(board.to_dict(orient="records")),
                "diagnostics": self.diagnostics}


def _covariate_matrix(items: pd.DataFrame | None, covariates):
    if items is None:
        if covariates:
            raise FairjudgeInputError("`covariates` were given but no item table to read them from")
        return None, None
    names = list(items.attrs.get("covariates", [])) if covariates is None else list(covariates)
    missing = [c for c in names if c not in items.columns]
    if missing:
        raise FairjudgeInputError(f"{items.attrs.get('source', 'items')}: covariate "
                                  f"`{missing[0]}` is not a column")
    if not names:
        return None, None
    x = items[names].to_numpy(dtype=float)
    constant = [n for n, sd in zip(names, x.std(axis=0)) if sd == 0]
    if constant:
        raise FairjudgeInputError(
            f"{items.attrs.get('source', 'items')}: covariate `{constant[0]}` has the same value "
            "for every item, so its effect cannot be estimated; drop it with --covariates")
    return x, names


def _split_covariates(covariates, verdicts: pd.DataFrame):
    """Named covariates split into item-level ones and per-verdict ones (those the verdict
    table carries as ``<name>_a``/``<name>_b`` or ``<name>_diff`` columns)."""
    if covariates is None:
        return None, []
    per_verdict = [c for c in covariates if verdict_covariate_columns(verdicts, c) is not None]
    return [c for c in covariates if c not in per_verdict], per_verdict


def _items_for(comparisons) -> pd.DataFrame:
    """An item index matching the fitted items, for encoding anchor labels against it."""
    index = pd.DataFrame(index=pd.Index(comparisons.item_ids, name="id"))
    index.attrs["source"] = "the verdicts"
    return index


#: More distinct judges than this suggests the column names annotators, not judge models.
MANY_JUDGES = 20
#: Median score-variance inflation above which a covariate-adjusted ranking is called weakly
#: identified (score standard errors doubled by not knowing the bias terms). Measured: 1.3
#: on the paper's simulator (30 items, one covariate, one verdict per ordered pair), 12 on
#: 8 of its items asked 30 times (verdicts shrink only the sampling part), 1.0-1.2 on PRD
#: answers with length and markdown, 260 on PRD's five models with their mean length and
#: markdown.
WEAK_IDENTIFICATION = 4.0


def _weak_identification_message(covariates: list, inflation: float, n_items: int) -> str:
    """Why a fit's ranking is weakly identified, and the ways out for its bias terms."""
    size = (f"score variances {inflation:.0f}x what they would be with the bias known, "
            "median over items")
    if not covariates:  # the position term alone: presentation order never varied
        return (f"the ranking is weakly identified: the items were not shown in both orders, "
                f"so a first-slot preference cannot be told from quality ({size}). Ways out: "
                "show each pair in both orders or in random order, or drop the position term "
                "(--no-position) if the order was random")
    return (f"the ranking is weakly identified: most of the uncertainty of the scores of the "
            f"{n_items:,} items comes from telling a bias on {', '.join(covariates)} from "
            f"quality, which verdicts cannot do ({size}); the order rests on the prior's "
            "assumption that quality is uncorrelated with the covariates, and more verdicts "
            "will not settle it. Ways out: human labels for the trusted-anchor gate "
            "(--anchors), per-verdict covariates that vary within items (<name>_a/<name>_b "
            "columns), more items, or a stronger bias prior (--bias-prior-precision)")


def _pool_or_warn(verdicts: pd.DataFrame, pool: bool) -> pd.DataFrame:
    """One judge for every verdict when pooling; else a warning when the judge column looks
    like annotator ids (each judge gets position and bias terms of its own)."""
    if pool:
        return verdicts.assign(judge="pooled")
    counts = verdicts["judge"].value_counts()
    if len(counts) > MANY_JUDGES:
        warnings.warn(
            f"{verdicts.attrs.get('source', 'verdicts')}: the `judge` column has "
            f"{len(counts):,} distinct values (median {int(counts.median()):,} verdicts "
            "each), and each gets position and bias terms of its own; if it holds annotators "
            "or users rather than judge models, pool them (--pool-judges, "
            "pool_judges=True)", ManyJudgesWarning, stacklevel=3)
    return verdicts


def _check_assumption(comparisons, x, names, fit, diagnostics, *, prior_precision,
                      bias_prior_precision, position) -> None:
    """Without human labels: whether the correction of item covariates rests on the
    assumption that quality is uncorrelated with them; a warning when the data say so."""
    from fairjudge.models._bt import standardise_covariates

    x_std = standardise_covariates(x, names, comparisons.n_items)[0]
    plain = comparisons.without_covariates()  # one object: its pair table is reused
    uncorrected = fit_model("bias-aware", plain, None,
                            prior_precision=prior_precision,
                            bias_prior_precision=bias_prior_precision, position=position,
                            init=_uncorrected_start(fit, comparisons, x, names, position),
                            check_graph=False)
    check = check_independence_assumption(plain, x_std, names, uncorrected, fit)
    diagnostics["assumption"] = check.as_dict()
    if check.reasons:
        warnings.warn(
            f"the correction of {', '.join(names)} assumes quality is uncorrelated with "
            f"{'it' if len(names) == 1 else 'them'} (no human labels identify it "
            "otherwise), and these verdicts suggest the ranking rests on that assumption: "
            + "; ".join(check.reasons) + ". Give human labels for ~100 pairs (--anchors) "
            "to fit the correction against them, or compare with --model naive",
            CorrectionAssumptionWarning, stacklevel=3)


def _uncorrected_start(fit: BTFit, comparisons, x, names, position: bool):
    """A warm start for the fit without item covariates, from the corrected ``fit``: its
    scores estimate ``theta + c x`` (quality plus the judges' bias on the covariates, their
    verdict-weighted mean with several judges) [bias-aware-active-topk §5, Prop. 1] and its
    position terms the corrected ones. It saves about three of five Newton steps on a
    million verdicts; the fit converges to the same mode without it. None when ``fit``
    lacks one of the terms (another model's fit)."""
    judges = comparisons.judges
    try:
        c = np.array([[fit.bias_estimate(name, judge).estimate for name in names]
                      for judge in judges], dtype=float).reshape(len(judges), len(names))
        kappa = [fit.bias_estimate(POSITION, judge).estimate for judge in judges] \
            if position else []
    except KeyError:
        return None
    share = np.bincount(comparisons.judge, minlength=len(judges)) / max(len(comparisons), 1)
    theta = fit.scores + (x - x.mean(axis=0)) @ (share @ c)
    return np.concatenate([theta, np.asarray(kappa, dtype=float)])


#: Cross-validation folds over the labelled pairs for the anchored fit's held-out agreement.
ANCHOR_FOLDS = 5


def _decisive_first_rate(first_score: np.ndarray) -> float:
    """Share of decisive verdicts (``a`` or ``b``) won by the first-shown answer, from the
    encoded outcomes (:attr:`Comparisons.first_score`: 1, 0 or ``TIE_SCORE``)."""
    first = int(np.count_nonzero(first_score == Outcome.A.first_score))
    decisive = first + int(np.count_nonzero(first_score == Outcome.B.first_score))
    return first / decisive if decisive else float("nan")


def _ppi_fit(comparisons, anchors, judge_fit: BTFit, diagnostics, *,
             prior_precision: float) -> BTFit:
    """The humans' scores by PPI++: each pair's human credit (the mean over its labels, to
    the lower-indexed item) predicted by the judge's fit without its bias terms."""
    from scipy.special import expit

    from fairjudge.ppi import ppi_bradley_terry

    n = comparisons.n_items
    lo, hi = np.minimum(anchors.first, anchors.second), np.maximum(anchors.first, anchors.second)
    credit = np.where(anchors.first == lo, anchors.first_score, 1.0 - anchors.first_score)
    labelled, inverse = np.unique(lo * n + hi, return_inverse=True)
    label = (np.bincount(inverse, anchors.weight * credit)
             / np.bincount(inverse, anchors.weight))
    judged = np.unique(np.minimum(comparisons.first, comparisons.second) * n
                       + np.maximum(comparisons.first, comparisons.second))
    unlabelled = np.setdiff1d(judged, labelled)
    theta = judge_fit.scores

    def pairs_and_predictions(keys):
        pairs = np.column_stack([keys // n, keys % n])
        return pairs, expit(theta[pairs[:, 0]] - theta[pairs[:, 1]])

    lab_pairs, lab_pred = pairs_and_predictions(labelled)
    unl_pairs, unl_pred = pairs_and_predictions(unlabelled)
    result = ppi_bradley_terry(lab_pairs, label, lab_pred, unl_pairs, unl_pred, n_items=n,
                               prior_precision=prior_precision)
    diagnostics["ppi"] = {"lambda": result.power, "n_labelled": result.n_labelled,
                          "n_unlabelled": result.n_unlabelled, "predictions": judge_fit.model}
    return BTFit(model="ppi", item_ids=comparisons.item_ids, scores=result.scores,
                 covariance=result.covariance, bias=(), judges=("humans",),
                 covariate_names=(), params=result.scores, param_covariance=result.covariance,
                 covariate_scale=np.zeros(0), prior_precision=float(prior_precision),
                 bias_prior_precision=np.zeros(0),
                 n_comparisons=float(result.n_labelled + result.n_unlabelled),
                 n_iter=result.n_iter,
                 converged=result.converged,
                 notes=(f"prediction-powered scores: {result.n_labelled} labelled pairs, "
                        f"{result.n_unlabelled} pairs predicted by the {judge_fit.model} fit, "
                        f"lambda = {result.power:.3f}",))


def _anchored_fit(comparisons, anchors, x, names, model, fit, diagnostics, *,
                  prior_precision, bias_prior_precision, position, level, rng):
    """The anchored correction (judge verdicts and human labels in one fit), with the
    trusted-anchor gate kept as a check and the held-out agreement by cross-validation
    written to ``diagnostics``; a warning when the labels leave the humans' own association
    with a covariate loose. Returns the anchored fit."""
    anchored = anchored_bt(comparisons, anchors, x, covariate_names=names, position=position,
                           prior_precision=prior_precision,
                           bias_prior_precision=bias_prior_precision, check_graph=False)
    naive = fit_model("naive", comparisons, prior_precision=prior_precision, check_graph=False)
    if (anchors.first_score != 0.5).any():
        gate = trusted_anchor_gate(naive, fit, anchors)
        diagnostics["gate"] = {"enabled": gate.enabled, "n_anchors": gate.n_anchors,
                               "naive_agreement": gate.naive_agreement,
                               "bias_aware_agreement": gate.bias_aware_agreement,
                               "model_used": anchored.model, "role": "check"}
    if model == "hierarchical":
        anchored = replace(anchored, notes=anchored.notes + (
            "with human labels the anchored fit uses the fixed bias prior, not the "
            "hierarchical one",))
    # Few labels leave the humans' own association with a covariate unknown; the
    # correction then still leans on the prior.
    z = float(stats.norm.ppf(0.975))
    loose = [(b.name, z * b.std_error * scale) for b in anchored.bias if b.judge == HUMANS
             for name, scale in zip(anchored.covariate_names, anchored.covariate_scale)
             if b.name == name and z * b.std_error * scale > WIDE_HALF_WIDTH]
    if loose:
        warnings.warn(
            f"with {len(anchors)} human label(s) the humans' association with "
            + ", ".join(f"{name} is known only to +/- {width:.2f} logits per s.d."
                        for name, width in loose)
            + ": the correction still rests on the prior's assumption that quality is "
            "uncorrelated with it; more labels (on pairs that differ in it) settle it",
            CorrectionAssumptionWarning, stacklevel=4)
    try:
        held_out = anchored_agreement(comparisons, anchors, x, covariate_names=names,
                                      position=position, prior_precision=prior_precision,
                                      bias_prior_precision=bias_prior_precision,
                                      folds=ANCHOR_FOLDS, rng=rng, naive=naive,
                                      bias_aware=fit if model == "bias-aware" else None)
    except FairjudgeInputError as error:
        diagnostics["anchored"] = {"n_labels": int((anchors.first_score != 0.5).sum()),
                                   "cross_validation": str(error)}
    else:
        diagnostics["anchored"] = _held_out_summary(held_out, level)
    return anchored


def _pair_members(labels: Comparisons) -> list[np.ndarray]:
    """The rows of each unordered pair of ``labels``."""
    key = (np.minimum(labels.first, labels.second) * labels.n_items
           + np.maximum(labels.first, labels.second))
    _, inverse = np.unique(key, return_inverse=True)
    order = np.argsort(inverse, kind="stable")
    return np.split(order, np.flatnonzero(np.diff(inverse[order])) + 1)


def _resample_pairs(labels: Comparisons, members: list, rng) -> Comparisons:
    """The labels of unordered pairs drawn with replacement (a pair's labels move
    together, ``members`` from :func:`_pair_members`), for a bootstrap that carries the
    labels' own sampling variance."""
    drawn = rng.integers(0, len(members), len(members))
    return labels.subset(np.concatenate([members[g] for g in drawn]))


def _held_out_summary(held_out, level: float) -> dict:
    """Held-out agreement of each fit and the anchored fit's paired difference from the
    naive one, each an :class:`~fairjudge.stats.Estimate` dict whose normal interval
    treats an unordered pair as the unit (both orders of a pair are not two samples)."""
    out = {"n_labels": held_out.n_labels, "n_pairs": int(np.unique(held_out.pair).size),
           "folds": held_out.folds}
    series = {name: held_out.per_label[name] for name in ("naive", "bias_aware", "anchored")}
    series["anchored_minus_naive"] = series["anchored"] - series["naive"]
    for name, values in series.items():
        out[name] = _pair_clustered_mean(values, held_out.pair, level).as_dict()
    return out


def _pair_clustered_mean(values: np.ndarray, pair: np.ndarray, level: float) -> Estimate:
    """The mean of ``values`` with a cluster-robust normal interval, clusters the pairs:
    var = sum_g (S_g - mean n_g)^2 / n^2 (S_g, n_g: a pair's sum and count)."""
    from fairjudge.stats import normal_interval

    keys, inverse = np.unique(pair, return_inverse=True)
    mean = float(values.mean())
    sums = np.bincount(inverse, values, keys.size)
    counts = np.bincount(inverse, minlength=keys.size)
    se = float(np.sqrt(np.sum((sums - mean * counts) ** 2)) / values.size)
    if keys.size > 1:
        se *= np.sqrt(keys.size / (keys.size - 1))  # the small-sample factor of CR1
    interval = normal_interval(mean, se, level)
    return Estimate(mean, interval.low, interval.high, int(keys.size), level,
                    "normal, clustered by pair")


def rank(verdicts, items=None, *, k: int | None = None, model: str = "bias-aware",
         covariates=None, anchors=None, ppi: bool = False, prior_precision: float = 1.0,
         bias_prior_precision: float = 0.1, position: bool = True, n_samples: int = 1500,
         level: float = 0.95, pool_judges: bool = False, bootstrap: int = 0,
         solver: str = "auto", rng=0) -> Ranking:
    """Fit a model to judge verdicts and return a leaderboard with honest uncertainty.

    Every item gets its score, a standard error relative to the average item, an Elo-scale
    rating with its interval (Laplace; with ``bootstrap`` also Arena's percentile interval
    over resampled verdicts) and a rank interval; with ``k`` also its probability of being
    in the top-k.

    Parameters
    ----------
    verdicts : path or pandas.DataFrame
        Verdict table (see :func:`fairjudge.data.load_verdicts`).
    items : path or pandas.DataFrame, optional
        Item table; its covariates are those ``covariates`` names, or by default its
        ``length``, ``markdown`` and ``verbose`` columns (see
        :data:`fairjudge.data.DEFAULT_COVARIATES`). Without it the bias-aware model has the
        position term only.
    k : int, optional
        Size of the top set (membership probabilities); a leaderboard needs none.
    model : str
        One of ``naive``, ``bias-aware``, ``hierarchical``, ``swap-majority``,
        ``residualized``.
    covariates : list of str, optional
        Covariates to model. A name the verdict table carries per verdict (``<name>_a`` and
        ``<name>_b`` for the first- and second-shown answer, or ``<name>_diff``) is a
        per-verdict covariate, as in Chatbot Arena's style control; any other name is a
        column of ``items``.
    anchors : path or pandas.DataFrame, optional
        Human pairwise labels (a verdict table: ``winner`` names the better item) on some
        of the same items. With a bias-aware ``model`` they are fitted jointly with the
        verdicts (:func:`fairjudge.models.anchored_bt`): they share quality but carry no
        bias terms, so each judge's covariate terms are its excess over the humans' own
        association, without assuming quality uncorrelated with the covariates. Every
        label counts as one human's (a ``judge`` column naming several annotators is
        pooled); item covariates only (per-verdict ones are refused).
        ``diagnostics["anchored"]`` holds the held-out agreement with the labels of the
        naive, bias-aware and anchored fits by 5-fold cross-validation over labelled
        pairs; ``diagnostics["gate"]`` the trusted-anchor gate's check
        [bias-aware-active-topk §6 "Gating"] (which no longer picks the scores).
    ppi : bool
        With ``anchors``: the humans' Bradley–Terry scores by prediction-powered inference
        instead (:func:`fairjudge.ppi.ppi_bradley_terry`, PPI++ with power tuning). The
        judge's fit of ``model`` (bias terms removed) predicts each pair's human label;
        the labels correct its bias, and the intervals are valid whatever that bias,
        provided the labelled pairs are a random subset of the compared pairs. The bias
        table is the judge's; ``diagnostics["ppi"]`` holds lambda and the pair counts.
    prior_precision, bias_prior_precision : float
        ``lambda`` and ``lambda_b = 1/tau^2`` (paper defaults 1 and 0.1).
    position : bool
        Model the position term.
    n_samples : int
        Posterior samples for the membership probabilities.
    pool_judges : bool
        Treat every verdict as from one judge (one set of position and bias terms). For a
        ``judge`` column holding annotators or users (Arena's ``judge`` is a user id): with
        more than :data:`MANY_JUDGES` values and no pooling, a
        :class:`~fairjudge.ManyJudgesWarning` says so.
    level : float
        Level of every interval.
    bootstrap : int
        Refits on verdicts resampled with replacement (Arena's bootstrap over battles; it
        uses 100 to 1000); 0 for Laplace intervals only.
    solver : {"auto", "dense", "sparse"}
        Linear algebra of the naive, bias-aware, hierarchical and reliability fits: ``auto``
        is dense up to :data:`~fairjudge.models.SPARSE_MIN_ITEMS` items and matrix-free
        above (README, "Many items"); ``diagnostics["solver"]`` says which ran.
    rng : seed or numpy.random.Generator
        Seeds the posterior sampling and the bootstrap.

    Returns
    -------
    Ranking

    Raises
    ------
    FairjudgeInputError
        For unreadable or invalid tables (naming file, line and field).
    """
    spec = model_spec(model)  # an unknown name raises, listing the registered models
    if ppi and anchors is None:
        raise FairjudgeInputError("ppi needs human labels (--anchors) to power the estimate")
    if ppi and bootstrap:
        raise FairjudgeInputError("ppi intervals are the sandwich of prediction-powered "
                                  "inference; drop --bootstrap")
    # A fit reads ids, outcomes and per-verdict covariates; never a file's explanations.
    verdicts = load_verdicts(verdicts, columns=[
        f"{name}{suffix}" for name in covariates or () for suffix in VERDICT_COVARIATE_SUFFIXES])
    verdicts = _pool_or_warn(verdicts, pool_judges)
    item_names, verdict_names = _split_covariates(covariates, verdicts)
    items = None if items is None else load_items(items, item_names)
    comparisons = encode_verdicts(verdicts, items, verdict_covariates=verdict_names)
    if k is not None and not (isinstance(k, (int, np.integer)) and not isinstance(k, bool)
                              and 1 <= k <= comparisons.n_items):
        raise FairjudgeInputError(
            f"`k` must be an integer between 1 and n_items={comparisons.n_items}; "
            f"got {k!r}")
    x, names = _covariate_matrix(items, item_names)
    if spec.covariates == "required" and x is None:
        raise FairjudgeInputError(f"the {model} model needs an item table with covariates")
    components = comparison_components(comparisons)
    diagnostics = {
        "n_verdicts": int(len(verdicts)),
        "n_items": comparisons.n_items,
        "n_judges": comparisons.n_judges,
        "judges": list(comparisons.judges),
        # Counted on the encoded outcomes (a row without a winner is not encoded).
        "ties": int(np.count_nonzero(comparisons.first_score == Outcome.TIE.first_score)),
        # Among decisive verdicts: a tie favours neither slot [position-bias-swap].
        "first_shown_win_rate": _decisive_first_rate(comparisons.first_score),
        "covariates": (names or []) + list(verdict_names),
        "per_verdict_covariates": list(verdict_names),
        "covariates_named": covariates is not None,
        "numeric_columns_not_fitted": [] if items is None
        else list(items.attrs.get("unused_numeric", [])),
        "components": len(components),
    }
    if len(components) > 1:
        diagnostics["components_detail"] = describe_components(comparisons.item_ids,
                                                               components)
    # The graph was checked above; its warning is raised once, below.
    fit = fit_model(model, comparisons, x, covariate_names=names,
                    prior_precision=prior_precision, bias_prior_precision=bias_prior_precision,
                    position=position, check_graph=False, solver=solver)
    warn_disconnected(components, comparisons.item_ids)
    bias_fit = fit
    anchor_comparisons = None
    if anchors is not None and not ppi:
        if model not in ("bias-aware", "hierarchical"):
            raise FairjudgeInputError(f"anchors anchor a bias-aware model's correction; got "
                                      f"model {model!r}")
        if verdict_names:
            raise FairjudgeInputError(
                f"human labels anchor item covariates only; per-verdict covariates "
                f"({', '.join(verdict_names)}) vary within an item, so a human's preference "
                "for them is no part of an item's quality, and the likelihood identifies "
                "them without labels: give the covariate per item, or rank without "
                "--anchors")
    if anchors is not None:
        anchor_table = load_verdicts(anchors, columns=[
            f"{name}{suffix}" for name in verdict_names
            for suffix in VERDICT_COVARIATE_SUFFIXES])
        anchor_comparisons = encode_verdicts(anchor_table, _items_for(comparisons),
                                             verdict_covariates=verdict_names)
    if ppi:
        fit = _ppi_fit(comparisons, anchor_comparisons, bias_fit, diagnostics,
                       prior_precision=prior_precision)
    elif anchors is not None:
        fit = bias_fit = _anchored_fit(comparisons, anchor_comparisons, x, names, model,
                                       fit, diagnostics, prior_precision=prior_precision,
                                       bias_prior_precision=bias_prior_precision,
                                       position=position, level=level, rng=rng)
    if anchors is None and names and model in ("bias-aware", "hierarchical"):
        _check_assumption(comparisons, x, names, fit, diagnostics,
                          prior_precision=prior_precision,
                          bias_prior_precision=bias_prior_precision, position=position)
    diagnostics.update({"converged": fit.converged, "n_iter": fit.n_iter,
                        "notes": list(fit.notes)})
    inflation = float(np.median(bias_fit.variance_inflation()))
    diagnostics["score_variance_inflation"] = inflation
    if inflation > WEAK_IDENTIFICATION and anchors is None:
        warnings.warn(_weak_identification_message(diagnostics["covariates"], inflation,
                                                   comparisons.n_items),
                      WeakIdentificationWarning, stacklevel=2)
    generator = as_generator(rng)
    boot = None
    if bootstrap:
        chosen = fit.model

        labels = None if anchor_comparisons is None else np.random.default_rng(
            generator.integers(2**62))
        members = None if anchor_comparisons is None else _pair_members(anchor_comparisons)

        def refit(resampled):
            if anchor_comparisons is not None:  # the labels are resampled too, by pair
                return anchored_bt(resampled,
                                   _resample_pairs(anchor_comparisons, members, labels),
                                   x, covariate_names=names, position=position,
                                   prior_precision=prior_precision,
                                   bias_prior_precision=bias_prior_precision,
                                   check_graph=False)
            return fit_model(chosen, resampled, x, covariate_names=names,
                             prior_precision=prior_precision,
                             bias_prior_precision=bias_prior_precision, position=position,
                             check_graph=False, solver=solver)
        boot = bootstrap_scores(comparisons, refit, n_boot=bootstrap, rng=generator)
        diagnostics["bootstrap"] = {"rounds": int(bootstrap),
                                    "not_converged": boot.not_converged}
    return ranking_from_fit(fit, k=k, level=level, n_samples=n_samples, rng=generator,
                            diagnostics=diagnostics, bias_fit=bias_fit,
                            bootstrap=boot)


def solver_diagnostics(fit: BTFit) -> dict:
    """Which solver fitted (chosen by size) and, for the sparse one, the largest relative
    standard error of the estimated marginal variances
    (:meth:`SparsePosterior.max_relative_error`)."""
    out = {"solver": fit.solver}
    if fit.solver == "sparse":
        fit.marginal_variances()  # (warns here when the estimate is imprecise)
        out["marginal_variance_max_rel_error"] = fit.posterior.max_relative_error()
        out["marginal_variance_probes"] = int(fit.posterior.probes_used)
        out["marginal_variance_product_probes"] = int(fit.posterior.product_probes_used)
    return out


def ranking_from_fit(fit: BTFit, *, k: int | None, level: float, n_samples: int, rng,
                     diagnostics: dict, bias_fit: BTFit | None = None,
                     bootstrap=None) -> Ranking:
    """A :class:`Ranking` of a fit: membership, the leaderboard table, the bias table (of
    ``bias_fit``, default ``fit``) and, in ``diagnostics``, which solver fitted."""
    ids = pd.Index(fit.item_ids, name="id")
    diagnostics.update(solver_diagnostics(fit))
    if fit.solver == "sparse" and k is not None:
        joint = fit.joint_items(k)
        diagnostics["items_in_doubt"] = int(fit.in_doubt(k).size)
        diagnostics["joint_draw_items"] = 0 if joint is None else int(joint.size)
    board = leaderboard(fit, k, level=level, n_samples=n_samples, bootstrap=bootstrap,
                        rng=rng)
    membership = board["membership"].reindex(ids).to_numpy()
    return Ranking(
        topk=[] if k is None else [ids[i] for i in fit.topk(k)],
        scores=pd.Series(fit.scores, index=ids, name="score"),
        membership=pd.Series(membership, index=ids, name="membership"),
        bias=bias_frame(bias_fit or fit, level),
        fit=fit,
        k=None if k is None else int(k),
        level=level,
        diagnostics=diagnostics,
        leaderboard=board,
    )


def leaderboard(fit, k, *, level: float, n_samples: int, bootstrap=None,
                rng=0) -> pd.DataFrame:
    """The per-item table of :class:`Ranking`, sorted best first (see ``to_frame``)."""
    z = float(stats.norm.ppf(0.5 + level / 2.0))
    se_centred = np.sqrt(fit.centred_variances())
    elo = elo_ratings(fit.scores)
    # One set of posterior draws gives both the rank intervals and membership.
    membership, rank_low, rank_high = posterior_rank_summaries(
        fit.posterior_sample_blocks(n_samples, rng, k=k), k, level=level)
    if membership is None:
        membership = np.full(fit.n_items, np.nan)
    frame = pd.DataFrame({
        "score": fit.scores,
        "std_error": np.sqrt(fit.marginal_variances()),
        "std_error_vs_mean": se_centred,
        "elo": elo,
        "elo_ci_low": elo - z * ELO_PER_LOGIT * se_centred,
        "elo_ci_high": elo + z * ELO_PER_LOGIT * se_centred,
        "rank_low": rank_low, "rank_high": rank_high,
        "membership": membership}, index=pd.Index(fit.item_ids, name="id"))
    if bootstrap is not None:
        frame["elo_boot_low"], frame["elo_boot_high"] = bootstrap.interval(level)
    frame["in_topk"] = False if k is None else frame.index.isin(
        [fit.item_ids[i] for i in fit.topk(k)])
    frame = frame.sort_values("score", ascending=False, kind="stable")
    frame.insert(0, "rank", np.arange(1, len(frame) + 1))
    return frame


@dataclass(frozen=True)
class Selection:
    """Result of :func:`select`: the active loop's queries, history and final posterior.

    Attributes
    ----------
    topk : list of str
    scores, membership : pandas.Series
    bias : pandas.DataFrame
    queried : pandas.DataFrame
        One row per judge call: step, item_a (shown first), item_b, winner, judge, and the
        acquisition score of the pair; with judge costs, ``cost`` (the judge's cost per
        call); a live run adds ``pair_id``, ``order``, ``cost`` (billed, from the price
        table), ``judge_cost`` (planned), ``cached`` and the judge's ``raw`` output.
    history : pandas.DataFrame
        Per step: fit_size (verdicts behind the choice) and recall (if ground truth).
    recall_at : dict
        Budget -> recall of a fresh fit (only with ground truth).
    result : ActiveResult or LiveResult
    level : float
    report : RunReport or None
        Calls, cache hits and money of a live run.
    stopped : str
        Why the loop stopped (``budget``, ``exhausted``, ``spend cap``, ``failures``).
    """

    topk: list
    scores: pd.Series
    membership: pd.Series
    bias: pd.DataFrame
    queried: pd.DataFrame
    history: pd.DataFrame
    recall_at: dict
    result: object
    level: float = 0.95
    report: object = None
    stopped: str = "budget"

    @property
    def fit(self) -> BTFit:
        return self.result.fit if isinstance(self.result, ActiveResult) else \
            self.result.posterior.fit

    def to_dict(self) -> dict:
        fields = [c for c in ("item_a", "item_b", "winner", "judge", "order", "cost",
                              "judge_cost", "cached")
                  if c in self.queried.columns]
        queried = self.queried[fields].to_dict("records")
        out = {
            "model": self.fit.model,
            "rule": self.queried.attrs.get("rule"),
            "k": len(self.topk),
            "budget_spent": int(len(self.queried)),
            "stopped": self.stopped,
            **_ranking_payload(self.topk, self.scores, self.membership, self.bias, self.level),
            "queried": queried,
            "recall_at": {str(b): r for b, r in self.recall_at.items()},
            "notes": list(getattr(self.result, "notes", ())),
        }
        if self.report is not None:
            out["run"] = self.report.as_dict()
        return out


class _IdOracle:
    """Adapts a user callable ``(first_id, second_id) -> Outcome | "a" | "b" | "tie"``."""

    def __init__(self, func, ids):
        self.func, self.ids = func, ids

    def __call__(self, first: int, second: int) -> Outcome:
        answer = self.func(self.ids[first], self.ids[second])
        try:
            return Outcome(answer.value if isinstance(answer, Outcome) else str(answer).lower())
        except ValueError:
            raise FairjudgeInputError(
                f"the oracle returned {answer!r} for ({self.ids[first]!r}, "
                f"{self.ids[second]!r}); expected 'a', 'b', 'tie' or a fairjudge Outcome"
            ) from None


def select(items, oracle=None, *, k: int, budget: int | None = None, rule: str = "topk",
           model: str | None = None, covariates=None, refit_every: int = 8,
           judge_costs=None, max_cost: float | None = None,
           allow_repeats: bool = False, n_samples: int = 1500, prior_precision: float = 1.0,
           bias_prior_precision: float = 0.1, checkpoints=(), level: float = 0.95, rng=0,
           backend=None, question: str | None = None, cache=None, options=None,
           settings=None, template: str = "baseline", templates=None,
           batch_size: int | None = None, progress: bool = False) -> Selection:
    """Run the budgeted active top-k loop against an oracle or a live judge
    [bias-aware-active-topk Alg. 1].

    Parameters
    ----------
    items : path or pandas.DataFrame
        Item table (ids, covariates, optional ``quality`` ground truth for recall; ``text``
        for a live judge).
    oracle : path, pandas.DataFrame, SimulatedJudge, MatrixOracle or callable, optional
        A recorded verdict table with (ideally) every ordered pair, replayed (a table
        whose ``judge`` column names several judges is one oracle per judge); a simulated
        judge; or a function ``(first_id, second_id) -> "a" | "b" | "tie"``; or a mapping
        of judge name to any of these (a panel). Not with ``backend``.
    k : int
        Top-set size.
    budget : int, optional
        Judge calls to spend (required without ``max_cost``).
    judge_costs : mapping or sequence of float, optional
        Cost of one call of each judge (by name, or in the order of the oracles or
        backends). With several judges the loop chooses the judge of each comparison by
        its acquisition score per unit cost (multi-fidelity; :class:`ActiveTopK`); use
        ``model="reliability"`` so that a noisy judge counts for less. Default: 1 each.
    max_cost : float, optional
        Money to spend, in ``judge_costs`` units: the loop stops when no judge costs what
        is left. (A live run's hard cap on what the provider bills is
        ``options.max_cost``.)
    rule : str
        ``topk``, ``global``, ``entropy``, ``topk-no-variance``,
        ``topk-no-informativeness``, ``random`` or ``round-robin``.
    model : str, optional
        A registered model (:func:`fairjudge.models.model_names`). Default:
        ``"bias-aware"`` with one judge, ``"reliability"`` (its own bias terms and a
        reliability per judge) with several.
    covariates : list of str, optional
        Item covariates. With item texts, the text features ``length``, ``markdown``, ...
        are computed when the table has no such column.
    rng : seed or numpy.random.Generator
        Seeds presentation orders, tie-breaking and membership sampling.
    backend : JudgeBackend or str, or a sequence of them, optional
        A live judge (``"openai:gpt-4o-mini"`` or a backend object), or several judges of
        different cost (``judge_costs``): each comparison is a cached, rate-limited,
        spend-capped call; a killed run rerun with the same arguments replays the cached
        calls and reaches the same result.
    question : str, optional
        The prompt the items answer (default: the items' ``question`` column, which must
        hold one value).
    cache : CompletionCache, optional
    options : RunOptions, optional
        Concurrency, retries, ``max_cost`` and prices of a live run.
    settings : GenerationSettings, optional
    template : str
        Prompt template of a live run (``templates`` overrides the built-ins).
    batch_size : int, optional
        Comparisons proposed per round of a live run (default: the concurrency).

    Returns
    -------
    Selection
    """
    items = _load_items_with_features(items, covariates)
    ids = list(items.index)
    x, names = _covariate_matrix(items, covariates)
    quality = items["quality"].to_numpy(dtype=float) if "quality" in items.columns else None
    if budget is None and max_cost is None:
        raise FairjudgeInputError("give a budget in calls (budget) or in money (max_cost)")
    if backend is not None:
        if oracle is not None:
            raise FairjudgeInputError("give either an oracle or a live judge backend, not both")
        several = isinstance(backend, (list, tuple)) and len(backend) > 1
        model = model or ("reliability" if several else "bias-aware")
        return _select_live(items, ids, x, names, backend, k=k, budget=budget, rule=rule,
                            judge_costs=judge_costs, max_cost=max_cost,
                            model=model, refit_every=refit_every, allow_repeats=allow_repeats,
                            n_samples=n_samples, prior_precision=prior_precision,
                            bias_prior_precision=bias_prior_precision, level=level, rng=rng,
                            question=question, cache=cache, options=options,
                            settings=settings, template=template, templates=templates,
                            batch_size=batch_size, progress=progress)
    if oracle is None:
        raise FairjudgeInputError("select needs an oracle (recorded verdicts, a simulated "
                                  "judge or a function) or a live judge backend")
    oracles = _index_oracles(oracle, ids)
    specs = judge_specs(list(oracles), judge_costs)
    model = model or ("reliability" if len(oracles) > 1 else "bias-aware")
    result = run_active_topk(
        oracles, len(ids), k=k, budget=budget, judges=specs, max_cost=max_cost,
        covariates=x, covariate_names=names,
        rule=rule, model=model, refit_every=refit_every, allow_repeats=allow_repeats,
        n_samples=n_samples, prior_precision=prior_precision,
        bias_prior_precision=bias_prior_precision, true_quality=quality,
        checkpoints=checkpoints, item_ids=ids, rng=rng)
    # A replayed oracle costs nothing unless costs were given to plan with.
    queried = result.history.drop(columns=["fit_size"] + ([] if judge_costs is not None
                                                          or max_cost is not None
                                                          else ["cost"]))
    queried.attrs["rule"] = rule
    history = pd.DataFrame({"step": queried["step"], "fit_size": result.fit_size,
                            "recall": result.recall})
    return _selection(ids, result.fit, result.membership, result.topk, queried, history,
                      result, level, recall_at=dict(result.recall_at),
                      stopped=result.stopped)


def _index_oracles(oracle, ids) -> dict:
    """Judge name -> oracle over item indices.

    One oracle is called ``oracle``. A verdict table whose ``judge`` column names several
    judges gives one oracle per judge; a list of tables gives one per judge of each, named
    by the ``judge`` column (or the file name, or ``oracle<i>``)."""
    if isinstance(oracle, dict):
        if not oracle:
            raise FairjudgeInputError("the oracle panel is empty")
        return {str(name): _index_oracle(one, ids) for name, one in oracle.items()}
    if isinstance(oracle, (MatrixOracle, SimulatedJudge)) or (
            callable(oracle) and not isinstance(oracle, pd.DataFrame)):
        return {"oracle": _index_oracle(oracle, ids)}
    sources = list(oracle) if isinstance(oracle, (list, tuple)) else [oracle]
    panel: dict = {}
    for position, source in enumerate(sources):
        verdicts = load_verdicts(source)
        judges = (verdicts["judge"].astype(str) if "judge" in verdicts.columns else
                  pd.Series("oracle" if len(sources) == 1 else
                            Path(source).stem if isinstance(source, (str, Path)) else
                            f"oracle{position}", index=verdicts.index))
        if len(sources) == 1 and judges.nunique() == 1:
            judges = pd.Series("oracle", index=verdicts.index)
        for name, group in verdicts.groupby(judges, sort=False):
            if name in panel:
                raise FairjudgeInputError(f"{verdicts.attrs.get('source', source)}: judge "
                                          f"{name!r} is already given by another oracle")
            panel[str(name)] = MatrixOracle(verdicts_to_matrix(group, ids))
    return panel


def _index_oracle(oracle, ids):
    if isinstance(oracle, (MatrixOracle, SimulatedJudge)):
        return oracle
    if callable(oracle) and not isinstance(oracle, pd.DataFrame):
        return _IdOracle(oracle, ids)
    return MatrixOracle(verdicts_to_matrix(load_verdicts(oracle), ids))


def judge_specs(names: list, costs) -> list:
    """:class:`~fairjudge.active.JudgeSpec` per judge name, with costs given by name (a
    mapping) or by position (a sequence); 1 per call when none are given."""
    from fairjudge.active._ranker import JudgeSpec

    if costs is None:
        return [JudgeSpec(name) for name in names]
    if isinstance(costs, dict):
        unknown = sorted(set(map(str, costs)) - set(names))
        if unknown:
            raise FairjudgeInputError(f"a cost is given for judge {unknown[0]!r}; the judges "
                                      f"are {', '.join(names)}")
        missing = [n for n in names if n not in costs]
        if missing:
            raise FairjudgeInputError(f"no cost is given for judge {missing[0]!r}; give one "
                                      "for every judge")
        return [JudgeSpec(n, float(costs[n])) for n in names]
    costs = list(costs)
    if len(costs) != len(names):
        raise FairjudgeInputError(f"{len(costs)} judge costs for {len(names)} judges "
                                  f"({', '.join(names)}); give one per judge, in order")
    return [JudgeSpec(n, float(c)) for n, c in zip(names, costs)]


def _selection(ids, fit, membership, topk, queried, history, result, level, *, recall_at,
               stopped, report=None) -> Selection:
    # The posterior of items the spent comparisons never linked rests on the prior alone,
    # as in `rank`: say so the same way.
    position = {item: i for i, item in enumerate(ids)}
    judged = queried[queried["winner"].notna()] if "winner" in queried.columns else queried
    warn_disconnected(pair_components(len(ids), judged["item_a"].map(position),
                                      judged["item_b"].map(position)), ids, stacklevel=3)
    index = pd.Index(ids, name="id")
    return Selection(topk=[ids[i] for i in topk],
                     scores=pd.Series(fit.scores, index=index, name="score"),
                     membership=pd.Series(membership, index=index, name="membership"),
                     bias=bias_frame(fit, level), queried=queried, history=history,
                     recall_at=recall_at, result=result, level=level, report=report,
                     stopped=stopped)


def _load_items_with_features(source, covariates) -> pd.DataFrame:
    """Load an item table; requested covariates that are text features (``length``,
    ``markdown``, ...) and not columns are computed from the ``text`` column."""
    from fairjudge.data._features import FEATURE_COLUMNS, text_features

    frame = _as_frame(source, "items")
    if covariates is None:
        return validate_items(frame)
    covariates = list(covariates)
    computed = [c for c in covariates if c not in frame.columns and c in FEATURE_COLUMNS]
    items = validate_items(frame, [c for c in covariates if c not in computed])
    if computed:
        if "text" not in items.columns:
            raise FairjudgeInputError(f"{items.attrs.get('source', 'items')}: covariate "
                                      f"`{computed[0]}` is not a column and there is no "
                                      "`text` column to compute it from")
        features = text_features(items["text"])
        attrs = dict(items.attrs)
        items = items.assign(**{c: features[c].to_numpy(dtype=float) for c in computed})
        items.attrs = attrs
    items.attrs["covariates"] = covariates
    return items


def _select_live(items, ids, x, names, backend, *, k, budget, rule, model, refit_every,
                 judge_costs, max_cost, allow_repeats, n_samples, prior_precision,
                 bias_prior_precision, level, rng, question, cache, options, settings,
                 template, templates, batch_size, progress) -> Selection:
    from fairjudge.active._live import run_live_topk
    from fairjudge.active._ranker import ActiveTopK
    from fairjudge.judges import GenerationSettings, RunOptions, backend_from_spec, load_templates

    source = items.attrs.get("source", "items")
    if "text" not in items.columns:
        raise FairjudgeInputError(f"{source}: a live judge needs the answers in a `text` "
                                  "column")
    if question is None:
        if "question" not in items.columns:
            raise FairjudgeInputError(f"{source}: give the question the items answer "
                                      "(--question) or a `question` column")
        distinct = items["question"].dropna().astype(str).unique()
        if len(distinct) != 1:
            raise FairjudgeInputError(f"{source}: the `question` column holds "
                                      f"{len(distinct)} different questions; a top-k pool "
                                      "answers one question (pass --question)")
        question = distinct[0]
    backends = [backend_from_spec(b) if isinstance(b, str) else b for b in
                (backend if isinstance(backend, (list, tuple)) else [backend])]
    panel = {b.label: b for b in backends}
    if len(panel) != len(backends):
        raise FairjudgeInputError("two judge backends have the same label "
                                  f"({', '.join(b.label for b in backends)}); each judge needs "
                                  "its own")
    options = options if options is not None else RunOptions()
    prompts = load_templates(templates) if not isinstance(templates, dict) else templates
    if template not in prompts:
        raise FairjudgeInputError(f"unknown template {template!r}; have {', '.join(prompts)}")
    ranker = ActiveTopK(ids, k=k, covariates=x, covariate_names=names,
                        judges=judge_specs(list(panel), judge_costs),
                        rule=rule, model=model, refit_every=refit_every,
                        allow_repeats=allow_repeats, n_samples=n_samples,
                        prior_precision=prior_precision,
                        bias_prior_precision=bias_prior_precision, rng=rng)
    result = run_live_topk(ranker, items["text"].astype(str).tolist(),
                           panel if len(panel) > 1 else backends[0],
                           question=question, budget=budget, max_cost=max_cost, cache=cache,
                           options=options,
                           settings=settings if settings is not None else GenerationSettings(),
                           template=prompts[template], batch_size=batch_size,
                           progress=progress)
    posterior = result.posterior
    if posterior.fit is None:
        error = SpendCapReached if result.stopped == "spend cap" else RunIncomplete
        reasons = "; ".join(result.report.errors[:3])
        raise error(f"no usable verdict was collected (stopped: {result.stopped}; "
                    f"{result.report.summary()})" + (f"; first errors: {reasons}"
                                                    if reasons else ""))
    queried = result.calls.copy()
    queried.insert(0, "step", np.arange(1, len(queried) + 1))
    queried.attrs["rule"] = rule
    history = ranker.history()[["step", "fit_size"]].assign(recall=np.nan)
    return _selection(ids, posterior.fit, posterior.membership, posterior.topk, queried,
                      history, result, level, recall_at={}, stopped=result.stopped,
                      report=result.report)
