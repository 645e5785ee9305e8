"""Chat settings as JSON (camelCase) and as :func:`~contextfit.plan_prompt` keywords.

Chats, generation requests and previews carry their settings as one JSON
object (``{"contextStrategy": "summarize", "contextLimit": 8000}``). This
module is the single table of the names allowed there: each one's keyword,
type and meaning. The HTTP layer builds its schema from it; planning reads
it through :meth:`contextfit.PlanSettings.from_json` (:func:`plan_options`).
"""

from __future__ import annotations

import math
from collections.abc import Mapping
from dataclasses import dataclass
from typing import Any

from ..errors import InvalidSettings


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
