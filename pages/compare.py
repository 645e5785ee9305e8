"""Compare every strategy side by side on one conversation — and say which one to ship."""

from functools import partial

import streamlit as st

import widgets
from widgets import compare as draw
from contextfit.dashboard import answer_view, block_chart, budget_bar, category_bar, charts, compare_view, fact_list
from contextfit.dashboard import fate_grid, state
from contextfit.dashboard.sessions import session_for
from contextfit.dashboard.setup import window_note

session, shared = st.session_state, widgets.shared()  # what the sidebar app.py draws chose

top = st.container(horizontal=True, vertical_alignment="bottom")
top.title("Compare strategies")
presenting = widgets.presentation_mode(toggle=True, where=top)
st.container(key="intro").caption("Every strategy fits the same conversation into the same budget: which one to "
                                  "ship, what it costs, what it forgets, and the context window each one sends.")
st.html(budget_bar.CSS + block_chart.CSS + category_bar.CSS + answer_view.CSS)
source = widgets.start(shared)  # the sidebar's notes; no conversation yet: they say why, and the page stops here
conversation, options = source.conversation, widgets.settings.strategy_options()  # options: below, in the sidebar
if conversation.warnings:
    st.expander(f"Import notes ({len(conversation.warnings)})", key="import-notes").text("\n".join(conversation.warnings))
if (current_input := compare_view.current_input_note(conversation)):
    st.caption(current_input)
if (beyond := window_note(shared.setup.model, shared.setup.context_limit)):
    st.warning(beyond)
widgets.need_strategies(shared.setup)
setup = shared.setup.replace(**options, overrides=session[state.OVERRIDES] or None)
listed = fact_list.fact_list(conversation, setup.settings, session.get(state.MUST_SURVIVE))

answer_area = st.container()  # the recommendation goes on top, once every plan is made
fits = st.empty()  # why nothing fits, that everything does (with Squeeze), or which strategies send one prompt
legend = st.empty()  # the window bars' categories, once every plan is made
progress = st.progress(0.0, text="Counting tokens and fitting…")
# Each strategy's head is drawn as soon as its plan is made, so the browser renders one strategy while the next
# is fitted; the charts follow once all are made, so side-by-side charts can share their scales.
count = len(setup.strategies)
slots, matrix_area = draw.columns(count)
plans, answer_places, shown = {}, {}, {}
made = compare_view.each_strategy(session_for(conversation).plans(setup.settings, strategies=setup.strategies),
                                  setup.strategies)  # an error is a column's, never the page's
for done, (slot, (name, plan)) in enumerate(zip(slots, made), start=1):
    plans[name], shown[name] = plan, compare_view.column(name, plan)
    progress.progress(done / count, text=f"Fitted {name} ({done} of {count})")
    answer_places[name] = draw.head(slot, name, shown[name])
progress.empty()
fitted = compare_view.fitted(plans)
outcome = compare_view.outcome(plans, compare_view.replanner(session_for(conversation), setup))
alike, own = compare_view.split_diagnostics(shown)  # what every plan says alike is said once, above the columns
with fits.container():
    widgets.say(outcome.notes)
    draw.shared_diagnostics(alike)
    if outcome.squeeze is not None:
        st.button(outcome.squeeze.label, key="squeeze", on_click=widgets.set_settings,
                  args=({state.LIMIT: outcome.squeeze.limit, state.RESERVE: outcome.squeeze.reserve},),
                  help="A window in which part of what may be dropped no longer fits, with the reserve scaled "
                  "to it, so the strategies are seen at work.")
legend.html(category_bar.legend_html(fitted.values()))

with matrix_area:  # under the windows, before the charts: the first screen of a projector holds all three
    if len(fitted) > 1:
        st.subheader("Fate of every block, strategy by strategy")
        st.html(charts.legend_html(only=fate_grid.shades_of(fitted), window=False))
        st.html(fate_grid.fate_html(fitted))
token_scale = charts.prompt_scale(list(fitted.values()))
dense = block_chart.dense_threshold(len(fitted))  # side by side: few enough bars that each can be hovered
block_scale = charts.block_scale(list(fitted.values()), dense)
reasons = compare_view.alike_reasons(fitted)
for slot, name in zip(slots, plans):
    if name in fitted:  # HTML, not plotly: plotly charts cost the browser most
        plan = fitted[name]
        slot.charts.html(budget_bar.budget_html(plan, token_scale=token_scale))
        slot.charts.html(block_chart.blocks_html(plan, token_scale=block_scale, dense_threshold=dense))
        draw.details(slot, name, plan, shown[name], source, setup, [answer_view.placement_line(plan, listed),
                     answer_view.effective_note(plan), reasons.get(name)], own.get(name, ()))
    elif outcome.failed_alike:  # said once, above the columns
        answer_places[name].caption("Does not fit (see above).")

# The recommendation: one call with the plans' settings and the followed facts, kept while they stay the same.
recommendation = answer_view.cached_recommendation(session, conversation, source.key, setup.settings, setup.strategies,
                                       listed.facts(), shared.priority)
said = answer_view.answer_view(recommendation, shared.conversations_per_day)
draw.answer(answer_area, said, listed)
for name, place in answer_places.items():
    draw.column_answer(place, name, said.columns.get(name), fitted.get(name))

import pandas as pd  # noqa: E402  (after the charts: the first table imports it, a second on a cold process)
import widgets.facts  # noqa: E402
from contextfit.dashboard import breakdown, diff, editor, report, verdict  # noqa: E402  (pandas, once imported)
from contextfit.dashboard.tables import aligned  # noqa: E402

st.subheader("Verdict")
rows = verdict.verdict_rows(plans, recommendation=recommendation)
styles = pd.DataFrame(verdict.styles(rows))
# HTML in both modes: "what it does" wraps (a data grid cut it with "…")
st.table(aligned(pd.DataFrame(verdict.table(rows)).style.apply(lambda _: styles, axis=None).hide(axis="index")))
st.caption(verdict.caption(rows, recommendation))
st.download_button("Download the comparison (HTML)", partial(
    report.comparison_html, plans, source_name=source.name, settings=compare_view.report_settings(setup),
    recommendation=recommendation, overrides=session[state.OVERRIDES], conversations_per_day=shared.conversations_per_day),
    file_name=f"contextfit-{source.stem}.html", mime="text/html", key="report", on_click="ignore",
    help="One file with the recommendation, verdict, settings, breakdown and charts; opens offline.")

if fitted:
    st.subheader("Tokens by kind")
    st.caption("What each strategy sends, by kind of block (SillyTavern's prompt itemization); chat overhead is "
               "the reply priming and framing no block holds. Each column adds up to the prompt tokens.")
    widgets.table(aligned(pd.DataFrame(breakdown.breakdown_table(fitted))), presenting, hide_index=True, key="breakdown")
    first = next(iter(fitted.values()))
    if (tools := breakdown.per_tool(first)):
        st.caption("Tool definitions, per tool (the same for every strategy), largest first:")
        widgets.table(aligned(pd.DataFrame(tools)), presenting, hide_index=True, key="tools")
    draw.agent_requests(first, partial(widgets.table, presenting=presenting, hide_index=True))
    draw.previous_turn(conversation, setup, list(fitted), recommendation.strategy)

if len(fitted) > 1:
    st.subheader("What two strategies do differently")
    names, (left, right), pair = list(fitted), st.columns(2), diff.default_pair(fitted)
    first_name = left.selectbox("Strategy A", names, index=pair[0], key="diff-a")
    second = right.selectbox("Strategy B", names, index=pair[1], key="diff-b")
    differences = diff.differences(fitted[first_name], fitted[second])  # none when the two are one
    st.caption(diff.summary(first_name, second, differences))
    if differences:
        widgets.table(aligned(pd.DataFrame([d.to_row(first_name, second) for d in differences])), presenting, hide_index=True,
                      key="diff")

st.subheader("Edit the conversation")
st.caption("The must-survive facts the recommendation weighs: untick one, edit one, or add a line (Replay follows "
           "the same list).")
widgets.facts.editor(listed)
st.caption("Pin a block to protect it, mark it for manual exclusion, or set its relevance (0–1); the comparison follows.")
if (changes := draw.edit_table(conversation, setup, plans)):
    session[state.OVERRIDES] = editor.merge_overrides(session[state.OVERRIDES], changes)
    st.rerun()  # the same editor (same key) stays: its scroll position and the open sections are kept
