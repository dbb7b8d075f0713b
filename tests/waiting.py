"""Polling for a condition with a deadline: what tests against real services do instead of
sleeping a fixed time."""

from __future__ import annotations

import time
from collections.abc import Callable
from typing import Any


def wait_for(
    predicate: Callable[[], Any], timeout: float = 20.0, what: str = "", every: float = 0.2
) -> Any:
    """The first truthy value ``predicate`` returns; AssertionError after ``timeout`` s.

    The pause between two reads is ``every``, or as long as the last read took if that was
    longer: a predicate that runs ``manage.py`` (~1.5 CPU-s) is not re-run back to back, which
    on two cores took a core from the rest of the suite for as long as a test waited.
    """
    deadline = time.monotonic() + timeout
    while True:
        started = time.monotonic()
        value = predicate()
        if value:
            return value
        finished = time.monotonic()
        if finished > deadline:
            raise AssertionError(f"{what or 'condition'}: not met within {timeout:g} s")
        time.sleep(max(every, finished - started))
