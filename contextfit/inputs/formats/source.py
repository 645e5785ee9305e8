"""Turning what the user gave (text, bytes, a path, parsed JSON) into data.

Everything here fails with :class:`InvalidConversation` and a message that
says what is wrong and where: the size limit is checked before anything is
read or decoded, bytes must be UTF-8 (or carry a UTF-16 byte-order mark),
and JSON errors name the line and column.
"""

from __future__ import annotations

import json
import os
from dataclasses import dataclass
from typing import Any

from contextfit.errors import InvalidConversation
from contextfit.jsonpath import lone_surrogate
from contextfit.inputs.messages import clone

PNG_SIGNATURE = b"\x89PNG\r\n\x1a\n"

# Magic numbers of files people upload by mistake, so the error can name them.
_OTHER_BINARY = (
    (b"\xff\xd8\xff", "a JPEG image"),
    (b"GIF87a", "a GIF image"),
    (b"GIF89a", "a GIF image"),
    (b"%PDF", "a PDF document"),
    (b"PK\x03\x04", "a ZIP archive (or an Office document)"),
    (b"\x1f\x8b", "a gzip archive"),
    (b"RIFF", "a RIFF file (a WEBP image, WAV sound or AVI video)"),
)


@dataclass(frozen=True, slots=True)
class Parsed:
    """JSON read from the input: one document, or one value per JSONL line.

    ``lines`` holds the 1-based line number of each item when the input was
    JSON Lines (``value`` is then the list of those items), else ``None``;
    ``root`` is the path that error messages put in front of JSON paths.
    """

    value: Any
    lines: tuple[int, ...] | None = None
    root: str = "$"

    def item_path(self, index: int) -> str:
        """Where item ``index`` of a top-level list came from: ``line 3: $`` or ``$[2]``."""
        if self.lines is not None and 0 <= index < len(self.lines):
            return f"line {self.lines[index]}: $"
        return f"{self.root}[{index}]"

    def record(self, index: int) -> Parsed:
        """Item ``index`` of a top-level list, as its own document."""
        return Parsed(self.value[index], None, self.item_path(index))


_SURROGATE = (
    "A lone surrogate (an unpaired \\ud800-\\udfff escape, often half of an emoji cut in two) is "
    "in this input: no UTF-8 text can carry it. Remove it, or replace it with U+FFFD."
)


def refuse_lone_surrogates(value: object, path: str) -> None:
    """Raise ``INVALID_CONVERSATION`` at the JSON path (or the line and column of
    pasted text) of the first lone surrogate in ``value``."""
    where = lone_surrogate(value, path)
    if where is None:
        return
    if isinstance(value, str):
        try:
            value.encode("utf-8")
        except UnicodeEncodeError as error:  # where in the text: the encoder knows
            line = value.count("\n", 0, error.start) + 1
            column = error.start - (value.rfind("\n", 0, error.start) + 1) + 1
            where = f"line {line}, column {column}"
    raise InvalidConversation(_SURROGATE, location=where)


def refuse_lone_surrogates_in(parsed: Parsed) -> None:
    """:func:`refuse_lone_surrogates` for parsed JSON, naming the line of a JSON Lines item."""
    if parsed.lines is None:
        refuse_lone_surrogates(parsed.value, parsed.root)
        return
    for index, item in enumerate(parsed.value):
        refuse_lone_surrogates(item, parsed.item_path(index))


def _megabytes(size: int) -> str:
    return f"{size / (1024 * 1024):.1f} MB"


def _too_big(size: int, max_bytes: int) -> InvalidConversation:
    return InvalidConversation(
        f"The input is {_megabytes(size)} ({size} bytes); the limit is {_megabytes(max_bytes)} "
        f"({max_bytes} bytes). Load a smaller file, or raise max_bytes.",
        location="input",
    )


def read_source(source: object, max_bytes: int) -> str | bytes | Parsed:
    """The input as text, bytes, or already-parsed JSON, within ``max_bytes``.

    A ``str`` is text; ``bytes`` are an upload; an ``os.PathLike`` is a file
    to read; a ``dict`` or ``list`` is JSON someone already parsed (copied, so
    the caller's objects are never touched).
    """
    if isinstance(source, str):
        # len() is a lower bound of the UTF-8 size: refuse huge pastes before encoding them.
        if len(source) > max_bytes:
            raise _too_big(len(source), max_bytes)
        size = len(source.encode("utf-8", "surrogatepass"))
        if size > max_bytes:
            raise _too_big(size, max_bytes)
        return source
    if isinstance(source, (bytes, bytearray, memoryview)):
        size = source.nbytes if isinstance(source, memoryview) else len(source)
        if size > max_bytes:
            raise _too_big(size, max_bytes)
        return bytes(source)
    if isinstance(source, os.PathLike):
        return read_file(source, max_bytes)
    if isinstance(source, (dict, list)):
        try:
            return Parsed(clone(source))
        except RecursionError:
            raise InvalidConversation("The data is nested too deeply to read.", location="$") from None
    raise InvalidConversation(
        f"Cannot read a {type(source).__name__}: give pasted text (str), file contents (bytes), "
        "a path (pathlib.Path), or parsed JSON (dict or list).",
        location="input",
    )


def read_file(path: str | os.PathLike, max_bytes: int) -> bytes:
    """The bytes of the file at ``path``, refusing files over ``max_bytes`` unread."""
    shown = os.fspath(path)
    try:
        if os.path.isdir(shown):
            raise InvalidConversation(f"{shown!r} is a folder, not a file.", location=str(shown))
        size = os.path.getsize(shown)
        if size > max_bytes:
            raise _too_big(size, max_bytes)
        with open(shown, "rb") as handle:
            data = handle.read(max_bytes + 1)
    except InvalidConversation:
        raise
    except FileNotFoundError:
        raise InvalidConversation(f"There is no file at {shown!r}.", location=str(shown)) from None
    except PermissionError:
        raise InvalidConversation(f"The file {shown!r} cannot be read (permission denied).", location=str(shown)) from None
    except (OSError, ValueError) as error:
        raise InvalidConversation(f"The file {shown!r} cannot be read: {error}.", location=str(shown)) from None
    if len(data) > max_bytes:  # the file grew while we looked
        raise _too_big(len(data), max_bytes)
    return data


def decode_text(data: bytes) -> str:
    """Bytes as text: UTF-8 (a BOM is dropped), or UTF-16 when it starts with its BOM."""
    for magic, what in _OTHER_BINARY:
        if data.startswith(magic):
            raise InvalidConversation(
                f"This is {what}, not a conversation, character card or lorebook.", location="byte 0"
            )
    if data.startswith((b"\xff\xfe", b"\xfe\xff")):
        try:
            return data.decode("utf-16")
        except UnicodeDecodeError as error:
            raise InvalidConversation(
                f"This UTF-16 text is damaged at byte {error.start}.", location=f"byte {error.start}"
            ) from None
    try:
        return data.decode("utf-8-sig")
    except UnicodeDecodeError as error:
        line = data.count(b"\n", 0, error.start) + 1
        raise InvalidConversation(
            f"This is not UTF-8 text: byte {error.start} (0x{data[error.start]:02x}, line {line}) "
            "cannot be decoded. Save the file as UTF-8, or upload a PNG character card as an image.",
            location=f"byte {error.start}",
        ) from None


def check_text(text: str) -> None:
    """Refuse empty input and binary data that happened to decode."""
    if not text.strip():
        raise InvalidConversation(
            "The input is empty: paste a conversation or choose a file.", location="input"
        )
    sample = text[:4096]
    nul = sample.find("\x00")
    if nul >= 0:
        raise InvalidConversation(
            "This looks like binary data, not text (it contains NUL characters).",
            location=f"character {nul}",
        )
    controls = sum(1 for char in sample if char < " " and char not in "\t\n\r\f\v" or char == "\x7f")
    if controls * 10 > len(sample):
        raise InvalidConversation(
            "This looks like binary data, not text (too many control characters).", location="input"
        )


def looks_like_json(text: str) -> bool:
    """Whether the text should be read as JSON (it opens an object or an array)."""
    stripped = text.lstrip()
    if stripped.startswith("{"):
        return True
    if stripped.startswith("["):
        rest = stripped[1:].lstrip()
        # "[Scene: a tavern]" is prose; a JSON array opens with a value or closes at once.
        return not rest or rest[0] in '{["-0123456789]tfnN'
    return False


def parse_json(text: str) -> Parsed:
    """One JSON document, or JSON Lines (one value per line); errors name the line."""
    try:
        return Parsed(json.loads(text))
    except json.JSONDecodeError as error:
        document_error = error
    except RecursionError:
        raise InvalidConversation("The JSON is nested too deeply to read.", location="$") from None
    except ValueError as error:  # e.g. an integer with more digits than Python will convert
        raise InvalidConversation(f"The JSON cannot be read: {error}.", location="$") from None
    lines = text.split("\n")
    first = next((number for number, line in enumerate(lines) if line.strip()), None)
    if first is not None and first != len(lines) - 1 and _parses(lines[first]):
        return _parse_json_lines(lines)
    raise _json_error(document_error, text)


def _parses(line: str) -> bool:
    try:
        json.loads(line)
    except (ValueError, RecursionError):
        return False
    return True


def _parse_json_lines(lines: list[str]) -> Parsed:
    values: list[Any] = []
    numbers: list[int] = []
    for index, line in enumerate(lines):
        if not line.strip():
            continue
        try:
            values.append(json.loads(line))
        except json.JSONDecodeError as error:
            cut_off = error.pos >= len(line.rstrip())
            detail = "the line ends too early (cut off?)" if cut_off else f"{error.msg} at column {error.colno}"
            raise InvalidConversation(
                f"Line {index + 1} is not valid JSON: {detail}. Each line of a JSON Lines file "
                "must hold one complete JSON value.",
                location=f"line {index + 1}, column {error.colno}",
            ) from None
        except RecursionError:
            raise InvalidConversation(
                f"Line {index + 1} is nested too deeply to read.", location=f"line {index + 1}"
            ) from None
        except ValueError as error:
            raise InvalidConversation(
                f"Line {index + 1} cannot be read: {error}.", location=f"line {index + 1}"
            ) from None
        numbers.append(index + 1)
    return Parsed(values, tuple(numbers))


def _json_error(error: json.JSONDecodeError, text: str) -> InvalidConversation:
    location = f"line {error.lineno}, column {error.colno}"
    if error.pos >= len(text.rstrip()):
        return InvalidConversation(
            f"The JSON ends too early (line {error.lineno}, column {error.colno}: {error.msg}): "
            "it looks cut off. Was the whole file pasted?",
            location=location,
        )
    return InvalidConversation(
        f"Line {error.lineno} is not valid JSON: {error.msg} at column {error.colno}.",
        location=location,
    )
