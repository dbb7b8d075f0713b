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

import hashlib
import shutil
import sys
from pathlib import Path

from lab.go_build import go_built
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
    return go_built(target, ["install", f"{HELM_MODULE}@{HELM_VERSION}"], Path.cwd())


def kubecheck_binary() -> Path:
    """The cached kubecheck of these sources, built first if need be."""
    sources = sorted(p for p in KUBECHECK.iterdir() if p.name in ("go.mod", "go.sum", "main.go"))
    digest = hashlib.sha256(b"".join(p.read_bytes() for p in sources)).hexdigest()[:16]
    target = cache_root() / f"kubecheck-{digest}" / "kubecheck"
    return go_built(target, ["build", "-o", "{out}", "."], KUBECHECK)


if __name__ == "__main__":
    print(helm_binary())
    print(kubecheck_binary())
    sys.exit(0)
