"""A durable SQLite verdict cache shared safely by several processes."""

from __future__ import annotations

import hashlib
import json
import os
import sqlite3
import threading
import time
from pathlib import Path

from fairjudge.data._schema import Outcome
from fairjudge.judges._types import JudgeRequest, Usage, Verdict

_SCHEMA = """
CREATE TABLE IF NOT EXISTS verdicts (
    key TEXT PRIMARY KEY,
    backend TEXT NOT NULL,
    model TEXT NOT NULL,
    template TEXT NOT NULL,
    template_version TEXT NOT NULL,
    kind TEXT NOT NULL,
    raw TEXT,
    outcome TEXT NOT NULL,
    detail TEXT,
    probabilities TEXT,
    input_tokens INTEGER,
    output_tokens INTEGER,
    reasoning_tokens INTEGER,
    latency REAL,
    created REAL NOT NULL,
    request TEXT
)
"""


def canonical_json(value) -> str:
    """Deterministic JSON: sorted keys, no whitespace, UTF-8 kept."""
    return json.dumps(value, sort_keys=True, separators=(",", ":"), ensure_ascii=False)


def request_payload(identity: dict, request: JudgeRequest) -> dict:
    """Everything that changes a judge's output (and nothing secret)."""
    return {
        "backend": identity,
        "messages": [[m.role, m.content] for m in request.messages],
        "settings": request.settings.as_dict(),
        "template": request.template,
        "template_version": request.template_version,
        "sample": request.sample,
        "kind": request.kind,
    }


def cache_key(identity: dict, request: JudgeRequest) -> str:
    """sha256 of the canonical JSON of :func:`request_payload`.

    ``identity`` comes from the backend (its name, model and any setting that changes
    output); it never holds an API key, an endpoint URL or other credentials.
    """
    return hashlib.sha256(canonical_json(request_payload(identity, request)).encode()).hexdigest()


class VerdictCache:
    """Verdicts keyed by :func:`cache_key`, in an SQLite file in WAL mode.

    Every verdict is committed as soon as it arrives, so a crash or a kill loses at most the
    calls in flight. Several processes may read and write one file concurrently (WAL, a busy
    timeout, and ``INSERT OR IGNORE`` so the first stored answer for a key wins).

    Parameters
    ----------
    path : path-like
        The database file (created with its parent folder if missing).
    """

    def __init__(self, path: str | os.PathLike):
        self.path = Path(path)
        self.path.parent.mkdir(parents=True, exist_ok=True)
        self._lock = threading.Lock()
        self._conn = sqlite3.connect(self.path, timeout=60.0, check_same_thread=False,
                                     isolation_level=None)
        self._conn.execute("PRAGMA journal_mode=WAL")
        self._conn.execute("PRAGMA synchronous=NORMAL")
        self._conn.execute("PRAGMA busy_timeout=60000")
        self._conn.execute(_SCHEMA)

    def close(self) -> None:
        with self._lock:
            self._conn.close()

    def __enter__(self):
        return self

    def __exit__(self, *exc):
        self.close()

    def get_many(self, keys) -> dict[str, Verdict]:
        """Cached verdicts for the given keys (missing keys are absent from the result)."""
        keys = list(dict.fromkeys(keys))
        found: dict[str, Verdict] = {}
        with self._lock:
            for start in range(0, len(keys), 500):
                chunk = keys[start:start + 500]
                rows = self._conn.execute(
                    "SELECT key, outcome, raw, detail, probabilities, input_tokens, "
                    "output_tokens, reasoning_tokens, latency FROM verdicts WHERE key IN "
                    f"({','.join('?' * len(chunk))})", chunk).fetchall()
                for key, outcome, raw, detail, probs, t_in, t_out, t_reason, latency in rows:
                    found[key] = Verdict(
                        key=key, outcome=Outcome(outcome), raw=raw or "",
                        probabilities=json.loads(probs) if probs else None,
                        usage=Usage(t_in or 0, t_out or 0, t_reason or 0),
                        latency=latency or 0.0, cached=True, detail=detail or "")
        return found

    def put(self, verdict: Verdict, *, identity: dict, request: JudgeRequest) -> None:
        """Store one verdict durably (committed before returning)."""
        with self._lock:
            self._conn.execute(
                "INSERT OR IGNORE INTO verdicts VALUES (?,?,?,?,?,?,?,?,?,?,?,?,?,?,?,?)",
                (verdict.key, identity.get("backend", ""), identity.get("model", ""),
                 request.template, request.template_version, request.kind, verdict.raw,
                 verdict.outcome.value, verdict.detail,
                 json.dumps(verdict.probabilities) if verdict.probabilities else None,
                 verdict.usage.input_tokens, verdict.usage.output_tokens,
                 verdict.usage.reasoning_tokens, verdict.latency, time.time(),
                 canonical_json(request_payload(identity, request))))

    def stats(self) -> dict:
        """Counts by backend/model and outcome, token totals and the file size."""
        with self._lock:
            total = self._conn.execute("SELECT COUNT(*) FROM verdicts").fetchone()[0]
            by_model = self._conn.execute(
                "SELECT backend, model, COUNT(*), SUM(input_tokens), SUM(output_tokens) "
                "FROM verdicts GROUP BY backend, model ORDER BY backend, model").fetchall()
            by_outcome = dict(self._conn.execute(
                "SELECT outcome, COUNT(*) FROM verdicts GROUP BY outcome").fetchall())
        return {
            "path": str(self.path),
            "entries": total,
            "bytes": self.path.stat().st_size if self.path.exists() else 0,
            "by_model": [{"backend": b, "model": m, "entries": n, "input_tokens": i or 0,
                          "output_tokens": o or 0} for b, m, n, i, o in by_model],
            "by_outcome": by_outcome,
        }

    def export(self, path: str | os.PathLike) -> int:
        """Write every entry as JSONL (request, raw output, outcome, usage); returns the count."""
        count = 0
        with self._lock:
            rows = self._conn.execute(
                "SELECT key, backend, model, template, template_version, kind, raw, outcome, "
                "detail, probabilities, input_tokens, output_tokens, reasoning_tokens, latency, "
                "created, request FROM verdicts ORDER BY created").fetchall()
        names = ("key", "backend", "model", "template", "template_version", "kind", "raw",
                 "outcome", "detail", "probabilities", "input_tokens", "output_tokens",
                 "reasoning_tokens", "latency", "created", "request")
        with open(path, "w", encoding="utf-8") as handle:
            for row in rows:
                record = dict(zip(names, row))
                for field in ("probabilities", "request"):
                    if record[field]:
                        record[field] = json.loads(record[field])
                handle.write(json.dumps(record, ensure_ascii=False) + "\n")
                count += 1
        return count

    def clear(self, *, backend: str | None = None, model: str | None = None) -> int:
        """Delete entries (all, or those of one backend and/or model); returns the count."""
        clauses, args = [], []
        if backend:
            clauses.append("backend = ?")
            args.append(backend)
        if model:
            clauses.append("model = ?")
            args.append(model)
        where = f" WHERE {' AND '.join(clauses)}" if clauses else ""
        with self._lock:
            cursor = self._conn.execute(f"DELETE FROM verdicts{where}", args)
            self._conn.execute("VACUUM")
        return cursor.rowcount
