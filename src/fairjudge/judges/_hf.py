"""A local Hugging Face causal language model as a judge, read from its next-token logits.

The verdict is the arg max of the label logits at the end of the prompt, not parsed text:
one forward pass per request, no sampling, and the probabilities come for free
[bias-aware-active-topk, Technical Appendix, "Open-weight and closed (API) judge
details"]. Concurrent requests are batched into single forward passes.
"""

from __future__ import annotations

import asyncio
import collections
import inspect
import threading
import time

from fairjudge._util._errors import JudgeBackendError
from fairjudge._util._warnings import FairjudgeInputError
from fairjudge.judges._base import JudgeBackend
from fairjudge.judges._types import Completion, JudgeRequest, Usage

_MISSING_DEPENDENCIES = "the `hf` backend needs pip install 'fairjudge[hf]'"
_KINDS = ("verdict", "generate")
# Probability keys are in the frame of the order shown, whatever the label text is.
_KEYS = ("A", "B", "tie")


def _import_dependencies():
    """torch and transformers, or an ImportError naming the extra to install."""
    try:
        import torch
        import transformers
    except ImportError as err:
        raise ImportError(f"{_MISSING_DEPENDENCIES} ({err})") from err
    return torch, transformers


class HFBackend(JudgeBackend):
    """A local causal LM that judges through the next-token logits of the answer labels.

    For a verdict request the chat messages are rendered with the tokenizer's chat template
    (with the generation prompt), or, for a tokenizer without one, joined with blank lines
    and ended by a newline. One forward pass gives the logits of the next token. Each label
    scores the logsumexp of the logits of the first token of ``label`` and of ``" " + label``
    (the two ways a tokenizer may spell it after the prompt); a softmax over the labels gives
    the probabilities and their arg max is the verdict (the first label wins an exact tie).

    The verdict is deterministic: ``settings.temperature`` (and ``logprobs``,
    ``json_response``, ``reasoning_effort``) have no effect on it. Generation requests are
    always greedy, so the temperature is ignored there too; ``settings.max_tokens`` (or
    ``max_completion_tokens``) overrides ``max_new_tokens``.

    Parameters
    ----------
    model : str, optional
        A Hugging Face model id or a local folder, loaded with ``AutoTokenizer`` and
        ``AutoModelForCausalLM``. With ``model_object`` it is only the display name that
        enters cache keys (``"custom"`` if omitted); it is never expanded to a full path.
    model_object : transformers.PreTrainedModel, optional
        An already loaded causal LM (moved to ``device`` and put in eval mode).
    tokenizer : transformers.PreTrainedTokenizerBase, optional
        The tokenizer to use (required with ``model_object``, else loaded from ``model``).
    device : str
        Torch device, e.g. ``"cpu"``, ``"cuda"`` or ``"cuda:1"``.
    batch_size : int
        Most verdict requests sent through one forward pass.
    labels : tuple of two str
        The labels the prompt asks for, first-shown answer first.
    tie_label : str, optional
        A third label that declares a tie; without it the judge cannot tie.
    max_new_tokens : int
        Default completion budget of generation requests.
    local_files_only : bool
        Load ``model`` only from the local Hugging Face cache or folder, never downloading.

    Raises
    ------
    ValueError
        On invalid settings, or labels whose first tokens cannot tell them apart.
    ImportError
        If torch or transformers is missing (install the ``hf`` extra).
    JudgeBackendError
        If the model or tokenizer cannot be loaded.

    Notes
    -----
    Batches are formed by one flusher task per event loop: each verdict request is queued,
    and the flusher takes up to ``batch_size`` queued requests after yielding once to the
    event loop, so callers that are ready at the same moment share a forward pass. Prompts
    are padded on the left with an attention mask and position ids that count only real
    tokens, so a verdict does not depend on the batch it lands in (up to float rounding).
    Forward passes and generation run in a worker thread, one at a time.

    Examples
    --------
    >>> from fairjudge.judges._hf import HFBackend
    >>> from fairjudge.judges._types import JudgeRequest, Message
    >>> judge = HFBackend("Qwen/Qwen2.5-0.5B-Instruct", batch_size=16)  # doctest: +SKIP
    >>> import asyncio
    >>> request = JudgeRequest(messages=(Message("user", "... Answer A or B."),))
    >>> asyncio.run(judge.complete(request)).label_probabilities  # doctest: +SKIP
    {'A': 0.83, 'B': 0.17}
    """

    name = "hf"
    cacheable = True

    def __init__(self, model: str | None = None, *, model_object=None, tokenizer=None,
                 device: str = "cpu", batch_size: int = 8, labels: tuple = ("A", "B"),
                 tie_label: str | None = None, max_new_tokens: int = 512,
                 local_files_only: bool = True):
        labels = tuple(labels) if isinstance(labels, (tuple, list)) else labels
        _validate(model, model_object, tokenizer, batch_size, labels, tie_label,
                  max_new_tokens)
        torch, transformers = _import_dependencies()
        self._torch = torch
        self.model = model if model is not None else "custom"
        self.batch_size = batch_size
        self.labels = labels
        self.tie_label = tie_label
        self._names = labels + ((tie_label,) if tie_label else ())
        self.max_new_tokens = max_new_tokens
        self.device = device
        if tokenizer is None:
            tokenizer = _load(transformers.AutoTokenizer, model, local_files_only, "tokenizer")
        if model_object is None:
            model_object = _load(transformers.AutoModelForCausalLM, model, local_files_only,
                                 "model")
        self._tokenizer = tokenizer
        self._model = model_object.to(device)
        self._model.eval()
        # Padded positions are masked out, so any valid id will do as padding: falling back
        # to 0 avoids adding a token, which would mean resizing the model's embeddings.
        pad = tokenizer.pad_token_id
        self._pad_id = pad if pad is not None else tokenizer.eos_token_id
        self._pad_id = self._pad_id if self._pad_id is not None else 0
        self._label_ids = _label_token_ids(tokenizer, self._names)
        self._context = getattr(getattr(self._model, "config", None),
                                "max_position_embeddings", None)
        self._forward_extra = _forward_options(self._model)
        self._lock = threading.Lock()
        self._queue: collections.deque = collections.deque()
        self._flusher: asyncio.Task | None = None

    def identity(self) -> dict:
        return {"backend": self.name, "model": self.model, "labels": list(self._names)}

    def render_prompt(self, messages) -> tuple[str, bool]:
        """The prompt text and whether it came from the chat template.

        A chat template already writes the special tokens (BOS) it wants, so its output is
        tokenized without adding any; plain text gets the tokenizer's usual ones.
        """
        if getattr(self._tokenizer, "chat_template", None):
            chat = [{"role": m.role, "content": m.content} for m in messages]
            return self._tokenizer.apply_chat_template(chat, add_generation_prompt=True,
                                                       tokenize=False), True
        return "\n\n".join(m.content for m in messages) + "\n", False

    def encode_prompt(self, messages) -> list[int]:
        """Token ids of the rendered prompt."""
        text, templated = self.render_prompt(messages)
        return list(self._tokenizer.encode(text, add_special_tokens=not templated))

    async def complete(self, request: JudgeRequest) -> Completion:
        if request.kind not in _KINDS:
            raise JudgeBackendError(f"hf:{self.model}: request kind must be one of "
                                    f"{', '.join(_KINDS)}; got {request.kind!r}")
        ids = self.encode_prompt(request.messages)
        if not ids:
            raise JudgeBackendError(f"hf:{self.model}: the prompt encodes to no tokens")
        if self._context is not None and len(ids) > self._context:
            raise JudgeBackendError(
                f"hf:{self.model}: the prompt has {len(ids)} tokens but the model reads at "
                f"most {self._context}; shorten the answers or use a longer-context model")
        if request.kind == "generate":
            s = request.settings
            budget = s.max_tokens or s.max_completion_tokens or self.max_new_tokens
            return await asyncio.to_thread(self._generate, ids, budget)
        probabilities, latency = await self._enqueue(ids)
        best = max(range(len(probabilities)), key=probabilities.__getitem__)
        return Completion(
            text=self._names[best], usage=Usage(input_tokens=len(ids), output_tokens=0),
            latency=latency, label_probabilities=dict(zip(_KEYS, probabilities)),
            finish_reason="stop")

    async def _enqueue(self, ids: list[int]) -> tuple[list[float], float]:
        loop = asyncio.get_running_loop()
        future = loop.create_future()
        self._queue.append((ids, future))
        flusher = self._flusher
        # A new event loop (each ``asyncio.run``) gets its own flusher.
        if flusher is None or flusher.done() or flusher.get_loop() is not loop:
            self._flusher = loop.create_task(self._flush())
        return await future

    async def _flush(self) -> None:
        while self._queue:
            # Let callers that are ready now enqueue before the batch is cut.
            await asyncio.sleep(0)
            batch = []
            while self._queue and len(batch) < self.batch_size:
                ids, future = self._queue.popleft()
                if not future.done():  # cancelled callers (e.g. a closed loop) are dropped
                    batch.append((ids, future))
            if not batch:
                continue
            try:
                rows, latency = await asyncio.to_thread(self._score, [b[0] for b in batch])
            except Exception as err:
                failure = JudgeBackendError(f"hf:{self.model}: forward pass failed: "
                                            f"{type(err).__name__}: {err}")
                for _, future in batch:
                    if not future.done():
                        future.set_exception(failure)
                continue
            except BaseException:  # cancelled (loop shutting down) or interrupted
                for _, future in batch:
                    future.cancel()
                raise
            for (_, future), row in zip(batch, rows):
                if not future.done():
                    future.set_result((row, latency))

    def _score(self, prompts: list[list[int]]) -> tuple[list[list[float]], float]:
        """Label probabilities of each prompt from one left-padded forward pass."""
        torch = self._torch
        width = max(len(p) for p in prompts)
        ids = torch.full((len(prompts), width), self._pad_id, dtype=torch.long)
        mask = torch.zeros((len(prompts), width), dtype=torch.long)
        for row, prompt in enumerate(prompts):
            ids[row, width - len(prompt):] = torch.tensor(prompt, dtype=torch.long)
            mask[row, width - len(prompt):] = 1
        # Positions count real tokens only, so left padding does not shift them.
        positions = (mask.cumsum(-1) - 1).clamp(min=0)
        inputs = {"input_ids": ids, "attention_mask": mask}
        if self._forward_extra["position_ids"]:
            inputs["position_ids"] = positions
        inputs = {k: v.to(self._model.device if hasattr(self._model, "device")
                          else self.device) for k, v in inputs.items()}
        options = {k: v for k, v in (("use_cache", False), ("logits_to_keep", 1))
                   if self._forward_extra[k]}
        with self._lock, torch.inference_mode():
            start = time.perf_counter()
            logits = self._model(**inputs, **options).logits[:, -1, :].float()
            scores = torch.stack([torch.logsumexp(logits[:, label_ids], dim=-1)
                                  for label_ids in self._label_ids], dim=-1)
            probabilities = torch.softmax(scores, dim=-1).cpu().tolist()
            latency = time.perf_counter() - start
        return probabilities, latency

    def _generate(self, prompt: list[int], budget: int) -> Completion:
        """Greedy continuation of one prompt."""
        torch = self._torch
        if self._context is not None:
            # Never run past the positions the model has; finish_reason tells the caller.
            budget = min(budget, self._context - len(prompt))
        if budget < 1:
            raise JudgeBackendError(f"hf:{self.model}: the prompt fills the whole context "
                                    f"({len(prompt)} tokens); nothing left to generate")
        device = self._model.device if hasattr(self._model, "device") else self.device
        ids = torch.tensor([prompt], dtype=torch.long, device=device)
        with self._lock, torch.inference_mode():
            start = time.perf_counter()
            output = self._model.generate(input_ids=ids, attention_mask=torch.ones_like(ids),
                                          max_new_tokens=budget, do_sample=False,
                                          pad_token_id=self._pad_id)
            latency = time.perf_counter() - start
        new = output[0, len(prompt):].tolist()
        eos = _eos_ids(self._model, self._tokenizer)
        while new and new[-1] == self._pad_id and self._pad_id not in eos:
            new.pop()
        stopped = len(new) < budget or (new and new[-1] in eos)
        return Completion(
            text=self._tokenizer.decode(new, skip_special_tokens=True),
            usage=Usage(input_tokens=len(prompt), output_tokens=len(new)), latency=latency,
            finish_reason="stop" if stopped else "length")


def _validate(model, model_object, tokenizer, batch_size, labels, tie_label,
              max_new_tokens) -> None:
    if model is not None and (not isinstance(model, str) or not model):
        raise FairjudgeInputError(f"`model` must be a non-empty model id or folder; got {model!r}")
    if model_object is None and model is None:
        raise FairjudgeInputError("pass `model` (a Hugging Face model id or local folder) or "
                                  "`model_object` and `tokenizer`")
    if model_object is not None and tokenizer is None and model is None:
        raise FairjudgeInputError("`model_object` needs its `tokenizer` (or a `model` to load it "
                                  "from)")
    if isinstance(batch_size, bool) or not isinstance(batch_size, int) or batch_size < 1:
        raise FairjudgeInputError(f"`batch_size` must be a positive integer; got {batch_size!r}")
    if (isinstance(max_new_tokens, bool) or not isinstance(max_new_tokens, int)
            or max_new_tokens < 1):
        raise FairjudgeInputError("`max_new_tokens` must be a positive integer; got "
                                  f"{max_new_tokens!r}")
    if (not isinstance(labels, tuple) or len(labels) != 2
            or not all(isinstance(x, str) and x.strip() for x in labels)
            or labels[0] == labels[1]):
        raise FairjudgeInputError(
            f"`labels` must be two distinct non-empty strings; got {labels!r}")
    if tie_label is not None and (not isinstance(tie_label, str) or not tie_label.strip()
                                  or tie_label in labels):
        raise FairjudgeInputError(f"`tie_label` must be a non-empty string other than {labels!r}; "
                                  f"got {tie_label!r}")


def _load(auto_class, model: str | None, local_files_only: bool, what: str):
    if model is None:  # pragma: no cover - excluded by _validate
        raise FairjudgeInputError(f"pass `model` to load the {what}")
    try:
        return auto_class.from_pretrained(model, local_files_only=local_files_only)
    except (OSError, ValueError) as err:
        hint = (" (only local files were searched: download it first, or pass "
                "local_files_only=False)" if local_files_only else "")
        raise JudgeBackendError(f"could not load the {what} of {model!r}{hint}: {err}") from None


def _label_token_ids(tokenizer, labels: tuple) -> list[list[int]]:
    """First-token ids of each label's spellings (``label``, ``" " + label``), deduplicated.

    A spelling whose first token is only whitespace (sentencepiece's lone ``"▁"``) or the
    unknown token says nothing about the label and is skipped.
    """
    unknown = getattr(tokenizer, "unk_token_id", None)
    result = []
    for label in labels:
        ids: list[int] = []
        for variant in (label, " " + label):
            encoded = tokenizer.encode(variant, add_special_tokens=False)
            if not encoded or encoded[0] == unknown or encoded[0] in ids:
                continue
            if not tokenizer.decode([encoded[0]]).strip():
                continue
            ids.append(int(encoded[0]))
        if not ids:
            raise FairjudgeInputError(f"label {label!r} has no token of its own in this tokenizer "
                                      "(it encodes to nothing, whitespace or the unknown token); "
                                      "choose labels the tokenizer knows")
        result.append(ids)
    for i in range(len(labels)):
        for j in range(i + 1, len(labels)):
            shared = set(result[i]) & set(result[j])
            if shared:
                raise FairjudgeInputError(
                    f"labels {labels[i]!r} and {labels[j]!r} share first token "
                    f"id(s) {sorted(shared)}, so their logits cannot tell "
                    "them "
                    "apart; choose labels whose first tokens differ")
    return result


def _forward_options(model) -> dict:
    """Which optional keyword arguments the model's forward accepts."""
    try:
        parameters = inspect.signature(model.forward).parameters
    except (TypeError, ValueError):  # pragma: no cover - builtins without a signature
        parameters = {}
    return {name: name in parameters for name in ("position_ids", "use_cache",
                                                  "logits_to_keep")}


def _eos_ids(model, tokenizer) -> set:
    config = getattr(model, "generation_config", None)
    eos = getattr(config, "eos_token_id", None)
    if eos is None:
        eos = tokenizer.eos_token_id
    if eos is None:
        return set()
    return set(eos) if isinstance(eos, (list, tuple)) else {eos}
