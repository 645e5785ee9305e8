"""Reading message dicts: roles, kinds, protection marks, tool-call links.

A message is a dict in the OpenAI chat shape with contextfit's extras
(SPEC §3.2). Nothing here mutates a message; everything tolerates odd shapes
(a missing role, ``meta`` that is not a dict, numbers where strings belong)
because messages come from users' pastes and other tools' exports.
"""

from __future__ import annotations

import json
from collections.abc import Callable, Iterable, Mapping, Sequence
from typing import Any

from ..errors import InvalidMessages, shown
from ..jsonpath import lone_surrogate

# Message kinds. ``history`` is the default for chat turns.
SYSTEM = "system"
CHARACTER = "character"
PERSONA = "persona"
LOREBOOK = "lorebook"
MEMORY = "memory"
SUMMARY = "summary"
HISTORY = "history"
EXAMPLE = "example"

#: The message roles SPEC §3.2 allows.
ROLES = ("system", "developer", "user", "assistant", "tool", "function")
ROLE_SET = frozenset(ROLES)
SYSTEM_ROLES = frozenset({"system", "developer"})
TOOL_RESULT_ROLES = frozenset({"tool", "function"})
# The three spellings of the key that links a tool result (or a call) to its partner.
LINK_KEYS = ("tool_call_id", "toolCallId", "callId")


def meta_of(message: dict) -> dict:
    """The message's ``meta`` dict, or an empty one when absent or malformed.

    >>> meta_of({"role": "user", "meta": {"pinned": True}})
    {'pinned': True}
    >>> meta_of({"role": "user", "meta": "oops"})
    {}
    """
    meta = message.get("meta")
    return meta if isinstance(meta, dict) else {}


def check_role(message: Mapping[str, Any], location: str) -> None:
    """Raise ``INVALID_MESSAGES`` at ``<location>.role`` unless the message's role is one
    of :data:`ROLES`: the one check of roles, shared by the engine's doors
    (``plan_prompt``, ``shift_context``, sessions, replays) and the store.

    >>> check_role({"role": "user", "content": "Hi"}, "messages[0]")
    >>> check_role({"role": "wizard"}, "messages[1]")
    Traceback (most recent call last):
    ...
    contextfit.errors.InvalidMessages: role 'wizard' is not one of system, developer, user, assistant, tool, function (at messages[1].role)
    >>> check_role({"content": "Hi"}, "messages[2]")
    Traceback (most recent call last):
    ...
    contextfit.errors.InvalidMessages: each message needs a "role" string, got none (at messages[2].role)
    """
    problem = role_problem(message)
    if problem is not None:
        raise InvalidMessages(problem, location=f"{location}.role")


def role_problem(message: Mapping[str, Any]) -> str | None:
    """What is wrong with the message's role (see :func:`check_role`), or ``None``.

    >>> role_problem({"role": "tool"}), role_problem({"role": 5})
    (None, 'each message needs a "role" string, got 5')
    """
    role = message.get("role")
    if type(role) is str and role in ROLE_SET:
        return None
    if not isinstance(role, str) or not role:
        return f'each message needs a "role" string, got {"none" if "role" not in message else shown(role, 40)}'
    return f"role {shown(role, 40)} is not one of {', '.join(ROLES)}"


def role_of(message: dict) -> str:
    """The role as a string (``""`` when missing)."""
    role = message.get("role")
    return role if isinstance(role, str) else ("" if role is None else str(role))


def kind_of(message: dict) -> str:
    """The block kind: ``meta.kind`` when given, else ``system`` for system and
    developer messages and ``history`` for everything else.

    >>> kind_of({"role": "developer", "content": "Be brief."})
    'system'
    >>> kind_of({"role": "system", "content": "Lore", "meta": {"kind": "lorebook"}})
    'lorebook'
    """
    kind = meta_of(message).get("kind")
    if isinstance(kind, str) and kind:
        return kind
    return SYSTEM if role_of(message) in SYSTEM_ROLES else HISTORY


def explicit_id(message: dict) -> str | None:
    """The message's own id (``id`` or ``meta.id``), or ``None``.

    >>> explicit_id({"id": 7}), explicit_id({"meta": {"id": "m1"}}), explicit_id({})
    ('7', 'm1', None)
    """
    for value in (message.get("id"), meta_of(message).get("id")):
        if isinstance(value, (str, int)) and not isinstance(value, bool) and value != "":
            return str(value)
    return None


def message_id(message: dict, index: int) -> str:
    """A stable id for audits: ``id`` or ``meta.id``, else the position."""
    found = explicit_id(message)
    return str(index) if found is None else found


def link_ids(message: dict) -> tuple[list[str], bool]:
    """The tool-call ids this message carries, and whether it holds a result.

    Ids come from ``tool_calls[*].id`` (OpenAI calls), the top-level
    ``tool_call_id`` / ``toolCallId`` / ``callId`` (equal spellings), and
    Anthropic content parts: ``tool_use.id`` (and other ``*_tool_use`` parts)
    and ``tool_result.tool_use_id`` (and other ``*_tool_result`` parts).

    >>> link_ids({"role": "tool", "tool_call_id": "c1", "content": "42"})
    (['c1'], True)
    >>> link_ids({"role": "assistant", "tool_calls": [{"id": "a"}, {"id": "b"}]})
    (['a', 'b'], False)
    """
    ids: list[str] = []
    is_result = role_of(message) in TOOL_RESULT_ROLES
    for key in LINK_KEYS:
        value = message.get(key)
        if isinstance(value, (str, int)) and not isinstance(value, bool) and value != "":
            ids.append(str(value))
    calls = message.get("tool_calls")
    if isinstance(calls, list):
        for call in calls:
            if isinstance(call, dict):
                call_id = call.get("id")
                if isinstance(call_id, (str, int)) and not isinstance(call_id, bool) and call_id != "":
                    ids.append(str(call_id))
    content = message.get("content")
    if isinstance(content, list):
        for part in content:
            if not isinstance(part, dict):
                continue
            part_type = part.get("type")
            if not isinstance(part_type, str):
                continue
            if part_type.endswith("tool_use"):
                part_id = part.get("id")
                if isinstance(part_id, str) and part_id:
                    ids.append(part_id)
            elif part_type.endswith("tool_result"):
                part_id = part.get("tool_use_id")
                if isinstance(part_id, str) and part_id:
                    ids.append(part_id)
                    is_result = True
    return ids, is_result


def link_states(messages: list[dict]) -> dict[str, tuple[bool, bool]]:
    """For each tool link id in ``messages``: whether every result carrying it answers
    a call, and whether every call carrying it has a result — ``(True, True)`` when its
    groups are whole.

    Results answer calls as the fitting engine groups them (SPEC 3.2): a result answers
    the nearest earlier call with its id that is still unanswered (a second result of
    one call answers it too); results sent before any call with their id are answered
    by the first such call. So an id used by two calls, one of which lost its result,
    is not whole, although both a call and a result carry it.

    >>> link_states([{"role": "assistant", "tool_calls": [{"id": "c1"}]}, {"role": "tool", "tool_call_id": "c1"}])
    {'c1': (True, True)}
    >>> link_states([{"role": "assistant", "tool_calls": [{"id": "c1"}]}, {"role": "tool", "tool_call_id": "c1"},
    ...              {"role": "assistant", "tool_calls": [{"id": "c1"}]}, {"role": "tool", "tool_call_id": "c2"}])
    {'c1': (True, False), 'c2': (False, True)}
    """
    unanswered: dict[str, int] = {}  # id -> its calls still waiting for a result
    called: set[str] = set()
    waiting: dict[str, int] = {}  # id never called yet -> results that carry it
    order: dict[str, None] = {}
    for message in messages:
        ids, is_result = link_ids(message)
        for link in ids:
            order[link] = None
            if is_result:
                if unanswered.get(link):
                    unanswered[link] -= 1
                elif link not in called:
                    waiting[link] = waiting.get(link, 0) + 1
            elif link not in called and waiting.get(link):
                del waiting[link]  # its results came first: this call is answered
                called.add(link)
            else:
                called.add(link)
                unanswered[link] = unanswered.get(link, 0) + 1
    return {link: (not waiting.get(link), not unanswered.get(link)) for link in order}


def message_text(message: dict) -> str:
    """The readable text of a message, for summaries, relevance and previews.

    Text parts are joined; tool calls and results become one short line each.

    >>> message_text({"role": "user", "content": [{"type": "text", "text": "Hi"}]})
    'Hi'
    """
    content = message.get("content")
    pieces: list[str] = []
    if isinstance(content, str):
        pieces.append(content)
    elif isinstance(content, list):
        for part in content:
            text = part_text(part)
            if text:
                pieces.append(text)
    elif content is not None:
        pieces.append(str(content))
    for call in tool_calls_of(message):
        pieces.append(call_line(call["name"], call["arguments"]))
    return "\n".join(pieces)


def part_text(part: Any) -> str:
    """The readable text of one content part (empty for images and opaque data)."""
    if isinstance(part, str):
        return part
    if not isinstance(part, dict):
        return ""
    part_type = part.get("type")
    if part_type == "text" and isinstance(part.get("text"), str):
        return part["text"]
    if part_type == "thinking" and isinstance(part.get("thinking"), str):
        return part["thinking"]
    if isinstance(part_type, str) and part_type.endswith("tool_use"):
        return call_line(str(part.get("name", "tool")), part.get("input"))
    if isinstance(part_type, str) and part_type.endswith("tool_result"):
        inner = part.get("content")
        if isinstance(inner, list):
            return "\n".join(filter(None, (part_text(p) for p in inner)))
        return inner if isinstance(inner, str) else ("" if inner is None else str(inner))
    return ""


def tool_calls_of(message: dict) -> list[dict]:
    """OpenAI ``tool_calls`` (and legacy ``function_call``) as name/arguments pairs."""
    found: list[dict] = []
    calls = message.get("tool_calls")
    if isinstance(calls, list):
        for call in calls:
            function = call.get("function") if isinstance(call, dict) else None
            if isinstance(function, dict):
                found.append({"name": str(function.get("name", "tool")), "arguments": function.get("arguments")})
    legacy = message.get("function_call")
    if isinstance(legacy, dict):
        found.append({"name": str(legacy.get("name", "function")), "arguments": legacy.get("arguments")})
    return found


def call_line(name: str, arguments: Any, limit: int = 160) -> str:
    """One line describing a tool call: ``name(arguments)``, shortened.

    >>> call_line("get_capital", '{"country":"France"}')
    'get_capital({"country":"France"})'
    """
    if arguments is None:
        args = ""
    elif isinstance(arguments, str):
        args = arguments
    else:
        args = json.dumps(arguments, ensure_ascii=False, sort_keys=True, default=str)
    args = " ".join(args.split())
    if len(args) > limit:
        args = args[: limit - 1] + "…"
    return f"{name}({args})"


def clone(value: Any) -> Any:
    """A deep copy of JSON-like data (dicts and lists are copied; leaves shared).

    Much faster than :func:`copy.deepcopy` for message dicts, and enough to
    keep a caller's messages safe from a plugin that edits what it is given.
    """
    kind = type(value)
    if kind is dict:
        copy = value.copy()
        for key, item in copy.items():
            if type(item) is dict or type(item) is list:
                copy[key] = clone(item)
        return copy
    if kind is list:
        return [clone(item) if type(item) is dict or type(item) is list else item for item in value]
    if isinstance(value, dict):
        return {key: clone(item) for key, item in value.items()}
    if isinstance(value, list):
        return [clone(item) for item in value]
    return value


_LONE_SURROGATE = (
    "A lone surrogate (an unpaired \\ud800-\\udfff escape) is in this text: no UTF-8 text can "
    "carry it, so it can be neither sent nor stored. Remove it, or replace it with U+FFFD."
)


def _plain_ascii(value: Any) -> bool:
    """Whether ``value`` is a plain ``{"role", "content"}`` message of ASCII text (no surrogate can hide in it)."""
    if type(value) is dict and len(value) == 2:
        role, content = value.get("role"), value.get("content")
        return type(content) is str and type(role) is str and content.isascii() and role.isascii()
    return False


def refuse_lone_surrogates(value: Any, path: str) -> None:
    """Raise ``INVALID_MESSAGES`` naming the first string at or under ``path``
    that holds a lone surrogate (JSON's ``"\\ud800"``): no UTF-8 text can
    carry one, so it could be neither sent nor stored.

    A plain ``{"role", "content"}`` message of ASCII text is passed in a few
    operations; anything else goes through :func:`contextfit.jsonpath.lone_surrogate`.

    >>> refuse_lone_surrogates({"role": "user", "content": "fine"}, "messages[0]")
    >>> refuse_lone_surrogates({"role": "user", "content": "bad \\ud800"}, "messages[1]")
    Traceback (most recent call last):
    ...
    contextfit.errors.InvalidMessages: A lone surrogate ... (at messages[1].content)
    """
    if _plain_ascii(value):
        return
    where = lone_surrogate(value, path)
    if where is not None:
        raise InvalidMessages(_LONE_SURROGATE, location=where)


def check_message(message: Any, position: int) -> None:
    """:func:`check_messages` for the one message at ``position`` of the caller's list.

    >>> check_message({"role": "user", "content": "Hi"}, 3)
    >>> check_message(None, 3)
    Traceback (most recent call last):
    ...
    contextfit.errors.InvalidMessages: each message must be a dict like {'role': 'user', 'content': '...'}, got NoneType (at messages[3])
    """
    check_messages({position: message}, (position,))  # a mapping of positions reads as the list would


def check_messages(messages: Sequence[Any] | Mapping[int, Any], positions: Iterable[int] | None = None) -> None:
    """Refuse, at its path, the first message no fit would take: one that is
    not a dict, has a role outside :data:`ROLES` (:func:`check_role`) or holds
    a lone surrogate (:func:`refuse_lone_surrogates`) — in one pass over the
    list, or over the ``positions`` of it given in ascending order (a
    session's new and changed messages). Faults are reported in list order,
    and a message's role before its text.

    >>> check_messages([{"role": "user", "content": "Hi"}, {"role": "tool", "tool_call_id": "c", "content": "4"}])
    >>> check_messages([{"role": "user", "content": "Hi \\ud800"}, {"role": "wizard"}])
    Traceback (most recent call last):
    ...
    contextfit.errors.InvalidMessages: A lone surrogate ... (at messages[0].content)
    >>> check_messages([{"role": "user", "content": "Hi"}, "Hello"])
    Traceback (most recent call last):
    ...
    contextfit.errors.InvalidMessages: each message must be a dict like {'role': 'user', 'content': '...'}, got str (at messages[1])
    """
    doubtful: dict[int, Any] = {}  # messages the ASCII fast path cannot clear, by position
    fault: InvalidMessages | None = None
    for position in range(len(messages)) if positions is None else positions:
        message = messages[position]
        if not isinstance(message, dict):
            fault = InvalidMessages(
                f"each message must be a dict like {{'role': 'user', 'content': '...'}}, got {type(message).__name__}",
                location=f"messages[{position}]",
            )
            break
        problem = role_problem(message)
        if problem is not None:
            fault = InvalidMessages(problem, location=f"messages[{position}].role")
            break
        if not _plain_ascii(message):
            doubtful[position] = message
    where = lone_surrogate(doubtful, "messages") if doubtful else None  # one walk: messages[<position>]...
    if where is not None:
        raise InvalidMessages(_LONE_SURROGATE, location=where)
    if fault is not None:
        raise fault


def chat_blocks(
    messages: Sequence[dict], fill: Callable[[str], str], positions: Iterable[int] | None = None, *, first: int = 0
) -> list[dict | None]:
    """The block of each message (of those at ``positions``, when given) of a
    list :func:`check_messages` passed: ``None`` for a hidden one
    (``meta.hidden: true``, SillyTavern's ``is_system``), else a new dict with
    ``fill`` applied to its text (the string content or each text part) and a
    stable id — its own (:func:`explicit_id`), else ``m<position>`` in ``meta``,
    counted from ``first`` (the list's place in the caller's). The caller's
    messages are not edited.

    >>> chat_blocks([{"role": "user", "content": "Hi {{char}}"}, {"role": "user", "content": "x", "meta": {"hidden": True}}],
    ...             lambda text: text.replace("{{char}}", "Sera"), first=4)
    [{'role': 'user', 'content': 'Hi Sera', 'meta': {'id': 'm4'}}, None]
    """
    blocks: list[dict | None] = []
    for position in range(len(messages)) if positions is None else positions:
        message = messages[position]
        meta = meta_of(message)
        if meta.get("hidden") is True:
            blocks.append(None)
            continue
        block = dict(message)
        content = message.get("content")
        if isinstance(content, str):
            block["content"] = fill(content)
        elif isinstance(content, list):
            block["content"] = [
                {**part, "text": fill(part["text"])}
                if isinstance(part, dict) and part.get("type") == "text" and isinstance(part.get("text"), str)
                else part
                for part in content
            ]
        if explicit_id(message) is None:
            block["meta"] = {**meta, "id": f"m{first + position}"}
        blocks.append(block)
    return blocks
