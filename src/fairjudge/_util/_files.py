"""File helpers shared by every reader and writer: text decoding with line-numbered errors,
atomic writes, and the check of output paths made before any work (or money) is spent."""

from __future__ import annotations

import contextlib
import gzip
import json
import os
import secrets
import stat
from collections.abc import Iterable, Iterator
from pathlib import Path

from fairjudge._util._warnings import FairjudgeInputError

#: Text files are read as UTF-8; a leading byte-order mark (written by Excel and some
#: Windows editors) is skipped, in JSONL, JSON and CSV alike.
TEXT_ENCODING = "utf-8-sig"


def open_text(path: str | os.PathLike):
    """Text handle for a UTF-8 file (a leading byte-order mark skipped); ``.gz`` files are
    decompressed. Newlines are left untranslated for the CSV reader."""
    path = Path(path)
    if path.suffix.lower() == ".gz":
        return gzip.open(path, "rt", encoding=TEXT_ENCODING, newline="")
    return open(path, encoding=TEXT_ENCODING, newline="")


def not_utf8_error(path: str | os.PathLike) -> FairjudgeInputError:
    """The error for a file that is not UTF-8 text, naming the line of the first bad byte.

    A decoding error raised while streaming reports an offset inside the decoder's current
    chunk, not the file; the whole file is decoded again here to find the line.
    """
    path = Path(path)
    opener = gzip.open if path.suffix.lower() == ".gz" else open
    with opener(path, "rb") as handle:
        data = handle.read()
    try:
        data.decode(TEXT_ENCODING)
    except UnicodeDecodeError as err:
        line = data.count(b"\n", 0, err.start) + 1
        byte = data[err.start:err.start + 1].hex().upper()
        return FairjudgeInputError(
            f"{path.name} line {line}: not UTF-8 text (byte 0x{byte}: {err.reason}); save "
            "the file as UTF-8")
    return FairjudgeInputError(f"{path.name}: not UTF-8 text; save the file as UTF-8")


def read_json_file(path: str | os.PathLike, what: str):
    """Parse a JSON settings file (prices, templates, costs).

    Raises
    ------
    FairjudgeInputError
        Naming the file (and the line, for invalid JSON or a byte that is not UTF-8) when
        it is missing, a folder, unreadable or not valid JSON.
    """
    path = Path(path)
    try:
        with open_text(path) as handle:
            text = handle.read()
    except FileNotFoundError:
        raise FairjudgeInputError(f"{path}: no such {what} file") from None
    except IsADirectoryError:
        raise FairjudgeInputError(f"{path}: is a folder; expected a JSON {what} file") \
            from None
    except PermissionError:
        raise FairjudgeInputError(f"{path}: permission denied reading the {what} file") \
            from None
    except UnicodeDecodeError:
        raise not_utf8_error(path) from None
    try:
        return json.loads(text)
    except json.JSONDecodeError as err:
        raise FairjudgeInputError(f"{path.name} line {err.lineno}: not valid JSON in the "
                                  f"{what} file ({err.msg})") from None


# -- writing ---------------------------------------------------------------------------------

@contextlib.contextmanager
def atomic_write(path: str | os.PathLike, mode: str = "w", *,
                 encoding: str | None = "utf-8") -> Iterator:
    """Open a temporary file beside ``path`` for writing and move it into place on success.

    A process killed while writing leaves ``path`` as it was (the previous complete file,
    or no file), never empty or truncated: the new content becomes visible in one
    ``os.replace``. On an exception the temporary file is removed and ``path`` is untouched.
    A symbolic link is followed (its target is replaced); an existing file keeps its
    permissions, a new one gets the usual ones (``0o666`` less the umask).

    Parameters
    ----------
    path : path
        The file to write.
    mode : {"w", "wb"}
        Text or binary.
    encoding : str, optional
        Of a text file (newlines are written as given, ``\\n``, on every platform).

    Examples
    --------
    >>> import pathlib, tempfile
    >>> with tempfile.TemporaryDirectory() as folder:
    ...     target = pathlib.Path(folder) / "out.txt"
    ...     with atomic_write(target) as handle:
    ...         _ = handle.write("done")
    ...     target.read_text()
    'done'
    """
    if mode not in ("w", "wb"):
        raise ValueError(f"`mode` must be 'w' or 'wb'; got {mode!r}")
    target = Path(os.path.realpath(path))
    temporary = target.with_name(f".{target.name}.{secrets.token_hex(4)}.tmp")
    # os.open with 0o666 lets the umask decide the permissions, as a plain open() would.
    fd = os.open(temporary, os.O_WRONLY | os.O_CREAT | os.O_EXCL, 0o666)
    try:
        text = {} if "b" in mode else {"encoding": encoding, "newline": ""}
        with os.fdopen(fd, mode, **text) as handle:
            yield handle
            handle.flush()
            os.fsync(handle.fileno())
        with contextlib.suppress(FileNotFoundError):
            os.chmod(temporary, stat.S_IMODE(target.stat().st_mode))
        os.replace(temporary, target)
    except BaseException:
        with contextlib.suppress(OSError):
            os.unlink(temporary)
        raise


# -- checking output paths before the work -----------------------------------------------------

def _same_file(a: Path, b: Path) -> bool:
    if a.exists() and b.exists():
        return os.path.samefile(a, b)  # also catches hard links
    return os.path.realpath(a) == os.path.realpath(b)


def _writable_folder(folder: Path) -> bool:
    """Whether a file can be created in ``folder`` (tried, so a read-only file system or
    an access-control list is caught, not only the permission bits)."""
    probe = folder / f".fairjudge-write-test.{secrets.token_hex(4)}"
    try:
        os.close(os.open(probe, os.O_WRONLY | os.O_CREAT | os.O_EXCL, 0o600))
    except OSError:
        return False
    with contextlib.suppress(OSError):
        os.unlink(probe)
    return True


def check_output_paths(outputs: Iterable[tuple[str, str | os.PathLike | None]],
                       inputs: Iterable[tuple[str, str | os.PathLike | None]] = ()) -> None:
    """Check, before any work is done, that every output file of a command can be written.

    Parameters
    ----------
    outputs : iterable of (label, path)
        The files the command will write, each with the option (or description) that names
        it, e.g. ``("--out", "v.jsonl")``, ``("the aggregate table", "v.aggregate.jsonl")``.
        ``None`` paths are skipped.
    inputs : iterable of (label, path)
        The files the command reads (tables, price files, the completion cache).

    Raises
    ------
    FairjudgeInputError
        Naming the file and the option when an output is an existing folder, its folder is
        missing or not writable, the file itself is read-only, it is one of the inputs (it
        would be overwritten), or two outputs are the same file (one would overwrite the
        other).
    """
    outputs = [(label, Path(p)) for label, p in outputs if p is not None and str(p) != ""]
    inputs = [(label, Path(p)) for label, p in inputs if p is not None and str(p) != ""]
    for n, (label, path) in enumerate(outputs):
        if path.is_dir():
            raise FairjudgeInputError(f"{label} {path}: is a folder; give a file name")
        folder = path.parent
        if not folder.exists():
            raise FairjudgeInputError(f"{label} {path}: folder {folder} does not exist; "
                                      "create it first")
        if not folder.is_dir():
            raise FairjudgeInputError(f"{label} {path}: {folder} is not a folder")
        if not _writable_folder(folder):
            raise FairjudgeInputError(f"{label} {path}: cannot write in folder {folder} "
                                      "(permission denied or read-only)")
        if path.exists() and not os.access(path, os.W_OK):
            raise FairjudgeInputError(f"{label} {path}: the file exists and is read-only")
        for input_label, source in inputs:
            if _same_file(path, source):
                raise FairjudgeInputError(
                    f"{label} {path}: is also the input {input_label}, which would be "
                    "overwritten; write the output to another file")
        for other_label, other in outputs[:n]:
            if _same_file(path, other):
                raise FairjudgeInputError(
                    f"{label} {path}: is the same file as {other_label} {other}; one output "
                    "would overwrite the other")


def check_output_folder(label: str, path: str | os.PathLike) -> None:
    """Check, before any work is done, that ``path`` is or can be created as a writable
    folder (its missing parents included).

    Raises
    ------
    FairjudgeInputError
        When ``path`` is an existing file, or its nearest existing ancestor is not a
        writable folder.
    """
    path = Path(path)
    if path.exists() and not path.is_dir():
        raise FairjudgeInputError(f"{label} {path}: is a file; give a folder")
    existing = path
    while not existing.exists() and existing != existing.parent:
        existing = existing.parent
    if not existing.is_dir():
        raise FairjudgeInputError(f"{label} {path}: {existing} is not a folder")
    if not _writable_folder(existing):
        raise FairjudgeInputError(f"{label} {path}: cannot write in folder {existing} "
                                  "(permission denied or read-only)")
