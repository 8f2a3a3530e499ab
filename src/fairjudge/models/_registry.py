"""Estimators by name: each one registers what it is and which arguments it accepts."""

from __future__ import annotations

from dataclasses import dataclass
from typing import TYPE_CHECKING, Callable

from fairjudge._util._registry import Registry
from fairjudge._util._warnings import FairjudgeInputError

if TYPE_CHECKING:
    from fairjudge.models._bt import BTFit

#: Values of :attr:`ModelSpec.covariates`.
COVARIATE_USES = ("ignored", "optional", "required")


@dataclass(frozen=True)
class ModelSpec:
    """An estimator that :func:`~fairjudge.models.fit_model` can fit by name.

    Attributes
    ----------
    name : str
        The name users pass (``--model`` on the command line).
    description : str
        One line: what the estimator does.
    fit : callable
        ``fit(comparisons, [covariates,] *, prior_precision, check_graph, ...) -> BTFit``.
        ``covariates`` (positional) and ``covariate_names`` are passed only when
        ``covariates`` is not ``"ignored"``; ``position``, ``bias_prior_precision`` and
        ``init`` only when the matching flag below is set.
    covariates : {"ignored", "optional", "required"}
        Whether the estimator uses per-item covariates; ``"required"`` makes
        :func:`~fairjudge.models.fit_model` refuse ``covariates=None``.
    position : bool
        Accepts ``position`` (whether to estimate a first-position effect).
    bias_prior : bool
        Accepts ``bias_prior_precision`` (the prior precision of the bias coefficients).
    warm_start : bool
        Accepts ``init`` (a previous fit's parameters to start from).
    solver : bool
        Accepts ``solver`` (``"auto"``, ``"dense"`` or ``"sparse"``: see
        :func:`~fairjudge.models.bt_pairwise`); a model without it always fits densely.
    acquires_with : str or None
        For a post-hoc estimator, the model whose posterior chooses comparisons in an active
        loop (the residualized baseline acquires with the naive posterior and removes the
        covariates from the final scores only); None: the model itself.
    """

    name: str
    description: str
    fit: Callable[..., BTFit]
    covariates: str = "ignored"
    position: bool = False
    bias_prior: bool = False
    warm_start: bool = False
    solver: bool = False
    acquires_with: str | None = None

    def __post_init__(self) -> None:
        if not isinstance(self.name, str) or not self.name:
            raise FairjudgeInputError(f"`name` must be a non-empty string; got {self.name!r}")
        if self.covariates not in COVARIATE_USES:
            raise FairjudgeInputError(
                f"`covariates` must be one of {', '.join(COVARIATE_USES)}; got "
                f"{self.covariates!r}")
        if not callable(self.fit):
            raise TypeError(f"`fit` must be callable; got {type(self.fit).__name__}")


_MODELS: Registry[ModelSpec] = Registry("model", "model", ModelSpec)


def register_model(spec: ModelSpec) -> ModelSpec:
    """Make ``spec`` fittable by name through :func:`~fairjudge.models.fit_model`.

    Raises
    ------
    TypeError
        If ``spec`` is not a :class:`ModelSpec`.
    ValueError
        If a model of that name is already registered.

    Examples
    --------
    A naive fit with a ten times stronger prior, fittable as ``fit_model("naive-strong", ...)``:

    >>> from fairjudge.models import bt_pairwise
    >>> def strong(comparisons, *, prior_precision, **kwargs):
    ...     return bt_pairwise(comparisons, prior_precision=10 * prior_precision, **kwargs)
    >>> spec = ModelSpec("naive-strong", "naive Bradley–Terry, 10x prior precision", strong)
    >>> register_model(spec)  # doctest: +SKIP
    """
    return _MODELS.register(spec)


def model_names() -> tuple[str, ...]:
    """Names of every registered model, in registration order (the built-ins first)."""
    return _MODELS.names()


def model_spec(name: str) -> ModelSpec:
    """The registered model called ``name``.

    Raises
    ------
    ValueError
        ``"`model` must be one of naive, bias-aware, ...; got 'x'"``.
    """
    return _MODELS.get(name)
