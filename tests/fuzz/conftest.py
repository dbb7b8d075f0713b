"""The Hypothesis profile of the fuzz tests: bounded and derandomized, so CI never flakes.

``lagwatch-ci`` (the default) runs each property on a fixed set of examples derived from the
test's name: the same inputs on every run and machine, until the test or Hypothesis changes.
No example database is used (nothing replayed from an earlier run; Hypothesis still keeps
its caches in ``.hypothesis/``, which it git-ignores itself).
``LAGWATCH_FUZZ_PROFILE=lagwatch-deep`` runs ten times as many random examples, for a
developer looking for trouble by hand; ``benchmarks/bench_fuzz.py`` is the long run.
"""

from __future__ import annotations

import os

from hypothesis import HealthCheck, settings

# Per-property budget: enough to reach every branch of the parsers (each property takes
# ~1-5 s), small enough that the fuzz tests stay well under a minute in the suite.
CI_EXAMPLES = 150

settings.register_profile(
    "lagwatch-ci",
    max_examples=CI_EXAMPLES,
    deadline=None,
    derandomize=True,
    database=None,
    print_blob=True,
    # The documents are large by design; Django's test client and the database make some
    # examples slow. Neither is a problem of the input generation.
    suppress_health_check=[HealthCheck.too_slow, HealthCheck.data_too_large,
                           HealthCheck.function_scoped_fixture],
)  # fmt: skip
settings.register_profile(
    "lagwatch-deep",
    parent=settings.get_profile("lagwatch-ci"),
    max_examples=CI_EXAMPLES * 10,
    derandomize=False,
)
settings.load_profile(os.environ.get("LAGWATCH_FUZZ_PROFILE", "lagwatch-ci"))
