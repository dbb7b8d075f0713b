"""A cluster rebuilt under the same name: the status job reads none of its samples polled
before its history started over (``EvaluatorConfig.history_from_ms``), in the whole window,
its recent slice and the incremental state alike. Plain Python (Arrow tables, no session)."""

from __future__ import annotations

import json
from typing import Any

import pyarrow as pa

from spark_jobs.evaluator import EvaluatorConfig
from spark_jobs.evaluator.decide import since_history
from spark_jobs.state import PARTITION_STATE_SCHEMA, explode_state, fingerprint, judge_group
from spark_jobs.status import Older, evaluate_group_samples, since_history_start
from spark_jobs.windows import window_from_samples
from tests.spark_jobs.samples import SEC, T0, columns, sample
from tests.spark_jobs.test_status_state import table

POLL = 10 * SEC
# The first poll that saw the new cluster id, after a minute of outage.
REBUILT_AT = T0 + 30 * POLL
PLAIN = EvaluatorConfig(window=5)
RESTARTED = EvaluatorConfig(window=5, history_from_ms=REBUILT_AT)


def history() -> list[dict[str, Any]]:
    """A consumer at offset ~5,000 with its commit times, a minute of outage (stale samples
    with the last known figures), then the rebuilt cluster: the log and the commits start
    again near zero; its first commit happened before the first poll that saw it."""
    rows = [
        sample(T0 + i * POLL, 5000 + 10 * i, latest=5005 + 10 * i, earliest=0,
               commit_time_ms=T0 + i * POLL - SEC)
        for i in range(24)
    ]  # fmt: skip
    last = rows[-1]
    rows += [
        sample(T0 + i * POLL, last["committed"], stale=True, lag=5,
               commit_time_ms=last["commit_time_ms"])
        for i in range(24, 30)
    ]  # fmt: skip
    rows += [
        sample(T0 + i * POLL, 10 * (i - 29), latest=10 * (i - 29) + 5, earliest=0,
               commit_time_ms=T0 + i * POLL - 3 * SEC)
        for i in range(30, 34)
    ]  # fmt: skip
    return rows


def codes(rows: dict[str, list[Any]]) -> set[str]:
    return {d["code"] for text in rows["diagnosis"] for d in json.loads(text)}


def test_read_as_one_history_the_rebuild_is_a_rewind() -> None:
    now = T0 + 34 * POLL
    rows = evaluate_group_samples(columns(history()), PLAIN, now)
    assert rows is not None and rows["status"] == ["REWIND"]


def test_samples_before_the_start_are_not_read() -> None:
    now = T0 + 34 * POLL
    for per_cluster in ({"c1": RESTARTED}, None):
        config = RESTARTED if per_cluster is None else PLAIN
        rows = evaluate_group_samples(columns(history()), config, now, per_cluster)
        assert rows is not None
        assert rows["status"] == ["OK"], rows["reason"]
        assert not codes(rows) & {"SKIPPED_DATA", "OUT_OF_RANGE", "TOPOLOGY_RESTARTED"}


def test_another_clusters_start_cuts_nothing_here() -> None:
    now = T0 + 34 * POLL
    rows = evaluate_group_samples(columns(history()), PLAIN, now, {"c2": RESTARTED})
    assert rows is not None and rows["status"] == ["REWIND"]


def test_a_group_with_nothing_since_the_start_has_no_rows() -> None:
    old = [r for r in history() if r["ts_ms"] < REBUILT_AT]  # the old cluster's polls only
    assert since_history_start(columns(old), REBUILT_AT) is None
    rows = evaluate_group_samples(columns(old), RESTARTED, T0 + 34 * POLL)
    assert rows is not None and rows["status"] == []
    # From a slice, it goes back to its whole window (which has nothing either).
    older = {("t", 0): Older(3, T0)}
    assert evaluate_group_samples(columns(old[-3:]), RESTARTED, T0 + 34 * POLL, older=older) is None


def test_a_slice_cut_by_the_start_forgets_its_older_samples() -> None:
    rows = history()
    recent = [r for r in rows if r["ts_ms"] >= REBUILT_AT - 5 * POLL]
    older = {("t", 0): Older(len(rows) - len(recent), T0 + 24 * POLL)}
    got = evaluate_group_samples(columns(recent), RESTARTED, T0 + 34 * POLL, older=older)
    whole = evaluate_group_samples(columns(rows), RESTARTED, T0 + 34 * POLL)
    assert got == whole and got is not None and got["status"] == ["OK"]


def test_commits_taken_before_the_start_are_left_out() -> None:
    """A commit polled after the start but taken before it (a spout's offset not corrected
    yet; here the new cluster's first, taken 3 s before its first poll) is no evidence."""
    rows = [r for r in history() if r["ts_ms"] >= REBUILT_AT]
    samples = {name: [r[name] for r in rows] for name in rows[0]}
    window = window_from_samples("c1/kafka/g/t/0", samples, RESTARTED)
    assert [c.offset for c in window.commits] == [10, 20, 30, 40]
    kept = since_history(window, REBUILT_AT)
    assert [c.offset for c in kept.commits] == [20, 30, 40]
    spout = [dict(r, committed=5230, commit_time_ms=T0 + 20 * POLL) for r in rows]
    samples = {name: [r[name] for r in spout] for name in spout[0]}
    window = window_from_samples("c1/storm/s/t/0", samples, RESTARTED)
    assert since_history(window, REBUILT_AT).commits == ()


def test_the_state_carries_on_across_the_start() -> None:
    """The start is not one of the thresholds a state is made under: the next run goes on
    from it, leaving out what it carried from before the start."""
    assert fingerprint(PLAIN, {"c1": PLAIN}) == fingerprint(PLAIN, {"c1": RESTARTED})
    rows = history()
    first_now = REBUILT_AT - POLL
    judged = judge_group(
        table([r for r in rows if r["ts_ms"] <= first_now]), {}, T0, first_now + 1, first_now,
        PLAIN, {"c1": PLAIN},
    )  # fmt: skip
    assert judged is not None
    carried, summaries = explode_state(judged.select(PARTITION_STATE_SCHEMA.names))
    now = T0 + 34 * POLL
    read = table([r for r in rows if r["ts_ms"] > first_now])
    both = pa.concat_tables([read, carried.select(read.column_names).cast(read.schema)])
    got = judge_group(both, summaries, T0, now + 1, now, PLAIN, {"c1": RESTARTED})
    assert got is not None
    assert got.column("status").to_pylist() == ["OK"]
    assert min(got.column("s_ts_ms")[0].as_py()) >= REBUILT_AT  # nothing old carried on


# The lab's broker rebuild as the status job reads it: a window of ten, half of it required.
LAB = EvaluatorConfig(window=10, minimum_complete=0.5)
LAB_RESTARTED = EvaluatorConfig(window=10, minimum_complete=0.5, history_from_ms=REBUILT_AT)


def first_polled_a_cycle_late(polls: int) -> list[dict[str, Any]]:
    """The old cluster and its outage (``history``'s first 30 polls), then nothing at the
    start's cycle: the consumer commits offset 0 on the new cluster just after it and is
    first polled a cycle later, owning the partition, and commits nothing more while the
    partition fills (the lab's consumers after a broker rebuild)."""
    rows = history()[:30]
    rows += [
        sample(REBUILT_AT + i * POLL, 0, latest=40 + 20 * i, earliest=0,
               commit_time_ms=REBUILT_AT + 3 * SEC, owner="m-1", alive=True)
        for i in range(1, polls + 1)
    ]  # fmt: skip
    return [{**r, "owner": r["owner"] or "m-1"} for r in rows]


def test_first_polled_a_cycle_after_the_start_a_window_is_judged_once_full() -> None:
    """Whole window and incremental runs alike: not judged (OK, not enough data) until a
    window of polls watched it, then its silence is a STALL."""
    first_now = REBUILT_AT - POLL
    rows = first_polled_a_cycle_late(12)
    judged = judge_group(
        table([r for r in rows if r["ts_ms"] <= first_now]), {}, T0, first_now + 1, first_now,
        LAB, {"c1": LAB},
    )  # fmt: skip
    assert judged is not None
    carried, summaries = explode_state(judged.select(PARTITION_STATE_SCHEMA.names))
    for polls, status in ((5, "OK"), (9, "OK"), (10, "STALL")):
        now = REBUILT_AT + polls * POLL + 2 * SEC
        seen = [r for r in rows if r["ts_ms"] <= now]
        whole = evaluate_group_samples(columns(seen), LAB_RESTARTED, now)
        assert whole is not None and whole["status"] == [status], (polls, whole["reason"])
        if status == "OK":
            assert "100% required since the cluster was rebuilt" in whole["reason"][0]
        read = table([r for r in seen if r["ts_ms"] > first_now])
        both = pa.concat_tables([read, carried.select(read.column_names).cast(read.schema)])
        got = judge_group(both, summaries, T0, now + 1, now, LAB, {"c1": LAB_RESTARTED})
        assert got is not None
        assert got.column("status").to_pylist() == [status]
        assert got.column("reason").to_pylist() == whole["reason"]
