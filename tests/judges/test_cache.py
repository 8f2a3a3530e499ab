"""The SQLite completion cache: keys, durability, sharing, the legacy migration."""

import json
import math
import multiprocessing
import sqlite3

import pytest

from fairjudge.data import Outcome
from fairjudge.judges import (VERDICT_PARSER, CallResult, Completion, CompletionCache,
                              GenerationSettings, JudgeRequest, Message, Usage, cache_key,
                              normalise_endpoint, parse_verdicts)
from fairjudge.judges._cache import canonical_json, legacy_cache_key, request_payload

IDENTITY = {"backend": "openai", "model": "m", "extra_body": {},
            "endpoint": "http://127.0.0.1:8000/v1"}


def request(text="hello", **kwargs):
    return JudgeRequest(messages=(Message("user", text),), template="baseline",
                        template_version="1", **kwargs)


def completion(text="A", **kwargs):
    return Completion(text=text, usage=Usage(10, 1), latency=0.2, finish_reason="stop",
                      **kwargs)


def test_key_depends_on_everything_that_changes_output_and_nothing_else():
    base = cache_key(IDENTITY, request())
    assert cache_key(IDENTITY, request()) == base
    assert cache_key(IDENTITY, request(metadata={"pair_id": "x"})) == base
    variants = [
        cache_key({**IDENTITY, "model": "other"}, request()),
        cache_key({**IDENTITY, "endpoint": "http://127.0.0.1:8001/v1"}, request()),
        cache_key(IDENTITY, request("hello!")),
        cache_key(IDENTITY, request(settings=GenerationSettings(temperature=0.7))),
        cache_key(IDENTITY, request(sample=1)),
        cache_key(IDENTITY, JudgeRequest(messages=(Message("user", "hello"),),
                                         template="baseline", template_version="2")),
    ]
    assert len(set(variants + [base])) == len(variants) + 1


def test_endpoint_normalisation():
    assert normalise_endpoint("HTTPS://Api.Example.com:443/v1/") == "https://api.example.com/v1"
    assert normalise_endpoint("http://user:pw@host:80/v1?x=1") == "http://host/v1"
    assert normalise_endpoint("http://127.0.0.1:9000/v1") == "http://127.0.0.1:9000/v1"
    assert normalise_endpoint("http://127.0.0.1:9000/v1", keep_port=False) == \
        "http://127.0.0.1/v1"


def test_round_trip_keeps_the_raw_completion_and_first_answer_wins(tmp_path):
    path = tmp_path / "c.sqlite"
    key = cache_key(IDENTITY, request())
    logprobs = [{"token": "A", "logprob": -0.1,
                 "top_logprobs": [{"token": "A", "logprob": -0.1},
                                  {"token": "B", "logprob": -2.4}]}]
    with CompletionCache(path) as cache:
        cache.put(key, completion(logprobs=logprobs), identity=IDENTITY, request=request())
        cache.put(key, completion("B"), identity=IDENTITY, request=request())
    with CompletionCache(path) as cache:  # reopened: the completion was committed
        got = cache.get_many([key, "missing"])
        assert list(got) == [key]
        assert got[key] == completion(logprobs=logprobs)
        assert got[key].usage == Usage(10, 1, 0, True)
        assert cache.stats()["entries"] == 1


def test_missing_usage_flag_survives_the_cache(tmp_path):
    key = cache_key(IDENTITY, request())
    with CompletionCache(tmp_path / "c.sqlite") as cache:
        cache.put(key, Completion("A", usage=Usage(900, 64, 0, reported=False)),
                  identity=IDENTITY, request=request())
        assert cache.get_many([key])[key].usage.reported is False


def test_wal_mode_and_no_secrets(tmp_path):
    path = tmp_path / "c.sqlite"
    with CompletionCache(path) as cache:
        cache.put("k", completion(), identity=IDENTITY, request=request())
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
    with CompletionCache(path) as cache:
        for i in range(start, start + 200):
            cache.put(f"k{i}", completion(), identity=IDENTITY, request=request(str(i)))


@pytest.mark.slow
def test_several_processes_share_one_file(tmp_path):
    path = tmp_path / "shared.sqlite"
    CompletionCache(path).close()
    procs = [multiprocessing.get_context("spawn").Process(target=_writer, args=(path, s))
             for s in (0, 100, 200)]
    for p in procs:
        p.start()
    for p in procs:
        p.join(60)
        assert p.exitcode == 0
    with CompletionCache(path) as cache:
        assert cache.stats()["entries"] == 400


def test_export_and_clear(tmp_path):
    path = tmp_path / "c.sqlite"
    with CompletionCache(path) as cache:
        for i, backend in enumerate(["openai", "openai", "anthropic"]):
            cache.put(f"k{i}", completion(), identity={**IDENTITY, "backend": backend},
                      request=request(str(i)))
        assert cache.export(tmp_path / "out.jsonl") == 3
        records = [json.loads(line) for line in open(tmp_path / "out.jsonl")]
        assert records[0]["request"]["messages"] == [["user", "0"]]
        assert records[0]["text"] == "A" and records[0]["usage_reported"] is True
        assert cache.clear(backend="anthropic") == 1
        assert cache.stats()["entries"] == 2


LEGACY_SCHEMA = """
CREATE TABLE verdicts (
    key TEXT PRIMARY KEY, backend TEXT NOT NULL, model TEXT NOT NULL, template TEXT NOT NULL,
    template_version TEXT NOT NULL, kind TEXT NOT NULL, raw TEXT, outcome TEXT NOT NULL,
    detail TEXT, probabilities TEXT, input_tokens INTEGER, output_tokens INTEGER,
    reasoning_tokens INTEGER, latency REAL, created REAL NOT NULL, request TEXT)
"""


def legacy_cache(path, rows):
    """A cache file in the previous format (keys without the endpoint, parsed outcomes)."""
    conn = sqlite3.connect(path)
    conn.execute(LEGACY_SCHEMA)
    for identity, req, raw, outcome, probabilities in rows:
        key = cache_key(identity, req)  # the previous formula: identity had no endpoint
        conn.execute("INSERT INTO verdicts VALUES (?,?,?,?,?,?,?,?,?,?,?,?,?,?,?,?)",
                     (key, identity["backend"], identity["model"], req.template,
                      req.template_version, req.kind, raw, outcome, "",
                      json.dumps(probabilities) if probabilities else None, 12, 1, 0, 0.3,
                      1.0, canonical_json(request_payload(identity, req))))
    conn.commit()
    conn.close()


def test_a_legacy_cache_is_migrated_and_served_to_one_endpoint_only(tmp_path):
    path = tmp_path / "old.sqlite"
    old_identity = {"backend": "openai", "model": "m", "extra_body": {}}
    legacy_cache(path, [(old_identity, request("q1"), "A", "a", {"A": 0.75, "B": 0.25}),
                        (old_identity, request("q2"), '{"verdict": "B"}', "b", None)])
    with CompletionCache(path) as cache:
        assert cache.migrated == 2 and cache.stats()["legacy_entries"] == 2
        new_keys = {q: cache_key(IDENTITY, request(q)) for q in ("q1", "q2")}
        legacy = {new_keys[q]: legacy_cache_key(IDENTITY, request(q)) for q in new_keys}
        assert all(legacy[k] != k for k in legacy)
        hits = cache.get_many(list(new_keys.values()), legacy_keys=legacy,
                              endpoint=IDENTITY["endpoint"])
        assert set(hits) == set(new_keys.values()) and cache.adopted == 2
        verdicts = parse_verdicts([CallResult(k, hits[k], cached=True)
                                   for k in new_keys.values()])
        assert [v.outcome for v in verdicts] == [Outcome.A, Outcome.B]
        # the probabilities recorded before the migration come out unchanged
        assert verdicts[0].probabilities == pytest.approx({"A": 0.75, "B": 0.25})
        # another endpoint asking for the same requests finds nothing: no mixing
        other = {**IDENTITY, "endpoint": "http://10.0.0.1/v1"}
        keys = [cache_key(other, request(q)) for q in ("q1", "q2")]
        assert cache.get_many(keys, legacy_keys={k: legacy_cache_key(other, request(q))
                                                 for k, q in zip(keys, ("q1", "q2"))},
                              endpoint=other["endpoint"]) == {}
    with sqlite3.connect(path) as conn:
        tables = {r[0] for r in conn.execute("SELECT name FROM sqlite_master")}
    assert "verdicts" not in tables and "completions" in tables


def test_parsers_run_after_the_cache():
    """A verdict is read from the stored completion, so the parser decides, not the cache."""
    stored = CallResult("k", Completion("Analysis...\nVerdict: B", usage=Usage(5, 5)),
                        cached=True)
    (verdict,) = parse_verdicts([stored])
    assert verdict.outcome is Outcome.B and verdict.parser == VERDICT_PARSER.label
    assert verdict.cached and verdict.raw == "Analysis...\nVerdict: B"
    labels = CallResult("k", Completion("B", label_probabilities={"A": 0.4, "B": 0.6}))
    assert parse_verdicts([labels])[0].probabilities == {"A": 0.4, "B": 0.6}
    assert math.isclose(sum(parse_verdicts([labels])[0].probabilities.values()), 1.0)
