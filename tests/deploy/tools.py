"""The tools the tests of ``deploy/`` run, and where they come from.

Prometheus and promtool are Debian's ``prometheus`` package (``scripts/setup dev`` installs
it). Helm has no Debian package and no release binary can be downloaded here, but it is a Go
module the Go module proxy serves: ``helm_binary`` builds ``helm.sh/helm/v3/cmd/helm`` at
``HELM_VERSION`` once into the cache shared by every checkout (``lab.kafka_dist.cache_root``,
``~/.cache/lagwatch/helm-<version>/helm``: about 2.5 minutes of two cores, then never again).
``scripts/setup dev`` runs ``python -m tests.deploy.tools`` to build it ahead of the tests; a
test finding it missing builds it the same way, one process at a time (a file lock).

``kubecheck_binary`` builds tests/deploy/kubecheck (a few lines of Go over client-go, whose
modules helm's build has already fetched): it decodes rendered manifests strictly into their
Kubernetes types, the check a cluster's API server would make of a misspelt field. Cached by
the hash of its sources.
"""

from __future__ import annotations

import fcntl
import hashlib
import os
import shutil
import subprocess
import sys
import tempfile
from pathlib import Path

from lab.kafka_dist import cache_root

HELM_VERSION = "v3.22.0"
HELM_MODULE = "helm.sh/helm/v3/cmd/helm"
KUBECHECK = Path(__file__).resolve().parent / "kubecheck"


def debian_tool(name: str) -> str:
    """A binary of Debian's ``prometheus`` package, or a failure saying how to get it."""
    path = shutil.which(name)
    assert path, f"{name} is missing: scripts/setup dev installs Debian's prometheus package"
    return path


def helm_binary() -> Path:
    """The cached helm, built from its Go module first if it is not there yet."""
    target = cache_root() / f"helm-{HELM_VERSION}" / "helm"
    return _go_built(target, ["install", f"{HELM_MODULE}@{HELM_VERSION}"], Path.cwd())


def kubecheck_binary() -> Path:
    """The cached kubecheck of these sources, built first if need be."""
    sources = sorted(p for p in KUBECHECK.iterdir() if p.name in ("go.mod", "go.sum", "main.go"))
    digest = hashlib.sha256(b"".join(p.read_bytes() for p in sources)).hexdigest()[:16]
    target = cache_root() / f"kubecheck-{digest}" / "kubecheck"
    return _go_built(target, ["build", "-o", "{out}", "."], KUBECHECK)


def _go_built(target: Path, args: list[str], cwd: Path) -> Path:
    """``target``, made by ``go <args>`` (into a temporary folder, then renamed) unless it
    exists: never a half-written binary, and one build at a time (a file lock)."""
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
                os.replace(out, target)
    return target


if __name__ == "__main__":
    print(helm_binary())
    print(kubecheck_binary())
    sys.exit(0)
