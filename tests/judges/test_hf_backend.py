"""The `hf` judge backend on a tiny word-level tokenizer and a random GPT-2, built offline."""

import asyncio
import os
import sys

import pytest

# huggingface_hub reads this when it is first imported: nothing in this module may download.
os.environ["HF_HUB_OFFLINE"] = "1"

torch = pytest.importorskip("torch", reason="the hf backend needs the [hf] extra")
transformers = pytest.importorskip("transformers", reason="the hf backend needs the [hf] extra")

from fairjudge.data._schema import Outcome  # noqa: E402
from fairjudge.judges import JudgeBackendError, get_backend  # noqa: E402
from fairjudge.judges._cache import CompletionCache  # noqa: E402
from fairjudge.judges._hf import HFBackend  # noqa: E402
from fairjudge.judges._parsing import VERDICT_PARSER, parse_verdicts  # noqa: E402
from fairjudge.judges._runner import RunReport, run_requests  # noqa: E402
from fairjudge.judges._types import GenerationSettings, JudgeRequest, Message  # noqa: E402

VOCAB = ["[PAD]", "[UNK]", "[EOS]", "A", "B", "tie", "which", "answer", "is", "better", "?",
         ":", "the", "a", "cat", "dog", "sat", "ran", "on", "mat", "fast", "slow", "and",
         "very", "red", "blue", "Answer", "<user>", "<assistant>"]
TOKEN = {word: i for i, word in enumerate(VOCAB)}
WORDS = VOCAB[6:26]



def outcome_of(completion):
    return VERDICT_PARSER.parse(completion).outcome

def make_tokenizer(*, pad: bool = True):
    from tokenizers import Tokenizer, models, pre_tokenizers

    core = Tokenizer(models.WordLevel(dict(TOKEN), unk_token="[UNK]"))
    core.pre_tokenizer = pre_tokenizers.Whitespace()
    special = {"eos_token": "[EOS]", "unk_token": "[UNK]"}
    if pad:
        special["pad_token"] = "[PAD]"
    return transformers.PreTrainedTokenizerFast(tokenizer_object=core, **special)


@pytest.fixture(scope="module")
def tokenizer():
    return make_tokenizer()


@pytest.fixture(scope="module")
def model():
    torch.manual_seed(0)
    # Two layers, so that anything leaking out of padded positions would reach the last one.
    config = transformers.GPT2Config(n_layer=2, n_head=2, n_embd=16, vocab_size=len(VOCAB),
                                     n_positions=256, bos_token_id=TOKEN["[EOS]"],
                                     eos_token_id=TOKEN["[EOS]"], pad_token_id=TOKEN["[PAD]"])
    return transformers.GPT2LMHeadModel(config).eval()


def prompt(i: int) -> str:
    """Prompts of varied lengths (5 to 23 words), so batches need padding."""
    words = [WORDS[(7 * i + 3 * j) % len(WORDS)] for j in range(5 + (i * 5) % 19)]
    return "which answer is better ? " + " ".join(words)


def verdict_request(text: str) -> JudgeRequest:
    return JudgeRequest(messages=(Message("user", text),), template="letter",
                        template_version="1")


def reference_probabilities(model, tokenizer, text: str, labels=("A", "B")) -> list[float]:
    """Softmax of the label logits at the last position, from one unpadded forward pass."""
    ids = torch.tensor([tokenizer.encode(text)])
    with torch.no_grad():
        logits = model(input_ids=ids).logits[0, -1]
    return torch.softmax(logits[[TOKEN[x] for x in labels]], dim=-1).tolist()


async def gather(backend, requests):
    return await asyncio.gather(*(backend.complete(r) for r in requests))


def prompts_with_each_verdict(model, tokenizer, labels, per_label=3, candidates=60):
    """Prompt indices whose reference arg max is each of the first two labels (A, B).

    Which label a randomly initialised model prefers depends on its weights, which another
    torch or transformers release may draw differently: among 6 fixed prompts both A and B
    won for only 78% of 40 measured seeds with a tie label. Among 60 candidates every
    measured seed had at least 5 of each, so the prompts are chosen by the independent
    reference, and the arg max is exercised both ways by construction.
    """
    chosen = {label: [] for label in labels[:2]}
    for i in range(candidates):
        expected = reference_probabilities(model, tokenizer, prompt(i) + "\n", labels)
        best = labels[max(range(len(labels)), key=expected.__getitem__)]
        if best in chosen and len(chosen[best]) < per_label:
            chosen[best].append(i)
        if all(len(v) == per_label for v in chosen.values()):
            break
    assert all(len(v) == per_label for v in chosen.values()), chosen
    return sorted(i for v in chosen.values() for i in v)


@pytest.mark.parametrize("tie_label", [None, "tie"])
def test_verdict_is_the_arg_max_of_the_label_logits(model, tokenizer, tie_label):
    backend = HFBackend(model_object=model, tokenizer=tokenizer, tie_label=tie_label)
    labels = ("A", "B") + ((tie_label,) if tie_label else ())
    keys = ("A", "B", "tie")[:len(labels)]
    outcomes = set()
    for i in prompts_with_each_verdict(model, tokenizer, labels):
        text = prompt(i)
        completion = asyncio.run(backend.complete(verdict_request(text)))
        expected = reference_probabilities(model, tokenizer, text + "\n", labels)
        assert list(completion.label_probabilities) == list(keys)
        assert list(completion.label_probabilities.values()) == pytest.approx(expected, abs=1e-5)
        best = max(range(len(labels)), key=expected.__getitem__)
        assert outcome_of(completion) is (Outcome.A, Outcome.B, Outcome.TIE)[best]
        assert completion.text == labels[best]
        assert completion.usage.input_tokens == len(tokenizer.encode(text))
        assert completion.usage.output_tokens == 0
        assert completion.finish_reason == "stop"
        assert completion.latency >= 0
        outcomes.add(outcome_of(completion))
    assert {Outcome.A, Outcome.B} <= outcomes  # the arg max is exercised both ways
    assert backend.identity() == {"backend": "hf", "model": "custom", "labels": list(labels)}


def test_chat_template_renders_the_prompt(model):
    tokenizer = make_tokenizer()
    tokenizer.chat_template = ("{% for m in messages %}<{{ m['role'] }}> {{ m['content'] }} "
                               "{% endfor %}{% if add_generation_prompt %}<assistant> Answer :"
                               "{% endif %}")
    backend = HFBackend("tiny-chat", model_object=model, tokenizer=tokenizer)
    text = prompt(3)
    completion = asyncio.run(backend.complete(verdict_request(text)))
    rendered = f"<user> {text} <assistant> Answer :"
    assert backend.render_prompt(verdict_request(text).messages) == (rendered, True)
    expected = reference_probabilities(model, tokenizer, rendered)
    assert list(completion.label_probabilities.values()) == pytest.approx(expected, abs=1e-5)
    assert backend.identity()["model"] == "tiny-chat"


def test_batch_size_does_not_change_verdicts(model, tokenizer):
    requests = [verdict_request(prompt(i)) for i in range(10)]
    one = HFBackend(model_object=model, tokenizer=tokenizer, batch_size=1)
    four = HFBackend(model_object=model, tokenizer=tokenizer, batch_size=4)
    alone = asyncio.run(gather(one, requests))
    batched = asyncio.run(gather(four, requests))
    assert len({len(r.messages[0].content.split()) for r in requests}) > 5  # padding needed
    assert len({round(c.label_probabilities["A"], 6) for c in alone}) == 10
    for x, y in zip(alone, batched):
        assert outcome_of(x) is outcome_of(y)
        assert x.label_probabilities["A"] == pytest.approx(y.label_probabilities["A"], abs=1e-5)
        assert x.label_probabilities["B"] == pytest.approx(y.label_probabilities["B"], abs=1e-5)
        assert x.usage == y.usage


def test_concurrent_requests_share_forward_passes(model, tokenizer, monkeypatch):
    backend = HFBackend(model_object=model, tokenizer=tokenizer, batch_size=4)
    calls = []
    forward = model.forward

    def counting_forward(*args, **kwargs):
        calls.append(kwargs["input_ids"].shape[0])
        return forward(*args, **kwargs)

    monkeypatch.setattr(model, "forward", counting_forward)
    completions = asyncio.run(gather(backend, [verdict_request(prompt(i)) for i in range(8)]))
    assert calls == [4, 4]
    assert all(outcome_of(c) in (Outcome.A, Outcome.B) for c in completions)


def test_tokenizer_without_pad_token_pads_with_eos(model, tokenizer):
    plain = HFBackend(model_object=model, tokenizer=make_tokenizer(pad=False), batch_size=4)
    padded = HFBackend(model_object=model, tokenizer=tokenizer, batch_size=4)
    requests = [verdict_request(prompt(i)) for i in range(4)]
    for x, y in zip(asyncio.run(gather(plain, requests)), asyncio.run(gather(padded, requests))):
        assert x.label_probabilities["A"] == pytest.approx(y.label_probabilities["A"], abs=1e-5)


def test_generation_returns_the_greedy_continuation(model, tokenizer):
    backend = HFBackend(model_object=model, tokenizer=tokenizer)
    text = prompt(2)
    request = JudgeRequest(messages=(Message("user", text),), kind="generate",
                           settings=GenerationSettings(max_tokens=6), template="reference",
                           template_version="1")
    completion = asyncio.run(backend.complete(request))
    ids = tokenizer.encode(text + "\n")
    new = []
    with torch.no_grad():
        for _ in range(6):
            step = int(model(input_ids=torch.tensor([ids + new])).logits[0, -1].argmax())
            new.append(step)
            if step == TOKEN["[EOS]"]:
                break
    assert completion.outcome is None
    assert completion.text == tokenizer.decode(new, skip_special_tokens=True)
    assert completion.text.strip()
    assert completion.usage.input_tokens == len(ids)
    assert completion.usage.output_tokens == len(new)
    assert completion.finish_reason == ("stop" if new[-1] == TOKEN["[EOS]"] else "length")


def test_runner_serves_the_second_run_from_the_cache(model, tokenizer, tmp_path):
    requests = [verdict_request(prompt(i)) for i in range(6)]
    backend = HFBackend("tiny-gpt2", model_object=model, tokenizer=tokenizer, batch_size=4)
    with CompletionCache(tmp_path / "verdicts.sqlite") as cache:
        first_report, second_report = RunReport(), RunReport()
        first = parse_verdicts(run_requests(backend, requests, cache=cache, report=first_report))
        second = parse_verdicts(run_requests(backend, requests, cache=cache,
                                                report=second_report))
    assert (first_report.fresh, first_report.cache_hits) == (6, 0)
    assert (second_report.fresh, second_report.cache_hits) == (0, 6)
    assert all(v.cached for v in second) and not any(v.cached for v in first)
    assert [v.outcome for v in first] == [v.outcome for v in second]
    assert [v.probabilities for v in first] == [v.probabilities for v in second]
    assert all(v.outcome in (Outcome.A, Outcome.B) for v in first)


def test_missing_dependency_names_the_extra(monkeypatch):
    monkeypatch.setitem(sys.modules, "transformers", None)
    with pytest.raises(ImportError, match=r"pip install 'fairjudge\[hf\]'"):
        HFBackend(model_object=object(), tokenizer=object())
    with pytest.raises(ImportError, match=r"fairjudge\[hf\]"):
        get_backend("hf", model_object=object(), tokenizer=object())


def test_loading_a_missing_model_explains_the_offline_search(tmp_path):
    with pytest.raises(JudgeBackendError, match="only local files were searched"):
        HFBackend(str(tmp_path / "no-such-model"))


@pytest.mark.parametrize("kwargs, message", [
    ({}, "pass `model`"),
    ({"model": ""}, "`model` must be a non-empty"),
    ({"model_object": "m"}, "`model_object` needs its `tokenizer`"),
    ({"model": "m", "batch_size": 0}, "`batch_size` must be a positive integer; got 0"),
    ({"model": "m", "max_new_tokens": -1}, "`max_new_tokens` must be a positive integer"),
    ({"model": "m", "labels": ("A",)}, "`labels` must be two distinct"),
    ({"model": "m", "labels": ("A", "A")}, "`labels` must be two distinct"),
    ({"model": "m", "tie_label": "A"}, "`tie_label` must be a non-empty string other than"),
])
def test_invalid_settings_are_named(kwargs, message):
    with pytest.raises(ValueError, match=message):
        HFBackend(**kwargs)


@pytest.mark.parametrize("labels, message", [
    (("A", "zebra"), "label 'zebra' has no token of its own"),
    (("A", "A B"), "labels 'A' and 'A B' share first token"),
])
def test_labels_the_tokenizer_cannot_separate_are_rejected(model, tokenizer, labels, message):
    with pytest.raises(ValueError, match=message):
        HFBackend(model_object=model, tokenizer=tokenizer, labels=labels)


def test_bad_requests_raise_backend_errors(model, tokenizer):
    backend = HFBackend(model_object=model, tokenizer=tokenizer)
    with pytest.raises(JudgeBackendError, match="request kind must be one of"):
        asyncio.run(backend.complete(JudgeRequest(messages=(Message("user", "a"),),
                                                  kind="rank")))
    with pytest.raises(JudgeBackendError, match="the model reads at most 256"):
        asyncio.run(backend.complete(verdict_request(" ".join(["cat"] * 300))))


def test_a_failed_forward_pass_fails_its_batch_only(model, tokenizer, monkeypatch):
    backend = HFBackend(model_object=model, tokenizer=tokenizer, batch_size=2)
    forward = model.forward
    state = {"calls": 0}

    def failing_once(*args, **kwargs):
        state["calls"] += 1
        if state["calls"] == 1:
            raise RuntimeError("out of memory")
        return forward(*args, **kwargs)

    monkeypatch.setattr(model, "forward", failing_once)

    async def main():
        return await asyncio.gather(*(backend.complete(verdict_request(prompt(i)))
                                      for i in range(4)), return_exceptions=True)

    results = asyncio.run(main())
    assert [type(r) for r in results[:2]] == [JudgeBackendError, JudgeBackendError]
    assert "forward pass failed: RuntimeError: out of memory" in str(results[0])
    assert all(outcome_of(r) in (Outcome.A, Outcome.B) for r in results[2:])
