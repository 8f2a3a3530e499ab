"""Win rates against a baseline, raw and controlled for a factor: AlpacaEval's
length-controlled win rate and HUB-J's bias-controlled win rate are one GLM with a query
effect [hubj-bias-discovery §3.4, App. F.1; Dubois et al. 2024], fitted jointly with the
query effects integrated out (:func:`fit_marginal`, the default up to 50 models) or in the
papers' two stages (:func:`fit_query_effects`, then :func:`fit_unit`).

:func:`load_alpacaeval` reads AlpacaEval annotation files as they are;
:func:`preferences_from_verdicts` makes the same preference table from a fairjudge verdict
table; :func:`win_rates` fits the model and returns each model's raw win rate, controlled
win rate, the points the factor adds and their share, with intervals; with human labels
on a subset of the records, :func:`ppi_win_rates` gives the humans' win rate by
prediction-powered inference. The model, its
assumptions and the choices the papers leave open are documented in
:mod:`fairjudge.winrate._glm`.
"""

from fairjudge.winrate._glm import (
    QueryCovariance,
    QueryEffects,
    UnitFit,
    fit_query_effects,
    fit_unit,
)
from fairjudge.winrate._marginal import MarginalFit, fit_marginal
from fairjudge.winrate._ppi import ppi_win_rates
from fairjudge.winrate._winrate import (
    PREFERENCE_COLUMNS,
    WinRates,
    load_alpacaeval,
    preferences_from_verdicts,
    win_rates,
)

__all__ = [
    "MarginalFit",
    "PREFERENCE_COLUMNS",
    "QueryCovariance",
    "QueryEffects",
    "UnitFit",
    "WinRates",
    "fit_marginal",
    "fit_query_effects",
    "fit_unit",
    "load_alpacaeval",
    "ppi_win_rates",
    "preferences_from_verdicts",
    "win_rates",
]
