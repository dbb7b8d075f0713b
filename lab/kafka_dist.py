"""Apache Kafka for the lab, the tests and the benchmarks, by Maven coordinates.

There is no Kafka tarball to be had on these machines, but the broker is an ordinary Maven
artifact (``org.apache.kafka:kafka_2.13``): ``lab/kafka/pom.xml`` pins its version and
``fetch`` copies it with its runtime dependencies into a cache folder keyed by that version,
outside the work tree (jars are never committed). ``scripts/setup`` calls ``fetch``; the lab
only reads the folder and says how to fill it when it is missing.

The broker runs in KRaft combined mode (one process, broker and controller), formatted and
configured by ``lab.services``; this module only knows where the jars are.
"""

from __future__ import annotations

import os
import re
import shutil
import subprocess
import sys
from pathlib import Path

POM = Path(__file__).resolve().parent / "kafka" / "pom.xml"
# Written last by ``fetch``: a folder without it is a copy cut short, fetched again.
_COMPLETE = ".complete"


def kafka_version() -> str:
    """The pinned version, read from the pom (the one place it is written)."""
    match = re.search(r"<kafka\.version>([^<]+)</kafka\.version>", POM.read_text())
    if match is None:
        raise RuntimeError(f"no <kafka.version> in {POM}")
    return match.group(1).strip()


def cache_root() -> Path:
    """``$LAGWATCH_CACHE_DIR`` or ``$XDG_CACHE_HOME/lagwatch`` or ``~/.cache/lagwatch``."""
    if explicit := os.environ.get("LAGWATCH_CACHE_DIR"):
        return Path(explicit)
    xdg = os.environ.get("XDG_CACHE_HOME")
    return Path(xdg) / "lagwatch" if xdg else Path.home() / ".cache" / "lagwatch"


def libs_dir(version: str | None = None) -> Path:
    return cache_root() / f"kafka-{version or kafka_version()}" / "libs"


def installed_libs() -> Path:
    """The jars' folder, or a FileNotFoundError that says how to get them."""
    libs = libs_dir()
    if not (libs.parent / _COMPLETE).exists():
        raise FileNotFoundError(
            f"Apache Kafka {kafka_version()} is not in {libs.parent}: run scripts/setup "
            "(or `python -m lab.kafka_dist`), which fetches it from Maven Central"
        )
    return libs


def fetch(quiet: bool = True) -> Path:
    """Copy the broker's jars into the cache (idempotent: a complete folder is kept)."""
    libs = libs_dir()
    done = libs.parent / _COMPLETE
    if done.exists():
        return libs
    mvn = shutil.which("mvn")
    if mvn is None:
        raise FileNotFoundError("mvn not found (apt-get install -y maven)")
    shutil.rmtree(libs, ignore_errors=True)
    libs.mkdir(parents=True)
    command = [
        mvn, "-B", "-Dstyle.color=never", "-f", str(POM), "dependency:copy-dependencies",
        "-DincludeScope=runtime", f"-DoutputDirectory={libs}",
    ]  # fmt: skip
    if quiet:
        command.insert(1, "-q")
    subprocess.run(command, check=True, stdin=subprocess.DEVNULL)
    if not any(libs.glob(f"kafka_2.13-{kafka_version()}.jar")):
        raise RuntimeError(f"Maven did not bring kafka_2.13-{kafka_version()}.jar into {libs}")
    done.write_text(kafka_version() + "\n")
    return libs


if __name__ == "__main__":
    print(fetch(quiet="-v" not in sys.argv[1:]))
