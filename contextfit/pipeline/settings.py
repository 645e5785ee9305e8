"""Settings: the table of every name a chat's JSON settings may hold, and
:class:`PlanSettings`, the one settings object every face plans with.

**The table.** Chats, generation requests and previews carry their settings
as one JSON object (``{"contextStrategy": "summarize", "contextLimit": 8000}``).
:data:`SETTINGS` is the single table of the names allowed there: each one's
keyword, type and meaning. The HTTP layer builds its schema from it; planning
reads it through :meth:`PlanSettings.from_json` (:func:`plan_options`).

**The object.**
Every face plans through :func:`~contextfit.plan_prompt` with one of these:
the CLI and the dashboard build it from their flags and widgets, the API and
generation from a chat's camelCase JSON settings (:meth:`PlanSettings.from_json`),
and SPEC's keyword form (``plan_prompt(messages, model="gpt-4o",
context_strategy="summarize", ...)``) is turned into one in exactly one
place, :meth:`PlanSettings.from_keywords`.

A field left ``None`` means "not chosen": the default applies (the
catalog's limit and reserve, ``truncate``, ``User``), or, when planning a
:class:`~contextfit.Conversation`, what the conversation brings
(:func:`settings_for`).
"""

from __future__ import annotations

import dataclasses
import math
from collections.abc import Mapping, Sequence
from dataclasses import dataclass, field
from types import MappingProxyType
from typing import Any

from ..errors import ContextfitError, InvalidSettings


@dataclass(frozen=True, slots=True)
class Setting:
    """One allowed setting: its JSON name, where it goes, and its type.

    ``kind`` is one of ``int``, ``number``, ``str``, ``bool``, ``object``
    and ``list``; ``target`` is ``plan`` (a ``plan_prompt`` keyword),
    ``provider`` (sent with the request to the model) or ``audit`` (read by
    the generation's audit).
    """

    name: str
    keyword: str
    kind: str
    description: str
    minimum: float | None = None
    maximum: float | None = None
    target: str = "plan"


SETTINGS: tuple[Setting, ...] = (
    Setting(
        "contextStrategy",
        "context_strategy",
        "str",
        "Registered strategy name: truncate, summarize, vector-recall, manual, clear-tool-results, fact-ledger, or a plugin's.",
    ),
    Setting(
        "contextLimit",
        "context_limit",
        "int",
        "The model's context window in tokens (default: the model catalog's).",
        1,
    ),
    Setting(
        "responseReserve",
        "response_reserve",
        "int",
        "Tokens kept free for the reply (default: the model's max output).",
        0,
    ),
    Setting("summaryTokens", "summary_tokens", "int", "summarize: the summary block's maximum size in tokens.", 1),
    Setting("ledgerTokens", "ledger_tokens", "int",
            "fact-ledger: the ledger block's maximum size in tokens (default a quarter of the budget).", 1),
    Setting(
        "summaryScanChars",
        "summary_scan_chars",
        "int",
        "summarize: how many characters of dropped history are read.",
        1,
    ),
    Setting(
        "relevanceWindow",
        "relevance_window",
        "int",
        "vector-recall: how many recent messages form the relevance query.",
        1,
    ),
    Setting("query", "query", "str", "vector-recall: rank lorebook and memory blocks against this text instead."),
    Setting("keep", "keep", "int", "clear-tool-results: how many of the newest tool results stay intact.", 0),
    Setting("excludeTools", "exclude_tools", "list", "clear-tool-results: names of tools whose results are never cleared."),
    Setting(
        "clearAtLeast",
        "clear_at_least",
        "int",
        "clear-tool-results: clear in steps of at least this many tokens (a stable prompt prefix).",
        0,
    ),
    Setting("clearInputs", "clear_inputs", "bool", "clear-tool-results: also empty the arguments of cleared calls."),
    Setting("placeholder", "placeholder", "str", "clear-tool-results: the text of a cleared result ({tool}, {tokens})."),
    Setting(
        "keepThinking",
        "keep_thinking",
        "bool",
        "truncate, summarize, clear-tool-results: false drops older turns' reasoning; unset drops it first when needed.",
    ),
    Setting(
        "toolResultCap",
        "tool_result_cap",
        "int",
        "Every strategy: a tool result over this many tokens is sent as its head and tail with a marker naming "
        "what was cut (default off; 2500 is a good start).",
        1,
    ),
    Setting(
        "stablePrefix",
        "stable_prefix",
        "bool",
        "truncate, summarize, clear-tool-results: cut in steps down to a low-water mark, so the prompt prefix stays cached.",
    ),
    Setting("lowWater", "low_water", "number", "stable_prefix: the share of the budget a cut goes down to (default 0.7).", 0.1, 0.95),
    Setting("scanDepth", "scan_depth", "int", "Lorebook: how many recent messages are scanned for keys.", 0),
    Setting("userName", "user_name", "str", "The name that fills {{user}}."),
    Setting("charName", "char_name", "str", "The name that fills {{char}} (default: the character card's)."),
    Setting(
        "template", "template", "str", "Provider message shape: openai or anthropic (default: the model's provider)."
    ),
    Setting("countExcluded", "count_excluded", "bool", "Count the tokens of blocks that are dropped (default true)."),
    Setting("persona", "persona", "str", "The user's persona text (a protected block)."),
    Setting("character", "character", "object", "A character card (SillyTavern V1, V2 or V3 JSON)."),
    Setting("lorebook", "lorebook", "object", "A lorebook (SillyTavern World Info or character_book JSON)."),
    Setting("memory", "memory", "list", "Memory blocks: strings or {content, relevance} objects."),
    Setting("tools", "tools", "list", "Tool definitions sent with the request (counted in the budget)."),
    Setting(
        "overrides", "overrides", "object", "Edits by block id: {id: {pinned, manualExcluded, relevance, required}}."
    ),
    Setting("temperature", "temperature", "number", "Sampling temperature sent to the provider.", 0, 2, "provider"),
    Setting("facts", "facts", "list", "Must-survive facts (strings, /regex/flags or {text|regex, message, name}): "
            "each generation's audit says whether each is still sent.", target="audit"),
)
BY_NAME: dict[str, Setting] = {setting.name: setting for setting in SETTINGS}

_TYPES: dict[str, tuple[type, ...]] = {
    "int": (int,),
    "number": (int, float),
    "str": (str,),
    "bool": (bool,),
    "object": (dict,),
    "list": (list,),
}


def check_settings(settings: Mapping[str, Any] | None) -> dict[str, Any]:
    """A validated copy of ``settings``: known names, right types, in range.

    ``None`` values are dropped (they mean "use the default").

    >>> check_settings({"contextStrategy": "summarize", "contextLimit": 8000, "persona": None})
    {'contextStrategy': 'summarize', 'contextLimit': 8000}
    >>> check_settings({"contextlimit": 8000})
    Traceback (most recent call last):
    ...
    contextfit.errors.InvalidSettings: Unknown setting 'contextlimit' (did you mean 'contextLimit'?). ...
    """
    if settings is None:
        return {}
    if not isinstance(settings, Mapping):
        raise InvalidSettings(f"settings must be a JSON object, got {type(settings).__name__}.")
    checked = {}
    for name, value in settings.items():
        setting = BY_NAME.get(name)
        if setting is None:
            raise InvalidSettings(unknown_setting_message(name))
        if value is None:
            continue
        _check_value(setting, value)
        checked[name] = value
    return checked


def unknown_setting_message(name: object) -> str:
    """The message for a setting name that is not in :data:`SETTINGS` (with a hint for a wrong case)."""
    close = [known for known in BY_NAME if str(name).lower() == known.lower()]
    hint = f" (did you mean {close[0]!r}?)" if close else ""
    return f"Unknown setting {name!r}{hint}. Known settings: {', '.join(BY_NAME)}."


def _check_value(setting: Setting, value: Any) -> None:
    wanted = _TYPES[setting.kind]
    if not isinstance(value, wanted) or (isinstance(value, bool) and setting.kind != "bool"):
        raise InvalidSettings(f"Setting {setting.name!r} must be of type {_json_type(setting.kind)}, got {value!r}.")
    if isinstance(value, float) and not math.isfinite(value):
        raise InvalidSettings(f"Setting {setting.name!r} must be a finite number, got {value!r}.")
    if setting.minimum is not None and value < setting.minimum:
        raise InvalidSettings(f"Setting {setting.name!r} must be at least {setting.minimum}, got {value!r}.")
    if setting.maximum is not None and value > setting.maximum:
        raise InvalidSettings(f"Setting {setting.name!r} must be at most {setting.maximum}, got {value!r}.")


def _json_type(kind: str) -> str:
    return {"int": "integer", "str": "string", "bool": "boolean", "list": "array"}.get(kind, kind)


def merge_settings(*layers: Mapping[str, Any] | None) -> dict[str, Any]:
    """Settings layered left to right: a later layer's non-null values win.

    >>> merge_settings({"contextLimit": 8000, "persona": "Ann"}, {"contextLimit": 4000}, None)
    {'contextLimit': 4000, 'persona': 'Ann'}
    """
    merged: dict[str, Any] = {}
    for layer in layers:
        merged.update(check_settings(layer))
    return merged


def plan_options(settings: Mapping[str, Any] | None) -> dict[str, Any]:
    """The ``plan_prompt`` keywords for ``settings`` (validated; provider settings left out).

    >>> plan_options({"contextStrategy": "summarize", "summaryTokens": 200, "temperature": 0.2})
    {'context_strategy': 'summarize', 'summary_tokens': 200}
    """
    return {
        BY_NAME[name].keyword: value
        for name, value in check_settings(settings).items()
        if BY_NAME[name].target == "plan"
    }


def provider_options(settings: Mapping[str, Any] | None) -> dict[str, Any]:
    """The settings that travel with the request to the model, as keywords.

    >>> provider_options({"contextLimit": 8000, "temperature": 0.2})
    {'temperature': 0.2}
    """
    return {
        BY_NAME[name].keyword: value
        for name, value in check_settings(settings).items()
        if BY_NAME[name].target == "provider"
    }

#: The model planned for when neither the caller nor the conversation names a known one.
DEFAULT_MODEL = "gpt-4o"
#: What an unchosen ``context_strategy`` and ``user_name`` mean.
DEFAULT_STRATEGY = "truncate"
DEFAULT_USER_NAME = "User"


@dataclass(frozen=True, slots=True)
class PlanSettings:
    """Everything :func:`~contextfit.plan_prompt` plans with, but the messages.

    ``options`` holds the strategy options (``summary_tokens``,
    ``relevance_window``, ``query``, ``count_excluded``, a plugin strategy's
    own keywords); every other keyword is a field.

    >>> PlanSettings.from_keywords(model="gpt-4o", context_limit=8000, summary_tokens=200)
    PlanSettings(model='gpt-4o', context_limit=8000, options={'summary_tokens': 200})
    >>> PlanSettings.from_json({"contextLimit": 8000, "summaryTokens": 200}, model="gpt-4o") == _
    True
    """

    model: str
    context_strategy: Any = None
    context_limit: int | None = None
    response_reserve: int | None = None
    character: Any = None
    persona: str | None = None
    lorebook: Any = None
    memory: Sequence[Any] | None = None
    tools: Sequence[dict] | None = None
    scan_depth: int | None = None
    user_name: str | None = None
    char_name: str | None = None
    template: str | None = None
    overrides: Mapping[str, Mapping[str, Any]] | None = None
    interceptors: Sequence[Any] | None = None
    options: Mapping[str, Any] = field(default_factory=lambda: MappingProxyType({}))

    def __post_init__(self) -> None:
        if not isinstance(self.model, str) or not self.model:
            raise InvalidSettings(f"model must be a model id such as 'gpt-4o', got {self.model!r}.")
        if not isinstance(self.options, Mapping):
            raise InvalidSettings(f"options must be a mapping of strategy options, got {type(self.options).__name__}.")
        # A read-only copy: the settings stay what they were when made, whatever the caller does with its dict.
        object.__setattr__(self, "options", MappingProxyType(dict(self.options)))

    def __repr__(self) -> str:
        chosen = ", ".join(f"{name}={value!r}" for name, value in self._chosen().items())
        options = f", options={dict(self.options)!r}" if self.options else ""
        return f"PlanSettings({chosen}{options})"

    @classmethod
    def from_keywords(cls, **keywords: Any) -> PlanSettings:
        """The settings for SPEC's keyword form: fields by name, every other keyword a strategy option.

        This is the one place keywords become settings. ``None`` means "not
        chosen". Whether an option is one the strategy takes is checked when
        it plans (a plugin strategy names its own).

        >>> PlanSettings.from_keywords(model="gpt-4o", persona=None, query="castle").options
        mappingproxy({'query': 'castle'})
        """
        fields: dict[str, Any] = {}
        options: dict[str, Any] = {}
        for name, value in keywords.items():
            if value is None:
                continue
            (fields if name in FIELDS else options)[name] = value
        if "model" not in fields:
            raise InvalidSettings("plan settings need a model, such as model='gpt-4o'.")
        return cls(**fields, options=options)

    @classmethod
    def from_json(cls, settings: Mapping[str, Any] | None, **keywords: Any) -> PlanSettings:
        """The settings for a chat's camelCase JSON settings (validated by the
        settings table; provider settings such as ``temperature`` left out),
        with ``keywords`` (``model`` at least) on top.

        >>> PlanSettings.from_json({"contextStrategy": "summarize", "temperature": 0.2}, model="gpt-4o")
        PlanSettings(model='gpt-4o', context_strategy='summarize')
        >>> PlanSettings.from_json({"contextLimit": "8000"}, model="gpt-4o")
        Traceback (most recent call last):
        ...
        contextfit.errors.InvalidSettings: Setting 'contextLimit' must be of type integer, got '8000'.
        """
        return cls.from_keywords(**{**plan_options(settings), **keywords})

    def keywords(self) -> dict[str, Any]:
        """The chosen settings as SPEC keywords (the inverse of :meth:`from_keywords`).

        >>> PlanSettings.from_keywords(model="o3", relevance_window=4).keywords()
        {'model': 'o3', 'relevance_window': 4}
        """
        return {**self._chosen(), **self.options}

    def replace(self, **keywords: Any) -> PlanSettings:
        """These settings with ``keywords`` on top (a ``None`` keyword leaves a setting as it is).

        >>> PlanSettings(model="gpt-4o", context_limit=8000).replace(context_strategy="manual", context_limit=None)
        PlanSettings(model='gpt-4o', context_strategy='manual', context_limit=8000)
        """
        chosen = {name: value for name, value in keywords.items() if value is not None}
        return PlanSettings.from_keywords(**{**self.keywords(), **chosen})

    def to_json(self) -> dict[str, Any]:
        """The chosen settings as camelCase chat-settings JSON (what a chat stores).

        Raises ``INVALID_SETTINGS`` for a setting that has no JSON form
        (``interceptors``, a callable option, a parsed card or lorebook:
        :func:`~contextfit.chat_json.conversation_chat` stores those).

        >>> PlanSettings.from_keywords(model="gpt-4o", context_limit=8000, summary_tokens=200).to_json()
        {'contextLimit': 8000, 'summaryTokens': 200}
        """
        out: dict[str, Any] = {}
        for keyword, value in self.keywords().items():
            if keyword == "model":
                continue
            name = _JSON_NAMES.get(keyword)
            if name is None or dataclasses.is_dataclass(value):
                raise InvalidSettings(f"the setting {keyword!r} has no JSON form here; chat settings cannot carry it.")
            out[name] = _plain(value)
        return out

    @property
    def strategy(self) -> Any:
        """The strategy to plan with (``truncate`` when none was chosen)."""
        return DEFAULT_STRATEGY if self.context_strategy is None else self.context_strategy

    def _chosen(self) -> dict[str, Any]:
        return {name: getattr(self, name) for name in FIELDS if getattr(self, name) is not None}


#: The settings' own fields, in order: SPEC's keywords that are not strategy options.
FIELDS: tuple[str, ...] = tuple(f.name for f in dataclasses.fields(PlanSettings) if f.name != "options")
_JSON_NAMES = {setting.keyword: setting.name for setting in SETTINGS if setting.target == "plan"}
#: The parts of a :class:`~contextfit.Conversation` that are settings (its messages are planned).
CONVERSATION_PARTS = ("character", "persona", "lorebook", "memory", "tools")


def _plain(value: Any) -> Any:
    """``value`` with every mapping a dict and every tuple a list, as JSON holds them."""
    if isinstance(value, Mapping):
        return {key: _plain(item) for key, item in value.items()}
    if isinstance(value, (list, tuple)):
        return [_plain(item) for item in value]
    return value


def conversation_parts(conversation: Any) -> dict[str, Any]:
    """A :class:`~contextfit.Conversation`'s character, persona, lorebook, memory
    and tools, as keywords (the ones it has)."""
    parts = {name: getattr(conversation, name, None) for name in CONVERSATION_PARTS}
    return {name: value for name, value in parts.items() if value is not None and value != [] and value != ""}


def conversation_keywords(conversation: Any) -> dict[str, Any]:
    """What a :class:`~contextfit.Conversation` brings to planning, as keywords:
    its character, persona, lorebook, memory and tools, then the settings a
    bundle suggests (camelCase JSON, validated) on top.

    >>> from contextfit import load_conversation
    >>> conversation_keywords(load_conversation('{"contextfit": "conversation", "persona": "Ann",'
    ...     ' "messages": [{"role": "user", "content": "Hi"}], "settings": {"contextLimit": 900}}'))
    {'persona': 'Ann', 'context_limit': 900}
    """
    return {**conversation_parts(conversation), **plan_options(getattr(conversation, "settings", None))}


def settings_for(conversation: Any, settings: PlanSettings | None = None, keywords: Mapping[str, Any] | None = None):
    """``(messages, settings)`` for :func:`~contextfit.plan_prompt`'s arguments: the one
    place where a conversation or messages, a :class:`PlanSettings` and SPEC's
    keywords become what is planned.

    ``conversation`` is a list of message dicts or a :class:`~contextfit.Conversation`;
    then its parts and suggested settings fill what ``settings`` and
    ``keywords`` leave unchosen. ``keywords`` go on top of ``settings``.
    """
    if settings is not None and not isinstance(settings, PlanSettings):
        raise InvalidSettings(
            f"settings must be a PlanSettings (PlanSettings.from_json(...) reads JSON settings), got {type(settings).__name__}."
        )
    chosen = {name: value for name, value in (keywords or {}).items() if value is not None}
    chosen = {**(settings.keywords() if settings is not None else {}), **chosen}
    if isinstance(conversation, (list, tuple)) or not hasattr(conversation, "messages"):
        return conversation, PlanSettings.from_keywords(**chosen)
    return conversation.messages, PlanSettings.from_keywords(**{**conversation_keywords(conversation), **chosen})


def conversation_model(conversation: Any, model: str | None = None) -> str:
    """The catalog id to plan a conversation with: ``model``, else the
    conversation's own when the catalog knows it, else ``gpt-4o``.

    >>> from contextfit import load_conversation
    >>> conversation_model(load_conversation('{"model": "claude-sonnet-4", "messages": []}'))
    'claude-sonnet-4'
    """
    from ..tokens.models import get_model

    if model is not None:
        return model
    chosen = getattr(conversation, "model", None)
    if chosen:
        try:
            return get_model(chosen).id
        except ContextfitError:
            pass
    return DEFAULT_MODEL
