"""Group coordinators asked over Kafka's own protocol (the socket side of ``codec``).

Questions confluent-kafka 2.16 cannot be trusted with, or cannot ask:

* KIP-848 epochs (``GroupClient.describe``). confluent-kafka describes "consumer" protocol
  groups but drops the group epoch, the assignment epoch and the member epochs, which are what
  tell a finished rebalance from one in progress.
* Committed offsets (``GroupClient.fetch_committed``). ``list_consumer_group_offsets``
  crashes the whole process (NULL dereference in librdkafka's OffsetFetch handler, librdkafka
  issue #5040) when a coordinator answers NOT_COORDINATOR, i.e. whenever one moves.
* Classic group descriptions (``GroupClient.describe_classic``). ``describe_consumer_groups``,
  like every coordinator-targeted Admin API call, aborts the process (``Assertion
  eonce->refcnt > 0 failed`` in ``rd_kafka_enq_once_del_source_return``, librdkafka issues
  #4605/#3663, fix in PR #5397, unreleased) when the connection to the coordinator drops
  mid-call, as it does whenever a broker restarts during a collection cycle.
* Share groups (KIP-932: ``GroupClient.list_share_groups``, ``describe_share``,
  ``fetch_share_offsets``) and streams groups (KIP-1071: ``list_typed_groups``,
  ``describe_streams``; their offsets are ``fetch_committed``'s): the AdminClient has no
  call for them at all.

All but the listing ask the coordinators directly, the same way::

    FindCoordinator (every group, one request) ─► ConsumerGroupDescribe / OffsetFetch /
                                                  DescribeGroups (per coordinator, all sent
                                                  before any answer is read; OffsetFetch and
                                                  DescribeGroups in batches of groups)

Two round trips per call once connected (``connection`` keeps the connections). Every API is
asked through the one path below; ``group_apis`` holds what differs between them.

Failures, and why they are shaped so: what concerns one group (a classic group's
GROUP_ID_NOT_FOUND, an unreachable or slow coordinator, a broker without API 69) is that
group's result, with Kafka's error code, because the caller reports per group and goes on.
What concerns the whole call raises: ``BrokerUnreachable`` (no bootstrap broker answers),
``DeadlineExceeded`` (finding coordinators outlived ``timeout_s``), ``WireError`` (a broker
sent bytes we cannot read: a bug to see, not to hide), ``UnsupportedSecurity`` (a setting it
cannot honour, e.g. GSSAPI; raised by the constructor, before any connection). All are
``OSError`` or ``ValueError``. A broker refusing the credentials is a failed connection
(``SaslAuthenticationFailed``, an ``OSError``), reported as an unreachable one is.

A little over 400 lines: one documented method per question callers ask, over the one path.

Not thread-safe: one ``GroupClient`` per thread (the Kafka adapter keeps one per cluster).
``EpochReader`` is the same class under the name it had when it only described epochs.
"""

from __future__ import annotations

import time
from collections import deque
from collections.abc import Mapping, Sequence
from dataclasses import dataclass
from types import TracebackType
from typing import Any, Self

from collectors.kafka_wire.codec import (
    COORDINATOR_NOT_AVAILABLE,
    FIND_COORDINATOR,
    OUR_VERSIONS,
    REQUEST_TIMED_OUT,
    UNSUPPORTED_VERSION,
    ClassicGroup,
    ConsumerGroupEpochs,
    Coordinator,
    GroupOffsets,
    ShareGroupDescription,
    ShareGroupOffsets,
    StreamsGroupDescription,
    choose_version,
    decode_find_coordinator_response,
    encode_find_coordinator_request,
)
from collectors.kafka_wire.connection import (
    Address,
    BrokerConnections,
    BrokerUnreachable,
    Connection,
    DeadlineExceeded,
    wait_readable,
)
from collectors.kafka_wire.group_apis import (
    DESCRIBE,
    SHARE_DESCRIBE,
    SHARE_OFFSETS,
    STREAMS_DESCRIBE,
    Failure,
    GroupApi,
    R,
    by_group,
    coordinator_or_error,
    describe_classic,
    offset_fetch,
    unsupported,
)
from collectors.kafka_wire.listing import GroupListing, list_groups
from collectors.kafka_wire.sasl import Mechanism

__all__ = ["EpochReader", "GroupClient"]

# Requests sent to one connection and not answered yet (as Kafka's clients'
# max.in.flight.requests.per.connection): see GroupClient._ask_coordinators.
_MAX_IN_FLIGHT = 5
# Errors after which a fresh FindCoordinator may well succeed: the group moved, its
# coordinator is loading it, or (FindCoordinator's own answer while __consumer_offsets is
# being created on a new cluster) there is none yet. Retried after Kafka's default
# retry.backoff.ms, doubling up to its retry.backoff.max.ms.
_RETRIABLE = frozenset({14, 15, 16})
_RETRY_BACKOFF_S = 0.1
_MAX_RETRY_BACKOFF_S = 1.0


@dataclass
class _Pending:
    """A request sent to a coordinator, whose answer has not been read yet."""

    conn: Connection
    version: int
    correlation_id: int
    groups: list[str]


class GroupClient:
    """Asks group coordinators about many groups at once; keeps its broker connections
    between calls. ``describe`` gives KIP-848 epochs, ``fetch_committed`` committed offsets,
    ``describe_classic`` classic groups' members and assignments.

    ``config`` is the librdkafka-style client configuration the cluster already has: only
    ``security.protocol``, the ``ssl.*`` and ``sasl.*`` settings (``collectors.kafka_wire.
    sasl.settings``) and ``client.id`` are read.
    """

    def __init__(self, bootstrap_servers: str, config: Mapping[str, Any] | None = None) -> None:
        self._brokers = BrokerConnections(bootstrap_servers, config or {})
        # Each group's coordinator ("host:port") as the last FindCoordinator named it: shown
        # with the group, as DescribeGroups itself does not say who answered.
        self.coordinators: dict[str, str] = {}

    def __enter__(self) -> Self:
        return self

    def __exit__(
        self, exc_type: type[BaseException] | None, exc: BaseException | None,
        tb: TracebackType | None,
    ) -> None:  # fmt: skip
        self.close()

    def close(self) -> None:
        self._brokers.close()

    @property
    def mechanism(self) -> Mechanism | None:
        """The SASL mechanism the connections authenticate with (its token source, for
        OAUTHBEARER), None without SASL."""
        return self._brokers.sasl

    def describe(self, groups: Sequence[str], timeout_s: float) -> dict[str, ConsumerGroupEpochs]:
        """Every group's ``ConsumerGroupEpochs`` (in the order asked), within ``timeout_s``.

        NOT_COORDINATOR, COORDINATOR_LOAD_IN_PROGRESS and COORDINATOR_NOT_AVAILABLE are
        asked again once, with a fresh FindCoordinator, if the deadline allows.
        """
        return self._per_group(DESCRIBE, groups, timeout_s, retries=1)

    def fetch_committed(
        self,
        groups: Sequence[str],
        timeout_s: float,
        *,
        retries: int = 3,
        require_stable: bool = False,
    ) -> dict[str, GroupOffsets]:
        """Every group's committed offsets, all topics (in the order asked), within
        ``timeout_s``: OffsetFetch v8/v9, ``OFFSET_FETCH_BATCH`` groups per request, every
        coordinator's requests sent before any answer is read.

        What replaces ``AdminClient.list_consumer_group_offsets``, which with librdkafka 2.16
        crashes the process when a coordinator answers NOT_COORDINATOR (librdkafka #5040):
        here that answer, COORDINATOR_LOAD_IN_PROGRESS and COORDINATOR_NOT_AVAILABLE (also
        what a coordinator that closed the connection gives) are asked again, up to
        ``retries`` times, each with a fresh FindCoordinator after a pause (0.1 s, doubling),
        if the deadline leaves room. Bounded, because a call that spent its whole deadline
        retrying would leave the caller's next requests none.

        Other per-group errors are that group's result, not raised: GROUP_AUTHORIZATION_FAILED,
        REQUEST_TIMED_OUT (its coordinator did not answer in time), UNSUPPORTED_VERSION (a
        broker older than Kafka 3.0). A group the coordinator does not know (deleted, expired,
        never committed) is answered with no error and no offsets, as Kafka does.
        ``require_stable``: see ``encode_offset_fetch_request``.
        """
        if retries < 0:
            raise ValueError("retries must be >= 0")
        return self._per_group(offset_fetch(require_stable), groups, timeout_s, retries)

    def describe_classic(
        self, groups: Sequence[str], timeout_s: float, *, retries: int = 3
    ) -> dict[str, ClassicGroup]:
        """Every group's ``ClassicGroup`` (in the order asked), within ``timeout_s``:
        DescribeGroups v5/v6, ``DESCRIBE_GROUPS_BATCH`` groups per request, every
        coordinator's requests sent before any answer is read.

        What replaces ``AdminClient.describe_consumer_groups`` for classic groups, which with
        librdkafka 2.16 aborts the process when a coordinator's connection drops mid-call
        (librdkafka #4605/#3663). Retried as in ``fetch_committed``: NOT_COORDINATOR,
        COORDINATOR_LOAD_IN_PROGRESS and COORDINATOR_NOT_AVAILABLE (also what a coordinator
        that closed the connection gives), up to ``retries`` times, with a fresh
        FindCoordinator after a pause (0.1 s, doubling), while the deadline leaves room.

        Other per-group errors are that group's result, not raised. Kafka 4.1 answers a group
        it has no classic group of (never existed, deleted, or a KIP-848 "consumer" group,
        which ``describe`` is for) GROUP_ID_NOT_FOUND with state "Dead" (v6; a v5 broker says
        "Dead" without an error); a group holding only commits made without a member (an
        admin's, or ``assign``-ing consumers) is "Empty" with no members.
        """
        if retries < 0:
            raise ValueError("retries must be >= 0")
        return self._per_group(describe_classic(), groups, timeout_s, retries)

    def list_share_groups(self, brokers: Sequence[Address], timeout_s: float) -> GroupListing:
        """The share groups of the cluster whose brokers are ``brokers`` ((host, port) as its
        metadata names them): ListGroups v5 with the type filter "share", asked of every
        broker at once. A broker too old for the filter (before Kafka 3.7) is in
        ``unsupported``: it has no share groups, which came with Kafka 4.1."""
        deadline = time.monotonic() + timeout_s
        return list_groups(self._brokers, brokers, deadline, types=("share",))

    def describe_share(
        self, groups: Sequence[str], timeout_s: float, *, retries: int = 3
    ) -> dict[str, ShareGroupDescription]:
        """Every share group's members, assignments and epochs (ShareGroupDescribe v1), in the
        order asked; retried and failing per group as ``describe_classic``. A group that is
        not a share group answers GROUP_ID_NOT_FOUND."""
        return self._per_group(SHARE_DESCRIBE, groups, timeout_s, retries)

    def fetch_share_offsets(
        self, groups: Sequence[str], timeout_s: float, *, retries: int = 3
    ) -> dict[str, ShareGroupOffsets]:
        """Every share group's start offset per partition, with the broker's lag where it
        reports one (DescribeShareGroupOffsets v1, KIP-1226, Kafka 4.2+; v0 has none), for
        every partition the group has state for; retried and failing per group as
        ``fetch_committed``."""
        return self._per_group(SHARE_OFFSETS, groups, timeout_s, retries)

    def list_typed_groups(
        self, brokers: Sequence[Address], types: Sequence[str], timeout_s: float
    ) -> GroupListing:
        """The groups of ``types`` (Kafka's GroupType names: "share", "streams"…), each
        with its ``group_type``: ListGroups v5 with that type filter, as ``list_share_groups``.
        Streams groups (KIP-1071) are listed here: the AdminClient does not list them."""
        deadline = time.monotonic() + timeout_s
        return list_groups(self._brokers, brokers, deadline, types=tuple(types))

    def describe_streams(
        self, groups: Sequence[str], timeout_s: float, *, retries: int = 3
    ) -> dict[str, StreamsGroupDescription]:
        """Every streams group's topology, members, tasks and epochs (StreamsGroupDescribe
        v0/v1), in the order asked; retried and failing per group as ``describe_classic``. A
        group that is not a streams group answers GROUP_ID_NOT_FOUND."""
        return self._per_group(STREAMS_DESCRIBE, groups, timeout_s, retries)

    # --- one call ---------------------------------------------------------------------------

    def _per_group(
        self, api: GroupApi[R], groups: Sequence[str], timeout_s: float, retries: int
    ) -> dict[str, R]:
        deadline = time.monotonic() + timeout_s
        wanted = list(dict.fromkeys(groups))
        if not wanted:
            return {}
        results = self._attempt(api, wanted, deadline, timeout_s)
        pause = _RETRY_BACKOFF_S
        for _ in range(retries):
            retry = [g for g in wanted if results[g].error_code in _RETRIABLE]
            if not retry or deadline - time.monotonic() <= 2 * pause:
                break
            time.sleep(pause)
            pause = min(2 * pause, _MAX_RETRY_BACKOFF_S)
            try:
                results.update(self._attempt(api, retry, deadline, timeout_s))
            except (BrokerUnreachable, DeadlineExceeded):
                break  # a retry that cannot even find the coordinators: earlier answers stand
        return {g: results[g] for g in wanted}

    def _attempt(
        self, api: GroupApi[R], groups: list[str], deadline: float, timeout_s: float
    ) -> dict[str, R]:
        results: dict[str, R] = {}
        by_address: dict[Address, list[str]] = {}
        for group, found in self._find_coordinators(api, groups, deadline).items():
            if isinstance(found, Coordinator):
                by_address.setdefault((found.host, found.port), []).append(group)
            else:
                results[group] = api.failed(group, *found)
        results.update(self._ask_coordinators(api, by_address, deadline, timeout_s))
        return results

    def _find_coordinators(
        self, api: GroupApi[Any], groups: list[str], deadline: float
    ) -> dict[str, Coordinator | Failure]:
        """Each group's coordinator, or why there is none, from any broker."""
        errors: list[str] = []
        for conn in self._brokers.brokers(deadline, errors):
            version = choose_version(FIND_COORDINATOR, conn.api_versions)
            if version is None:
                low = OUR_VERSIONS[api.api_key][0]
                why = (
                    f"{conn.name} does not offer FindCoordinator v4+ (Kafka 3.0+), "
                    f"so not {api.name} v{low}+ either"
                )
                return {g: (UNSUPPORTED_VERSION, why) for g in groups}
            body = encode_find_coordinator_request(version, groups)
            try:
                answer = self._brokers.exchange(conn, FIND_COORDINATOR, version, body, deadline)
            except DeadlineExceeded:
                raise
            except OSError as exc:
                errors.append(f"{conn.name}: {exc}")
                continue
            decoded = self._brokers.guarded(conn, decode_find_coordinator_response, answer, version)
            found = {c.key: c for c in decoded.coordinators}
            for c in decoded.coordinators:
                if c.error_code == 0 and c.host:
                    self.coordinators[c.key] = f"{c.host}:{c.port}"
            return {g: coordinator_or_error(found.get(g), conn.name) for g in groups}
        tried = "; ".join(errors) or "no address"
        raise BrokerUnreachable(f"no broker of {self._brokers.bootstrap_text()} reachable: {tried}")

    def _ask_coordinators(
        self,
        api: GroupApi[R],
        by_address: Mapping[Address, list[str]],
        deadline: float,
        timeout_s: float,
    ) -> dict[str, R]:
        """Every coordinator asked before any answer is read, so several coordinators cost
        one round trip, and a slow one fails only its groups.

        A coordinator with more groups than one request holds gets its batches on one
        connection (Kafka answers a connection's requests in order), at most
        ``_MAX_IN_FLIGHT`` unanswered at a time, the next sent as an answer is read: a broker
        reads no request while its previous answer is unsent, so a client that sent every
        batch before reading could fill both sides' socket buffers and stall.
        """
        results: dict[str, R] = {}
        pending: list[_Pending] = []  # sent, in order; answered in that order per connection
        queued: dict[Connection, tuple[int, deque[list[str]]]] = {}  # version, batches

        def fail(groups: list[str], name: str, exc: OSError) -> None:
            if isinstance(exc, DeadlineExceeded):
                code, why = REQUEST_TIMED_OUT, f"no answer within {timeout_s:g} s"
            else:
                code, why = COORDINATOR_NOT_AVAILABLE, f"unreachable: {exc}"
            results.update({g: api.failed(g, code, f"coordinator {name} {why}") for g in groups})

        def abandon(conn: Connection, exc: OSError) -> None:
            """Fail everything still expected of a connection that is gone."""
            for entry in [e for e in pending if e.conn is conn]:
                pending.remove(entry)
                fail(entry.groups, conn.name, exc)
            _, batches = queued.pop(conn, (0, deque()))
            for batch in batches:
                fail(batch, conn.name, exc)

        def send_more(conn: Connection) -> None:
            version, batches = queued[conn]
            in_flight = sum(1 for e in pending if e.conn is conn)
            while batches and in_flight < _MAX_IN_FLIGHT:
                batch = batches.popleft()
                body = api.encode(version, batch)
                try:
                    correlation_id = self._brokers.guarded(conn, conn.send, api.api_key,
                                                   version, body, deadline)  # fmt: skip
                except OSError as exc:
                    fail(batch, conn.name, exc)
                    abandon(conn, exc)
                    return
                pending.append(_Pending(conn, version, correlation_id, batch))
                in_flight += 1

        for address, groups in by_address.items():
            try:
                conn = self._brokers.connection(address, deadline)
            except OSError as exc:
                fail(groups, f"{address[0]}:{address[1]}", exc)
                continue
            version = choose_version(api.api_key, conn.api_versions)
            if version is None:
                why = unsupported(api, conn)
                results.update({g: api.failed(g, UNSUPPORTED_VERSION, why) for g in groups})
                continue
            size = api.batch or len(groups)
            batches = deque(groups[i : i + size] for i in range(0, len(groups), size))
            queued[conn] = (version, batches)
            send_more(conn)

        # Answers are read as they arrive, so that one slow coordinator cannot make the
        # others' answers, already here, miss the deadline.
        while pending:
            conns = list(dict.fromkeys(e.conn for e in pending))
            ready = wait_readable(conns, deadline)
            if not ready:
                for conn in conns:
                    self._brokers.drop(conn)  # its answer may still come: the stream is mid-message
                    abandon(conn, DeadlineExceeded())
                break
            for conn in ready:
                entry = next(e for e in pending if e.conn is conn)  # the oldest: answered first
                pending.remove(entry)
                try:
                    answer = self._brokers.guarded(conn, conn.receive, api.api_key, entry.version,
                                           entry.correlation_id, deadline)  # fmt: skip
                except OSError as exc:
                    fail(entry.groups, conn.name, exc)
                    abandon(conn, exc)
                    continue
                answered = self._brokers.guarded(conn, api.decode, answer, entry.version)
                results.update(by_group(api, entry.groups, answered, conn.name))
                send_more(conn)
        return results


# The name the Kafka adapter and the lab know the client by, from when it only read epochs.
EpochReader = GroupClient
