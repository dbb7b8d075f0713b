"""`python -m lab.workload`: run the demo world with its Storm UI and control endpoint.

    python -m lab.workload --bootstrap B --zk Z --control-port P --storm-ui-port Q \\
        --run-dir D [--ingest-url U --ingest-token T] [--prefix X] [--world demo|queues]

Runs until SIGTERM or SIGINT, then shuts down cleanly: scenarios are stopped (an outage
drill restarts its service), consumers close so they leave their groups at once instead of
timing out, spouts stop, producers flush.
"""

from __future__ import annotations

import argparse
import logging
import os
import signal
import sys
import threading
from collections.abc import Sequence
from pathlib import Path

from lagwatch_client import IngestSender, SpoutPusher

from lab.storm.ui_api import StormUIServer, TopologyRegistry
from lab.workload.demo import DEMO_WORLD
from lab.workload.queues import QUEUE_WORLD
from lab.workload.runner import ScenarioRunner
from lab.workload.server import ControlServer
from lab.workload.spout_stats import spout_pusher
from lab.workload.world import World

log = logging.getLogger("lab.workload")

WORLDS = {"demo": DEMO_WORLD, "queues": QUEUE_WORLD}
WORLD_VAR = "LAGWATCH_LAB_WORLD"  # the world of a stack's workload, when not the demo's


def parse_args(argv: Sequence[str] | None = None) -> argparse.Namespace:
    parser = argparse.ArgumentParser(prog="python -m lab.workload", description=__doc__)
    parser.add_argument("--bootstrap", required=True, help="Kafka bootstrap servers")
    parser.add_argument("--zk", required=True, help="ZooKeeper hosts")
    parser.add_argument("--control-port", type=int, required=True)
    parser.add_argument("--storm-ui-port", type=int, required=True)
    parser.add_argument("--run-dir", type=Path, help="lab stack run dir (source-outage needs it)")
    parser.add_argument(
        "--ingest-url",
        help="Lagwatch ingest base URL (<web>/api/v1/ingest/<cluster>) for librdkafka "
        "statistics and spout figures",
    )
    parser.add_argument(
        "--ingest-token",
        default=os.environ.get("LAGWATCH_INGEST_TOKEN"),
        help="bearer token for the ingest endpoint (default: $LAGWATCH_INGEST_TOKEN)",
    )
    parser.add_argument(
        "--ingest-header",
        action="append",
        default=[],
        type=_header,
        metavar="NAME=VALUE",
        help="a header sent with every push (the lab's production mode: X-Forwarded-Proto=https)",
    )
    parser.add_argument(
        "--prefix", default="", help="prefix every name (topics, groups, zkRoot) to share a stack"
    )
    parser.add_argument(
        "--world",
        choices=sorted(WORLDS),
        default=os.environ.get(WORLD_VAR) or "demo",
        help=f"which world to run (default: ${WORLD_VAR}, else demo)",
    )
    return parser.parse_args(argv)


def _header(text: str) -> tuple[str, str]:
    name, sep, value = text.partition("=")
    if not sep or not name.strip():
        raise argparse.ArgumentTypeError(f"expected NAME=VALUE, got {text!r}")
    return name.strip(), value.strip()


def _spout_status(ingest: IngestSender, spouts: SpoutPusher) -> dict[str, object]:
    status = ingest.status()
    by_endpoint = status["posted_by_endpoint"]
    assert isinstance(by_endpoint, dict)
    return {"url": f"{ingest.url}/spout", "posted": by_endpoint["spout"],
            "sampled": spouts.sampled, "dropped": spouts.dropped}  # fmt: skip


def main(argv: Sequence[str] | None = None) -> int:
    args = parse_args(argv)
    logging.basicConfig(
        level=logging.INFO,
        stream=sys.stdout,
        format="%(asctime)s %(levelname)s %(name)s: %(message)s",
    )
    stop = threading.Event()
    for signum in (signal.SIGTERM, signal.SIGINT):
        signal.signal(signum, lambda *_: stop.set())

    # One sender for every client's statistics and the spouts' figures (lagwatch_client).
    ingest = (
        IngestSender(args.ingest_url, args.ingest_token, headers=dict(args.ingest_header))
        if args.ingest_url
        else None
    )
    registry = TopologyRegistry()
    world = World(
        WORLDS[args.world].prefixed(args.prefix),
        args.bootstrap,
        args.zk,
        run_dir=args.run_dir,
        ingest=ingest,
        registry=registry,
    )
    runner = ScenarioRunner(world)
    spouts = spout_pusher(ingest, world.topologies.spouts) if ingest else None
    storm_ui = StormUIServer("127.0.0.1", args.storm_ui_port, registry)
    control = ControlServer(
        runner,
        args.control_port,
        extra_status=lambda: {
            "storm_ui": storm_ui.url,
            "ingest": ingest.status() if ingest else None,
            "spout_ingest": _spout_status(ingest, spouts) if ingest and spouts else None,
        },
    )
    try:
        world.start()
        runner.start_always_on()
        if spouts:
            spouts.start()
        storm_ui.start()
        control.start()
        log.info("workload running (storm ui %s, control %s)", storm_ui.url, control.url)
        while not stop.wait(1.0):
            pass
        log.info("shutting down")
    finally:
        control.stop()
        if spouts:
            spouts.close()
        runner.stop_all()
        world.stop()
        storm_ui.stop()
        if ingest:
            ingest.close(timeout_s=5)
    log.info("bye")
    return 0


if __name__ == "__main__":
    sys.exit(main())
