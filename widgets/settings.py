"""The sidebar's settings: the "Model and budget" section Compare and Replay share, and each page's own.

:func:`draw` makes the session's settings whole and valid for the conversation
(:func:`contextfit.dashboard.state.settle`), then draws their widgets, whose
bounds follow each other (the reserve stays below the limit). The number
boxes take ``value=None``: an emptied box holds ``None``, which the next run
gives back the conversation's suggestion.
"""

from __future__ import annotations

from functools import partial
from typing import Any

import streamlit as st

from contextfit.dashboard import state
from contextfit.dashboard.fact_list import fact_list
from contextfit.dashboard.facts_box import facts_to_text
from contextfit.dashboard.markdown import plain
from contextfit.dashboard.setup import Setup, suggested_setup
from contextfit.dashboard.strategy_lines import strategies_help
from contextfit.dashboard.sources import Source
from contextfit.fitting.registry import registry
from contextfit.fitting.result_cap import SUGGESTED_CAP
from contextfit.replays.recommend import PRIORITIES, PRIORITY_WORDS
from contextfit.replays.volume import DAYS_PER_MONTH, DEFAULT_CONVERSATIONS_PER_DAY
from contextfit.tokens.models import list_models

from .chosen import shared


def draw(source: Source, notes: list[tuple[str, str]]) -> Setup:
    """Settle and draw the shared settings for ``source``'s conversation (inside the sidebar); what the
    page should say about them (a value the link could not take, a reserve lowered) goes to ``notes``."""
    models = [info.id for info in list_models()]
    conversation = source.conversation
    settled = state.settle(st.session_state, conversation=source.key, suggest=partial(suggested_setup, conversation),
                           models=models, names=registry.names(), query=st.query_params.to_dict(),
                           facts=facts_to_text(conversation.settings.get("facts")))
    notes.extend(("warning", plain(note)) for note in settled)
    st.header("Model and budget")
    model = st.selectbox("Model", models, key=state.MODEL, help="From the catalog; the tokenizer follows the model.")
    limit = st.number_input("Context limit", min_value=1, max_value=state.MAX_LIMIT, value=None, step=256,
                            key=state.LIMIT, help="The model's whole window, prompt and response together.")
    reserve = st.number_input("Response reserve", min_value=0, max_value=state.reserve_max(limit), value=None,
                              step=128, key=state.RESERVE, help="Room kept free for the answer; the prompt's budget "
                              "is the limit minus this, so it stays below the limit.")
    strategies = st.multiselect("Strategies", registry.names(), key=state.STRATEGIES,
                                help=strategies_help(registry.names()))
    st.header("Decision")
    st.radio("Priority", PRIORITIES, format_func=PRIORITY_WORDS.__getitem__, key=state.PRIORITY,
             help="What the recommendation favours when it ranks the strategies: the share of the must-survive "
             "facts kept (then cost), the cost per conversation (then what is kept), or the prompt tokens read "
             "from the provider's cache (then cost).")
    st.number_input("Conversations per day", min_value=1, max_value=state.MAX_PER_DAY, value=None, step=100,
                    key=state.PER_DAY, help=f"The volume a month's cost is shown for ({DAYS_PER_MONTH} days); "
                    f"empty: {DEFAULT_CONVERSATIONS_PER_DAY:,}.")
    return Setup.of(model, limit, reserve, strategies)


def decision() -> tuple[str, int]:
    """The priority and the conversations a day the sidebar chose (:func:`contextfit.dashboard.state.decision`)."""
    return state.decision(st.session_state)


def strategy_options() -> dict[str, Any]:
    """Draw the Compare page's "Strategy options" (in the sidebar, below the shared settings) and return
    them as plan settings (``summary_tokens`` 0: unchosen, a tenth of the budget)."""
    with st.sidebar, st.expander("Strategy options"):
        st.number_input("Summary size (tokens)", min_value=0, max_value=state.MAX_SUMMARY_TOKENS, value=None, step=32,
                        key=state.SUMMARY_TOKENS,
                        help="summarize: the summary's maximum size; 0 chooses a tenth of the budget.")
        st.number_input("Relevance query window", min_value=1, max_value=state.MAX_RELEVANCE_WINDOW, value=None,
                        key=state.RELEVANCE_WINDOW, help="vector-recall: how many recent messages lorebook and "
                        "memory are compared with.")
        st.text_input("User name", key=state.USER_NAME, max_chars=state.MAX_USER_NAME,
                      help="Fills {{user}} in cards, lorebooks and chats.")
        st.number_input("Tool result cap (tokens)", min_value=0, max_value=state.MAX_SUMMARY_TOKENS, value=None,
                        step=500, key=state.TOOL_RESULT_CAP,
                        help=f"Every strategy: a single tool result over the cap is sent as its head and tail with a "
                        f"marker naming what was cut (compressed). 0 is off; {SUGGESTED_CAP:,} is a good start.")
    chosen = state.compare_settings(st.session_state)  # what Replay reads too, without these widgets
    return {name: chosen[name] for name in ("summary_tokens", "relevance_window", "user_name", "tool_result_cap")}


def replay_options() -> tuple[bool, str]:
    """Draw the Replay page's own settings (in the sidebar, below the shared ones): whether the
    ``stable_prefix`` variants are replayed too, and the must-survive facts to follow, as the facts
    box's lines — the box's own when it holds any, else the shared list as the user edited it on
    Compare ("" while it is not edited: the replay then finds the same defaults itself)."""
    with st.sidebar:
        stable = st.checkbox("Also with stable_prefix", key=state.STABLE,
                             help="truncate, summarize and clear-tool-results cutting down to 70% of the budget, "
                             "so the cached prompt prefix holds for several turns.")
        facts = st.text_area("Must-survive facts", key=state.FACTS, height=130,
                             help="One per line: text, /regex/flags, or a JSON object such as "
                             '{"text": "ORD-7731", "message": 3} (pinned to a message). Empty: the default entity '
                             "rule (numbers, identifiers, quoted strings, names, code symbols the latest user "
                             "message shares with an earlier one).")
        if (unlinked := state.unlinked_facts(facts)):
            st.caption(unlinked)
    return stable, facts if facts.strip() else shared_facts()


def shared_facts() -> str:
    """The must-survive list Compare shows, as the user edited it, in facts-box lines ("" unedited)."""
    sidebar, session = shared(), st.session_state
    if sidebar.source is None or sidebar.setup is None or not session.get(state.MUST_SURVIVE):
        return ""
    settings = sidebar.setup.replace(**state.compare_settings(session)).settings  # Compare's: its user name too
    return fact_list(sidebar.source.conversation, settings, session[state.MUST_SURVIVE]).text()
