"""``tests/waiting.py``: the verdict waits' deadline, in seconds and in status runs."""

from __future__ import annotations

import shutil
import threading
import time
from pathlib import Path

import pytest

from tests import waiting
from tests.waiting import StatusRuns, wait_for_verdict


def publish(data: Path, at: float, marker: bool = True) -> Path:
    run = data / "results" / "status" / f"run={int(at * 1000)}"
    run.mkdir(parents=True)
    if marker:
        (run / "_SUCCESS").touch()
    return run


def test_status_runs_counts_published_runs_from_a_time_and_remembers_pruned_ones(
    tmp_path: Path,
) -> None:
    runs = StatusRuns(tmp_path)
    assert runs.since(0) == 0  # no results directory yet
    publish(tmp_path, 100.0)
    old = publish(tmp_path, 50.0)
    publish(tmp_path, 200.0, marker=False)  # still being written
    assert (runs.since(0), runs.since(100.0), runs.since(100.001)) == (2, 1, 0)
    shutil.rmtree(old)  # pruned
    assert runs.since(0) == 2


def test_a_met_predicate_returns_at_once(tmp_path: Path) -> None:
    assert wait_for_verdict(lambda: "yes", 0.1, "x", StatusRuns(tmp_path), 3) == "yes"


def test_the_deadline_waits_for_the_runs_it_counts(tmp_path: Path) -> None:
    runs, met = StatusRuns(tmp_path), threading.Event()

    def slow_job() -> None:  # the machine is slow: runs come later than the deadline
        time.sleep(0.3)
        # The verdict before the run is counted: the other order let the wait count the run
        # and fail between the two lines on a loaded machine (a fresh clone's red).
        met.set()
        publish(tmp_path, time.time())

    worker = threading.Thread(target=slow_job)
    worker.start()
    try:
        assert wait_for_verdict(met.is_set, 0.1, "x", runs, 1, every=0.02, cap_factor=50)
    finally:
        worker.join()


def test_enough_runs_and_the_deadline_passed_is_a_failure(tmp_path: Path) -> None:
    runs = StatusRuns(tmp_path)
    publish(tmp_path, time.time() + 60)  # a run begun after the wait's start
    publish(tmp_path, time.time() - 10)  # one before it: not counted
    t0 = time.monotonic()
    with pytest.raises(AssertionError, match="never: not met within .* and 1 status runs"):
        wait_for_verdict(lambda: False, 0.1, "never", runs, 1, every=0.02, cap_factor=50)
    assert time.monotonic() - t0 < 2


def test_no_runs_at_all_fails_at_the_cap(tmp_path: Path) -> None:
    t0 = time.monotonic()
    with pytest.raises(AssertionError, match="and 0 status runs"):
        wait_for_verdict(lambda: False, 0.1, "stuck", StatusRuns(tmp_path), 5, every=0.02)
    assert 0.4 <= time.monotonic() - t0 < 3  # cap_factor 4 x 0.1 s


def test_wait_for_gives_its_deadline_the_margin(monkeypatch: pytest.MonkeyPatch) -> None:
    # Met after twice the stated deadline, well inside ten times it (a loaded machine's pauses).
    monkeypatch.setattr(waiting, "WAIT_MARGIN", 10.0)
    t0 = time.monotonic()
    assert waiting.wait_for(lambda: time.monotonic() - t0 > 0.2, 0.1, "late", every=0.01)
    monkeypatch.setattr(waiting, "WAIT_MARGIN", 1.0)
    t0 = time.monotonic()
    with pytest.raises(AssertionError, match="late: not met within 0.1 s"):
        waiting.wait_for(lambda: time.monotonic() - t0 > 10, 0.1, "late", every=0.01)
