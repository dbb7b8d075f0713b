"""Lagwatch's assignors answer exactly as Apache Kafka's own classes do.

``assignor_oracle/AssignorOracle.java`` runs Kafka's ``RangeAssignor``, ``RoundRobinAssignor``,
``AbstractStickyAssignor`` (clients) and the group coordinator's ``UniformAssignor`` and
``RangeAssignor`` from the lab's Kafka jars (``lab.kafka_dist``, the version the lab broker
runs) on the table tests' groups and on a few hundred random ones: members joining and
leaving, heterogeneous subscriptions, members subscribed to nothing, a partition claimed
twice, static members, member ids beyond the BMP, up to 40 members (past 12 a Java
``HashMap`` grows, which changes its order). Skipped where there is no JDK or no jars; the
random groups come from a fixed seed, so a failure names a reproducible group.
"""

from __future__ import annotations

import json
import random
import shutil
import subprocess
from pathlib import Path

import pytest

from dashboard.whatif import member, range_assign, round_robin, sticky, uniform
from tests.dashboard import test_assignors as tables

ORACLE = Path(__file__).resolve().parent / "assignor_oracle" / "AssignorOracle.java"
OURS = {
    "range": range_assign,
    "roundrobin": round_robin,
    "sticky": sticky,
    "uniform": uniform,
    "server-range": range_assign,
}
TABLES = {
    "range": tables.RANGE,
    "roundrobin": tables.ROUND_ROBIN,
    "sticky": tables.STICKY,
    "uniform": tables.UNIFORM,
}


@pytest.fixture(scope="module")
def oracle(tmp_path_factory):
    # The suite needs both anyway (the lab's broker is these jars on this JDK; scripts/setup
    # installs them): missing, this is a failure to set up, not a test to skip.
    from lab.kafka_dist import installed_libs

    libs = installed_libs()
    assert shutil.which("javac") and shutil.which("java"), "no JDK (javac, java): scripts/setup"
    out = tmp_path_factory.mktemp("oracle")
    classpath = f"{libs}/*"
    subprocess.run(
        ["javac", "-nowarn", "-d", str(out), "-cp", classpath, str(ORACLE)],
        check=True, capture_output=True,
    )  # fmt: skip

    def run(cases: list[dict]) -> list[dict]:
        done = subprocess.run(
            ["java", "-cp", f"{out}:{classpath}", "AssignorOracle"],
            input=json.dumps(cases), capture_output=True, text=True, encoding="utf-8",
            check=True,
        )  # fmt: skip
        return json.loads(done.stdout)

    return run


def _case(members, partitions, assignors) -> dict:
    return {
        "partitions": partitions,
        "members": [
            {
                "id": m.member_id,
                "instance": m.instance_id,
                "topics": sorted(m.subscription),
                "owned": [list(tp) for tp in m.owned],
            }
            for m in members
        ],  # fmt: skip
        "assignors": assignors,
    }


def _members(case: dict):
    return [
        member(m["id"], m["topics"], [tuple(tp) for tp in m["owned"]], m["instance"])
        for m in case["members"]
    ]


def _random_case(rng: random.Random) -> dict:
    topics = [rng.choice("abcdefgh") + str(i) for i in range(rng.randint(1, 4))]
    partitions = {t: rng.randint(0, 12) for t in topics}
    size = rng.choice([rng.randint(1, 7), rng.randint(1, 7), rng.randint(8, 40)])
    prefixes = ["consumer", "c", "m", "app", "\u00e9t\u00e9", "\U0001f600x", "\uff21"]
    ids = dict.fromkeys(f"{rng.choice(prefixes)}-{rng.randint(0, 999)}" for _ in range(size))
    common = [t for t in topics if rng.random() < 0.8] or topics[:1]
    alike = rng.random() < 0.5
    members = [
        {"id": mid, "instance": f"i-{rng.randint(0, 99)}" if rng.random() < 0.3 else None,
         "topics": common if alike else [t for t in topics if rng.random() < 0.6], "owned": []}
        for mid in ids
    ]  # fmt: skip
    if rng.random() < 0.4:  # what an assignor gave an earlier membership (joins and leaves)
        earlier = [m for m in members if rng.random() < 0.7] or members[:1]
        gone = [
            {"id": f"gone-{i}", "instance": None, "topics": common, "owned": []} for i in (0, 1)
        ]
        before = rng.choice([sticky, range_assign, round_robin])(
            _members({"members": earlier + gone[: rng.randint(0, 2)]}), partitions
        )
        for m in members:
            m["owned"] = [list(tp) for tp in before.get(m["id"], [])]
    else:  # anything at all, including topics no longer subscribed
        for t in topics:
            for p in range(partitions[t]):
                if rng.random() < 0.8:
                    rng.choice(members)["owned"].append([t, p])
    assignors = list(OURS)
    if rng.random() < 0.1 and len(members) > 1:  # a partition claimed twice
        one, other = rng.sample(members, 2)
        if one["owned"]:
            other["owned"].append(list(rng.choice(one["owned"])))
            assignors = ["range", "roundrobin", "sticky"]  # the broker never targets one twice
    return {"partitions": partitions, "members": members, "assignors": assignors}


def _compare(cases: list[dict], answers: list[dict]) -> list[str]:
    wrong = []
    for case, answer in zip(cases, answers, strict=True):
        for name in case["assignors"]:
            theirs = answer[name]
            assert not isinstance(theirs, str), (theirs, case)
            theirs = {m: sorted(map(tuple, tps)) for m, tps in theirs.items()}
            ours = OURS[name](_members(case), case["partitions"])
            if ours != theirs:
                wrong.append(f"{name} on {json.dumps(case)}: Kafka {theirs}, Lagwatch {ours}")
    return wrong


def test_the_tables_are_kafkas_answers(oracle) -> None:
    cases = [
        _case(members, partitions, ["server-range", name] if name == "range" else [name])
        for name, table in TABLES.items()
        for _, members, partitions, _ in table
        if members  # Kafka never runs an assignor for a group without members
    ]
    assert _compare(cases, oracle(cases)) == []


def test_random_groups_get_kafkas_answers(oracle) -> None:
    rng = random.Random(16)
    cases = [_random_case(rng) for _ in range(400)]
    wrong = _compare(cases, oracle(cases))
    assert wrong == [], f"{len(wrong)} differ, first: {wrong[:1]}"
