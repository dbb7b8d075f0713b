"""The Parquet sample log: idempotent writes, compaction, retention, and Spark reading it."""

from __future__ import annotations

import os
import shutil
from datetime import UTC, date, datetime, timedelta
from pathlib import Path
from typing import Any

import pyarrow as pa
import pyarrow.fs as pafs
import pyarrow.parquet as pq
import pytest

from collectors.records import SHARE_STATE_COLUMNS, Source
from collectors.sample_log import (
    COLUMNS,
    KEY_COLUMNS,
    SAMPLE_SCHEMA,
    SORT_COLUMNS,
    SampleLog,
    store,
)

H10 = datetime(2024, 5, 1, 10, tzinfo=UTC)  # an hour boundary
H10_MS = int(H10.timestamp() * 1000)
MINUTE = 60_000


def sample(**overrides: Any) -> dict[str, Any]:
    row: dict[str, Any] = {
        "ts_ms": H10_MS + 10 * MINUTE,
        "cluster": "prod",
        "source": "kafka",
        "group": "billing",
        "topic": "orders",
        "partition": 0,
        "committed": 100,
        "earliest": 0,
        "latest": 150,
        "lag": 50,
        "time_lag_s": 2.5,
        "commit_time_ms": H10_MS + 9 * MINUTE,
        "commit_version": None,
        "owner": "consumer-1",
        "topology_id": None,
        "alive": True,
        "pending": None,
        "failed": None,
        "acked": None,
        "stale": False,
        "emitted": None,
        "max_spout_pending": None,
        "spout_pending": None,
        "smallest_failed_offset": None,
        "max_offset_behind": None,
        "share": None,
        "lag_upper_bound": None,
        **dict.fromkeys(SHARE_STATE_COLUMNS),
    }
    row.update(overrides)
    return row


def cycle(ts_ms: int, partitions: int = 3, **overrides: Any) -> list[dict[str, Any]]:
    return [
        sample(ts_ms=ts_ms, partition=p, committed=100 + p, **overrides) for p in range(partitions)
    ]


def files_under(path: Path) -> list[Path]:
    return sorted(p for p in path.rglob("*") if p.is_file())


def keyed(table: pa.Table) -> dict[tuple, dict[str, Any]]:
    return {tuple(r[k] for k in KEY_COLUMNS): r for r in table.to_pylist()}


@pytest.fixture
def log(tmp_path: Path) -> SampleLog:
    return SampleLog(tmp_path / "samples")


# -- writing and reading -------------------------------------------------------------------


def test_round_trip_keeps_every_value_and_every_null(log: SampleLog) -> None:
    storm = sample(
        source=Source.STORM, group="clicks-spout", partition=7, committed=9, earliest=None,
        latest=None, lag=None, time_lag_s=None, commit_time_ms=None, commit_version=41,
        owner=None, topology_id="clicks-12-1712345678", alive=None, pending=0, failed=3,
        acked=None, stale=True, emitted=0, max_spout_pending=1000, spout_pending=1000,
        smallest_failed_offset=0, max_offset_behind=100000,
    )  # fmt: skip
    queue = sample(group="jobs-workers", partition=3, share=True, lag_upper_bound=True,
                   share_max_deliveries=5, share_archived=0, share_archived_ms=1714558140000)  # fmt: skip
    rows = [sample(), queue, storm]
    log.write_batch("prod", "c1", rows)

    back = log.read()

    assert back.schema == SAMPLE_SCHEMA
    assert sorted(back.to_pylist(), key=lambda r: r["partition"]) == rows
    got = keyed(back)[(storm["ts_ms"], "prod", "storm", "clicks-spout", "orders", 7)]
    # None stays None (not 0, not False); a real 0 stays 0.
    assert got["latest"] is None and got["alive"] is None and got["time_lag_s"] is None
    assert got["pending"] == 0 and got["stale"] is True


def test_a_table_is_accepted_and_a_missing_cluster_column_filled_in(log: SampleLog) -> None:
    table = pa.Table.from_pylist(cycle(H10_MS)).drop_columns(["cluster", "owner"])
    log.write_batch("prod", "c1", table)

    back = log.read()

    assert back.num_rows == 3
    assert set(back["cluster"].to_pylist()) == {"prod"}
    assert back["owner"].null_count == 3


def test_time_lag_is_kept_to_the_millisecond(log: SampleLog) -> None:
    log.write_batch("prod", "c1", [sample(time_lag_s=12.3456789)])
    assert log.read()["time_lag_s"].to_pylist() == [12.346]


def test_layout_is_hive_partitioned_by_cluster_date_and_hour(log: SampleLog) -> None:
    (path,) = log.write_batch("prod", "c1", cycle(H10_MS + 5 * MINUTE))
    relative = Path(path).relative_to(log.base)
    assert relative.parts[:3] == ("cluster=prod", "date=2024-05-01", "hour=10")
    assert relative.name.startswith("batch-") and relative.suffix == ".parquet"


def test_a_retried_cycle_replaces_its_file_instead_of_adding_samples(log: SampleLog) -> None:
    first = log.write_batch("prod", "cycle-42", cycle(H10_MS, lag=50))
    again = log.write_batch("prod", "cycle-42", cycle(H10_MS, lag=51))

    assert first == again
    assert len(files_under(Path(log.base))) == 1  # and no temp file left behind
    back = log.read()
    assert back.num_rows == 3
    assert set(back["lag"].to_pylist()) == {51}


def test_two_cycles_with_the_same_key_read_as_one_sample_the_later_write(log: SampleLog) -> None:
    log.write_batch("prod", "a", cycle(H10_MS, lag=1))
    log.write_batch("prod", "b", cycle(H10_MS, lag=2))

    back = log.read()

    assert back.num_rows == 3
    assert set(back["lag"].to_pylist()) == {2}


def test_a_batch_across_an_hour_boundary_lands_in_two_partitions(log: SampleLog) -> None:
    rows = cycle(H10_MS - 10_000) + cycle(H10_MS)  # 09:59:50 and 10:00:00
    written = log.write_batch("prod", "c1", rows)

    assert sorted(Path(p).parent.name for p in written) == ["hour=09", "hour=10"]
    assert [h.hour for h in log.hours()] == [9, 10]
    assert pq.read_table(written[0]).num_rows == 3 and pq.read_table(written[1]).num_rows == 3
    assert log.read(start=H10).num_rows == 3
    assert log.read().num_rows == 6


def test_a_date_boundary_is_split_too(log: SampleLog) -> None:
    midnight = int(datetime(2024, 5, 2, tzinfo=UTC).timestamp() * 1000)
    written = log.write_batch("prod", "c1", cycle(midnight - 1) + cycle(midnight))
    assert sorted(Path(p).parent.parent.name for p in written) == [
        "date=2024-05-01",
        "date=2024-05-02",
    ]


def test_an_empty_batch_is_a_no_op(log: SampleLog) -> None:
    assert log.write_batch("prod", "c1", []) == []
    assert log.write_batch("prod", "c1", SAMPLE_SCHEMA.empty_table()) == []
    assert not Path(log.base).exists()
    assert log.read().num_rows == 0
    assert log.read().schema == SAMPLE_SCHEMA


def test_read_selects_a_half_open_time_window_and_a_cluster(log: SampleLog) -> None:
    for i in range(4):  # 10:00, 10:30, 11:00, 11:30
        ts = H10_MS + i * 30 * MINUTE
        log.write_batch("prod", f"p{i}", cycle(ts, cluster="prod"))
        log.write_batch("test", f"t{i}", cycle(ts, cluster="test"))

    window = log.read("prod", H10 + timedelta(minutes=30), H10 + timedelta(minutes=90))

    assert sorted(set(window["ts_ms"].to_pylist())) == [H10_MS + 30 * MINUTE, H10_MS + 60 * MINUTE]
    assert set(window["cluster"].to_pylist()) == {"prod"}
    assert log.read(end=H10_MS + 30 * MINUTE).num_rows == 6  # epoch ms work too
    assert log.read("nowhere").num_rows == 0
    with pytest.raises(ValueError, match="naive"):
        log.read(start=datetime(2024, 5, 1, 10))


@pytest.mark.parametrize(
    ("rows", "message"),
    [
        ([sample(comitted=1)], "unknown sample columns"),
        ([sample(topic=None)], "'topic' must not be null"),
        ([sample(committed=None)], "'committed' must not be null"),
        ([sample(source="kafka2")], "unknown sources"),
        ([sample(committed=1.5)], "'committed' must be int64"),
        ([sample(alive=1)], "'alive'"),
        ([sample(group=123)], "'group'"),
        ([sample(partition=2**40)], "'partition'"),
        ([sample(cluster="other")], "another cluster"),
        ([sample(ts_ms=-1)], "before 1970"),
    ],
)
def test_bad_rows_are_refused_whole(log: SampleLog, rows: list[dict], message: str) -> None:
    with pytest.raises(ValueError, match=message):
        log.write_batch("prod", "c1", [sample(partition=9), *rows])
    assert not Path(log.base).exists()


@pytest.mark.parametrize(
    ("column", "value", "expected"),
    [("committed", 1.5, "int64"), ("alive", 1, "bool"), ("group", 123, "string")],
)
def test_values_are_never_coerced_into_another_meaning(
    log: SampleLog, column: str, value: Any, expected: str
) -> None:
    """pyarrow alone would store 1.5 as 1 and 1 as True."""
    with pytest.raises(ValueError, match=f"'{column}' must be {expected}"):
        log.write_batch("prod", "c1", [sample(**{column: value})])


# -- hostile cluster names -----------------------------------------------------------------

HOSTILE = [
    "../../etc",
    "..",
    ".",
    "a/b",
    "a%2Fb",
    "/abs/path",
    "x/../../y",
    "cluster=z/date=2020-01-01",
    "back\\slash",
    "new\nline\x00nul",
    "with space & ?#*:",
    "naïve-集群",
    "42",
    "_hidden",
]


def test_hostile_cluster_names_stay_inside_the_base_and_read_back(tmp_path: Path) -> None:
    log = SampleLog(tmp_path / "deep" / "samples")
    for name in HOSTILE:
        log.write_batch(name, name, cycle(H10_MS, cluster=name))

    base = Path(log.base)
    everything = list(tmp_path.rglob("*"))
    assert all(p == base or base in p.parents or p in base.parents for p in everything)
    cluster_dirs = sorted(p.name for p in base.iterdir())
    assert len(cluster_dirs) == len(HOSTILE)  # one directory each: no two names collide
    assert all(d.startswith("cluster=") and "/" not in d for d in cluster_dirs)
    assert sorted({h.cluster for h in log.hours()}) == sorted(HOSTILE)
    for name in HOSTILE:
        back = log.read(name)
        assert back.num_rows == 3, name
        assert set(back["cluster"].to_pylist()) == {name}


@pytest.mark.parametrize("name", ["", "x" * 300, "bad\ud800surrogate"])
def test_unusable_cluster_names_are_refused(log: SampleLog, name: str) -> None:
    with pytest.raises(ValueError, match="cluster name"):
        log.write_batch(name, "c1", cycle(H10_MS, cluster=name))


# -- compaction ----------------------------------------------------------------------------


def fill_hour(log: SampleLog, cycles: int = 6, partitions: int = 4) -> None:
    for i in range(cycles):
        log.write_batch("prod", f"c{i}", cycle(H10_MS + i * 10_000, partitions, lag=i))


def test_compaction_merges_an_hour_into_one_sorted_file_and_loses_nothing(log: SampleLog) -> None:
    fill_hour(log)
    log.write_batch("prod", "late-duplicate", cycle(H10_MS, 4, lag=99))  # same keys as c0
    before = keyed(log.read())

    result = log.compact("prod", date(2024, 5, 1), 10)

    files = files_under(Path(log.base))
    assert [f.name for f in files] == [Path(result.path).name]
    assert (result.inputs, result.rows_in, result.rows_out) == (7, 28, 24)
    after = log.read()
    assert keyed(after) == before
    assert keyed(after)[(H10_MS, "prod", "kafka", "billing", "orders", 0)]["lag"] == 99
    on_disk = pq.read_table(result.path)
    assert on_disk.num_rows == 24
    assert on_disk.equals(on_disk.sort_by([(c, "ascending") for c in SORT_COLUMNS]))
    assert on_disk.schema.field("group").type == pa.string()  # plain for any reader


def test_compaction_twice_changes_nothing(log: SampleLog) -> None:
    fill_hour(log)
    first = log.compact("prod", date(2024, 5, 1), 10)
    stamp = os.stat(first.path).st_mtime_ns

    second = log.compact("prod", date(2024, 5, 1), 10)

    assert second.inputs == 0 and second.path == first.path
    assert os.stat(first.path).st_mtime_ns == stamp
    assert len(files_under(Path(log.base))) == 1
    assert log.compact("prod", date(2024, 5, 1), 11).path is None  # an empty hour


def test_compacted_files_use_the_encodings_that_make_a_sample_small(log: SampleLog) -> None:
    fill_hour(log)
    result = log.compact("prod", date(2024, 5, 1), 10)
    meta = pq.read_metadata(result.path)
    chunks = {meta.schema.column(i).name: meta.row_group(0).column(i) for i in range(len(COLUMNS))}

    assert "DELTA_BINARY_PACKED" in chunks["committed"].encodings
    assert "DELTA_BINARY_PACKED" in chunks["ts_ms"].encodings
    assert "RLE_DICTIONARY" in chunks["group"].encodings
    assert all(c.compression == "ZSTD" and c.statistics is not None for c in chunks.values())


def test_a_late_batch_in_a_compacted_hour_is_merged_by_the_next_compaction(
    log: SampleLog,
) -> None:
    fill_hour(log)
    log.compact("prod", date(2024, 5, 1), 10)
    log.write_batch("prod", "c2", cycle(H10_MS + 20_000, 4, lag=77))  # a retry, new values
    log.write_batch("prod", "c9", cycle(H10_MS + 90_000, 4))  # a new cycle

    assert log.read().num_rows == 28  # the retry does not double-count before compaction
    result = log.compact("prod", date(2024, 5, 1), 10)

    assert result.inputs == 3
    assert len(files_under(Path(log.base))) == 1
    back = log.read()
    assert back.num_rows == 28
    assert {r["lag"] for r in back.to_pylist() if r["ts_ms"] == H10_MS + 20_000} == {77}


def test_readers_tolerate_a_compaction_that_died_before_removing_its_inputs(
    log: SampleLog, tmp_path: Path
) -> None:
    fill_hour(log)
    hour_dir = Path(log.hours()[0].path)
    saved = tmp_path / "saved"
    shutil.copytree(hour_dir, saved)
    expected = keyed(log.read())
    log.compact("prod", date(2024, 5, 1), 10)
    for part in saved.iterdir():  # the parts are back, next to the compacted file
        shutil.copy2(part, hour_dir / part.name)

    assert keyed(log.read()) == expected
    assert log.read().num_rows == len(expected)
    result = log.compact("prod", date(2024, 5, 1), 10)
    assert result.inputs == 7 and result.rows_out == len(expected)
    assert keyed(log.read()) == expected


def test_a_batch_rewritten_during_compaction_is_kept_and_wins(
    log: SampleLog, monkeypatch: pytest.MonkeyPatch
) -> None:
    fill_hour(log)
    merge = store.merge

    def retry_meanwhile(loaded: Any) -> pa.Table:  # the inputs are read; a retry lands now
        log.write_batch("prod", "c3", cycle(H10_MS + 30_000, 4, lag=333, owner="retried"))
        return merge(loaded)

    monkeypatch.setattr(store, "merge", retry_meanwhile)
    result = log.compact("prod", date(2024, 5, 1), 10)
    monkeypatch.undo()

    assert len(result.kept) == 1
    assert Path(result.kept[0]).exists()
    lags = {r["lag"] for r in log.read().to_pylist() if r["ts_ms"] == H10_MS + 30_000}
    assert lags == {333}
    log.compact("prod", date(2024, 5, 1), 10)
    assert len(files_under(Path(log.base))) == 1
    lags = {r["lag"] for r in log.read().to_pylist() if r["ts_ms"] == H10_MS + 30_000}
    assert lags == {333}


def test_compact_closed_hours_leaves_the_open_hour_and_the_grace_period(log: SampleLog) -> None:
    for hour in (8, 9, 10):
        for cluster in ("prod", "test"):
            ts = H10_MS + (hour - 10) * 60 * MINUTE
            log.write_batch(cluster, f"{cluster}-{hour}-a", cycle(ts, cluster=cluster))
            log.write_batch(cluster, f"{cluster}-{hour}-b", cycle(ts + 10_000, cluster=cluster))

    results = log.compact_closed_hours(H10 + timedelta(minutes=2))  # 09:xx still in grace

    assert sorted((r.partition.cluster, r.partition.hour) for r in results) == [
        ("prod", 8),
        ("test", 8),
    ]
    assert log.compact_closed_hours(H10 + timedelta(minutes=2)) == []  # idempotent
    later = log.compact_closed_hours(H10 + timedelta(minutes=10))
    assert sorted((r.partition.cluster, r.partition.hour) for r in later) == [
        ("prod", 9),
        ("test", 9),
    ]
    for partition in log.hours():
        names = [p.name for p in Path(partition.path).iterdir()]
        if partition.hour == 10:
            assert len(names) == 2 and all(n.startswith("batch-") for n in names)
        else:
            assert len(names) == 1 and names[0].startswith("compacted-")
    assert log.read().num_rows == 2 * 3 * 2 * 3


def names_in(partition: Any) -> list[str]:
    return sorted(p.name for p in Path(partition.path).iterdir())


def test_the_open_hour_is_compacted_in_chunks_of_its_new_batches(log: SampleLog) -> None:
    for i in range(5):  # 10:00-10:04, the hour still open at 10:05
        log.write_batch("prod", f"a{i}", cycle(H10_MS + i * MINUTE))
    log.write_batch("prod", "old", cycle(H10_MS - 30 * MINUTE))  # 09:30: closed, not ours
    before = keyed(log.read())
    now = H10 + timedelta(minutes=5)

    first = log.compact_open_hours(now)

    assert [(r.partition.hour, r.inputs, r.rows_out) for r in first] == [(10, 5, 15)]
    assert [n[:10] for n in names_in(first[0].partition)] == ["compacted-"]
    assert [n[:6] for n in names_in(log.hours(end=H10_MS)[0])] == ["batch-"]  # 09:xx untouched
    for i in range(5, 8):
        log.write_batch("prod", f"a{i}", cycle(H10_MS + i * MINUTE))
    second = log.compact_open_hours(now + timedelta(minutes=3))

    # Only the new batches were read: the first chunk stays as it was, beside the second.
    assert [(r.inputs, r.rows_out) for r in second] == [(3, 9)]
    assert Path(first[0].path).exists()
    assert [n[:10] for n in names_in(second[0].partition)] == ["compacted-"] * 2
    assert log.compact_open_hours(now + timedelta(minutes=3)) == []  # nothing new
    log.write_batch("prod", "a8", cycle(H10_MS + 8 * MINUTE))
    assert log.compact_open_hours(now + timedelta(minutes=4)) == []  # one batch: left as is
    assert keyed(log.read()) == before | keyed(log.read(start=H10_MS + 5 * MINUTE))
    assert log.read().num_rows == 3 * 10


def test_an_open_hour_past_its_chunk_limit_becomes_one_file(log: SampleLog) -> None:
    for chunk in range(3):
        for i in range(2):
            log.write_batch("prod", f"c{chunk}-{i}", cycle(H10_MS + (2 * chunk + i) * MINUTE))
        log.compact_open_hours(H10 + timedelta(minutes=10), max_chunks=3)
    hour = log.hours()[0]
    assert [n[:10] for n in names_in(hour)] == ["compacted-"] * 3
    expected = keyed(log.read())
    log.write_batch("prod", "d0", cycle(H10_MS + 7 * MINUTE))
    log.write_batch("prod", "d1", cycle(H10_MS + 8 * MINUTE))

    (result,) = log.compact_open_hours(H10 + timedelta(minutes=10), max_chunks=3)

    assert (result.inputs, result.rows_out) == (5, 24)
    assert [n[:10] for n in names_in(hour)] == ["compacted-"]
    assert keyed(log.read()) == expected | keyed(log.read(start=H10_MS + 7 * MINUTE))


def test_a_cycle_retried_after_its_batch_was_chunked_wins_and_the_close_merges_all(
    log: SampleLog,
) -> None:
    for i in range(3):
        log.write_batch("prod", f"c{i}", cycle(H10_MS + i * MINUTE))
    log.compact_open_hours(H10 + timedelta(minutes=3))
    log.write_batch("prod", "c1", cycle(H10_MS + MINUTE, lag=111))  # a late retry of c1
    log.write_batch("prod", "c3", cycle(H10_MS + 3 * MINUTE))
    log.compact_open_hours(H10 + timedelta(minutes=4))  # the retry is in the second chunk

    def lags_at_c1() -> set[int]:
        return {r["lag"] for r in log.read().to_pylist() if r["ts_ms"] == H10_MS + MINUTE}

    assert lags_at_c1() == {111} and log.read().num_rows == 12
    (closed,) = log.compact_closed_hours(H10 + timedelta(hours=1, minutes=6))
    assert (closed.inputs, closed.rows_in, closed.rows_out) == (2, 15, 12)
    assert len(files_under(Path(log.base))) == 1
    assert lags_at_c1() == {111}


# -- retention -----------------------------------------------------------------------------


def test_retention_removes_whole_old_hours_and_nothing_newer(log: SampleLog) -> None:
    day_before = H10_MS - 24 * 60 * MINUTE
    for i, ts in enumerate([day_before, H10_MS - 60 * MINUTE, H10_MS, H10_MS + 60 * MINUTE]):
        log.write_batch("prod", f"c{i}", cycle(ts + 5 * MINUTE))
        log.write_batch("other", f"c{i}", cycle(ts + 5 * MINUTE, cluster="other"))
    log.compact("prod", date(2024, 5, 1), 9)

    removed = log.apply_retention(H10 + timedelta(minutes=30))  # 10:00-11:00 not yet ended

    assert sorted((p.cluster, p.day.isoformat(), p.hour) for p in removed) == [
        ("other", "2024-04-30", 10),
        ("other", "2024-05-01", 9),
        ("prod", "2024-04-30", 10),
        ("prod", "2024-05-01", 9),
    ]
    assert not (Path(log.base) / "cluster=prod" / "date=2024-04-30").exists()
    assert [h.hour for h in log.hours("prod")] == [10, 11]
    assert sorted(set(log.read()["ts_ms"].to_pylist())) == [
        H10_MS + 5 * MINUTE,
        H10_MS + 65 * MINUTE,
    ]
    assert log.apply_retention(H10 + timedelta(minutes=30)) == []


# -- filesystems ---------------------------------------------------------------------------


class _NoReplaceHandler(pafs.FileSystemHandler):
    """A local filesystem that behaves like HDFS or an object store where that matters.

    ``move`` refuses to replace an existing file (HDFS); ``type_name`` can claim ``s3``.
    """

    def __init__(self, type_name: str) -> None:
        self.local = pafs.LocalFileSystem()
        self.type_name = type_name
        self.moves = 0

    def get_type_name(self) -> str:
        return self.type_name

    def equals(self, other: object) -> bool:
        return self is other

    def normalize_path(self, path: str) -> str:
        return self.local.normalize_path(path)

    def get_file_info(self, paths: list[str]) -> list[pafs.FileInfo]:
        return self.local.get_file_info(paths)

    def get_file_info_selector(self, selector: pafs.FileSelector) -> list[pafs.FileInfo]:
        return self.local.get_file_info(selector)

    def create_dir(self, path: str, recursive: bool) -> None:
        self.local.create_dir(path, recursive=recursive)

    def delete_dir(self, path: str) -> None:
        self.local.delete_dir(path)

    def delete_dir_contents(self, path: str, missing_dir_ok: bool = False) -> None:
        self.local.delete_dir_contents(path, missing_dir_ok=missing_dir_ok)

    def delete_root_dir_contents(self) -> None:
        raise OSError("not here")

    def delete_file(self, path: str) -> None:
        self.local.delete_file(path)

    def move(self, src: str, dest: str) -> None:
        self.moves += 1
        if self.local.get_file_info(dest).type != pafs.FileType.NotFound:
            raise OSError(f"{dest} exists")
        self.local.move(src, dest)

    def copy_file(self, src: str, dest: str) -> None:
        self.local.copy_file(src, dest)

    def open_input_stream(self, path: str) -> Any:
        return self.local.open_input_stream(path)

    def open_input_file(self, path: str) -> Any:
        return self.local.open_input_file(path)

    def open_output_stream(self, path: str, metadata: Any) -> Any:
        return self.local.open_output_stream(path, metadata=metadata)

    def open_append_stream(self, path: str, metadata: Any) -> Any:
        return self.local.open_append_stream(path, metadata=metadata)


@pytest.mark.parametrize(("type_name", "renames"), [("hdfs", True), ("s3", False)])
def test_a_filesystem_object_can_be_passed_in(
    tmp_path: Path, type_name: str, renames: bool
) -> None:
    handler = _NoReplaceHandler(type_name)
    log = SampleLog((tmp_path / "bucket").as_posix(), pafs.PyFileSystem(handler))

    log.write_batch("prod", "c1", cycle(H10_MS, lag=1))
    log.write_batch("prod", "c1", cycle(H10_MS, lag=2))  # the retry replaces

    assert (handler.moves > 0) is renames  # object stores: written in place, no rename
    assert set(log.read()["lag"].to_pylist()) == {2}
    assert len(files_under(tmp_path)) == 1
    log.compact("prod", date(2024, 5, 1), 10)
    assert log.read().num_rows == 3


def test_a_subtree_filesystem_and_from_url(tmp_path: Path) -> None:
    subtree = pafs.SubTreeFileSystem(tmp_path.as_posix(), pafs.LocalFileSystem())
    SampleLog("samples", subtree).write_batch("prod", "c1", cycle(H10_MS))

    assert (tmp_path / "samples" / "cluster=prod").is_dir()
    for url in [(tmp_path / "samples").as_posix(), (tmp_path / "samples").as_uri()]:
        assert SampleLog.from_url(url).read().num_rows == 3


# -- schema evolution: files written before the spout columns existed -----------------------

# The columns of the log before ``emitted`` .. ``max_offset_behind`` were added.
OLD_COLUMNS = COLUMNS[: COLUMNS.index("stale") + 1]
NEW_SPOUT_COLUMNS = COLUMNS[len(OLD_COLUMNS) : COLUMNS.index("share")]
# Added after them: a share group's partition, and its lag an upper bound; then what
# ``__share_group_state`` says of a share-partition.
SHARE_COLUMNS = COLUMNS[COLUMNS.index("share") : COLUMNS.index("lag_upper_bound") + 1]
STATE_COLUMNS = COLUMNS[COLUMNS.index("lag_upper_bound") + 1 :]


def write_old_batch(log: SampleLog, name: str, rows: list[dict[str, Any]]) -> Path:
    """A micro-batch as the log wrote it before the spout columns: their schema, no others."""
    old_schema = pa.schema([SAMPLE_SCHEMA.field(c) for c in OLD_COLUMNS])
    table = pa.Table.from_pylist([{c: r[c] for c in OLD_COLUMNS} for r in rows], old_schema)
    at = datetime.fromtimestamp(rows[0]["ts_ms"] / 1000, UTC)
    hour_dir = Path(log.base) / "cluster=prod" / f"date={at.date()}" / f"hour={at.hour:02d}"
    hour_dir.mkdir(parents=True, exist_ok=True)
    path = hour_dir / f"batch-{name}.parquet"
    pq.write_table(table, path, **store.parquet_options(3))
    return path


def test_the_new_spout_columns_are_nullable_int64_after_the_old_ones() -> None:
    assert NEW_SPOUT_COLUMNS == (
        "emitted", "max_spout_pending", "spout_pending", "smallest_failed_offset",
        "max_offset_behind",
    )  # fmt: skip
    for name in NEW_SPOUT_COLUMNS:
        assert SAMPLE_SCHEMA.field(name).type == pa.int64()
        assert SAMPLE_SCHEMA.field(name).nullable


def test_the_share_columns_are_nullable_booleans_then_the_state_topic_integers() -> None:
    assert SHARE_COLUMNS == ("share", "lag_upper_bound")
    for name in SHARE_COLUMNS:
        assert SAMPLE_SCHEMA.field(name).type == pa.bool_()
        assert SAMPLE_SCHEMA.field(name).nullable
    assert STATE_COLUMNS == SHARE_STATE_COLUMNS
    for name in STATE_COLUMNS:
        assert SAMPLE_SCHEMA.field(name).type == pa.int64()
        assert SAMPLE_SCHEMA.field(name).nullable


def test_a_file_of_the_old_schema_reads_with_the_new_columns_null(log: SampleLog) -> None:
    path = write_old_batch(log, "old", cycle(H10_MS))
    assert set(pq.read_schema(path).names) == set(OLD_COLUMNS)

    back = log.read()

    assert back.schema == SAMPLE_SCHEMA and back.num_rows == 3
    for name in (*NEW_SPOUT_COLUMNS, *SHARE_COLUMNS, *STATE_COLUMNS):
        assert back[name].null_count == 3, name
    assert back["committed"].to_pylist() == [100, 101, 102]


def test_old_and_new_files_compact_and_dedup_together(log: SampleLog) -> None:
    write_old_batch(log, "old", cycle(H10_MS))
    # The same cycle written again by the new code (a retry): the later write wins the key.
    log.write_batch("prod", "new", cycle(H10_MS, max_spout_pending=50, spout_pending=50))
    log.write_batch("prod", "next", cycle(H10_MS + MINUTE, emitted=7))

    result = log.compact("prod", date(2024, 5, 1), 10)
    back = log.read()

    assert result.path is not None and back.num_rows == 6
    assert set(pq.read_schema(result.path).names) == set(COLUMNS)
    rows = keyed(back)
    first = rows[(H10_MS, "prod", "kafka", "billing", "orders", 0)]
    assert first["max_spout_pending"] == 50 and first["spout_pending"] == 50
    later = rows[(H10_MS + MINUTE, "prod", "kafka", "billing", "orders", 2)]
    assert later["emitted"] == 7 and later["smallest_failed_offset"] is None


def test_spark_reads_an_old_file_beside_a_new_one(log: SampleLog, spark: Any) -> None:
    from spark_jobs.sample_reader import read_samples

    write_old_batch(log, "old", cycle(H10_MS))
    log.write_batch("prod", "new", cycle(H10_MS + MINUTE, max_spout_pending=9))

    rows = read_samples(spark, str(log.base), H10_MS, H10_MS + 2 * MINUTE).collect()

    by_ts = sorted((r["ts_ms"], r["partition"], r["max_spout_pending"]) for r in rows)
    assert by_ts == [(H10_MS, p, None) for p in range(3)] + [
        (H10_MS + MINUTE, p, 9) for p in range(3)
    ]


# -- Spark (the session is the suite's one, from tests/conftest.py) -----------------------


def test_spark_discovers_the_partitions_and_reads_every_sample(log: SampleLog, spark: Any) -> None:
    from pyspark.sql import types as T

    fill_hour(log)  # prod, 10:00, to be compacted (DELTA, dictionary, zstd level 9)
    log.compact("prod", date(2024, 5, 1), 10)
    log.write_batch("prod", "next-hour", cycle(H10_MS + 60 * MINUTE, earliest=None))
    hostile = "a/b ../42"
    log.write_batch(hostile, "x", cycle(H10_MS, 2, cluster=hostile, alive=None))
    log.write_batch("42", "y", cycle(H10_MS, 1, cluster="42"))  # still a string to Spark
    hour_dir = Path(log.hours("prod")[-1].path)
    (hour_dir / ".batch-x.parquet.0123.tmp").write_bytes(b"half a file")  # a dead writer's

    frame = spark.read.parquet(Path(log.base).as_uri())

    spark_types = {
        pa.int64(): T.LongType(),
        pa.int32(): T.IntegerType(),
        pa.string(): T.StringType(),
        pa.float64(): T.DoubleType(),
        pa.bool_(): T.BooleanType(),
    }
    fields = {f.name: f.dataType for f in frame.schema.fields}
    assert set(fields) == set(COLUMNS) | {"date", "hour"}
    for field in SAMPLE_SCHEMA:
        assert fields[field.name] == spark_types[field.type], field.name
    assert fields["date"] == T.DateType() and fields["hour"] == T.IntegerType()
    assert frame.count() == 24 + 3 + 2 + 1 == log.read().num_rows
    counts = {
        (r["cluster"], r["date"].isoformat(), r["hour"]): r["count"]
        for r in frame.groupBy("cluster", "date", "hour").count().collect()
    }
    assert counts == {
        ("prod", "2024-05-01", 10): 24,
        ("prod", "2024-05-01", 11): 3,
        (hostile, "2024-05-01", 10): 2,
        ("42", "2024-05-01", 10): 1,
    }
    nulls = frame.where("hour = 11").select("earliest").collect()
    assert [r["earliest"] for r in nulls] == [None] * 3
    pruned = frame.where(f"cluster = '{hostile}'").select("alive", "committed").collect()
    assert sorted((r["alive"], r["committed"]) for r in pruned) == [(None, 100), (None, 101)]
