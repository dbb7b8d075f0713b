"""One Kafka cycle's bookkeeping, and how the adapter reads confluent-kafka's errors.

Every stage of a cycle shares one budget and one result: requests are given what is left of
``timeout_s`` (so the cycle as a whole, not each call, is bounded), offsets carry the time
they were read (time lag interpolates on it), and every failure confined to one group or
partition becomes a ``SourceError`` of the result, never an exception.
"""

from __future__ import annotations

import time
from collections.abc import Callable, Iterable
from concurrent.futures import Future, wait

from confluent_kafka import KafkaError, KafkaException

from collectors.records import CollectionResult, Source, SourceError

__all__ = ["Cycle", "describe_exc", "is_code", "is_transient", "kafka_error", "submit"]

# Coordinator answers that pass within seconds (loading __consumer_offsets after a start or a
# leader change, electing a coordinator): ListGroups is asked again after a short pause.
_TRANSIENT_GROUP_ERRORS = frozenset(
    {KafkaError.COORDINATOR_LOAD_IN_PROGRESS, KafkaError.COORDINATOR_NOT_AVAILABLE}
)


def kafka_error(exc: BaseException) -> KafkaError | None:
    if isinstance(exc, KafkaException) and exc.args and isinstance(exc.args[0], KafkaError):
        return exc.args[0]
    return None


def describe_exc(exc: BaseException | KafkaError) -> str:
    err = exc if isinstance(exc, KafkaError) else kafka_error(exc)
    if err is not None:
        return f"{err.name()}: {err.str()}"
    return f"{type(exc).__name__}: {exc}"


def is_transient(exc: BaseException | KafkaError) -> bool:
    err = exc if isinstance(exc, KafkaError) else kafka_error(exc)
    return err is not None and err.code() in _TRANSIENT_GROUP_ERRORS


def is_code(exc: BaseException, code: int) -> bool:
    err = kafka_error(exc)
    return err is not None and err.code() == code


def submit(keys: list[str], call: Callable[[list[str]], dict[str, Future]]) -> dict[str, Future]:
    """Issue one request; a refusal by the client (e.g. the empty group id "", which old
    tools commit under but the AdminClient will not query) becomes a failed future for each
    key, so it is reported for those groups only and the cycle goes on."""
    try:
        return call(keys)
    except (KafkaException, TypeError, ValueError) as exc:
        failed: Future = Future()
        failed.set_exception(exc)
        return dict.fromkeys(keys, failed)


class Cycle:
    """The mutable bookkeeping of one ``collect`` call: deadline, clock, result."""

    def __init__(self, now_ms: int, timeout_s: float) -> None:
        self.t0 = time.monotonic()
        self.deadline = self.t0 + timeout_s
        self.now_ms = now_ms
        self.result = CollectionResult(source=Source.KAFKA, started_ms=now_ms)

    def remaining(self) -> float:
        # librdkafka rejects a zero timeout as "no timeout" in places: keep a small floor.
        return max(0.01, self.deadline - time.monotonic())

    def clock_ms(self) -> int:
        """``now_ms`` advanced by the time spent so far, so that offsets read late in a slow
        cycle carry the time they were read, which time lag interpolation needs."""
        return self.now_ms + int((time.monotonic() - self.t0) * 1000)

    def error(self, where: str, error: str) -> None:
        self.result.errors.append(SourceError(source=Source.KAFKA, where=where, error=error))

    def gather(self, futures: Iterable[Future]) -> None:
        """Wait for all futures together, bounded by what is left of the cycle's budget."""
        pending = [f for f in futures if not f.done()]
        if pending:
            wait(pending, timeout=max(0.0, self.deadline - time.monotonic()))
