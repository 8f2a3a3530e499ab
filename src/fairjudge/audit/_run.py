"""The audit workflow: recorded verdicts, or a live judge run on pairs and probes."""

from __future__ import annotations

from dataclasses import dataclass, field

import pandas as pd

from fairjudge._util._errors import RunIncomplete, SpendCapReached
from fairjudge._util._warnings import FairjudgeInputError
from fairjudge.audit._audit import JudgeAudit, audit_verdicts
from fairjudge.audit._self import model_family
from fairjudge.data._io import load_verdicts
from fairjudge.data._pairs import load_pairs


@dataclass(frozen=True)
class AuditRun:
    """Everything :func:`audit_judge` measured.

    Attributes
    ----------
    audits : dict of str -> JudgeAudit
        Per judge, the metrics its non-probe verdicts allow.
    probe_scores : dict of str -> fairjudge.probes.ProbeScores
        Per judge, its scores on the probes (empty without probes).
    calls : pandas.DataFrame
        Every verdict behind the audit (recorded, or the calls of a live run), one row per
        call as shown.
    report : fairjudge.judges.RunReport or None
        Calls, cache hits and money of a live run.
    incomplete : list of str
        Pairs and probes of a live run left without every requested call (failed calls, or
        the spend cap): the metrics describe the rest.
    """

    audits: dict
    probe_scores: dict
    calls: pd.DataFrame
    report: object = None
    incomplete: list = field(default_factory=list)

    @property
    def stopped_by_cap(self) -> bool:
        return bool(self.report is not None and self.report.stopped_by_cap)

    def probe_table(self) -> pd.DataFrame | None:
        """Every judge's probe scores in one table (a ``judge`` column first), or None."""
        frames = []
        for judge, scores in self.probe_scores.items():
            table = scores.to_frame()
            table.insert(0, "judge", judge)
            frames.append(table)
        return pd.concat(frames, ignore_index=True) if frames else None

    def to_dict(self) -> dict:
        """Per judge its audit, and ``probes`` (per judge) when probes were scored."""
        payload: dict = {judge: a.to_dict() for judge, a in self.audits.items()}
        if self.probe_scores:
            payload["probes"] = {judge: s.to_dict() for judge, s in self.probe_scores.items()}
        if self.report is not None:
            payload["run"] = self.report.as_dict()
            payload["incomplete"] = list(self.incomplete)
        return payload


def audit_judge(*, verdicts=None, backends=None, pairs=None, probes=None, items=None,
                gold=None, strategy: str = "B0", pair_strategy: str = "S1", cache=None,
                options=None, settings=None, families: dict | None = None, seed: int = 0,
                level: float = 0.95, n_boot: int = 2000) -> AuditRun:
    """Audit judges from their recorded verdicts, or by running them on pairs and probes.

    Parameters
    ----------
    verdicts : path or pandas.DataFrame, optional
        Recorded verdicts (a verdict table). Rows whose ``pair_id`` is a probe's ``id`` are
        scored as probes (they need ``pair_id`` and ``order``); the rest feed the metrics.
    backends : list of JudgeBackend, optional
        Live judges (instead of ``verdicts``); each is audited on its own.
    pairs : path or pandas.DataFrame, optional
        With ``backends``: pairs to judge in both orders (``pair_strategy``, default S1) for
        the position metrics, accuracy and covariate bias.
    probes : pandas.DataFrame, optional
        Probe pairs from :func:`fairjudge.probes.build_probes`, judged with ``strategy``.
    items : pandas.DataFrame, optional
        Validated item table (``text`` or length/markdown columns, ``source``, ``quality``).
    gold : pandas.DataFrame, optional
        Gold labels (:func:`fairjudge.audit.load_gold`).
    cache, options, settings
        How live calls are made (:mod:`fairjudge.judges`); every call is cached.
    families : dict, optional
        Model-family fragments (judge and answer authors) for self-preference and for
        MODEL_ORIGIN probes.
    seed : int
        Presentation orders and bootstraps.

    Returns
    -------
    AuditRun

    Raises
    ------
    FairjudgeInputError
        If neither or both of ``verdicts`` and ``backends`` are given, if a live audit has
        nothing to judge, or if recorded probe verdicts lack ``pair_id``/``order``.
    """
    from fairjudge.probes import score_probes

    if (verdicts is None) == (backends is None):
        raise FairjudgeInputError("audit recorded verdicts or live judge backends (one of "
                                  "the two)")
    probe_ids = set() if probes is None else set(probes["id"].astype(str))
    report, incomplete = None, []
    if verdicts is not None:
        table = load_verdicts(verdicts)
        if probe_ids and not {"pair_id", "order"} <= set(table.columns):
            raise FairjudgeInputError(
                f"{table.attrs.get('source', 'verdicts')} has no `pair_id` and `order` "
                "columns, so its verdicts cannot be matched to the probes; judge the probes "
                "with `fairjudge judge` (which writes them) or drop the probes")
    else:
        table, report, incomplete = _judge_live(
            backends, pairs=pairs, probes=probes, items=items, strategy=strategy,
            pair_strategy=pair_strategy, cache=cache, options=options, settings=settings,
            seed=seed)
    is_probe = (table["pair_id"].astype(str).isin(probe_ids).to_numpy()
                if probe_ids and "pair_id" in table.columns
                else pd.Series(False, index=table.index).to_numpy())
    metric_verdicts = table[~is_probe]
    audits: dict[str, JudgeAudit] = {}
    if len(metric_verdicts):
        audits = audit_verdicts(metric_verdicts, items=items, gold=gold, families=families,
                                level=level, n_boot=n_boot, rng=seed)
    probe_scores = {}
    for judge, calls in table[is_probe].groupby("judge", sort=True):
        probe_scores[str(judge)] = score_probes(
            probes, calls, judge_family=model_family(str(judge), families), level=level,
            n_boot=n_boot, rng=seed)
    return AuditRun(audits, probe_scores, table, report, incomplete)


def _judge_live(backends, *, pairs, probes, items, strategy, pair_strategy, cache, options,
                settings, seed):
    from fairjudge.judges import GenerationSettings, RunOptions, RunReport
    from fairjudge.strategies import judge_pairs

    if pairs is None and probes is None:
        raise FairjudgeInputError("a live audit needs pairs and/or probes to judge")
    options = options if options is not None else RunOptions(progress=False, seed=seed)
    settings = settings if settings is not None else GenerationSettings()
    report = RunReport()
    pair_table = None if pairs is None else load_pairs(pairs, items=items)
    probe_pairs = None if probes is None else load_pairs(probes[["id", "question", "a", "b"]])
    frames, incomplete = [], []
    for backend in backends:  # each judge is audited on its own
        for table, chosen in ((pair_table, pair_strategy), (probe_pairs, strategy)):
            if table is not None:
                result = judge_pairs(table, chosen, [backend], cache=cache, options=options,
                                     settings=settings, seed=seed, report=report)
                frames.append(result.calls)
                incomplete += [str(p) for p in result.incomplete]
    calls = pd.concat(frames, ignore_index=True)
    if calls.empty:
        error = SpendCapReached if report.stopped_by_cap else RunIncomplete
        reasons = "; ".join(report.errors[:3])
        raise error(f"the audit got no verdict from the judge ({report.summary()})"
                    + (f"; first errors: {reasons}" if reasons else ""))
    return load_verdicts(calls), report, incomplete
