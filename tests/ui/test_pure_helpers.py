"""Small pure helpers of the queries: thinning polls, partition ranges."""

from dashboard.ui.queries.group import _ranges
from dashboard.ui.queries.series import thin


def test_thin_keeps_the_first_and_newest_evenly() -> None:
    assert thin(list(range(10)), 20) == list(range(10))
    assert thin(list(range(10)), 4) == [0, 3, 6, 9]
    assert thin(list(range(100)), 2) == [0, 99]


def test_partition_ranges() -> None:
    assert _ranges([5, 0, 1, 2, 7, 8]) == "0-2, 5, 7-8"
    assert _ranges([3]) == "3"
    assert _ranges([]) == ""
