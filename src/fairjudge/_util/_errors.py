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
    """

    def __init__(self, message: str, *, retry_after: float | None = None):
        super().__init__(message)
        self.retry_after = retry_after


__all__ = ["JudgeBackendError", "RequestRejected", "RetryableError"]
