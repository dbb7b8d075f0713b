"""A source's deadline in a cycle leaves room in the poll slot (``source_timeout_s``): a cycle
whose source hangs until its deadline must still end within its interval, or the next slots
are late and the healthy sources' groups read as a collection gap."""

from __future__ import annotations

import pytest

from dashboard.store.cycle import source_timeout_s


@pytest.mark.parametrize(
    ("poll_s", "configured_s", "expected_s"),
    [
        (10, 10, 6.0),  # the default: 60 % of a 10-s poll
        (60, 10, 10.0),  # a long poll: the setting
        (3, 10, 1.8),  # the lab's short poll
        (5, 10, 3.0),
        (1, 10, 1.0),  # never below a second
        (2, 10, 1.2),
        (10, 2, 2.0),  # a shorter setting wins
        (10, 0.5, 0.5),
    ],
)
def test_a_source_deadline_leaves_room_in_the_slot(
    poll_s: int, configured_s: float, expected_s: float
) -> None:
    assert source_timeout_s(poll_s, configured_s) == pytest.approx(expected_s)


def test_a_cycle_whose_sources_take_their_whole_deadline_fits_its_slot() -> None:
    for poll_s in range(2, 120):
        assert source_timeout_s(poll_s, 10) < poll_s
