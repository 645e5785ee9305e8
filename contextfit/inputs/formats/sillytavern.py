"""SillyTavern (and TavernAI) chats: JSON Lines, a metadata line, then messages.

Each message has ``name``, ``is_user``, ``mes`` and often ``send_date``,
``is_system`` (hidden from the prompt), ``swipes``/``swipe_id`` and ``extra``.
``mes`` is what is sent; swipes are kept only as a count. A chat with
several characters (a group chat or a TavernAI "room") names the speaker
of every assistant message.
"""

from __future__ import annotations

import re
from datetime import datetime, timezone
from typing import Any

from contextfit.errors import InvalidConversation
from contextfit.inputs.messages import HISTORY

from .conversation import Conversation
from .fields import as_model, child, describe, optional_str, plural, wrong_type
from .source import Parsed

HEADER_KEYS = ("user_name", "character_name", "character_names", "chat_metadata", "create_date")
# Character cards carry ``create_date`` too; these keys mean "not a chat's metadata line".
_NOT_HEADER_KEYS = ("mes", "first_mes", "spec", "data", "entries", "messages")

_SEND_DATE_TAVERN = re.compile(
    r"(\d{4})-(\d{1,2})-(\d{1,2}) @(\d{1,2})h (\d{1,2})m (\d{1,2})s(?: (\d{1,3})ms)?\Z"
)
_SEND_DATE_HUMAN = re.compile(r"([A-Za-z]{3,9})\.? (\d{1,2}), (\d{4}),? (\d{1,2}):(\d{2})(?::(\d{2}))? ?([AaPp][Mm])\Z")
_MONTHS = {
    name: number
    for number, names in enumerate(
        (("january", "jan"), ("february", "feb"), ("march", "mar"), ("april", "apr"), ("may",),
         ("june", "jun"), ("july", "jul"), ("august", "aug"), ("september", "sep", "sept"),
         ("october", "oct"), ("november", "nov"), ("december", "dec")),
        start=1,
    )
    for name in names
}


def is_header(item: Any) -> bool:
    """Whether ``item`` is a chat's first (metadata) line rather than a message."""
    if not isinstance(item, dict) or any(key in item for key in _NOT_HEADER_KEYS):
        return False
    return any(key in item for key in HEADER_KEYS)


def is_message(item: Any) -> bool:
    """Whether ``item`` looks like a SillyTavern chat message."""
    return isinstance(item, dict) and "mes" in item and ("is_user" in item or "name" in item)


def import_sillytavern_chat(parsed: Parsed) -> Conversation:
    """Read a SillyTavern or TavernAI chat (JSON Lines, or the same lines as a JSON list)."""
    value = parsed.value
    if isinstance(value, dict):
        items = [(parsed.root, value)]
    elif isinstance(value, list):
        items = [(parsed.item_path(index), item) for index, item in enumerate(value)]
    else:
        raise InvalidConversation(
            f"This is not a SillyTavern chat: expected JSON Lines of messages (got {describe(value)}).",
            location=parsed.root,
        )
    header: dict = {}
    if items and is_header(items[0][1]):
        header = items.pop(0)[1]
    if not items and not header:
        raise InvalidConversation("This SillyTavern chat has no metadata line and no messages.", location=parsed.root)
    warnings = header_warnings(header)
    for path, item in items:
        if not isinstance(item, dict):
            raise wrong_type(path, "an object (a chat message)", item)
        if "mes" not in item:
            raise InvalidConversation(f"{path} is not a chat message: it has no 'mes' (the message text).", location=path)
    speakers = {
        item.get("name") for _, item in items
        if item.get("is_user") is not True and isinstance(item.get("name"), str) and not _is_narrator(item)
    }
    named = header.get("character_names")
    group = len(speakers) > 1 or (isinstance(named, list) and len(named) > 1)
    messages = [read_message(item, path, index, group) for index, (path, item) in enumerate(items)]
    warnings.extend(message_warnings(messages, items))
    models = [m for _, item in items if (m := as_model(_extra(item).get("model")))]
    return Conversation(messages=messages, format="sillytavern-chat", model=models[-1] if models else None, warnings=warnings)


def read_message(item: dict, path: str, index: int, group: bool) -> dict:
    """One chat line as a message dict with ``meta``."""
    text = item.get("mes")
    if not isinstance(text, str):
        raise wrong_type(child(path, "mes"), "a string", text)
    speaker = optional_str(item, "name", path) or None
    is_user = item.get("is_user") is True
    role = "user" if is_user else ("system" if _is_narrator(item) else "assistant")
    message: dict[str, Any] = {"role": role, "content": text}
    if group and role == "assistant" and speaker:
        message["name"] = speaker
    meta: dict[str, Any] = {"id": f"m{index}", "kind": HISTORY}
    if speaker:
        meta["speaker"] = speaker
    if item.get("is_system") is True:
        meta["hidden"] = True
    send_date = item.get("send_date")
    if isinstance(send_date, (str, int, float)) and not isinstance(send_date, bool):
        meta["sendDate"] = send_date
        iso = parse_send_date(send_date)
        if iso:
            meta["sendDateIso"] = iso
    swipes = item.get("swipes")
    if isinstance(swipes, list) and len(swipes) > 1:
        meta["swipes"] = len(swipes)
        swipe_id = item.get("swipe_id")
        if isinstance(swipe_id, int) and not isinstance(swipe_id, bool):
            meta["swipeId"] = swipe_id
    message["meta"] = meta
    return message


def _extra(item: dict) -> dict:
    extra = item.get("extra")
    return extra if isinstance(extra, dict) else {}


def _is_narrator(item: dict) -> bool:
    return _extra(item).get("type") == "narrator"


def header_warnings(header: dict) -> list[str]:
    """What the metadata line holds that the prompt would use but we do not."""
    warnings = []
    metadata = header.get("chat_metadata")
    metadata = metadata if isinstance(metadata, dict) else {}
    note = metadata.get("note_prompt")
    if isinstance(note, str) and note.strip():
        warnings.append("The chat's Author's Note (chat_metadata.note_prompt) is not included.")
    world = metadata.get("world_info")
    if isinstance(world, str) and world.strip():
        warnings.append(f"The chat is bound to the lorebook {world!r}, which is not in this file; load it separately.")
    for key in ("notes", "scenario"):
        text = header.get(key)
        if isinstance(text, str) and text.strip():
            warnings.append(f"The chat's {key!r} text (in its metadata line) is not included.")
    return warnings


def message_warnings(messages: list[dict], items: list[tuple[str, dict]]) -> list[str]:
    """Counts of things recognised on messages but not used."""
    warnings = []
    hidden = sum(1 for message in messages if message["meta"].get("hidden"))
    if hidden:
        warnings.append(
            f"{plural(hidden, 'message is', 'messages are')} hidden (is_system): kept with "
            "meta.hidden: true, and not sent."
        )
    swiped = sum(1 for message in messages if "swipes" in message["meta"])
    if swiped:
        warnings.append(
            f"{plural(swiped, 'message has', 'messages have')} alternative swipes; only the chosen "
            "one (mes) is used and the count is kept in meta.swipes."
        )
    reasoning = sum(1 for _, item in items if isinstance(_extra(item).get("reasoning"), str) and _extra(item)["reasoning"])
    if reasoning:
        warnings.append(f"Model reasoning stored on {plural(reasoning, 'message')} (extra.reasoning) is not included.")
    attached = sum(1 for _, item in items if any(_extra(item).get(key) for key in ("image", "file", "files", "inline_image")))
    if attached:
        warnings.append(f"Attachments (images or files) on {plural(attached, 'message')} are not loaded.")
    return warnings


def parse_send_date(value: str | int | float) -> str | None:
    """A ``send_date`` as ISO 8601 when it can be read, else ``None``.

    Numbers are epoch milliseconds (UTC); strings are SillyTavern's
    ``2023-4-21 @20h 02m 47s 124ms``, its later ``April 21, 2023 8:02pm``
    (local times, so no offset), or ISO already.

    >>> parse_send_date("2023-4-21 @20h 02m 47s 124ms")
    '2023-04-21T20:02:47.124'
    >>> parse_send_date("April 21, 2023 8:02pm")
    '2023-04-21T20:02:00'
    >>> parse_send_date(1674563371558)
    '2023-01-24T12:29:31.558Z'
    """
    try:
        if isinstance(value, str):
            text = value.strip()
            if text.isdigit():
                return _from_epoch(int(text))
            return _from_text(text)
        return _from_epoch(value)
    except (ValueError, OverflowError, OSError):
        return None


def _from_epoch(number: float) -> str | None:
    seconds = number / 1000 if abs(number) >= 100_000_000_000 else number  # ms, or plain seconds
    moment = datetime.fromtimestamp(seconds, tz=timezone.utc)
    return moment.isoformat(timespec="milliseconds").replace("+00:00", "Z")


def _from_text(text: str) -> str | None:
    if len(text) > 64:
        return None
    match = _SEND_DATE_TAVERN.match(text)
    if match:
        year, month, day, hour, minute, second, millis = match.groups()
        moment = datetime(int(year), int(month), int(day), int(hour), int(minute), int(second),
                          int(millis or 0) * 1000)
        return moment.isoformat(timespec="milliseconds")
    match = _SEND_DATE_HUMAN.match(text)
    if match:
        month_name, day, year, hour, minute, second, half = match.groups()
        month = _MONTHS.get(month_name.lower())
        if month is None:
            return None
        hour_24 = int(hour) % 12 + (12 if half.lower() == "pm" else 0)
        return datetime(int(year), month, int(day), hour_24, int(minute), int(second or 0)).isoformat()
    return datetime.fromisoformat(text.replace("Z", "+00:00")).isoformat()
