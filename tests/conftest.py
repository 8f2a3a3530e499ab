"""Shared fixtures and simulation helpers for the whole test suite.

* Tests marked ``shared_data`` need the recorded datasets in ``../shared/data``
  (`fairjudge.data.shared_data_dir`); they are skipped, with the reason, where it is absent.
* ``simulated_oracle`` and ``full_matrix_comparisons`` build the paper's simulated items and
  a judge's full verdict matrix, the data most model, CLI and API tests start from.
* ``fake_server`` is a fresh loopback `FakeProviderServer` per test (skipped without aiohttp).

Statistical tests that check a property of random data follow one rule: a property is
checked over many seeds (a binomial or t test), or against a reference value with a
tolerance of several standard errors, never as one seeded draw against a threshold close to
where that draw happens to land. The margins measured for each are in the test docstrings.
"""

from __future__ import annotations

import numpy as np
import pytest

from fairjudge.data import Comparisons, SimulatedJudge, shared_data_dir, simulate_items

SHARED_DATA_REASON = "needs the recorded datasets in ../shared/data (fairjudge.data.shared_data_dir)"


def pytest_collection_modifyitems(config, items):
    """Skip every test marked ``shared_data`` when the recorded datasets are absent."""
    if shared_data_dir() is not None:
        return
    skip = pytest.mark.skip(reason=SHARED_DATA_REASON)
    for item in items:
        if item.get_closest_marker("shared_data") is not None:
            item.add_marker(skip)


# --------------------------------------------------------------------------- simulation


def _simulated_oracle(n_items=30, *, bias=2.0, position=0.5, rng=None, judge_rng=None):
    """Simulated items and one verdict for every ordered pair from a biased judge.

    Items come from `simulate_items` (quality ~ N(0, 1.25^2), balanced 0/1 ``verbose``);
    the judge follows Eq. (1) with ``bias`` per unit of ``verbose`` and ``position`` for the
    first slot. Its draws continue the items' generator unless ``judge_rng`` is given.

    Returns
    -------
    items : pandas.DataFrame
    matrix : ndarray, shape (n_items, n_items)
        ``matrix[i, j]`` is 1 if ``i`` shown first beat ``j``, 0 if not; NaN on the diagonal.
    """
    generator = np.random.default_rng(rng)
    items = simulate_items(n_items, rng=generator)
    judge = SimulatedJudge(items["quality"].to_numpy(), items["verbose"].to_numpy(), bias=bias,
                           position=position,
                           rng=generator if judge_rng is None else judge_rng)
    return items, judge.verdict_matrix()


def _full_matrix_comparisons(item_ids, matrix, *, judge="judge"):
    """`Comparisons` holding every recorded cell of a verdict matrix, one judge."""
    first, second = np.nonzero(np.isfinite(matrix))
    return Comparisons(first, second, matrix[first, second], np.ones(first.size),
                       np.zeros(first.size, np.int64), tuple(item_ids), (judge,))


@pytest.fixture(scope="session")
def simulated_oracle():
    """Factory ``simulated_oracle(n_items, *, bias, position, rng, judge_rng)`` ->
    ``(items, verdict matrix)``."""
    return _simulated_oracle


@pytest.fixture(scope="session")
def full_matrix_comparisons():
    """Factory ``full_matrix_comparisons(item_ids, matrix)`` -> `Comparisons`."""
    return _full_matrix_comparisons


@pytest.fixture(scope="session")
def simulated(simulated_oracle, full_matrix_comparisons):
    """Factory ``simulated(seed, bias=2.0, position=0.5, n_items=30)`` -> ``(items,
    comparisons)``: the paper's simulator, one verdict per ordered pair."""
    def simulate(seed, bias=2.0, position=0.5, n_items=30):
        items, matrix = simulated_oracle(n_items, bias=bias, position=position, rng=seed)
        return items, full_matrix_comparisons(items.index, matrix)
    return simulate


# --------------------------------------------------------------------------- fake provider


@pytest.fixture
def fake_server():
    """A fresh `FakeProviderServer` on 127.0.0.1 (seed 0, first-slot lean 0.1)."""
    pytest.importorskip("aiohttp", reason="the fake provider server needs the [openai] extra "
                                          "(aiohttp)")
    from fairjudge.judges.testing import FakeProviderServer

    with FakeProviderServer(first_slot_lean=0.1, seed=0) as server:
        yield server


def _kill_hard(process, timeout: float = 60.0) -> None:
    """SIGKILL a subprocess (as a crash or ``kill -9`` would) and reap it."""
    import signal

    if process.poll() is None:
        process.send_signal(signal.SIGKILL)
    process.communicate(timeout=timeout)


@pytest.fixture(scope="session")
def kill_hard():
    """``kill_hard(process)``: SIGKILL a subprocess and reap it."""
    return _kill_hard
