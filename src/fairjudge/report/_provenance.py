"""What a report records about how it was made: command, inputs with hashes, version, date
and seed."""

from __future__ import annotations

import hashlib
import os
from collections.abc import Sequence
from dataclasses import dataclass, field
from datetime import datetime, timezone

from fairjudge._util._warnings import FairjudgeInputError

_CHUNK = 1 << 20


def _version() -> str:
    from fairjudge import __version__

    return __version__


def _now() -> datetime:
    return datetime.now(timezone.utc)


def file_sha256(path: str | os.PathLike) -> str:
    """Hex SHA-256 of a file's bytes, read in 1 MiB chunks."""
    digest = hashlib.sha256()
    with open(path, "rb") as handle:
        for chunk in iter(lambda: handle.read(_CHUNK), b""):
            digest.update(chunk)
    return digest.hexdigest()


@dataclass(frozen=True)
class InputFile:
    """One file a report was made from.

    Attributes
    ----------
    path : str
        The path as it was given.
    sha256 : str
        Hex SHA-256 of the file's bytes when it was read.
    """

    path: str
    sha256: str


@dataclass(frozen=True)
class Provenance:
    """How a report was made; its HTML header shows every field.

    Library callers may leave any of ``command``, ``inputs`` and ``seed`` out (the header
    then says they were not recorded); ``version`` and ``created`` are always filled in.
    Use :meth:`collect` to hash the input files.

    Attributes
    ----------
    command : tuple of str or None
        The command line, program name first (``("fairjudge", "audit", "v.jsonl")``).
    inputs : tuple of InputFile
        The files read, each with its SHA-256.
    seed : int or None
        The seed of every random choice behind the report.
    version : str
        The fairjudge version that made the report.
    created : datetime.datetime
        When the report was made, in UTC.
    """

    command: tuple[str, ...] | None = None
    inputs: tuple[InputFile, ...] = ()
    seed: int | None = None
    version: str = field(default_factory=_version)
    created: datetime = field(default_factory=_now)

    @classmethod
    def collect(cls, *, command: Sequence[str] | None = None,
                inputs: Sequence[str | os.PathLike] = (), seed: int | None = None
                ) -> Provenance:
        """Record a command line, hash the input files, and stamp the version and date.

        Parameters
        ----------
        command : sequence of str, optional
            The command line as a list of arguments, program name first.
        inputs : sequence of path
            Files the report was made from; each is read once to hash it.
        seed : int, optional

        Raises
        ------
        FairjudgeInputError
            If ``command`` is a single string or holds a non-string, if ``seed`` is not an
            integer, or if an input file cannot be read.

        Examples
        --------
        >>> p = Provenance.collect(command=["fairjudge", "compare", "--seed", "3"], seed=3)
        >>> p.command, p.inputs, p.seed, p.created.tzname()
        (('fairjudge', 'compare', '--seed', '3'), (), 3, 'UTC')
        """
        if command is not None and (isinstance(command, (str, bytes)) or not all(
                isinstance(arg, str) for arg in command)):
            raise FairjudgeInputError(
                "`command` must be a list of argument strings, program name first; got "
                f"{command!r}")
        if seed is not None and (isinstance(seed, bool) or not isinstance(seed, int)):
            raise FairjudgeInputError(f"`seed` must be an integer or None; got {seed!r}")
        if isinstance(inputs, (str, bytes, os.PathLike)):
            inputs = [inputs]
        files = []
        for path in inputs:
            try:
                files.append(InputFile(str(path), file_sha256(path)))
            except OSError as err:
                raise FairjudgeInputError(
                    f"`inputs`: cannot read {str(path)!r} to hash it ({err.strerror or err})"
                ) from None
        return cls(None if command is None else tuple(command), tuple(files), seed)

