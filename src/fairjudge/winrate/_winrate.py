"""Win rates against a baseline, raw and controlled for a factor (length by default), from
AlpacaEval annotation files or fairjudge verdict tables."""

from __future__ import annotations

import json
import warnings
from dataclasses import dataclass
from pathlib import Path

import numpy as np
import pandas as pd

from fairjudge._util._warnings import ConvergenceWarning, FairjudgeInputError, FairjudgeWarning
from fairjudge.stats import Estimate, normal_interval
from fairjudge.winrate._glm import check_preferences, fit_query_effects, fit_unit
from fairjudge.winrate._marginal import fit_marginal

ESTIMATORS = ("auto", "marginal", "two-stage")
# Above this many models the joint fit's information matrix (3 per model) grows costly,
# and each query effect rests on enough preferences that the two-stage fit's plug-in
# attenuation is negligible (AlpacaEval's leaderboard has hundreds of models).
MARGINAL_MAX_MODELS = 50

#: Columns of a preference table: one preference of a model's answer over the baseline's.
PREFERENCE_COLUMNS = ("model", "baseline", "query", "preference", "control_model",
                      "control_baseline")
_ALPACAEVAL_FIELDS = ("instruction", "output_1", "output_2", "generator_1", "generator_2",
                      "preference")


def load_alpacaeval(source) -> pd.DataFrame:
    """A preference table from an AlpacaEval annotation file, as AlpacaEval writes it.

    The file is a JSON list of records with ``instruction``, ``output_1`` (the baseline's
    answer), ``output_2`` (the model's), ``generator_1``, ``generator_2`` and
    ``preference`` in [1, 2]: 1 = output_1 preferred, 2 = output_2, 1.5 = a tie, values in
    between a weighted annotator's soft preference; 0 is a draw, as AlpacaEval reads it.
    A missing preference (the annotator failed) drops the record, as AlpacaEval does. The
    control is the answers' length in characters (AlpacaEval's).

    Returns
    -------
    pandas.DataFrame
        :data:`PREFERENCE_COLUMNS`, ``preference`` = annotation − 1 (the model's win share).

    Raises
    ------
    FairjudgeInputError
        Naming the file and record when a record lacks a field or a preference is outside
        [1, 2].
    """
    path = Path(source)
    try:
        records = json.loads(path.read_text(encoding="utf-8-sig"))
    except (OSError, json.JSONDecodeError) as err:
        raise FairjudgeInputError(f"{path}: not a readable AlpacaEval annotation file "
                                  f"({err})") from None
    if not isinstance(records, list) or not all(isinstance(r, dict) for r in records):
        raise FairjudgeInputError(f"{path}: expected a JSON list of annotation records")
    rows = []
    for number, record in enumerate(records):
        missing = [f for f in _ALPACAEVAL_FIELDS if f not in record]
        if missing:
            raise FairjudgeInputError(f"{path} record {number}: missing field `{missing[0]}` "
                                      f"(AlpacaEval records have {', '.join(_ALPACAEVAL_FIELDS)})")
        preference = record["preference"]
        if preference is None or (isinstance(preference, float) and np.isnan(preference)):
            continue
        if preference == 0 and not isinstance(preference, bool):
            preference = 1.5  # AlpacaEval's code for a draw
        if isinstance(preference, bool) or not isinstance(preference, (int, float)) \
                or not 1 <= preference <= 2:
            raise FairjudgeInputError(f"{path} record {number}: field `preference` must be a "
                                      f"number in [1, 2] (1 = output_1 preferred, 2 = "
                                      f"output_2); got {preference!r}")
        for field in ("output_1", "output_2"):
            if not isinstance(record[field], str):
                raise FairjudgeInputError(f"{path} record {number}: field `{field}` must be "
                                          f"text; got {type(record[field]).__name__}")
        rows.append((str(record["generator_2"]), str(record["generator_1"]),
                     str(record["instruction"]), float(preference) - 1.0,
                     float(len(record["output_2"])), float(len(record["output_1"]))))
    if not rows:
        raise FairjudgeInputError(f"{path}: no annotation with a preference")
    frame = pd.DataFrame(rows, columns=list(PREFERENCE_COLUMNS))
    frame.attrs.update(source=path.name, control="length", control_unit="characters")
    return frame


def preferences_from_verdicts(verdicts: pd.DataFrame, *, baseline: str,
                              items: pd.DataFrame | None = None,
                              control: str = "length") -> pd.DataFrame:
    """A preference table from a verdict table whose items are answers of models.

    A side's model is the item table's ``source`` of its item (or the item id itself
    without one). Only verdicts that set a model against ``baseline`` count: 1 when the
    model's answer wins, 0 when the baseline's does, 0.5 for a tie; invalid outputs and
    repeated samples (``sample`` > 0) are left out. The verdicts of one judge on one pair
    -- both presentation orders -- make one preference, their mean (an order-inconsistent
    pair is 0.5, as in HUB-J), so a pair counts once. With several judges each judge's
    preferences are a unit of their own, named ``model | judge``. The query is
    ``question_id`` (else ``pair_id``, else the pair). The control is the verdict's
    ``<control>_a``/``<control>_b`` columns, or the item table's ``control`` column.

    Returns
    -------
    pandas.DataFrame
        :data:`PREFERENCE_COLUMNS` and ``trials``, the verdicts averaged into each
        preference.

    Raises
    ------
    FairjudgeInputError
        If no verdict involves the baseline, or the control is found nowhere.
    """
    v = verdicts
    source = (items["source"] if items is not None and "source" in items.columns else None)

    def model_of(column):
        ids = v[column].astype(str)
        return ids.map(source).fillna(ids) if source is not None else ids

    first, second = model_of("item_a"), model_of("item_b")
    involved = (first == baseline) ^ (second == baseline)
    valid = v["winner"].isin(["a", "b", "tie"]).to_numpy()
    keep = (involved & valid).to_numpy()
    if not keep.any():
        models = sorted(set(first) | set(second))
        raise FairjudgeInputError(
            f"no valid verdict sets a model against the baseline {baseline!r}; models in the "
            f"verdicts: {', '.join(models[:10])}{' ...' if len(models) > 10 else ''}")
    columns = (f"{control}_a", f"{control}_b")
    if set(columns) <= set(v.columns):
        side_a, side_b = (pd.to_numeric(v[c], errors="coerce") for c in columns)
    elif items is not None and control in items.columns:
        values = pd.to_numeric(items[control], errors="coerce")
        side_a, side_b = (v[c].astype(str).map(values) for c in ("item_a", "item_b"))
    else:
        raise FairjudgeInputError(
            f"the control `{control}` is neither in the verdicts (`{columns[0]}`, "
            f"`{columns[1]}`) nor a column of the item table")
    model_first = (second == baseline).to_numpy()  # the model's answer was shown first
    winner = v["winner"].to_numpy()
    preference = np.where(winner == "tie", 0.5,
                          np.where((winner == "a") == model_first, 1.0, 0.0))
    query = (v["question_id"] if "question_id" in v.columns else
             v["pair_id"] if "pair_id" in v.columns else
             pd.Series([f"{min(a, b)}|{max(a, b)}" for a, b in zip(v["item_a"], v["item_b"])],
                       index=v.index))
    if "sample" in v.columns:
        keep = keep & (pd.to_numeric(v["sample"], errors="coerce").fillna(0) == 0).to_numpy()
    judges = (v["judge"].astype(str) if "judge" in v.columns
              else pd.Series("judge", index=v.index))
    model = pd.Series(np.where(model_first, first, second), index=v.index)
    if judges[keep].nunique() > 1:
        model = model + " | " + judges
    pair = _pair_of(v, first, second)
    frame = pd.DataFrame({
        "model": model.to_numpy(), "baseline": baseline,
        "query": query.astype(str).to_numpy(), "preference": preference,
        "control_model": np.where(model_first, side_a, side_b),
        "control_baseline": np.where(model_first, side_b, side_a),
        "pair": pair.to_numpy()})[keep]
    if frame[["control_model", "control_baseline"]].isna().any().any():
        row = int(np.flatnonzero(frame[["control_model", "control_baseline"]].isna()
                                 .any(axis=1).to_numpy())[0])
        raise FairjudgeInputError(f"verdict {frame.index[row]}: no numeric `{control}` for "
                                  "one of its answers")
    # One preference per judge and pair: the mean over its presentation orders, with the
    # number of verdicts behind it (the joint fit's binomial count).
    frame = (frame.groupby(["model", "pair"], sort=False)
             .agg(baseline=("baseline", "first"), query=("query", "first"),
                  preference=("preference", "mean"), trials=("preference", "size"),
                  control_model=("control_model", "mean"),
                  control_baseline=("control_baseline", "mean"))
             .reset_index()[[*PREFERENCE_COLUMNS, "trials"]])
    frame.attrs.update(control=control, control_unit=control)
    return frame


def _pair_of(verdicts: pd.DataFrame, first: pd.Series, second: pd.Series) -> pd.Series:
    """Each verdict's pair, whatever the order shown: ``pair_id``, else the two items."""
    if "pair_id" in verdicts.columns:
        return verdicts["pair_id"].astype(str)
    a, b = verdicts["item_a"].astype(str), verdicts["item_b"].astype(str)
    return pd.Series(np.where(a < b, a + "\x1f" + b, b + "\x1f" + a), index=verdicts.index)


@dataclass(frozen=True)
class WinRates:
    """Per model: raw and controlled win rates against one baseline.

    Attributes
    ----------
    table : pandas.DataFrame
        Indexed by model: ``n``, and in percent with their intervals ``win_rate``,
        ``controlled_win_rate``, ``bias`` (percentage points the factor adds) and
        ``bias_share`` (``bias`` as a percent of the win rate), each as ``<name>``,
        ``<name>_low``, ``<name>_high``; then the Stage II coefficients ``theta``, ``phi``
        and ``psi`` (NaN without query effects), and ``note`` (why a model has no
        controlled figures).
    estimates : dict
        model -> {name: :class:`~fairjudge.stats.Estimate`} for the four figures.
    control : str
        The controlled factor.
    query_effects : bool
        Whether Stage I query effects were estimated (needs two or more models sharing
        queries).
    notes : tuple of str
        What the reader should know about the fit (query effects dropped, a Stage I fit
        that did not converge).
    estimator : str
        The fit used: ``"marginal"``, ``"two-stage"``, or ``"no query effects"``.
    ppi : pandas.DataFrame or None
        With human labels (``gold``): per model the humans' win rate by prediction-powered
        inference, the humans alone and the judge alone
        (:func:`~fairjudge.winrate.ppi_win_rates`).
    """

    table: pd.DataFrame
    estimates: dict
    control: str
    query_effects: bool
    notes: tuple = ()
    estimator: str = "no query effects"
    ppi: pd.DataFrame | None = None

    def to_dict(self) -> dict:
        """model -> {win_rate, controlled_win_rate, bias, bias_share (each an Estimate as a
        dict), n, coefficients}; ready for ``--json``."""
        out = {}
        for model, figures in self.estimates.items():
            row = self.table.loc[model]
            out[model] = {**{k: e.as_dict() for k, e in figures.items()}, "n": int(row["n"]),
                          "theta": float(row["theta"]), "phi": float(row["phi"]),
                          "psi": float(row["psi"]), "note": row["note"],
                          "estimator": self.estimator}
            if self.ppi is not None and model in self.ppi.index:
                out[model].update(_ppi_fields(self.ppi.loc[model]))
        return out


def _ppi_fields(row: pd.Series) -> dict:
    """The ``--json`` fields of one model's prediction-powered figures (percent)."""
    def finite(value):
        return None if value != value else float(value)

    out = {f"{name}_win_rate": {"estimate": finite(row[column]),
                                "ci_low": finite(row[f"{column}_low"]),
                                "ci_high": finite(row[f"{column}_high"])}
           for name, column in (("ppi", "ppi"), ("human_only", "human"),
                                ("judge_only", "judge"))}
    return out | {"ppi_lambda": finite(row["lambda"]), "n_labelled": int(row["n_labelled"]),
                  "ppi_note": row["note"]}


def win_rates(preferences: pd.DataFrame, *, level: float = 0.95, standardize: bool = True,
              query_prior_precision: float = 0.1, cross_fit: bool = True,
              estimator: str = "auto", gold: pd.DataFrame | None = None) -> WinRates:
    """Raw and controlled win rates of every model against the baseline.

    An optional ``trials`` column counts the binary verdicts averaged into each preference
    (:func:`preferences_from_verdicts` writes it); the joint fit needs it for fractional
    preferences (a tie counts half a win), and without it uses the two-stage fit when a
    preference is neither 0 nor 1.

    The GLM of :mod:`fairjudge.winrate._glm` with the factor differential
    ``control_model - control_baseline``; with ``standardize`` (AlpacaEval's length
    control) divided by its standard deviation within each model before ``tanh``;
    without, ``tanh`` of the raw differential (HUB-J's intensity scores). Query effects
    need two or more models; with one, they are dropped and ``query_effects`` is False.

    Parameters
    ----------
    preferences : pandas.DataFrame
        :data:`PREFERENCE_COLUMNS` (:func:`load_alpacaeval`, :func:`preferences_from_verdicts`).
        ``preference`` is the model's win share in [0, 1]; the controls are in any unit.
    level : float
        Level of every interval.
    standardize : bool
        Divide the differential by its within-model standard deviation.
    estimator : {"auto", "marginal", "two-stage"}
        ``"auto"`` (default): ``"marginal"`` up to :data:`MARGINAL_MAX_MODELS` models,
        ``"two-stage"`` beyond. ``"marginal"``: one joint fit of every model with the query effects
        integrated out (:mod:`fairjudge.winrate._marginal`), whose phi is consistent and
        whose intervals cover with few models per query. ``"two-stage"``: the papers'
        Stage I query effects plugged into a Stage II per model, which attenuates phi
        when few models share a query (the options below apply to it). Models whose
        preferences are all equal or whose differential never varies are left out of the
        joint fit (their controlled figures are not estimable); if the joint fit fails,
        the two-stage fit is used and ``notes`` says so.
    query_prior_precision : float
        Prior precision of the Stage I query effects (two-stage).
    gold : pandas.DataFrame, optional
        Human preferences in the same format for a random subset of the same records:
        adds ``ppi``, the humans' win rate by prediction-powered inference.
    cross_fit : bool
        Estimate each model's query effects from the other models' preferences only
        (default). The paper's Stage I uses every unit, the model's own preferences
        included; its Stage II then regresses those preferences on a covariate made from
        them, which inflates phi and psi and narrows the intervals. Measured on simulated
        data (300 queries, 40 data sets, ``benchmarks``-style check in the tests): with
        3 models the paper's procedure covers the true controlled win rate 85% of the time
        at the 95% level, with phi 0.68 too large on average; cross-fitted, 97% and -0.11.
        With 8 models: 94% and +0.18 against 97% and -0.07. False reproduces the paper.

    Returns
    -------
    WinRates
        Per model (``table``, in percent): raw and controlled win rates, the points the
        factor adds and their share of the win rate, each with an interval at ``level``
        (rates on the logit scale, so inside 0 to 100), and the Stage II coefficients.

    Raises
    ------
    FairjudgeInputError
        For a missing column, a preference outside [0, 1] or a non-finite control.

    Warns
    -----
    ConvergenceWarning
        If a Stage I fit does not converge (also in ``notes``).
    """
    if estimator not in ESTIMATORS:
        raise FairjudgeInputError(f"`estimator` must be one of {', '.join(ESTIMATORS)}; "
                                  f"got {estimator!r}")
    missing = [c for c in PREFERENCE_COLUMNS if c not in preferences.columns]
    if missing:
        raise FairjudgeInputError(f"the preference table lacks column `{missing[0]}`")
    frame = preferences.reset_index(drop=True)
    y = check_preferences(frame["preference"])
    delta = (frame["control_model"] - frame["control_baseline"]).to_numpy(dtype=float)
    if not np.all(np.isfinite(delta)):
        raise FairjudgeInputError("the control must be a finite number for every answer")
    unit_codes, models = pd.factorize(frame["model"])
    if standardize:
        scale = pd.Series(delta).groupby(unit_codes).transform(lambda d: d.std(ddof=1))
        scale = scale.fillna(0.0).to_numpy()
        delta = np.divide(delta, scale, out=np.zeros_like(delta), where=scale > 0)
    t = np.tanh(delta)
    query_codes, queries = pd.factorize(frame["query"])
    gamma, notes, fits, with_stage_one = None, [], {}, {}

    def stage_two(code, covariance):
        """Fit unit ``code`` now, while its Stage I covariance is at hand (it holds
        O(units x queries) numbers, so one is kept at a time)."""
        mask = unit_codes == code
        with_stage_one[code] = covariance is not None
        try:
            with warnings.catch_warnings():
                warnings.simplefilter("error", FairjudgeWarning)
                fits[code] = fit_unit(
                    y[mask], t[mask], None if gamma is None else gamma[mask],
                    query=None if covariance is None else query_codes[mask],
                    query_covariance=covariance)
        except (ValueError, FairjudgeWarning) as err:
            fits[code] = err

    shared = pd.Series(unit_codes).groupby(query_codes).nunique().max() > 1
    if len(models) > 1 and not shared:
        notes.append("no query was judged for two models, so there is no shared query "
                     "effect to estimate: it is dropped")
    if estimator == "auto":
        estimator = "marginal" if len(models) <= MARGINAL_MAX_MODELS else "two-stage"
    # Without a count, a fraction cannot be told from a tie: only 0/1 preferences are
    # binomial then.
    trials = (pd.to_numeric(frame["trials"], errors="coerce").to_numpy(float)
              if "trials" in frame.columns else np.where(np.isin(y, (0.0, 1.0)), 1.0, np.nan))
    if len(models) > 1 and shared and estimator == "marginal":
        marginal = _marginal_fits(y, unit_codes, query_codes, t, len(models), len(queries),
                                  trials)
        if isinstance(marginal, str):
            notes.append(marginal)
        else:
            fits.update(marginal)
            gamma = np.zeros(len(y))  # query effects were estimated (integrated out)
            with_stage_one.update(dict.fromkeys(marginal, None))
    if len(models) > 1 and shared and not fits:
        gamma = np.zeros(len(y))
        # Cross-fitted: each model's query effects from the other models' preferences; or
        # the paper's Stage I, once over every model.
        folds = range(len(models)) if cross_fit else [None]
        for code in folds:
            fitted = unit_codes != code if code is not None else np.ones(len(y), bool)
            target = unit_codes == code if code is not None else fitted
            stage1 = fit_query_effects(
                y[fitted], pd.factorize(unit_codes[fitted])[0], query_codes[fitted],
                t[fitted], n_units=len(models) - (code is not None),
                n_queries=len(queries), query_prior_precision=query_prior_precision)
            if not stage1.converged:
                message = ("the Stage I fit of the query effects did not converge; the "
                           "controlled win rates rest on unconverged query effects")
                warnings.warn(message, ConvergenceWarning, stacklevel=2)
                notes.append(message)
            if stage1.covariance is None:
                notes.append("the Stage I query effects have no finite covariance (a query "
                             "every model wins, or one no other model judged, without a "
                             "prior): intervals hold them fixed")
            gamma[target] = stage1.gamma[query_codes[target]]
            for unit in (range(len(models)) if code is None else [code]):
                stage_two(unit, stage1.covariance)
    elif not fits:
        for code in range(len(models)):
            stage_two(code, None)
    rows, estimates = {}, {}
    for code, model in enumerate(models):
        mask = unit_codes == code
        row = {"n": int(mask.sum()), "theta": np.nan, "phi": np.nan, "psi": np.nan,
               "theta_se": np.nan, "phi_se": np.nan, "psi_se": np.nan,
               "note": ""}
        raw_se = float(np.std(y[mask], ddof=1) / np.sqrt(mask.sum())) if mask.sum() > 1 \
            else float("nan")
        figures = {"win_rate": _share_estimate(float(y[mask].mean()), raw_se, row["n"], level,
                                               "AlpacaEval standard error, logit scale")}
        fit = fits[code]
        if isinstance(fit, Exception):
            row["note"] = f"controlled win rate not estimable: {fit}"
            for name in ("controlled_win_rate", "bias", "bias_share"):
                figures[name] = Estimate(np.nan, np.nan, np.nan, row["n"], level, "")
        else:
            errors = np.sqrt(np.maximum(np.diag(fit.covariance), 0.0))
            row.update(theta=fit.coef[0], phi=fit.coef[1],
                       psi=fit.coef[2] if gamma is not None else np.nan,
                       theta_se=errors[0], phi_se=errors[1],
                       psi_se=errors[2] if gamma is not None else np.nan)
            method = ("delta method (joint fit with the query effects integrated out, "
                      "plus their posterior variance)" if with_stage_one[code] is None else
                      "delta method (Stage II covariance with the Stage I query-effect "
                      "uncertainty)" if with_stage_one[code] else
                      "delta method (Stage II covariance)")
            figures["controlled_win_rate"] = _share_estimate(
                fit.controlled, fit.controlled_se, row["n"], level, method + ", logit scale")
            figures["bias"] = _percent(fit.bias, fit.bias_se, row["n"], level, method)
            # A share of the win rate is at most all of it (the controlled rate is >= 0).
            figures["bias_share"] = _percent(fit.share, fit.share_se, row["n"], level, method,
                                             high=100.0)
        for name, estimate in figures.items():
            row[name], row[f"{name}_low"], row[f"{name}_high"] = (
                estimate.estimate, estimate.ci_low, estimate.ci_high)
        rows[model] = row
        estimates[model] = figures
    order = ["n", *[f"{n}{s}" for n in ("win_rate", "controlled_win_rate", "bias",
                                        "bias_share") for s in ("", "_low", "_high")],
             "theta", "phi", "psi", "theta_se", "phi_se", "psi_se", "note"]
    table = pd.DataFrame.from_dict(rows, orient="index")[order]
    table.index.name = "model"
    table = table.sort_values("controlled_win_rate", ascending=False, na_position="last")
    ppi = None
    if gold is not None:
        from fairjudge.winrate._ppi import ppi_win_rates

        ppi = ppi_win_rates(preferences, gold, level=level).reindex(table.index)
    return WinRates(table, {m: estimates[m] for m in table.index},
                    preferences.attrs.get("control", "the factor"), gamma is not None,
                    tuple(dict.fromkeys(notes)),
                    "no query effects" if gamma is None else
                    "marginal" if None in with_stage_one.values() else "two-stage", ppi)


def _marginal_fits(y, unit_codes, query_codes, t, n_units: int, n_queries: int, trials):
    """unit code -> UnitFit (or the error that makes it not estimable) from the joint
    marginal fit of the estimable units, or a note saying why the two-stage fit is used."""
    halves = 2 * y * trials
    if not (np.all(np.isfinite(trials)) and np.all(trials >= 1)
            and np.allclose(halves, np.round(halves), atol=1e-9)):
        return ("the preferences are fractions without a count of the verdicts behind them "
                "(weighted annotators, or no `trials` column), which the joint fit needs: "
                "the two-stage fit is used")
    fits, usable = {}, []
    for code in range(n_units):
        mine = unit_codes == code
        if np.ptp(y[mine]) == 0:
            fits[code] = ValueError("every preference is the same, so the log-odds are "
                                    "infinite")
        elif np.ptp(t[mine]) == 0:
            fits[code] = ValueError("the factor differential never varies, so its effect "
                                    "cannot be told from the intercept")
        else:
            usable.append(code)
    rows = np.isin(unit_codes, usable)
    if len(usable) < 2 or pd.Series(unit_codes[rows]).groupby(
            query_codes[rows]).nunique().max() < 2:
        return ("fewer than two estimable models share a query; the two-stage fit is "
                "used")
    local = np.searchsorted(usable, unit_codes[rows])
    with warnings.catch_warnings():
        warnings.simplefilter("ignore", RuntimeWarning)
        fit = fit_marginal(y[rows], local, query_codes[rows], t[rows], n_units=len(usable),
                           n_queries=n_queries, trials=trials[rows])
    if not fit.converged:
        message = ("the joint fit with the query effects integrated out did not converge; "
                   "the two-stage fit is used")
        warnings.warn(message, ConvergenceWarning, stacklevel=3)
        return message
    fits.update(zip(usable, fit.units))
    return fits


def _percent(value: float, se: float, n: int, level: float, method: str, *,
             high: float = np.inf) -> Estimate:
    """``value`` (a share) in percent with its normal interval, capped at ``high`` (NaN
    bounds without a finite standard error)."""
    if not np.isfinite(se):
        return Estimate(100 * value, np.nan, np.nan, n, level, method)
    interval = normal_interval(100 * value, 100 * se, level)
    return Estimate(100 * value, interval.low, min(interval.high, high), n, level, method)


def _share_estimate(share: float, se: float, n: int, level: float, method: str) -> Estimate:
    """A rate in percent with a normal interval on the logit scale (the delta method
    carries ``se`` there), so the interval stays inside (0, 100); a rate of exactly 0 or 1
    keeps its point interval."""
    if not np.isfinite(se):
        return Estimate(100 * share, np.nan, np.nan, n, level, method)
    if not 0 < share < 1:
        return Estimate(100 * share, 100 * share, 100 * share, n, level, method)
    logit = np.log(share / (1 - share))
    interval = normal_interval(logit, se / (share * (1 - share)), level)
    low, high = (100 / (1 + np.exp(-x)) for x in (interval.low, interval.high))
    return Estimate(100 * share, float(low), float(high), n, level, method)
