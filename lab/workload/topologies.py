"""The world's Storm topologies: one `KafkaSpoutSim` per topology, (re)started on demand.

A `KafkaSpoutSim` starts once; restarting a worker or resubmitting a topology means a new
instance. This module keeps what must survive that: the topology id (a worker restart keeps
it, a resubmission gets a new one), the spout settings in force and the bolt's behaviour
(a poison message stays poison across a restart).
"""

from __future__ import annotations

import dataclasses
import itertools
import logging
import threading
import time
from typing import Any

from lab.storm.spout import BoltPolicy, KafkaSpoutSim
from lab.storm.ui_api import TopologyRegistry
from lab.workload.params import ScenarioError
from lab.workload.spec import TopologySpec

log = logging.getLogger(__name__)

_POLICY_FIELDS = {f.name for f in dataclasses.fields(BoltPolicy)}


def topology_instance_id(name: str, counter: int) -> str:
    """Storm's instance id shape, `<name>-<submission counter>-<submit time s>`."""
    return f"{name}-{counter}-{int(time.time())}"


class Topologies:
    def __init__(
        self,
        bootstrap: str,
        zk_hosts: str,
        specs: tuple[TopologySpec, ...],
        spout_defaults: dict[str, Any] | None = None,
        registry: TopologyRegistry | None = None,
    ) -> None:
        # The Storm UI serves whatever is in the registry: a stopped spout is a killed
        # topology and leaves it, a restarted one joins under its (maybe new) id.
        self.registry = registry if registry is not None else TopologyRegistry()
        self._bootstrap = bootstrap
        self._zk_hosts = zk_hosts
        self._specs = {s.name: s for s in specs}
        self._described = set(self._specs)
        self._defaults = dict(spout_defaults or {})
        self._spouts: dict[str, KafkaSpoutSim] = {}
        self._ids: dict[str, str] = {}
        self._overrides: dict[str, dict[str, Any]] = {}
        self._policies: dict[str, BoltPolicy] = {}
        self._counter = itertools.count(1)
        self._lock = threading.RLock()

    # -- lifecycle -----------------------------------------------------------------------
    def start_all(self) -> None:
        for name in sorted(self._described):
            self.start_described(name)

    def stop_all(self) -> None:
        with self._lock:
            spouts = list(self._spouts.values())
            self._spouts.clear()
        for spout in spouts:
            self.registry.remove(spout)
            spout.stop()

    def start_described(self, name: str) -> str:
        """Start (or restart as the same instance) with the settings in force."""
        with self._lock:
            self._stop_locked(name)
            spec = self._spec(name)
            topology_id = self._ids.get(name) or topology_instance_id(name, next(self._counter))
            kwargs = {**self._defaults, **spec.spout, **self._overrides.get(name, {})}
            spout = KafkaSpoutSim(
                bootstrap=self._bootstrap,
                zk_hosts=self._zk_hosts,
                topic=spec.topic,
                topology_name=spec.name,
                spout_id=spec.spout_id,
                zk_root=spec.zk_root,
                topology_id=topology_id,
                policy=self._policies.get(name),
                **kwargs,
            )
            spout.start()
            self.registry.add(spout)
            self._spouts[name] = spout
            self._ids[name] = topology_id
            log.info("topology %s running as %s", name, topology_id)
            return topology_id

    def stop(self, name: str) -> None:
        """Kill the topology's worker: no final commit, ZooKeeper keeps the last progress."""
        with self._lock:
            self._spec(name)
            self._stop_locked(name)

    def _stop_locked(self, name: str) -> None:
        spout = self._spouts.pop(name, None)
        if spout is not None:
            self._policies[name] = spout.policy
            self.registry.remove(spout)
            spout.stop()

    def restart(
        self, name: str, new_id: bool = False, reset: bool = False, **overrides: Any
    ) -> str:
        """Restart a topology. `new_id` resubmits it (a new instance id); `reset` drops the
        scenario settings; other keywords are KafkaSpoutSim arguments or BoltPolicy fields."""
        with self._lock:
            self._spec(name)
            self._stop_locked(name)
            if reset:
                self._overrides.pop(name, None)
                self._policies.pop(name, None)
            policy_changes = {k: v for k, v in overrides.items() if k in _POLICY_FIELDS}
            spout_changes = {k: v for k, v in overrides.items() if k not in _POLICY_FIELDS}
            if policy_changes:
                policy = self._policies.get(name, BoltPolicy())
                self._policies[name] = dataclasses.replace(policy, **policy_changes)
            if spout_changes:
                self._overrides.setdefault(name, {}).update(spout_changes)
            if new_id:
                self._ids[name] = topology_instance_id(name, next(self._counter))
            return self.start_described(name)

    def start_collider(self, victim: str, topic: str) -> str:
        """Submit a copy of `victim` that reads `topic` but keeps victim's spout id: the
        copy-paste mistake behind a spout id collision."""
        with self._lock:
            spec = self._spec(victim)
            base = spec.name.replace(spec.topic, topic) if spec.topic in spec.name else ""
            name = base if base and base != spec.name else f"{spec.name}-{topic}"
            self._specs[name] = dataclasses.replace(spec, name=name, topic=topic)
            self.start_described(name)
            return name

    def remove(self, name: str) -> None:
        """Kill a topology a scenario added and forget it (described ones only stop)."""
        with self._lock:
            self.stop(name)
            if name not in self._described:
                del self._specs[name]
                self._ids.pop(name, None)
                self._overrides.pop(name, None)
                self._policies.pop(name, None)

    def reset_to_spec(self) -> list[str]:
        """Back to the described topologies and settings; return what was restarted."""
        changed = []
        with self._lock:
            for name in list(self._specs):
                if name not in self._described:
                    self._stop_locked(name)
                    del self._specs[name]
                    changed.append(name)
            for name in sorted(self._described):
                drifted = (
                    name in self._overrides
                    or self._current_policy(name) != BoltPolicy()
                    or name not in self._spouts
                    or not self._spouts[name].running
                )
                if drifted:
                    self.restart(name, reset=True)
                    changed.append(name)
        return changed

    # -- faults --------------------------------------------------------------------------
    def set_poison(self, name: str, partition: int, offset: int) -> None:
        spout = self._running(name)
        spout.add_poison(partition, offset)
        log.info("topology %s: offset %d of partition %d is now poison", name, offset, partition)

    def clear_poison(self, name: str) -> None:
        with self._lock:
            spout = self._spouts.get(name)
            if spout is not None:
                spout.clear_poison()
            policy = self._policies.get(name)
            if policy is not None:
                self._policies[name] = dataclasses.replace(policy, poison=frozenset())

    # -- queries -------------------------------------------------------------------------
    def names(self) -> list[str]:
        with self._lock:
            return sorted(self._specs)

    def spec(self, name: str) -> TopologySpec:
        return self._spec(name)

    def on_topic(self, topic: str) -> list[str]:
        with self._lock:
            return sorted(n for n, s in self._specs.items() if s.topic == topic)

    def topology_id(self, name: str) -> str | None:
        with self._lock:
            return self._ids.get(name)

    def spout(self, name: str) -> KafkaSpoutSim | None:
        with self._lock:
            return self._spouts.get(name)

    def spouts(self) -> list[KafkaSpoutSim]:
        with self._lock:
            return list(self._spouts.values())

    def status(self) -> dict[str, dict[str, Any]]:
        with self._lock:
            items = [(n, self._specs[n], self._spouts.get(n)) for n in sorted(self._specs)]
        out = {}
        for name, spec, spout in items:
            entry: dict[str, Any] = {
                "topic": spec.topic,
                "spout_id": spec.spout_id,
                "zk_root": spec.zk_root,
                "topology_id": self.topology_id(name),
                "running": bool(spout and spout.running),
                "overrides": self._overrides.get(name, {}),
            }
            if spout is not None:
                stats = spout.stats()
                policy = spout.policy
                entry.update(
                    emitted=stats.emitted,
                    acked=stats.acked,
                    failed=stats.failed,
                    pending=stats.pending,
                    restarts=stats.restarts,
                    last_error=stats.last_error,
                    poison=sorted(policy.poison),
                    fail_share=policy.fail_share,
                    timeout_share=policy.timeout_share,
                    partitions={
                        p.partition: {
                            "committed_to": p.manager.committed_to,
                            "emitted_to_offset": p.manager.emitted_to_offset,
                            "pending": p.manager.pending,
                            "failed": p.failed,
                            "acked": p.acked,
                            "ignored_failures": p.manager.ignored_failures,
                            "skipped_messages": p.manager.skipped_messages,
                            "out_of_range_jumps": p.manager.out_of_range_jumps,
                        }
                        for p in stats.partitions
                    },
                )
            out[name] = entry
        return out

    def _current_policy(self, name: str) -> BoltPolicy:
        spout = self._spouts.get(name)
        return spout.policy if spout is not None else self._policies.get(name, BoltPolicy())

    def _running(self, name: str) -> KafkaSpoutSim:
        with self._lock:
            self._spec(name)
            spout = self._spouts.get(name)
        if spout is None:
            raise ScenarioError(f"topology {name!r} is not running")
        return spout

    def _spec(self, name: str) -> TopologySpec:
        try:
            return self._specs[name]
        except KeyError:
            raise ScenarioError(
                f"no topology {name!r}; known: {', '.join(sorted(self._specs))}"
            ) from None
