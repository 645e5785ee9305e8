"""The sidebar's "Conversation" section: the conversation Compare and Replay show.

:func:`conversation_source` draws the Source radio (Sample, Paste, Upload,
Stored chat) and whatever the choice needs, and returns a
:class:`~contextfit.dashboard.sources.Source` (or ``None`` when there is
nothing to show yet, with a note saying why). The rules are in
:mod:`contextfit.dashboard.sources`, with tests; this module only draws.

Streamlit forgets a widget's value when the widget is not drawn (a page
without the sidebar, another Source), and an uploader cannot be filled
again. So the choices, the pasted text and the uploaded files' names and
bytes are kept under session keys of their own (``source.*``), copied into
the widgets when they are drawn again. The source is also in the URL
(``?sample=``, ``?upload=``, ``?chat=``): a new browser session opens what its
link names.
"""

from __future__ import annotations

from collections.abc import Sequence
from typing import Any

import streamlit as st

from contextfit.dashboard import sources
from contextfit.dashboard.markdown import error_text, plain
from contextfit.dashboard.sources import Source, UploadedBytes
from contextfit.errors import ContextfitError, InvalidConversation
from contextfit.inputs.formats import FileConversation, list_conversations

# Session keys that belong to no widget: they outlive page switches and Source switches.
KIND = "source.kind"
SAMPLE = "source.sample"
PASTE = "source.paste"
UPLOADS = "source.uploads"
PICKS = "source.picks"
LORE_WITH = "source.lore_with"
CHAT = "source.chat"
URL_NOTE = "source.url_note"
LINKED = "source.linked_uploads"
#: The Source radio's options, and the source kind each stands for.
OPTIONS = {"Sample": "sample", "Paste": "paste", "Upload": "upload", "Stored chat": "chat"}
#: Widget keys: the radio, the sample menu, the paste box, the uploader, the chat menu.
RADIO, SAMPLE_MENU, PASTE_BOX, UPLOADER, CHAT_MENU = "source_radio", "source_sample_menu", "paste", "source_files", "source_chat_menu"
FILE_TYPES = ["json", "jsonl", "png", "txt"]
PASTE_HELP = (
    "OpenAI or Anthropic JSON, a SillyTavern chat (.jsonl), a character card, World Info, "
    "ShareGPT, a contextfit bundle, or a plain transcript (User: / Assistant: lines)."
)
NO_CHAT = ("No chat is stored yet: a chat is stored when it is generated, with a strategy's “Send” button on "
           "Compare strategies (the offline echo provider) or the HTTP API (contextfit serve). Its audits then "
           "offer “Replay under other settings”. Meanwhile, pick a sample under Source.")
Notes = list[tuple[str, str]]


@st.cache_resource(show_spinner=False, max_entries=16)
def read_conversations(digest: str, _data: bytes) -> tuple[FileConversation, ...] | InvalidConversation:
    """Every conversation in ``_data``, or why it cannot be read: cached by the
    content hash (``_data`` itself is not hashed again on every rerun) and
    shared, not copied, between runs — nothing here changes a conversation."""
    try:
        return list_conversations(_data)
    except InvalidConversation as error:
        return error


@st.cache_resource(show_spinner=False, max_entries=8)
def read_chat(database: str, chat_id: str, updated_at: str) -> Any:
    """A stored chat as a conversation (or the error that keeps it from being one), read again when
    the chat changes (``updated_at``): the same object between runs, so its session is kept."""
    from contextfit.serving.store_cache import shared_store

    try:
        return sources.chat_conversation(shared_store().get_chat(chat_id))
    except ContextfitError as error:
        return error


def conversation_source(notes: Notes) -> Source | None:
    """Draw the "Conversation" section (inside the sidebar) and return the chosen source (``None``:
    nothing to show yet). What the pages should say above their content is added to ``notes``."""
    state = st.session_state
    if KIND not in state:  # a new browser session: the link says what to open
        _open_link(state)
    st.header("Conversation")
    labels = {kind: label for label, kind in OPTIONS.items()}
    _seed(RADIO, labels[state[KIND]])
    kind = OPTIONS[st.radio("Source", list(OPTIONS), key=RADIO, horizontal=True,
                            help="A built-in sample, text you paste (any format contextfit reads), files, or a "
                            "chat stored by the HTTP API or a strategy's “Send”.")]
    state[KIND] = kind
    found = {"sample": _sample, "paste": _paste, "upload": _upload, "chat": _chat}[kind](state, notes)
    if found is not None:
        notes.extend(("caption", plain(note)) for note in found.notes)
    return found


def query(found: Source | None) -> dict[str, list[str]]:
    """The URL parameters that reopen the source on the page (the kind chosen when there is none yet)."""
    if found is not None:
        return found.query
    state = st.session_state
    uploads = [file.name for file in state.get(UPLOADS, ())] or state.get(LINKED, [])
    return sources.query_for(state.get(KIND, "sample"), sample=state.get(SAMPLE), uploads=uploads, chat=state.get(CHAT))


def open_chat(chat_id: str) -> None:
    """Make a stored chat the conversation (the Audit page's "Replay under other settings")."""
    state = st.session_state
    state[KIND], state[CHAT], state[RADIO], state[CHAT_MENU] = "chat", chat_id, "Stored chat", chat_id


def _seed(widget: str, value: Any) -> None:
    """Give a widget the kept value when Streamlit has forgotten the widget's own."""
    if widget not in st.session_state:
        st.session_state[widget] = value


def _open_link(state: Any) -> None:
    choice = sources.read_query({name: st.query_params.get_all(name) for name in sources.QUERY_KEYS})
    state[KIND] = choice.kind or "sample"
    state[SAMPLE] = choice.sample or sources.sample_keys()[0]
    state[URL_NOTE] = choice.note
    state[LINKED] = list(choice.uploads)  # kept in the URL until files arrive
    state[CHAT] = choice.chat


def _note_from_link(state: Any, notes: Notes) -> None:
    if state.get(URL_NOTE):
        notes.append(("info", plain(state[URL_NOTE])))


def _sample(state: Any, notes: Notes) -> Source | None:
    _seed(SAMPLE_MENU, state.get(SAMPLE) or sources.sample_keys()[0])
    key = st.selectbox("Sample", sources.sample_keys(), key=SAMPLE_MENU, format_func=sources.sample_title)
    state[SAMPLE] = key
    st.caption(sources.get_sample(key).description)
    if not state.get(LINKED):  # a link to a missing sample is mentioned once; the menu shows what is open
        _note_from_link(state, notes)
        state[URL_NOTE] = None
    data = sources.sample_bytes(key)
    found = read_conversations(f"sample:{key}", data)
    if isinstance(found, InvalidConversation):  # a broken built-in sample: say so, never a traceback
        notes.append(("error", error_text(found)))
        return None
    return Source(key, "sample", data, found[0].conversation, f"sample:{key}")


def _paste(state: Any, notes: Notes) -> Source | None:
    _seed(PASTE_BOX, state.get(PASTE, ""))
    text = st.text_area("Conversation", key=PASTE_BOX, height=220,
                        placeholder='[{"role": "user", "content": "Hello"}]', help=PASTE_HELP)
    state[PASTE] = text
    if not text:
        notes.append(("info", "Paste a conversation or upload a file to compare strategies."))
        return None
    # Pasted text is content: as bytes it is never taken for the path of a file on this machine.
    file = UploadedBytes("pasted text", text.encode("utf-8"))
    return _one_file(state, notes, file, "paste")


def _store_uploads() -> None:
    """The uploader changed (files added, replaced or removed): keep its files."""
    files = st.session_state.get(UPLOADER) or []
    st.session_state[UPLOADS] = tuple(UploadedBytes(file.name, file.getvalue()) for file in files)
    st.session_state[URL_NOTE] = None
    st.session_state[LINKED] = []


def _clear_uploads() -> None:
    st.session_state[UPLOADS] = ()


def _upload(state: Any, notes: Notes) -> Source | None:
    st.file_uploader(
        "Files", type=FILE_TYPES, accept_multiple_files=True, key=UPLOADER, on_change=_store_uploads,
        help="A chat export, a character card (JSON or PNG), a lorebook — or several at once: a card, a chat, "
        "a World Info file and a persona (a .txt file named persona) are combined into one conversation.",
    )
    files: tuple[UploadedBytes, ...] = state.get(UPLOADS, ())
    if files and not state.get(UPLOADER):  # the uploader cannot be filled again after a page switch
        names = ", ".join(file.name for file in files)
        st.caption(f"Using {plain(names)} (uploaded). Drop files above to replace them.")
        st.button("Clear", key="source_clear", on_click=_clear_uploads, help="Forget the uploaded files.")
    if not files:
        _note_from_link(state, notes)
        if not state.get(URL_NOTE):
            notes.append(("info", "Upload a file (or several) to compare strategies."))
        return None
    if len(files) == 1:
        return _one_file(state, notes, files[0], "upload")
    return _several(state, notes, files)


def _chat(state: Any, notes: Notes) -> Source | None:
    # the store (SQLAlchemy) is imported when a stored chat is chosen: the other sources draw without it
    from contextfit.serving.audits import chat_label, list_audited_chats
    from contextfit.serving.store_cache import shared_store

    chats = list_audited_chats()
    ids = [chat.id for chat in chats]
    labels = {chat.id: chat_label(chat) for chat in chats}
    shown, missing = sources.choose_chat(state.get(CHAT_MENU, state.get(CHAT)), ids, labels)
    if missing:  # a link's or a deleted chat: said, not swapped silently
        notes.append(("warning", plain(missing)))
    if shown is None:  # said in the page too: the sidebar's line alone left the page blank
        st.info("No stored chat yet.")
        notes.append(("info", NO_CHAT))
        return None
    state[CHAT_MENU] = shown
    chat_id = st.selectbox("Chat", ids, format_func=labels.get, key=CHAT_MENU)
    state[CHAT] = chat_id
    summary = next(chat for chat in chats if chat.id == chat_id)
    database = shared_store().engine.url.render_as_string(hide_password=True)
    found = read_chat(database, chat_id, summary.updated_at)
    if isinstance(found, ContextfitError):  # gone since it was listed, or unreadable: say so
        notes.append(("error", error_text(found)))
        return None
    return Source(summary.title or chat_id, "chat", chat_id, found, f"chat:{chat_id}")


def _entries(file: UploadedBytes) -> tuple[FileConversation, ...] | InvalidConversation:
    return read_conversations(file.digest, file.data)


def _pick(state: Any, entries: Sequence[FileConversation], identity: str, name: str) -> int:
    """The conversation picker for a file that holds several; the index chosen."""
    if len(entries) < 2:
        return 0
    picks = state.setdefault(PICKS, {})
    widget = f"source_pick_{identity}"
    _seed(widget, min(picks.get(identity, 0), len(entries) - 1))
    index = st.selectbox(f"Conversation in {plain(name)}", range(len(entries)), key=widget,
                         format_func=lambda number: entries[number].label,
                         help="This file holds several conversations: choose the one to compare.")
    picks[identity] = index
    note = sources.listing_note(entries, name)
    if note:
        st.caption(plain(note))
    return index


def _one_file(state: Any, notes: Notes, file: UploadedBytes, kind: str) -> Source | None:
    entries = _entries(file)
    if isinstance(entries, InvalidConversation):
        notes.append(("error", error_text(entries)))
        return None
    index = _pick(state, entries, file.digest, file.name)
    try:
        conversation = sources.chosen(entries, index)
    except InvalidConversation as error:
        notes.append(("error", error_text(error)))
        return None
    name = file.name + (f" (conversation {index + 1} of {entries[0].total:,})" if len(entries) > 1 else "")
    raw = file.data if kind == "paste" else (file,)
    found = Source(name, kind, raw, conversation, f"{kind}:{file.digest}:{index}")
    if sources.is_lorebook_only(conversation):
        return _lorebook_alone(state, notes, found, file.name)
    return found


def _several(state: Any, notes: Notes, files: tuple[UploadedBytes, ...]) -> Source | None:
    parts = []
    for file in files:
        entries = _entries(file)
        parts.append(sources.FilePart(file, None, error=entries) if isinstance(entries, InvalidConversation)
                     else sources.read_part(file, entries))
    picks = state.setdefault(PICKS, {})
    identity = "+".join(file.digest for file in files)
    choices = sources.combine(parts).choices
    wanted = {}
    for part, names in choices.items():
        widget = f"source_{part}_{identity}"
        kept = picks.get(widget)
        _seed(widget, kept if kept in names else names[0])
        wanted[part] = picks[widget] = st.selectbox(f"{part.capitalize()} file to use", names, key=widget)
    chat = next((p for p in parts if p.part == "chat" and p.file.name == wanted.get("chat", p.file.name)), None)
    index = _pick(state, chat.entries, f"{identity}:{chat.file.digest}", chat.file.name) if chat else 0
    try:
        combined = sources.combine(parts, wanted, index)
    except InvalidConversation as error:  # the picked conversation of a dataset is unreadable
        notes.append(("error", error_text(error)))
        return None
    if combined.conversation is None:
        notes.append(("error", "None of the uploaded files could be read: " + plain(" ".join(combined.notes))))
        return None
    key = f"upload:{identity}:{index}:" + ":".join(f"{part}={name}" for part, name in sorted(wanted.items()))
    name = " + ".join(file.name for file in files)
    found = Source(name, "upload", files, combined.conversation, key,
                   notes=tuple(note for note in (combined.caption, *combined.notes) if note))
    if sources.is_lorebook_only(combined.conversation):
        return _lorebook_alone(state, notes, found, name)
    return found


def _lorebook_alone(state: Any, notes: Notes, found: Source, name: str) -> Source | None:
    """A World Info file with no chat: say what it is, and offer a sample's chat to match it against."""
    book = found.conversation.lorebook
    assert book is not None
    notes.append(("info", plain(sources.lorebook_summary(book, name))))
    options = [None, *sources.sample_keys()]
    _seed("source_lore_with", state.get(LORE_WITH))
    chosen = st.selectbox("Combine it with the chat of a sample", options, key="source_lore_with",
                          format_func=lambda key: "choose a sample…" if key is None else sources.sample_title(key))
    state[LORE_WITH] = chosen
    st.caption("Or upload it together with a chat (and a card): choose all the files at once.")
    if chosen is None:
        return None
    sample = read_conversations(f"sample:{chosen}", sources.sample_bytes(chosen))
    if isinstance(sample, InvalidConversation):
        notes.append(("error", error_text(sample)))
        return None
    combined = sources.with_lorebook(sample[0].conversation, found.conversation, f"sample {chosen}", name)
    return Source(f"{found.name} + sample {chosen}", found.kind, found.raw, combined.conversation,
                  f"{found.key}+sample:{chosen}", notes=(*found.notes, combined.caption))
