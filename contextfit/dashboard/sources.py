"""Where the conversation of the Compare and Replay pages comes from, without Streamlit.

A :class:`Source` is what the sidebar's "Conversation" section hands the
pages: the conversation, a name for it (the URL and the HTML report show it)
and a key that changes exactly when the input does. It is a built-in
sample, pasted text, uploaded files or a chat stored by the API (or by
Compare's "Send"). The rules live here:

- :func:`combine` joins several uploaded files — a chat, a character card,
  a World Info file, a persona — into one conversation, as a hand-written
  contextfit bundle would (``formats/bundle.py``);
- :func:`lorebook_summary` explains a World Info file that came alone, and
  :func:`with_lorebook` puts it beside a chat;
- :func:`chat_conversation` reads a stored chat as a conversation, and
  :func:`choose_chat` keeps the chat menu on a chat that is there;
- :func:`query_for` and :func:`read_query` keep the source in the URL
  (``?sample=roleplay``, ``?upload=chat.jsonl``, ``?chat=chat_49c4``).
"""

from __future__ import annotations

import hashlib
from collections.abc import Mapping, Sequence
from dataclasses import dataclass, field, replace
from typing import Any

from ..errors import InvalidConversation
from ..inputs.formats import Conversation, FileConversation, list_conversations, load_conversation
from ..inputs.formats.fields import plural
from ..inputs.lorebook import DEFAULT_SCAN_DEPTH, Lorebook
from ..inputs.samples import SAMPLES, get_sample, sample_text
from ..pipeline.settings import CONVERSATION_PARTS
from .exports import chat_stem, file_stem

KINDS = ("sample", "paste", "upload", "chat")
#: What each uploaded file is for, when several are combined.
PARTS = ("chat", "card", "lorebook", "persona")
#: Keys shown in a lorebook's summary at most.
SUMMARY_KEYS = 8


@dataclass(frozen=True, slots=True)
class UploadedBytes:
    """One file the user uploaded, kept in the browser session: its name, bytes and content hash.

    >>> UploadedBytes("chat.txt", b"hello").digest
    'a7b6eda801e5347d'
    """

    name: str
    data: bytes
    digest: str = field(default="", compare=False)

    def __post_init__(self) -> None:
        if not self.digest:  # hashed once, when the file arrives, not on every rerun
            object.__setattr__(self, "digest", digest(self.data))


@dataclass(frozen=True, slots=True)
class Source:
    """The conversation the Compare page shows, and where it came from.

    ``kind`` is one of :data:`KINDS`; ``name`` is what a person calls it (the
    sample's key, the file names joined by " + ", "pasted text", a chat's title); ``raw``
    is what was read (the sample's or pasted text as bytes, the uploaded files, a chat's
    id); ``key`` changes exactly when the conversation's input or the user's pick does;
    ``notes`` are one-line captions (what was combined, which file is used).
    """

    name: str
    kind: str
    raw: bytes | str | tuple[UploadedBytes, ...]
    conversation: Conversation
    key: str
    notes: tuple[str, ...] = ()

    @property
    def query(self) -> dict[str, list[str]]:
        """The URL query parameters that reopen this source (see :func:`query_for`)."""
        if self.kind == "sample":
            return query_for("sample", sample=self.name)
        if self.kind == "upload" and isinstance(self.raw, tuple):
            return query_for("upload", uploads=[file.name for file in self.raw])
        if self.kind == "chat":
            return query_for("chat", chat=str(self.raw))
        return query_for(self.kind)

    @property
    def stem(self) -> str:
        """What the downloads' file names call the conversation (two chats' files do not clash).

        >>> Source("Seraphina.jsonl", "upload", (), None, "k").stem, Source("x", "chat", "chat_1", None, "k").stem
        ('seraphina', 'chat-1')
        """
        return chat_stem(str(self.raw)) if self.kind == "chat" else file_stem(self.name)


def digest(data: bytes) -> str:
    """A short hash of ``data`` (16 hex digits).

    >>> digest(b"hello")
    'a7b6eda801e5347d'
    """
    return hashlib.blake2b(data, digest_size=8).hexdigest()


# -- the URL ----------------------------------------------------------------------------


@dataclass(frozen=True, slots=True)
class QueryChoice:
    """What a URL asks for: a source kind, a sample, upload names, a stored chat, and a note when it
    cannot be honoured."""

    kind: str | None = None
    sample: str | None = None
    uploads: tuple[str, ...] = ()
    note: str | None = None
    chat: str | None = None


#: The URL parameters of the conversation (``source`` is the Replay page's former one, still read).
QUERY_KEYS = ("sample", "upload", "chat", "source")


def query_for(kind: str, *, sample: str | None = None, uploads: Sequence[str] = (),
              chat: str | None = None) -> dict[str, list[str]]:
    """The query parameters for a source: ``sample=<key>``, ``upload=<name>`` (one per file) or ``chat=<id>``.

    Pasted text is not put in the URL (it can be long, and private).

    >>> query_for("sample", sample="roleplay"), query_for("upload", uploads=["card.png", "chat.jsonl"])
    ({'sample': ['roleplay']}, {'upload': ['card.png', 'chat.jsonl']})
    >>> query_for("paste"), query_for("chat", chat="chat_1")
    ({}, {'chat': ['chat_1']})
    """
    if kind == "sample" and sample:
        return {"sample": [sample]}
    if kind == "upload" and uploads:
        return {"upload": list(uploads)}
    if kind == "chat" and chat:
        return {"chat": [chat]}
    return {}


#: What a link to a conversation pasted or uploaded in another session says (it names no sample).
ELSEWHERE = ("The link's conversation was pasted or uploaded in another browser session (a reload or a shared link "
             "starts a new one), so it is not here: paste or upload it again. A sample is shown meanwhile, with the "
             "link's other choices.")


def read_query(params: Mapping[str, Sequence[str]], uploaded: Sequence[str] = ()) -> QueryChoice:
    """What the URL's ``sample``, ``upload`` or ``chat`` parameters ask for, given the files this
    session holds (``source``, which the Replay page wrote before the pages shared their
    conversation, is read too: ``sample:roleplay``, ``chat:chat_1``, ``current``).

    >>> read_query({"sample": ["coding_agent"]})
    QueryChoice(kind='sample', sample='coding_agent', uploads=(), note=None, chat=None)
    >>> read_query({"upload": ["chat.jsonl"]}).note
    'The link names the upload chat.jsonl, which is not in this browser session: upload it again.'
    >>> read_query({"sample": ["nope"]}).note
    "There is no sample 'nope' (the link names it); samples: roleplay, coding_agent, support_chat."
    >>> read_query({"source": ["current:support_chat"]}).sample, read_query({"source": ["chat:chat_1"]}).chat
    ('support_chat', 'chat_1')
    >>> read_query({"source": ["current"]}).note == ELSEWHERE
    True
    """
    params = {**params, **_former(params.get("source", ()))}
    samples = [name for name in params.get("sample", ()) if name]
    uploads = tuple(name for name in params.get("upload", ()) if name)
    chats = [name for name in params.get("chat", ()) if name]
    if params.get("elsewhere"):
        return QueryChoice("sample", sample=sample_keys()[0], note=ELSEWHERE)
    if chats:
        return QueryChoice("chat", chat=chats[0])
    if uploads:
        missing = [name for name in uploads if name not in uploaded]
        if missing:
            return QueryChoice(
                "upload", uploads=uploads,
                note=f"The link names the upload {', '.join(missing)}, which is not in this browser session: upload it again.",
            )
        return QueryChoice("upload", uploads=uploads)
    if samples:
        known = [sample.key for sample in SAMPLES]
        if samples[0] in known:
            return QueryChoice("sample", sample=samples[0])
        return QueryChoice(
            "sample", sample=known[0],
            note=f"There is no sample {samples[0]!r} (the link names it); samples: {', '.join(known)}.",
        )
    return QueryChoice()


def _former(source: Sequence[str]) -> dict[str, list[str]]:
    """The parameters the Replay page's former ``source=<kind>:<name>`` stands for."""
    kind, _, name = (source[-1] if source else "").partition(":")
    if kind in ("sample", "current") and name:
        return {"sample": [name]}
    if kind == "chat" and name:
        return {"chat": [name]}
    return {"elsewhere": ["1"]} if kind == "current" else {}


# -- a stored chat ---------------------------------------------------------------------------


def chat_conversation(chat: Any) -> Conversation:
    """A stored chat (:class:`~contextfit.serving.store.Chat`) as a conversation: its messages and model,
    the character, persona, lorebook, memory and tools its settings carry, and its other settings
    (limits, strategy, declared facts...) as the settings the conversation suggests — the contextfit
    bundle that :func:`~contextfit.serving.chat_json.conversation_chat` stored.

    >>> from types import SimpleNamespace as S
    >>> chat = S(model="gpt-4o-mini", messages=[{"role": "user", "content": "Hi"}],
    ...          settings={"persona": "Ann", "contextLimit": 900, "facts": ["ORD-7731"]})
    >>> conversation = chat_conversation(chat)
    >>> conversation.model, conversation.persona, conversation.settings
    ('gpt-4o-mini', 'Ann', {'contextLimit': 900, 'facts': ['ORD-7731']})
    """
    settings = dict(chat.settings or {})
    bundle: dict[str, Any] = {"contextfit": "conversation", "messages": list(chat.messages)}
    bundle.update({part: settings.pop(part) for part in CONVERSATION_PARTS if part in settings})
    if chat.model:
        bundle["model"] = chat.model
    return load_conversation({**bundle, "settings": settings})


def choose_chat(chosen: str | None, ids: Sequence[str], titles: Mapping[str, str]) -> tuple[str | None, str | None]:
    """The stored chat to show (``ids``: the chats with an audit) and a note: the one ``chosen`` (by
    a link, the Audit page or an earlier visit), else the newest, saying so when the chosen one is
    not stored.

    >>> choose_chat("chat_gone", ["chat_a"], {"chat_a": "Router"})
    ('chat_a', "Chat 'chat_gone' is not among the stored chats with an audit (deleted, never generated, or a link to another database): showing “Router” instead.")
    >>> choose_chat("chat_a", ["chat_a"], {}), choose_chat(None, [], {})
    (('chat_a', None), (None, None))
    """
    if chosen in ids:
        return chosen, None
    shown = ids[0] if ids else None
    if chosen is None:
        return shown, None
    instead = f": showing “{titles.get(shown) or shown}” instead" if shown else ""
    return shown, (f"Chat {str(chosen)[:80]!r} is not among the stored chats with an audit (deleted, never "
                   f"generated, or a link to another database){instead}.")


# -- single inputs ----------------------------------------------------------------------


def sample_bytes(key: str) -> bytes:
    """A built-in sample's text as bytes (bytes are content, never a path)."""
    return sample_text(key).encode("utf-8")


def chosen(entries: Sequence[FileConversation], index: int) -> Conversation:
    """The conversation at ``index`` (clamped), or its error raised.

    >>> entries = list_conversations(b'[{"conversations": [{"from": "human", "value": "a"}]},'
    ...                              b' {"conversations": [{"from": "human", "value": "b"}]}]')
    >>> chosen(entries, 7).messages[0]["content"]
    'b'
    """
    entry = entries[min(max(index, 0), len(entries) - 1)]
    if entry.conversation is None:
        raise entry.error or InvalidConversation("This conversation could not be read.", location=entry.location)
    return entry.conversation


def listing_note(entries: Sequence[FileConversation], name: str) -> str | None:
    """One line when a file holds more conversations than are listed.

    >>> from contextfit.inputs.formats import FileConversation
    >>> listing_note([FileConversation(0, "$[0]", "#1 · a · 1 message", total=1001)], "big.jsonl")
    'big.jsonl holds 1,001 conversations; the menu lists the first 1.'
    """
    if not entries or entries[0].total <= len(entries):
        return None
    return f"{name} holds {entries[0].total:,} conversations; the menu lists the first {len(entries):,}."


# -- several files ----------------------------------------------------------------------


@dataclass(frozen=True, slots=True)
class FilePart:
    """One uploaded file, read: what it is for (:data:`PARTS`), and its conversations (or its error)."""

    file: UploadedBytes
    part: str | None
    entries: tuple[FileConversation, ...] = ()
    error: InvalidConversation | None = None


def read_part(file: UploadedBytes, entries: Sequence[FileConversation] | None = None) -> FilePart:
    """What ``file`` is: a ``chat`` (any conversation, a bundle too), a ``card``, a
    ``lorebook`` (World Info) or a ``persona`` (a text file whose name says persona).

    ``entries`` are the file's conversations when the caller has read them
    already (the dashboard caches them); else the file is read here.

    >>> read_part(UploadedBytes("persona.txt", b"A tall knight.")).part
    'persona'
    >>> read_part(UploadedBytes("x.json", b"{")).error.code
    'INVALID_CONVERSATION'
    """
    if entries is None:
        try:
            entries = list_conversations(file.data)
        except InvalidConversation as error:
            return FilePart(file, None, error=error)
    entries = tuple(entries)
    first = entries[0].conversation
    if len(entries) > 1 or first is None:
        return FilePart(file, "chat", entries)
    if first.format == "text" and "persona" in file.name.lower():
        return FilePart(file, "persona", entries)
    part = {"character-card": "card", "world-info": "lorebook"}.get(first.format, "chat")
    return FilePart(file, part, entries)


@dataclass(frozen=True, slots=True)
class Combined:
    """Several files as one conversation: the conversation (``None`` when no file
    could be read), the caption saying what was combined, the one-line notes
    (which of two chats is used, files that could not be read), and the
    choices a picker can offer per part (file names)."""

    conversation: Conversation | None
    caption: str
    notes: tuple[str, ...] = ()
    choices: Mapping[str, tuple[str, ...]] = field(default_factory=dict)


def combine(parts: Sequence[FilePart], picks: Mapping[str, str] | None = None, conversation_index: int = 0) -> Combined:
    """One conversation from several files, as a contextfit bundle with those parts would be.

    The chat gives the messages (and its tools, model and settings); the
    card is the ``character`` (its own lorebook stays active); a World Info
    file is the ``lorebook``; a persona file's text is the ``persona``.
    With no chat, a card's first message is the chat. When two files are the
    same part, ``picks[part]`` names the one used (else the first uploaded),
    and a note says so. ``conversation_index`` picks inside a chat file that
    holds several.
    """
    picks = picks or {}
    notes: list[str] = []
    by_part: dict[str, list[FilePart]] = {part: [] for part in PARTS}
    for part in parts:
        if part.error is not None:
            notes.append(f"{part.file.name} could not be read ({part.error.code}): {part.error.message}")
        else:
            by_part[part.part or "chat"].append(part)
    used: dict[str, FilePart] = {}
    for name, found in by_part.items():
        if not found:
            continue
        wanted = picks.get(name)
        used[name] = next((p for p in found if p.file.name == wanted), found[0])
        if len(found) > 1:
            others = ", ".join(p.file.name for p in found if p is not used[name])
            notes.append(f"{len(found)} {name} files: using {used[name].file.name}, not {others}.")
    choices = {name: tuple(p.file.name for p in found) for name, found in by_part.items() if len(found) > 1}
    if not used:
        return Combined(None, "", tuple(notes), choices)

    chat = used.get("chat")
    card = used.get("card")
    book = used.get("lorebook")
    persona = used.get("persona")
    warnings: list[str] = []
    if chat is not None:
        base = chosen(chat.entries, conversation_index)
    elif card is not None:
        base = card.entries[0].conversation
    else:
        base = book.entries[0].conversation
    assert base is not None  # read_part gives an error or readable entries
    for part in used.values():
        entry_warnings = (base if part is chat else part.entries[0].conversation).warnings
        warnings.extend(f"{part.file.name}: {line}" for line in entry_warnings)
    conversation = replace(
        base,
        character=card.entries[0].conversation.character if card else base.character,
        lorebook=book.entries[0].conversation.lorebook if book else base.lorebook,
        persona=_text(persona.file.data) if persona else base.persona,
        format="contextfit" if len(used) > 1 else base.format,
        warnings=warnings,
    )
    return Combined(conversation, _caption(used, conversation), tuple(notes), choices)


def _text(data: bytes) -> str:
    return data.decode("utf-8-sig", errors="replace").strip()


def _caption(used: Mapping[str, FilePart], conversation: Conversation) -> str:
    """One line saying what each file became."""
    pieces = []
    if "chat" in used:
        pieces.append(f"chat {used['chat'].file.name} ({plural(len(conversation.messages), 'message')})")
    if "card" in used and conversation.character is not None:
        pieces.append(f"card {conversation.character.name} ({used['card'].file.name})")
        if "chat" not in used:
            pieces.append("its first message as the chat")
    if "lorebook" in used and conversation.lorebook is not None:
        pieces.append(f"World Info {used['lorebook'].file.name} ({plural(len(conversation.lorebook.entries), 'entry', 'entries')})")
    if "persona" in used:
        pieces.append(f"persona ({used['persona'].file.name})")
    if len(used) == 1:
        return ""
    return "Combined, as a contextfit bundle would be: " + " + ".join(pieces) + "."


# -- a lorebook alone -------------------------------------------------------------------


def is_lorebook_only(conversation: Conversation) -> bool:
    """Whether there is a lorebook and nothing it could be matched against."""
    return conversation.lorebook is not None and not conversation.messages and conversation.character is None


def lorebook_summary(book: Lorebook, name: str) -> str:
    """What a World Info file is, in plain words: its entries, keys and how they are used.

    >>> from contextfit.inputs.lorebook import LorebookEntry
    >>> book = Lorebook(name="Eldoria", entries=(LorebookEntry(uid=0, keys=("wood", "forest")),
    ...                                         LorebookEntry(uid=1, constant=True)))
    >>> print(lorebook_summary(book, "Eldoria.json"))
    Eldoria.json is a World Info file (a lorebook), "Eldoria": 2 entries. An entry is added to the prompt when one of its keys appears in the last 2 messages of a chat; 1 entry is constant (always sent). Keys: wood, forest. It needs a chat to be matched against.
    """
    entries = [entry for entry in book.entries if not entry.disabled]
    keys: list[str] = []
    for entry in entries:
        for key in entry.keys:
            if key not in keys:
                keys.append(key)
    constant = sum(1 for entry in entries if entry.constant)
    depth = book.scan_depth or DEFAULT_SCAN_DEPTH
    title = f', "{book.name}"' if book.name else ""
    parts = [
        f"{name} is a World Info file (a lorebook){title}: {plural(len(book.entries), 'entry', 'entries')}.",
        f"An entry is added to the prompt when one of its keys appears in the last {plural(depth, 'message')} of a chat"
        + (f"; {plural(constant, 'entry is', 'entries are')} constant (always sent)." if constant else "."),
    ]
    disabled = len(book.entries) - len(entries)
    if disabled:
        parts.append(f"{plural(disabled, 'entry is', 'entries are')} disabled.")
    if keys:
        more = f" and {len(keys) - SUMMARY_KEYS} more" if len(keys) > SUMMARY_KEYS else ""
        parts.append(f"Keys: {', '.join(keys[:SUMMARY_KEYS])}{more}.")
    parts.append("It needs a chat to be matched against.")
    return " ".join(parts)


def with_lorebook(chat: Conversation, lorebook: Conversation, chat_name: str, book_name: str) -> Combined:
    """A chat (a sample, say) with a World Info file as its lorebook.

    The chat's own bundle-level lorebook is replaced; a card's embedded book stays.
    """
    conversation = replace(chat, lorebook=lorebook.lorebook, format="contextfit")
    replaced = " (in place of its own lorebook)" if chat.lorebook is not None else ""
    caption = f"Combined: {chat_name} with World Info {book_name}{replaced}."
    return Combined(conversation, caption)


def sample_keys() -> list[str]:
    """The built-in samples' keys, in menu order."""
    return [sample.key for sample in SAMPLES]


def sample_title(key: str) -> str:
    """A sample's title for menus."""
    return get_sample(key).title
