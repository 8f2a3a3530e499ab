"""How much memory dense algebra would take, checked before it is allocated."""

from __future__ import annotations

import os

from fairjudge._util._warnings import FairjudgeInputError

#: Below this many bytes a dense problem is not checked (reading the system's free memory
#: would cost more than the check is worth).
CHECK_ABOVE = 1 << 30


def available_memory() -> int | None:
    """Bytes the system can give this process now (``MemAvailable`` on Linux, free physical
    pages elsewhere), or None when it cannot say."""
    try:
        with open("/proc/meminfo") as handle:
            for line in handle:
                if line.startswith("MemAvailable:"):
                    return int(line.split()[1]) * 1024
    except (OSError, ValueError, IndexError):
        pass
    try:
        return os.sysconf("SC_PAGE_SIZE") * os.sysconf("SC_AVPHYS_PAGES")
    except (AttributeError, ValueError, OSError):
        return None


def require_dense_memory(size: int, matrices: int, what: str, instead: str) -> None:
    """Refuse, with a clear error, dense algebra on ``matrices`` float64 ``size x size``
    arrays that would not fit in the memory available now.

    ``what`` names the computation and ``instead`` the way around it, for the message.
    Allocations that would fail anyway raise an error naming the fit instead of numpy's
    ``MemoryError`` from deep inside; ones that would succeed only lazily (overcommitted
    memory) no longer run the machine out of memory halfway through.
    """
    needed = 8 * matrices * size * size
    if needed < CHECK_ABOVE:
        return
    available = available_memory()
    if available is not None and needed > available:
        raise FairjudgeInputError(
            f"{what} needs dense {size:,} x {size:,} matrices, about {needed / 2**30:.1f} GiB "
            f"of memory, and {available / 2**30:.1f} GiB are available: {instead}")
