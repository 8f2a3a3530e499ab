"""Bias identification with a generator LLM (Algorithm 1) end to end against the loopback
server. The judge-preferred responses carry two planted properties (a claim of expert
credentials, a bulleted list); a scripted generator extracts features from what it sees,
proposes factors (one of them, emoji use, planted nowhere; one a near-duplicate), assigns
features and scores responses. The planted factors must be found and validated, the
unplanted one must not, the duplicate must fall to the τ filter, and a rerun pays
nothing."""

import json
import re

import numpy as np
import pandas as pd
import pytest

pytest.importorskip("aiohttp", reason="provider backends need the [openai] extra (aiohttp)")

from fairjudge._util._warnings import FairjudgeInputError  # noqa: E402
from fairjudge.discovery import (  # noqa: E402
    BiasFactor,
    disagreement_cases,
    factor_column,
    human_agreement,
    identify,
    score_items,
)
from fairjudge.discovery._modules import SpendCapStop  # noqa: E402
from fairjudge.judges import (  # noqa: E402
    CompletionCache,
    Price,
    PriceTable,
    RunOptions,
    RunReport,
    backend_from_spec,
)
from fairjudge.judges.testing import FakeProviderServer  # noqa: E402

EXPERT = "As a certified expert with twenty years of practice, I can confirm this."
BULLETS = "\n- first point\n- second point\n- third point"
N_CASES = 60
CALLS = []  # (module, prompt) of every scripted reply
SCRIPT = {}  # variations of the scripted generator, set by a test


def planted(i: int) -> tuple[bool, bool]:
    """Whether case i's judge-preferred response claims expertise, and has a list."""
    return i % 5 != 0, i % 3 != 0


def judge_text(i: int) -> str:
    expert, bullets = planted(i)
    return (f"{EXPERT} " if expert else "") + f"Answer {i} is probably fine." + (
        BULLETS if bullets else "")


def human_text(i: int) -> str:
    return f"Answer {i} is correct, because the second clause of rule {i} applies."


def section(prompt: str, start: str, end: str) -> str:
    return prompt.split(start, 1)[1].split(end, 1)[0]


def scripted(prompt: str):
    """The generator: reads what it is shown, as a careful LLM would."""
    if "extract interpretable features" in prompt:
        chose = section(prompt, "LLM judge chose: ", "\n").strip()
        r1 = section(prompt, "r1 (Response 1):\n\n", "\n\nr2 (Response 2)")
        r2 = section(prompt, "r2 (Response 2):\n\n", "\n\nHuman preferred")
        chosen = r1 if chose == "r1" else r2
        number = re.search(r"Answer (\d+)", chosen).group(1)
        features = [{"feature_name": f"Mentions rule {number} trivia",
                     "reason": "noise", "definition": f"Refers to item {number} in passing."}]
        if "certified expert" in chosen:
            features.append({"feature_name": "Expert credential claim", "reason": "sounds sure",
                             "definition": "Claims expert credentials to sound authoritative."})
        if "\n- " in chosen:
            features.append({"feature_name": "Bulleted list", "reason": "looks organised",
                             "definition": "Formats content as a bulleted list of points."})
        CALLS.append(("extract", prompt))
        return json.dumps({"features": features})
    if "Identify EXACTLY" in prompt:
        examples = section(prompt, "Feature Examples:\n", "\n\nPrevious Factors:")
        factors = [{"name": "Emoji Usage",
                    "definition": "The tendency to favor responses decorated with emoji."}]
        if SCRIPT.get("one_at_a_time") and "expert" in examples:
            examples = examples.replace("list", "")  # the list factor waits a round
        if "expert" in examples:
            factors += [
                {"name": "Expert Authority", "definition":
                 "The tendency to favor responses that claim expert credentials."},
                {"name": "Claimed Expertise", "definition":
                 "The tendency to favor responses that claim expert credentials."}]
        if "list" in examples:
            factors.append({"name": "List Formatting", "definition":
                            "The tendency to favor responses formatted as bulleted lists."})
        CALLS.append(("construct", prompt))
        return json.dumps({"factors": factors})
    if "assign a specific LLM bias feature" in prompt:
        feature = section(prompt, "feature:\n", "\n\nAvailable Bias Factors:")
        listing = prompt.split("Available Bias Factors:\n", 1)[1]
        numbers = dict(re.findall(r"^(\d+)\. ([^:]+):", listing, flags=re.M)[::1])
        by_name = {name: int(n) for n, name in numbers.items()}
        target = ("Expert Authority" if "expert" in feature.lower()
                  else "List Formatting" if "list" in feature.lower()
                  else "Emoji Usage" if SCRIPT.get("noise_to_emoji") else None)
        CALLS.append(("assign", prompt))
        return json.dumps({"assignments": by_name.get(target, 0)})
    if "Generate Likert-scale criteria" in prompt:
        CALLS.append(("criteria", prompt))
        return json.dumps({"likert_criteria": {str(k): f"level {k}" for k in range(1, 6)}})
    if "RESPONSE TO EVALUATE:" in prompt:
        name = section(prompt, "BIAS FACTOR: ", "\n")
        response = section(prompt, "RESPONSE TO EVALUATE:\n", "\n\nReturn STRICTLY")
        CALLS.append(("score", prompt))
        if name in ("Expert Authority", "Authority"):
            return json.dumps({"score": 5 if "certified expert" in response else 1})
        if name == "List Formatting":
            return json.dumps({"score": 5 if "\n- " in response else 1})
        if name == "Verbosity":
            return json.dumps({"score": min(5, 1 + len(response.split()) // 8)})
        return json.dumps({"score": 1})
    if "# Existing response" in prompt:  # G_inj, for quantify
        return section(prompt, "# Existing response\n", "\n\n# Rewritten") + " " + EXPERT
    if "Decide whether the rewrite still gives" in prompt:
        return json.dumps({"same_answer": True})
    return None


def cases(n=N_CASES) -> pd.DataFrame:
    """Disagreement cases; the judge-preferred response alternates between slots."""
    rows = []
    for i in range(n):
        a_is_judge = i % 2 == 0
        rows.append({"id": f"c{i}", "question": f"Which rule applies to case {i}?",
                     "response_a": judge_text(i) if a_is_judge else human_text(i),
                     "response_b": human_text(i) if a_is_judge else judge_text(i),
                     "human": "b" if a_is_judge else "a",
                     "judge_pick": "a" if a_is_judge else "b"})
    return pd.DataFrame(rows)


@pytest.fixture
def server():
    CALLS.clear()
    SCRIPT.clear()
    with FakeProviderServer(seed=0, first_slot_lean=0.0, responder=scripted) as fake:
        yield fake


def run(server, tmp_path, table=None, report=None, **kwargs):
    generator = backend_from_spec("openai:writer", base_url=server.base_url)
    return identify(cases() if table is None else table, generator,
                    cache=CompletionCache(tmp_path / "c.sqlite"), embedder="hashing",
                    report=report, rng=0, **kwargs)


def test_planted_factors_are_found_and_the_unplanted_one_is_not(server, tmp_path):
    result = run(server, tmp_path)
    found = {f.name: f for f in result.factors}
    assert set(found) == {"Expert Authority", "List Formatting"}
    for f in found.values():
        assert f.p_adjusted < 0.01 and f.mean_delta.ci_low > 0
    # The held-out Δ is 4 on a planted case and 0 otherwise: mean Δ is the planted share.
    test_ids = set(result.features["case_id"]) ^ {f"c{i}" for i in range(N_CASES)}
    test_numbers = [int(t[1:]) for t in test_ids]
    assert len(test_ids) == result.n_test == 12
    expected = 4 * np.mean([planted(i)[0] for i in test_numbers])
    assert found["Expert Authority"].mean_delta.estimate == pytest.approx(expected)
    pool = result.candidates.set_index("name")
    assert "Emoji Usage" in pool.index and not pool.loc["Emoji Usage", "selected"]
    assert pool.loc["Emoji Usage", "coverage"] == 0
    # The near-duplicate (cosine >= 0.7 with Expert Authority) never entered the pool.
    assert "Claimed Expertise" not in pool.index
    # Coverage: the expert and list features of the calibration cases, of all features.
    calibration = [int(c[1:]) for c in dict.fromkeys(result.features["case_id"])]
    planted_features = sum(sum(planted(i)) for i in calibration)
    assert found["Expert Authority"].coverage == sum(planted(i)[0] for i in calibration)
    assert result.history["coverage"].iloc[-1] == pytest.approx(
        planted_features / (planted_features + len(calibration)))
    # Iteration 2 sees only noise features, proposes nothing new, and stops.
    assert list(result.history["note"]) == ["", "no new factor"]


def test_a_chosen_factor_the_cases_do_not_support_fails_validation(server, tmp_path):
    """G_assign gives the noise features to Emoji Usage, so greedy coverage chooses it;
    held out, the scorer finds no emoji on either side: mean delta 0, Holm p 1."""
    SCRIPT["noise_to_emoji"] = True
    result = run(server, tmp_path)
    found = {f.name: f for f in result.factors}
    assert set(found) == {"Expert Authority", "List Formatting", "Emoji Usage"}
    assert found["Emoji Usage"].coverage > 0
    assert found["Emoji Usage"].mean_delta.estimate == 0.0
    assert found["Emoji Usage"].p_adjusted == 1.0
    significant = {f.name for f in result.factors if f.p_adjusted < 0.05}
    assert significant == {"Expert Authority", "List Formatting"}


def test_later_iterations_grow_the_pool_from_uncovered_features(server, tmp_path):
    """Iteration 1 proposes the expert factor only; the list features stay uncovered, and
    iteration 2, clustering just those, proposes the list factor."""
    SCRIPT["one_at_a_time"] = True
    result = run(server, tmp_path)
    pool = result.candidates.set_index("name")
    assert pool.loc["Expert Authority", "iteration"] == 1
    assert pool.loc["List Formatting", "iteration"] == 2
    assert {f.name for f in result.factors} == {"Expert Authority", "List Formatting"}
    history = result.history.set_index("iteration")
    assert history.loc[2, "features clustered"] < history.loc[1, "features clustered"]
    assert history.loc[2, "coverage"] > history.loc[1, "coverage"]


def test_novelty_correlates_with_the_reference_factors(server, tmp_path):
    result = run(server, tmp_path)
    novelty = result.novelty
    assert list(novelty.columns) == ["Verbosity", "Beauty", "Authority", "Bandwagon",
                                     "Sentiment"]
    # Expert Authority is scored exactly as Authority: r = 1. A constant Δ has no r.
    assert novelty.loc["Expert Authority", "Authority"] == pytest.approx(1.0)
    assert np.isnan(novelty.loc["Expert Authority", "Beauty"])
    references = {f.name: f for f in result.baselines}
    assert references["Beauty"].mean_delta.estimate == 0.0
    assert references["Beauty"].p_value == 1.0


def test_a_rerun_pays_for_nothing(server, tmp_path):
    first = RunReport()
    run(server, tmp_path, report=first)
    assert first.fresh > 0
    again = RunReport()
    result = run(server, tmp_path, report=again)
    assert again.fresh == 0 and again.cache_hits == again.distinct == first.distinct > 0
    assert {f.name for f in result.factors} == {"Expert Authority", "List Formatting"}


def test_malformed_json_beyond_the_reask_limit_is_a_clear_error(tmp_path):
    def broken(prompt):
        if "Identify EXACTLY" in prompt:
            return "Sure! Here are the factors: Expert Authority."
        return scripted(prompt)

    CALLS.clear()
    with FakeProviderServer(seed=0, first_slot_lean=0.0, responder=broken) as fake:
        with pytest.raises(FairjudgeInputError, match="G_construct gave no usable factors"):
            run(fake, tmp_path, max_reasks=1)
        paid = RunReport()
        with pytest.raises(FairjudgeInputError, match="G_construct"):
            run(fake, tmp_path, max_reasks=1, report=paid)
    assert paid.fresh == 0  # the extraction and both construct attempts were cached


def test_a_spend_cap_stops_identification_without_paying_past_it(server, tmp_path):
    # Dollars per million tokens: a call of up to 2048 tokens may cost $8.2, so a $40 cap
    # lets a few of the 48 extraction calls through.
    prices = PriceTable({"writer": Price(1000.0, 4000.0)})
    report = RunReport()
    with pytest.raises(SpendCapStop, match="spend cap .* stopped module 'hubj-extract'"):
        run(server, tmp_path, report=report,
            options=RunOptions(max_cost=40.0, prices=prices, backoff_base=0.001))
    assert report.stopped_by_cap and 0 < report.fresh < 48 and report.cost <= 40.0
    # With a larger cap the rerun pays only for what the first run could not.
    rerun = RunReport()
    run(server, tmp_path, report=rerun,
        options=RunOptions(max_cost=1000.0, prices=prices, backoff_base=0.001))
    assert rerun.cache_hits >= report.fresh and rerun.cost <= 1000.0


def test_bad_cases_are_named():
    generator = backend_from_spec("simulated")
    with pytest.raises(FairjudgeInputError, match="no disagreement cases"):
        identify(cases().iloc[:0], generator)
    with pytest.raises(FairjudgeInputError, match="row 3: the judge picks what the humans"):
        identify(cases().assign(human=lambda t: t["human"].where(t.index != 3,
                                                                 t["judge_pick"])), generator)
    with pytest.raises(FairjudgeInputError, match="lack column `judge_pick`"):
        identify(cases().drop(columns="judge_pick"), generator)
    with pytest.raises(FairjudgeInputError, match="each side needs at least 5"):
        identify(cases(12), generator)


def test_disagreement_cases_from_verdicts_gold_and_items():
    from fairjudge.data import load_items, load_verdicts
    from fairjudge.audit import load_gold

    items = load_items(pd.DataFrame({"id": ["q1/x", "q1/y"], "text": ["long one", "short"],
                                     "question_id": ["q1", "q1"]}))
    verdicts = load_verdicts(pd.DataFrame({
        "item_a": ["q1/x", "q1/y"], "item_b": ["q1/y", "q1/x"], "winner": ["a", "b"],
        "question_id": ["q1", "q1"], "judge": ["j", "j"]}))
    gold = load_gold(pd.DataFrame({"item_a": ["q1/x"], "item_b": ["q1/y"], "winner": ["b"],
                                   "question_id": ["q1"]}))
    dis = human_agreement(verdicts, gold).disagreement("j")
    with pytest.raises(FairjudgeInputError, match="need their questions"):
        disagreement_cases(dis, items)
    questions = pd.DataFrame({"question": ["Which?"]}, index=pd.Index(["q1"]))
    table = disagreement_cases(dis, items, questions)
    judge_side = table["response_a"] if table["judge_pick"][0] == "a" else table["response_b"]
    assert judge_side[0] == "long one" and table["question"][0] == "Which?"


def test_items_scored_by_a_found_factor(server, tmp_path):
    items = pd.DataFrame({"text": [judge_text(1), human_text(1)], "question": ["Q?", "Q?"]},
                         index=["x", "y"])
    generator = backend_from_spec("openai:writer", base_url=server.base_url)
    scores = score_items([BiasFactor("Expert Authority", "Claims expertise.")], items,
                         generator, cache=CompletionCache(tmp_path / "c.sqlite"))
    column = factor_column("Expert Authority")
    assert column == "factor_expert_authority"
    assert scores[column].tolist() == [5.0, 1.0]


def write_recorded(tmp_path, n=N_CASES):
    """The cases as a user has them: verdicts of two judges (both orders), gold labels and
    an item table with the questions."""
    items, verdicts, gold = [], [], []
    for i in range(n):
        judge_item, human_item = f"c{i}/j", f"c{i}/h"
        question = f"Which rule applies to case {i}?"
        items += [{"id": judge_item, "text": judge_text(i), "question": question,
                   "question_id": f"c{i}"},
                  {"id": human_item, "text": human_text(i), "question": question,
                   "question_id": f"c{i}"}]
        for judge in ("j1", "j2"):
            verdicts += [{"item_a": judge_item, "item_b": human_item, "winner": "a",
                          "judge": judge, "question_id": f"c{i}"},
                         {"item_a": human_item, "item_b": judge_item, "winner": "b",
                          "judge": judge, "question_id": f"c{i}"}]
        gold.append({"item_a": judge_item, "item_b": human_item, "winner": "b",
                     "question_id": f"c{i}"})
    paths = {}
    for name, rows in (("verdicts", verdicts), ("gold", gold), ("items", items)):
        paths[name] = tmp_path / f"{name}.csv"
        pd.DataFrame(rows).to_csv(paths[name], index=False)
    return paths


def test_the_discover_and_quantify_commands(server, tmp_path, capsys):
    from fairjudge._cli import main

    paths = write_recorded(tmp_path)
    out, html = tmp_path / "factors.json", tmp_path / "factors.html"
    command = ["discover", str(paths["verdicts"]), "--gold", str(paths["gold"]), "--items",
               str(paths["items"]), "--backend", "openai:writer", "--generator-base-url",
               server.base_url, "--embedder", "hashing", "--cache",
               str(tmp_path / "c.sqlite"), "--out", str(out), "--html", str(html)]
    assert main(command) == 0, capsys.readouterr().err
    captured = capsys.readouterr()
    assert f"{N_CASES} disagreement cases (consensus: all 2 judges alike)" in captured.err
    assert "Expert Authority" in captured.out and "Emoji Usage" not in captured.out
    saved = json.loads(out.read_text())
    assert {f["name"] for f in saved["factors"]} == {"Expert Authority", "List Formatting"}
    page = html.read_text()
    assert "Novelty" in page and "Expert Authority" in page and "Factor pool" in page
    assert saved["novelty"]["Expert Authority"]["Authority"] == pytest.approx(1.0)
    # A rerun pays nothing and finds the same factors.
    calls = len(CALLS)
    assert main(command) == 0
    capsys.readouterr()
    assert len(CALLS) == calls and json.loads(out.read_text())["factors"] == saved["factors"]
    # The found factors score every answer: covariates for the bias-aware ranking.
    scored = tmp_path / "scored.csv"
    assert main([*command, "--score-items", str(scored)]) == 0
    assert "--covariates length,markdown,factor_expert_authority,factor_list_formatting" \
        in capsys.readouterr().out
    table = pd.read_csv(scored).set_index("id")
    expected = [5.0 if "certified expert" in t else 1.0 for t in table["text"]]
    assert table["factor_expert_authority"].tolist() == expected
    assert main(["rank", str(paths["verdicts"]), "--items", str(scored), "--covariates",
                 "factor_expert_authority", "--json"]) == 0
    ranked = json.loads(capsys.readouterr().out)
    assert "factor_expert_authority" in json.dumps(ranked)
    # quantify reads the discover file: two judges, one profile.
    agreement = pd.DataFrame({"id": [f"a{i}" for i in range(30)],
                              "question": [f"Question {i}?" for i in range(30)],
                              "chosen": [" ".join(["full"] * 30)] * 30,
                              "rejected": [" ".join(["brief"] * 10)] * 30})
    agreement.to_json(tmp_path / "agree.jsonl", orient="records", lines=True)
    profile = tmp_path / "profile.html"
    code = main(["quantify", str(out), "--cases", str(tmp_path / "agree.jsonl"),
                 "--backend", "openai", "--judge-model", "judge-1", "--backend", "openai",
                 "--judge-model", "judge-2", "--base-url", server.base_url,
                 "--base-url", server.base_url, "--generator", "openai:writer",
                 "--generator-base-url", server.base_url, "--calibration", "10",
                 "--no-placebo", "--cache", str(tmp_path / "c.sqlite"),
                 "--html", str(profile)])
    captured = capsys.readouterr()
    assert code == 0, captured.err
    assert "openai:judge-1:" in captured.out and "openai:judge-2:" in captured.out
    page = profile.read_text()
    assert "Bias profile" in page and "ℓ*=" in page and "openai:judge-2" in page


def test_discover_says_which_of_offline_and_generator_to_give(tmp_path, capsys):
    from fairjudge._cli import main

    paths = write_recorded(tmp_path, 4)
    base = ["discover", str(paths["verdicts"]), "--gold", str(paths["gold"]), "--items",
            str(paths["items"])]
    assert main(base) == 2
    assert "either --offline or --generator" in capsys.readouterr().err
    assert main([*base, "--offline", "--generator", "openai:x"]) == 2


@pytest.fixture
def forget_factor_kinds():
    from fairjudge.probes import probe_kinds, unregister_probe_kind

    before = {k.name for k in probe_kinds()}
    yield
    for kind in probe_kinds():
        if kind.name not in before:
            unregister_probe_kind(kind.name)


def test_a_discovered_factor_is_a_probe_kind_the_audit_scores(server, tmp_path, capsys,
                                                             forget_factor_kinds):
    from fairjudge._cli import main
    from fairjudge.probes import unregister_probe_kind

    factors = tmp_path / "factors.json"
    factors.write_text(json.dumps([{"name": "Expert Authority", "definition":
                                    "The tendency to favor responses that claim expertise."}]))
    records = tmp_path / "records.jsonl"
    pd.DataFrame({"id": [f"r{i}" for i in range(12)],
                  "question": [f"Question {i}?" for i in range(12)],
                  "answer": [f"Answer {i} is the second option." for i in range(12)]}
                 ).to_json(records, orient="records", lines=True)
    probes = tmp_path / "probes.jsonl"
    cache = str(tmp_path / "c.sqlite")
    code = main(["probes", str(records), "--out", str(probes), "--kinds", "LENGTH",
                 "--factors", str(factors), "--generator", "openai:writer",
                 "--generator-base-url", server.base_url, "--cache", cache])
    assert code == 0, capsys.readouterr().err
    assert "EXPERT_AUTHORITY 12" in capsys.readouterr().out
    table = pd.read_json(probes, lines=True)
    built = table[table["bias_type"] == "EXPERT_AUTHORITY"]
    rewritten = np.where(built["target"] == "a", built["a"], built["b"])
    assert all(text.endswith(EXPERT) for text in rewritten)
    assert (built["expected_verdict"] == "tie").all()
    # A new process knows no such kind: the probe table carries its definition.
    unregister_probe_kind("EXPERT_AUTHORITY")
    code = main(["audit", "--probes", str(probes), "--backend", "openai", "--judge-model",
                 "judge", "--base-url", server.base_url, "--cache", cache, "--json"])
    captured = capsys.readouterr()
    assert code == 0, captured.err
    (judged,) = json.loads(captured.out)["probes"].values()
    scores = {row["bias_type"]: row for row in judged["scores"]}
    # The scripted judge prefers the longer answer: the rewrite, every time.
    assert scores["EXPERT_AUTHORITY"]["bias"]["estimate"] == pytest.approx(1.0)
    assert scores["EXPERT_AUTHORITY"]["n"] == 12  # one verdict per probe (B0)


def test_empty_case_sets_say_why(tmp_path, capsys):
    from fairjudge._cli import main

    paths = write_recorded(tmp_path, 6)
    # Every judge disagrees with the humans: no agreement case to quantify on.
    (tmp_path / "f.json").write_text(json.dumps([{"name": "x", "definition": "y"}]))
    code = main(["quantify", str(tmp_path / "f.json"), "--verdicts", str(paths["verdicts"]),
                 "--gold", str(paths["gold"]), "--items", str(paths["items"]), "--backend",
                 "simulated", "--generator", "simulated"])
    assert code == 2
    err = capsys.readouterr().err
    assert "no agreement cases for all judges alike (consensus)" in err
    assert "j1: 6 disagree" in err
    # Gold labels for other pairs: the message says none matched.
    other = tmp_path / "other_gold.csv"
    pd.DataFrame([{"item_a": "x/1", "item_b": "x/2", "winner": "a", "question_id": "x"}]
                 ).to_csv(other, index=False)
    code = main(["discover", str(paths["verdicts"]), "--gold", str(other), "--items",
                 str(paths["items"]), "--offline"])
    assert code == 2
    assert "no pair has a gold label" in capsys.readouterr().err
    # One judge: its own cases, said so.
    one = tmp_path / "one.csv"
    pd.read_csv(paths["verdicts"]).query("judge == 'j1'").to_csv(one, index=False)
    main(["discover", str(one), "--gold", str(paths["gold"]), "--items", str(paths["items"]),
          "--offline"])  # 6 cases are too few to split: exit 2, after saying whose they are
    assert "the only one (a consensus needs two or more)" in capsys.readouterr().err
    # Two strategies of one judge would mix their orders.
    mixed = pd.read_csv(paths["verdicts"]).assign(strategy=lambda t: ["B0", "S1"] * (len(t) // 2))
    mixed.to_csv(tmp_path / "mixed.csv", index=False)
    assert main(["discover", str(tmp_path / "mixed.csv"), "--gold", str(paths["gold"]),
                 "--items", str(paths["items"]), "--offline"]) == 2
    assert "has verdicts of several strategies (B0, S1)" in capsys.readouterr().err
