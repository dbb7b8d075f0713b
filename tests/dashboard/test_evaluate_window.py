"""The evaluate_window command: a file or stdin in, verdicts as JSON out, exit 2 naming the field."""

import io
import json
import subprocess
import sys
from pathlib import Path

import pytest
from django.core.management import call_command
from django.core.management.base import CommandError

from tests.testdata import load_json

ROOT = Path(__file__).resolve().parents[2]
CASES = load_json("burrow_evaluator_windows.json")["cases"]
STOPPED = CASES["burrow_evaluator_CheckRules_02"]["input"]
GROUP = CASES["burrow_evaluator_SingleRequest_Incomplete_testgroup2"]["input"]


def run(*args: str, stdin: str | None = None) -> subprocess.CompletedProcess:
    return subprocess.run(
        [sys.executable, "manage.py", "evaluate_window", *args],
        cwd=ROOT,
        input=stdin,
        capture_output=True,
        text=True,
        check=False,
        timeout=60,
    )


def call(*args: str) -> dict:
    out = io.StringIO()
    call_command("evaluate_window", *args, stdout=out)
    return json.loads(out.getvalue())


def test_a_file_gives_status_complete_diagnosis_and_reason(tmp_path: Path) -> None:
    path = tmp_path / "window.json"
    path.write_text(json.dumps(STOPPED))
    result = call(str(path))
    (partition,) = result["partitions"]
    assert partition["status"] == "STOP" and partition["complete"] == 1.0
    assert partition["diagnosis"] == []
    assert partition["reason"].startswith(
        "No commit for 500 s, longer than the window's 400 s span"
    )
    assert result["groups"] == []


def test_stdin_with_a_dash(monkeypatch: pytest.MonkeyPatch) -> None:
    monkeypatch.setattr(sys, "stdin", io.StringIO(json.dumps(GROUP)))
    (group,) = call("-")["groups"]
    assert (group["status"], group["complete"], group["total_lag"]) == ("ERR", 0.0, 2921)
    assert group["partitions"][0]["status"] == "STOP"


def test_stdin_through_the_real_command_line() -> None:
    document = {**STOPPED, "partitions": [{**STOPPED["partitions"][0], "alive": True}]}
    result = run("-", stdin=json.dumps(document))
    assert result.returncode == 0, result.stderr
    (partition,) = json.loads(result.stdout)["partitions"]
    assert partition["status"] == "STALL"
    assert "stalled, not stopped" in partition["reason"]


def test_bad_field_exits_2_naming_the_field() -> None:
    document = json.loads(json.dumps(STOPPED))
    document["partitions"][0]["commits"][2]["offset"] = "3000"
    result = run("-", stdin=json.dumps(document))
    assert result.returncode == 2
    assert "partitions[0].commits[2].offset: must be an integer" in result.stderr
    assert result.stdout == ""


def test_bad_field_through_call_command_carries_returncode_2(tmp_path: Path) -> None:
    path = tmp_path / "bad.json"
    path.write_text(json.dumps({"now_ms": 1, "groups": [{"id": "g", "partitions": [{}]}]}))
    with pytest.raises(CommandError) as error:
        call(str(path))
    assert error.value.returncode == 2
    assert "groups[0].partitions[0].id: is required" in str(error.value)


def test_not_json_exits_2_with_the_position() -> None:
    result = run("-", stdin='{"now_ms": 1,,}')
    assert result.returncode == 2
    assert "not valid JSON: line 1 column 14" in result.stderr


def test_missing_file_exits_2(tmp_path: Path) -> None:
    result = run(str(tmp_path / "nope.json"))
    assert result.returncode == 2
    assert "cannot read" in result.stderr and "nope.json" in result.stderr
