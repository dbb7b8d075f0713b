"""The decode_offsets_record command: JSON out, exit 2 with a reason on bad bytes."""

import json
import subprocess
import sys
from pathlib import Path

from tests.testdata import load_json

ROOT = Path(__file__).resolve().parents[2]
VECTORS = load_json("consumer_offsets_vectors.json")


def run(*args: str) -> subprocess.CompletedProcess:
    return subprocess.run(
        [sys.executable, "manage.py", "decode_offsets_record", *args],
        cwd=ROOT,
        capture_output=True,
        text=True,
        check=False,
        timeout=60,
    )


def first(predicate) -> dict:
    return next(v for v in VECTORS if predicate(v))


def test_offset_commit_record_prints_the_documented_fields() -> None:
    vector = first(
        lambda v: (
            not v["expect_error"]
            and v["value_hex"]
            and v["expected"].get("type") == "offset_commit"
        )
    )
    result = run(vector["key_hex"], vector["value_hex"])
    assert result.returncode == 0, result.stderr
    record = json.loads(result.stdout)
    assert record["type"] == "offset_commit"
    for field in ("group", "topic", "partition", "offset", "commit_timestamp_ms"):
        assert record[field] == vector["expected"][field]


def test_group_metadata_record_lists_members_and_assignments() -> None:
    vector = first(
        lambda v: (
            not v["expect_error"]
            and v["value_hex"]
            and v["expected"].get("type") == "group_metadata"
            and v["expected"].get("members")
        )
    )
    record = json.loads(run(vector["key_hex"], vector["value_hex"]).stdout)
    assert record["type"] == "group_metadata"
    assert record["generation"] == vector["expected"]["generation"]
    member = record["members"][0]
    assert set(member) >= {"member_id", "client_id", "client_host", "assignment"}


def test_tombstone_says_deleted() -> None:
    vector = first(lambda v: not v["expect_error"] and v["value_hex"] is None)
    record = json.loads(run(vector["key_hex"]).stdout)
    assert record["deleted"] is True


def test_undecodable_bytes_exit_2_with_a_reason() -> None:
    result = run("0001")
    assert result.returncode == 2
    assert "cannot decode" in result.stderr and "truncated" in result.stderr


def test_non_hex_input_exits_2() -> None:
    result = run("zz")
    assert result.returncode == 2
    assert "not hexadecimal" in result.stderr
