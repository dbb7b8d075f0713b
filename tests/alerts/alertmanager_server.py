"""A real Prometheus Alertmanager (Debian's ``prometheus-alertmanager``, installed by
``scripts/setup dev``) for the tests: started on a free loopback port with a minimal
configuration and its storage in a temporary folder, clustering off, ready when ``/-/ready``
answers; stopped after. Its route is docs/ALERTS.md's example: alerts with
``source="lagwatch"`` go to a webhook receiver (a local HTTP server of the test), so a test
sees what Alertmanager itself then notifies, firing and resolved."""

from __future__ import annotations

import json
import shutil
import subprocess
import urllib.request
from pathlib import Path

from tests.alerts.receivers import free_port
from tests.waiting import wait_for

BINARIES = ("prometheus-alertmanager", "alertmanager")

CONFIG = """\
route:
  receiver: nobody
  group_by: ['...']
  group_wait: 0s
  group_interval: 1s
  repeat_interval: 4h
  routes:
    - matchers: ['source="lagwatch"']
      receiver: lagwatch-oncall
receivers:
  - name: nobody
  - name: lagwatch-oncall
    webhook_configs:
      - url: "{hook_url}"
        send_resolved: true
"""


def binary() -> str:
    for name in BINARIES:
        found = shutil.which(name)
        if found:
            return found
    raise RuntimeError(
        "Prometheus Alertmanager is not installed: run scripts/setup dev "
        "(Debian package prometheus-alertmanager)"
    )


class Alertmanager:
    """One Alertmanager process; ``url`` is its base URL (what a Lagwatch channel names)."""

    def __init__(self, workdir: Path, hook_url: str) -> None:
        workdir.mkdir(parents=True, exist_ok=True)
        config = workdir / "alertmanager.yml"
        config.write_text(CONFIG.format(hook_url=hook_url))
        self.port = free_port()
        self.url = f"http://127.0.0.1:{self.port}"
        self.log = (workdir / "alertmanager.log").open("wb")
        self.process = subprocess.Popen(
            [
                binary(),
                f"--config.file={config}",
                f"--storage.path={workdir / 'data'}",
                f"--web.listen-address=127.0.0.1:{self.port}",
                "--cluster.listen-address=",  # no gossip port: a single, private instance
                "--log.level=warn",
            ],
            stdout=self.log,
            stderr=subprocess.STDOUT,
        )
        try:
            wait_for(self._ready, 30, "Alertmanager's /-/ready")
        except BaseException:
            self.stop()
            raise

    def _ready(self) -> bool:
        if self.process.poll() is not None:
            raise RuntimeError(f"Alertmanager exited with {self.process.returncode}")
        try:
            with urllib.request.urlopen(f"{self.url}/-/ready", timeout=2) as r:
                return r.status == 200
        except OSError:
            return False

    def alerts(self) -> list[dict]:
        """``GET /api/v2/alerts``: the alerts it holds that have not ended."""
        with urllib.request.urlopen(f"{self.url}/api/v2/alerts", timeout=5) as r:
            return json.loads(r.read())

    def stop(self) -> None:
        if self.process.poll() is None:
            self.process.terminate()
            try:
                self.process.wait(10)
            except subprocess.TimeoutExpired:
                self.process.kill()
                self.process.wait(5)
        self.log.close()
