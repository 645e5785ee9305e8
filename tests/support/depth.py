"""How deep the property tests go: hypothesis' profiles, and :func:`examples` that scales with them.

* ``contextfit`` (loaded by tests/conftest.py, every run): :data:`EVERYDAY` examples (half
  hypothesis' own default of :data:`REFERENCE`), and a per-example deadline of :data:`DEADLINE`. The deadline
  is generous, so a slow or loaded machine does not fail a test, but an example that
  takes far longer than its peers (a pathological input, a near-hang) does. Tests whose
  examples legitimately take longer say why where they turn the deadline off.
* ``deep`` (``make test-deep``: ``pytest -m hypothesis --hypothesis-profile=deep``, which CI
  also runs): :data:`DEEP_SCALE` times the reference's examples everywhere, six times the
  everyday run's.

A test that wants more (or fewer) examples than the default asks for
``examples(n)`` rather than a fixed ``max_examples=n``: ``n`` is its depth at the reference
(hypothesis' default), so it runs ``n / 2`` examples in the everyday run and
:data:`DEEP_SCALE` times ``n`` under ``deep``, which really runs more.
"""

from __future__ import annotations

from datetime import timedelta

from hypothesis import HealthCheck, settings

REFERENCE = 100  # hypothesis' default max_examples, the depth examples(n) is written against
EVERYDAY = REFERENCE // 2  # the everyday run: CI's deep run covers the rest
DEEP_SCALE = 3
# Typical examples take up to 0.25 s on a loaded 2-core machine (the linear-parsing check of the
# importers up to 1.4 s, under its own 5 s deadline): 5 s is twenty times the slow end.
DEADLINE = timedelta(seconds=5)

# A health check that fails a test for being slow to generate would make speed an assertion.
settings.register_profile(
    "contextfit", max_examples=EVERYDAY, deadline=DEADLINE, suppress_health_check=[HealthCheck.too_slow]
)
settings.register_profile(
    "deep", parent=settings.get_profile("contextfit"), max_examples=REFERENCE * DEEP_SCALE
)


def examples(depth: int) -> int:
    """``max_examples`` for a test of ``depth`` examples at :data:`REFERENCE`, scaled with the loaded profile."""
    return scaled(depth, settings().max_examples)


def scaled(depth: int, max_examples: int) -> int:
    """``depth`` examples (at :data:`REFERENCE`) scaled by a profile's ``max_examples``.

    >>> scaled(60, EVERYDAY), scaled(60, settings.get_profile("deep").max_examples), scaled(1, 10)
    (30, 180, 1)
    """
    return max(1, round(depth * max_examples / REFERENCE))
