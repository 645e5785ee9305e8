"""``load_conversation``: read any supported input into a :class:`Conversation`.

The steps: read the source within ``max_bytes`` (before any parsing), spot
a PNG card, decode text, read JSON or JSON Lines, pick the first record of a
dataset, detect the format (unless told), and hand the record to that
format's importer. Every failure is an :class:`InvalidConversation`.
"""

from __future__ import annotations

import os
from collections.abc import Callable
from dataclasses import replace

from contextfit.errors import InvalidConversation
from contextfit.limits import MAX_FILE_BYTES, MAX_LISTED_CONVERSATIONS, MAX_MESSAGES

from .anthropic import import_anthropic
from .cards import import_card
from .conversation import FORMATS, Conversation
from .detect import detect_value, select_record
from .openai import import_openai
from .responses import import_responses
from .png import NO_CARD, card_chunks, import_png_card
from .records import FileConversation, conversation_label, split_records
from .sharegpt import import_sharegpt
from .sillytavern import import_sillytavern_chat, is_header
from .source import (
    PNG_SIGNATURE,
    Parsed,
    check_text,
    decode_text,
    looks_like_json,
    parse_json,
    read_source,
    refuse_lone_surrogates,
    refuse_lone_surrogates_in,
)
from .bundle import import_bundle
from .text import import_text, import_text_record
from .worldinfo import import_world_info

#: The default ``max_bytes``: :data:`contextfit.limits.MAX_FILE_BYTES`.
DEFAULT_MAX_BYTES = MAX_FILE_BYTES

IMPORTERS: dict[str, Callable[[Parsed], Conversation]] = {
    "contextfit": import_bundle,
    "openai": import_openai,
    "openai-responses": import_responses,
    "anthropic": import_anthropic,
    "sillytavern-chat": import_sillytavern_chat,
    "character-card": import_card,
    "world-info": import_world_info,
    "sharegpt": import_sharegpt,
    "text": import_text_record,
}
ALIASES = {
    "sillytavern": "sillytavern-chat",
    "tavernai": "sillytavern-chat",
    "card": "character-card",
    "lorebook": "world-info",
    "worldinfo": "world-info",
    "txt": "text",
    "bundle": "contextfit",
    "responses": "openai-responses",
}


def load_conversation(
    source: str | bytes | os.PathLike,
    format: str | None = None,
    *,
    max_bytes: int = DEFAULT_MAX_BYTES,
) -> Conversation:
    """Read a conversation, character card or lorebook from text, bytes or a path.

    ``source`` is pasted text (``str``), file contents (``bytes``, a PNG card
    included), a path (``pathlib.Path``, or a ``str`` of one line that names
    an existing file) or JSON already parsed (``dict``/``list``, never
    modified). Any other ``str`` is text: a path to a missing file is read as
    a one-line chat, so use :func:`load_conversation_file` (or a ``Path``) to
    be told the file is missing. ``format`` forces one of :data:`FORMATS`; by
    default it is detected. Inputs over ``max_bytes`` are refused before parsing.

    >>> conv = load_conversation("User: Hi!\\nAssistant: Hello. How can I help?")
    >>> conv.format, [m["role"] for m in conv.messages]
    ('text', ['user', 'assistant'])
    >>> load_conversation('{"messages": [{"role": "user", "content": "Hi"}]}').messages[0]["meta"]
    {'id': 'm0', 'kind': 'history'}

    Raises :class:`contextfit.InvalidConversation` (code ``INVALID_CONVERSATION``)
    with a message and a ``location`` (line, JSON path or PNG chunk).
    """
    wanted = format_name(format)
    _check_max_bytes(max_bytes)
    source = _named_file(source)
    return _guarded(lambda: _load(source, wanted, max_bytes))


def load_conversation_file(
    path: str | os.PathLike,
    format: str | None = None,
    *,
    max_bytes: int = DEFAULT_MAX_BYTES,
) -> Conversation:
    """Read the file at ``path`` (a ``str`` or a path object) like :func:`load_conversation`.

    >>> load_conversation_file("/no/such/chat.jsonl")
    Traceback (most recent call last):
    ...
    contextfit.errors.InvalidConversation: There is no file at '/no/such/chat.jsonl'.
    """
    if not isinstance(path, (str, os.PathLike)):
        raise InvalidConversation(f"A path must be a string or a path object, not {type(path).__name__}.", location="input")
    return load_conversation(_as_path(path), format, max_bytes=max_bytes)


def detect_format(source: str | bytes | os.PathLike, *, max_bytes: int = DEFAULT_MAX_BYTES) -> str:
    """The name of the format ``load_conversation`` would use for ``source``.

    >>> detect_format('[{"role": "user", "content": "Hi"}]')
    'openai'
    >>> detect_format("Human: Hi\\n\\nAssistant: Hello")
    'text'
    """
    _check_max_bytes(max_bytes)
    source = _named_file(source)
    return _guarded(lambda: _detect(source, max_bytes))


def format_name(format: str | None) -> str | None:
    """The canonical format name for ``format`` (``None`` means detect)."""
    if format is None:
        return None
    if not isinstance(format, str):
        raise InvalidConversation(f"format must be a string such as 'openai', not {type(format).__name__}.", location="format")
    name = format.strip().lower()
    name = ALIASES.get(name, name)
    if name not in IMPORTERS:
        raise InvalidConversation(f"Unknown format {format!r}. Known formats: {', '.join(FORMATS)}.", location="format")
    return name


#: Longer strings are never taken for a path (PATH_MAX on Linux).
_MAX_PATH = 4096


def _named_file(source: object) -> object:
    """``source`` as a path when it is a ``str`` of one line naming an existing file.

    >>> _named_file("User: hi"), _named_file(__file__) == _as_path(__file__)
    ('User: hi', True)
    """
    if isinstance(source, str) and 0 < len(source) <= _MAX_PATH and "\n" not in source and "\r" not in source:
        try:
            if os.path.isfile(source):
                return _as_path(source)
        except (OSError, ValueError):  # a NUL byte, a name too long for the system
            pass
    return source


def _as_path(path: str | os.PathLike) -> os.PathLike:
    from pathlib import Path

    return path if isinstance(path, os.PathLike) else Path(path)


def _check_max_bytes(max_bytes: int) -> None:
    if not isinstance(max_bytes, int) or isinstance(max_bytes, bool) or max_bytes < 1:
        raise ValueError(f"max_bytes must be a positive whole number of bytes, not {max_bytes!r}.")


def _guarded(read: Callable[[], object]):
    """Run ``read`` so that bad input can only ever surface as InvalidConversation."""
    try:
        return read()
    except InvalidConversation:
        raise
    except RecursionError:
        raise InvalidConversation("The input is nested too deeply to read.", location="input") from None
    except Exception as error:  # a last guard: a bug must not show the user a traceback for their file
        raise InvalidConversation(
            f"contextfit could not read this input ({type(error).__name__}: {error}). "
            "This is a bug in contextfit; please report it together with the file.",
            location="input",
        ) from error


def _load(source: object, wanted: str | None, max_bytes: int) -> Conversation:
    return _read(_prepare(source, max_bytes), wanted, max_bytes)


def _read(data: bytes | str | Parsed, wanted: str | None, max_bytes: int) -> Conversation:
    if isinstance(data, bytes):
        if wanted not in (None, "character-card"):
            raise InvalidConversation(
                f"This is a PNG image: it can hold a character card, not {wanted} data.", location="PNG"
            )
        return import_png_card(data, max_bytes)
    if isinstance(data, str):
        if wanted == "text" or (wanted is None and not looks_like_json(data)):
            refuse_lone_surrogates(data, "input")
            return _held_to_limits(import_text(data), "input")
        if not looks_like_json(data):
            raise InvalidConversation(
                f"The {wanted} format is JSON, but this input is not JSON (it does not start with '{{' or '[').",
                location="line 1",
            )
        data = parse_json(data)
    return _import(data, wanted)


def _prepare(source: object, max_bytes: int) -> bytes | str | Parsed:
    """PNG bytes, checked text, or parsed JSON."""
    data = read_source(source, max_bytes)
    if isinstance(data, bytes):
        if data.startswith(PNG_SIGNATURE):
            return data
        data = decode_text(data)
    if isinstance(data, str):
        check_text(data)
    return data


def _import(parsed: Parsed, wanted: str | None) -> Conversation:
    record, warnings = (parsed, []) if wanted == "sillytavern-chat" else select_record(parsed)
    if isinstance(record.value, list):  # refused before it is read, at the first item over the limit
        allowed = MAX_MESSAGES + (1 if record.value and is_header(record.value[0]) else 0)  # + a metadata line
        if len(record.value) > allowed:
            what = "lines" if record.lines is not None else "list items"
            raise _too_many(f"{len(record.value):,} {what}", record.item_path(allowed))
    refuse_lone_surrogates_in(record)
    name = wanted or detect_value(record.value, record.root)
    try:
        conversation = IMPORTERS[name](record)
    except InvalidConversation as error:
        if wanted is None:
            raise
        raise _mismatch(error, record, wanted) from None
    _held_to_limits(conversation, _message_list_path(record))
    if warnings:
        conversation = replace(conversation, warnings=[*warnings, *conversation.warnings])
    return conversation


def _held_to_limits(conversation: Conversation, location: str) -> Conversation:
    if len(conversation.messages) > MAX_MESSAGES:
        raise _too_many(f"{len(conversation.messages):,} messages", location)
    return conversation


#: The keys of an object record that hold its messages (a request body, ShareGPT, a Responses request).
_MESSAGE_LISTS = ("messages", "conversations", "conversation", "input")


def _message_list_path(record: Parsed) -> str:
    """Where an object record's messages go over the limit: the first item too many of the
    list that holds them (``$.messages[100000]``), else the record itself."""
    value = record.value
    if isinstance(value, dict):
        for key in _MESSAGE_LISTS:
            items = value.get(key)
            if isinstance(items, list) and len(items) > MAX_MESSAGES:
                return f"{record.root}.{key}[{MAX_MESSAGES}]"
    return record.root


def _too_many(count: str, location: str) -> InvalidConversation:
    return InvalidConversation(
        f"This input holds {count}; contextfit reads at most {MAX_MESSAGES:,} messages "
        "(contextfit.limits.MAX_MESSAGES). Split the chat, or load its most recent part.",
        location=location,
    )


def _mismatch(error: InvalidConversation, record: Parsed, wanted: str) -> InvalidConversation:
    """The importer's error, saying what the input looks like when that differs from ``wanted``."""
    try:
        detected = detect_value(record.value, record.root)
    except InvalidConversation:
        return error
    if detected == wanted:
        return error
    return InvalidConversation(
        f"This looks like a {detected} input, not {wanted}: {error.message}", location=error.location
    )


def _detect(source: object, max_bytes: int) -> str:
    data = _prepare(source, max_bytes)
    if isinstance(data, bytes):
        if not card_chunks(data, max_bytes):
            raise InvalidConversation(NO_CARD, location="PNG")
        return "character-card"
    if isinstance(data, str):
        if not looks_like_json(data):
            return "text"
        data = parse_json(data)
    record, _ = select_record(data)
    return detect_value(record.value, record.root)


def list_conversations(
    source: str | bytes | os.PathLike,
    format: str | None = None,
    *,
    max_bytes: int = DEFAULT_MAX_BYTES,
    max_records: int = MAX_LISTED_CONVERSATIONS,
) -> tuple[FileConversation, ...]:
    """Every conversation ``source`` holds, each imported, with a short label.

    A dataset (a JSON list or JSON Lines of records, a DialogStudio dict of
    dialogs, HH-RLHF ``chosen`` transcripts) gives one entry per record,
    where :func:`load_conversation` reads only the first; anything else gives
    one entry. Only the first ``max_records`` records are imported and
    listed; each entry's ``total`` says how many the file holds. A record
    that cannot be read keeps its place with ``error`` set; an input that
    cannot be read at all raises, as ``load_conversation`` does.

    >>> found = list_conversations('[{"conversations": [{"from": "human", "value": "Hi"}]},'
    ...                            ' {"conversations": [{"from": "human", "value": "Bye"}]}]')
    >>> [entry.label for entry in found]
    ['#1 · Hi · 1 message', '#2 · Bye · 1 message']
    """
    wanted = format_name(format)
    _check_max_bytes(max_bytes)
    if not isinstance(max_records, int) or isinstance(max_records, bool) or max_records < 1:
        raise ValueError(f"max_records must be a positive whole number, not {max_records!r}.")
    return _guarded(lambda: _list(_named_file(source), wanted, max_bytes, max_records))


def _list(source: object, wanted: str | None, max_bytes: int, max_records: int) -> tuple[FileConversation, ...]:
    data = _prepare(source, max_bytes)
    if isinstance(data, str) and looks_like_json(data) and wanted != "text":
        data = parse_json(data)
    records = split_records(data) if isinstance(data, Parsed) and wanted != "sillytavern-chat" else []
    if len(records) < 2:
        conversation = _read(data, wanted, max_bytes)
        return (FileConversation(0, "input", conversation_label(conversation), conversation),)
    found, total = [], len(records)
    for index, record in enumerate(records[:max_records]):
        try:
            conversation = _import(record, wanted)
        except InvalidConversation as error:
            label = f"#{index + 1} · unreadable: {error.message}"
            found.append(FileConversation(index, record.root, label, error=error, total=total))
            continue
        label = conversation_label(conversation, index + 1)
        found.append(FileConversation(index, record.root, label, conversation, total=total))
    return tuple(found)
