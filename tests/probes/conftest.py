"""Fixtures of the probe tests: the probe table built from the shared answers."""

import pytest
from probe_answers import RECORDS

from fairjudge.probes import build_probes


@pytest.fixture(scope="module")
def probes():
    return build_probes(RECORDS, seed=0)
