"""Building a probe table from answers: every requested kind of the registry in turn."""

from __future__ import annotations

import warnings
from collections.abc import Callable, Mapping, Sequence

import numpy as np
import pandas as pd

from fairjudge._util._warnings import FairjudgeInputError
from fairjudge.data._schema import is_missing as _missing
from fairjudge.probes._registry import (
    EXPECTED_VERDICTS,
    AnswerRecord,
    BuildContext,
    Probe,
    ProbeKind,
    ProbeWarning,
    kind_of_bias_type,
    probe_kinds,
)

#: Columns of the probe table, in order.
PROBE_COLUMNS = ("id", "bias_type", "question", "a", "b", "expected_verdict", "target",
                 "source_a", "source_b", "construction_notes", "record_id")
#: Record columns naming a question's topic or category, in order of preference; a probe
#: table built from such records gets an extra ``category`` column after PROBE_COLUMNS.
CATEGORY_FIELDS = ("category", "topic")


def answer_records(records) -> list[AnswerRecord]:
    """Validate answers given as a table or a list of dicts and return them as records.

    Parameters
    ----------
    records : pandas.DataFrame or list of dict
        ``question`` and ``answer`` (non-empty strings; surrounding whitespace is removed),
        optional ``source``, ``id`` (unique; the row position otherwise) and ``category``
        (or ``topic``): the question's topic, kept for per-category analyses.

    Returns
    -------
    list of AnswerRecord

    Raises
    ------
    TypeError
        If ``records`` is not a table or a list of dicts.
    FairjudgeInputError
        Naming the record and field that breaks a rule.
    """
    where = _record_names(records)
    if isinstance(records, pd.DataFrame):
        rows = records.to_dict("records")
    elif isinstance(records, (list, tuple)):
        rows = list(records)
        bad = next((i for i, r in enumerate(rows) if not isinstance(r, Mapping)), None)
        if bad is not None:
            raise TypeError(f"`records` must hold dicts; record {bad} is "
                            f"{type(rows[bad]).__name__}")
    else:
        raise TypeError(f"`records` must be a pandas DataFrame or a list of dicts; got "
                        f"{type(records).__name__}")
    if not rows:
        raise FairjudgeInputError("`records` is empty; give at least one record with a "
                                  "question and an answer")
    has_ids = any("id" in r for r in rows)
    out, seen = [], {}
    for position, row in enumerate(rows):
        for field in ("question", "answer"):
            value = row.get(field)
            if _missing(value) or not isinstance(value, str) or not value.strip():
                raise FairjudgeInputError(
                    f"{where(position)}: field `{field}` must be a non-empty "
                    f"string; got {value!r}")
        if has_ids:
            if _missing(row.get("id")) or not str(row.get("id")).strip():
                raise FairjudgeInputError(
                    f"{where(position)}: field `id` is missing; give every record "
                    "an id or none")
            rid = str(row["id"]).strip()
        else:
            rid = str(position)
        if rid in seen:
            raise FairjudgeInputError(f"{where(seen[rid], position)} share the id {rid!r}; "
                                      "ids must be unique")
        seen[rid] = position
        source = row.get("source")
        source = None if _missing(source) or not str(source).strip() else str(source).strip()
        out.append(AnswerRecord(rid, row["question"].strip(), row["answer"].strip(), source,
                                _category(row)))
    return out


def _category(row: Mapping) -> str | None:
    """The record's topic: its first non-empty CATEGORY_FIELDS value, or None."""
    for field in CATEGORY_FIELDS:
        value = row.get(field)
        if not _missing(value) and str(value).strip():
            return str(value).strip()
    return None


def _probe_categories(probes: list[dict], records: list[AnswerRecord]) -> list[str | None]:
    """The category of each built probe, from the record(s) it was built from.

    A probe's ``record_id`` is one record's id, or ``"<a's record>+<b's record>"`` for
    pairs of records (MODEL_ORIGIN); ids may themselves contain ``+``, so a pair is
    matched through its question instead: the category all records with that question
    share (None when they disagree or have none)."""
    by_id = {r.id: r.category for r in records}
    by_question: dict[str, set] = {}
    for r in records:
        by_question.setdefault(r.question, set()).add(r.category)
    out = []
    for probe in probes:
        if probe["record_id"] in by_id:
            out.append(by_id[probe["record_id"]])
            continue
        shared = by_question.get(probe["question"], set())
        out.append(next(iter(shared)) if len(shared) == 1 else None)
    return out


def _record_names(records) -> Callable[..., str]:
    """How errors name records: ``answers.jsonl line 7`` for a table read from a file (its
    index holds the line numbers), "`records` record 6" (counted from 0) otherwise."""
    attrs = records.attrs if isinstance(records, pd.DataFrame) else {}
    if "source" not in attrs:
        def name(*positions):
            noun = "record" if len(positions) == 1 else "records"
            return f"`records` {noun} {' and '.join(map(str, positions))}"
        return name
    unit = attrs.get("location", "row")

    def name(*positions):
        labels = " and ".join(str(records.index[p]) for p in positions)
        return f"{attrs['source']} {unit}{'s' if len(positions) > 1 else ''} {labels}"
    return name


def _check_build_args(kinds, seed, rewriter, per_kind) -> tuple[list[ProbeKind], dict]:
    if isinstance(seed, bool) or not isinstance(seed, (int, np.integer)) or seed < 0:
        raise FairjudgeInputError(f"`seed` must be a non-negative integer; got {seed!r}")
    if rewriter is not None and not callable(rewriter):
        raise TypeError(f"`rewriter` must be a callable rewriter(question, answer) -> str or "
                        f"None; got {type(rewriter).__name__}")
    registered = probe_kinds()
    names = ", ".join(k.name for k in registered)
    if kinds is None:
        kinds = [k.name for k in registered]
    if isinstance(kinds, str):
        kinds = (kinds,)
    if not isinstance(kinds, (list, tuple)) or not kinds:
        raise FairjudgeInputError(f"`kinds` must be a non-empty list of registered probe kinds "
                                  f"({names}); got {kinds!r}")
    chosen = []
    for kind in kinds:
        name = str(kind).strip().upper()
        known = next((k for k in registered if k.name == name), None)
        if known is None:
            owner = kind_of_bias_type(name)
            if owner is not None:
                raise FairjudgeInputError(f"`kinds` names {name}; it is built by kind {owner.name} "
                                          f"(with {', '.join(owner.bias_types)}), so ask for "
                                          f"{owner.name}")
            raise FairjudgeInputError(f"`kinds` must be chosen from the registered probe kinds "
                                      f"{names} (add one with register_probe_kind); got {kind!r}")
        if known not in chosen:
            chosen.append(known)
    caps: dict[str, int | None] = {k.name: None for k in chosen}
    if per_kind is not None:
        if isinstance(per_kind, Mapping):
            entries = {str(k).upper(): v for k, v in per_kind.items()}
            unknown = [k for k in entries if k not in caps]
            if unknown:
                raise FairjudgeInputError(
                    f"`per_kind` names {unknown[0]!r}, which is not among the "
                    f"requested kinds {', '.join(caps)}")
        else:
            entries = {k: per_kind for k in caps}
        for kind, cap in entries.items():
            if isinstance(cap, bool) or not isinstance(cap, (int, np.integer)) or cap < 1:
                raise FairjudgeInputError(f"`per_kind` must be a positive integer (or a mapping of "
                                          f"kind to one); got {cap!r} for {kind}")
            caps[kind] = int(cap)
    ordered = [k for k in registered if k in chosen]  # table order is registration order
    return ordered, caps


def _check_probe(kind: ProbeKind, probe) -> None:
    """A kind's builder is user code for kinds from data: check what it returns."""
    if not isinstance(probe, Probe):
        raise TypeError(f"kind {kind.name}: `build` must return Probe objects; got "
                        f"{type(probe).__name__}")
    if probe.bias_type not in kind.bias_types:
        raise FairjudgeInputError(f"kind {kind.name}: `build` returned a probe with bias_type "
                                  f"{probe.bias_type!r}, not one of its bias_types "
                                  f"{', '.join(kind.bias_types)}")
    if probe.expected_verdict not in EXPECTED_VERDICTS:
        raise FairjudgeInputError(f"kind {kind.name}: `expected_verdict` must be a, b or tie; got "
                                  f"{probe.expected_verdict!r}")
    if probe.target not in ("a", "b") and (kind.needs_target or probe.target is not None):
        raise FairjudgeInputError(
            f"kind {kind.name}: `target` must be a or b; got {probe.target!r}")


def build_probes(records, *, seed: int = 0, kinds: Sequence[str] | None = None,
                 rewriter: Callable[[str, str], str] | None = None,
                 per_kind: int | Mapping[str, int] | None = None) -> pd.DataFrame:
    """Build controlled bias-probe pairs from answers [debiasing-strategies-study App. A].

    Every requested kind of the registry (:func:`probe_kinds`, in registration order)
    builds its pairs from all the records. The built-in kinds:

    * POSITION: the answer in both slots; expected tie; target slot a.
    * STYLE: markdown in slot a, prose in slot b, expected tie, target the markdown side.
      A prose answer (``markdown == 0`` in :func:`fairjudge.data.text_features`) is kept
      as the prose side and :func:`prose_to_markdown` makes the markdown side; a markdown
      answer is kept as the markdown side and :func:`markdown_to_prose` makes the prose
      side. Both keep the multiset of :func:`content_words`. STYLE_BA (``STYLE_BA-n``
      mirrors ``STYLE-n``) swaps the slots.
    * LENGTH: the answer and an expansion of it; expected tie; target the side with more
      words (``str.split``). Without ``rewriter``, content-free clauses from
      ``ELABORATION_CLAUSES`` (in a seeded order) are appended round robin to the answer's
      sentences until the word count is closest to 2.5x (at least one clause); code blocks,
      headers, table rows and questions get none. With ``rewriter``, its output
      ``rewriter(question, answer)`` is the expansion. Which slot holds the expansion is
      seeded and balanced over the LENGTH probes.
    * TRUNCATION: the answer and its first k sentences (:func:`split_sentences`), the
      sentence boundary whose cumulative word count is closest to 40% of the words (ties to
      the shorter cut; at least one sentence kept and one dropped); expected and target the
      complete side, slots seeded and balanced. Answers with fewer than 3 sentences are
      skipped.
    * MODEL_ORIGIN: for every unordered pair of distinct sources (alphabetical), the two
      sources' answers to the same question (records grouped by exact question text, the
      j-th answer of one source paired with the j-th of the other); the source pairs take
      turns (round robin) and each source pair starts at a different question, so a
      ``per_kind`` cap spreads over source pairs and questions. Expected tie; ``target`` is
      empty and ``source_a``/``source_b`` name the sources; slots seeded and balanced per
      source pair. Skipped with fewer than two sources.

    Parameters
    ----------
    records : pandas.DataFrame or list of dict
        ``question`` and ``answer`` (non-empty strings; surrounding whitespace is removed),
        optional ``source`` (the model that wrote the answer), ``id`` (unique; the row
        position otherwise) and ``category`` (or ``topic``; e.g. an MT-Bench category).
    seed : int
        Fixes every random choice (slots, clause order, which records a cap keeps). The same
        records and seed give byte-identical output.
    kinds : sequence of str, optional
        Names of registered kinds (``POSITION``, ``STYLE``, ``LENGTH``, ``TRUNCATION``,
        ``MODEL_ORIGIN`` and any added with :func:`register_probe_kind`); all registered
        kinds by default.
    rewriter : callable, optional
        ``rewriter(question, answer) -> str`` making LENGTH expansions (e.g. an LLM).
    per_kind : int or mapping, optional
        At most this many probes of each kind (STYLE_BA follows STYLE), or a mapping of kind
        to cap; records are chosen by a seeded hash.

    Returns
    -------
    pandas.DataFrame
        One row per probe with columns ``id`` (``f"{bias_type}-{n}"``), ``bias_type``,
        ``question``, ``a``, ``b`` (the pair's own a/b frame), ``expected_verdict`` (``tie``,
        ``a`` or ``b``), ``target`` (``a`` or ``b``, the side a positive bias prefers; None
        for MODEL_ORIGIN), ``source_a``, ``source_b`` (MODEL_ORIGIN only, else None),
        ``construction_notes`` and ``record_id`` (``"<a's record>+<b's record>"`` for
        MODEL_ORIGIN), and ``category`` when any record has one (the source record's
        ``category``/``topic``; for a MODEL_ORIGIN pair the category its question's records
        share, else None). ``attrs`` hold ``seed`` and ``skipped``: one dict (``bias_type``,
        ``record_id``, ``reason``) per record a kind could not use.

    Raises
    ------
    ValueError
        If ``records``, ``kinds``, ``seed`` or ``per_kind`` break their rules (the message
        names the argument; an unknown kind lists the registered ones), or ``rewriter``
        returns something other than a non-empty string.
    TypeError
        If ``records`` is not a table or list of dicts, or ``rewriter`` is not callable.

    Warns
    -----
    ProbeWarning
        When a kind skips records (fewer than 3 sentences, fewer than two sources ...).

    Examples
    --------
    >>> recs = [{"question": "Why water plants?", "answer": "Roots take up water. Leaves "
    ...          "lose it through pores. Without water, cells wilt."}]
    >>> probes = build_probes(recs, kinds=["POSITION", "STYLE", "TRUNCATION"])
    >>> probes[["id", "expected_verdict", "target"]].values.tolist()
    [['POSITION-0', 'tie', 'a'], ['STYLE-0', 'tie', 'a'], ['STYLE_BA-0', 'tie', 'b'], \
['TRUNCATION-0', 'b', 'b']]
    >>> print(probes.loc[1, "a"])
    - **Roots take** up water.
    - **Leaves lose** it through pores.
    - **Without water**, cells wilt.
    """
    chosen, caps = _check_build_args(kinds, seed, rewriter, per_kind)
    recs = answer_records(records)
    seed = int(seed)
    rows: list[dict] = []
    skipped: list[dict] = []
    for kind in chosen:
        context = BuildContext(kind.name, seed, caps[kind.name], rewriter, skipped)
        numbers = dict.fromkeys(kind.bias_types, 0)
        for probe in kind.build(recs, context):
            _check_probe(kind, probe)
            n = numbers[probe.bias_type]
            numbers[probe.bias_type] += 1
            rows.append({"id": f"{probe.bias_type}-{n}", "bias_type": probe.bias_type,
                         "question": probe.question, "a": probe.a, "b": probe.b,
                         "expected_verdict": probe.expected_verdict, "target": probe.target,
                         "source_a": probe.source_a, "source_b": probe.source_b,
                         "construction_notes": probe.construction_notes,
                         "record_id": probe.record_id})
    frame = pd.DataFrame(rows, columns=list(PROBE_COLUMNS))
    for column in ("target", "source_a", "source_b"):  # empty is None, not NaN
        frame[column] = pd.Series([r[column] for r in rows], index=frame.index, dtype=object)
    if any(r.category is not None for r in recs):
        frame["category"] = pd.Series(_probe_categories(rows, recs), index=frame.index,
                                      dtype=object)
    frame.attrs["seed"] = seed
    frame.attrs["skipped"] = skipped
    if skipped:
        _warn_skipped(skipped)
    return frame


def _warn_skipped(skipped: list[dict]) -> None:
    parts = []
    for kind in dict.fromkeys(s["bias_type"] for s in skipped):
        mine = [s for s in skipped if s["bias_type"] == kind]
        reasons = list(dict.fromkeys(s["reason"] for s in mine))
        why = reasons[0] + ("; ..." if len(reasons) > 1 else "")
        if mine[0]["record_id"] is None:  # the whole kind could not be built
            parts.append(f"{kind}: none built ({why})")
        else:
            parts.append(f"{kind}: {len(mine)} record(s) skipped ({why})")
    warnings.warn(f"some probes could not be built: {'; '.join(parts)}; see "
                  "probes.attrs['skipped']", ProbeWarning, stacklevel=3)
