"""Small pure helpers of the queries: top lists, thinning polls, partition ranges."""

from dashboard.ui.queries.group import _ranges
from dashboard.ui.queries.overview import top
from dashboard.ui.queries.series import thin


def test_top_keeps_positive_totals_largest_first_ties_by_id() -> None:
    assert top({1: 5, 2: 0, 3: 9, 4: None, 5: 5}, n=3) == [(3, 9), (1, 5), (5, 5)]
    assert top({}) == []


def test_thin_keeps_the_first_and_newest_evenly() -> None:
    assert thin(list(range(10)), 20) == list(range(10))
    assert thin(list(range(10)), 4) == [0, 3, 6, 9]
    assert thin(list(range(100)), 2) == [0, 99]


def test_partition_ranges() -> None:
    assert _ranges([5, 0, 1, 2, 7, 8]) == "0-2, 5, 7-8"
    assert _ranges([3]) == "3"
    assert _ranges([]) == ""
