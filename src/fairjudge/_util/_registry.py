"""One shape for every registry of named extensions (models, recorded datasets, ...)."""

from __future__ import annotations

from types import MappingProxyType
from typing import Generic, TypeVar

from fairjudge._util._warnings import FairjudgeInputError

T = TypeVar("T")


class Registry(Generic[T]):
    """Entries with a ``name`` attribute, each registered once, looked up by name.

    Parameters
    ----------
    kind : str
        What an entry is, for messages (``"model"``).
    argument : str
        The argument that names an entry, for lookup errors (``"model"`` gives
        "`model` must be one of naive, ...; got 'x'").
    entry_type : type
        The type every entry must have.
    error : type of Exception
        Raised by :meth:`get` for an unknown name.
    """

    def __init__(self, kind: str, argument: str, entry_type: type, *,
                 error: type[Exception] = FairjudgeInputError) -> None:
        self.kind, self.argument, self.entry_type, self.error = kind, argument, entry_type, error
        self._entries: dict[str, T] = {}
        #: Read-only, live view of the entries by name, in registration order.
        self.view = MappingProxyType(self._entries)

    def register(self, entry: T) -> T:
        """Add ``entry`` under ``entry.name``; a name can be registered once."""
        if not isinstance(entry, self.entry_type):
            raise TypeError(f"a {self.kind} is registered as a {self.entry_type.__name__}; "
                            f"got {type(entry).__name__}")
        if entry.name in self._entries:
            raise FairjudgeInputError(f"a {self.kind} named {entry.name!r} is already registered")
        self._entries[entry.name] = entry
        return entry

    def get(self, name: str) -> T:
        """The entry called ``name``; an unknown name raises, listing the registered ones."""
        try:
            return self._entries[name]
        except (KeyError, TypeError):
            raise self.error(f"`{self.argument}` must be one of "
                             f"{', '.join(self._entries)}; got {name!r}") from None

    def names(self) -> tuple[str, ...]:
        """The registered names, in registration order."""
        return tuple(self._entries)
