"""Structured outputs: a schema-validated JSON value with bounded, cached, costed re-asks."""

import json
import re

import pytest

pytest.importorskip("aiohttp", reason="provider backends need the [openai] extra (aiohttp)")

from fairjudge.judges import (Completion, CompletionCache, JSONSchemaParser, Message,  # noqa: E402
                              Price, PriceTable, RunOptions, RunReport, get_backend,
                              run_structured)
from fairjudge.judges.testing import FakeProviderServer  # noqa: E402

FAST = RunOptions(concurrency=8, backoff_base=0.001, backoff_max=0.01)
SCHEMA = {"type": "object", "required": ["factor", "strength"],
          "properties": {"factor": {"type": "string", "minLength": 1},
                         "strength": {"type": "integer", "minimum": 1, "maximum": 5}},
          "additionalProperties": False}


def scripted(prompt):
    """An LLM that gets the format wrong on the first ask for some items and fixes it when
    told what was wrong; item 'never' is hopeless."""
    item = re.search(r"ITEM=(\w+)", prompt).group(1)
    reasked = "could not be used" in prompt
    if item == "never":
        return "I would rather not answer in JSON."
    if item == "prose" and not reasked:
        return "The factor is verbosity, strength four."
    if item == "range" and not reasked:
        return json.dumps({"factor": "tone", "strength": 9})
    if item == "fenced":
        return "Here it is:\n```json\n" + json.dumps({"factor": "lists", "strength": 2}) + "\n```"
    strength = {"ok": 3, "prose": 4, "range": 5}[item]
    return json.dumps({"factor": item, "strength": strength})


def prompts(items):
    return [(Message("system", "Reply with JSON."), Message("user", f"Describe ITEM={i}"))
            for i in items]


@pytest.fixture()
def server(monkeypatch):
    monkeypatch.setenv("TEST_KEY", "sk-test")
    with FakeProviderServer(seed=0, responder=scripted) as srv:
        yield srv


def backend(server):
    return get_backend("openai", model="gen-mini", base_url=server.base_url,
                       api_key_env="TEST_KEY")


def test_reasks_fix_malformed_replies_and_every_call_is_cached(server, tmp_path):
    items = ["ok", "prose", "range", "fenced", "never"]
    options = RunOptions(concurrency=8, backoff_base=0.001,
                         prices=PriceTable({"gen-mini": Price(1.0, 2.0)}))
    report = RunReport()
    with CompletionCache(tmp_path / "c.sqlite") as cache:
        results = run_structured(backend(server), prompts(items), SCHEMA, cache=cache,
                                 options=options, report=report, max_reasks=2)
    values = [r.value for r in results]
    assert values[:4] == [{"factor": "ok", "strength": 3}, {"factor": "prose", "strength": 4},
                          {"factor": "range", "strength": 5},
                          {"factor": "lists", "strength": 2}]
    assert values[4] is None and not results[4].ok
    # one ask each, one re-ask for the two malformed ones, 1 + 2 re-asks for the hopeless one
    assert [len(r.attempts) for r in results] == [1, 2, 2, 1, 3]
    assert "no parseable JSON" in results[1].errors[0]
    assert "9 is greater than the maximum of 5" in results[2].errors[0]
    assert len(results[4].errors) == 3
    assert report.fresh == 9 and server.request_count() == 9 and report.cost > 0
    # A rerun pays nothing: every ask and re-ask is in the cache.
    again = RunReport()
    with CompletionCache(tmp_path / "c.sqlite") as cache:
        rerun = run_structured(backend(server), prompts(items), SCHEMA, cache=cache,
                               options=options, report=again, max_reasks=2)
    assert [r.value for r in rerun] == values
    assert again.fresh == 0 and again.cache_hits == 9 and server.request_count() == 9


def test_no_reasks_means_one_call_each(server):
    results = run_structured(backend(server), prompts(["prose", "ok"]), SCHEMA, options=FAST,
                             max_reasks=0)
    assert [r.value for r in results] == [None, {"factor": "ok", "strength": 3}]
    assert server.request_count() == 2


def test_bad_arguments_are_named():
    with pytest.raises(ValueError, match="not a valid JSON schema"):
        JSONSchemaParser({"type": "no-such-type"}).parse(Completion("{}"))
    with pytest.raises(ValueError, match="`max_reasks` must be a non-negative integer"):
        run_structured(get_backend("replay", verdicts=_one_verdict()), [], SCHEMA,
                       max_reasks=-1)


def test_parser_reads_json_inside_prose_and_reports_the_first_violation():
    parser = JSONSchemaParser(SCHEMA)
    assert parser.parse(Completion('Sure! {"factor": "x", "strength": 2} Hope it helps.')) \
        == ({"factor": "x", "strength": 2}, "")
    value, error = parser.parse(Completion('{"factor": "x"}'))
    assert value is None and "'strength' is a required property" in error
    value, error = parser.parse(Completion("<think>plan</think>"))
    assert value is None and error == "the reply was empty"


def _one_verdict():
    import pandas as pd
    return pd.DataFrame({"item_a": ["x"], "item_b": ["y"], "winner": ["a"]})
