"""Go tools the lab and the tests build from their modules, cached by version.

No release binary can be downloaded on the development machines or in CI, but the Go module
proxy serves the modules: a tool is ``go install``-ed (or ``go build``-ed) once into the cache
every checkout shares (``lab.kafka_dist.cache_root``, ``~/.cache/lagwatch/``) and never again.
Helm (``tests/deploy/tools.py``) and Toxiproxy (``lab/toxiproxy.py``) are built this way.
"""

from __future__ import annotations

import fcntl
import os
import shutil
import subprocess
import tempfile
from pathlib import Path


def go_built(target: Path, args: list[str], cwd: Path, *, built_name: str | None = None) -> Path:
    """``target``, made by ``go <args>`` (into a temporary folder, then renamed) unless it
    exists: never a half-written binary, and one build at a time (a file lock). ``{out}`` in
    ``args`` is the output path; ``built_name`` is the name ``go install`` gives the binary
    when it is not ``target``'s (a module's ``cmd/server`` installs as ``server``)."""
    if target.is_file():
        return target
    go = shutil.which("go")
    assert go, f"no Go toolchain to build {target.name} with (go {' '.join(args)})"
    target.parent.mkdir(parents=True, exist_ok=True)
    with open(target.parent / ".lock", "w") as lock:
        fcntl.flock(lock, fcntl.LOCK_EX)  # another process may be building it right now
        if not target.is_file():
            with tempfile.TemporaryDirectory(dir=target.parent) as built:
                out = Path(built) / target.name
                env = {**os.environ, "GOBIN": built, "GOFLAGS": "-buildvcs=false"}
                subprocess.run(
                    [go, *(a.replace("{out}", str(out)) for a in args)],
                    cwd=cwd, env=env, check=True, timeout=1800,
                )  # fmt: skip
                os.replace(Path(built) / (built_name or target.name), target)
    return target
