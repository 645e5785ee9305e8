"""Replay: the answer for a whole conversation — which strategy to ship, what it costs, what it forgets."""

from functools import partial

import pandas as pd
import streamlit as st

import widgets
from contextfit.dashboard import agent_rounds, answer_box, block_chart, budget_bar, charts, exports, facts_box
from contextfit.dashboard import replay_charts, state
from contextfit.dashboard import replay as views
from contextfit.dashboard.markdown import plain
from contextfit.dashboard.setup import window_note
from contextfit.dashboard.tables import aligned
from contextfit.errors import ContextfitError

session, shared = st.session_state, widgets.shared()  # what the sidebar app.py draws chose
priority, per_day = shared.priority, shared.conversations_per_day  # the sidebar's Decision

st.title("Replay")
st.caption("Every request of the conversation under every strategy: what it costs per turn and in total, how much "
           "the provider's prompt cache serves, and when a fact the conversation depends on stops being sent.")
presenting = widgets.presentation_mode()  # Compare's toggle: larger text and HTML tables here too
source, chosen = widgets.start(shared), shared.setup  # no conversation yet: the notes say why, and the page stops
notes = st.container()  # what the choices need said, drawn above the answer
stable, facts_text = widgets.settings.replay_options()  # in the sidebar, below the shared settings
if (beyond := window_note(chosen.model, chosen.context_limit)):
    notes.warning(beyond)
widgets.need_strategies(chosen)
facts, fact_notes = facts_box.read_box(facts_text)  # a fact that does not check is left out, not the replay
setup = views.setup_of(chosen, session, stable, facts)  # Compare's strategy options and hand edits too
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

# The answer first: Compare's sentence for this conversation, and what each strategy costs at the user's volume.
answer = views.answer(result, setup.strategies, priority)
st.html(answer_box.ANSWER_CSS + answer_box.answer_html(answer))
st.caption(answer_box.evidence_text(answer, per_day))
costs = answer_box.volume_rows(answer, per_day)
marks = pd.DataFrame(answer_box.volume_styles(answer, costs))
st.table(aligned(pd.DataFrame(costs).style.apply(lambda _: marks, axis=None).hide(axis="index")))  # HTML: the Lost lines wrap

st.subheader("Over the whole conversation")
st.caption("The answer above judges the latest request, as Compare does; this table adds up every request.")
st.markdown(views.verdict_text(result))
table = pd.DataFrame(views.totals_rows(result)).astype({"first loss (turn)": "Int64", "first drop (turn)": "Int64"})
highlight = pd.DataFrame(views.totals_styles(result))
table, highlight = table.drop(columns="verdict"), highlight.drop(columns="verdict")
short = {name: label for name, (label, _) in views.TOTALS_HEADERS.items()}  # short headers, explained on hover
column = st.column_config
headers = {"strategy": column.TextColumn(pinned=True)} | {  # whole numbers with separators: 94,562,889
    name: column.NumberColumn(label, help=hint, format="localized") if name in views.WHOLE_COLUMNS
    else column.TextColumn(label, help=hint) for name, (label, hint) in views.TOTALS_HEADERS.items()}
widgets.table(table.style.apply(lambda _: highlight, axis=None), presenting, hide_index=True, width="stretch",
              html=aligned(table.rename(columns=short).style.apply(lambda _: highlight.rename(columns=short), axis=None)
                           .hide(axis="index").format(na_rep="—", thousands=",")), key="replay-verdict", placeholder="—",
              column_config=headers)
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

rounds = agent_rounds.view(result)  # an agent's run: every tool round is a request the provider bills
if rounds.shown:
    st.subheader("Requests per user turn")
    st.caption(rounds.caption)
    strategy = st.selectbox("Strategy", list(result.turns), key="replay-rounds-strategy")
    widgets.table(aligned(pd.DataFrame(rounds.rows[strategy])), presenting, hide_index=True, width="stretch",
                  key="replay-rounds")

st.subheader("One turn")
state.turn_choice(session, len(result.requests))  # a link's turn, or the one shown before a page switch
turn = st.slider("Turn", 1, len(result.requests), key=state.TURN) if len(result.requests) > 1 else 1
widgets.write_link()  # the turn too, before the slider first moves
if rounds.shown:
    st.caption(agent_rounds.turn_text(result, turn))
with st.spinner(f"Planning turn {turn:,} under {len(setup.strategy_entries())} strategies…"):
    plans = views.turn_plans(messages, settings, result, turn, setup)
st.html(charts.legend_html())  # the bars' colours: the fates, as on Compare
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
        place.caption(f"{numbers['cost']} · {numbers['counts']}")
        place.html(budget_bar.budget_html(plan, token_scale=scale))
        if numbers["lost"]:  # under the chart: a long list wraps without moving it out of line with its row
            place.caption(f"lost: {plain(numbers['lost_text'])}")
