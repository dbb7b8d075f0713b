"""The report spec parser: every field, its defaults, and a clear error naming the field."""

from __future__ import annotations

import re
from datetime import UTC, datetime, timedelta

import pytest
from django.http import QueryDict

from dashboard.reports.spec import (
    SpecError,
    parse_duration,
    parse_format,
    parse_resolution,
    parse_spec,
    pattern_regex,
)

NOW = datetime(2026, 3, 1, 12, 0, tzinfo=UTC)


def spec(**data):
    data.setdefault("cluster", "prod")
    data.setdefault("since", "24h")
    return parse_spec(data, now=NOW)


def error(**data) -> SpecError:
    with pytest.raises(SpecError) as info:
        spec(**data)
    return info.value


def test_minimal_spec_defaults():
    s = spec()
    assert s.cluster == "prod"
    assert (s.start, s.end) == (NOW - timedelta(hours=24), NOW)
    assert (s.resolution, s.resolution_s) == ("raw", 0)
    assert s.groups == s.topics == s.sources == ()


@pytest.mark.parametrize(
    ("since", "delta"),
    [
        ("90m", timedelta(minutes=90)),
        ("24h", timedelta(hours=24)),
        ("7d", timedelta(days=7)),
        ("30s", timedelta(seconds=30)),
        ("2w", timedelta(weeks=2)),
        (" 6H ", timedelta(hours=6)),
    ],
)
def test_since_durations(since, delta):
    assert spec(since=since).start == NOW - delta


@pytest.mark.parametrize("since", ["24", "h", "1.5h", "-1h", "24 h", "1y", "0h", "", "abc"])
def test_bad_since_names_since(since):
    e = error(since=since)  # "" means not given: then there is no range at all
    assert e.field == "since"
    assert str(e).startswith("since: ")


def test_since_beyond_limit():
    assert error(since="500d").field == "since"


def test_absolute_range_and_zones():
    s = spec(since=None, start="2026-02-01T00:00:00Z", end="2026-02-02T01:00:00+01:00")
    assert s.start == datetime(2026, 2, 1, tzinfo=UTC)
    assert s.end == datetime(2026, 2, 2, tzinfo=UTC)


def test_naive_times_are_utc_and_end_defaults_to_now():
    s = spec(since=None, start="2026-02-28T12:00")
    assert s.start == datetime(2026, 2, 28, 12, tzinfo=UTC)
    assert s.end == NOW


def test_since_with_end_counts_back_from_end():
    s = spec(since="1h", end="2026-02-01T10:00:00Z")
    assert (s.start, s.end) == (
        datetime(2026, 2, 1, 9, tzinfo=UTC),
        datetime(2026, 2, 1, 10, tzinfo=UTC),
    )


def test_since_and_start_together_refused():
    assert error(start="2026-02-01T00:00:00Z").field == "since"


def test_no_range_refused():
    assert error(since=None).field == "since"


@pytest.mark.parametrize("field", ["start", "end"])
def test_bad_times_name_their_field(field):
    data = {"since": None, "start": "2026-02-01T00:00:00Z", field: "yesterday"}
    if field == "end":
        data["start"] = "2026-02-01T00:00:00Z"
    e = error(**data)
    assert e.field == field
    assert "ISO-8601" in e.message


def test_empty_range_refused():
    e = error(since=None, start="2026-02-02T00:00:00Z", end="2026-02-01T00:00:00Z")
    assert e.field == "start"
    assert "empty" in e.message


def test_range_too_long_refused():
    assert error(since=None, start="2020-01-01T00:00:00Z").field == "start"


def test_cluster_required_and_string():
    assert error(cluster="").field == "cluster"
    assert error(cluster=None).field == "cluster"
    assert error(cluster=42).field == "cluster"
    assert error(cluster="x" * 101).field == "cluster"


def test_groups_and_topics_lists_strings_and_commas():
    s = spec(groups=["orders-*", "billing"], topic="payments, refunds", topics=["t?"])
    assert s.groups == ("orders-*", "billing")
    assert s.topics == ("t?", "payments", "refunds")


def test_duplicate_names_kept_once():
    assert spec(groups=["a", "a", "b"], group="a").groups == ("a", "b")


def test_group_entries_must_be_strings():
    assert error(groups=["a", 3]).field == "groups"
    assert error(group={"x": 1}).field == "group"


def test_names_too_long_or_too_many():
    assert error(groups=["g" * 256]).field == "groups"
    assert error(topics=[f"t{i}" for i in range(101)]).field == "topics"


def test_sources_checked():
    assert spec(sources=["kafka", "storm"]).sources == ("kafka", "storm")
    e = error(source="redis")
    assert e.field == "source"
    assert "kafka" in e.message


def test_unknown_field_named():
    e = error(grops=["a"])
    assert e.field == "grops"
    assert "unknown field" in e.message


def test_not_a_mapping():
    with pytest.raises(SpecError) as info:
        parse_spec(["cluster"], now=NOW)
    assert info.value.field == "body"


def test_nul_characters_refused():
    assert error(groups=["a\x00b"]).field == "groups"
    assert error(cluster="a\x00").field == "cluster"


def test_querydict_repeated_keys():
    q = QueryDict("cluster=prod&since=1h&group=a&group=b*&topic=t")
    s = parse_spec(q, now=NOW)
    assert s.groups == ("a", "b*")
    assert s.topics == ("t",)


def test_querydict_single_value_fields_refuse_repeats():
    q = QueryDict("cluster=prod&cluster=dev&since=1h")
    with pytest.raises(SpecError) as info:
        parse_spec(q, now=NOW)
    assert info.value.field == "cluster"


@pytest.mark.parametrize(
    ("text", "expected"),
    [
        ("raw", ("raw", 0)),
        ("RAW", ("raw", 0)),
        ("1m", ("1m", 60)),
        ("5m", ("5m", 300)),
        ("15m", ("15m", 900)),
        ("1h", ("1h", 3600)),
        ("6h", ("6h", 21600)),
        ("1d", ("1d", 86400)),
        ("30s", ("30s", 30)),
        ("7d", ("7d", 604800)),
    ],
)
def test_resolutions(text, expected):
    assert parse_resolution(text) == expected
    assert spec(resolution=text).resolution_s == expected[1]


@pytest.mark.parametrize("text", ["7m", "5h", "8d", "36h", "2x", "", "1.5h", 5])
def test_bad_resolutions(text):
    with pytest.raises(SpecError) as info:
        parse_resolution(text)
    assert info.value.field == "resolution"


def test_resolution_error_through_spec():
    assert error(resolution="fast").field == "resolution"


@pytest.mark.parametrize("fmt", ["csv", "JSON", " parquet ", "xlsx"])
def test_formats(fmt):
    assert parse_format(fmt) == fmt.strip().lower()


@pytest.mark.parametrize("fmt", ["xml", "", None, 3])
def test_bad_formats(fmt):
    with pytest.raises(SpecError) as info:
        parse_format(fmt)
    assert info.value.field == "format"


def test_format_checked_inside_spec_when_given():
    assert error(format="pdf").field == "format"
    assert spec(format="csv").cluster == "prod"


def test_duration_parser_direct():
    assert parse_duration("2h", "x") == timedelta(hours=2)
    with pytest.raises(SpecError) as info:
        parse_duration(None, "window")
    assert info.value.field == "window"


def test_spec_round_trips_through_dict():
    s = spec(groups=["a*"], topics=["t"], sources=["kafka"], resolution="5m")
    again = parse_spec(s.to_dict(), now=NOW + timedelta(days=3))
    assert again == s


def test_describe_mentions_scope():
    text = spec(groups=["orders-*"], resolution="1h").describe()
    assert "prod" in text and "orders-*" in text and "1h" in text and "24h" in text


def test_error_is_value_error():
    assert issubclass(SpecError, ValueError)


@pytest.mark.parametrize(
    ("pattern", "yes", "no"),
    [
        ("orders-*", ["orders-", "orders-eu"], ["order", "xorders-eu"]),
        ("t?", ["t1", "tx"], ["t", "t12"]),
        ("[ab]x", ["ax", "bx"], ["cx", "abx"]),
        ("[!ab]x", ["cx"], ["ax"]),
        ("a.b", ["a.b"], ["axb"]),
        ("a+(b)", ["a+(b)"], ["aab"]),
        ("[", ["["], ["a"]),
        ("*", ["", "anything\nwith newline"], []),
        ("Grüße-*", ["Grüße-1"], ["grüße-1"]),
    ],
)
def test_pattern_regex(pattern, yes, no):
    regex = re.compile(pattern_regex(pattern))
    for name in yes:
        assert regex.match(name), name
    for name in no:
        assert not regex.match(name), name
