"""The lab's workload simulator: traffic and switchable faults on the real ZooKeeper and broker.

Run it with ``python -m lab.workload`` (see ``__main__``); scenarios are listed in
``docs/SCENARIOS.md``. Layout, one responsibility per module:

- ``spec`` / ``demo``: what a world is made of, and the demo world, as data;
- ``world``: the running world (``topics``, ``producers``, ``consumer_groups``,
  ``zk_consumer``, ``topologies``) and its topic keeper;
- ``scenarios`` / ``params`` / ``runner``: the faults, their parameters, which are active;
- ``server`` / ``control``: the HTTP control endpoint and its client;
- ``spout_stats``: the spouts' per-partition figures as reports; they and every client's
  librdkafka statistics reach Lagwatch's ingest endpoint through the client package
  (``clients/python``, ``lagwatch_client``);
- ``probes``: reading back what the services hold (tests, debugging).
"""
