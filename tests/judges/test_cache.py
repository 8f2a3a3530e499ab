"""The SQLite verdict cache: keys, durability, sharing between processes."""

import multiprocessing
import sqlite3

import pytest

from fairjudge.data import Outcome
from fairjudge.judges import (GenerationSettings, JudgeRequest, Message, Usage, Verdict,
                              VerdictCache, cache_key)

IDENTITY = {"backend": "openai", "model": "m"}


def request(text="hello", **kwargs):
    return JudgeRequest(messages=(Message("user", text),), template="baseline",
                        template_version="1", **kwargs)


def verdict(key, outcome=Outcome.A):
    return Verdict(key=key, outcome=outcome, raw="A", usage=Usage(10, 1), latency=0.2)


def test_key_depends_on_everything_that_changes_output_and_nothing_else():
    base = cache_key(IDENTITY, request())
    assert cache_key(IDENTITY, request()) == base
    assert cache_key(IDENTITY, request(metadata={"pair_id": "x"})) == base
    variants = [
        cache_key({"backend": "openai", "model": "other"}, request()),
        cache_key(IDENTITY, request("hello!")),
        cache_key(IDENTITY, request(settings=GenerationSettings(temperature=0.7))),
        cache_key(IDENTITY, request(sample=1)),
        cache_key(IDENTITY, JudgeRequest(messages=(Message("user", "hello"),),
                                         template="baseline", template_version="2")),
    ]
    assert len(set(variants + [base])) == len(variants) + 1


def test_round_trip_and_first_answer_wins(tmp_path):
    path = tmp_path / "c.sqlite"
    key = cache_key(IDENTITY, request())
    with VerdictCache(path) as cache:
        cache.put(verdict(key), identity=IDENTITY, request=request())
        cache.put(verdict(key, Outcome.B), identity=IDENTITY, request=request())
    with VerdictCache(path) as cache:  # reopened: the verdict was committed
        got = cache.get_many([key, "missing"])
        assert list(got) == [key]
        assert got[key].outcome is Outcome.A and got[key].cached
        assert got[key].usage == Usage(10, 1, 0)
        assert cache.stats()["entries"] == 1


def test_wal_mode_and_no_secrets(tmp_path):
    path = tmp_path / "c.sqlite"
    with VerdictCache(path) as cache:
        cache.put(verdict("k"), identity=IDENTITY, request=request())
    conn = sqlite3.connect(path)
    assert conn.execute("PRAGMA journal_mode").fetchone()[0] == "wal"
    # Every table, whatever the schema calls it.
    tables = [name for (name,) in conn.execute("SELECT name FROM sqlite_master WHERE type = "
                                                "'table'")]
    stored = " ".join(str(v) for table in tables
                      for row in conn.execute(f'SELECT * FROM "{table}"') for v in row)
    assert "hello" in stored  # the request was found ...
    assert "Bearer" not in stored and "api_key" not in stored  # ... without credentials


def _writer(path, start):
    with VerdictCache(path) as cache:
        for i in range(start, start + 200):
            cache.put(verdict(f"k{i}"), identity=IDENTITY, request=request(str(i)))


@pytest.mark.slow
def test_several_processes_share_one_file(tmp_path):
    path = tmp_path / "shared.sqlite"
    VerdictCache(path).close()
    procs = [multiprocessing.get_context("spawn").Process(target=_writer, args=(path, s))
             for s in (0, 100, 200)]
    for p in procs:
        p.start()
    for p in procs:
        p.join(60)
        assert p.exitcode == 0
    with VerdictCache(path) as cache:
        assert cache.stats()["entries"] == 400


def test_export_and_clear(tmp_path):
    import json
    path = tmp_path / "c.sqlite"
    with VerdictCache(path) as cache:
        for i, backend in enumerate(["openai", "openai", "anthropic"]):
            cache.put(verdict(f"k{i}"), identity={"backend": backend, "model": "m"},
                      request=request(str(i)))
        assert cache.export(tmp_path / "out.jsonl") == 3
        records = [json.loads(line) for line in open(tmp_path / "out.jsonl")]
        assert records[0]["request"]["messages"] == [["user", "0"]]
        assert cache.clear(backend="anthropic") == 1
        assert cache.stats()["entries"] == 2
