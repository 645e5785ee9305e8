"""Replay: every strategy over a whole conversation — cost, prompt cache, and what survives."""

from functools import partial

import pandas as pd
import streamlit as st

import widgets
from contextfit.dashboard import block_chart, budget_bar, charts, exports, facts_box, replay_charts, state
from contextfit.dashboard import replay as views
from contextfit.dashboard.markdown import plain
from contextfit.dashboard.setup import ReplaySetup
from contextfit.errors import ContextfitError

session, shared = st.session_state, widgets.shared()  # what the sidebar app.py draws chose

st.title("Replay")
st.caption(
    "A strategy is chosen for a whole conversation, not one request. Each user message is replayed as a request "
    "under every strategy: what it costs per turn and in total, how much the provider's prompt cache still serves, "
    "and when a fact the conversation depends on stops being sent."
)
presenting = widgets.presentation_mode()  # Compare's: larger text here too
source, chosen = widgets.start(shared), shared.setup  # no conversation yet: the notes say why, and the page stops
notes = st.container()  # what the choices need said, drawn above the replay
stable, facts_text = widgets.settings.replay_options()  # in the sidebar, below the shared settings
if (beyond := views.window_note(chosen.model, chosen.context_limit)):
    notes.warning(beyond)
widgets.need_strategies(chosen)
facts, fact_notes = facts_box.read_box(facts_text)  # a fact that does not check is left out, not the replay
# Compare's hand edits (pins, exclusions, relevance) apply here too: the latest request is Compare's plan
setup = ReplaySetup(chosen.settings.replace(overrides=session.get(state.OVERRIDES) or None), chosen.strategies,
                    stable, facts)
try:
    messages, settings = views.conversation_input(source.conversation, setup)
    setup, pin_notes = facts_box.held_facts(setup, messages, facts_text)  # a pin to a message it does not hold
    for note in (*fact_notes, *pin_notes):
        notes.warning(note)
    # a bar once the replay starts (a kept replay draws none); a widget moved meanwhile stops the run at its next update
    bar = views.ProgressBar(st.empty(), len(setup.strategy_entries()))
    try:
        result = views.cached_run(session, messages, settings, setup, progress=bar)
    finally:
        bar.clear()
except ContextfitError as error:
    st.error(facts_box.facts_error_text(error, facts_text))
    st.stop()

st.subheader("Verdict")
st.markdown(views.verdict_text(result))
# whole turn numbers or "—" (a column holding None was floats: 2.0 beside NaN); the best cells highlighted
# as on Compare, every strategy tied for them (a verdict column took the width the last columns needed)
table = pd.DataFrame(views.totals_rows(result)).astype({"first loss (turn)": "Int64", "first drop (turn)": "Int64"})
highlight = pd.DataFrame(views.totals_styles(result))
table, highlight = table.drop(columns="verdict"), highlight.drop(columns="verdict")
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
short = {name: config["label"] for name, config in headers.items() if config.get("label")}  # the grid's, for HTML
marks = highlight.rename(columns=short)
widgets.table(table.style.apply(lambda _: highlight, axis=None), presenting, hide_index=True, width="stretch",
            html=table.rename(columns=short).style.apply(lambda _: marks, axis=None).hide(axis="index").format(
                na_rep="—", thousands=","), key="replay-verdict", placeholder="—", column_config=headers)
if len(result.totals) > 1 and highlight.ne("").to_numpy().any():  # nothing fitted: nothing is highlighted
    st.caption("Best value of each column highlighted, for every strategy tied for it.")
st.caption(views.replay_caption(result))
saves = st.container(horizontal=True)  # each label whole at 800 pixels (columns cut them to "Turns (…")
saves.download_button("Turns (CSV)", partial(exports.turns_csv, result), mime="text/csv", key="replay-csv",
                      file_name=f"replay-{source.stem}-{result.model}-turns.csv", on_click="ignore",  # no rerun
                      help="Every turn of every strategy: tokens, cache, cost and the facts lost, a row each.")
saves.download_button("Replay (JSON)", partial(exports.replay_json, result), mime="application/json",
                      file_name=f"replay-{source.stem}-{result.model}.json", key="replay-json", on_click="ignore",
                      help="The whole replay, as POST /api/v2/replay answers it.")
if (approximate := views.approximate_note(result.model)):
    st.info(plain(approximate))
for note in [*result.notes, *views.fact_notes(result)]:
    st.warning(plain(note))
st.html(replay_charts.lines_legend_html(result))
left, right = st.columns(2)
for place, metric in ((left, "prompt"), (right, "cost"), (left, "cache"), (right, "retention")):
    place.plotly_chart(replay_charts.lines_figure(result, metric, presenting), key=f"replay-{metric}", width="stretch")

st.subheader("One turn")
state.turn_choice(session, len(result.requests))  # a link's turn, or the one shown before a page switch
turn = st.slider("Turn", 1, len(result.requests), key=state.TURN) if len(result.requests) > 1 else 1
widgets.write_link()  # the turn too, before the slider first moves
with st.spinner(f"Planning turn {turn:,} under {len(setup.strategy_entries())} strategies…"):
    plans = views.turn_plans(messages, settings, result, turn, setup)
st.html(charts.legend_html())  # the bars' colours, as on Compare
st.html(budget_bar.CSS + block_chart.CSS)  # the bars are Compare's, in HTML: presentation mode enlarges them
# one token axis for every strategy's bars, as on Compare: side by side, lengths compare
scale = charts.prompt_scale([plan for plan in plans.values() if not isinstance(plan, ContextfitError)])
failed_all, failed = views.turn_errors(plans, turn)
if failed_all:
    st.error(failed_all)
per_row = min(len(plans), 3)  # four to a row squeezed the charts' axes at 1280 pixels
for row in views.in_rows(list(plans.items()) if failed_all is None else [], per_row):
    for place, (label, plan) in zip(st.columns(per_row), row):
        place.markdown(f"**{label}**")
        if label in failed:
            place.error(failed[label])
            continue
        numbers = views.turn_summary(result, label, turn)
        place.metric("Prompt tokens", f"{plan.prompt_tokens:,}", help=f"{numbers['cached']:,} read from the cache")
        place.caption(f"cost {numbers['cost']}")
        place.html(budget_bar.budget_html(plan, token_scale=scale))
        if numbers["lost"]:  # under the chart: a long list wraps without moving it out of line with its row
            place.caption(f"lost: {plain(numbers['lost_text'])}")
