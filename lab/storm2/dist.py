"""Apache Storm 2 for the lab, by Maven coordinates, with the lab topology compiled against it.

Like the lab's Kafka (``lab/kafka_dist.py``) and Storm 1 (``lab/storm/dist.py``), nothing is
committed: ``lab/storm2/pom.xml`` pins storm-server and storm-kafka-client 2.8.2 with the
kafka-clients they build against, and ``fetch`` fills a cache folder keyed by the Storm version:

- ``lib/``: storm-server, storm-kafka-client, kafka-clients and their runtime dependencies (a
  LocalCluster's class path: Nimbus, a supervisor and the topology in one JVM);
- ``topology/storm2-topology.jar``: ``lab/storm2/topology/Storm2Topology.java`` compiled with
  the machine's javac, rebuilt when its source changes.

Storm 2.8 is built for Java 17 and runs on the machine's Java 17 (Storm 1's reason for a Java 11
runtime, ZooKeeper 3.4's host parsing, is gone: Storm 2 shades ZooKeeper 3.9). ``scripts/setup``
calls ``fetch``; the lab only reads the folder and says how to fill it.
"""

from __future__ import annotations

import os
import sys
from pathlib import Path

from lab import kafka_dist, maven

HERE = Path(__file__).resolve().parent
POM = HERE / "pom.xml"
TOPOLOGY_SOURCE = HERE / "topology" / "Storm2Topology.java"
TOPOLOGY_CLASS = "Storm2Topology"
_COMPLETE = ".complete"


def _pinned(prop: str) -> str:
    return maven.pinned(POM, prop)


def storm_version() -> str:
    return _pinned("storm.version")


def kafka_client_version() -> str:
    """The kafka-clients the spout runs with (storm-kafka-client leaves it to the topology)."""
    return _pinned("kafka.client.version")


def home() -> Path:
    return kafka_dist.cache_root() / f"storm2-{storm_version()}"


def lib_dir() -> Path:
    return home() / "lib"


def topology_jar() -> Path:
    return home() / "topology" / "storm2-topology.jar"


def _libs_marker() -> str:
    return f"{storm_version()} kafka-clients {kafka_client_version()}"


def _marker() -> str:
    return f"{_libs_marker()} {maven.source_digest(TOPOLOGY_SOURCE)}\n"


def installed() -> Path:
    """The cache folder, or a FileNotFoundError that says how to fill it."""
    done = home() / _COMPLETE
    if not done.exists() or done.read_text() != _marker():
        raise FileNotFoundError(
            f"Apache Storm {storm_version()} is not (or not wholly) in {home()}: run "
            "scripts/setup (or `python -m lab.storm2.dist`), which fetches it from Maven Central"
        )
    return home()


def class_path() -> str:
    """The LocalCluster JVM's class path: the fetched jars and the lab topology."""
    return f"{lib_dir()}/*{os.pathsep}{topology_jar()}"


def _fetch_libs(quiet: bool) -> None:
    expected = [f"storm-server-{storm_version()}.jar", f"storm-kafka-client-{storm_version()}.jar",
                f"kafka-clients-{kafka_client_version()}.jar"]  # fmt: skip
    maven.fetch_libs(POM, lib_dir(), _libs_marker(), expected, quiet)


def fetch(quiet: bool = True) -> Path:
    """Fill the cache (idempotent: what is complete is kept, a changed topology rebuilt)."""
    done = home() / _COMPLETE
    if done.exists() and done.read_text() == _marker() and topology_jar().exists():
        return home()
    home().mkdir(parents=True, exist_ok=True)
    _fetch_libs(quiet)
    # Java 17: Storm 2.8's own target.
    maven.build_jar(TOPOLOGY_SOURCE, f"{lib_dir()}/*", 17, topology_jar())
    maven.mark_complete(home(), _COMPLETE, _marker())
    return home()


if __name__ == "__main__":
    print(fetch(quiet="-v" not in sys.argv[1:]))
