"""The query-string readers, directly: each takes good input and names the bad."""

from __future__ import annotations

from datetime import UTC, datetime, timedelta

import pytest
from django.http import QueryDict

from dashboard.api import params
from dashboard.api.errors import ApiError

NOW = datetime(2026, 11, 21, 12, 0, tzinfo=UTC)


def q(text: str) -> QueryDict:
    return QueryDict(text)


def refused(call, *args, **kwargs) -> ApiError:
    with pytest.raises(ApiError) as caught:
        call(*args, **kwargs)
    assert caught.value.status == 400
    return caught.value


@pytest.mark.parametrize(
    ("text", "seconds"),
    [("90s", 90), ("15m", 900), ("6h", 21600), ("7d", 604800), ("2w", 1209600), (" 3h ", 10800)],
)
def test_durations(text: str, seconds: int) -> None:
    assert params.parse_duration(text) == timedelta(seconds=seconds)


@pytest.mark.parametrize("text", ["", "6", "h", "6hours", "-1h", "1.5h", "6 h 3m", "1y"])
def test_not_durations(text: str) -> None:
    assert params.parse_duration(text) is None


def test_moment_takes_a_duration_ago_or_an_iso_datetime() -> None:
    assert params.moment(q("since=6h"), "since", NOW) == NOW - timedelta(hours=6)
    assert params.moment(q("since=2026-11-20T10:00:00Z"), "since", NOW) == datetime(
        2026, 11, 20, 10, tzinfo=UTC
    )
    naive = params.moment(q("since=2026-11-20T10:00:00"), "since", NOW)
    assert naive == datetime(2026, 11, 20, 10, tzinfo=UTC)
    assert params.moment(q(""), "since", NOW, default=NOW) == NOW


@pytest.mark.parametrize("value", ["yesterday", "2026-13-01T00:00:00", "6hours"])
def test_moment_refuses_anything_else(value: str) -> None:
    error = refused(params.moment, q(f"since={value}"), "since", NOW)
    assert error.field == "since" and "neither a duration" in error.message


def test_integer_bounds_and_garbage() -> None:
    assert params.integer(q("n=5"), "n", minimum=1, maximum=9) == 5
    assert params.integer(q(""), "n", 7) == 7
    assert "at least 1" in refused(params.integer, q("n=0"), "n", minimum=1).message
    assert "at most 9" in refused(params.integer, q("n=10"), "n", maximum=9).message
    assert "an integer" in refused(params.integer, q("n=1e3"), "n").message


def test_a_parameter_given_twice_is_refused() -> None:
    assert "more than once" in refused(params.integer, q("n=1&n=2"), "n").message


def test_choices_are_case_insensitive_for_statuses_and_deduplicated() -> None:
    assert params.choices(q("s=ok,Stall&s=OK"), "s", ("OK", "STALL")) == ["OK", "STALL"]
    assert params.choices(q("s=Kafka"), "s", ("kafka", "storm")) == ["kafka"]
    assert refused(params.choices, q("s=ok,nope"), "s", ("OK",)).field == "s"


def test_boolean() -> None:
    assert params.boolean(q("b=yes"), "b") is True
    assert params.boolean(q("b=0"), "b", True) is False
    assert "true or false" in refused(params.boolean, q("b=2"), "b").message


def test_text_refuses_nul_and_long() -> None:
    assert params.text(q("t=a%2Fb"), "t") == "a/b"
    assert "NUL" in refused(params.text, q("t=a%00b"), "t").message
    assert "at most 3" in refused(params.text, q("t=abcd"), "t", max_length=3).message


def test_check_known_names_the_unknown_parameter() -> None:
    params.check_known(q("a=1&b=2"), ("a", "b", "c"))
    error = refused(params.check_known, q("a=1&zz=2"), ("a",))
    assert error.field == "zz" and "unknown parameter" in error.message
