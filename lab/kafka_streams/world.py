"""The lab's streams world: the word count (``app/LabWordCount.java``) as a streams group of
the lab cluster, two instances reading a steady trickle of lines.

``python -m lab.kafka_streams.world`` is the lab's ``streams-app`` service
(``lab/kafka_streams/services.py``). It creates the input and output topics, produces lines to
every input partition, runs two ``StreamsApp`` instances as its children (one application id:
two members, two process ids) and logs ``READY_LINE`` once the group is Stable with a commit on
every input partition. What the product then shows: a group of type "streams" with its
topology and tasks (docs/LAB.md, "Streams groups (KIP-1071) in the lab"). SIGUSR1 pauses both
instances, SIGUSR2 resumes them (``pause_world``).
"""

from __future__ import annotations

import argparse
import logging
import os
import signal
import sys
import threading
import time
from pathlib import Path

from confluent_kafka import ConsumerGroupTopicPartitions, Producer
from confluent_kafka.admin import AdminClient, NewTopic

from lab.kafka_streams import dist
from lab.kafka_streams.app import StreamsApp

log = logging.getLogger("lab.kafka_streams")

APPLICATION_ID = "lab-wordcount"
INPUT = "wordcount-lines"
OUTPUT = "wordcount-counts"
PARTITIONS = 3
INSTANCES = 2
RATE_PER_S = 6  # lines a second, over the partitions
READY_LINE = "streams world: ready"
_READY_TIMEOUT_S = 180.0
_WORDS = ("queue", "stream", "task", "topic", "offset", "member", "lag", "commit")


def create_topics(admin: AdminClient) -> None:
    existing = admin.list_topics(timeout=10).topics
    wanted = [NewTopic(t, PARTITIONS, 1) for t in (INPUT, OUTPUT) if t not in existing]
    for future in admin.create_topics(wanted).values() if wanted else ():
        future.result(timeout=30)


def produce_forever(kafka: str, stop: threading.Event) -> None:
    producer = Producer({"bootstrap.servers": kafka, "linger.ms": 5})
    n = 0
    while not stop.wait(1.0 / RATE_PER_S):
        line = " ".join(_WORDS[(n + i) % len(_WORDS)] for i in range(3))
        producer.produce(INPUT, value=line.encode(), partition=n % PARTITIONS)
        producer.poll(0)
        n += 1
    producer.flush(5)


def committed_partitions(admin: AdminClient) -> set[int]:
    """The input partitions the application has committed on."""
    request = [ConsumerGroupTopicPartitions(APPLICATION_ID)]
    answer = admin.list_consumer_group_offsets(request)[APPLICATION_ID].result(timeout=10)
    return {
        tp.partition for tp in answer.topic_partitions or () if tp.topic == INPUT and tp.offset >= 0
    }


def pause_world(pid: int, paused: bool = True) -> None:
    """Ask the world running as ``pid`` to pause (or resume) both instances."""
    os.kill(pid, signal.SIGUSR1 if paused else signal.SIGUSR2)


def main(argv: list[str] | None = None) -> int:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--run-dir", type=Path, required=True)
    parser.add_argument("--kafka", required=True)
    args = parser.parse_args(argv)
    logging.basicConfig(
        level=logging.INFO, format="%(asctime)s %(levelname)s %(name)s: %(message)s"
    )
    dist.installed()  # a clear error before anything starts when the cache is not filled
    stopping = threading.Event()
    signal.signal(signal.SIGTERM, lambda *_: stopping.set())
    signal.signal(signal.SIGINT, lambda *_: stopping.set())
    # SIGUSR1 pauses both instances (members in the group, nothing processed or committed: a
    # stalled application), SIGUSR2 resumes them; the lines keep coming either way.
    asked: list[str] = []
    signal.signal(signal.SIGUSR1, lambda *_: asked.append("pause"))
    signal.signal(signal.SIGUSR2, lambda *_: asked.append("resume"))

    started = time.monotonic()
    admin = AdminClient({"bootstrap.servers": args.kafka})
    create_topics(admin)
    producer = threading.Thread(
        target=produce_forever, args=(args.kafka, stopping), name="producer", daemon=True
    )
    producer.start()
    apps = [
        StreamsApp(args.kafka, APPLICATION_ID, INPUT, OUTPUT, args.run_dir / f"instance-{i}",
                   client_id=f"{APPLICATION_ID}-{i}")
        for i in range(INSTANCES)
    ]  # fmt: skip
    try:
        for app in apps:
            app.start()
        deadline = started + _READY_TIMEOUT_S
        while not stopping.is_set():
            if not all(app.running for app in apps):
                log.error("an instance exited; its log: %s", [a.log for a in apps])
                return 1
            if committed_partitions(admin) == set(range(PARTITIONS)):
                log.info("%s in %.1f s: group %s, %d instances", READY_LINE,
                         time.monotonic() - started, APPLICATION_ID, INSTANCES)  # fmt: skip
                break
            if time.monotonic() > deadline:
                log.error("no commit on every input partition after %.0f s", _READY_TIMEOUT_S)
                return 1
            stopping.wait(1.0)
        while not stopping.wait(0.5):
            if not all(app.running for app in apps):
                log.error("an instance exited; its log: %s", [a.log for a in apps])
                return 1
            while asked:
                command = asked.pop(0)
                for app in apps:
                    if command == "pause":
                        app.pause()
                    else:
                        app.resume()
                log.info("streams world: %s", command)
        return 0
    finally:
        stopping.set()
        for app in apps:
            app.stop()
        producer.join(10)


if __name__ == "__main__":
    sys.exit(main())
