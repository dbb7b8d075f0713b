"""Report rows checked against the samples they came from: a real sample log written with
``SampleLog.write_batch``, read back through the report pipeline, compared with a plain Python
reference (bucketing, range bounds, scope filters and patterns, deduplication, status)."""

from __future__ import annotations

import csv
import io
from datetime import UTC, datetime, timedelta

import pytest

from collectors.sample_log import SampleLog
from dashboard.reports.rows import REPORT_COLUMNS, iter_report_batches
from dashboard.reports.samples import plan_hours
from dashboard.reports.spec import parse_spec
from dashboard.reports.status import StatusHistory
from tests.reports.factory import HOUR, MINUTE, T0, regular_samples, sample, write_cycles

NO_HISTORY = StatusHistory([])
KEYS = [
    ("kafka", "orders-eu", "payments", 0),
    ("kafka", "orders-eu", "payments", 1),
    ("kafka", "orders-us", "payments", 0),
    ("kafka", "billing", "invoices", 0),
    ("storm", "orders-eu", "payments", 0),
]


def iso(ms: int) -> str:
    return datetime.fromtimestamp(ms / 1000, UTC).isoformat()


def make_spec(start_ms: int, end_ms: int, **extra):
    return parse_spec({"cluster": "c1", "start": iso(start_ms), "end": iso(end_ms), **extra})


def report(log, spec, history=NO_HISTORY) -> list[dict]:
    rows = []
    for batch in iter_report_batches(log, spec, history):
        assert batch.schema.names == list(REPORT_COLUMNS)
        for row in batch.to_pylist():
            row["time"] = int(row["time"].timestamp() * 1000)
            rows.append(row)
    return rows


def expected_rows(samples, start_ms, end_ms, resolution_ms=0, keep=lambda s: True):
    """The reference: plain loops over the samples written."""
    chosen = {}
    for s in sorted(samples, key=lambda s: s["ts_ms"]):
        if not (start_ms <= s["ts_ms"] < end_ms) or not keep(s):
            continue
        bucket = s["ts_ms"] - s["ts_ms"] % resolution_ms if resolution_ms else s["ts_ms"]
        chosen[(s["source"], s["group"], s["topic"], s["partition"], bucket)] = s  # last wins
    out = []
    for (source, group, topic, partition, bucket), s in chosen.items():
        out.append({
            "time": bucket, "cluster": "c1", "source": source, "group": group, "topic": topic,
            "partition": partition, "committed": s["committed"], "latest": s["latest"],
            "lag": s["lag"], "time_lag_s": s["time_lag_s"], "status": "UNKNOWN",
        })  # fmt: skip
    return out


def by_key(rows):
    return sorted(
        rows, key=lambda r: (r["time"], r["source"], r["group"], r["topic"], r["partition"])
    )


@pytest.fixture(scope="module")
def shared_log(tmp_path_factory):
    return SampleLog(tmp_path_factory.mktemp("shared") / "samples")


@pytest.fixture(scope="module")
def two_hours(shared_log):
    """Two hours of samples: the first every 20 s and compacted (written at once, then
    compacted), the second every 2 min as one micro-batch per cycle, not compacted yet."""
    first = regular_samples(T0, 180, 20_000, KEYS)
    second = [
        s for s in regular_samples(T0, 360, 20_000, KEYS)
        if s["ts_ms"] >= T0 + HOUR and s["ts_ms"] % (2 * MINUTE) == 0
    ]  # fmt: skip
    shared_log.write_batch("c1", "first-hour", first)
    write_cycles(shared_log, "c1", second)
    write_cycles(shared_log, "other", regular_samples(T0, 10, 20_000, KEYS[:1]))
    shared_log.compact_closed_hours(T0 + HOUR + 10 * MINUTE)
    plans = plan_hours(shared_log, make_spec(T0, T0 + 2 * HOUR))
    assert [(p.start_ms, p.streamable) for p in plans] == [(T0, True), (T0 + HOUR, False)]
    return first + second


def test_raw_rows_equal_the_samples(shared_log, two_hours):
    log = shared_log
    rows = report(log, make_spec(T0, T0 + 2 * HOUR))
    assert len(rows) == (180 + 30) * len(KEYS)
    assert by_key(rows) == by_key(expected_rows(two_hours, T0, T0 + 2 * HOUR))
    assert {r["cluster"] for r in rows} == {"c1"}  # the other cluster stays out


def test_range_is_start_inclusive_end_exclusive(shared_log, two_hours):
    log = shared_log
    start, end = T0 + 10 * MINUTE, T0 + HOUR + 20 * MINUTE
    rows = report(log, make_spec(start, end))
    assert min(r["time"] for r in rows) == start
    assert max(r["time"] for r in rows) == end - 2 * MINUTE
    assert by_key(rows) == by_key(expected_rows(two_hours, start, end))


@pytest.mark.parametrize("resolution", ["1m", "5m", "1h", "2h", "6h", "1d"])
def test_buckets_hold_the_last_sample(shared_log, two_hours, resolution):
    log = shared_log
    spec = make_spec(T0 + 7 * MINUTE, T0 + 2 * HOUR, resolution=resolution)
    rows = report(log, spec)
    ref = expected_rows(two_hours, spec.start_ms, spec.end_ms, spec.resolution_s * 1000)
    assert by_key(rows) == by_key(ref)
    times = {r["time"] for r in rows}
    assert all(t % (spec.resolution_s * 1000) == 0 for t in times)


def test_one_minute_bucket_values_by_hand(shared_log, two_hours):
    log = shared_log
    rows = report(log, make_spec(T0, T0 + 2 * MINUTE, resolution="1m", groups="billing"))
    # samples at 0, 20, 40 s in each minute: cycles 2 and 5 are the last of each minute
    assert [(r["time"], r["committed"], r["lag"]) for r in rows] == [
        (T0, 20, 2),
        (T0 + MINUTE, 50, 5),
    ]


def test_order_within_an_hour_is_key_then_time(shared_log, two_hours):
    log = shared_log
    rows = report(log, make_spec(T0, T0 + 2 * HOUR))
    first_hour = [r for r in rows if r["time"] < T0 + HOUR]
    assert rows[: len(first_hour)] == first_hour  # hour by hour
    for hour in (first_hour, rows[len(first_hour) :]):
        keys = [(r["source"], r["group"], r["topic"], r["partition"], r["time"]) for r in hour]
        assert keys == sorted(keys)


@pytest.mark.parametrize(
    ("scope", "keep"),
    [
        ({"groups": "orders-eu"}, lambda s: s["group"] == "orders-eu"),
        ({"groups": "orders-*"}, lambda s: s["group"].startswith("orders-")),
        ({"groups": ["billing", "orders-u?"]}, lambda s: s["group"] in ("billing", "orders-us")),
        ({"topics": "inv*"}, lambda s: s["topic"] == "invoices"),
        (
            {"groups": "orders-*", "topics": "payments", "sources": "storm"},
            lambda s: s["source"] == "storm",
        ),
        ({"groups": "nothing-*"}, lambda s: False),
        ({"groups": "[ob]*", "topics": ["payments", "invoices"]}, lambda s: True),
    ],
)
def test_scope_filters_and_patterns(shared_log, two_hours, scope, keep):
    log = shared_log
    for resolution in ("raw", "5m"):
        spec = make_spec(T0 + 50 * MINUTE, T0 + HOUR + 10 * MINUTE, resolution=resolution, **scope)
        rows = report(log, spec)
        ref = expected_rows(two_hours, spec.start_ms, spec.end_ms, spec.resolution_s * 1000, keep)
        assert by_key(rows) == by_key(ref)


def test_patterns_are_case_sensitive_and_literal(log):
    samples = [
        sample(T0, name, "t", 0, i) for i, name in enumerate(["Orders", "orders", "a.b", "axb"])
    ]
    write_cycles(log, "c1", samples)
    assert [r["group"] for r in report(log, make_spec(T0, T0 + MINUTE, groups="o*"))] == ["orders"]
    assert [r["group"] for r in report(log, make_spec(T0, T0 + MINUTE, groups="a.*"))] == ["a.b"]


def test_a_rewritten_sample_counts_once_with_the_later_value(log):
    """Two files of one hour holding the same key: the later write wins, as in the log."""
    log.write_batch("c1", "first", [sample(T0, "g", "t", 0, 10, 15)])
    log.write_batch(
        "c1", "second", [sample(T0, "g", "t", 0, 11, 15), sample(T0 + 5, "g", "t", 0, 12, 15)]
    )
    rows = report(log, make_spec(T0, T0 + HOUR))
    assert [(r["time"], r["committed"]) for r in rows] == [(T0, 11), (T0 + 5, 12)]


def test_a_late_batch_beside_a_compacted_hour(log):
    write_cycles(log, "c1", [sample(T0 + i * MINUTE, "g", "t", 0, i) for i in range(3)])
    log.compact_closed_hours(T0 + 2 * HOUR)
    log.write_batch(
        "c1",
        "late",
        [sample(T0 + MINUTE, "g", "t", 0, 99), sample(T0 + 5 * MINUTE, "g", "t", 0, 5)],
    )
    rows = report(log, make_spec(T0, T0 + HOUR))
    assert [(r["time"], r["committed"]) for r in rows] == [
        (T0, 0),
        (T0 + MINUTE, 99),
        (T0 + 2 * MINUTE, 2),
        (T0 + 5 * MINUTE, 5),
    ]


def test_works_right_after_the_first_collection(log):
    """One micro-batch, no compaction, no rollups: the report has its row."""
    log.write_batch("c1", "cycle-1", [sample(T0 + 1_500, "g", "t", 3, 40, 42, time_lag_s=2.5)])
    for resolution in ("raw", "1m", "1h"):
        rows = report(log, make_spec(T0, T0 + HOUR, resolution=resolution))
        assert len(rows) == 1
        assert (rows[0]["partition"], rows[0]["committed"], rows[0]["latest"], rows[0]["lag"],
                rows[0]["time_lag_s"]) == (3, 40, 42, 2, 2.5)  # fmt: skip


def test_empty_range_and_unknown_cluster(shared_log, two_hours):
    log = shared_log
    assert report(log, make_spec(T0 + 5 * HOUR, T0 + 6 * HOUR)) == []
    spec = parse_spec({"cluster": "nope", "start": iso(T0), "end": iso(T0 + HOUR)})
    assert report(log, spec) == []


def test_status_from_history_at_each_rows_time(log):
    write_cycles(
        log, "c1", [sample(T0 + i * MINUTE, "g", "t", p, i) for i in range(10) for p in (0, 1)]
    )
    history = StatusHistory([
        ("kafka", "g", "t", 0, T0 + 3 * MINUTE, "OK"),
        ("kafka", "g", "t", 0, T0 + 6 * MINUTE + 1, "STALL"),
        ("kafka", "g", "t", 1, T0 - HOUR, "WARN"),  # before the range: in force from the start
    ])  # fmt: skip
    rows = report(log, make_spec(T0, T0 + HOUR), history)
    p0 = [r["status"] for r in rows if r["partition"] == 0]
    assert p0 == ["UNKNOWN"] * 3 + ["OK"] * 4 + ["STALL"] * 3
    assert {r["status"] for r in rows if r["partition"] == 1} == {"WARN"}
    # in buckets, the status is the one in force at the bucket's last sample
    rows = report(log, make_spec(T0, T0 + HOUR, resolution="5m"), history)
    assert [(r["time"], r["status"]) for r in rows if r["partition"] == 0] == [
        (T0, "OK"),
        (T0 + 5 * MINUTE, "STALL"),
    ]


def test_csv_of_a_real_log_matches_the_rows(shared_log, two_hours):
    log = shared_log
    from dashboard.reports.writers import write_report

    spec = make_spec(T0, T0 + 30 * MINUTE, resolution="5m", groups="orders-*")
    rows = report(log, spec)
    text = b"".join(write_report(iter_report_batches(log, spec, NO_HISTORY), "csv")).decode()
    parsed = list(csv.DictReader(io.StringIO(text)))
    assert len(parsed) == len(rows) > 0
    for got, want in zip(parsed, rows, strict=True):
        assert got["time"] == datetime.fromtimestamp(want["time"] / 1000, UTC).strftime(
            "%Y-%m-%dT%H:%M:%S.000Z"
        )
        assert (got["group"], int(got["partition"]), int(got["lag"])) == (
            want["group"],
            want["partition"],
            want["lag"],
        )


def test_time_range_helpers():
    spec = make_spec(T0, T0 + HOUR)
    assert spec.end - spec.start == timedelta(hours=1)
