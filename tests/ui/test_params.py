"""GET parameters of the pages (pure)."""

import pytest
from django.http import QueryDict

from dashboard.ui.params import BadParam, GroupFilter, group_filter, group_view, range_param


def q(s: str) -> QueryDict:
    return QueryDict(s)


def test_defaults() -> None:
    assert group_filter(q("")) == GroupFilter()
    assert group_view(q("")).range.key == "1h"


def test_statuses_are_kept_worst_first_without_duplicates() -> None:
    assert group_filter(q("status=OK&status=ERR&status=OK")).statuses == ("ERR", "OK")


def test_query_string_round_trips() -> None:
    f = group_filter(
        q("q=a%20b&status=STOP&source=storm&cluster=prod&sort=lag&per_page=100&page=3")
    )
    assert group_filter(q(f.query_string())) == f
    assert (
        f.query_string(page=1)
        == "q=a+b&status=STOP&source=storm&cluster=prod&sort=lag&per_page=100"
    )
    assert GroupFilter().query_string() == ""
    typed = group_filter(q("type=consumer&cluster=prod"))
    assert typed.group_type == "consumer" and group_filter(q(typed.query_string())) == typed
    assert typed.query_string(page=2) == "cluster=prod&type=consumer&page=2"


def test_group_view_query_string_round_trips() -> None:
    v = group_view(q("range=7d&pstatus=STALL&topic=%3Cx%3E&psort=lag&ppage=2"))
    assert group_view(q(v.query_string())) == v
    assert "topic=%3Cx%3E" in v.query_string()


def test_empty_values_mean_no_filter() -> None:
    assert group_filter(q("status=&source=&sort=&q=&type=")) == GroupFilter()


@pytest.mark.parametrize("s, field", [
    ("range=1y", "range"), ("range=1h&range=15m", "range"), ("pstatus=ok", "pstatus"),
    ("ppage=-1", "ppage"), ("psort=x", "psort"), ("topic=" + "t" * 256, "topic"),
])  # fmt: skip
def test_bad_group_view_names_the_field(s: str, field: str) -> None:
    with pytest.raises(BadParam) as e:
        group_view(q(s))
    assert e.value.field == field


def test_range_param_from_a_plain_dict() -> None:
    assert range_param({"range": ["30d"]}).span.days == 30
