"""Exit codes, defined once for every command."""

from __future__ import annotations

from enum import IntEnum


class ExitCode(IntEnum):
    """What a ``fairjudge`` command's exit status means.

    ======================= ==== =========================================================
    name                    code meaning
    ======================= ==== =========================================================
    ``OK``                  0    everything requested was done
    ``INCOMPLETE``          1    some requested unit (pair, call, item) is incomplete for
                                 a reason other than the spend cap or an interrupt (failed
                                 calls, a provider refusing the key); also an internal error
    ``USAGE``               2    a usage or input error (bad option, unreadable or invalid
                                 file), reported in one line before anything is paid
    ``SPEND_CAP``           3    the spend cap stopped the run; rerun with a higher cap to
                                 resume from the cache
    ``INTERRUPTED``         130  interrupted (Ctrl-C); rerun to resume from the cache
    ======================= ==== =========================================================
    """

    OK = 0
    INCOMPLETE = 1
    USAGE = 2
    SPEND_CAP = 3
    INTERRUPTED = 130
