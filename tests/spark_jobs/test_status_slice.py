"""The status job's slice-first read: a group judged from the window's recent slice (with what
its older samples amount to) gets exactly the rows its whole window gives, or is sent back to
be judged from the whole window. Plain Python here (``evaluate_group_samples`` with and
without ``older``) on random groups built to reach back past the slice every way the rules
do; the job on Spark is compared in ``test_jobs.py``.
"""

from __future__ import annotations

import random
from collections.abc import Callable
from typing import Any

import pytest

from spark_jobs.evaluator import EvaluatorConfig
from spark_jobs.status import Older, evaluate_group_samples
from tests.spark_jobs.samples import SEC, T0, columns, sample

CONFIG = EvaluatorConfig(window=5, rebalance_storm_count=2)
# Burrow's min-distance: a commit within 7 s of the one before replaces it in the window.
SPACED = EvaluatorConfig(window=5, rebalance_storm_count=2, min_distance_s=7)
POLL = 5 * SEC


def _commit_times(rng: random.Random) -> Callable[[int], int | None]:
    """How the source times a commit seen at poll ``ts``: not at all (the AdminClient), a
    moment before the poll (``__consumer_offsets``), or on a clock that jumps (a ZooKeeper
    server's mtime)."""
    kind = rng.choice(["none", "none", "before", "before", "skewed"])
    if kind == "none":
        return lambda ts: None
    if kind == "before":
        return lambda ts: ts - rng.randint(0, POLL)
    return lambda ts: ts + rng.choice([-40, -3, 0, 0, 2, 90]) * SEC


def _partition(rng: random.Random, source: str, p: int, polls: int) -> list[dict[str, Any]]:
    """One partition's polls: a consumer keeping up, slowing, stopping, re-committing one
    offset, committing past the log end; sources going stale for a while; owners moving or gone;
    spouts with their figures; a partition that starts late or vanishes."""
    first = 0 if rng.random() < 0.9 else rng.randint(0, polls - 1)
    last = polls if rng.random() < 0.9 else rng.randint(first + 1, polls)
    every = rng.choice([1, 1, 1, 1, 1, 2, 3, 7, 1000])  # polls between commits; 1000: stuck
    recommit = rng.random() < 0.2  # the same offset committed again, its time or version moved
    frozen = rng.random() < 0.1  # only ever the same offset again: Burrow's STALL
    stale_from = rng.choice([None, None, rng.randint(first, last), rng.randint(first, last)])
    stale_for = rng.randint(1, 12)
    # Commits seen on stale rows: not what the collectors write (an unreachable source's rows
    # keep their last figures), but exactness must not rest on it.
    stale_commits = rng.random() < 0.2
    lagless = rng.random() < 0.05  # no broker offsets at all
    # The brokers unreachable for a while: a ZooKeeper consumer's or spout's commits go on,
    # its lag is unknown.
    gap_from = rng.choice([None, None, rng.randint(first, last)])
    gap_for = rng.randint(1, 30)
    commit_time = _commit_times(rng)
    owners = rng.choice([["m-1"], ["m-1", "m-2"], ["m-1", None]])
    # Nobody holding the partition for a while (a restart's moment, or a consumer gone).
    gone_from = rng.choice([None, None, rng.randint(first, last)])
    gone_for = rng.choice([1, 1, 2, rng.randint(3, 40)])
    committed, latest, version = rng.randint(0, 500), 0, 0
    latest = committed + rng.randint(0, 30)
    committed_at = commit_time(T0 + first * POLL)
    rows = []
    for i in range(first, last):
        ts = T0 + i * POLL + rng.choice([0, 0, 0, rng.randint(-1000, 1000)])
        if i in range(first + 1, last) and rng.random() < 0.03:
            continue  # a poll that missed this partition
        stale = stale_from is not None and stale_from <= i < stale_from + stale_for
        no_lag = lagless or (gap_from is not None and gap_from <= i < gap_from + gap_for)
        gone = gone_from is not None and gone_from <= i < gone_from + gone_for
        latest += rng.choice([0, 1, 10])
        if (not stale or stale_commits) and (i - first) % every == 0:
            moved = 0 if frozen else rng.choice([0, 1, 5, 40])
            if moved or recommit or frozen:
                committed = min(committed + moved, latest + rng.choice([0, 0, 0, 3]))
                version += 1
                committed_at = commit_time(ts)
        row = sample(
            ts, committed, source=source, partition=p, stale=stale,
            owner=None if stale or gone else rng.choice(owners),
            alive=None if stale else not gone,
            earliest=None if stale else 0, latest=None if stale or no_lag else latest,
            lag=None if stale or no_lag else latest - committed,
            # Known on every sample once the source gives it, now and then not (a reader behind).
            commit_time_ms=committed_at if rng.random() < 0.95 else None,
            commit_version=version if source == "zookeeper" else None,
        )  # fmt: skip
        if source == "storm":
            row.update(
                topology_id=rng.choice(["top-1", "top-1", "top-2"]),
                pending=rng.randint(0, 50), failed=rng.choice([0, 0, 3]), acked=i,
                max_spout_pending=rng.choice([None, 0, 100]), spout_pending=rng.randint(0, 120),
                smallest_failed_offset=rng.choice([None, committed]),
            )  # fmt: skip
        rows.append(row)
    return rows


def random_group(rng: random.Random) -> list[dict[str, Any]]:
    source = rng.choice(["kafka", "kafka", "zookeeper", "storm"])
    polls = rng.randint(8, 90)
    rows = []
    for p in range(rng.randint(1, 5)):
        topic = "t2" if source == "storm" and p == 3 else "t"
        rows += [dict(r, topic=topic) for r in _partition(rng, source, p, polls)]
    return sorted(rows, key=lambda r: (r["topic"], r["partition"], r["ts_ms"]))


def split(rows: list[dict[str, Any]], cut: int) -> tuple[list[dict], dict[tuple, Older]]:
    """The slice (samples at or after ``cut``) and what the rest amounts to per partition, as
    the job's aggregate computes it."""
    recent = [r for r in rows if r["ts_ms"] >= cut]
    older: dict[tuple[str, int], Older] = {}
    for r in rows:
        if r["ts_ms"] < cut:
            key = (r["topic"], r["partition"])
            at = r["commit_time_ms"] if r["commit_time_ms"] is not None else r["ts_ms"]
            rows_before, latest = older.get(key, (0, at))
            older[key] = Older(rows_before + 1, max(latest, at))
    return recent, older


def _compare(seed: int) -> tuple[int, int]:
    """Judged from slices, and sent back, over the random cuts of one random group."""
    rng = random.Random(seed)
    rows = random_group(rng)
    if not rows:
        return 0, 0
    now = max(r["ts_ms"] for r in rows) + rng.choice([1, 3, 30, 300]) * SEC
    config = rng.choice([CONFIG, CONFIG, SPACED])
    whole = evaluate_group_samples(columns(rows), config, now)
    judged = sent_back = 0
    times = sorted({r["ts_ms"] for r in rows})
    early = times[: max(1, len(times) * 3 // 4)]  # a slice longer than a quarter of the window
    for cut in rng.sample(early, min(6, len(early))):
        recent, older = split(rows, cut)
        if not recent:
            continue
        sliced = evaluate_group_samples(columns(recent), config, now, older=older)
        if sliced is None:
            sent_back += 1
            continue
        judged += 1
        assert sliced == whole, (seed, cut)
    return judged, sent_back


@pytest.mark.parametrize("block", range(8))
def test_a_group_judged_from_its_slice_gets_the_whole_windows_rows(block: int) -> None:
    judged = sent_back = 0
    for seed in range(block * 150, (block + 1) * 150):
        j, s = _compare(seed)
        judged += j
        sent_back += s
    # Both ways are taken often: the comparison is not vacuous, and slicing does save work.
    assert judged > 150 and sent_back > 150, (judged, sent_back)


def test_without_older_samples_the_slice_is_the_whole_window() -> None:
    rows = [sample(T0 + i * POLL, 10 * i, latest=10 * i + 2, owner="m-1") for i in range(20)]
    now = rows[-1]["ts_ms"] + SEC
    assert evaluate_group_samples(columns(rows), CONFIG, now, older={}) == (
        evaluate_group_samples(columns(rows), CONFIG, now)
    )


# Each way the slice can fall short sends the group back ------------------------------------


def _steady(n: int, **fields: Any) -> list[dict[str, Any]]:
    return [
        sample(T0 + i * POLL, 10 * i, latest=10 * i + 2, owner="m-1", **fields) for i in range(n)
    ]


def _judged(rows: list[dict[str, Any]], cut_row: int, **older: Any) -> bool:
    cut = rows[cut_row]["ts_ms"]
    recent, found = split(rows, cut)
    found = {k: Older(**{**v._asdict(), **older}) for k, v in found.items()}
    now = rows[-1]["ts_ms"] + SEC
    return evaluate_group_samples(columns(recent), CONFIG, now, older=found) is not None


def test_a_window_longer_than_the_slice_is_sent_back() -> None:
    rows = _steady(30)
    assert _judged(rows, 20)  # 10 commits in the slice, 5 in the window
    assert not _judged(rows, 26)  # 4 polls: the window reaches the slice's first sample


def test_an_older_commit_time_above_the_slices_is_sent_back() -> None:
    rows = _steady(30)
    assert not _judged(rows, 20, max_time_ms=rows[-1]["ts_ms"] + 60 * SEC)


def test_a_stale_run_from_before_the_slice_is_sent_back() -> None:
    """Stale since before the slice, commits still seen (the rules must not rest on the
    collectors leaving a stale row's offset alone): the stale run starts before the cut."""
    rows = _steady(30)
    for r in rows[15:]:
        r.update(stale=True, owner=None, latest=rows[14]["latest"], lag=rows[14]["lag"])
    assert not _judged(rows, 20)
    assert _judged(rows, 10)  # the cut before the run: the slice sees where it starts


def test_a_lag_last_known_before_the_slice_is_sent_back() -> None:
    rows = _steady(30)
    for r in rows[15:]:
        r.update(latest=None, lag=None)  # the brokers unreachable, the commits go on
    assert not _judged(rows, 20)
    assert _judged(rows, 10)


def test_a_held_offset_from_before_the_slice_is_sent_back() -> None:
    """The same offset committed again and again (its version moving), stale polls before the
    cut and in the last commits' span: the outage grace looks back over every sample holding
    that offset, and would start the outage at the older run."""
    rows = _steady(30, commit_version=None)
    for i, r in enumerate(rows):
        held = 90 if i < 4 else 100
        r.update(committed=held, lag=r["latest"] - held, commit_version=i)
        if i in (5, 6, 27):
            r.update(stale=True, latest=None, lag=None, owner=None, commit_version=i - 1)
    assert not _judged(rows, 15)
    assert _judged(rows, 2)  # the slice sees the offset change hands


def test_a_partition_seen_only_before_the_slice_is_sent_back() -> None:
    rows = _steady(30) + [dict(r, partition=1) for r in _steady(10)]
    rows.sort(key=lambda r: (r["partition"], r["ts_ms"]))
    assert not _judged(rows, 20)
