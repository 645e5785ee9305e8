"""What the dashboard's sidebar chose, as views of the one settings object.

:class:`Setup` (Compare) and :class:`ReplaySetup` (Replay) hold a
:class:`~contextfit.pipeline.settings.PlanSettings` — the settings every face
plans with — and the few choices that are not plan settings: which strategies
to compare, and for a replay its ``stable_prefix`` variants and facts. Their
``model``, ``context_limit`` and ``response_reserve`` are the settings' own.
:func:`suggested_setup` is where a conversation's defaults come from.
"""

from __future__ import annotations

from collections.abc import Mapping, Sequence
from dataclasses import dataclass
from typing import Any

from ..errors import ContextfitError
from ..inputs.formats import Conversation
from ..pipeline.plan import BUILTIN_STRATEGIES
from ..pipeline.settings import PlanSettings, conversation_model, plan_options
from ..tokens.models import get_model

#: The strategies whose ``stable_prefix`` variant a replay adds.
STABLE_CAPABLE = ("truncate", "summarize", "clear-tool-results")


class _Limits:
    """The model and limits of a view, read from its settings."""

    __slots__ = ()
    settings: PlanSettings

    @property
    def model(self) -> str:
        return self.settings.model

    @property
    def context_limit(self) -> int:
        return int(self.settings.context_limit)

    @property
    def response_reserve(self) -> int:
        return int(self.settings.response_reserve)


@dataclass(frozen=True, slots=True)
class Setup(_Limits):
    """The Compare page's choices: the plan settings and the strategies compared.

    >>> setup = Setup.of("gpt-4o", 8000, 1000, ("truncate", "manual"), user_name="Ann")
    >>> setup.model, setup.context_limit, setup.response_reserve, setup.strategies
    ('gpt-4o', 8000, 1000, ('truncate', 'manual'))
    >>> setup.settings
    PlanSettings(model='gpt-4o', context_limit=8000, response_reserve=1000, user_name='Ann')
    """

    settings: PlanSettings
    strategies: tuple[str, ...] = BUILTIN_STRATEGIES

    @classmethod
    def of(cls, model: str, context_limit: int, response_reserve: int,
           strategies: Sequence[str] = BUILTIN_STRATEGIES, **keywords: Any) -> Setup:
        """A setup from the sidebar's values; ``keywords`` are further plan settings
        (``summary_tokens``, ``user_name``, ``overrides``…; ``None`` leaves one unchosen)."""
        settings = PlanSettings.from_keywords(model=model, context_limit=int(context_limit),
                                              response_reserve=int(response_reserve), **keywords)
        return cls(settings, tuple(strategies))

    def replace(self, **keywords: Any) -> Setup:
        """This setup with further plan settings (a ``None`` keyword leaves a setting as it is).

        >>> Setup.of("gpt-4o", 8000, 1000).replace(summary_tokens=200, relevance_window=None).settings.options
        mappingproxy({'summary_tokens': 200})
        """
        return Setup(self.settings.replace(**keywords), self.strategies)


@dataclass(frozen=True, slots=True)
class ReplaySetup(_Limits):
    """The Replay page's choices: the plan settings, the strategies, whether each of
    :data:`STABLE_CAPABLE` is also replayed with ``stable_prefix``, and the facts to follow."""

    settings: PlanSettings
    strategies: tuple[str, ...] = BUILTIN_STRATEGIES
    stable_prefix: bool = True
    facts: tuple[Any, ...] = ()

    @classmethod
    def of(cls, model: str, context_limit: int, response_reserve: int, strategies: Sequence[str] = BUILTIN_STRATEGIES,
           *, stable_prefix: bool = True, facts: Sequence[Any] = (),
           overrides: Mapping[str, Mapping[str, Any]] | None = None) -> ReplaySetup:
        """A replay's setup from the sidebar's values; ``overrides`` are Compare's hand edits (block id →
        ``pinned`` / ``manualExcluded`` / ``relevance``): the replay fits with them, so its latest request
        is Compare's plan."""
        return cls(Setup.of(model, context_limit, response_reserve, overrides=overrides or None).settings,
                   tuple(strategies), stable_prefix, tuple(facts))

    def strategy_entries(self) -> list[Any]:
        """The replay's strategies: each chosen one, then the ``stable_prefix`` variants.

        >>> ReplaySetup.of("gpt-4o", 8000, 1000, ("truncate", "manual")).strategy_entries()
        ['truncate', 'manual', {'strategy': 'truncate', 'options': {'stable_prefix': True}}]
        """
        entries: list[Any] = list(self.strategies)
        if self.stable_prefix:
            entries += [{"strategy": name, "options": {"stable_prefix": True}} for name in self.strategies
                        if name in STABLE_CAPABLE]
        return entries


def suggested_setup(conversation: Conversation, model: str | None = None) -> Setup:
    """Defaults for a conversation: its model (else gpt-4o), its suggested
    limit and reserve (a bundle's settings), else the model's.

    >>> from contextfit import load_conversation
    >>> setup = suggested_setup(load_conversation('[{"role": "user", "content": "Hi"}]'), "gpt-4o-mini")
    >>> setup.model, setup.context_limit, setup.response_reserve
    ('gpt-4o-mini', 128000, 16384)
    """
    try:
        info = get_model(conversation_model(conversation, model))
    except ContextfitError:
        info = get_model(conversation_model(conversation))
    return setup_for(info.id, conversation.settings)


def setup_for(model: str, settings: Mapping[str, Any] | None) -> Setup:
    """A known model's setup under JSON settings (a bundle's, a stored chat's): their limit
    and reserve, else the model's window and a quarter of it at most for the reply."""
    info = get_model(model)
    options = plan_options(settings)
    limit = options.get("context_limit", info.context_limit)
    reserve = options.get("response_reserve", min(info.max_output, limit // 4))
    return Setup.of(info.id, int(limit), int(reserve))


def window_note(model: str, limit: int) -> str | None:
    """A note when the chosen context limit passes the model's own window (Compare and Replay plan to
    the limit they are given, which the provider would refuse).

    >>> window_note("gpt-4o", 100_000_000)
    'The context limit, 100,000,000 tokens, is more than gpt-4o takes (128,000): every strategy plans to it all the same, as a what-if.'
    >>> window_note("gpt-4o", 128_000) is None
    True
    """
    window = get_model(model).context_limit
    if limit <= window:
        return None
    return (f"The context limit, {limit:,} tokens, is more than {model} takes ({window:,}): every strategy plans to "
            "it all the same, as a what-if.")
