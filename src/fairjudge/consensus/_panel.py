"""Many judges, one ranking of contestants [uda-consensus-elo; the multi-judge issue §2].

The verdicts compare answers; a contestant is the model that wrote an answer (the item
table's ``source``). :func:`contestant_verdicts` lifts answer-level verdicts to contestant
level and adds per-verdict covariates: ``self`` (the answer's family is the judge's, by
:func:`fairjudge.audit.model_family`; a judge or source of no known family is its own
family) and ``own`` (the answer's source is the judge's own model). :func:`consensus`
then scores the contestants by one of:

``joint``
    One Bradley–Terry model over every judge's verdicts: shared contestant quality theta,
    and per judge a position term kappa_j and a self-preference term s_j on ``self``
    (logits when one answer is the judge's family's and the other is not), with the
    bias-aware model's Laplace posterior [bias-aware-active-topk §3]. Self-preference is
    thus estimated jointly with quality instead of read off raw win rates, and removed from
    the scores. A second fit on ``own`` gives own-answers-only self-preference.
``pooled``
    Bradley–Terry on every verdict as if one judge gave it (no judge terms).
``majority``
    Per question and pair of contestants, the majority of the judges' verdicts (both
    orders counted), then Bradley–Terry.
``elo``
    UDA's baseline [uda-consensus-elo § Method]: per judge, sequential Elo over its verdicts
    in a seeded order (K = ``elo_k``, initial rating 1000; the paper states neither), and
    the mean over judges.
``uda``
    UDA itself (:mod:`fairjudge.consensus._uda`): the Elo recursion with a K-factor and a
    soft label per comparison from an MLP on embedding features of the answers and of the
    judge's own answer, trained to pull every judge toward the baseline consensus; the
    consensus is the mean over judges. Needs torch (``fairjudge[uda]``).

Every method also reports each judge's own scores (a position-aware Bradley–Terry fit on
that judge alone) and the standard deviation of a contestant's score across judges, the
dispersion UDA sets out to reduce. Scores are on the Elo scale,
``1000 + 400 / ln 10 * (theta - theta_ref)``: ``theta_ref`` is the mean over the
contestants (sum-to-zero) or, with ``anchor``, one reference contestant held at 1000.
With an anchor, adding a contestant to the panel moves the others only by what the new
verdicts teach about them; with the mean, every score also shifts by the newcomer's
distance from the old mean over the new count. With ``frozen`` (a published leaderboard)
no published score moves at all: the newcomers are placed on its scale
(:mod:`fairjudge.consensus._placement`).
"""

from __future__ import annotations

import warnings
from dataclasses import dataclass, field

import numpy as np
import pandas as pd

from fairjudge._util._rng import as_generator
from fairjudge._util._warnings import FairjudgeInputError
from fairjudge.stats import Estimate

METHODS = ("joint", "pooled", "majority", "elo", "uda")
ELO_SCALE = 400.0 / np.log(10.0)


def _family(name, families) -> str:
    """A model's family; a name of no known family is its own family."""
    from fairjudge.audit import model_family

    return model_family(name, families) or str(name).lower().split(":", 1)[-1]


def _model_name(name) -> str:
    return str(name).lower().split(":", 1)[-1]


def contestant_verdicts(verdicts: pd.DataFrame, items: pd.DataFrame, *,
                        families: dict | None = None) -> pd.DataFrame:
    """Answer-level verdicts lifted to contestants, with self-preference covariates.

    Parameters
    ----------
    verdicts : pandas.DataFrame
        A validated verdict table with a ``judge`` column.
    items : pandas.DataFrame
        Indexed by answer id with ``source`` (the contestant that wrote it).
    families : dict, optional
        Family -> name fragments (default :data:`fairjudge.audit.DEFAULT_FAMILIES`).

    Returns
    -------
    pandas.DataFrame
        The verdicts with ``item_a``/``item_b`` the contestants, the answers kept as
        ``answer_a``/``answer_b``, and ``self_a``/``self_b`` (1 when the answer's family is
        the judge's) and ``own_a``/``own_b`` (1 when the judge wrote it).

    Raises
    ------
    FairjudgeInputError
        Without a ``judge`` or ``source`` column, for an answer without a source, or a
        verdict between two answers of one contestant.
    """
    if "source" not in items.columns:
        raise FairjudgeInputError("the item table needs a `source` column: the contestant "
                                  "(model) that wrote each answer")
    if "judge" not in verdicts.columns:
        raise FairjudgeInputError("the verdicts need a `judge` column: which judge gave each")
    source = items["source"]
    for column in ("item_a", "item_b"):
        missing = ~verdicts[column].isin(source.dropna().index)
        if missing.any():
            raise FairjudgeInputError(f"answer {verdicts[column][missing].iloc[0]!r} has no "
                                      "`source` in the item table")
    first = source.reindex(verdicts["item_a"]).astype(str).to_numpy()
    second = source.reindex(verdicts["item_b"]).astype(str).to_numpy()
    same = first == second
    if same.any():
        raise FairjudgeInputError(f"verdict {int(np.flatnonzero(same)[0])} compares two "
                                  f"answers of {first[same][0]!r}; a contestant cannot play "
                                  "itself")
    judges = verdicts["judge"].astype(str).to_numpy()
    judge_family = {j: _family(j, families) for j in set(judges)}
    source_family = {s: _family(s, families) for s in set(first) | set(second)}
    out = verdicts.copy()
    out["answer_a"], out["answer_b"] = verdicts["item_a"].to_numpy(), verdicts["item_b"].to_numpy()
    out["item_a"], out["item_b"] = first, second
    for side, names in (("a", first), ("b", second)):
        out[f"self_{side}"] = [float(source_family[s] == judge_family[j])
                               for s, j in zip(names, judges)]
        out[f"own_{side}"] = [float(_model_name(s) == _model_name(j))
                              for s, j in zip(names, judges)]
    return out


@dataclass(frozen=True)
class Consensus:
    """Contestant scores from a panel of judges.

    Attributes
    ----------
    method : str
    scores : pandas.DataFrame
        Per contestant (best first): ``estimate``, ``ci_low``, ``ci_high`` on the Elo
        scale (no interval for ``elo``).
    per_judge : pandas.DataFrame
        Contestants × judges: each judge's own Elo-scale scores (NaN for a contestant a
        judge never saw).
    inter_judge_sd : pandas.Series
        Per contestant, the standard deviation of its score across judges.
    self_preference : pandas.DataFrame
        Per judge (``joint`` only): the family-level term ``self`` and the own-answers-only
        term ``own``, each ``estimate``, ``ci_low``, ``ci_high`` in logits; NaN where a
        judge met no such pair.
    human_correlation : dict or None
        Pearson and Spearman correlation of the consensus scores, and the mean over
        judges of each judge's, with the human scores.
    notes : tuple of str
    reliability : pandas.DataFrame or None
        Per judge (``joint`` with ``reliability``): its temperature tau (``estimate``,
        ``ci_low``, ``ci_high``; the geometric mean over judges is 1).
    uda : UdaFit or None
        With ``uda``: the trained adapter, the baseline Elo ratings it was aligned with and
        the training history.
    covariance : pandas.DataFrame or None
        Contestants × contestants, the covariance of ``scores`` (Elo squared) for the
        methods with intervals: what placing a newcomer on this leaderboard needs.
    level : float
        The intervals' level.
    frozen : tuple of str
        With a published leaderboard (``frozen``): its contestants, whose scores were held
        as published while the others were placed.
    """

    method: str
    scores: pd.DataFrame
    per_judge: pd.DataFrame
    inter_judge_sd: pd.Series
    self_preference: pd.DataFrame
    human_correlation: dict | None = None
    notes: tuple = ()
    ranking: object = field(default=None, repr=False)
    reliability: pd.DataFrame | None = None
    uda: object = field(default=None, repr=False)
    covariance: pd.DataFrame | None = field(default=None, repr=False)
    level: float = 0.95
    frozen: tuple = ()

    def _self_deviation(self) -> dict:
        """UDA's self-score deviation per judge that is also a contestant, baseline Elo and
        UDA: (R_jj - mean of the other judges' R_j'j) / that mean."""
        from fairjudge.consensus._uda import uda_metrics

        own = {j: c for j in self.uda.ratings.columns for c in self.uda.ratings.index
               if _model_name(c) == _model_name(j)}
        return {name: {j: float(v) for j, v in uda_metrics(
            ratings, self.uda.baseline, own=own)["self_deviation"].items()}
            for name, ratings in (("baseline", self.uda.baseline), ("uda", self.uda.ratings))}

    def to_dict(self) -> dict:
        """The JSON of ``fairjudge consensus --json``."""
        def finite(v):
            return None if v is None or not np.isfinite(v) else float(v)

        return {"method": self.method, "level": self.level,
                "scores": {c: {k: finite(r[k]) for k in ("estimate", "ci_low", "ci_high")}
                           for c, r in self.scores.iterrows()},
                **({"covariance": {c: {d: finite(v) for d, v in row.items()}
                                   for c, row in self.covariance.iterrows()}}
                   if self.covariance is not None else {}),
                **({"frozen": list(self.frozen)} if self.frozen else {}),
                "per_judge": {j: {c: finite(v) for c, v in column.items()}
                              for j, column in self.per_judge.items()},
                "inter_judge_sd": {c: finite(v) for c, v in self.inter_judge_sd.items()},
                "self_preference": {j: {k: finite(r[k]) for k in r.index}
                                    for j, r in self.self_preference.iterrows()},
                **({"human_correlation": self.human_correlation}
                   if self.human_correlation is not None else {}),
                **({"reliability": {j: {k: finite(r[k]) for k in r.index}
                                    for j, r in self.reliability.iterrows()}}
                   if self.reliability is not None else {}),
                **({"uda": {"baseline_per_judge": {
                    j: {c: finite(v) for c, v in column.items()}
                    for j, column in self.uda.baseline.items()},
                    "baseline_inter_judge_sd": {c: finite(v) for c, v in _spread(
                        self.uda.baseline).items()},
                    "self_deviation": self._self_deviation(),
                    "best_epoch": self.uda.best_epoch, "n_features": self.uda.n_features}}
                   if self.uda is not None else {}),
                "notes": list(self.notes)}


def consensus(verdicts: pd.DataFrame, items: pd.DataFrame, *, method: str = "joint",
              human_scores: pd.Series | None = None, families: dict | None = None,
              elo_k: float = 16.0, anchor: str | None = None, reliability: bool = False,
              shrinkage: bool = False, level: float = 0.95, rng=0, embedder="minilm",
              uda_settings=None, frozen=None) -> Consensus:
    """Score the contestants of a judge panel; see the module docstring for the methods.

    Parameters
    ----------
    verdicts : pandas.DataFrame
        Answer-level verdicts of several judges (``judge`` column).
    items : pandas.DataFrame
        Answers with their ``source`` (contestant).
    method : {"joint", "pooled", "majority", "elo"}
    human_scores : pandas.Series, optional
        Contestant -> a human score (any scale): adds ``human_correlation``.
    families : dict, optional
        Family -> name fragments.
    elo_k : float
        K of the sequential Elo baseline.
    anchor : str, optional
        A contestant held at 1000 (default: the mean contestant is).
    reliability : bool
        With ``joint``: give each judge a reliability, a temperature on the quality
        difference (:func:`~fairjudge.consensus.reliability_bt`), so a noisy judge counts
        less; ``Consensus.reliability`` reports it.
    shrinkage : bool
        With ``joint``: learn each judge's prior variance on its position and
        self-preference terms by empirical Bayes (fairjudge's hierarchical bias-aware
        model), instead of the fixed N(0, 10) prior.
    level : float
    rng : seed
        Seeds the Elo order (and UDA's question split and initial weights).
    embedder : str or callable
        With ``uda``: the sentence embedder of the answers ("minilm", "hashing", a local
        sentence-transformers model, or texts -> array).
    uda_settings : UdaSettings, optional
        With ``uda``: its constants (K, initial rating, lambdas, epochs, the self features).
    frozen : Consensus, PublishedLeaderboard, dict or path, optional
        A published leaderboard (a path to or the dict of ``consensus --json`` output):
        its contestants keep their scores exactly and the verdicts' other contestants are
        placed on its scale by the joint model
        (:func:`~fairjudge.consensus.place_contestants`), intervals including the
        published scores' uncertainty. Only with ``joint``, no ``anchor``.

    Returns
    -------
    Consensus

    Raises
    ------
    FairjudgeInputError
        For an unknown method, missing columns, or contestants in disconnected groups.
    """
    from fairjudge import rank as rank_verdicts
    from fairjudge.audit import model_family
    from fairjudge.data import load_verdicts

    caught = []

    def rank(*args, **kwargs):
        """The library's ranking, its warnings kept for one note (the advice they carry
        names ``rank``'s options, not these)."""
        with warnings.catch_warnings(record=True) as seen:
            warnings.simplefilter("always")
            result = rank_verdicts(*args, **kwargs)
        caught.extend(str(w.message).split(" (")[0].split(";")[0] for w in seen)
        return result

    if method not in METHODS:
        raise FairjudgeInputError(f"unknown method {method!r}; choose one of "
                                  f"{', '.join(METHODS)}")
    table = contestant_verdicts(load_verdicts(verdicts), items, families=families)
    table = table[table["winner"].isin(["a", "b", "tie"])].reset_index(drop=True)
    if frozen is None:
        _check_connected(table)
    judges = sorted(table["judge"].astype(str).unique())
    contestants = sorted(set(table["item_a"]) | set(table["item_b"]))
    familyless = [j for j in judges if model_family(j, families) is None]
    notes = []
    if familyless:
        notes.append(f"no known model family for judge(s) {', '.join(familyless)}: each is "
                     "its own family, so only answers by a model of the same name count as "
                     "its own (the library's `families` argument groups names)")
    if frozen is not None:
        clash = [name for name, given in (("method " + method, method != "joint"),
                                          ("anchor", anchor is not None),
                                          ("reliability", reliability),
                                          ("shrinkage", shrinkage)) if given]
        if clash:
            raise FairjudgeInputError(f"a frozen leaderboard places newcomers with the joint "
                                      f"model on the leaderboard's own scale; {clash[0]} "
                                      "cannot go with it (use the joint method without "
                                      "anchor, reliability or shrinkage)")
        if len(judges) == 1:
            notes.append(f"one judge ({judges[0]}): there is no dispersion across judges")
        return _placed_consensus(table, frozen, notes, human_scores, level)
    if anchor is not None and anchor not in contestants:
        raise FairjudgeInputError(f"anchor {anchor!r} is not a contestant; have "
                                  f"{', '.join(contestants)}")
    if len(judges) == 1 and method == "uda":
        raise FairjudgeInputError(f"one judge ({judges[0]}): UDA aligns several judges with "
                                  "their consensus and needs at least two")
    if len(judges) == 1:
        notes.append(f"one judge ({judges[0]}): there is no dispersion across judges and "
                     "no consensus beyond its own scores")
    per_judge = {}
    for judge in judges:
        own = table[table["judge"] == judge]
        met = set(own["item_a"]) | set(own["item_b"])
        unseen = [c for c in contestants if c not in met]
        if unseen:
            notes.append(f"judge {judge} never saw {', '.join(unseen)}: no score of its own")
        if method in ("elo", "uda"):  # their own per-judge ratings stand in below
            continue
        ranking = rank(own, model="bias-aware", level=level, n_samples=200)
        per_judge[judge] = _elo(ranking.scores, anchor).reindex(contestants)
    per_judge = pd.DataFrame(per_judge, index=pd.Index(contestants, name="contestant"))
    spread = _spread(per_judge)
    self_pref = pd.DataFrame(index=pd.Index(judges, name="judge"))
    ranking = None
    weights = None
    if (reliability or shrinkage) and method != "joint":
        raise FairjudgeInputError(f"{'reliability' if reliability else 'shrinkage'} is a "
                                  "part of the joint model: use the joint method "
                                  "(--method joint)")
    model = "hierarchical" if shrinkage else "bias-aware"
    if method == "joint":
        terms = terms_used = [name for name in ("self", "own")
                              if (table[f"{name}_a"] != table[f"{name}_b"]).any()]
        if "self" not in terms:
            notes.append("no verdict sets a judge's own family against another: the joint "
                         "model has no self-preference term")
        ranking = rank(table, model=model, covariates=terms[:1], level=level, n_samples=200)
        scores = _with_intervals(ranking, anchor)
        for name in terms:
            fit = ranking if name == "self" else rank(
                table, model=model, covariates=[name], level=level, n_samples=200)
            rows = fit.bias[fit.bias["name"] == name].set_index("judge")
            for column in ("estimate", "ci_low", "ci_high"):
                self_pref[f"{name}_{column}"] = rows[column].reindex(judges).to_numpy()
        if reliability:
            from fairjudge.consensus._reliability import reliability_bt

            fit = reliability_bt(table)
            scores = fit.scores(level, anchor)
            terms = fit.judge_terms(level)
            for column in ("estimate", "ci_low", "ci_high"):
                self_pref[f"self_{column}"] = terms[f"self_{column}"].reindex(judges).to_numpy()
            weights = terms[["tau_estimate", "tau_ci_low", "tau_ci_high"]].rename(
                columns=lambda c: c.replace("tau_", ""))
            if "own" in terms_used:
                notes.append("the own-answer terms come from the joint model without "
                             "reliability")
        no_pair = [j for j in judges if not _has_pair(table, j, "self")]
        if no_pair:
            notes.append(f"no verdict of {', '.join(no_pair)} compares its own family with "
                         "another: its self-preference term is its prior (uninformative)")
    elif method in ("pooled", "majority"):
        source = table if method == "pooled" else _majority(table)
        ranking = rank(source, model="naive", pool_judges=True, level=level, n_samples=200)
        scores = _with_intervals(ranking, anchor)
    elif method == "uda":
        from fairjudge.consensus._uda import UdaSettings, train_uda, uda_batches
        from fairjudge.discovery import resolve_embedder

        settings = uda_settings or UdaSettings(k=elo_k)  # uda_settings carries its own K
        if "text" not in items.columns:
            raise FairjudgeInputError("UDA needs `text` in the item table: its features are "
                                      "embeddings of the answers")
        embed = resolve_embedder(embedder, items["text"].astype(str).tolist()
                                 if "text" in items.columns else [])
        batches, names = uda_batches(table, items, embed,
                                     self_features=settings.self_features, rng=rng)
        uda_fit = train_uda(batches, names, settings=settings, rng=rng)
        ratings = uda_fit.ratings.reindex(contestants)
        if anchor is not None:
            ratings = ratings - ratings.loc[anchor] + 1000.0
        scores = pd.DataFrame({"estimate": ratings.mean(axis=1), "ci_low": np.nan,
                               "ci_high": np.nan})
        per_judge = ratings.rename_axis("contestant")
        spread = _spread(per_judge)
        if not settings.self_features:
            notes.append("UDA without its self features (the paper's ablation)")
    else:
        # One generator over the judges in order: the same comparison orders as UDA's
        # baseline (uda_batches), so --method elo is the baseline UDA aligns.
        generator = as_generator(rng)
        ratings = pd.DataFrame({judge: _sequential_elo(table[table["judge"] == judge],
                                                       contestants, elo_k, generator)
                                for judge in judges})
        if anchor is not None:
            ratings = ratings - ratings.loc[anchor] + 1000.0
        mean = ratings.mean(axis=1)
        scores = pd.DataFrame({"estimate": mean, "ci_low": np.nan, "ci_high": np.nan})
        per_judge = ratings.rename_axis("contestant")
        spread = _spread(per_judge)
    covariance = None
    if weights is not None:
        covariance = _score_covariance(fit.covariance[:len(fit.contestants),
                                                      :len(fit.contestants)],
                                       fit.contestants, anchor)
    elif ranking is not None and ranking.fit.covariance is not None:
        covariance = _score_covariance(ranking.fit.covariance, list(ranking.fit.item_ids),
                                       anchor)
    elif ranking is not None:
        notes.append(f"no score covariance: {ranking.fit.n_items} contestants were fitted by "
                     "the sparse solver, which forms none")
    if caught:
        notes.append("; ".join(dict.fromkeys(caught)) + " -- read the intervals with care")
    scores = scores.sort_values("estimate", ascending=False).rename_axis("contestant")
    correlation = None
    if human_scores is not None:
        correlation = _human_correlation(scores["estimate"], per_judge, human_scores, level)
    return Consensus(method, scores, per_judge, spread, self_pref, correlation,
                     tuple(notes), ranking, weights, uda_fit if method == "uda" else None,
                     covariance, level)


def reference_contrast(n: int, anchor_index: int | None) -> np.ndarray:
    """Rows map logits to differences from the reference: the mean of the ``n``
    contestants, or contestant ``anchor_index``. Shape (n, n)."""
    if anchor_index is None:
        return np.eye(n) - 1.0 / n
    contrast = np.eye(n)
    contrast[:, anchor_index] -= 1.0
    return contrast


def _score_covariance(theta_covariance: np.ndarray, ids: list,
                      anchor: str | None) -> pd.DataFrame:
    """Covariance (Elo squared) of the scores measured from the reference."""
    contrast = reference_contrast(len(ids), None if anchor is None else ids.index(anchor))
    return pd.DataFrame(ELO_SCALE ** 2 * contrast @ theta_covariance @ contrast.T,
                        index=pd.Index(ids, name="contestant"), columns=ids)


def _placed_consensus(table: pd.DataFrame, frozen, notes: list, human_scores,
                      level: float) -> Consensus:
    """The frozen rule: published scores kept, newcomers placed (joint model)."""
    from fairjudge.consensus._placement import PublishedLeaderboard, place_contestants

    board = (frozen if isinstance(frozen, PublishedLeaderboard)
             else PublishedLeaderboard.from_consensus(frozen) if isinstance(frozen, Consensus)
             else PublishedLeaderboard.from_json(frozen))
    placed = place_contestants(table, board)
    published, newcomers = placed.published, placed.newcomers
    scores = placed.scores(level)
    scores.loc[published] = board.scores.loc[published, ["estimate", "ci_low",
                                                         "ci_high"]].to_numpy()
    judges = placed.judges
    per_judge = pd.DataFrame(np.nan, index=pd.Index(published + newcomers,
                                                    name="contestant"), columns=judges)
    for judge in judges:
        if board.per_judge is not None and judge in board.per_judge.columns:
            per_judge.loc[published, judge] = board.per_judge[judge].reindex(
                published).to_numpy(float)
        own = table[table["judge"] == judge]
        try:
            alone = place_contestants(own, board)
        except FairjudgeInputError:  # this judge's verdicts place no newcomer
            continue
        per_judge.loc[alone.newcomers, judge] = alone.scores(level).loc[
            alone.newcomers, "estimate"].to_numpy()
    spread = pd.Series(np.nan, index=per_judge.index)
    if board.inter_judge_sd is not None:
        spread.loc[published] = board.inter_judge_sd.reindex(published).to_numpy(float)
    if len(judges) > 1:
        spread.loc[newcomers] = per_judge.loc[newcomers].std(axis=1, ddof=1)
    self_pref = pd.DataFrame(index=pd.Index(judges, name="judge"))
    varies = [name for name in ("self", "own")
              if (table[f"{name}_a"] != table[f"{name}_b"]).any()]
    for name in varies:
        fit = placed if name == "self" else place_contestants(table, board, covariate=name)
        terms = fit.terms(level)
        for column in ("estimate", "ci_low", "ci_high"):
            self_pref[f"{name}_{column}"] = terms[column].to_numpy()
    if "self" not in varies:
        notes.append("no verdict sets a judge's own family against another: no "
                     "self-preference term is reported")
    notes.append(f"frozen leaderboard: {len(published)} published contestant(s) keep their "
                 f"scores; {', '.join(newcomers)} placed on its scale by the joint model, "
                 "the judges' position and self-preference terms re-estimated with the "
                 "published scores fixed; the newcomers' intervals include the published "
                 "scores' uncertainty; a newcomer's s.d. across judges is that of each "
                 "judge's own placement on the published scale (the published ones' s.d. is "
                 "the leaderboard's)")
    if not placed.published_covariance:
        notes.append("the leaderboard gives marginal intervals only: the published scores' "
                     "correlations are taken as zero in the newcomers' intervals")
    if abs(board.level - level) > 1e-12:
        notes.append(f"the published intervals are at level {board.level:g}, the "
                     f"newcomers' at {level:g}")
    if not placed.converged:
        notes.append("the placement did not converge: read the newcomers' scores with care")
    scores = scores.sort_values("estimate", ascending=False).rename_axis("contestant")
    correlation = None
    if human_scores is not None:
        correlation = _human_correlation(scores["estimate"], per_judge, human_scores, level)
    covariance = pd.DataFrame(ELO_SCALE ** 2 * placed.covariance,
                              index=pd.Index(placed.contestants, name="contestant"),
                              columns=placed.contestants)
    return Consensus("joint", scores, per_judge, spread, self_pref, correlation,
                     tuple(notes), None, None, None, covariance, level, tuple(published))


def _spread(per_judge: pd.DataFrame) -> pd.Series:
    """Per contestant, the s.d. across judges of its score from each judge's mean
    contestant (so an anchor, held at 1000 by every judge, does not read as agreement);
    NaN with one judge."""
    if per_judge.shape[1] < 2:
        return pd.Series(np.nan, index=per_judge.index)
    centred = per_judge - per_judge.mean(axis=0)
    return centred.std(axis=1, ddof=1)


def _elo(scores: pd.Series, anchor: str | None = None) -> pd.Series:
    """Logit scores on the Elo scale, the anchor (or the mean) at 1000."""
    reference = scores.mean() if anchor is None or anchor not in scores.index \
        else scores[anchor]
    return 1000.0 + ELO_SCALE * (scores - reference)


def _with_intervals(ranking, anchor: str | None) -> pd.DataFrame:
    """Elo-scale scores with Laplace intervals: of the score from the mean contestant, or
    with an anchor of the difference from it (the anchor itself has none)."""
    frame = ranking.to_frame()
    if anchor is None:
        return pd.DataFrame({"estimate": frame["elo"], "ci_low": frame["elo_ci_low"],
                             "ci_high": frame["elo_ci_high"]})
    rows = {}
    for contestant in frame.index:
        if contestant == anchor:
            rows[contestant] = (1000.0, np.nan, np.nan)
            continue
        d = ranking.difference(contestant, anchor)
        rows[contestant] = tuple(1000.0 + ELO_SCALE * v for v in (d.estimate, d.ci_low,
                                                                  d.ci_high))
    return pd.DataFrame.from_dict(rows, orient="index", columns=["estimate", "ci_low",
                                                                 "ci_high"])


def _has_pair(table: pd.DataFrame, judge: str, name: str) -> bool:
    rows = table[table["judge"] == judge]
    return bool((rows[f"{name}_a"] != rows[f"{name}_b"]).any())


def _check_connected(table: pd.DataFrame) -> None:
    """Contestants must form one comparison graph: scores in two groups share no scale."""
    from scipy.sparse import coo_matrix
    from scipy.sparse.csgraph import connected_components

    names, codes = np.unique(np.r_[table["item_a"], table["item_b"]], return_inverse=True)
    n = len(table)
    graph = coo_matrix((np.ones(n), (codes[:n], codes[n:])), shape=(len(names),) * 2)
    count, labels = connected_components(graph, directed=False)
    if count > 1:
        groups = [", ".join(names[labels == g][:4]) for g in range(count)]
        raise FairjudgeInputError(f"the contestants fall into {count} groups no verdict "
                                  f"connects ({'; '.join(groups)}): their scores share no "
                                  "scale")


def _majority(table: pd.DataFrame) -> pd.DataFrame:
    """One verdict per question and contestant pair: the side most judge verdicts chose
    (a tie when they split evenly)."""
    winner = np.where(table["winner"] == "a", table["item_a"],
                      np.where(table["winner"] == "b", table["item_b"], ""))
    low = np.minimum(table["item_a"], table["item_b"])
    high = np.maximum(table["item_a"], table["item_b"])
    question = table["question_id"].astype(str) if "question_id" in table.columns \
        else pd.Series("", index=table.index)
    votes = pd.DataFrame({"question": question.to_numpy(), "low": low, "high": high,
                          "for_low": (winner == low).astype(float),
                          "for_high": (winner == high).astype(float)})
    grouped = votes.groupby(["question", "low", "high"], sort=True)[["for_low", "for_high"]]
    counts = grouped.sum().reset_index()
    outcome = np.where(counts["for_low"] > counts["for_high"], "a",
                       np.where(counts["for_low"] < counts["for_high"], "b", "tie"))
    return pd.DataFrame({"item_a": counts["low"], "item_b": counts["high"],
                         "winner": outcome, "judge": "majority",
                         "question_id": counts["question"]})


def _sequential_elo(rows: pd.DataFrame, contestants: list, k: float, rng) -> pd.Series:
    """Online Elo over one judge's verdicts in a seeded order (ties score 0.5)."""
    rating = dict.fromkeys(contestants, 1000.0)
    order = as_generator(rng).permutation(len(rows))
    a, b, w = (rows[c].to_numpy() for c in ("item_a", "item_b", "winner"))
    for i in order:
        expected = 1.0 / (1.0 + 10 ** ((rating[b[i]] - rating[a[i]]) / 400.0))
        score = 1.0 if w[i] == "a" else 0.0 if w[i] == "b" else 0.5
        rating[a[i]] += k * (score - expected)
        rating[b[i]] -= k * (score - expected)
    seen = set(a) | set(b)
    return pd.Series({c: rating[c] if c in seen else np.nan for c in contestants})


def _human_correlation(consensus_scores: pd.Series, per_judge: pd.DataFrame,
                       human: pd.Series, level: float) -> dict:
    from fairjudge.stats._correlation import correlation

    human = pd.Series(human, dtype=float)
    common = [c for c in consensus_scores.index if c in human.index]
    if len(common) < 4:
        raise FairjudgeInputError(f"human scores cover {len(common)} contestants; a "
                                  "correlation needs at least 4")
    out = {}
    for method in ("pearson", "spearman"):
        r = correlation(consensus_scores[common], human[common], method=method, level=level)
        judges = [correlation(per_judge.loc[common, j], human[common], method=method,
                              level=level).statistic for j in per_judge.columns
                  if per_judge.loc[common, j].notna().all()]
        # Fisher's z has no interval at |r| = 1 (atanh is infinite): say so, not [1, 1].
        exact = abs(r.statistic) > 1 - 1e-9
        out[method] = {"consensus": Estimate(
            r.statistic, np.nan if exact else r.interval.low,
            np.nan if exact else r.interval.high, len(common), level,
            "fisher z (no interval at |r| = 1)" if exact else "fisher z").as_dict(),
                       "mean_over_judges": float(np.mean(judges)) if judges else None}
    return out
