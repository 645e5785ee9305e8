"""fitting: the host (:func:`shift_context`), the strategy and interceptor registries,
proposals, results and the built-in strategies.

``host.py`` runs a strategy and never trusts a plugin; ``analysis.py`` is what it knows of a chat
before any strategy runs (roles, protection, tool groups, counts); ``results.py`` the reasons,
decisions and :class:`FitResult`; ``registry.py`` the registries and entry points;
``strategies/`` one module per built-in. Optional machinery, fenced: ``strategies/carried_walk.py``
carries truncate's walk from one fit of a growing chat to the next (a 1,000-turn replay takes a
quarter less time with it; without it every answer is the same).

Imports tokens, inputs and the top-level shared modules, nothing higher.
"""
