"""What a first page view needs, loaded in the dashboard's process once its server is up.

A fresh dashboard process spends its first page view importing the engine,
pandas and the page modules and loading a vocabulary: about a second (1.2 s
of CPU in a cold run of Compare's sample) before its first chart goes out,
while the same process also serves the browser the chart code it needs.
``run_dashboard.py``, the launcher ``make run`` and ``bench.dashboard`` use,
calls :func:`warm` in a background thread as soon as the server accepts
connections. A visitor who comes sooner waits on the same imports (Python
imports a module once, other threads wait for it), never for the work twice.

Only code and one vocabulary are loaded: no conversation is fitted and
nothing a page computes is cached, so the first page view still plans its
conversation as before.
"""

from __future__ import annotations

import importlib
import time

#: What the pages import (``app.py`` and ``pages/compare.py``), the heaviest first.
MODULES = (
    "pandas",
    "pyarrow",
    "contextfit",
    "contextfit.tokens.fast",
    "contextfit.views.breakdown",
    "contextfit.views.budget_bar",
    "contextfit.views.charts",
    "contextfit.views.compare_state",
    "contextfit.views.dashboard",
    "contextfit.views.diff",
    "contextfit.views.presentation",
    "contextfit.views.report",
    "contextfit.views.source_panel",
    "contextfit.views.verdict",
)


def default_model() -> str:
    """The model the dashboard's first page (Compare, its first sample) counts with.

    >>> default_model()
    'gpt-4o'
    """
    from ..inputs.samples import load_sample
    from .dashboard import suggested_setup
    from .sources import sample_keys

    return suggested_setup(load_sample(sample_keys()[0])).model


def warm(model: str | None = None) -> dict[str, float]:
    """Import :data:`MODULES` and load the vocabulary of ``model`` (default :func:`default_model`);
    the seconds each step took (a module already imported takes none).

    >>> sorted(warm())[-2:]
    ['modules', 'vocabulary']
    """
    took: dict[str, float] = {}
    started = time.perf_counter()
    for name in MODULES:
        importlib.import_module(name)
    took["modules"] = time.perf_counter() - started
    from ..tokens.chat_counter import token_counter

    started = time.perf_counter()
    token_counter(model or default_model())  # loads the vocabulary (the counter is cached per profile)
    took["vocabulary"] = time.perf_counter() - started
    return took
