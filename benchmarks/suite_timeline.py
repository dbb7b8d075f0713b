"""Where a suite run's wall time went, worker by worker and unit by unit.

``--durations`` says how long each test took, not when: it cannot show a run ending on one
long test while the other workers idle, or two stack units overlapping. Run the suite with
``LAGWATCH_TEST_TIMELINE=/tmp/timeline.jsonl`` (``tests/conftest.py`` appends every phase of
every test there) and then::

    .venv/bin/python benchmarks/suite_timeline.py /tmp/timeline.jsonl

It prints each scheduling unit (``tests/scheduling.py``) with its worker, when it started and
ended (minutes from the run's first test), and how long its tests took; then, per worker, its
busy time and the gaps longer than ``--gap`` seconds in which it ran nothing; and which tests
were running in the run's last minutes (its tail, where a lone long test sets the wall time).
"""

from __future__ import annotations

import argparse
import json
import sys
from collections import defaultdict
from pathlib import Path

sys.path.insert(0, str(Path(__file__).resolve().parents[1]))

from tests.scheduling import scope_of  # noqa: E402


def load(path: Path, run: int) -> list[dict]:
    """The rows of the file's ``run``-th pytest run (``scripts/test`` makes two: SQLite, then
    PostgreSQL), in start order."""
    rows = [json.loads(line) for line in path.read_text().splitlines() if line.strip()]
    runs = list(dict.fromkeys(r.get("run") for r in rows))
    if not 1 <= run <= len(runs):
        raise SystemExit(f"{path} holds {len(runs)} run(s); asked for run {run}")
    return sorted((r for r in rows if r.get("run") == runs[run - 1]), key=lambda r: r["start"])


def tests_of(rows: list[dict]) -> list[dict]:
    """One span per test: from its setup's start to its teardown's end."""
    spans: dict[tuple[str, str], dict] = {}
    for r in rows:
        key = (r["worker"], r["test"])
        span = spans.setdefault(key, {"worker": r["worker"], "test": r["test"],
                                      "start": r["start"], "stop": r["stop"]})  # fmt: skip
        span["start"] = min(span["start"], r["start"])
        span["stop"] = max(span["stop"], r["stop"])
    return sorted(spans.values(), key=lambda s: s["start"])


def report(rows: list[dict], gap_s: float, tail_min: float) -> str:
    spans = tests_of(rows)
    t0 = spans[0]["start"]
    end = max(s["stop"] for s in spans)

    def m(t: float) -> str:
        return f"{(t - t0) / 60:5.1f}"

    out = [f"{len(spans)} tests over {(end - t0) / 60:.1f} min"]
    units: dict[tuple[str, str], list[dict]] = defaultdict(list)
    for s in spans:
        units[(scope_of(s["test"]), s["worker"])].append(s)
    out.append("\nunits taking more than 30 s (start and end in minutes from the first test):")
    out.append(f"{'unit':55s} {'worker':6s} {'start':>5s} {'end':>5s} {'tests s':>8s}")
    for (unit, worker), ss in sorted(units.items(), key=lambda kv: kv[1][0]["start"]):
        busy = sum(s["stop"] - s["start"] for s in ss)
        if busy > 30:
            first, last = ss[0]["start"], max(s["stop"] for s in ss)
            out.append(f"{unit[:55]:55s} {worker:6s} {m(first)} {m(last)} {busy:8.0f}")
    out.append(f"\nper worker: busy time, and gaps of more than {gap_s:.0f} s between tests:")
    by_worker: dict[str, list[dict]] = defaultdict(list)
    for s in spans:
        by_worker[s["worker"]].append(s)
    for worker, ss in sorted(by_worker.items()):
        busy = sum(s["stop"] - s["start"] for s in ss)
        last_stop = max(s["stop"] for s in ss)
        gaps, reach = [], ss[0]["start"]
        for s in ss:
            if s["start"] - reach > gap_s:
                gaps.append(f"{m(reach)}-{m(s['start'])}")
            reach = max(reach, s["stop"])
        out.append(f"{worker}: busy {busy / 60:.1f} min, last test ends at {m(last_stop)}; "
                   f"gaps: {', '.join(gaps) or 'none'}")  # fmt: skip
    out.append(f"\ntests of more than 5 s running in the last {tail_min:.0f} min:")
    for s in spans:
        if s["stop"] > end - tail_min * 60 and s["stop"] - s["start"] > 5:
            out.append(f"  {s['worker']:5s} {m(s['start'])}-{m(s['stop'])} {s['test']}")
    return "\n".join(out)


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    parser.add_argument("timeline", type=Path)
    parser.add_argument("--gap", type=float, default=20.0, help="seconds (default 20)")
    parser.add_argument("--tail", type=float, default=3.0, help="minutes (default 3)")
    parser.add_argument(
        "--run", type=int, default=1, help="which pytest run of the file (default 1)"
    )
    args = parser.parse_args()
    print(report(load(args.timeline, args.run), args.gap, args.tail))


if __name__ == "__main__":
    main()
