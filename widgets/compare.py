"""What the Compare page draws, piece by piece: the answer, each strategy's column, and the views below.

The page (``pages/compare.py``) reads like a description of itself and calls
these; what each piece says is worked out in ``contextfit.dashboard``
(``answer_view``, ``compare_view``, ``category_bar``, ``rounds``,
``turn_diff``), with tests.
"""

from __future__ import annotations

from dataclasses import dataclass
from functools import partial
from typing import Any

import streamlit as st

from contextfit.dashboard import category_bar, exports, rounds, turn_diff
from contextfit.dashboard.answer_view import AnswerView, ColumnAnswer, facts_line
from contextfit.dashboard.audit_view import send_with_echo
from contextfit.dashboard.compare_view import Column, Diagnostic
from contextfit.dashboard.fact_list import FactList
from contextfit.dashboard.markdown import error_words, plain
from contextfit.dashboard.setup import Setup
from contextfit.dashboard.sources import Source
from contextfit.dashboard.strategy_lines import strategy_line
from contextfit.dashboard.tables import aligned
from contextfit.errors import ContextfitError
from contextfit.pipeline.plan import PromptPlan


def answer(area: Any, view: AnswerView, listed: FactList) -> None:
    """The recommendation on top of the page: the sentence, its costs at volume, the retention
    protocol's figure for it, and the must-survive facts it weighed."""
    lines = [view.costs, view.citation and view.citation + " (docs/retention.md)", view.basis, facts_line(listed)]
    with area.container(border=True, key="answer"):
        st.markdown(plain(view.sentence))
        st.caption("  \n".join(plain(line) for line in lines if line))  # one caption: no gap between its lines


@dataclass(frozen=True, slots=True)
class Slots:
    """The places of one strategy's column, row by row: its head (name, one line), its window (bar,
    costs, Lost line) above the fate matrix, then its charts and details below it."""

    head: Any
    window: Any
    charts: Any
    details: Any


def columns(count: int) -> tuple[list[Slots], Any]:
    """``count`` columns — their heads, then their windows, each in a row of its own so the bars line up
    whatever the text above them takes; then the place of the fate matrix; then their charts and their
    details in rows of their own — and the matrix's place."""
    heads, windows = st.columns(count), st.columns(count)
    matrix = st.container()
    charts, details = st.columns(count), st.columns(count)
    return [Slots(*places) for places in zip(heads, windows, charts, details)], matrix


def head(slot: Slots, name: str, shown: Column) -> Any:
    """A strategy's name, its one line, and its window by category (or its error); returns the place
    its answer (costs, Lost line) goes, under its window, once the recommendation is made."""
    with slot.head.container(key=f"head-{name}"):
        st.subheader(name)
        st.caption(plain(strategy_line(name)))
    if shown.error:  # in a place of its own: said once above the columns instead when every one failed alike
        place = slot.window.empty()
        place.error(shown.error)
        return place
    slot.window.html(category_bar.window_html(shown.plan))
    return slot.window.container()


def column_answer(place: Any, name: str, said: ColumnAnswer | None, plan: PromptPlan | None) -> None:
    """Under a strategy's window its costs, its Lost line (on the first screen, beside the answer), and
    why it is never recommended, if so (a strategy without a plan keeps its error)."""
    if said is None or plan is None:
        return
    with place.container(key=f"column-answer-{name}"):
        st.markdown(f"**{plain(said.cost)}**  \n{plain(said.lost)}")  # one paragraph: no gap between them
        if said.refusal:
            st.warning(plain(said.refusal))


def details(slot: Slots, name: str, plan: PromptPlan, shown: Column, source: Source, setup: Setup,
            notes: list[str | None], diagnostics: tuple[Diagnostic, ...]) -> None:
    """Below the charts: the exact counts, the ``notes`` (where the facts sit, the effective-context
    note, why it sends another strategy's prompt), what was left out, the summary sent, Export and Send,
    and the ``diagnostics`` of its plan that the other strategies' plans do not carry alike."""
    slot.details.caption(shown.budget)
    slot.details.caption(shown.tokenizer)
    for line in notes:
        if line:
            slot.details.caption(plain(line))
    # keyed: the label's counts change with every refit, and a new unkeyed expander is drawn closed
    slot.details.expander(shown.dropped, key=f"dropped-{name}").text(shown.dropped_lines)
    if plan.summary is not None:
        slot.details.expander("Summary sent to the model", key=f"summary-{name}").text(plan.summary.content)
    actions = slot.details.container(horizontal=True)  # side by side, or one under the other in a narrow column
    with actions.popover("Export", help="This strategy's request, blocks or whole plan as a file."):
        for file in exports.PLAN_FILES:  # made when its button is clicked, not on every run
            st.download_button(file.label, partial(file.make, plan), file_name=f"{source.stem}-{name}-{file.suffix}",
                               mime=file.mime, key=f"{file.key}-{name}", on_click="ignore")
    if actions.button("Send", key=f"send-{name}", help="Store this conversation as a chat, generate with the offline "
                      "echo provider under this strategy, and open its audit."):
        with st.spinner("Generating…"):
            st.session_state.audit_chat = send_with_echo(source.conversation, setup, name, name=source.name[:80])
        st.switch_page("pages/audit.py")
    for note in diagnostics:
        slot.details.caption(note.text, help=note.help)


def shared_diagnostics(notes: tuple[Diagnostic, ...]) -> None:
    """What every strategy's plan says alike, once, above the columns (one caption; the codes on hover)."""
    if notes:
        st.caption("Every strategy's plan: " + "  \n".join(note.text for note in notes),
                   help="Diagnostic codes: " + ", ".join(note.code for note in notes))


def agent_requests(plan: PromptPlan, table: Any) -> None:
    """An agent run's requests, the first over the budget marked (``table``: how the page draws a table)."""
    if not rounds.is_agent_run(plan):
        return
    import pandas as pd

    st.subheader("Requests of this agent run")
    st.caption("Every model call is a request: the user's message, then each round of tool results the model "
               "answers. The prompt each would send with nothing left out, against the "
               f"{plan.budget:,}-token budget; the edit table below names each block's request.")
    table(aligned(pd.DataFrame([request.to_row() for request in rounds.requests_of(plan)])), key="agent-requests")


def previous_turn(conversation: Any, setup: Setup, names: list[str], first: str | None) -> None:
    """The raw prompt of the last two requests under one strategy, diffed (SillyTavern's view)."""
    st.subheader("What changed since the previous turn")
    chosen = st.selectbox("Strategy", names, index=names.index(first) if first in names else 0, key="turn-diff")
    try:
        found = turn_diff.turn_diff(conversation, setup.settings, chosen)
    except ContextfitError as error:  # a request this strategy cannot plan: said, not "one request"
        st.caption(f"The last two requests cannot be compared under {plain(chosen)}: {error_words(error)}")
        return
    if found is None:
        st.caption("This conversation has one request: there is no previous turn to compare with.")
        return
    st.caption(plain(found.summary()))
    if found.lines:
        st.code(found.text(), language="diff", wrap_lines=True, height=480 if len(found.lines) > 24 else "content")


def edit_table(conversation: Any, setup: Setup, plans: dict) -> dict:
    """The table of every block with its marks and fate under each strategy (an agent run: the request
    each block came with); returns the edits made in it (block id → marks), none when none."""
    import pandas as pd

    from contextfit.dashboard import diff, editor, state

    rows, fate_columns = editor.editor_rows(conversation, setup, plans), [f"fate: {name}" for name in plans]
    shown, agent = rounds.with_request_column(diff.fate_columns(rows, plans), plans)
    request = ["request"] if agent else []
    column = st.column_config
    edited = st.data_editor(
        pd.DataFrame(shown), key=f"editor-{st.session_state[state.EDITOR_VERSION]}", placeholder="—",
        hide_index=True, width="stretch", disabled=["id", "role", "kind", "text", "tokens", *request, *fate_columns],
        column_order=["id", *request, "role", "kind", "text", "tokens", *editor.EDITABLE.values(), *fate_columns],
        column_config={
            "pinned": column.CheckboxColumn("pinned", help="Protected: never dropped."),
            "exclude": column.CheckboxColumn("exclude", help="meta.manualExcluded: the manual strategy drops it first."),
            "relevance": column.NumberColumn("relevance", min_value=0.0, max_value=1.0, step=0.05,
                                             help="meta.relevance, used by vector-recall instead of its own score."),
            "tokens": column.NumberColumn("tokens", format="localized"),
            "text": column.TextColumn("text", width="medium"),  # room for each strategy's fate column
            "request": column.TextColumn("request", help="The model call this block came with: the user's "
                                         "message, or a round of tool results the model answers."),
        },
    )
    return editor.overrides_from_rows(edited.to_dict("records"), rows)
