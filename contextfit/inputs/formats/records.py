"""Files that hold several conversations: a dataset's records, one by one.

``load_conversation`` reads the first record of a dataset and says so in a
warning; :func:`split_records` finds every record, so a caller (the
dashboard's picker, :func:`~contextfit.inputs.formats.load.list_conversations`)
can offer each one. Three shapes hold several conversations:

- a JSON list (or JSON Lines) of records — ShareGPT ``{"conversations"}``,
  ``{"messages"}`` datasets, HH-RLHF ``{"chosen"}`` lines;
- a DialogStudio dict of dialogs keyed by name (each with a ``log``);
- an HH-RLHF ``{"chosen": [transcript, ...]}`` object.
"""

from __future__ import annotations

from dataclasses import dataclass

from contextfit.errors import InvalidConversation
from contextfit.inputs.messages import message_text, role_of

from .conversation import Conversation
from .detect import RECORD_KEYS
from .fields import child, plural
from .source import Parsed

#: How much of the first user line a label shows.
LABEL_CHARS = 60


@dataclass(frozen=True, slots=True)
class FileConversation:
    """One conversation of a file: its place, a short label, and what it read as.

    ``conversation`` is ``None`` when this record could not be read; ``error``
    then says why (the other records of the file still load). ``total`` is
    how many conversations the file holds, listed or not.
    """

    index: int
    location: str
    label: str
    conversation: Conversation | None = None
    error: InvalidConversation | None = None
    total: int = 1


def split_records(parsed: Parsed) -> list[Parsed]:
    """Every conversation ``parsed`` holds, each as its own document.

    A document that is one conversation gives a list of itself.

    >>> [r.root for r in split_records(Parsed([{"conversations": []}, {"conversations": []}]))]
    ['$[0]', '$[1]']
    >>> [r.root for r in split_records(Parsed({"a": {"log": []}, "b": {"log": []}}))]
    ['$.a', '$.b']
    >>> split_records(Parsed({"chosen": ["Human: a", "Human: b"]}))[1].value
    {'chosen': 'Human: b'}
    """
    value = parsed.value
    if isinstance(value, list) and value and _is_record(value[0]):
        return [parsed.record(index) for index in range(len(value))]
    if isinstance(value, dict) and len(value) > 1 and "log" not in value:
        if all(isinstance(dialog, dict) and isinstance(dialog.get("log"), list) for dialog in value.values()):
            return [Parsed(dialog, None, child(parsed.root, key)) for key, dialog in value.items()]
    if isinstance(value, dict) and isinstance(value.get("chosen"), list) and len(value["chosen"]) > 1:
        rejected = value.get("rejected")
        return [
            Parsed(_transcript(text, rejected, index), None, child(child(parsed.root, "chosen"), index))
            for index, text in enumerate(value["chosen"])
        ]
    return [parsed]


def _is_record(item: object) -> bool:
    """Whether a list item is a whole conversation (as ``select_record`` decides)."""
    if not isinstance(item, dict) or "role" in item or "from" in item or "mes" in item:
        return False
    return any(key in item for key in RECORD_KEYS)


def _transcript(text: object, rejected: object, index: int) -> dict:
    record: dict = {"chosen": text}
    if isinstance(rejected, list) and index < len(rejected):
        record["rejected"] = rejected[index]
    return record


def conversation_label(conversation: Conversation, number: int | None = None) -> str:
    """A short label: the first user line and the message count.

    >>> from contextfit.inputs.formats import load_conversation
    >>> conversation_label(load_conversation("User: How do I sort a list?\\nAssistant: sorted()"), 3)
    '#3 · How do I sort a list? · 2 messages'
    """
    first = next((message_text(m) for m in conversation.messages if role_of(m) == "user"), None)
    if first is None:
        first = next((message_text(m) for m in conversation.messages), "")
    line = next((part.strip() for part in first.splitlines() if part.strip()), "(no text)")
    if len(line) > LABEL_CHARS:
        line = line[: LABEL_CHARS - 1].rstrip() + "…"
    head = f"#{number} · " if number is not None else ""
    return f"{head}{line} · {plural(len(conversation.messages), 'message')}"
