"""Replay: every strategy over a whole conversation — cost, prompt cache, and what survives."""

from functools import partial

import pandas as pd
import streamlit as st

import contextfit
from contextfit.pipeline.plan import BUILTIN_STRATEGIES
from contextfit.inputs.samples import SAMPLES, get_sample, sample_text
from contextfit.serving.store_cache import shared_store
from contextfit.dashboard import block_chart, budget_bar, charts, page_data as dashboard, presentation
from contextfit.dashboard import replay as views
from contextfit.serving.audits import chat_label, list_audited_chats
from contextfit.dashboard.compare_state import keep_reserve_below, reserve_max
from contextfit.dashboard.frame import in_frame
from contextfit.tokens.models import list_models

in_frame()

state = st.session_state


@st.cache_resource(show_spinner=False, max_entries=8)
def read(source: str | bytes) -> contextfit.Conversation:
    return contextfit.load_conversation(source)


presenting = bool(state.get("was_presenting"))  # Compare's presentation mode: larger text here too
if presenting:
    st.html(presentation.CSS)
st.title("Replay")
st.caption(
    "A strategy is chosen for a whole conversation, not one request. Each user message is replayed as a request "
    "under every strategy: what it costs per turn and in total, how much the provider's prompt cache still serves, "
    "and when a fact the conversation depends on stops being sent."
)

views.restore(state)  # the choices Streamlit dropped while another page was shown
models = [info.id for info in list_models()]
current = views.current_conversation(state, read)
linked = views.from_link(state, st.query_params.to_dict(), models, list(BUILTIN_STRATEGIES),
                         [sample.key for sample in SAMPLES], current is not None, views.compare_sample(state))
for note in linked:  # what a reload or a link could not bring, once per session
    st.warning(note)
notes = st.container()  # what the sidebar's choices need said, drawn above the replay
stored_chat = state.pop("replay_chat", None)  # set by the Audit page's "Replay under other settings"
if stored_chat:
    state["replay_source"], state["replay_chat_choice"] = "Stored chat", stored_chat
with st.sidebar:
    st.header("Conversation")
    sources = ["Sample"] + (["Current conversation"] if current is not None else []) + ["Stored chat"]
    if state.get("replay_source") not in sources:
        state["replay_source"] = "Current conversation" if current is not None else "Sample"
    source = st.radio("Source", sources, key="replay_source",
                      help="A built-in sample, the conversation of the Compare page, or a chat stored by the API.")
    conversation = None
    chat_id = None
    if source == "Sample":
        key = st.selectbox("Sample", [s.key for s in SAMPLES], format_func=lambda k: get_sample(k).title,
                           key="replay_sample")
        conversation = read(sample_text(key))
        identity, stem = f"sample:{key}", dashboard.file_stem(key)  # stem: what the downloads' names say
    elif source == "Current conversation":
        conversation = current
        identity, stem = ("current", state.get(views.CURRENT_KEY)), "current"
    else:
        chats = list_audited_chats()
        ids = [chat.id for chat in chats]
        labels = {chat.id: chat_label(chat) for chat in chats}
        if (missing := views.choose_chat(state, ids, labels)):  # a link's or a deleted chat: said, not swapped
            notes.warning(missing)
        if not ids:  # said in the page too: the sidebar's line alone left the page blank
            st.info("No stored chat yet.")
            notes.info("No chat is stored yet: a chat is stored when it is generated, with a strategy's “Send” "
                       "button on Compare strategies (the offline echo provider) or the HTTP API (contextfit "
                       "serve). Its audits then "
                       "offer “Replay under other settings”. Meanwhile, pick a sample under Source.")
            st.stop()
        chat_id = st.selectbox("Chat", ids, format_func=labels.get, key="replay_chat_choice")
        identity, stem = f"chat:{chat_id}", views.chat_stem(chat_id)
    st.header("Model and budget")
    suggested, declared = views.ReplaySetup("gpt-4o", 32_000, 4_000), ""
    if chat_id is not None:  # the chat's own model, limits and facts (the Audit page's "what if" starts there)
        try:
            suggested, declared = views.stored_setup(shared_store(), chat_id)
        except contextfit.ContextfitError as error:  # gone since it was listed, say
            st.error(dashboard.error_text(error))
            st.stop()
    elif conversation is not None:
        suggested = dashboard.suggested_setup(conversation)
        declared = views.facts_to_text(conversation.settings.get("facts"))
    views.follow(state, identity, suggested, models, declared)  # a new conversation: its model, limits and facts
    if source == "Current conversation":  # Compare's conversation, as Compare shows it
        if (followed := views.follow_compare(state, views.compare_choices(state, models))):
            notes.info(followed)
    for note in views.refill_limits(state, suggested):  # value=None: an emptied box holds None, not the minimum
        notes.warning(note)
    model = st.selectbox("Model", models, key="replay_model")
    limit = st.number_input("Context limit", min_value=1, max_value=views.MAX_LIMIT, value=None, step=256,
                            key="replay_limit")
    # a reserve at or above the limit is lowered, as on Compare (the engine would refuse it, in its own words)
    state.setdefault("replay_reserve", 0)
    lowered = keep_reserve_below(state, "replay_limit", "replay_reserve", lambda: int(suggested.response_reserve))
    if lowered:
        notes.warning(lowered)
    if (beyond := views.window_note(model, int(limit))):
        notes.warning(beyond)
    reserve = st.number_input("Response reserve", min_value=0, max_value=reserve_max(int(limit)), value=None, step=128,
                              key="replay_reserve", help="Room kept free for the answer; it stays below the limit.")
    state.setdefault("replay_strategies", list(BUILTIN_STRATEGIES))  # set here, not as the widgets' defaults:
    state.setdefault("replay_stable", True)  # a link or a page switch sets them too
    strategies = st.multiselect("Strategies", list(BUILTIN_STRATEGIES), key="replay_strategies")
    stable = st.checkbox("Also with stable_prefix", key="replay_stable",
                         help="truncate, summarize and clear-tool-results cutting down to 70% of the budget, "
                         "so the cached prompt prefix holds for several turns.")
    facts_text = st.text_area("Must-survive facts", key="replay_facts", height=130,
                              help="One per line: text, /regex/flags, or a JSON object such as "
                              '{"text": "ORD-7731", "message": 3} (pinned to a message). Empty: the default entity rule '
                              "(numbers, identifiers, quoted strings, names, code symbols the latest user "
                              "message shares with an earlier one).")
    if (unlinked := views.unlinked_facts(facts_text)):
        st.caption(unlinked)
views.keep(state)
views.write_link(st.query_params, state)  # the URL names this replay: a reload or a link opens it again

if not strategies:
    st.info("Choose at least one strategy in the sidebar.")
    st.stop()
# a fact that does not check is left out with its error, not the whole replay with it
facts, fact_errors = views.usable_facts(views.facts_from_text(facts_text))
for error in fact_errors:
    notes.warning(views.facts_error_text(error, facts_text) + " The line is left out until it is fixed.")
for note in views.json_line_notes(facts_text):
    notes.warning(note)
setup = views.ReplaySetup(model=model, context_limit=int(limit), response_reserve=int(reserve),
                          strategies=tuple(strategies), stable_prefix=stable, facts=facts)
try:
    if chat_id is not None:
        messages, settings = views.stored_input(shared_store(), chat_id, setup)
    else:
        messages, settings = views.conversation_input(conversation, setup)
    # a fact pinned to a message this conversation does not hold: left out with its error, as a bad line is
    setup, pin_errors = views.held_pins(setup, messages)
    for error in pin_errors:
        notes.warning(views.facts_error_text(error, facts_text) + " The line is left out until it is fixed.")
    # a bar once the replay starts (a kept replay draws none); a widget moved meanwhile stops the run at its next update
    bar = views.ProgressBar(st.empty(), len(setup.strategy_entries()))
    try:
        result = views.cached_run(state, messages, settings, setup, progress=bar)
    finally:
        bar.clear()
except contextfit.ContextfitError as error:
    st.error(views.facts_error_text(error, facts_text))
    st.stop()

st.subheader("Verdict")
st.markdown(views.verdict_text(result))
# whole turn numbers or "—" (a column holding None was floats: 2.0 beside NaN); the best cells highlighted
# as on Compare, every strategy tied for them (a verdict column took the width the last columns needed)
table = pd.DataFrame(views.totals_rows(result)).astype({"first loss (turn)": "Int64", "first drop (turn)": "Int64"})
highlight = pd.DataFrame(views.totals_styles(result))
table, highlight = table.drop(columns="verdict"), highlight.drop(columns="verdict")
styled = table.style.apply(lambda _: highlight, axis=None)
# short headers, each explained on hover: at 1280 pixels the long ones pushed the last columns out of view
column = st.column_config
headers = {
    "strategy": column.TextColumn(pinned=True),
    "total cost": column.TextColumn("total", help="Every turn's request at the catalog's prices, the real reply as output."),
    "mean cost / turn": column.TextColumn("mean / turn", help="The total over the turns that were fitted."),
    "cache hit rate": column.TextColumn("cache hits", help="Prompt tokens read from the provider's cache, over prompt tokens sent."),
    "tokens sent": column.NumberColumn(format="localized", help="Prompt tokens of every request."),  # 94,562,889
    "retention": column.TextColumn(help="Facts still sent, over facts in force, all turns."),
    "first loss (turn)": column.NumberColumn("first loss", help="The first turn that did not send a fact in force."),
    "first drop (turn)": column.NumberColumn(
        "first drop", help="The first turn that dropped, summarized or compressed something."),
    "failed turns": column.NumberColumn("failed", help="Turns the strategy could not fit (no prompt)."),
}
if presenting:  # HTML, which the presentation CSS enlarges (a data grid is a canvas), with the grid's headers
    short = {name: config["label"] for name, config in headers.items() if config.get("label")}
    shown, marks = table.rename(columns=short), highlight.rename(columns=short)
    st.table(shown.style.apply(lambda _: marks, axis=None).hide(axis="index").format(na_rep="—", thousands=","))
else:
    st.dataframe(styled, hide_index=True, width="stretch", key="replay-verdict", placeholder="—", column_config=headers)
if len(result.totals) > 1 and highlight.ne("").to_numpy().any():  # nothing fitted: nothing is highlighted
    st.caption("Best value of each column highlighted, for every strategy tied for it.")
st.caption(
    f"{len(result.requests):,} turn{'s' if len(result.requests) != 1 else ''} · {result.model} · budget "
    f"{result.budget:,} token{'s' if result.budget != 1 else ''} · {views.rules_text(result)}"
    + (f" · prices from {result.prices.get('source', 'the catalog')}" if result.prices else "")
)
saves = st.container(horizontal=True)  # each label whole at 800 pixels (columns cut them to "Turns (…")
saves.download_button("Turns (CSV)", partial(views.turns_csv, result), file_name=f"replay-{stem}-{result.model}-turns.csv",
                      mime="text/csv", key="replay-csv", on_click="ignore",  # a download does not rerun the page
                      help="Every turn of every strategy: tokens, cache, cost and the facts lost, a row each.")
saves.download_button("Replay (JSON)", partial(views.replay_json, result), file_name=f"replay-{stem}-{result.model}.json",
                      mime="application/json", key="replay-json", on_click="ignore",
                      help="The whole replay, as POST /api/v2/replay answers it.")
if (approximate := views.approximate_note(result.model)):
    st.info(dashboard.plain(approximate))
for note in [*result.notes, *views.fact_notes(result)]:
    st.warning(dashboard.plain(note))
st.html(views.lines_legend_html(result))
left, right = st.columns(2)
left.plotly_chart(views.lines_figure(result, "prompt", presenting), key="replay-prompt", width="stretch")
right.plotly_chart(views.lines_figure(result, "cost", presenting), key="replay-cost", width="stretch")
left.plotly_chart(views.lines_figure(result, "cache", presenting), key="replay-cache", width="stretch")
right.plotly_chart(views.lines_figure(result, "retention", presenting), key="replay-retention", width="stretch")

st.subheader("One turn")
views.turn_choice(state, len(result.requests))  # a link's turn, or the one shown before a page switch
turn = st.slider("Turn", 1, len(result.requests), key="replay_turn") if len(result.requests) > 1 else 1
views.write_link(st.query_params, state)  # the turn too, before the slider first moves
with st.spinner(f"Planning turn {turn:,} under {len(setup.strategy_entries())} strategies…"):
    plans = views.turn_plans(messages, settings, result, turn, setup)
st.html(charts.legend_html())  # the bars' colours, as on Compare
st.html(budget_bar.CSS + block_chart.CSS)  # the bars are Compare's, in HTML: presentation mode enlarges them
# one token axis for every strategy's bars, as on Compare: side by side, lengths compare
scale = charts.prompt_scale([plan for plan in plans.values() if not isinstance(plan, contextfit.ContextfitError)])
per_row = min(len(plans), 3)  # four to a row squeezed the charts' axes at 1280 pixels
failed_all, failed = views.turn_errors(plans, turn)
if failed_all:
    st.error(failed_all)
for position, (label, plan) in enumerate(plans.items() if failed_all is None else ()):
    if position % per_row == 0:  # a row of its own: a long caption in one cell does not push the next row's out of line
        columns = st.columns(per_row)
    with columns[position % per_row]:
        st.markdown(f"**{label}**")
        if label in failed:
            st.error(failed[label])
            continue
        numbers = views.turn_summary(result, label, turn)
        st.metric("Prompt tokens", f"{plan.prompt_tokens:,}", help=f"{numbers['cached']:,} read from the cache")
        st.caption(f"cost {numbers['cost']}")
        st.html(budget_bar.budget_html(plan, token_scale=scale))
        if numbers["lost"]:  # under the chart: a long list wraps without moving it out of line with its row
            st.caption(f"lost: {dashboard.plain(numbers['lost_text'])}")
