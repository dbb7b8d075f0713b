"""Real Apache Storm: how long the lab's Storm takes to start, and the ZooKeeper cycle over
spout znodes as a real storm-kafka spout writes them, against the bare kazoo walk.

Starts the lab's ZooKeeper and ``storm`` service (Storm 1.2.4's Nimbus, supervisor, UI and
four storm-kafka topologies on a Kafka 3.9 broker: docs/LAB.md, "Apache Storm") in a temporary
run directory and reports:

* **start**: each service's ready time (the broker; Storm's daemons with the topologies
  submitted) and the time until every spout has committed to ZooKeeper;
* **real znodes**: the adapter (``ZooKeeperSource.collect``) against the floor (a bare kazoo
  async walk, ``bench_zookeeper.floor_walk``) over the real spouts' root, as written by Storm;
* **at scale**: ``--spouts`` × ``--partitions`` znodes (default 500 × 20) written with the byte
  layout of a real spout's znode (json-simple's: no spaces, Storm's key order; checked: the
  encoder reproduces the real node's bytes exactly), timed by ``bench_zookeeper.bench``:
  adapter ≤ 1.5 × floor is the target.

    .venv/bin/python -m benchmarks.bench_storm [--spouts 500] [--partitions 20] [--reps 5]
"""

from __future__ import annotations

import argparse
import json
import re
import statistics
import sys
import tempfile
import time
from pathlib import Path
from typing import Any

from kazoo.client import KazooClient

sys.path.insert(0, str(Path(__file__).resolve().parents[1]))

from benchmarks.bench_zookeeper import TARGET_RATIO, _timed, bench, floor_walk, markdown  # noqa: E402
from collectors.zookeeper import ZooKeeperSource  # noqa: E402
from lab.stack import Stack  # noqa: E402
from lab.storm.world import TOPOLOGIES, ZK_ROOT  # noqa: E402

# json-simple (what storm-kafka's ZkState writes with) prints no spaces; the key order of a
# real node is kept by reading it back into a dict (Python keeps insertion order).
COMPACT = (",", ":")


def storm_encoder(real: bytes) -> Any:
    """An encoder writing nodes as ``real`` is written; raises if it cannot reproduce it."""
    template = json.loads(real)
    if json.dumps(template, separators=COMPACT).encode() != real:
        raise SystemExit(f"cannot reproduce the real node's layout: {real!r}")
    order = list(template)

    def encode(node: dict[str, Any]) -> bytes:
        return json.dumps({key: node[key] for key in order}, separators=COMPACT).encode()

    return encode


def first_commits(hosts: str, timeout_s: float = 180) -> tuple[float, bytes]:
    """Seconds until every lab spout has a partition_0 znode, and one node's bytes."""
    client = KazooClient(hosts=hosts, timeout=30)
    client.start(timeout=30)
    started = time.monotonic()
    try:
        while True:
            paths = [f"{ZK_ROOT}/{t.spout_id}/partition_0" for t in TOPOLOGIES]
            if all(client.exists(p) for p in paths):
                return time.monotonic() - started, client.get(paths[0])[0]
            if time.monotonic() - started > timeout_s:
                raise SystemExit("the spouts did not commit in time")
            time.sleep(0.5)
    finally:
        client.stop()
        client.close()


def real_root(hosts: str, reps: int) -> dict[str, Any]:
    """The adapter and the floor over the real spouts' root (8 znodes), interleaved."""
    client = KazooClient(hosts=hosts, timeout=30)
    client.start(timeout=30)
    source = ZooKeeperSource(hosts, [ZK_ROOT], zk_consumers=False, timeout_s=60)
    try:
        expected = floor_walk(client, ZK_ROOT)

        def adapter() -> int:
            result = source.collect(now_ms=int(time.time() * 1000))
            if not result.reachable or result.errors:
                raise SystemExit(f"adapter failed on the real root: {result.errors[:3]}")
            return len(result.commits)

        adapter()
        samples: dict[str, list[float]] = {"floor": [], "adapter": []}
        for _ in range(reps):
            samples["floor"].append(_timed(lambda: floor_walk(client, ZK_ROOT), expected)[0])
            samples["adapter"].append(_timed(adapter, expected)[0])
    finally:
        source.close()
        client.stop()
        client.close()
    medians = {name: round(statistics.median(v), 5) for name, v in samples.items()}
    return {"znodes": expected, "median_wall_s": medians,
            "adapter_to_floor": round(medians["adapter"] / medians["floor"], 3)}  # fmt: skip


def main(argv: list[str] | None = None) -> int:
    parser = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    parser.add_argument("--spouts", type=int, default=500)
    parser.add_argument("--partitions", type=int, default=20)
    parser.add_argument("--reps", type=int, default=5)
    parser.add_argument("--json", type=Path, help="also write the JSON report to this file")
    args = parser.parse_args(argv)
    with tempfile.TemporaryDirectory(prefix="bench-storm-") as tmp:
        stack = Stack(Path(tmp))
        try:
            t0 = time.monotonic()
            stack.up(["zookeeper", "storm"])
            up_s = time.monotonic() - t0
            ready = _driver_times(Path(tmp))
            hosts = stack.endpoints()["zookeeper"]
            commits_s, node = first_commits(hosts)
            report = {
                "start": {"up_s": round(up_s, 1), "storm": ready,
                          "every_spout_committed_after_up_s": round(commits_s, 1)},  # fmt: skip
                "real_node": node.decode(),
                "real_root": real_root(hosts, args.reps * 4),
                "at_scale": bench(hosts, args.spouts, args.partitions, args.reps, 1,
                                  encode=storm_encoder(node)),  # fmt: skip
            }
        finally:
            stack.down()
    text = json.dumps(report, indent=2)
    print(text)
    print()
    print(f"start: up {report['start']['up_s']} s, every spout committed "
          f"{report['start']['every_spout_committed_after_up_s']} s later")  # fmt: skip
    print(f"real root ({report['real_root']['znodes']} znodes): adapter / floor "
          f"{report['real_root']['adapter_to_floor']}")  # fmt: skip
    print(markdown(report["at_scale"]))
    print(f"target: adapter <= {TARGET_RATIO} x floor")
    if args.json:
        args.json.write_text(text + "\n")
    return 0


def _driver_times(run_dir: Path) -> dict[str, float]:
    """What the storm service's driver logged: its daemons' and topologies' start times."""
    text = (run_dir / "logs" / "storm.log").read_text()
    found = {}
    patterns = {
        "daemons_ready_s": r"storm daemons ready in ([0-9.]+) s",
        "topologies_submitted_s": r"topologies submitted in ([0-9.]+) s",
    }
    for key, pattern in patterns.items():
        match = re.search(pattern, text)
        if match:
            found[key] = float(match.group(1))
    return found


if __name__ == "__main__":
    raise SystemExit(main())
