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

import hashlib
import os
import re
import shutil
import subprocess
import sys
import tempfile
from pathlib import Path

from lab import kafka_dist

HERE = Path(__file__).resolve().parent
POM = HERE / "pom.xml"
TOPOLOGY_SOURCE = HERE / "topology" / "Storm2Topology.java"
TOPOLOGY_CLASS = "Storm2Topology"
_COMPLETE = ".complete"


def _pinned(prop: str) -> str:
    match = re.search(rf"<{re.escape(prop)}>([^<]+)</{re.escape(prop)}>", POM.read_text())
    if match is None:
        raise RuntimeError(f"no <{prop}> in {POM}")
    return match.group(1).strip()


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


def _source_digest() -> str:
    return hashlib.sha256(TOPOLOGY_SOURCE.read_bytes()).hexdigest()[:16]


def _libs_marker() -> str:
    return f"{storm_version()} kafka-clients {kafka_client_version()}"


def _marker() -> str:
    return f"{_libs_marker()} {_source_digest()}\n"


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
    libs = lib_dir()
    stamp = libs / ".fetched"
    if stamp.exists() and stamp.read_text() == _libs_marker():
        return
    mvn = shutil.which("mvn")
    if mvn is None:
        raise FileNotFoundError("mvn not found (apt-get install -y maven)")
    shutil.rmtree(libs, ignore_errors=True)
    libs.mkdir(parents=True)
    command = [mvn, "-B", "-Dstyle.color=never", "-f", str(POM), "dependency:copy-dependencies",
               "-DincludeScope=runtime", f"-DoutputDirectory={libs}"]  # fmt: skip
    if quiet:
        command.insert(1, "-q")
    subprocess.run(command, check=True, stdin=subprocess.DEVNULL)
    for jar in (f"storm-server-{storm_version()}.jar", f"storm-kafka-client-{storm_version()}.jar",
                f"kafka-clients-{kafka_client_version()}.jar"):  # fmt: skip
        if not (libs / jar).exists():
            raise RuntimeError(f"Maven did not bring {jar} into {libs}")
    stamp.write_text(_libs_marker())


def _build_topology() -> None:
    """javac (Java 17, Storm 2.8's own target) against the fetched jars, then a jar."""
    javac, jar = shutil.which("javac"), shutil.which("jar")
    if javac is None or jar is None:
        raise FileNotFoundError("javac/jar not found (apt-get install -y openjdk-17-jdk-headless)")
    out = topology_jar()
    out.parent.mkdir(parents=True, exist_ok=True)
    with tempfile.TemporaryDirectory(prefix="storm2-topology-") as tmp:
        subprocess.run(
            [javac, "--release", "17", "-nowarn", "-d", tmp, "-cp", f"{lib_dir()}/*",
             str(TOPOLOGY_SOURCE)],
            check=True, stdin=subprocess.DEVNULL, capture_output=True,
        )  # fmt: skip
        partial = out.with_suffix(".jar.partial")
        subprocess.run([jar, "cf", str(partial), "-C", tmp, "."], check=True)
        os.replace(partial, out)


def fetch(quiet: bool = True) -> Path:
    """Fill the cache (idempotent: what is complete is kept, a changed topology rebuilt)."""
    done = home() / _COMPLETE
    if done.exists() and done.read_text() == _marker() and topology_jar().exists():
        return home()
    home().mkdir(parents=True, exist_ok=True)
    _fetch_libs(quiet)
    _build_topology()
    tmp_marker = home() / f"{_COMPLETE}.{os.getpid()}"
    tmp_marker.write_text(_marker())
    os.replace(tmp_marker, done)
    return home()


if __name__ == "__main__":
    print(fetch(quiet="-v" not in sys.argv[1:]))
