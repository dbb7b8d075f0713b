"""Kafka Streams for the lab, by Maven coordinates, with the lab application compiled against it.

Like the lab's Kafka (``lab/kafka_dist.py``) and Storm 2 (``lab/storm2/dist.py``), nothing is
committed: ``lab/kafka_streams/pom.xml`` pins kafka-streams 4.4.0, and ``fetch`` fills a cache
folder keyed by its version:

- ``lib/``: kafka-streams, kafka-clients and their runtime dependencies;
- ``app/lab-wordcount.jar``: ``lab/kafka_streams/app/LabWordCount.java`` compiled with the
  machine's javac, rebuilt when its source changes.

``scripts/setup`` calls ``fetch``; the lab only reads the folder and says how to fill it.
"""

from __future__ import annotations

import os
import sys
from pathlib import Path

from lab import kafka_dist, maven

HERE = Path(__file__).resolve().parent
POM = HERE / "pom.xml"
APP_SOURCE = HERE / "app" / "LabWordCount.java"
APP_CLASS = "LabWordCount"
_COMPLETE = ".complete"


def streams_version() -> str:
    return maven.pinned(POM, "kafka.streams.version")


def home() -> Path:
    return kafka_dist.cache_root() / f"kafka-streams-{streams_version()}"


def lib_dir() -> Path:
    return home() / "lib"


def app_jar() -> Path:
    return home() / "app" / "lab-wordcount.jar"


def _libs_marker() -> str:
    return f"kafka-streams {streams_version()}"


def _marker() -> str:
    return f"{_libs_marker()} {maven.source_digest(APP_SOURCE)}\n"


def installed() -> Path:
    """The cache folder, or a FileNotFoundError that says how to fill it."""
    done = home() / _COMPLETE
    if not done.exists() or done.read_text() != _marker():
        raise FileNotFoundError(
            f"Kafka Streams {streams_version()} is not (or not wholly) in {home()}: run "
            "scripts/setup (or `python -m lab.kafka_streams.dist`), which fetches it from "
            "Maven Central"
        )
    return home()


def class_path() -> str:
    """The application JVM's class path: the fetched jars and the lab application."""
    return f"{lib_dir()}/*{os.pathsep}{app_jar()}"


def fetch(quiet: bool = True) -> Path:
    """Fill the cache (idempotent: what is complete is kept, a changed application rebuilt)."""
    done = home() / _COMPLETE
    if done.exists() and done.read_text() == _marker() and app_jar().exists():
        return home()
    home().mkdir(parents=True, exist_ok=True)
    v = streams_version()
    expected = [f"kafka-streams-{v}.jar", f"kafka-clients-{v}.jar"]
    maven.fetch_libs(POM, lib_dir(), _libs_marker(), expected, quiet)
    maven.build_jar(APP_SOURCE, f"{lib_dir()}/*", 17, app_jar())
    maven.mark_complete(home(), _COMPLETE, _marker())
    return home()


if __name__ == "__main__":
    print(fetch(quiet="-v" not in sys.argv[1:]))
