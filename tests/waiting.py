"""Polling for a condition with a deadline: what tests against real services do instead of
sleeping a fixed time."""

from __future__ import annotations

import os
import time
from collections.abc import Callable
from pathlib import Path
from typing import Any

# Every ``wait_for`` deadline is this many times what its caller gives: the callers' figures are
# what the event takes on a quiet machine with some slack, and the suite runs them beside lab
# stacks at a load of 8-16 on two cores, where a fresh-clone run still found one short. The
# wait is on the event, so a wider deadline costs time only when the test fails anyway.
WAIT_MARGIN = float(os.environ.get("LAGWATCH_TEST_WAIT_MARGIN", "2"))


def wait_for(
    predicate: Callable[[], Any], timeout: float = 20.0, what: str = "", every: float = 0.2
) -> Any:
    """The first truthy value ``predicate`` returns; AssertionError after ``timeout`` s (times
    ``WAIT_MARGIN``)."""
    timeout *= WAIT_MARGIN
    deadline = time.monotonic() + timeout
    while True:
        value = predicate()
        if value:
            return value
        if time.monotonic() > deadline:
            raise AssertionError(f"{what or 'condition'}: not met within {timeout:g} s")
        time.sleep(every)


# The deadlines the lab-workload tests give ``wait_until`` are what each event takes on an idle
# machine, with some slack. The suite runs them beside three lab stacks on two cores (load 8-20,
# RESULTS.md "The test suite's wall time"), where a spout's first commit took over 30 s; and a
# fresh-clone run failed on a 30-s deadline. Every such wait is on the event itself, so a wide
# deadline costs nothing when the event comes: four times the idle figure.
LAB_WAIT_MARGIN = 4.0


def wait_until(
    probe: Callable[[], Any], timeout_s: float, what: str, interval_s: float = 0.2
) -> Any:
    """``lab.workload.probes.wait_until`` with ``LAB_WAIT_MARGIN`` times the deadline."""
    from lab.workload.probes import wait_until as lab_wait_until

    return lab_wait_until(probe, timeout_s * LAB_WAIT_MARGIN, what, interval_s)


class StatusRuns:
    """The status job's published runs in a lab stack's data directory (``results/status/
    run=<as of ms>``, each with its success marker): the clock of the waits on verdicts.

    A verdict comes a number of status runs after its fault, and a run's wall time is what a
    loaded machine stretches most: runs of ~10 s took 160-290 s in a fresh-clone run beside
    three other stacks, and waits of three times their target in seconds ran out on runs that
    had not happened. Runs are remembered once seen, as older ones are pruned.
    """

    def __init__(self, data_dir: Path) -> None:
        self.runs_dir = data_dir / "results" / "status"
        self._seen: set[int] = set()

    def since(self, wall: float) -> int:
        """How many runs have been published whose window ends at or after ``wall``."""
        if self.runs_dir.is_dir():
            for run in self.runs_dir.glob("run=*"):
                if (run / "_SUCCESS").exists():
                    self._seen.add(int(run.name.removeprefix("run=")))
        return sum(ms >= wall * 1000 for ms in self._seen)


# The status runs a wait on a verdict allows at least, beside its deadline in seconds: a fault's
# verdict comes a window of polls and a run or two after it, ~12 runs at the lab's pace (a poll
# of 5 s, a window of 10 commits, a status run after every stored cycle); 18 is half as many
# again. (With beat's runs alone, every 15 s, it was ~5 runs.)
VERDICT_RUNS = 18


def wait_for_verdict(
    predicate: Callable[[], Any],
    timeout: float,
    what: str,
    runs: StatusRuns,
    min_runs: int = VERDICT_RUNS,
    every: float = 1.0,
    cap_factor: float = 4.0,
) -> Any:
    """``wait_for`` whose deadline is ``timeout`` seconds *and* ``min_runs`` status runs begun
    since the wait began, whichever comes later (but no later than ``cap_factor`` times
    ``timeout``: a status job that never runs again still fails the test)."""
    start = time.time()
    deadline, cap = time.monotonic() + timeout, time.monotonic() + cap_factor * timeout
    while True:
        value = predicate()
        if value:
            return value
        now = time.monotonic()
        if now > cap or (now > deadline and runs.since(start) >= min_runs):
            raise AssertionError(
                f"{what or 'condition'}: not met within {now - deadline + timeout:.0f} s "
                f"and {runs.since(start)} status runs (deadline {timeout:g} s and {min_runs})"
            )
        time.sleep(every)
