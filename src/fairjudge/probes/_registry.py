"""Probe kinds as objects in a registry: what a kind builds and how its target is scored.

A :class:`ProbeKind` names its bias types, builds :class:`Probe` pairs from
:class:`AnswerRecord` answers, and says how a verdict on one of its probes counts for or
against its target side. :func:`~fairjudge.probes.build_probes` and
:func:`~fairjudge.probes.score_probes` iterate the registry, so a new kind is one
:func:`register_probe_kind` call (the built-in kinds register themselves, one module each).
"""

from __future__ import annotations

import re
from collections.abc import Callable, Sequence
from dataclasses import dataclass, field

import numpy as np
import pandas as pd

from fairjudge._util._rng import content_seed
from fairjudge._util._warnings import FairjudgeInputError, FairjudgeWarning

#: Values of ``expected_verdict``: the side an unbiased judge picks, or a tie.
EXPECTED_VERDICTS = ("a", "b", "tie")
_NAME = re.compile(r"^[A-Z][A-Z0-9_]*$")


class ProbeWarning(FairjudgeWarning):
    """A probe could not be built for some records, or a score could not be computed as asked.

    The skipped records are listed in ``probes.attrs["skipped"]``.
    """


@dataclass(frozen=True)
class AnswerRecord:
    """One answer a probe is built from.

    Attributes
    ----------
    id : str
        The record's id (its row position when the records have none).
    question, answer : str
        Non-empty, surrounding whitespace removed.
    source : str or None
        The model that wrote the answer (MODEL_ORIGIN pairs answers by source).
    category : str or None
        The question's topic or category (an MT-Bench category, a Table 7 topic), carried to
        the probes built from it for the per-category analyses
        [debiasing-strategies-study App. E].
    """

    id: str
    question: str
    answer: str
    source: str | None = None
    category: str | None = None


@dataclass(frozen=True)
class Probe:
    """One probe pair as a kind builds it; :func:`build_probes` gives it its id.

    Attributes
    ----------
    bias_type : str
        One of the building kind's ``bias_types``.
    question, a, b : str
        The question and the two answers, in the probe's own a/b frame.
    expected_verdict : str
        ``a``, ``b`` or ``tie``: what an unbiased judge answers.
    target : str or None
        ``a`` or ``b``, the side a positive bias score prefers; None when the kind works
        it out while scoring (MODEL_ORIGIN).
    construction_notes : str
        How the pair was made, for a reader of the probe table.
    record_id : str
        The record (or ``"<a's record>+<b's record>"``) the pair comes from.
    source_a, source_b : str or None
        The models that wrote a and b, where the kind uses them.
    """

    bias_type: str
    question: str
    a: str
    b: str
    expected_verdict: str
    target: str | None
    construction_notes: str
    record_id: str
    source_a: str | None = None
    source_b: str | None = None


@dataclass
class BuildContext:
    """What a kind's builder gets besides the records: the seed, its cap and helpers.

    Attributes
    ----------
    kind : str
        The name of the kind being built.
    seed : int
        The seed of :func:`build_probes`; every random choice derives from it.
    cap : int or None
        At most this many probes of the kind (``per_kind``); apply it with :meth:`select`.
    rewriter : callable or None
        The ``rewriter`` given to :func:`build_probes` (LENGTH uses it).
    skipped : list of dict
        Records the kind could not use, added with :meth:`skip`.
    """

    kind: str
    seed: int
    cap: int | None = None
    rewriter: Callable[[str, str], str] | None = None
    skipped: list = field(default_factory=list)

    def skip(self, record_id: str | None, reason: str) -> None:
        """Record that a record (or, with ``record_id`` None, the whole kind) was skipped."""
        self.skipped.append({"bias_type": self.kind, "record_id": record_id, "reason": reason})

    def select(self, records: Sequence) -> list:
        """At most :attr:`cap` records, chosen by a content hash of (kind, seed, record id),
        kept in their order. Anything with an ``id`` attribute can be selected."""
        if self.cap is None or self.cap >= len(records):
            return list(records)
        keyed = sorted(range(len(records)), key=lambda i: content_seed(
            "probe-select", self.kind, self.seed, records[i].id))
        keep = set(keyed[:self.cap])
        return [r for i, r in enumerate(records) if i in keep]

    def swaps(self, n: int, key: str | None = None) -> np.ndarray:
        """Balanced, seeded slot swaps for ``n`` probes: half swapped (the odd one drawn at
        random), drawn from a hash of ``key`` (the kind's name by default) and the seed."""
        rng = np.random.default_rng(content_seed("probe-slots", key or self.kind, self.seed))
        flags = np.arange(n) % 2 == 1
        if n % 2 and rng.random() < 0.5:
            flags = ~flags
        return rng.permutation(flags)


@dataclass
class ScoreContext:
    """What a kind's scoring rule may use besides the rows of its probes.

    Attributes
    ----------
    judge_family : str or None
        The judge's own source name (MODEL_ORIGIN self-preference).
    per_call : bool
        The verdicts are per call with the order shown, so ``shown_first`` is known.
    from_strategy : bool
        The verdicts are one aggregate per probe from a judging strategy (a ``strategy``
        column), so the order shown is unknown.
    warnings : list of str
        Messages for a :class:`ProbeWarning`, added with :meth:`warn`; :func:`score_probes`
        emits them.
    """

    judge_family: str | None = None
    per_call: bool = False
    from_strategy: bool = False
    warnings: list = field(default_factory=list)

    def warn(self, message: str) -> None:
        self.warnings.append(message)


@dataclass(frozen=True)
class ScoreGroup:
    """Rows scored together as one line of the score table.

    Attributes
    ----------
    label : str
        The ``bias_type`` column of the score table (``"STYLE (position-averaged)"``).
    target : str
        What counts as positive, for a reader (``"the longer answer"``).
    rows : pandas.DataFrame
        One row per verdict (or per missing probe) with ``winner`` in the probe's frame
        (None: no verdict for the probe; ``""``: abstention or invalid output), ``target``
        (``a`` or ``b`` for that verdict) and ``cluster`` (rows resampled together).
    accuracy : bool
        Report ``accuracy`` (the share choosing the target), for kinds whose expected
        verdict is the target.
    """

    label: str
    target: str
    rows: pd.DataFrame
    accuracy: bool = False


@dataclass(frozen=True)
class ProbeKind:
    """A kind of controlled probe: its bias types, its builder and its target rule.

    Parameters
    ----------
    name : str
        Upper-case name (``A-Z``, digits, ``_``), what ``kinds=`` asks for; probe ids are
        ``f"{bias_type}-{n}"``.
    build : callable
        ``build(records, context) -> sequence of Probe``: ``records`` are all
        :class:`AnswerRecord`; ``context`` is a :class:`BuildContext` (apply ``context.cap``
        with ``context.select``, draw slots with ``context.swaps``, report unusable records
        with ``context.skip``). Must be deterministic for a seed.
    bias_types : tuple of str, optional
        The ``bias_type`` values its probes carry, in table order; ``(name,)`` by default.
        STYLE builds ``("STYLE", "STYLE_BA")``.
    definition : str
        What the kind measures, in a sentence (a discovered factor's definition).
    target : str
        What counts as positive, for a reader (``"the longer answer"``); used by the default
        target rule.
    expected : {"tie", "target"}
        Whether an unbiased judge ties or picks the target (a correctness control such as
        TRUNCATION, which then reports ``accuracy``).
    score : callable, optional
        ``score(rows, context) -> list of ScoreGroup``: how the target side of each verdict
        is determined. ``rows`` hold the probe columns plus ``winner`` (probe frame),
        ``shown_first`` (``a``/``b``, the side the judge saw first, None when unknown) and
        ``cluster``; ``context`` is a :class:`ScoreContext`. By default the probe's
        ``target`` column is the target and there is one group per bias type.
    needs_target : bool
        Whether its probes must carry ``target`` a or b (False when ``score`` works the
        target out, as MODEL_ORIGIN does from the sources).

    Examples
    --------
    >>> kind = ProbeKind("ECHO", lambda records, context: [], target="the echoed answer")
    >>> kind.bias_types, kind.expected
    (('ECHO',), 'tie')
    """

    name: str
    build: Callable[[Sequence[AnswerRecord], BuildContext], Sequence[Probe]]
    bias_types: tuple = ()
    definition: str = ""
    target: str = "the target side"
    expected: str = "tie"
    score: Callable[[pd.DataFrame, ScoreContext], list] | None = None
    needs_target: bool = True

    def __post_init__(self):
        if not isinstance(self.name, str) or not _NAME.match(self.name):
            raise FairjudgeInputError(
                f"`name` must be upper-case letters, digits and _ starting with "
                f"a letter (it becomes the probe ids' prefix); got {self.name!r}")
        if not callable(self.build):
            raise TypeError(f"kind {self.name}: `build` must be a callable build(records, "
                            f"context); got {type(self.build).__name__}")
        types = tuple(self.bias_types) or (self.name,)
        bad = next((t for t in types if not isinstance(t, str) or not _NAME.match(t)), None)
        if bad is not None or len(set(types)) != len(types):
            raise FairjudgeInputError(f"kind {self.name}: `bias_types` must be distinct upper-case "
                                      f"names; got {self.bias_types!r}")
        object.__setattr__(self, "bias_types", types)
        if self.expected not in ("tie", "target"):
            raise FairjudgeInputError(f"kind {self.name}: `expected` must be tie or target; got "
                                      f"{self.expected!r}")
        if self.score is not None and not callable(self.score):
            raise TypeError(f"kind {self.name}: `score` must be a callable score(rows, "
                            f"context) or None; got {type(self.score).__name__}")

    def score_groups(self, rows: pd.DataFrame, context: ScoreContext) -> list[ScoreGroup]:
        """The groups to score for this kind's rows (its ``score`` rule, or the default:
        the ``target`` column, one group per bias type)."""
        if self.score is not None:
            return list(self.score(rows, context))
        return [ScoreGroup(bias_type, self.target, part, self.expected == "target")
                for bias_type in self.bias_types
                if len(part := rows[rows["bias_type"] == bias_type])]


_REGISTRY: dict[str, ProbeKind] = {}


def register_probe_kind(kind: ProbeKind, *, replace: bool = False) -> ProbeKind:
    """Add a probe kind to the registry that :func:`build_probes` and :func:`score_probes`
    iterate (after the kinds registered before it).

    Parameters
    ----------
    kind : ProbeKind
    replace : bool
        Replace a registered kind of the same name (keeping its place) instead of failing.

    Returns
    -------
    ProbeKind
        ``kind``, so a module can write ``MY_KIND = register_probe_kind(ProbeKind(...))``.

    Raises
    ------
    ValueError
        If the name is taken (and ``replace`` is false) or one of its bias types belongs to
        another kind.
    """
    if not isinstance(kind, ProbeKind):
        raise TypeError(f"`kind` must be a ProbeKind; got {type(kind).__name__}")
    if kind.name in _REGISTRY and not replace:
        raise FairjudgeInputError(f"a probe kind named {kind.name} is already registered; pass "
                                  "replace=True to replace it or choose another name")
    for other in _REGISTRY.values():
        clash = set(other.bias_types) & set(kind.bias_types)
        if other.name != kind.name and clash:
            raise FairjudgeInputError(
                f"kind {kind.name}: bias type {sorted(clash)[0]} already belongs "
                f"to kind {other.name}")
    _REGISTRY[kind.name] = kind
    return kind


def unregister_probe_kind(name: str) -> ProbeKind:
    """Remove a kind from the registry and return it.

    Raises
    ------
    ValueError
        If no kind of that name is registered (the message lists the registered kinds).
    """
    kind = get_probe_kind(name)
    del _REGISTRY[kind.name]
    return kind


def get_probe_kind(name: str) -> ProbeKind:
    """The registered kind called ``name`` (case-insensitive).

    Raises
    ------
    ValueError
        If there is none; the message lists the registered kinds.

    Examples
    --------
    >>> get_probe_kind("length").bias_types
    ('LENGTH',)
    """
    key = str(name).strip().upper()
    if key not in _REGISTRY:
        raise FairjudgeInputError(
            f"no probe kind named {name!r}; registered kinds: "
            f"{', '.join(_REGISTRY) or 'none'} (add one with register_probe_kind)")
    return _REGISTRY[key]


def probe_kinds() -> tuple[ProbeKind, ...]:
    """The registered kinds, in registration order (the built-in kinds first)."""
    return tuple(_REGISTRY.values())


def kind_of_bias_type(bias_type: str) -> ProbeKind | None:
    """The registered kind whose probes carry ``bias_type``, or None."""
    return next((k for k in _REGISTRY.values() if bias_type in k.bias_types), None)
