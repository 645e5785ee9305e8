"""``POST /api/v2/replay``: :func:`contextfit.replay` for a stored chat or inline messages.

Like the context preview it writes nothing: no message, branch or audit.
The request's model and settings go over the chat's (as in generation); a
strategy given as ``{"strategy", "label", "options"}`` takes its options as
camelCase settings (``{"stablePrefix": true}``).
"""

from __future__ import annotations

from collections.abc import Callable, Mapping, Sequence
from typing import Any

from ..pipeline.settings import FIELDS
from ..replays.recommend import RETENTION
from ..replays.run import Replay, replay
from ..pipeline.settings import BY_NAME, plan_options
from ..errors import InvalidSettings
from .generation import preview_request
from .providers import Provider
from .store import Store


def strategies_from_json(strategies: Sequence[Any] | None) -> list[Any] | None:
    """The replay's strategies with each mapping's camelCase ``options`` read as settings.

    An option must be a strategy option, named as the request names it: every strategy of
    a replay is fitted with the same model, limits and conversation, so ``contextLimit``
    there would be left out of the fit while the label named it, and a provider or audit
    setting (``temperature``, ``facts``) means nothing to a fit. The strategy and the label
    are checked by :func:`~contextfit.replays.run.variants`, as for a Python caller.

    >>> strategies_from_json(["truncate", {"strategy": "truncate", "options": {"stablePrefix": True}}])
    ['truncate', {'strategy': 'truncate', 'options': {'stable_prefix': True}}]
    >>> strategies_from_json([{"strategy": "truncate", "options": {"contextLimit": 8000}}])
    Traceback (most recent call last):
    ...
    contextfit.errors.InvalidSettings: strategies[0].options.contextLimit is not a strategy option: ...
    """
    if strategies is None:
        return None
    out: list[Any] = []
    for position, entry in enumerate(strategies):
        if isinstance(entry, Mapping):
            where = f"strategies[{position}]"
            options = entry.get("options")
            if options is not None and not isinstance(options, Mapping):
                raise InvalidSettings(f"{where}.options must be an object of settings.")
            for name in options or ():
                setting = BY_NAME.get(name)
                if setting is not None and (setting.target != "plan" or setting.keyword in FIELDS):
                    raise InvalidSettings(f"{where}.options.{name} is not a strategy option: every strategy of a "
                                          f"replay is fitted under the same settings; give it in settings.")
            entry = {**entry, "options": plan_options(options)} if options is not None else dict(entry)
        out.append(entry)
    return out


def replay_chat(
    store: Store,
    providers: Mapping[str, Provider],
    *,
    strategies: Sequence[Any] | None = None,
    facts: Sequence[Any] | None = None,
    progress: Callable[[int, int], Any] | None = None,
    priority: str = RETENTION,
    **request: Any,
) -> Replay:
    """The replay of a stored chat or of inline messages, writing nothing: ``request``
    (``chat_id``, ``messages``, ``provider``, ``model``, ``settings``) is resolved
    as :func:`~contextfit.serving.generation.preview` resolves it. Without ``facts``,
    the ``facts`` setting (the chat's, under the request's) declares them, as it does
    for each generation's audit and on the dashboard's Replay page. ``progress`` is
    :func:`~contextfit.replay`'s (the API's stops a replay past the server's time limit); ``priority``
    the recommendation's (``retention``, ``cost`` or ``cache``)."""
    checked, resolved = preview_request(store, providers, **request)
    chosen = strategies_from_json(strategies)
    if facts is None and resolved.facts:
        facts = list(resolved.facts)
    return replay(checked, settings=resolved.settings, facts=facts, progress=progress, priority=priority,
                  **({"strategies": chosen} if chosen is not None else {}))
