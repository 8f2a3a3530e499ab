"""The garbage collector's first-generation threshold, raised while judge runs are in flight."""

from __future__ import annotations

import contextlib
import gc
import threading

#: The first-generation threshold of CPython's collector while a run sends requests (the
#: default is 700 up to Python 3.13). See :func:`fewer_young_collections`.
YOUNG_COLLECTION_THRESHOLD = 10_000


class _YoungThreshold:
    """The threshold the program had before the first of the runs now in flight raised it,
    and how many runs are in flight (runs may overlap, in one event loop or in threads)."""

    def __init__(self):
        self.lock = threading.Lock()
        self.runs = 0
        self.saved: tuple | None = None   # None: not raised by us

    def enter(self) -> None:
        with self.lock:
            if self.runs == 0:
                saved = gc.get_threshold()
                self.saved = saved if 0 < saved[0] < YOUNG_COLLECTION_THRESHOLD else None
                if self.saved is not None:
                    gc.set_threshold(YOUNG_COLLECTION_THRESHOLD, *saved[1:])
            self.runs += 1

    def leave(self) -> None:
        with self.lock:
            self.runs -= 1
            if self.runs == 0 and self.saved is not None:
                saved, self.saved = self.saved, None
                # A threshold the program set meanwhile (any generation) is its to keep.
                if gc.get_threshold() == (YOUNG_COLLECTION_THRESHOLD, *saved[1:]):
                    gc.set_threshold(*saved)


_YOUNG = _YoungThreshold()


@contextlib.contextmanager
def fewer_young_collections():
    """Raise the first-generation threshold of the garbage collector (``gc``) to
    :data:`YOUNG_COLLECTION_THRESHOLD` while runs send requests; restore it after the last.

    Why: CPython counts allocations minus deallocations since the last young collection,
    never below zero. A run keeps thousands of objects alive across each collection (its
    requests in flight), whose deallocations after the reset are not counted; at the
    default threshold of 700 a fresh run at concurrency 64 then collected about once per
    25 verdicts, promoted those objects to the older generations, and spent a quarter of
    its client time in full collections. At 10,000 it collects about once per 2,000
    verdicts (``benchmarks/bench_judge.py``). Young objects then wait a little longer to be
    freed (a few MB at most). A threshold already at or above ours, or automatic
    collection turned off (threshold 0), is left alone, and thresholds the program changed
    during the run are not overwritten.
    """
    _YOUNG.enter()
    try:
        yield
    finally:
        _YOUNG.leave()
