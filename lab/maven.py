"""What the lab's fetchers share: versions pinned in a pom, Maven's ``copy-dependencies`` into a
cache folder, a small topology compiled with the machine's JDK, and the marker a complete cache
folder carries (``lab/kafka_dist.py``, ``lab/storm/dist.py``, ``lab/storm2/dist.py``).

Jars are never committed: each fetcher's pom names coordinates, and these helpers turn them
into a folder of jars under ``~/.cache/lagwatch`` that the lab only reads.
"""

from __future__ import annotations

import os
import re
import shutil
import subprocess
import tempfile
from collections.abc import Sequence
from pathlib import Path


def pinned(pom: Path, prop: str) -> str:
    """The value of ``<prop>`` in ``pom``'s properties: the one place a version is written."""
    match = re.search(rf"<{re.escape(prop)}>([^<]+)</{re.escape(prop)}>", pom.read_text())
    if match is None:
        raise RuntimeError(f"no <{prop}> in {pom}")
    return match.group(1).strip()


def copy_dependencies(
    pom: Path, into: Path, quiet: bool, scope: str = "runtime", defines: Sequence[str] = ()
) -> None:
    """``mvn dependency:copy-dependencies`` of ``pom`` (``-D`` ``defines`` override its
    properties) into ``into``."""
    mvn = shutil.which("mvn")
    if mvn is None:
        raise FileNotFoundError("mvn not found (apt-get install -y maven)")
    command = [
        mvn, "-B", "-Dstyle.color=never", "-f", str(pom), "dependency:copy-dependencies",
        f"-DincludeScope={scope}", f"-DoutputDirectory={into}", *(f"-D{d}" for d in defines),
    ]  # fmt: skip
    if quiet:
        command.insert(1, "-q")
    subprocess.run(command, check=True, stdin=subprocess.DEVNULL)


def copy_artifact(pom: Path, coordinates: str, into: Path, quiet: bool) -> None:
    """``mvn dependency:copy`` of one artifact (``group:artifact:version``, no dependencies)
    into ``into``: a tool jar whose dependencies a fetched folder already holds."""
    mvn = shutil.which("mvn")
    if mvn is None:
        raise FileNotFoundError("mvn not found (apt-get install -y maven)")
    command = [
        mvn, "-B", "-Dstyle.color=never", "-f", str(pom), "dependency:copy",
        f"-Dartifact={coordinates}", f"-DoutputDirectory={into}",
    ]  # fmt: skip
    if quiet:
        command.insert(1, "-q")
    subprocess.run(command, check=True, stdin=subprocess.DEVNULL)


def fetch_libs(pom: Path, libs: Path, stamp: str, expected: Sequence[str], quiet: bool) -> None:
    """``libs`` filled with ``pom``'s runtime jars, unless its ``.fetched`` already says
    ``stamp``; each of ``expected`` (file names) must have come."""
    marker = libs / ".fetched"
    if marker.exists() and marker.read_text() == stamp:
        return
    shutil.rmtree(libs, ignore_errors=True)
    libs.mkdir(parents=True)
    copy_dependencies(pom, libs, quiet)
    for name in expected:
        if not (libs / name).exists():
            raise RuntimeError(f"Maven did not bring {name} into {libs}")
    marker.write_text(stamp)


def build_jar(source: Path, class_path: str, release: int, out: Path) -> None:
    """``javac --release`` of one source file against ``class_path``, then ``jar``, written
    whole (``jar`` is a JDK tool: the machine's JDK has it, a bare runtime does not)."""
    javac, jar = shutil.which("javac"), shutil.which("jar")
    if javac is None or jar is None:
        raise FileNotFoundError("javac/jar not found (apt-get install -y openjdk-17-jdk-headless)")
    out.parent.mkdir(parents=True, exist_ok=True)
    with tempfile.TemporaryDirectory(prefix="lab-topology-") as tmp:
        subprocess.run(
            [javac, "--release", str(release), "-nowarn", "-d", tmp, "-cp", class_path,
             str(source)],
            check=True, stdin=subprocess.DEVNULL, capture_output=True,
        )  # fmt: skip
        partial = out.with_suffix(".jar.partial")
        subprocess.run([jar, "cf", str(partial), "-C", tmp, "."], check=True)
        os.replace(partial, out)


def mark_complete(folder: Path, marker: str, text: str) -> None:
    """Write ``folder/marker`` atomically: a reader sees the old marker or the new one."""
    tmp = folder / f"{marker}.{os.getpid()}"
    tmp.write_text(text)
    os.replace(tmp, folder / marker)


def source_digest(source: Path) -> str:
    """A short digest of a topology's source: its jar is rebuilt when it changes."""
    import hashlib

    return hashlib.sha256(source.read_bytes()).hexdigest()[:16]
