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
