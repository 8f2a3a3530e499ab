"""A simulated judge with bias knobs, behind the same interface as the real backends."""

from __future__ import annotations

import hashlib

import numpy as np

from fairjudge._util._warnings import FairjudgeInputError
from fairjudge.data._io import load_items
from fairjudge.data._schema import Outcome
from fairjudge.judges._base import JudgeBackend
from fairjudge.judges._cache import canonical_json, request_payload
from fairjudge.judges._types import Completion, JudgeRequest, Usage


class SimulatedBackend(JudgeBackend):
    """Verdicts drawn from Eq. (1) of [bias-aware-active-topk §3], deterministically.

    ``P(first preferred) = sigmoid(theta_a - theta_b + sum_m c_m (x_a,m - x_b,m) + position)``

    ``theta`` and the covariates come from an item table looked up by the ids in the
    request metadata (``item_a``, ``item_b``); without items every answer has quality 0 and
    the covariate ``length`` is the answer's word count / 100, taken from the texts in the
    metadata (``answer_a``, ``answer_b``). The uniform behind each draw is derived from the
    seed and the request content, so the same request always gets the same verdict (as a
    cached API call would) while different requests (another order, temperature or sample)
    are independent draws.

    Parameters
    ----------
    items : path or pandas.DataFrame, optional
        Item table with ``quality`` and the covariates named in ``bias``.
    bias : dict or float
        ``{covariate: logits per unit}``; a float applies to ``length`` (or ``verbose``
        for simulated items).
    position : float
        Logits added to the first-shown answer.
    seed : int
    model : str
        Name reported as the judge.
    """

    name = "simulated"
    cacheable = False

    def __init__(self, items=None, *, bias=0.0, position: float = 0.0, seed: int = 0,
                 model: str = "biased-judge"):
        self.items = None if items is None else load_items(items)
        if not isinstance(bias, dict):
            default = "verbose" if self.items is not None and "verbose" in self.items else "length"
            bias = {default: float(bias)}
        self.bias = {str(k): float(v) for k, v in bias.items()}
        if self.items is not None:
            missing = [c for c in self.bias if c not in self.items.columns]
            if missing:
                raise FairjudgeInputError(
                    f"the simulated judge's covariate `{missing[0]}` is not a "
                    "column of the item table")
        self.position = float(position)
        self.seed = int(seed)
        self.model = model

    def identity(self) -> dict:
        return {"backend": self.name, "model": self.model, "bias": self.bias,
                "position": self.position, "seed": self.seed}

    def _features(self, item_id, text) -> tuple[float, np.ndarray]:
        if self.items is not None and item_id is not None and str(item_id) in self.items.index:
            row = self.items.loc[str(item_id)]
            quality = float(row["quality"]) if "quality" in row else 0.0
            return quality, np.array([float(row[c]) for c in self.bias])
        words = len(str(text or "").split()) / 100.0
        return 0.0, np.array([words if c == "length" else 0.0 for c in self.bias])

    def probability_first(self, request: JudgeRequest) -> float:
        meta = request.metadata
        qa, xa = self._features(meta.get("item_a"), meta.get("answer_a"))
        qb, xb = self._features(meta.get("item_b"), meta.get("answer_b"))
        eta = qa - qb + float(np.dot(list(self.bias.values()), xa - xb)) + self.position
        return float(1.0 / (1.0 + np.exp(-eta)))

    async def complete(self, request: JudgeRequest) -> Completion:
        tokens = Usage(sum(len(m.content) for m in request.messages) // 4, 1)
        if request.kind == "generate":
            return Completion(text="(simulated reference answer)", usage=tokens)
        # The judge's identity (model name, knobs, seed) enters the draw: two simulated judges
        # are independent even when they share a seed.
        digest = hashlib.sha256(
            (str(self.seed) + canonical_json(request_payload(self.identity(), request))).encode()
        ).digest()
        uniform = int.from_bytes(digest[:8], "little") / 2.0 ** 64
        outcome = Outcome.A if uniform < self.probability_first(request) else Outcome.B
        return Completion(text=outcome.value.upper(), usage=tokens, outcome=outcome,
                          finish_reason="stop")
