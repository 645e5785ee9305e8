"""The Compare page's "Conversation" section, drawn with Streamlit.

:func:`conversation_source` is the one call the page makes: it draws the
sidebar's Source radio (Sample, Paste, Upload) and whatever the choice needs,
and returns a :class:`~contextfit.dashboard.sources.Source` (or ``None`` when
there is nothing to compare yet; it has said why). The rules are in
:mod:`contextfit.dashboard.sources`, with tests; this module only draws.

Streamlit forgets a widget's value when the widget is not drawn (another
page, another Source), and an uploader cannot be filled again. So the
choices, the pasted text and the uploaded files' names and bytes are kept
under session keys of their own (``source.*``), copied into the widgets
when they are drawn again. The source is also in the URL (``?sample=`` or
``?upload=``): a new browser session opens what its link names.
"""

from __future__ import annotations

from collections.abc import Sequence
from typing import Any

import streamlit as st

from ..errors import InvalidConversation
from ..inputs.formats import FileConversation, list_conversations
from . import sources
from .page_data import error_text, plain
from .sources import Source, UploadedBytes

# Session keys that belong to no widget: they outlive page switches and Source switches.
KIND = "source.kind"
SAMPLE = "source.sample"
PASTE = "source.paste"
UPLOADS = "source.uploads"
PICKS = "source.picks"
LORE_WITH = "source.lore_with"
URL_NOTE = "source.url_note"
LINKED = "source.linked_uploads"
#: The Source radio's options (their lower case is the source kind).
OPTIONS = ("Sample", "Paste", "Upload")
#: Widget keys: the radio, the sample menu, the paste box, the uploader.
RADIO, SAMPLE_MENU, PASTE_BOX, UPLOADER = "source_radio", "source_sample_menu", "paste", "source_files"
FILE_TYPES = ["json", "jsonl", "png", "txt"]
PASTE_HELP = (
    "OpenAI or Anthropic JSON, a SillyTavern chat (.jsonl), a character card, World Info, "
    "ShareGPT, a contextfit bundle, or a plain transcript (User: / Assistant: lines)."
)


@st.cache_resource(show_spinner=False, max_entries=16)
def read_conversations(digest: str, _data: bytes) -> tuple[FileConversation, ...] | InvalidConversation:
    """Every conversation in ``_data``, or why it cannot be read: cached by the
    content hash (``_data`` itself is not hashed again on every rerun) and
    shared, not copied, between runs — nothing here changes a conversation."""
    try:
        return list_conversations(_data)
    except InvalidConversation as error:
        return error


def conversation_source() -> Source | None:
    """Draw the "Conversation" section and return the chosen source (``None``: nothing to compare yet)."""
    state = st.session_state
    if KIND not in state:  # a new browser session: the link says what to open
        _open_link(state)
    main = st.container()  # messages and choices the page shows above the comparison
    with st.sidebar:
        st.header("Conversation")
        _seed(RADIO, state[KIND].capitalize())
        kind = st.radio("Source", OPTIONS, key=RADIO, horizontal=True,
                        help="A built-in sample, text you paste (any format contextfit reads), or files.").lower()
        state[KIND] = kind
        if kind == "sample":
            source = _sample(state, main)
        elif kind == "paste":
            source = _paste(state, main)
        else:
            source = _upload(state, main)
    if source is not None:
        with main:
            for note in source.notes:
                st.caption(plain(note))
    uploads = [file.name for file in state.get(UPLOADS, ())] or state.get(LINKED, [])
    _write_link(source.query if source else sources.query_for(kind, sample=state.get(SAMPLE), uploads=uploads))
    return source


def _seed(widget: str, value: Any) -> None:
    """Give a widget the kept value when Streamlit has forgotten the widget's own."""
    if widget not in st.session_state:
        st.session_state[widget] = value


def _open_link(state: Any) -> None:
    params = {name: st.query_params.get_all(name) for name in ("sample", "upload")}
    choice = sources.read_query(params)
    state[KIND] = choice.kind or "sample"
    state[SAMPLE] = choice.sample or sources.sample_keys()[0]
    state[URL_NOTE] = choice.note
    state[LINKED] = list(choice.uploads)  # kept in the URL until files arrive


def _write_link(wanted: dict[str, list[str]]) -> None:
    """Put the source in the URL, leaving every other parameter as it is."""
    for name in ("sample", "upload"):
        value = wanted.get(name)
        if value is None:
            if name in st.query_params:
                del st.query_params[name]
        elif st.query_params.get_all(name) != value:
            st.query_params[name] = value


def _note_from_link(state: Any, main: Any) -> None:
    note = state.get(URL_NOTE)
    if note:
        main.info(plain(note))


def _sample(state: Any, main: Any) -> Source | None:
    _seed(SAMPLE_MENU, state.get(SAMPLE) or sources.sample_keys()[0])
    key = st.selectbox("Sample", sources.sample_keys(), key=SAMPLE_MENU, format_func=sources.sample_title)
    state[SAMPLE] = key
    st.caption(sources.get_sample(key).description)
    if not state.get(LINKED):  # a link to a missing sample is mentioned once; the menu shows what is open
        _note_from_link(state, main)
        state[URL_NOTE] = None
    data = sources.sample_bytes(key)
    found = read_conversations(f"sample:{key}", data)
    if isinstance(found, InvalidConversation):  # a broken built-in sample: say so, never a traceback
        main.error(error_text(found))
        return None
    return Source(key, "sample", data, found[0].conversation, f"sample:{key}")


def _paste(state: Any, main: Any) -> Source | None:
    _seed(PASTE_BOX, state.get(PASTE, ""))
    text = st.text_area("Conversation", key=PASTE_BOX, height=220,
                        placeholder='[{"role": "user", "content": "Hello"}]', help=PASTE_HELP)
    state[PASTE] = text
    if not text:
        main.info("Paste a conversation or upload a file to compare strategies.")
        return None
    # Pasted text is content: as bytes it is never taken for the path of a file on this machine.
    file = UploadedBytes("pasted text", text.encode("utf-8"))
    return _one_file(state, main, file, "paste")


def _store_uploads() -> None:
    """The uploader changed (files added, replaced or removed): keep its files."""
    files = st.session_state.get(UPLOADER) or []
    st.session_state[UPLOADS] = tuple(UploadedBytes(file.name, file.getvalue()) for file in files)
    st.session_state[URL_NOTE] = None
    st.session_state[LINKED] = []


def _clear_uploads() -> None:
    st.session_state[UPLOADS] = ()


def _upload(state: Any, main: Any) -> Source | None:
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
        _note_from_link(state, main)
        if not state.get(URL_NOTE):
            main.info("Upload a file (or several) to compare strategies.")
        return None
    if len(files) == 1:
        return _one_file(state, main, files[0], "upload")
    return _several(state, main, files)


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


def _one_file(state: Any, main: Any, file: UploadedBytes, kind: str) -> Source | None:
    entries = _entries(file)
    if isinstance(entries, InvalidConversation):
        main.error(error_text(entries))
        return None
    index = _pick(state, entries, file.digest, file.name)
    try:
        conversation = sources.chosen(entries, index)
    except InvalidConversation as error:
        main.error(error_text(error))
        return None
    name = file.name + (f" (conversation {index + 1} of {entries[0].total:,})" if len(entries) > 1 else "")
    raw = file.data if kind == "paste" else (file,)
    source = Source(name, kind, raw, conversation, f"{kind}:{file.digest}:{index}")
    if sources.is_lorebook_only(conversation):
        return _lorebook_alone(state, main, source, file.name)
    return source


def _several(state: Any, main: Any, files: tuple[UploadedBytes, ...]) -> Source | None:
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
        main.error(error_text(error))
        return None
    if combined.conversation is None:
        main.error("None of the uploaded files could be read: " + plain(" ".join(combined.notes)))
        return None
    key = f"upload:{identity}:{index}:" + ":".join(f"{part}={name}" for part, name in sorted(wanted.items()))
    name = " + ".join(file.name for file in files)
    notes = tuple(note for note in (combined.caption, *combined.notes) if note)
    source = Source(name, "upload", files, combined.conversation, key, notes=notes)
    if sources.is_lorebook_only(combined.conversation):
        return _lorebook_alone(state, main, source, name)
    return source


def _lorebook_alone(state: Any, main: Any, source: Source, name: str) -> Source | None:
    """A World Info file with no chat: say what it is, and offer a sample's chat to match it against."""
    book = source.conversation.lorebook
    assert book is not None
    main.info(plain(sources.lorebook_summary(book, name)))
    options = [None, *sources.sample_keys()]
    _seed("source_lore_with", state.get(LORE_WITH))
    chosen = main.selectbox("Combine it with the chat of a sample", options, key="source_lore_with",
                          format_func=lambda key: "choose a sample…" if key is None else sources.sample_title(key))
    state[LORE_WITH] = chosen
    main.caption("Or upload it together with a chat (and a card): choose all the files at once.")
    if chosen is None:
        return None
    sample = read_conversations(f"sample:{chosen}", sources.sample_bytes(chosen))
    if isinstance(sample, InvalidConversation):
        main.error(error_text(sample))
        return None
    combined = sources.with_lorebook(sample[0].conversation, source.conversation, f"sample {chosen}", name)
    return Source(f"{source.name} + sample {chosen}", source.kind, source.raw, combined.conversation,
                  f"{source.key}+sample:{chosen}", notes=(*source.notes, combined.caption))
