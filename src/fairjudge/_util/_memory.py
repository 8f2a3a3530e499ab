"""How much memory dense algebra would take, checked before it is allocated."""

from __future__ import annotations

import os

from fairjudge._util._warnings import FairjudgeInputError

#: Below this many bytes a dense problem is not checked (reading the system's free memory
#: would cost more than the check is worth).
CHECK_ABOVE = 1 << 30
#: Set to 1 to skip the check (a machine whose memory the check misjudges).
SKIP_VARIABLE = "FAIRJUDGE_NO_MEMORY_CHECK"
_CGROUP_FILES = (("/sys/fs/cgroup/memory.max", "/sys/fs/cgroup/memory.current"),
                 ("/sys/fs/cgroup/memory/memory.limit_in_bytes",
                  "/sys/fs/cgroup/memory/memory.usage_in_bytes"))


def available_memory() -> int | None:
    """Bytes this process can still get: Linux's ``MemAvailable`` plus free swap, capped by
    the room left under a control group's (container's) memory limit; None where the
    system does not say (then nothing is refused)."""
    fields = {}
    try:
        with open("/proc/meminfo") as handle:
            for line in handle:
                name, _, rest = line.partition(":")
                fields[name] = int(rest.split()[0]) * 1024
    except (OSError, ValueError, IndexError):
        return None
    if "MemAvailable" not in fields:
        return None
    available = fields["MemAvailable"] + fields.get("SwapFree", 0)
    for limit_file, usage_file in _CGROUP_FILES:
        try:
            with open(limit_file) as limit, open(usage_file) as usage:
                room = int(limit.read().strip()) - int(usage.read().strip())
        except (OSError, ValueError):  # no such group, or "max": no limit
            continue
        available = min(available, max(room, 0))
    return available


def require_dense_memory(size: int, matrices: int, *, what: str, instead: str) -> None:
    """Refuse, with a clear error, dense algebra on ``matrices`` float64 ``size x size``
    arrays that would not fit in the memory available now (:func:`available_memory`).

    ``what`` names the computation and ``instead`` the way around it, for the message.
    An allocation that would fail anyway then raises an error naming the fit rather than
    numpy's ``MemoryError`` from deep inside, and one that would be granted lazily and fail
    halfway (overcommitted memory) is not started. Setting the environment variable
    ``FAIRJUDGE_NO_MEMORY_CHECK=1`` skips the check.
    """
    needed = 8 * matrices * size * size
    if needed < CHECK_ABOVE or os.environ.get(SKIP_VARIABLE) == "1":
        return
    available = available_memory()
    if available is not None and needed > available:
        raise FairjudgeInputError(
            f"{what} needs dense {size:,} x {size:,} matrices, about {needed / 2**30:.1f} GiB "
            f"of memory, and {available / 2**30:.1f} GiB are available: {instead} "
            f"(or set {SKIP_VARIABLE}=1 to try anyway)")
