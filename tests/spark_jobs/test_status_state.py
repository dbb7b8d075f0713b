"""The status job's incremental state: runs chained over a random history, each judging its
groups from the previous run's state and the log since its cut, give exactly the rows the whole
look-back gives at each run, or send the group back to its whole window. Plain Python here
(``judge_group``, ``explode_state`` on Arrow tables, as the Spark functions call them); the job
on Spark is compared in ``test_jobs.py``.
"""

from __future__ import annotations

import random
from typing import Any

import pyarrow as pa
import pytest

from collectors.sample_log import SAMPLE_SCHEMA
from spark_jobs.evaluator import EvaluatorConfig
from spark_jobs.state import (
    PARTITION_STATE_SCHEMA,
    Summary,
    carry,
    explode_state,
    fingerprint,
    judge_group,
    plan,
)
from spark_jobs.status import _INPUT_COLUMNS, PARTITION_VERDICT_SCHEMA, evaluate_group_samples
from tests.spark_jobs.samples import SEC, T0, columns, sample
from tests.spark_jobs.test_status_slice import CONFIG, POLL, SPACED, random_group

INPUT_SCHEMA = pa.schema([SAMPLE_SCHEMA.field(name) for name in _INPUT_COLUMNS])
VERDICT_NAMES = [*PARTITION_VERDICT_SCHEMA.names, "group_status", "group_complete",
                 "group_total_lag", "group_partitions", "group_head"]  # fmt: skip


def table(rows: list[dict[str, Any]]) -> pa.Table:
    return pa.Table.from_pylist([{n: r[n] for n in _INPUT_COLUMNS} for r in rows], INPUT_SCHEMA)


def whole_rows(rows: list[dict[str, Any]], start: int, now: int, config: EvaluatorConfig) -> Any:
    """What the whole look-back gives: the job's read, ``start <= ts_ms <= now``."""
    seen = sorted(
        (r for r in rows if start <= r["ts_ms"] <= now),
        key=lambda r: (r["topic"], r["partition"], r["ts_ms"]),
    )
    return evaluate_group_samples(columns(seen), config, now) if seen else None


def verdicts(judged: pa.Table) -> dict[str, list[Any]]:
    return {name: judged.column(name).to_pylist() for name in VERDICT_NAMES}


def _chain(seed: int) -> tuple[int, int, int]:
    """Runs at random times over one random group whose cycles land in the log a little after
    their poll time (up to the settle time): (runs judged from state, sent back, compared)."""
    rng = random.Random(seed)
    rows = random_group(rng)
    if not rows:
        return 0, 0, 0
    config = rng.choice([CONFIG, CONFIG, SPACED])
    settle = rng.choice([0, POLL, 3 * POLL])
    arrival = {ts: ts + rng.randint(0, settle) for ts in {r["ts_ms"] for r in rows}}
    look_back = rng.choice([15, 40, 200]) * POLL  # 200 polls: longer than the history
    first = min(r["ts_ms"] for r in rows)
    last = max(r["ts_ms"] for r in rows)
    now = first + rng.randint(0, 10) * POLL
    state: pa.Table | None = None
    cut_before = None
    judged_runs = sent_back = compared = 0
    while now <= last + 15 * POLL:
        start, cut = now - look_back, now + 1 - settle
        landed = [r for r in rows if arrival[r["ts_ms"]] <= now and r["ts_ms"] <= now]
        expected = whole_rows(landed, start, now, config)
        got = None
        if state is not None and cut_before is not None and cut_before >= start:
            carried, summaries = explode_state(state)
            read = table([r for r in landed if r["ts_ms"] >= cut_before])
            both = pa.concat_tables([read, carried.select(read.column_names).cast(read.schema)])
            got = judge_group(both, summaries, start, cut, now, config)
            if got is None:
                sent_back += 1
            else:
                judged_runs += 1
        if got is None:
            got = judge_group(table([r for r in landed if r["ts_ms"] >= start]), {}, start, cut,
                              now, config)  # fmt: skip
        assert got is not None
        if expected is None:
            assert got.num_rows == 0, (seed, now)
        else:
            assert verdicts(got) == {n: expected[n] for n in VERDICT_NAMES}, (seed, now)
            compared += 1
        state = got.select(PARTITION_STATE_SCHEMA.names)
        cut_before = cut
        now += rng.choice([1, 1, 2, 3, 5, 7]) * POLL + rng.choice([0, 0, 1, 1500])
    return judged_runs, sent_back, compared


@pytest.mark.parametrize("block", range(4))
def test_chained_runs_from_state_give_the_whole_windows_rows(block: int) -> None:
    judged = sent_back = compared = 0
    for seed in range(block * 40, (block + 1) * 40):
        j, s, c = _chain(seed)
        judged, sent_back, compared = judged + j, sent_back + s, compared + c
    # Judging from state is the rule: a group is sent back only where the chosen samples
    # could not be enough (below, what the checks catch when they are not).
    assert judged > 20 * sent_back and compared > 400, (judged, sent_back, compared)


def _carry_at_random(rng: random.Random) -> Any:
    """``carry`` choosing at random how many samples to leave to the summary: the rows must
    stay exact whatever is carried, the checks sending a group back where it is not enough."""

    def at_random(samples: Any, window: Any, older: Any, cut_ms: int, *_: Any) -> Any:
        ts = samples["ts_ms"]
        j = sum(1 for t in ts if t < cut_ms)
        k = rng.randint(0, j) if rng.random() < 0.7 else 0
        if k == 0:
            return 0, j, older
        latest = max(c if c is not None else t for c, t in
                     zip(samples["commit_time_ms"][:k], ts[:k], strict=True))  # fmt: skip
        if older is not None:
            latest = max(latest, older.max_time_ms)
        return k, j, Summary(k + (older.rows if older else 0), latest, ts[k - 1])

    return at_random


@pytest.mark.parametrize("block", range(4))
def test_whatever_is_carried_the_rows_are_the_whole_windows(
    block: int, monkeypatch: pytest.MonkeyPatch
) -> None:
    monkeypatch.setattr("spark_jobs.state.carry", _carry_at_random(random.Random(block)))
    judged = sent_back = 0
    for seed in range(1000 + block * 50, 1000 + (block + 1) * 50):
        j, s, _ = _chain(seed)
        judged, sent_back = judged + j, sent_back + s
    assert judged > 150 and sent_back > 150, (judged, sent_back)


def _held_offset_history() -> list[dict[str, Any]]:
    """The same offset committed again and again (its version moving), stale polls early in
    that run and near its end: the outage grace counts the run's stale polls from its start
    (test_status_slice.py's case)."""
    rows = [sample(T0 + i * POLL, 0, latest=10 * i + 2, owner="m-1") for i in range(30)]
    for i, r in enumerate(rows):
        held = 90 if i < 4 else 100
        r.update(committed=held, lag=r["latest"] - held, commit_version=i, source="zookeeper")
        if i in (5, 6, 27):
            r.update(stale=True, latest=None, lag=None, owner=None, commit_version=i - 1)
    return rows


def test_a_held_offset_reaching_before_the_carried_samples_sends_the_group_back(
    monkeypatch: pytest.MonkeyPatch,
) -> None:
    """Carrying the held run's end only (``carry`` made to leave 15 samples to the summary),
    the next run cannot tell the outage's start: the group goes back to its whole window.
    The product's ``carry`` keeps the run whole, and the group is judged from its state."""
    rows = _held_offset_history()
    start, cut, now = T0 - 600 * SEC, rows[20]["ts_ms"], rows[-1]["ts_ms"] + SEC
    expected = whole_rows(rows, start, now, CONFIG)

    def again(state: pa.Table) -> pa.Table | None:
        carried, summaries = explode_state(state)
        read = table([r for r in rows if r["ts_ms"] >= cut])
        both = pa.concat_tables([read, carried.select(read.column_names).cast(read.schema)])
        return judge_group(both, summaries, start, cut, now, CONFIG)

    before = table([r for r in rows if r["ts_ms"] < cut])
    ours = judge_group(before, {}, start, cut, rows[19]["ts_ms"] + SEC, CONFIG)
    assert ours is not None
    got = again(ours.select(PARTITION_STATE_SCHEMA.names))
    assert got is not None and verdicts(got) == {n: expected[n] for n in VERDICT_NAMES}

    def leave_15(samples: Any, window: Any, older: Any, cut_ms: int, *_: Any) -> Any:
        ts = samples["ts_ms"]
        return 15, sum(t < cut_ms for t in ts), Summary(15, max(ts[:15]), ts[14])

    monkeypatch.setattr("spark_jobs.state.carry", leave_15)
    short = judge_group(before, {}, start, cut, rows[19]["ts_ms"] + SEC, CONFIG)
    assert short is not None
    assert again(short.select(PARTITION_STATE_SCHEMA.names)) is None


# What a partition carries --------------------------------------------------------------------


def _steady(n: int, **fields: Any) -> list[dict[str, Any]]:
    return [
        sample(T0 + i * POLL, 10 * i, latest=10 * i + 2, owner="m-1", **fields) for i in range(n)
    ]


def _carry(rows: list[dict[str, Any]], cut_row: int) -> tuple[int, int, Summary | None]:
    cols = columns(rows)
    seen: list[Any] = []
    now = rows[-1]["ts_ms"] + SEC
    evaluate_group_samples(cols, CONFIG, now, windows=seen)
    (samples, window), *_ = seen
    return carry(samples, window, None, rows[cut_row]["ts_ms"], CONFIG, None)


def test_a_partition_keeping_up_carries_its_window_and_the_poll_before() -> None:
    k, j, summary = _carry(_steady(30), 27)
    assert (k, j) == (24, 27)  # the window: polls 25 to 29; 27 on are read again
    assert summary == Summary(24, T0 + 23 * POLL, T0 + 23 * POLL)


def test_a_stuck_partition_carries_every_sample() -> None:
    rows = [sample(T0 + i * POLL, 100, latest=200 + i, owner="m-1") for i in range(30)]
    assert _carry(rows, 27) == (0, 27, None)


def test_a_skewed_commit_time_before_the_window_is_carried_along() -> None:
    """An older commit time later than the window's first one would raise it (the clamp): the
    summary cannot say which, so everything is carried."""
    rows = _steady(30)
    for r in rows:
        r["commit_time_ms"] = r["ts_ms"]
    rows[10]["commit_time_ms"] = T0 + 29 * POLL
    assert _carry(rows, 27) == (0, 27, None)


# Whether a run goes on from the previous one ------------------------------------------------

PRINTS = "abc"


def _previous(now: int, **state: Any) -> dict[str, Any]:
    note = {"cut_ms": now + 1 - 60_000, "window_ms": 3_600_000, "settle_ms": 60_000,
            "fingerprint": PRINTS, **state}  # fmt: skip
    return {"job": "status", "now_ms": now, "state": note}


@pytest.mark.parametrize(
    ("previous", "now", "reason"),
    [
        (None, T0, "no previous run"),
        ({"job": "status", "now_ms": T0 - 10_000}, T0, "the previous run carried no state"),
        (_previous(T0 - 10_000, window_ms=60_000), T0, "another look-back or settle time"),
        (_previous(T0 - 10_000, settle_ms=0), T0, "another look-back or settle time"),
        (_previous(T0 - 10_000, fingerprint="other"), T0, "other evaluator thresholds"),
        (_previous(T0 - 3_600_000), T0, "the state is older than the look-back"),
        (_previous(T0), T0, "the previous run is not older than this one"),
        (_previous(T0 + 10_000), T0, "the previous run is not older than this one"),
        (_previous(T0 - 10_000), T0, None),
        (_previous(T0 - 3_500_000), T0, None),
    ],
)
def test_a_run_goes_on_from_state_only_when_it_was_made_for_it(
    previous: dict[str, Any] | None, now: int, reason: str | None
) -> None:
    how = plan(previous, "results/status/run=1", now, 3_600_000, 60_000, PRINTS)
    assert how.whole_reason == reason
    assert how.cut_ms == now + 1 - 60_000
    if reason is None:
        assert previous is not None
        assert how.state_url == "results/status/run=1/state"
        assert how.read_from_ms == previous["state"]["cut_ms"]
        assert how.summary()["mode"] == "incremental"
    else:
        assert (how.state_url, how.read_from_ms) == (None, now - 3_600_000)
        assert how.summary()["mode"] == "whole"


def test_the_thresholds_fingerprint_follows_every_cluster() -> None:
    base = fingerprint(CONFIG, {"c1": CONFIG})
    assert base == fingerprint(CONFIG, {"c1": EvaluatorConfig(window=5, rebalance_storm_count=2)})
    assert base != fingerprint(CONFIG, {"c1": SPACED})
    assert base != fingerprint(CONFIG, {"c1": CONFIG, "c2": CONFIG})
    assert base != fingerprint(SPACED, {"c1": CONFIG})
