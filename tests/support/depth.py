"""How deep the property tests go: hypothesis' profiles, and :func:`examples` that scales with them.

* ``contextfit`` (loaded by tests/conftest.py, every run): hypothesis' own default of
  :data:`EVERYDAY` examples, and a per-example deadline of :data:`DEADLINE`. The deadline
  is generous, so a slow or loaded machine does not fail a test, but an example that
  takes far longer than its peers (a pathological input, a near-hang) does. Tests whose
  examples legitimately take longer say why where they turn the deadline off.
* ``deep`` (``make test-deep``: ``pytest -m hypothesis --hypothesis-profile=deep``, which CI
  also runs): :data:`DEEP_SCALE` times as many examples everywhere.

A test that wants more (or fewer) examples than the default asks for
``examples(n)`` rather than a fixed ``max_examples=n``: ``n`` in the everyday run, and
:data:`DEEP_SCALE` times ``n`` under ``deep``, so the deep profile really runs more.
"""

from __future__ import annotations

from datetime import timedelta

from hypothesis import HealthCheck, settings

EVERYDAY = 100  # hypothesis' default max_examples: the everyday run keeps today's depth
DEEP_SCALE = 3
# Typical examples take up to 0.25 s on a loaded 2-core machine (the linear-parsing check of the
# importers up to 1.4 s, under its own 5 s deadline): 5 s is twenty times the slow end.
DEADLINE = timedelta(seconds=5)

# A health check that fails a test for being slow to generate would make speed an assertion.
settings.register_profile(
    "contextfit", deadline=DEADLINE, suppress_health_check=[HealthCheck.too_slow]
)
settings.register_profile(
    "deep", parent=settings.get_profile("contextfit"), max_examples=EVERYDAY * DEEP_SCALE
)


def examples(everyday: int) -> int:
    """``max_examples`` for a test: ``everyday`` in the everyday run, scaled with the loaded profile."""
    return scaled(everyday, settings().max_examples)


def scaled(everyday: int, max_examples: int) -> int:
    """``everyday`` examples scaled by a profile's ``max_examples`` against :data:`EVERYDAY`.

    >>> scaled(60, EVERYDAY), scaled(60, settings.get_profile("deep").max_examples), scaled(1, 10)
    (60, 180, 1)
    """
    return max(1, round(everyday * max_examples / EVERYDAY))
