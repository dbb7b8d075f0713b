"""Polling for a condition with a deadline: what tests against real services do instead of
sleeping a fixed time."""

from __future__ import annotations

import time
from collections.abc import Callable
from typing import Any


def wait_for(
    predicate: Callable[[], Any], timeout: float = 20.0, what: str = "", every: float = 0.2
) -> Any:
    """The first truthy value ``predicate`` returns; AssertionError after ``timeout`` s."""
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
