"""SeaweedFS's ``weed`` command for the lab's object store, built from its Go module.

SeaweedFS (Apache-2.0) is an S3-compatible store written in Go; the Go module proxy serves
its module, not a release binary. ``go install module/weed@version`` is refused (its go.mod
holds a ``replace`` directive), so the module is downloaded (``go mod download``) and built
as the main module from its own folder, which honours that directive. Built once into
``~/.cache/lagwatch/seaweedfs-<version>/weed`` (``lab.kafka_dist.cache_root``), then reused:
``scripts/setup dev`` runs ``python -m lab.seaweedfs`` ahead of the object-store tests, and a
lab that finds it missing builds it the same way, one process at a time (a file lock).
About 10 CPU-minutes, once (an hour of wall time on a machine loaded twentyfold; a 233 MB
binary).
"""

from __future__ import annotations

import fcntl
import json
import os
import shutil
import subprocess
import sys
import tempfile
from pathlib import Path
from typing import Final

from lab.kafka_dist import cache_root

MODULE: Final = "github.com/seaweedfs/seaweedfs"
# A pseudo-version: SeaweedFS tags its releases without the module's v-prefix rules, so the
# proxy serves commits; this one is from 2026-11-09.
VERSION: Final = "v0.0.0-20261109003541-7506e5f91cd6"
_BUILD_TIMEOUT_S: Final = 3600


def weed_binary() -> Path:
    """The cached ``weed``, built first if it is not there yet."""
    target = cache_root() / f"seaweedfs-{VERSION}" / "weed"
    if target.is_file():
        return target
    go = shutil.which("go")
    if go is None:
        raise FileNotFoundError("no Go toolchain to build SeaweedFS's weed with (scripts/setup)")
    target.parent.mkdir(parents=True, exist_ok=True)
    with open(target.parent / ".lock", "w") as lock:
        fcntl.flock(lock, fcntl.LOCK_EX)  # another process may be building it right now
        if target.is_file():
            return target
        env = {**os.environ, "GOFLAGS": "-buildvcs=false"}
        downloaded = subprocess.run(
            [go, "mod", "download", "-json", f"{MODULE}@{VERSION}"],
            env=env, check=True, capture_output=True, text=True, timeout=_BUILD_TIMEOUT_S,
        )  # fmt: skip
        source = json.loads(downloaded.stdout)["Dir"]
        with tempfile.TemporaryDirectory(dir=target.parent) as built:
            out = Path(built) / "weed"
            subprocess.run(
                [go, "build", "-o", str(out), "./weed"],
                cwd=source, env=env, check=True, timeout=_BUILD_TIMEOUT_S,
            )  # fmt: skip
            os.replace(out, target)
    return target


if __name__ == "__main__":
    print(weed_binary())
    sys.exit(0)
