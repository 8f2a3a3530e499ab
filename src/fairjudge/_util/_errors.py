"""Errors of the judging layer, in a module with no dependencies so that the command line
can recognise them without importing the judging stack."""

from __future__ import annotations


class JudgeBackendError(RuntimeError):
    """A fatal provider error (authentication, permission, unknown model): the run stops."""


class RequestRejected(RuntimeError):
    """The provider refused one request (too long, filtered, malformed): that call fails,
    the run goes on."""


class RetryableError(RuntimeError):
    """A transient failure worth retrying (429, 5xx, timeout, dropped connection, bad body).

    ``retry_after`` holds the provider's ``Retry-After`` in seconds when it sent one.
    ``maybe_billed`` says whether the provider may have charged for the failed attempt:
    True when the request reached the model and the answer was lost (a timeout, a dropped or
    truncated response, a malformed or error-carrying 200, a server error), False when the
    provider refused it before generating (a 429, an overload, no connection). The spend cap
    counts the worst case of every attempt that may have been billed.
    """

    def __init__(self, message: str, *, retry_after: float | None = None,
                 maybe_billed: bool = True):
        super().__init__(message)
        self.retry_after = retry_after
        self.maybe_billed = bool(maybe_billed)


class RunIncomplete(RuntimeError):
    """A workflow could not produce its result because requested calls got no answer (they
    failed after their retries); what was paid is cached and a rerun resumes."""


class SpendCapReached(RunIncomplete):
    """The spend cap stopped a workflow before it had what it needed; raise the cap and
    rerun to resume from the cache."""


__all__ = ["JudgeBackendError", "RequestRejected", "RetryableError", "RunIncomplete",
           "SpendCapReached"]
