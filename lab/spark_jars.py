"""hadoop-aws and its AWS SDK bundle for the lab's Spark jobs, fetched by Maven coordinates
(``deploy/spark/pom.xml``, the same file a deployment uses) into
``~/.cache/lagwatch/spark-s3a-<hadoop version>/`` (about 690 MB, nearly all of it the SDK
bundle; never committed). ``scripts/setup dev`` runs ``python -m lab.spark_jars``; a stack with
the object store then gives its product processes ``LAGWATCH_SPARK_JARS`` pointing here.
"""

from __future__ import annotations

import sys
from pathlib import Path
from typing import Final

from lab.kafka_dist import cache_root
from lab.maven import fetch_libs, pinned
from lab.services import REPO

POM: Final = REPO / "deploy" / "spark" / "pom.xml"


def hadoop_version() -> str:
    return pinned(POM, "hadoop.version")


def _folder() -> Path:
    return cache_root() / f"spark-s3a-{hadoop_version()}"


def spark_jars_dir() -> Path | None:
    """The fetched folder, or None when ``fetch`` has not run yet."""
    folder = _folder()
    return folder if (folder / ".fetched").exists() else None


def fetch(quiet: bool = True) -> Path:
    """The folder of jars, fetched first unless it is already there."""
    version = hadoop_version()
    folder = _folder()
    fetch_libs(POM, folder, version, [f"hadoop-aws-{version}.jar"], quiet)
    return folder


if __name__ == "__main__":
    print(fetch())
    sys.exit(0)
