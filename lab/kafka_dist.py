"""Apache Kafka for the lab, the tests and the benchmarks, by Maven coordinates.

There is no Kafka tarball to be had on these machines, but the broker is an ordinary Maven
artifact (``org.apache.kafka:kafka_2.13``): ``lab/kafka/pom.xml`` pins its version and
``fetch`` copies it with its runtime dependencies into a cache folder keyed by that version,
outside the work tree (jars are never committed). ``scripts/setup`` calls ``fetch``; the lab
only reads the folder and says how to fill it when it is missing.

The broker runs in KRaft combined mode (one process, broker and controller), formatted and
configured by ``lab.services``; this module only knows where the jars are.

The Prometheus JMX exporter agent (``io.prometheus.jmx:jmx_prometheus_javaagent``, scope
``provided`` in the pom) is copied into a folder of its own beside ``libs``: it is loaded with
``-javaagent``, never put on the broker's classpath. The cache folder is shared by every
checkout on a machine, so an older cache (fetched before the agent was pinned) is completed
*additively*: the agent is copied into a temporary folder and renamed into place, ``libs`` is
never touched, and ``.complete`` (which lists what the folder holds) is replaced atomically.
A concurrent reader of the old cache keeps working throughout.

**Another broker version** (the compatibility run, ``scripts/test-compat``): with
``$LAGWATCH_KAFKA_VERSION`` set (pytest's ``--kafka-version`` sets it) the lab's broker runs
that version's jars, fetched by ``fetch_other`` into their own cache folder
(``python -m lab.kafka_dist --other 3.9.1``); the JMX exporter agent stays the pinned one.
"""

from __future__ import annotations

import os
import shutil
import sys
import tempfile
from pathlib import Path

from lab import maven

POM = Path(__file__).resolve().parent / "kafka" / "pom.xml"
# The lab broker's version when it is not the pinned one (the compatibility run).
VERSION_ENV = "LAGWATCH_KAFKA_VERSION"
# Written last by ``fetch``: a folder without it is a copy cut short, fetched again.
_COMPLETE = ".complete"


AGENT_ARTIFACT = "jmx_prometheus_javaagent"
# Kafka's command-line tools (``kafka-share-groups.sh`` is ShareGroupCommand in it): not on the
# broker's class path, which Maven's kafka_2.13 does not bring it into; the lab's tests run
# them to compare what Lagwatch reads with what Kafka's own tools say.
TOOLS_ARTIFACT = "kafka-tools"


def _pinned(prop: str) -> str:
    return maven.pinned(POM, prop)


def kafka_version() -> str:
    """The pinned version, read from the pom (the one place it is written)."""
    return _pinned("kafka.version")


def agent_version() -> str:
    """The pinned JMX exporter agent version (the pom's ``jmx.exporter.version``)."""
    return _pinned("jmx.exporter.version")


def broker_version() -> str:
    """The version the lab's broker runs: ``$LAGWATCH_KAFKA_VERSION`` or the pinned one."""
    return os.environ.get(VERSION_ENV, "").strip() or kafka_version()


def version_at_least(minimum: str, version: str | None = None) -> bool:
    """Whether ``version`` (default: the lab broker's) is ``minimum`` or newer, numerically
    ("4.10.0" is newer than "4.4.0"); a suffix such as "-rc1" is ignored."""

    def parts(text: str) -> tuple[int, ...]:
        return tuple(int(p) for p in text.split("-")[0].split(".") if p.isdigit())

    return parts(version or broker_version()) >= parts(minimum)


def broker_libs() -> Path:
    """The jars of the broker the lab runs (``broker_version``), or a FileNotFoundError that
    says how to fetch them."""
    version = broker_version()
    return installed_libs(None if version == kafka_version() else version)


def cache_root() -> Path:
    """``$LAGWATCH_CACHE_DIR`` or ``$XDG_CACHE_HOME/lagwatch`` or ``~/.cache/lagwatch``."""
    if explicit := os.environ.get("LAGWATCH_CACHE_DIR"):
        return Path(explicit)
    xdg = os.environ.get("XDG_CACHE_HOME")
    return Path(xdg) / "lagwatch" if xdg else Path.home() / ".cache" / "lagwatch"


def libs_dir(version: str | None = None) -> Path:
    return cache_root() / f"kafka-{version or kafka_version()}" / "libs"


def agent_jar(version: str | None = None) -> Path:
    """Where the JMX exporter agent jar is (or will be) in the cache."""
    v = version or agent_version()
    return (
        cache_root()
        / f"kafka-{kafka_version()}"
        / f"jmx-exporter-{v}"
        / f"{AGENT_ARTIFACT}-{v}.jar"
    )


def tools_jar(version: str | None = None) -> Path:
    """Where ``kafka-tools-<version>.jar`` is (or will be) in the cache: beside the broker's
    ``libs``, whose jars are its dependencies."""
    v = version or kafka_version()
    return cache_root() / f"kafka-{v}" / "tools" / f"{TOOLS_ARTIFACT}-{v}.jar"


def installed_tools(version: str | None = None) -> Path:
    """The tools jar of the lab broker's version, or a FileNotFoundError saying how to get it."""
    jar = tools_jar(version or broker_version())
    if not jar.exists():
        raise FileNotFoundError(
            f"Kafka's tools are not in {jar.parent}: run scripts/setup (or "
            "`python -m lab.kafka_dist`), which fetches them from Maven Central"
        )
    return jar


def _marker_lines() -> list[str]:
    return [
        kafka_version(),
        f"{AGENT_ARTIFACT} {agent_version()}",
        f"{TOOLS_ARTIFACT} {kafka_version()}",
    ]


def installed_agent() -> Path:
    """The agent jar, or a FileNotFoundError that says how to get it."""
    jar = agent_jar()
    if not jar.exists():
        raise FileNotFoundError(
            f"the Prometheus JMX exporter agent {agent_version()} is not in {jar.parent}: run "
            "scripts/setup (or `python -m lab.kafka_dist`), which fetches it from Maven Central"
        )
    return jar


def installed_libs(version: str | None = None) -> Path:
    """The jars' folder, or a FileNotFoundError that says how to get them."""
    libs = libs_dir(version)
    if not (libs.parent / _COMPLETE).exists():
        how = "`python -m lab.kafka_dist" + (f" --other {version}`" if version else "`")
        raise FileNotFoundError(
            f"Apache Kafka {version or kafka_version()} is not in {libs.parent}: run "
            f"scripts/setup (or {how}), which fetches it from Maven Central"
        )
    return libs


def _copy_dependencies(scope: str, into: Path, quiet: bool, version: str | None = None) -> None:
    defines = [f"kafka.version={version}"] if version else []
    maven.copy_dependencies(POM, into, quiet, scope, defines)


def _fetch_agent(quiet: bool) -> Path:
    """Copy the agent into a temporary folder, then rename it into place: additive, and a
    reader never sees a half-copied jar."""
    jar = agent_jar()
    if jar.exists():
        return jar
    tmp = Path(tempfile.mkdtemp(prefix=".jmx-exporter-", dir=jar.parent.parent))
    try:
        # "provided" holds the agent alone (the broker's jars are "compile"/"runtime").
        _copy_dependencies("provided", tmp, quiet)
        if not (tmp / jar.name).exists():
            raise RuntimeError(f"Maven did not bring {jar.name} into {tmp}")
        for other in tmp.iterdir():
            if other.name != jar.name:
                other.unlink()
        tmp.chmod(0o755)  # mkdtemp's 0700 would hide the agent from other users' brokers
        try:
            tmp.rename(jar.parent)
        except OSError:
            if not jar.exists():  # not a concurrent fetch that won the race
                raise
    finally:
        shutil.rmtree(tmp, ignore_errors=True)
    return jar


def _fetch_tools(quiet: bool, version: str | None = None) -> Path:
    """Kafka's tools jar into a temporary folder, renamed into place (additive, as the agent)."""
    jar = tools_jar(version)
    if jar.exists():
        return jar
    tmp = Path(tempfile.mkdtemp(prefix=".tools-", dir=jar.parent.parent))
    try:
        coordinates = f"org.apache.kafka:{TOOLS_ARTIFACT}:{version or kafka_version()}"
        maven.copy_artifact(POM, coordinates, tmp, quiet)
        if not (tmp / jar.name).exists():
            raise RuntimeError(f"Maven did not bring {jar.name} into {tmp}")
        tmp.chmod(0o755)
        try:
            tmp.rename(jar.parent)
        except OSError:
            if not jar.exists():
                raise
    finally:
        shutil.rmtree(tmp, ignore_errors=True)
    return jar


def fetch(quiet: bool = True) -> Path:
    """Copy the broker's jars, the agent and Kafka's tools into the cache (idempotent: what is
    complete is kept; a cache from before the agent or the tools gets them added, ``libs``
    untouched)."""
    libs = libs_dir()
    done = libs.parent / _COMPLETE
    if (
        done.exists()
        and done.read_text().split("\n")[:3] == _marker_lines()
        and agent_jar().exists()
        and tools_jar().exists()
    ):
        return libs
    if not done.exists():
        shutil.rmtree(libs, ignore_errors=True)
        libs.mkdir(parents=True)
        _copy_dependencies("runtime", libs, quiet)
        if not any(libs.glob(f"kafka_2.13-{kafka_version()}.jar")):
            raise RuntimeError(f"Maven did not bring kafka_2.13-{kafka_version()}.jar into {libs}")
    _fetch_agent(quiet)
    _fetch_tools(quiet)
    tmp_marker = libs.parent / f"{_COMPLETE}.{os.getpid()}"
    tmp_marker.write_text("\n".join(_marker_lines()) + "\n")
    os.replace(tmp_marker, done)  # atomic: a reader sees the old marker or the new one
    return libs


def fetch_other(version: str, quiet: bool = True) -> Path:
    """Another version's broker jars (no agent) into its own cache folder, e.g. the Kafka 3.9
    the Storm lab's spouts need (``lab/storm/pom.xml``): the pom's version overridden."""
    libs = libs_dir(version)
    done = libs.parent / _COMPLETE
    if done.exists():
        return libs
    shutil.rmtree(libs, ignore_errors=True)
    libs.mkdir(parents=True)
    _copy_dependencies("runtime", libs, quiet, version)
    if not any(libs.glob(f"kafka_2.13-{version}.jar")):
        raise RuntimeError(f"Maven did not bring kafka_2.13-{version}.jar into {libs}")
    tmp_marker = libs.parent / f"{_COMPLETE}.{os.getpid()}"
    tmp_marker.write_text(version + "\n")
    os.replace(tmp_marker, done)
    return libs


if __name__ == "__main__":
    _args = sys.argv[1:]
    _quiet = "-v" not in _args
    if "--other" in _args:  # python -m lab.kafka_dist --other 3.9.1
        print(fetch_other(_args[_args.index("--other") + 1], _quiet))
    else:
        print(fetch(_quiet))
