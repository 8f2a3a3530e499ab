"""A durable SQLite cache of raw completions, shared safely by several processes.

The cache stores what a provider returned (text, log-probabilities, usage, finish reason,
latency), never a parsed verdict: parsers run afterwards and carry a version, so a parser
fix applies to every cached call without paying again.

Key
---
``cache_key`` is the sha256 of the canonical JSON of everything that changes a judge's
output: the backend identity (name, model, output-changing settings and the **endpoint**,
normalised to scheme, host, port and path), the rendered messages, the generation settings,
the template and its version, the sample index and the request kind. It never holds an API
key. The endpoint is part of the key so that verdicts recorded against one server are never
served for another that happens to use the same model name; ``normalise_endpoint`` can drop
the port for local servers that restart on a new one, when asked to.

Migration
---------
Caches written before this format (one ``verdicts`` table keyed without the endpoint, with
parsed outcomes) are converted in place the first time they are opened: every row becomes a
completion with its original key and ``origin = 'legacy'``. A request that misses under its
new key is looked up under the key it would have had before (the same payload without the
endpoint); a legacy entry found that way is served, and re-keyed to the endpoint that asked
for it, so it is bound to one endpoint from then on and nobody pays again for what they have.
"""

from __future__ import annotations

import asyncio
import contextlib
import hashlib
import json
import math
import os
import socket
import sqlite3
import threading
import time
import uuid
import weakref
from pathlib import Path
from urllib.parse import urlsplit

from fairjudge._util._files import atomic_write
from fairjudge._util._warnings import FairjudgeInputError
from fairjudge.judges._types import Completion, JudgeRequest, Usage

SCHEMA_VERSION = "2"

_SCHEMA = """
CREATE TABLE IF NOT EXISTS completions (
    key TEXT PRIMARY KEY,
    backend TEXT NOT NULL,
    model TEXT NOT NULL,
    endpoint TEXT,
    template TEXT NOT NULL,
    template_version TEXT NOT NULL,
    kind TEXT NOT NULL,
    sample INTEGER NOT NULL,
    text TEXT,
    finish_reason TEXT,
    logprobs TEXT,
    label_probabilities TEXT,
    input_tokens INTEGER,
    output_tokens INTEGER,
    reasoning_tokens INTEGER,
    usage_reported INTEGER NOT NULL DEFAULT 1,
    latency REAL,
    created REAL NOT NULL,
    origin TEXT NOT NULL DEFAULT 'fresh',
    request TEXT,
    price_factor REAL NOT NULL DEFAULT 1
);
CREATE TABLE IF NOT EXISTS cache_meta (name TEXT PRIMARY KEY, value TEXT);
CREATE TABLE IF NOT EXISTS leases (
    key TEXT PRIMARY KEY,
    owner TEXT NOT NULL,
    expires REAL NOT NULL
);
CREATE TABLE IF NOT EXISTS spend (
    id INTEGER PRIMARY KEY,
    job TEXT,
    key TEXT NOT NULL,
    owner TEXT NOT NULL,
    dollars REAL NOT NULL,
    open INTEGER NOT NULL,
    created REAL NOT NULL
);
CREATE INDEX IF NOT EXISTS spend_by_key ON spend (key);
CREATE INDEX IF NOT EXISTS spend_by_job ON spend (job);
CREATE TABLE IF NOT EXISTS batches (
    token TEXT PRIMARY KEY,
    owner TEXT,
    api TEXT NOT NULL,
    scope TEXT NOT NULL,
    identity TEXT NOT NULL,
    remote_id TEXT,
    state TEXT NOT NULL,
    size INTEGER NOT NULL,
    note TEXT,
    created REAL NOT NULL,
    updated REAL NOT NULL
);
CREATE TABLE IF NOT EXISTS batch_requests (
    token TEXT NOT NULL,
    key TEXT NOT NULL,
    attempt INTEGER,
    request TEXT NOT NULL,
    PRIMARY KEY (token, key)
);
CREATE INDEX IF NOT EXISTS batch_requests_by_key ON batch_requests (key);
CREATE INDEX IF NOT EXISTS completions_legacy ON completions (origin) WHERE origin = 'legacy';
"""

#: States of a provider batch recorded in the cache. Open: ``submitting`` (recorded, its
#: submission under way or interrupted), ``submitted`` (the provider has it; ``remote_id``
#: is known), ``unknown`` (a submission was interrupted and the provider cannot be asked
#: whether it arrived). Closed: ``done`` (collected), ``failed`` (the provider rejected or
#: lost it; nothing was billed), ``forgotten`` (the user released its calls).
OPEN_BATCH_STATES = ("submitting", "submitted", "unknown")

#: Outcomes of :meth:`CompletionCache.claim`.
CLAIMED, DONE, BUSY, BATCHED = "claimed", "done", "busy", "batched"

_COLUMNS = ("key", "backend", "model", "endpoint", "template", "template_version", "kind",
            "sample", "text", "finish_reason", "logprobs", "label_probabilities",
            "input_tokens", "output_tokens", "reasoning_tokens", "usage_reported", "latency",
            "created", "origin", "request", "price_factor")
_READ = ("text, finish_reason, logprobs, label_probabilities, input_tokens, output_tokens, "
         "reasoning_tokens, usage_reported, latency, price_factor")
_DEFAULT_PORTS = {"http": 80, "https": 443}


#: One encoder for every key (``json.dumps`` with options builds a new encoder per call).
_CANONICAL = json.JSONEncoder(sort_keys=True, separators=(",", ":"), ensure_ascii=False)


def canonical_json(value) -> str:
    """Deterministic JSON: sorted keys, no whitespace, UTF-8 kept."""
    return _CANONICAL.encode(value)


def normalise_endpoint(url: str, *, keep_port: bool = True) -> str:
    """``scheme://host[:port]/path`` with the scheme and host lower-cased, a default port
    (80, 443) dropped, and no trailing slash, query or credentials.

    ``keep_port=False`` drops every port: for a local server that comes back on a new port,
    when the user says the answers are interchangeable.

    Examples
    --------
    >>> normalise_endpoint("HTTPS://API.OpenAI.com:443/v1/")
    'https://api.openai.com/v1'
    >>> normalise_endpoint("http://127.0.0.1:8123/v1", keep_port=False)
    'http://127.0.0.1/v1'
    """
    parts = urlsplit(url.strip())
    scheme = parts.scheme.lower()
    host = (parts.hostname or "").lower()
    try:
        port = parts.port
    except ValueError:
        port = None
    netloc = host
    if port is not None and keep_port and port != _DEFAULT_PORTS.get(scheme):
        netloc = f"{host}:{port}"
    return f"{scheme}://{netloc}{parts.path.rstrip('/')}"


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

    ``identity`` comes from the backend (its name, model, endpoint and any setting that
    changes output); it never holds an API key or other credentials.
    """
    return keyed_payload(identity, request)[0]


def keyed_payload(identity: dict, request: JudgeRequest) -> tuple[str, str]:
    """``(cache_key, canonical JSON of the payload)``: the key and the text the cache stores
    beside it, encoded once."""
    text = canonical_json(request_payload(identity, request))
    return hashlib.sha256(text.encode()).hexdigest(), text


def legacy_cache_key(identity: dict, request: JudgeRequest) -> str | None:
    """The key the request had before endpoints entered the key, or None if unchanged."""
    if "endpoint" not in identity:
        return None
    return cache_key({k: v for k, v in identity.items() if k != "endpoint"}, request)


def _loads(text):
    return json.loads(text) if text else None


def _completion(row) -> Completion:
    text, finish, logprobs, labels, t_in, t_out, t_reason, reported, latency, factor = row
    return Completion(text=text or "",
                      usage=Usage(t_in or 0, t_out or 0, t_reason or 0, bool(reported),
                                  1.0 if factor is None else float(factor)),
                      latency=latency or 0.0, finish_reason=finish, logprobs=_loads(logprobs),
                      label_probabilities=_loads(labels))


class CompletionCache:
    """Raw completions keyed by :func:`cache_key`, in an SQLite file in WAL mode.

    Completions are committed in groups: one commit per completion was a fifth of a fresh
    run's client time. A completion :meth:`put` inside an event loop is held in memory and
    committed with the next write transaction of this cache (a claim, a spend-ledger or
    batch change: each writes the held completions first, in the same transaction), by
    :meth:`flush`, by :meth:`close`, when the cache is collected or the interpreter exits,
    and at the latest ``commit_interval`` seconds after it was put (a flush the loop
    schedules). The runner commits what the cache holds right before it starts any request
    (it claims the next keys of its queue in groups, and flushes or renews a lease before
    each attempt), so an answer is committed before its run spends anything more. A
    crash or a ``kill -9`` loses at most the calls in flight and the completions held back
    (at most ``commit_interval`` seconds' worth), and a lost completion is like a call in
    flight: its lease stays (its owner is dead, so the lease is stale at once), and its
    spend-ledger row, if any, stays open at its worst case, because an attempt is settled
    (:meth:`close_attempt`) only in a transaction that commits the completions put before
    it. A rerun sends it again, and a spend cap counts the lost attempt at its worst case.
    Claims, ledger and batch records are never held back: each is committed before its
    method returns. This process reads what it has put at once; other processes see it once
    it is committed, and meanwhile find the key leased (they wait for it, never pay for
    it).

    Several processes may read and write one file concurrently (WAL, a busy timeout, and
    ``INSERT OR IGNORE`` so the first stored answer for a key wins), and they never pay
    twice for one key: a process :meth:`claim` s a key (a lease row with an expiry,
    committed at once) before sending it, and another process that finds the key claimed
    waits for that answer instead of paying again; a lease whose owner died expires.

    Parameters
    ----------
    path : path-like
        The database file (created with its parent folder if missing). A cache in the
        previous format is migrated in place (see the module documentation).
    commit_interval : float
        Seconds a completion put inside an event loop may wait for its commit (the most a
        ``kill -9`` can lose). 0 commits every completion at once, as does a :meth:`put`
        made outside an event loop (nothing there would come back to commit it in time).

    Raises
    ------
    FairjudgeInputError
        For a negative, infinite or non-numeric ``commit_interval``.
    """

    def __init__(self, path: str | os.PathLike, *, commit_interval: float = 0.05):
        if isinstance(commit_interval, bool) or not isinstance(commit_interval, (int, float)) \
                or not 0 <= commit_interval < math.inf:
            raise FairjudgeInputError("`commit_interval` must be a non-negative finite "
                                      f"number of seconds; got {commit_interval!r}")
        self.path = Path(path)
        self.path.parent.mkdir(parents=True, exist_ok=True)
        self.commit_interval = float(commit_interval)
        self._lock = threading.Lock()
        self._conn = sqlite3.connect(self.path, timeout=60.0, check_same_thread=False,
                                     isolation_level=None)
        #: key -> (completions row, Completion) put but not committed yet
        self._pending: dict[str, tuple[tuple, Completion]] = {}
        self._last_commit = time.monotonic()
        self._timer: tuple[asyncio.AbstractEventLoop, asyncio.TimerHandle] | None = None
        # Commits what is held and closes the connection on close(), when the cache is
        # garbage-collected, or at interpreter exit, whichever comes first. It holds the
        # connection, the lock and the held rows, never the cache itself.
        self._finalizer = weakref.finalize(self, _commit_and_close, self._conn, self._lock,
                                           self._pending)
        self.migrated = self._open_with_retries()
        self.adopted = 0
        """Legacy entries served (and bound to an endpoint) since this cache was opened."""

    def _open_with_retries(self, patience: float = 60.0) -> int:
        """Switch to WAL, create the tables and migrate; returns the rows migrated.

        Processes opening one new cache at the same moment race to switch its journal mode
        and to create its tables, and SQLite may then answer "database is locked" at once,
        without waiting for the busy timeout (a WAL index being built is such a case).
        These steps are idempotent, so they are retried for up to ``patience`` seconds.
        """
        deadline, delay = time.monotonic() + patience, 0.01
        while True:
            try:
                self._conn.execute("PRAGMA journal_mode=WAL")
                self._conn.execute("PRAGMA synchronous=NORMAL")
                self._conn.execute("PRAGMA busy_timeout=60000")
                self._conn.executescript(_SCHEMA)
                self._add_column("completions", "price_factor", "REAL NOT NULL DEFAULT 1")
                self._add_column("batches", "owner", "TEXT")
                return self._migrate_legacy()
            except sqlite3.OperationalError as err:
                if "locked" not in str(err) or time.monotonic() > deadline:
                    raise
                time.sleep(delay)
                delay = min(2 * delay, 0.5)

    def _add_column(self, table: str, column: str, declaration: str) -> None:
        """Add a column that caches written by an older fairjudge lack (idempotent)."""
        columns = {row[1] for row in self._conn.execute(f"PRAGMA table_info({table})")}
        if column in columns:
            return
        try:
            self._conn.execute(f"ALTER TABLE {table} ADD COLUMN {column} {declaration}")
        except sqlite3.OperationalError as err:
            if "duplicate column" not in str(err):  # another process added it first
                raise

    def close(self) -> None:
        """Commit the completions held back, then close the connection."""
        self._finalizer()

    def flush(self) -> None:
        """Commit the completions put since the last commit (nothing to do if none)."""
        if self._pending:
            with self._lock:
                with _Immediate(self._conn, self._pending):
                    pass
                self._last_commit = time.monotonic()

    @contextlib.contextmanager
    def _transaction(self):
        """One immediate write transaction, under the lock, that writes the completions held
        back before anything else: a lease or a ledger row is never committed ahead of the
        answers put before it."""
        with self._lock:
            with _Immediate(self._conn, self._pending) as conn:
                yield conn
            self._last_commit = time.monotonic()

    def _flush_from_timer(self) -> None:
        self._timer = None
        self.flush()

    def __enter__(self):
        return self

    def __exit__(self, *exc):
        self.close()

    # -- migration ---------------------------------------------------------------------
    def _migrate_legacy(self) -> int:
        """Convert a previous-format ``verdicts`` table; returns the number of rows moved."""
        with self._transaction() as conn:
            exists = conn.execute("SELECT 1 FROM sqlite_master WHERE type='table' AND "
                                  "name='verdicts'").fetchone()
            if not exists:
                conn.execute("INSERT OR IGNORE INTO cache_meta VALUES ('schema', ?)",
                             (SCHEMA_VERSION,))
                return 0
            rows = conn.execute(
                "SELECT key, backend, model, template, template_version, kind, raw, "
                "probabilities, input_tokens, output_tokens, reasoning_tokens, latency, "
                "created, request FROM verdicts").fetchall()
            conn.executemany(_INSERT, [_legacy_row(r) for r in rows])
            conn.execute("DROP TABLE verdicts")
            conn.execute("INSERT OR REPLACE INTO cache_meta VALUES ('schema', ?)",
                         (SCHEMA_VERSION,))
        return len(rows)

    # -- reading and writing -------------------------------------------------------------
    def holds_legacy(self) -> bool:
        """Whether entries of the previous format wait to be adopted (a partial index makes
        this one lookup, so a run computes the legacy keys only when they can match)."""
        with self._lock:
            return self._conn.execute("SELECT 1 FROM completions WHERE origin = 'legacy' "
                                      "LIMIT 1").fetchone() is not None

    def get_many(self, keys, *, legacy_keys: dict | None = None,
                 endpoint: str | None = None) -> dict[str, Completion]:
        """Cached completions for the given keys (missing keys are absent from the result).

        ``legacy_keys`` maps a key to the key the same request had before endpoints entered
        the key; a legacy entry found under it is served and re-keyed to ``endpoint``.
        """
        keys = list(dict.fromkeys(keys))
        found: dict[str, Completion] = {}
        with self._lock:
            for key in keys:
                if key in self._pending:
                    found[key] = self._pending[key][1]
            keys = [k for k in keys if k not in found]
            for row in _rows_for_keys(
                    self._conn, f"SELECT key, {_READ} FROM completions WHERE key IN ({{}})",
                    keys):
                found[row[0]] = _completion(row[1:])
            missing = {k: legacy_keys[k] for k in keys
                       if k not in found and legacy_keys and legacy_keys.get(k)}
            for key, old in missing.items():
                row = self._conn.execute(
                    f"SELECT {_READ} FROM completions WHERE key = ? AND origin = 'legacy'",
                    (old,)).fetchone()
                if row is None:
                    continue
                # Bind the legacy answer to this endpoint; no other endpoint can claim it.
                self._conn.execute("UPDATE completions SET key = ?, endpoint = ?, "
                                   "origin = 'adopted' WHERE key = ? AND origin = 'legacy'",
                                   (key, endpoint, old))
                found[key] = _completion(row)
                self.adopted += 1
        return found

    # -- leases: one process pays for a key -------------------------------------------------
    def claim(self, key: str, owner: str, ttl: float) -> str:
        """Claim the right to pay for ``key`` before sending it.

        Returns :data:`DONE` if the completion is already stored (read it from the cache),
        :data:`BATCHED` if the key waits in an open provider batch (paid for there: never
        send it), :data:`BUSY` if another owner holds an unexpired lease (wait for its
        answer), or :data:`CLAIMED` (the lease is ours for ``ttl`` seconds; renew it by
        claiming again).
        The claim is one immediate transaction, committed before returning, so two processes
        never both own a key.
        """
        return self.claim_many([key], owner, ttl)[key]

    def claim_many(self, keys, owner: str, ttl: float) -> dict[str, str]:
        """:meth:`claim` for several keys in one immediate transaction, committed before
        returning: key -> outcome. A runner claims the next keys it will send together, so
        that a run commits once per group of calls rather than once per call."""
        keys = list(dict.fromkeys(keys))
        with self._transaction() as conn:
            now = time.time()  # once the write lock is ours: waiting for it spends no lease
            # The held completions are in the table already: the transaction wrote them.
            done = {row[0] for row in _rows_for_keys(
                conn, "SELECT key FROM completions WHERE key IN ({})", keys)}
            batched = self._open_batches(keys)
            leases = {row[0]: row[1:] for row in _rows_for_keys(
                conn, "SELECT key, owner, expires FROM leases WHERE key IN ({})", keys)}
            outcomes: dict[str, str] = {}
            for key in keys:
                holder, expires = leases.get(key, (owner, now))
                if key in done:
                    outcomes[key] = DONE
                elif key in batched:
                    outcomes[key] = BATCHED
                elif holder != owner and expires > now and not _owner_is_gone(holder):
                    outcomes[key] = BUSY
                else:
                    outcomes[key] = CLAIMED
            conn.executemany("INSERT OR REPLACE INTO leases VALUES (?, ?, ?)",
                             [(key, owner, now + ttl) for key, outcome in outcomes.items()
                              if outcome == CLAIMED])
        return outcomes

    def release(self, key: str, owner: str) -> None:
        """Give up our lease on ``key`` (the call failed; another process may try)."""
        self.release_many([key], owner)

    def release_many(self, keys, owner: str) -> None:
        """Give up our leases on the given keys, in one transaction."""
        rows = [(key, owner) for key in dict.fromkeys(keys)]
        if rows:
            with self._transaction() as conn:
                conn.executemany("DELETE FROM leases WHERE key = ? AND owner = ?", rows)

    # -- the spend ledger: what every attempt may have cost, across runs ---------------------
    def open_attempt(self, key: str, worst: float, *, owner: str, job: str | None = None,
                     cap: float | None = None) -> int | None:
        """Record an attempt about to be sent, at its worst-case cost, committed at once (an
        attempt in flight when its process dies stays counted at its worst case).

        With a ``job`` and a ``cap`` the check and the record are one transaction: the
        attempt is recorded only if everything the job has spent or may have spent -- by
        every run and every process sharing this cache -- plus ``worst`` stays within the
        cap; otherwise nothing is recorded and None is returned. Returns the attempt's id.
        """
        with self._transaction() as conn:
            if job is not None and cap is not None:
                if _job_spent(conn, job) + worst > cap:
                    return None
            cursor = conn.execute(
                "INSERT INTO spend (job, key, owner, dollars, open, created) VALUES "
                "(?, ?, ?, ?, 1, ?)", (job, key, owner, float(worst), time.time()))
        return int(cursor.lastrowid)

    def close_attempt(self, attempt: int, dollars: float) -> None:
        """Settle an attempt at what it cost (0 when the provider refused it), committed at
        once together with every completion put before: an attempt settled below its worst
        case always has its answer stored (put the answer first), so a kill never leaves a
        paid answer lost while its cost counts as settled."""
        with self._transaction() as conn:
            conn.execute("UPDATE spend SET dollars = ?, open = 0 WHERE id = ?",
                         (float(dollars), attempt))

    def job_spent(self, job: str) -> float:
        """Dollars the job has spent or may have spent, over every run and process."""
        with self._lock:
            return _job_spent(self._conn, job)

    def open_elsewhere(self, job: str, owner: str) -> int:
        """Attempts of the job still in flight in other live processes (they may settle
        below their worst case and free room under the cap)."""
        with self._lock:
            # A provider batch settles only when a later run collects it, never during
            # this one: waiting for it would wait forever.
            owners = [row[0] for row in self._conn.execute(
                "SELECT owner FROM spend WHERE job = ? AND open = 1 AND owner != ? AND "
                "owner NOT LIKE 'batch:%'", (job, owner))]
        return sum(1 for o in owners if not _owner_is_gone(o))

    def spent_on(self, keys) -> float:
        """Dollars recorded for the given keys by every run so far (attempts still open --
        their process died in flight -- count at their worst case)."""
        with self._lock:
            return float(sum(row[0] for row in _rows_for_keys(
                self._conn, "SELECT COALESCE(SUM(dollars), 0) FROM spend WHERE key IN ({})",
                list(dict.fromkeys(keys)))))

    def get(self, key: str) -> Completion | None:
        """The stored completion of ``key`` (committed or not yet), or None."""
        with self._lock:
            if key in self._pending:
                return self._pending[key][1]
            row = self._conn.execute(f"SELECT {_READ} FROM completions WHERE key = ?",
                                     (key,)).fetchone()
        return None if row is None else _completion(row)

    def put(self, key: str, completion: Completion, *, identity: dict,
            request: JudgeRequest, payload_text: str | None = None) -> None:
        """Store one completion and drop its lease, in one transaction.

        ``payload_text``, the canonical JSON :func:`keyed_payload` returned with ``key``,
        saves encoding the request again.

        Inside an event loop the completion is committed with the next write of this cache
        or within ``commit_interval`` seconds (see the class documentation); outside one, or
        when ``commit_interval`` has passed since the last commit, before returning.
        """
        if not self._finalizer.alive:
            raise sqlite3.ProgrammingError("Cannot operate on a closed database.")
        if payload_text is None:
            payload_text = canonical_json(request_payload(identity, request))
        row = _completion_row(key, completion, identity, template=request.template,
                              template_version=request.template_version, kind=request.kind,
                              sample=request.sample, origin="fresh", payload_text=payload_text)
        with self._lock:
            self._pending[key] = (row, completion)
            wait = self._last_commit + self.commit_interval - time.monotonic()
        try:
            loop = asyncio.get_running_loop()
        except RuntimeError:
            loop = None
        if wait <= 0 or loop is None:
            self.flush()
        elif self._timer is None or self._timer[0] is not loop:
            # Every commit writes every held row, so the rows held now all came after the
            # last commit: a flush at last commit + interval is in time for each of them.
            self._timer = (loop, loop.call_later(wait, self._flush_from_timer))

    # -- provider batches: submitted once, collected by whichever run finds them ended ------
    def open_batch(self, token: str, *, api: str, scope: str, identity: dict,
                   entries: list, owner: str, job: str | None = None,
                   cap: float | None = None,
                   spent: float = 0.0) -> tuple[list[str], int | None]:
        """Record a batch about to be submitted, in one transaction, before submitting it.

        ``entries`` are ``(key, worst-case dollars, request payload)`` in priority order.
        A key is taken unless it is already answered, waits in another open batch, or is
        leased by a live process paying for it online -- and only while the cap holds:
        with a ``job``, everything the job's ledger holds plus the batch's worst case
        stays within ``cap``; without one, ``spent`` (what the caller has counted already)
        plus the batch's worst case does. Each taken key gets a spend-ledger row at its
        worst case, open until the batch is collected (a batch that is never collected
        stays counted). ``owner`` (:func:`lease_owner`) is the submitting process: only
        once it is gone may another process decide what became of a batch it left
        ``submitting``. Returns the keys taken, in order, and the index of the entry at
        which the cap stopped the taking (None if it did not); nothing is recorded when no
        key is taken.
        """
        now = time.time()
        ledger_owner = f"batch:{token}"
        with self._transaction() as conn:
            if job is not None and cap is not None:
                spent = _job_spent(conn, job)
            taken, stopped_at = [], None
            waiting = self._open_batches([key for key, _, _ in entries])
            for index, (key, worst, payload) in enumerate(entries):
                if key in waiting or conn.execute("SELECT 1 FROM completions WHERE key = ?",
                                                  (key,)).fetchone():
                    continue
                lease = conn.execute("SELECT owner, expires FROM leases WHERE key = ?",
                                     (key,)).fetchone()
                if lease is not None and lease[1] > now and not _owner_is_gone(lease[0]):
                    continue  # being paid for online right now
                if cap is not None and spent + worst > cap:
                    stopped_at = index
                    break
                spent += worst
                attempt = conn.execute(
                    "INSERT INTO spend (job, key, owner, dollars, open, created) VALUES "
                    "(?, ?, ?, ?, 1, ?)", (job, key, ledger_owner, float(worst), now)
                ).lastrowid
                conn.execute("INSERT INTO batch_requests VALUES (?, ?, ?, ?)",
                             (token, key, attempt, canonical_json(payload)))
                taken.append(key)
            if taken:
                conn.execute(
                    "INSERT INTO batches (token, owner, api, scope, identity, remote_id, "
                    "state, size, note, created, updated) VALUES (?, ?, ?, ?, ?, NULL, "
                    "'submitting', ?, NULL, ?, ?)",
                    (token, owner, api, scope, canonical_json(identity), len(taken), now,
                     now))
        return taken, stopped_at

    def _open_batches(self, keys) -> dict[str, str]:
        """Key -> token of the open batch holding it, for the given keys that wait in one
        (call with the lock held; one lookup when no batch is open)."""
        if self._conn.execute(f"SELECT 1 FROM batches WHERE state IN {OPEN_BATCH_STATES} "
                              "LIMIT 1").fetchone() is None:
            return {}
        return dict(_rows_for_keys(
            self._conn, "SELECT r.key, r.token FROM batch_requests r JOIN batches b ON "
            f"b.token = r.token WHERE b.state IN {OPEN_BATCH_STATES} AND r.key IN ({{}})",
            list(dict.fromkeys(keys))))

    def batched(self, keys) -> dict[str, str]:
        """Key -> token of the open batch holding it, for the given keys that wait in one."""
        with self._lock:
            return self._open_batches(keys)

    def set_batch(self, token: str, state: str, *, remote_id: str | None = None,
                  note: str | None = None, expected: str | None = None) -> bool:
        """Move a batch to ``state`` (recording the provider's id or a note); with
        ``expected``, only if it is in that state now. Returns whether it moved."""
        clause, args = "", []
        if expected is not None:
            clause, args = " AND state = ?", [expected]
        with self._transaction() as conn:
            cursor = conn.execute(
                "UPDATE batches SET state = ?, remote_id = COALESCE(?, remote_id), "
                f"note = COALESCE(?, note), updated = ? WHERE token = ?{clause}",
                (state, remote_id, note, time.time(), token, *args))
        return cursor.rowcount > 0

    def batches(self, *, scope: str | None = None, open_only: bool = False) -> list[dict]:
        """Recorded batches (newest first), optionally of one scope or only the open ones."""
        clauses, args = [], []
        if scope is not None:
            clauses.append("scope = ?")
            args.append(scope)
        if open_only:
            clauses.append(f"state IN {OPEN_BATCH_STATES}")
        where = f" WHERE {' AND '.join(clauses)}" if clauses else ""
        names = ("token", "owner", "api", "scope", "identity", "remote_id", "state", "size",
                 "note", "created", "updated")
        with self._lock:
            rows = self._conn.execute(f"SELECT {', '.join(names)} FROM batches{where} "
                                      "ORDER BY created DESC", args).fetchall()
        return [dict(zip(names, row)) for row in rows]

    def forget_batch(self, token: str, *, force: bool = False) -> int:
        """Release the calls of an open batch so that a later run sends them again; returns
        how many. Their ledger rows stay at their worst case (the provider may have the
        batch), so a spend cap still counts them. A batch the provider acknowledged
        (``submitted``) is released only with ``force``: its answers would be paid for
        and never collected.

        Raises
        ------
        ValueError
            For a ``submitted`` batch without ``force``.
        """
        with self._transaction() as conn:
            found = conn.execute(f"SELECT size, state, remote_id FROM batches WHERE "
                                 f"token = ? AND state IN {OPEN_BATCH_STATES}",
                                 (token,)).fetchone()
            if found is not None and found[1] == "submitted" and not force:
                raise ValueError(
                    f"batch {token} was accepted by the provider (id {found[2]}) and may "
                    "still answer and bill; collect it by rerunning with the batch "
                    "option, or cancel it at the provider and release it with force")
            if found is not None:
                conn.execute("UPDATE spend SET open = 0 WHERE id IN (SELECT attempt FROM "
                             "batch_requests WHERE token = ?)", (token,))
                conn.execute("UPDATE batches SET state = 'forgotten', updated = ? WHERE "
                             "token = ?", (time.time(), token))
        return 0 if found is None else int(found[0])

    def batch_entries(self, token: str) -> list[tuple[str, int | None, dict]]:
        """``(key, spend-ledger attempt id, request payload)`` of every call in a batch."""
        with self._lock:
            rows = self._conn.execute("SELECT key, attempt, request FROM batch_requests "
                                      "WHERE token = ?", (token,)).fetchall()
        return [(key, attempt, json.loads(request)) for key, attempt, request in rows]

    def ingest(self, key: str, completion: Completion, payload: dict, attempt: int | None,
               dollars: float) -> None:
        """Store a batch answer and settle its ledger row at ``dollars``, in one
        transaction."""
        row = _completion_row(key, completion, payload.get("backend", {}),
                              template=payload.get("template", ""),
                              template_version=payload.get("template_version", ""),
                              kind=payload.get("kind", "verdict"),
                              sample=payload.get("sample", 0), origin="batch",
                              payload_text=canonical_json(payload))
        with self._transaction() as conn:
            conn.execute(_INSERT, row)
            if attempt is not None:
                conn.execute("UPDATE spend SET dollars = ?, open = 0 WHERE id = ?",
                             (float(dollars), attempt))

    def __len__(self) -> int:
        self.flush()
        with self._lock:
            return self._conn.execute("SELECT COUNT(*) FROM completions").fetchone()[0]

    def stats(self) -> dict:
        """Counts by backend/model/endpoint and kind, token totals and the file size."""
        self.flush()
        with self._lock:
            total = self._conn.execute("SELECT COUNT(*) FROM completions").fetchone()[0]
            by_model = self._conn.execute(
                "SELECT backend, model, COALESCE(endpoint, ''), COUNT(*), SUM(input_tokens), "
                "SUM(output_tokens) FROM completions GROUP BY backend, model, endpoint "
                "ORDER BY backend, model, endpoint").fetchall()
            by_kind = dict(self._conn.execute(
                "SELECT kind, COUNT(*) FROM completions GROUP BY kind").fetchall())
            legacy = self._conn.execute(
                "SELECT COUNT(*) FROM completions WHERE origin = 'legacy'").fetchone()[0]
        return {
            "path": str(self.path),
            "entries": total,
            "bytes": self.path.stat().st_size if self.path.exists() else 0,
            "by_model": [{"backend": b, "model": m, "endpoint": e, "entries": n,
                          "input_tokens": i or 0, "output_tokens": o or 0}
                         for b, m, e, n, i, o in by_model],
            "by_kind": by_kind,
            "legacy_entries": legacy,
        }

    def export(self, path: str | os.PathLike) -> int:
        """Write every entry as JSONL (request, completion, usage); returns the count."""
        count = 0
        self.flush()
        with self._lock:
            rows = self._conn.execute(
                f"SELECT {', '.join(_COLUMNS)} FROM completions ORDER BY created").fetchall()
        with atomic_write(path) as handle:  # a killed export leaves no truncated file
            for row in rows:
                record = dict(zip(_COLUMNS, row))
                for field in ("logprobs", "label_probabilities", "request"):
                    record[field] = _loads(record[field])
                record["usage_reported"] = bool(record["usage_reported"])
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
        self.flush()
        with self._lock:
            cursor = self._conn.execute(f"DELETE FROM completions{where}", args)
            self._conn.execute("VACUUM")
        return cursor.rowcount


def lease_owner() -> str:
    """A lease owner name for this process: ``host:pid:random``."""
    return f"{socket.gethostname()}:{os.getpid()}:{uuid.uuid4().hex[:12]}"


def _owner_is_gone(owner: str) -> bool:
    """Whether a lease's owner is a process of this host that no longer runs (killed): its
    leases are stale at once, so a rerun after a kill never waits for them to expire."""
    host, _, rest = owner.partition(":")
    pid_text = rest.partition(":")[0]
    if host != socket.gethostname() or not pid_text.isdigit():
        return False
    try:
        os.kill(int(pid_text), 0)
    except ProcessLookupError:
        return True
    except OSError:  # exists but not ours (PermissionError): alive
        return False
    return False


def _rows_for_keys(conn, query: str, keys: list, chunk: int = 500):
    """The rows of ``query`` (whose ``IN ({})`` takes the keys) over every key, asked in
    groups of ``chunk`` keys (SQLite limits the parameters of one statement)."""
    for start in range(0, len(keys), chunk):
        part = keys[start:start + chunk]
        yield from conn.execute(query.format(",".join("?" * len(part))), part)


def _job_spent(conn, job: str) -> float:
    """The job's spend-ledger total (attempts still open at their worst case)."""
    return float(conn.execute("SELECT COALESCE(SUM(dollars), 0) FROM spend WHERE job = ?",
                              (job,)).fetchone()[0])


def _completion_row(key: str, completion: Completion, identity: dict, *, template: str,
                    template_version: str, kind: str, sample, origin: str,
                    payload_text: str) -> tuple:
    """A ``completions`` row (in ``_COLUMNS`` order) for a completion, from the parts of
    its request payload (:func:`request_payload`) and that payload's canonical JSON."""
    usage = completion.usage
    return (key, str(identity.get("backend", "")), str(identity.get("model", "")),
            identity.get("endpoint"), template, template_version, kind, int(sample or 0),
            completion.text, completion.finish_reason,
            json.dumps(completion.logprobs) if completion.logprobs else None,
            json.dumps(completion.label_probabilities)
            if completion.label_probabilities else None,
            usage.input_tokens, usage.output_tokens, usage.reasoning_tokens,
            int(usage.reported), completion.latency, time.time(), origin, payload_text,
            float(usage.price_factor))


_INSERT = (f"INSERT OR IGNORE INTO completions ({', '.join(_COLUMNS)}) "
           f"VALUES ({','.join('?' * len(_COLUMNS))})")


class _Immediate:
    """``BEGIN IMMEDIATE`` ... ``COMMIT`` that first writes the held completions
    (``pending``: key -> (row, Completion)) and drops their leases; they are forgotten only
    once committed, and a rolled-back transaction keeps them held. Call with the lock held.
    (A class, not a generator: a flush runs before most requests.)"""

    __slots__ = ("conn", "pending")

    def __init__(self, conn, pending: dict):
        self.conn, self.pending = conn, pending

    def __enter__(self):
        self.conn.execute("BEGIN IMMEDIATE")
        try:
            if self.pending:
                self.conn.executemany(_INSERT, [row for row, _ in self.pending.values()])
                self.conn.executemany("DELETE FROM leases WHERE key = ?",
                                      [(k,) for k in self.pending])
        except BaseException:
            self.conn.execute("ROLLBACK")
            raise
        return self.conn

    def __exit__(self, kind, error, trace) -> None:
        if kind is not None:
            self.conn.execute("ROLLBACK")
            return
        try:
            self.conn.execute("COMMIT")
        except BaseException:
            self.conn.execute("ROLLBACK")
            raise
        self.pending.clear()


def _commit_and_close(conn, lock, pending: dict) -> None:
    """The cache's finalizer: commit what is held, then close the connection."""
    with lock:
        try:
            if pending:
                with _Immediate(conn, pending):
                    pass
        finally:
            conn.close()


def _legacy_row(row) -> tuple:
    """A previous-format ``verdicts`` row as a ``completions`` row (same key)."""
    (key, backend, model, template, template_version, kind, raw, probabilities, t_in, t_out,
     t_reason, latency, created, request) = row
    payload = _loads(request) or {}
    probabilities = _loads(probabilities)
    logprobs = labels = None
    if probabilities:
        if backend == "hf":
            labels = probabilities  # the hf backend scored the labels directly
        else:
            # Stored probabilities came from the first token of a bare-label reply; the same
            # numbers come back out of verdict_probabilities() on this entry.
            top = [{"token": label, "logprob": math.log(p)} for label, p in
                   probabilities.items() if p > 0]
            logprobs = [{"token": (raw or "").strip(), "logprob": 0.0, "top_logprobs": top}]
    return (key, backend, model, None, template, template_version, kind,
            int(payload.get("sample", 0) or 0), raw, None,
            json.dumps(logprobs) if logprobs else None,
            json.dumps(labels) if labels else None, t_in, t_out, t_reason, 1, latency,
            created, "legacy", request, 1.0)
