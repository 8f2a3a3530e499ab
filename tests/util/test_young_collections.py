"""The runner raises the collector's first-generation threshold while it sends requests, and
gives the program back exactly the threshold it had."""

import gc
import threading

import pytest

from fairjudge._util._gc import YOUNG_COLLECTION_THRESHOLD, fewer_young_collections
from fairjudge.judges import Completion, JudgeRequest, Message, Usage, run_requests
from fairjudge.judges._base import JudgeBackend


@pytest.fixture
def threshold():
    """Run the test from the default threshold, and restore the session's afterwards."""
    saved = gc.get_threshold()
    gc.set_threshold(700, 10, 10)
    yield
    gc.set_threshold(*saved)


class ThresholdWitness(JudgeBackend):
    """Answers every request, noting the collector's thresholds at each call."""

    name, model, cacheable, billed = "witness", "w", False, False

    def __init__(self):
        self.seen = []

    async def complete(self, request):
        self.seen.append(gc.get_threshold())
        return Completion(text="A", usage=Usage(5, 1))


def test_a_run_raises_the_threshold_while_it_sends_and_restores_it(threshold):
    judge = ThresholdWitness()
    requests = [JudgeRequest(messages=(Message("user", f"item {i}"),)) for i in range(20)]
    run_requests(judge, requests)
    assert set(judge.seen) == {(YOUNG_COLLECTION_THRESHOLD, 10, 10)}
    assert gc.get_threshold() == (700, 10, 10)


def test_overlapping_runs_restore_after_the_last(threshold):
    first, second = fewer_young_collections(), fewer_young_collections()
    first.__enter__()
    second.__enter__()
    assert gc.get_threshold()[0] == YOUNG_COLLECTION_THRESHOLD
    first.__exit__(None, None, None)  # the first to start ends first: the other still runs
    assert gc.get_threshold()[0] == YOUNG_COLLECTION_THRESHOLD
    second.__exit__(None, None, None)
    assert gc.get_threshold() == (700, 10, 10)


def test_runs_in_threads_share_one_raise(threshold):
    inside, release = threading.Barrier(3), threading.Event()

    def run():
        with fewer_young_collections():
            inside.wait()
            release.wait()

    threads = [threading.Thread(target=run) for _ in range(2)]
    for thread in threads:
        thread.start()
    inside.wait()
    assert gc.get_threshold()[0] == YOUNG_COLLECTION_THRESHOLD
    release.set()
    for thread in threads:
        thread.join()
    assert gc.get_threshold() == (700, 10, 10)


@pytest.mark.parametrize("chosen", [(0, 10, 10), (50_000, 5, 5)])
def test_a_threshold_the_program_chose_is_left_alone(threshold, chosen):
    """Automatic collection turned off (0), or a threshold above ours, is not touched."""
    gc.set_threshold(*chosen)
    with fewer_young_collections():
        assert gc.get_threshold() == chosen
    assert gc.get_threshold() == chosen


@pytest.mark.parametrize("chosen", [(3000, 10, 10), (YOUNG_COLLECTION_THRESHOLD, 20, 10)])
def test_a_threshold_changed_during_the_run_is_not_overwritten(threshold, chosen):
    with fewer_young_collections():
        gc.set_threshold(*chosen)
    assert gc.get_threshold() == chosen


def test_the_threshold_comes_back_when_the_run_fails(threshold):
    class Failing(ThresholdWitness):
        async def complete(self, request):
            raise RuntimeError("a backend bug")

    with pytest.raises(RuntimeError, match="a backend bug"):
        run_requests(Failing(), [JudgeRequest(messages=(Message("user", "x"),))])
    assert gc.get_threshold() == (700, 10, 10)
