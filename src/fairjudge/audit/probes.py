"""Controlled bias probes, kept importable here for compatibility.

The home of probes is :mod:`fairjudge.probes`; this module re-exports its public names.
"""

from fairjudge.probes import *  # noqa: F401,F403
from fairjudge.probes import __all__  # noqa: F401
