"""How fast the ZooKeeper adapter reads Storm spout commits, against what kazoo allows.

Creates ``--spouts`` × ``--partitions`` spout znodes (default 500 × 20 = 10,000, the target's
figure) in a real ZooKeeper, started here from pyspark's bundled jars unless ``--zk`` names
one, then times in one process, interleaved repetition by repetition so that load from other
processes hits all three alike:

* **floor**: a bare kazoo async walk issuing the same requests (one listing of the root, all
  spout listings at once, all gets at once) and keeping the raw replies, with stock kazoo.
  The target is a ratio to it: kazoo's connection thread handles every request and reply
  in Python, and that is where the time goes.
* **floor_poll**: the same bare walk on a client with the adapter's kazoo handler
  (``new_kazoo_handler``: ``poll(2)`` instead of an epoll set-up per wait). The adapter's
  ratio to this one is what parsing and record building cost on top of the reads.
* **adapter**: ``ZooKeeperSource.collect()``, which also parses, validates and builds records.
* **naive**: stock kazoo, one blocking ``get`` per node (and per listing), parsing as it goes.

Prints a JSON document (medians, every sample, process CPU seconds, ratios to the floor, the
targets: adapter ≤ 1.5 × floor and ≤ 2 s) and a markdown table. Every variant's client is
connected before timing starts, so connection set-up is not measured.

    .venv/bin/python benchmarks/bench_zookeeper.py [--zk 127.0.0.1:2181] [--reps 5]
"""

from __future__ import annotations

import argparse
import importlib.util
import json
import os
import platform
import resource
import shutil
import socket
import statistics
import subprocess
import sys
import tempfile
import time
import uuid
from collections.abc import Callable, Iterator
from contextlib import contextmanager
from pathlib import Path
from typing import Any

from kazoo.client import KazooClient

sys.path.insert(0, str(Path(__file__).resolve().parents[1]))

from collectors.storm_znode import parse_spout_znode  # noqa: E402
from collectors.zookeeper import ZooKeeperSource, new_kazoo_handler  # noqa: E402

TARGET_RATIO = 1.5
TARGET_SECONDS = 2.0


def _free_port() -> int:
    with socket.socket() as sock:
        sock.bind(("127.0.0.1", 0))
        return sock.getsockname()[1]


def _four_letter(hosts: str, word: bytes) -> str:
    host, port = hosts.rsplit(":", 1)
    with socket.create_connection((host, int(port)), timeout=2) as sock:
        sock.sendall(word)
        chunks = []
        while chunk := sock.recv(4096):
            chunks.append(chunk)
    return b"".join(chunks).decode(errors="replace")


@contextmanager
def own_zookeeper() -> Iterator[str]:
    """A throw-away ZooKeeper from pyspark's jars, as in LAB.md; killed and removed after."""
    spec = importlib.util.find_spec("pyspark")
    if spec is None or not spec.submodule_search_locations:
        raise SystemExit("pyspark is not installed (its jars provide ZooKeeper); pass --zk")
    jars = Path(next(iter(spec.submodule_search_locations))) / "jars"
    java = shutil.which("java")
    if java is None:
        raise SystemExit("java not found; pass --zk HOST:PORT of a running ZooKeeper")
    run_dir = Path(tempfile.mkdtemp(prefix="bench-zk-"))
    port = _free_port()
    (run_dir / "zoo.cfg").write_text(
        "tickTime=2000\n"
        f"dataDir={run_dir / 'data'}\n"
        f"clientPort={port}\n"
        "clientPortAddress=127.0.0.1\n"
        "admin.enableServer=false\n"
        "4lw.commands.whitelist=*\n"
    )
    log = (run_dir / "zk.log").open("wb")
    proc = subprocess.Popen(
        [
            java,
            "-Xmx512m",
            "-cp",
            f"{jars}/*",
            "org.apache.zookeeper.server.ZooKeeperServerMain",
            str(run_dir / "zoo.cfg"),
        ],
        stdout=log,
        stderr=subprocess.STDOUT,
    )
    hosts = f"127.0.0.1:{port}"
    try:
        deadline = time.monotonic() + 60
        while True:
            if proc.poll() is not None:
                raise SystemExit(f"ZooKeeper exited early; see {run_dir / 'zk.log'}")
            try:
                if _four_letter(hosts, b"ruok") == "imok":
                    break
            except OSError:
                pass
            if time.monotonic() > deadline:
                raise SystemExit("ZooKeeper did not start within 60 s")
            time.sleep(0.1)
        yield hosts
    finally:
        proc.terminate()
        try:
            proc.wait(timeout=10)
        except subprocess.TimeoutExpired:
            proc.kill()
            proc.wait()
        log.close()
        shutil.rmtree(run_dir, ignore_errors=True)


def populate(
    client: KazooClient,
    root: str,
    spouts: int,
    partitions: int,
    offset_of: Callable[[int], int] = lambda p: 1_000_000 + 17 * p,
    encode: Callable[[dict[str, Any]], bytes] | None = None,
) -> None:
    """Spout ``spout-<s>`` commits ``offset_of(p)`` on partition ``p`` of topic ``topic-<s>``;
    ``encode`` writes a node's JSON (default ``json.dumps``'s spacing; ``bench_storm.py`` passes
    the byte layout a real storm-kafka spout writes)."""
    encode = encode or (lambda node: json.dumps(node).encode())
    client.ensure_path(root)
    for reply in [client.create_async(f"{root}/spout-{s}") for s in range(spouts)]:
        reply.get(timeout=60)
    replies = []
    for s in range(spouts):
        topology = {"id": f"topology-{s}-7-1700000000", "name": f"topology-{s}"}
        for p in range(partitions):
            node = {
                "topology": topology,
                "offset": offset_of(p),
                "partition": p,
                "broker": {"host": f"kafka-{p % 3}.example", "port": 9092},
                "topic": f"topic-{s}",
            }
            path = f"{root}/spout-{s}/partition_{p}"
            replies.append(client.create_async(path, encode(node)))
    for reply in replies:
        reply.get(timeout=60)


def floor_walk(client: KazooClient, root: str) -> int:
    spouts = client.get_children_async(root).get()
    listings = [client.get_children_async(f"{root}/{spout}") for spout in spouts]
    listings[-1].wait()
    paths = [
        f"{root}/{spout}/{name}"
        for spout, listing in zip(spouts, listings, strict=True)
        for name in listing.get()
    ]
    replies = [client.get_async(path) for path in paths]
    replies[-1].wait()
    return len([reply.get() for reply in replies])


def naive_walk(client: KazooClient, root: str) -> int:
    commits = []
    for spout in client.get_children(root):
        for name in client.get_children(f"{root}/{spout}"):
            path = f"{root}/{spout}/{name}"
            data, stat = client.get(path)
            commits.append(parse_spout_znode(path, data, stat.mtime, stat.version))
    return len(commits)


def _timed(run: Callable[[], int], expected: int) -> tuple[float, float]:
    usage = resource.getrusage(resource.RUSAGE_SELF)
    started = time.perf_counter()
    count = run()
    wall = time.perf_counter() - started
    after = resource.getrusage(resource.RUSAGE_SELF)
    if count != expected:
        raise SystemExit(f"read {count} nodes, expected {expected}")
    cpu = (after.ru_utime - usage.ru_utime) + (after.ru_stime - usage.ru_stime)
    return wall, cpu


def bench(
    hosts: str,
    spouts: int,
    partitions: int,
    reps: int,
    naive_reps: int,
    encode: Callable[[dict[str, Any]], bytes] | None = None,
) -> dict[str, Any]:
    expected = spouts * partitions
    root = f"/lagwatch-bench/{uuid.uuid4().hex}"
    writer = KazooClient(hosts=hosts, timeout=30)
    writer.start(timeout=30)
    polling = KazooClient(hosts=hosts, timeout=30, handler=new_kazoo_handler())
    polling.start(timeout=30)
    try:
        started = time.perf_counter()
        populate(writer, root, spouts, partitions, encode=encode)
        populate_s = time.perf_counter() - started

        source = ZooKeeperSource(hosts, [root], zk_consumers=False, timeout_s=60)

        def adapter() -> int:
            result = source.collect(now_ms=int(time.time() * 1000))
            if not result.reachable or result.errors:
                raise SystemExit(f"adapter failed: {result.errors[:3]}")
            return len(result.commits)

        variants: dict[str, Callable[[], int]] = {
            "floor": lambda: floor_walk(writer, root),
            "floor_poll": lambda: floor_walk(polling, root),
            "adapter": adapter,
            "naive": lambda: naive_walk(writer, root),
        }
        for run in variants.values():  # connect, and warm the server's JIT
            run()
        samples: dict[str, list[tuple[float, float]]] = {name: [] for name in variants}
        load_before = os.getloadavg()
        for rep in range(reps):
            for name, run in variants.items():
                if name == "naive" and rep >= naive_reps:
                    continue
                samples[name].append(_timed(run, expected))
        load_after = os.getloadavg()
        source.close()
        writer.delete(root, recursive=True)
    finally:
        for client in (writer, polling):
            client.stop()
            client.close()

    medians = {
        name: {
            "wall_s": round(statistics.median(w for w, _ in runs), 4),
            "cpu_s": round(statistics.median(c for _, c in runs), 4),
            "samples_wall_s": [round(w, 4) for w, _ in runs],
        }
        for name, runs in samples.items()
    }
    floor = medians["floor"]["wall_s"]
    floor_poll = medians["floor_poll"]["wall_s"]
    adapter_s = medians["adapter"]["wall_s"]
    try:
        server = _four_letter(hosts, b"srvr").splitlines()[0]
    except OSError:
        server = "unknown"
    return {
        "znodes": expected,
        "spouts": spouts,
        "partitions_per_spout": partitions,
        "repetitions": reps,
        "naive_repetitions": min(naive_reps, reps),
        "populate_s": round(populate_s, 2),
        "results": medians,
        "ratios_to_floor": {name: round(m["wall_s"] / floor, 3) for name, m in medians.items()},
        "adapter_to_floor_poll": round(adapter_s / floor_poll, 3),
        "targets": {
            f"adapter <= {TARGET_RATIO} x floor": adapter_s <= TARGET_RATIO * floor,
            f"adapter <= {TARGET_SECONDS} s": adapter_s <= TARGET_SECONDS,
        },
        "environment": {
            "python": platform.python_version(),
            "kazoo": _kazoo_version(),
            "zookeeper": server,
            "cpus": os.cpu_count(),
            "loadavg_1m_before_after": [round(load_before[0], 2), round(load_after[0], 2)],
        },
    }


def _kazoo_version() -> str:
    from importlib.metadata import version

    return version("kazoo")


def markdown(report: dict[str, Any]) -> str:
    lines = [
        f"{report['znodes']} spout znodes ({report['spouts']} spouts x "
        f"{report['partitions_per_spout']} partitions), medians of {report['repetitions']} "
        f"runs (naive: {report['naive_repetitions']})",
        "",
        "| variant | wall (s) | process CPU (s) | x floor |",
        "|---|---:|---:|---:|",
    ]
    for name, m in report["results"].items():
        ratio = report["ratios_to_floor"].get(name, float("nan"))
        lines.append(f"| {name} | {m['wall_s']:.3f} | {m['cpu_s']:.3f} | {ratio:.2f} |")
    lines.append("")
    lines.append(f"- adapter / floor_poll (parsing and records): {report['adapter_to_floor_poll']}")
    for target, ok in report["targets"].items():
        lines.append(f"- {target}: {'met' if ok else 'NOT met'}")
    return "\n".join(lines)


def main(argv: list[str] | None = None) -> int:
    parser = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    parser.add_argument("--zk", help="HOST:PORT of a running ZooKeeper (default: start one)")
    parser.add_argument("--spouts", type=int, default=500)
    parser.add_argument("--partitions", type=int, default=20)
    parser.add_argument("--reps", type=int, default=5)
    parser.add_argument("--naive-reps", type=int, default=3, help="the naive walk is slow")
    parser.add_argument("--json", type=Path, help="also write the JSON report to this file")
    args = parser.parse_args(argv)

    if args.zk:
        report = bench(args.zk, args.spouts, args.partitions, args.reps, args.naive_reps)
    else:
        with own_zookeeper() as hosts:
            report = bench(hosts, args.spouts, args.partitions, args.reps, args.naive_reps)
    text = json.dumps(report, indent=2)
    print(text)
    print()
    print(markdown(report))
    if args.json:
        args.json.write_text(text + "\n")
    return 0


if __name__ == "__main__":
    raise SystemExit(main())
