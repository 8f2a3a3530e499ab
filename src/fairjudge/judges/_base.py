"""The judge backend interface and the lazy backend registry (errors: `_util._errors`)."""

from __future__ import annotations

import abc
import importlib

from fairjudge._util._warnings import FairjudgeInputError
from fairjudge.judges._types import Completion, JudgeRequest


class JudgeBackend(abc.ABC):
    """An asynchronous judge: one :class:`JudgeRequest` in, one :class:`Completion` out.

    Subclasses set ``name`` and ``model``, implement :meth:`complete`, and may override
    :meth:`identity` to add output-changing settings. ``cacheable`` is False for backends
    whose answers cost nothing to recompute (replay, simulated, human).
    """

    name: str = ""
    model: str = ""
    cacheable: bool = True
    #: False for a judge no provider bills (humans): a spend cap needs no price for it.
    billed: bool = True

    def identity(self) -> dict:
        """What identifies this judge in a cache key: name, model, output-changing settings
        and, for remote backends, the normalised endpoint; never credentials."""
        return {"backend": self.name, "model": self.model}

    @property
    def label(self) -> str:
        """``backend:model``, used as the judge name in verdict tables."""
        return f"{self.name}:{self.model}" if self.model else self.name

    @abc.abstractmethod
    async def complete(self, request: JudgeRequest) -> Completion:
        """Answer one request. Raise :class:`RetryableError` or :class:`JudgeBackendError`."""

    async def aclose(self) -> None:
        """Release connections (called once at the end of a run)."""

    def batch_api(self, options):
        """This backend's batch API for ``options`` (a :class:`~fairjudge.judges._batch.
        BatchOptions`). Backends without one refuse, saying which do."""
        raise FairjudgeInputError(
            f"the {self.name} backend has no batch API: batch mode works with the openai "
            "backend (OpenAI's Batch API, or vllm run-batch files with a batch directory) "
            "and the anthropic backend (Message Batches)")


# name -> (module, class, extra that provides its dependencies or None)
_REGISTRY = {
    "openai": ("fairjudge.judges._openai", "OpenAIBackend", "openai"),
    "anthropic": ("fairjudge.judges._anthropic", "AnthropicBackend", "anthropic"),
    "hf": ("fairjudge.judges._hf", "HFBackend", "hf"),
    "replay": ("fairjudge.judges._replay", "ReplayBackend", None),
    "simulated": ("fairjudge.judges._simulated", "SimulatedBackend", None),
    "human": ("fairjudge.judges._human", "HumanBackend", None),
}

BACKENDS = tuple(_REGISTRY)


def register_backend(name: str, module: str, cls: str, extra: str | None = None) -> None:
    """Make a backend class available by name without importing it yet."""
    _REGISTRY[name] = (module, cls, extra)


def backend_class(name: str) -> type:
    """The class registered as ``name`` (its module is imported now; a missing dependency
    raises ImportError naming the extra to install)."""
    if name not in _REGISTRY:
        raise FairjudgeInputError(f"unknown backend {name!r}; choose from "
                                  f"{', '.join(_REGISTRY)}")
    module, cls, extra = _REGISTRY[name]
    try:
        return getattr(importlib.import_module(module), cls)
    except ImportError as err:
        if extra is None:
            raise
        raise ImportError(f"the `{name}` backend needs pip install 'fairjudge[{extra}]' "
                          f"({err})") from None


def get_backend(name: str, **settings) -> JudgeBackend:
    """Instantiate the backend called ``name`` with its settings.

    The backend's module (and its optional dependencies) is imported only now; a missing
    dependency raises ImportError naming the extra to install.
    """
    return backend_class(name)(**settings)


def backend_from_spec(spec: str, **settings) -> JudgeBackend:
    """A backend from ``"<backend>:<model>"`` (e.g. ``"openai:gpt-4o-mini"``,
    ``"anthropic:claude-haiku-4-5"``, ``"hf:./local-model"``), with backend settings as
    keyword arguments (``base_url``, ``api_key_env``, ``timeout``, ...).

    The model is everything after the first colon, so model ids that contain colons
    (``"openai:llama3:8b"`` on Ollama) work. A spec without a colon names a backend that
    takes no model (``"simulated"``, or ``"replay"`` with ``verdicts=``).

    Examples
    --------
    >>> backend_from_spec("simulated").label
    'simulated:biased-judge'
    """
    if not isinstance(spec, str) or not spec.strip():
        raise FairjudgeInputError(
            f"a judge spec is '<backend>:<model>', e.g. 'openai:gpt-4o-mini'; "
            f"got {spec!r}")
    name, _, model = spec.strip().partition(":")
    if model:
        settings = {"model": model, **settings}
    return get_backend(name, **settings)
