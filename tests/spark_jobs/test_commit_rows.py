"""Which polls of a consumer group's partition see a new commit (``windows.commit_rows``):
the first poll, and each one whose committed offset, commit time or commit version moved from
the poll before; an unknown time or version on either side says nothing.

The table pins the cases; random columns (unknowns mixed in) check ``commit_rows`` against
the definition above, from every start, as the incremental state's checks call it.
"""

from __future__ import annotations

import random
from typing import Any

import pytest

from spark_jobs.windows import commit_rows

N = None


def _columns(offsets: list[int], times: list[Any], versions: list[Any]) -> dict[str, list[Any]]:
    return {"committed": offsets, "commit_time_ms": times, "commit_version": versions,
            "share": [None] * len(offsets), "alive": [None] * len(offsets)}  # fmt: skip


def _defined(cols: dict[str, list[Any]], start: int) -> list[int]:
    """The definition, one pair of polls at a time."""
    o, t, v = cols["committed"], cols["commit_time_ms"], cols["commit_version"]
    rows = [0] if start == 0 and o else []
    for i in range(max(start, 1), len(o)):
        moved_t = t[i - 1] is not None and t[i] is not None and t[i - 1] != t[i]
        moved_v = v[i - 1] is not None and v[i] is not None and v[i - 1] != v[i]
        if o[i] != o[i - 1] or moved_t or moved_v:
            rows.append(i)
    return rows


# (case, offsets, commit times, commit versions, the commit rows)
CASES = [
    ("no polls", [], [], [], []),
    ("one poll", [5], [N], [N], [0]),
    ("stuck, nothing else known", [5, 5, 5, 5], [N, N, N, N], [N, N, N, N], [0]),
    ("stuck, the same commit time", [5, 5, 5], [100, 100, 100], [N, N, N], [0]),
    ("re-committed at the same offset: the time moves", [5, 5, 5], [100, 200, 200], [N] * 3,
     [0, 1]),
    ("the version moves", [5, 5, 5], [N] * 3, [1, 1, 2], [0, 2]),
    ("the offset moves", [5, 6, 6, 9], [N] * 4, [N] * 4, [0, 1, 3]),
    ("a time becomes unknown, then known again: no commit either way", [5, 5, 5], [100, N, 100],
     [N] * 3, [0]),
    ("unknown then a different known time: no commit", [5, 5, 5], [N, 100, 200], [N] * 3,
     [0, 2]),
    ("every column moves at once: one commit", [5, 6], [100, 200], [1, 2], [0, 1]),
    ("offset back (a reset to earlier)", [9, 5, 5], [N] * 3, [N] * 3, [0, 1]),
]


@pytest.mark.parametrize(("name", "offsets", "times", "versions", "rows"), CASES,
                         ids=[c[0] for c in CASES])  # fmt: skip
def test_commit_rows(
    name: str, offsets: list[int], times: list[Any], versions: list[Any], rows: list[int]
) -> None:
    cols = _columns(offsets, times, versions)
    assert list(commit_rows(cols)) == rows
    assert rows == _defined(cols, 0)


@pytest.mark.parametrize("seed", range(40))
def test_commit_rows_agree_with_the_definition_from_every_start(seed: int) -> None:
    rng = random.Random(seed)
    n = rng.randint(0, 30)
    unknown = rng.choice([0.0, 0.1, 0.5, 1.0])  # none, some, half, all unknown

    def maybe(value: int) -> int | None:
        return None if rng.random() < unknown else value

    offsets = [rng.choice([7, 7, 7, 8]) for _ in range(n)]
    times = [maybe(rng.choice([100, 100, 200])) for _ in range(n)]
    versions = [maybe(rng.choice([1, 1, 2])) for _ in range(n)]
    cols = _columns(offsets, times, versions)
    for start in range(n + 2):
        assert list(commit_rows(cols, start)) == _defined(cols, start), start
