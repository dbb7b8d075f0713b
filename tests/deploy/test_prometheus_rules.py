"""deploy/prometheus/: the rules pass ``promtool check rules`` and their unit tests (``promtool
test rules``), every alert is seen there both firing and not firing, the example configuration
is valid, and the rules' collection threshold is the one the sources page uses.

The unit tests say what each alert does on hand-written series; whether the rules read the
series a real Prometheus stores from a real ``/metrics`` (label names after the scrape
included) is tests/deploy/test_prometheus_live.py's question.
"""

from __future__ import annotations

import re
import subprocess
from pathlib import Path

import yaml

from spark_jobs.evaluator.types import COLLECTION_GAP_POLLS
from tests.deploy.tools import debian_tool

ROOT = Path(__file__).resolve().parents[2]
PROMETHEUS_DIR = ROOT / "deploy" / "prometheus"
RULES = PROMETHEUS_DIR / "lagwatch.rules.yml"
UNIT_TESTS = sorted((PROMETHEUS_DIR / "tests").glob("*.yml"))


def promtool(*args: str | Path) -> subprocess.CompletedProcess[str]:
    return subprocess.run(
        [debian_tool("promtool"), *map(str, args)],
        cwd=PROMETHEUS_DIR, capture_output=True, text=True, check=False, timeout=120,
    )  # fmt: skip


def rules() -> list[dict]:
    return [
        rule for group in yaml.safe_load(RULES.read_text())["groups"] for rule in group["rules"]
    ]


def test_the_rules_pass_promtool_check() -> None:
    result = promtool("check", "rules", RULES)
    assert result.returncode == 0, result.stdout + result.stderr


def test_the_rules_pass_their_unit_tests() -> None:
    assert UNIT_TESTS
    result = promtool("test", "rules", *UNIT_TESTS)
    assert result.returncode == 0, result.stdout + result.stderr


def test_every_alert_is_tested_firing_and_not_firing() -> None:
    """An alert whose unit tests never expect it (or never expect its absence) is untested
    on one side: a typo in a label, or a threshold that always fires, would pass unseen."""
    firing: set[str] = set()
    quiet: set[str] = set()
    for path in UNIT_TESTS:
        for case in yaml.safe_load(path.read_text())["tests"]:
            for test in case.get("alert_rule_test", []):
                (firing if test.get("exp_alerts") else quiet).add(test["alertname"])
    alerts = {rule["alert"] for rule in rules() if "alert" in rule}
    assert alerts - firing == set(), "never tested firing"
    assert alerts - quiet == set(), "never tested quiet"
    assert (firing | quiet) - alerts == set(), "tests of alerts that do not exist"


def test_every_alert_has_a_severity_and_says_what_happened() -> None:
    for rule in rules():
        if "alert" in rule:
            assert rule["labels"]["severity"] in {"critical", "warning"}, rule["alert"]
            assert {"summary", "description"} <= set(rule["annotations"]), rule["alert"]


def test_collection_stopped_is_the_sources_pages_verdict() -> None:
    """Both say "stopped" after ``COLLECTION_GAP_POLLS`` poll intervals without a stored
    cycle (dashboard/ui/queries/health.py: collection_stopped)."""
    (rule,) = [r for r in rules() if r.get("alert") == "LagwatchCollectionStopped"]
    threshold = re.search(r"cluster:lagwatch_polls_since_last_cycle:ratio > (\d+)", rule["expr"])
    assert threshold and int(threshold[1]) == COLLECTION_GAP_POLLS


def test_the_example_configuration_is_valid_and_loads_the_rules() -> None:
    result = promtool("check", "config", PROMETHEUS_DIR / "prometheus.example.yml")
    assert result.returncode == 0, result.stdout + result.stderr
    assert "lagwatch.rules.yml" in result.stdout
