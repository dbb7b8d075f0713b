"""A real Prometheus (Debian's) for the tests of deploy/: started on a free port with a private
storage folder, scraping one target with deploy/prometheus/'s own configuration and rules.

Readiness is waited on, not slept for: ``/-/ready``, then the target's first successful scrape.
The process is stopped (and its storage removed with the test's folder) when the test ends.
"""

from __future__ import annotations

import json
import subprocess
import urllib.error
import urllib.parse
import urllib.request
from collections.abc import Iterator
from contextlib import contextmanager
from pathlib import Path
from typing import Any

import yaml

from lab.ports import pick_free_ports
from lab.procs import tail
from tests.deploy.tools import debian_tool
from tests.waiting import wait_for

ROOT = Path(__file__).resolve().parents[2]
EXAMPLE_CONFIG = ROOT / "deploy" / "prometheus" / "prometheus.example.yml"
RULES = ROOT / "deploy" / "prometheus" / "lagwatch.rules.yml"
# Every two seconds: rate() and increase() need two samples, and a scrape of the test world
# takes well under a second even on a loaded machine.
INTERVAL = "2s"


class PrometheusError(Exception):
    """The query API answered with an error (a query that does not parse, say)."""


class Prometheus:
    def __init__(self, url: str, log: Path) -> None:
        self.url = url
        self.log = log

    def get(self, path: str, **params: str | list[str]) -> Any:
        query = urllib.parse.urlencode(params, doseq=True)
        try:
            with urllib.request.urlopen(f"{self.url}{path}?{query}", timeout=10) as response:
                body = json.load(response)
        except urllib.error.HTTPError as exc:  # 400 and 422 carry the error document
            body = json.load(exc)
        if body.get("status") != "success":
            raise PrometheusError(f"{body.get('errorType')}: {body.get('error')}")
        return body["data"]

    def query(self, expr: str) -> list[dict]:
        """The instant vector (or scalar, as one sample) ``expr`` gives now."""
        data = self.get("/api/v1/query", query=expr)
        if data["resultType"] in ("scalar", "string"):
            return [{"metric": {}, "value": data["result"]}]
        return data["result"]

    def label_values(self, label: str, match: str | None = None) -> list[str]:
        return self.get(f"/api/v1/label/{label}/values", **({"match[]": match} if match else {}))

    def ready(self) -> bool:
        try:
            with urllib.request.urlopen(f"{self.url}/-/ready", timeout=2) as response:
                return response.status == 200
        except (urllib.error.URLError, OSError):
            return False

    def scraped(self, times: int) -> bool:
        """Whether the target was scraped successfully at least ``times`` times (``up`` is 1
        for each success)."""
        up = self.query('sum_over_time(up{job="lagwatch"}[5m])')
        return bool(up) and float(up[0]["value"][1]) >= times

    def why_not_scraped(self) -> str:
        targets = self.get("/api/v1/targets")["activeTargets"]
        return "; ".join(f"{t['scrapeUrl']}: {t['health']} {t['lastError']}" for t in targets)


def configuration(target: str) -> dict:
    """The shipped example, pointed at ``target`` (host:port), every few seconds."""
    config = yaml.safe_load(EXAMPLE_CONFIG.read_text())
    config["global"].update(scrape_interval=INTERVAL, evaluation_interval=INTERVAL)
    config["rule_files"] = [str(RULES)]
    (job,) = config["scrape_configs"]
    job.update(scrape_timeout=INTERVAL, static_configs=[{"targets": [target]}])
    return config


@contextmanager
def running_prometheus(workdir: Path, target: str) -> Iterator[Prometheus]:
    """Prometheus scraping ``target`` with the shipped rules loaded, once it has scraped it
    twice (so rate() has two samples)."""
    (port,) = pick_free_ports(1)
    config = workdir / "prometheus.yml"
    config.write_text(yaml.safe_dump(configuration(target)))
    log = workdir / "prometheus.log"
    with open(log, "wb") as out:
        process = subprocess.Popen(
            [
                debian_tool("prometheus"),
                f"--config.file={config}",
                f"--storage.tsdb.path={workdir / 'data'}",
                f"--web.listen-address=127.0.0.1:{port}",
            ],
            stdin=subprocess.DEVNULL, stdout=out, stderr=subprocess.STDOUT,
        )  # fmt: skip
    prometheus = Prometheus(f"http://127.0.0.1:{port}", log)
    try:

        def started() -> bool:
            assert process.poll() is None, f"prometheus exited:\n{tail(log)}"
            return prometheus.ready()

        wait_for(started, timeout=30, what="prometheus ready")
        try:
            wait_for(lambda: prometheus.scraped(2), timeout=30, what=f"two scrapes of {target}")
        except AssertionError as exc:
            raise AssertionError(f"{exc}: {prometheus.why_not_scraped()}\n{tail(log)}") from None
        yield prometheus
    finally:
        process.terminate()
        try:
            process.wait(timeout=20)
        except subprocess.TimeoutExpired:
            process.kill()
            process.wait()
