"""Dense algebra that would not fit in memory is refused up front, naming the fit and the
way around it."""

import numpy as np
import pytest

from fairjudge._util import _memory
from fairjudge._util._warnings import FairjudgeInputError
from fairjudge.data import Comparisons
from fairjudge.models import (
    anchored_bt,
    bias_aware_bt,
    length_residualized_bt,
    reliability_bt,
)


@pytest.fixture
def little_memory(monkeypatch):
    """Every dense check applies, and only 1 MiB is available."""
    monkeypatch.setattr(_memory, "CHECK_ABOVE", 0)
    monkeypatch.setattr(_memory, "available_memory", lambda: 1 << 20)


def pool(n=400, seed=0):
    rng = np.random.default_rng(seed)
    a = rng.integers(0, n, 4 * n)
    b = (a + rng.integers(1, n, 4 * n)) % n
    outcome = np.where(rng.random(4 * n) < 0.5, "a", "b")
    return Comparisons.from_outcomes(a, b, outcome, n_items=n), rng.normal(size=(n, 1))


def test_the_available_memory_is_read(tmp_path, monkeypatch):
    """``MemAvailable`` plus free swap, capped by a control group's room; None without
    ``MemAvailable`` (nothing is then refused)."""
    meminfo = tmp_path / "meminfo"
    meminfo.write_text("MemTotal: 100 kB\nMemAvailable: 40 kB\nSwapFree: 2 kB\n")
    real_open = open

    def fake_open(path, *args, **kwargs):
        files = {"/proc/meminfo": meminfo, "/sys/fs/cgroup/memory.max": tmp_path / "max",
                 "/sys/fs/cgroup/memory.current": tmp_path / "current"}
        if path in files:
            return real_open(files[path], *args, **kwargs)
        if str(path).startswith("/sys/fs/cgroup"):
            raise FileNotFoundError(path)
        return real_open(path, *args, **kwargs)

    monkeypatch.setattr("builtins.open", fake_open)
    assert _memory.available_memory() == 42 * 1024          # no control group
    (tmp_path / "max").write_text("max\n")
    (tmp_path / "current").write_text("1000\n")
    assert _memory.available_memory() == 42 * 1024          # a group without a limit
    (tmp_path / "max").write_text("11000\n")
    assert _memory.available_memory() == 10_000             # the group's room is less
    meminfo.write_text("MemTotal: 100 kB\nMemFree: 40 kB\n")
    assert _memory.available_memory() is None


def test_small_problems_never_ask_and_the_check_can_be_skipped(monkeypatch):
    def asked():
        raise AssertionError("read the memory for a small problem")

    monkeypatch.setattr(_memory, "available_memory", asked)
    _memory.require_dense_memory(1000, 6, what="a small fit", instead="-")
    monkeypatch.setenv(_memory.SKIP_VARIABLE, "1")
    _memory.require_dense_memory(10 ** 6, 6, what="a skipped check", instead="-")


@pytest.mark.parametrize(("fit", "named", "instead"), [
    (lambda c, x: bias_aware_bt(c, x, solver="dense"), "bias-aware fit with the dense solver",
     "solver='sparse'"),
    (lambda c, x: reliability_bt(c, x, solver="dense"), "reliability model", "solver='sparse'"),
    (lambda c, x: length_residualized_bt(c, x), "residualized baseline", "bias-aware model"),
    (lambda c, x: anchored_bt(c, c, x), "anchored model", "without them"),
])
def test_a_dense_fit_that_cannot_fit_in_memory_is_refused(little_memory, fit, named, instead):
    data, x = pool()
    with pytest.raises(FairjudgeInputError, match=named) as err:
        fit(data, x)
    assert instead in str(err.value) and "GiB" in str(err.value)
    assert _memory.SKIP_VARIABLE in str(err.value)


def test_the_sparse_solver_needs_no_dense_memory(little_memory):
    data, x = pool()
    assert bias_aware_bt(data, x, solver="sparse").solver == "sparse"
    assert reliability_bt(data, x, solver="sparse").solver == "sparse"


def test_a_fit_that_fits_in_memory_runs(monkeypatch):
    monkeypatch.setattr(_memory, "CHECK_ABOVE", 0)
    data, x = pool(50)
    assert bias_aware_bt(data, x, solver="dense").solver == "dense"
