"""Compare every strategy side by side on one conversation."""

from functools import partial

import streamlit as st

import widgets
from contextfit.dashboard import block_chart, breakdown, budget_bar, charts, compare_view, diff, editor, exports, fate_grid
from contextfit.dashboard import report, state, verdict
from contextfit.dashboard.audit_view import send_with_echo
from contextfit.dashboard.sessions import session_for

session, shared = st.session_state, widgets.shared()  # what the sidebar app.py draws chose

st.title("Compare strategies")
st.caption(
    "Which blocks does the model see? Every strategy fits the same conversation into the same budget. "
    "Each strategy's bar is the context window: what is sent, the free budget, and the response reserve."
)
presenting = widgets.presentation_mode(toggle=True)
st.html(charts.legend_html())
st.html(budget_bar.CSS + block_chart.CSS)
source = widgets.start(shared)  # the sidebar's notes; no conversation yet: they say why, and the page stops here
conversation, options = source.conversation, widgets.settings.strategy_options()  # options: below, in the sidebar
if conversation.warnings:
    st.expander(f"Import notes ({len(conversation.warnings)})", key="import-notes").text("\n".join(conversation.warnings))
if (current_input := compare_view.current_input_note(conversation)):
    st.caption(current_input)
widgets.need_strategies(shared.setup)
setup = shared.setup.replace(**options, overrides=session[state.OVERRIDES] or None)

verdict_area = st.container()  # the verdict row goes on top, once every plan is made
fits = st.empty()  # why nothing fits, or that everything does (with the Squeeze button), once every plan is made
progress = st.progress(0.0, text="Counting tokens and fitting…")
# Each strategy's column is drawn as soon as its plan is made, so the browser renders one strategy while the next
# is fitted; the charts follow once all are made, so side-by-side charts can share their scales. They get a row of
# their own, so they line up across the strategies whatever the text above them takes; actions go below them.
count = len(setup.strategies)
grid = zip(st.columns(count), st.columns(count), st.columns(count))
plans, chart_slots, error_slots = {}, {}, {}
made = compare_view.each_strategy(session_for(conversation).plans(setup.settings, strategies=setup.strategies),
                                  setup.strategies)  # an error is a column's, never the page's
for done, ((head, chart, details), (name, plan)) in enumerate(zip(grid, made), start=1):
    plans[name], shown = plan, compare_view.column(name, plan)
    progress.progress(done / count, text=f"Fitted {name} ({done} of {count})")
    head.subheader(name)
    if shown.error:
        error_slots[name] = head.empty()
        error_slots[name].error(shown.error)
        continue
    head.metric("Prompt tokens", shown.tokens, help="What is sent, counted with the model's tokenizer (tool "
                "definitions and chat overhead included).")
    head.caption(shown.budget)
    head.caption(shown.tokenizer)
    chart_slots[name] = (chart.container(), chart.container())  # not st.empty: a refit updates the charts in place
    # keyed: the label's counts change with every refit, and a new unkeyed expander is drawn closed
    details.expander(shown.dropped, key=f"dropped-{name}").text(shown.dropped_lines)
    if plan.summary is not None:
        details.expander("Summary sent to the model", key=f"summary-{name}").text(plan.summary.content)
    actions = details.container(horizontal=True)  # side by side, or one under the other in a narrow column
    with actions.popover("Export", help="This strategy's request, blocks or whole plan as a file."):
        for file in exports.PLAN_FILES:  # made when its button is clicked, not on every run
            st.download_button(file.label, partial(file.make, plan), file_name=f"{source.stem}-{name}-{file.suffix}",
                               mime=file.mime, key=f"{file.key}-{name}", on_click="ignore")
    if actions.button("Send", key=f"send-{name}", help="Store this conversation as a chat, generate with the offline "
                      "echo provider under this strategy, and open its audit."):
        with st.spinner("Generating…"):
            session.audit_chat = send_with_echo(conversation, setup, name, name=source.name[:80])
        st.switch_page("pages/audit.py")
    for note in shown.notes:
        details.caption(note)
progress.empty()
outcome = compare_view.outcome(plans)
with fits.container():
    widgets.say(outcome.notes)
    if outcome.squeeze is not None:
        st.button(f"Squeeze: lower the context limit to {outcome.squeeze:,}", key="squeeze", on_click=widgets.set_setting,
                  args=(state.LIMIT, outcome.squeeze), help="A limit under which a quarter of what may be dropped no "
                  "longer fits, to see the strategies at work.")
for slot in error_slots.values() if outcome.failed_alike else ():  # said once, above the columns
    slot.caption("Does not fit (see above).")

fitted = compare_view.fitted(plans)
token_scale = charts.prompt_scale(list(fitted.values()))
dense = block_chart.dense_threshold(len(fitted))  # side by side: few enough bars that each can be hovered
block_scale = charts.block_scale(list(fitted.values()), dense)
for name, (budget_slot, blocks_slot) in chart_slots.items():  # HTML, not plotly: plotly charts cost the browser most
    budget_slot.html(budget_bar.budget_html(fitted[name], token_scale=token_scale))
    blocks_slot.html(block_chart.blocks_html(fitted[name], token_scale=block_scale, dense_threshold=dense))
# Every chart goes out before the tables (the fate matrix into its place below the breakdown): the browser draws
# them while the server makes the tables, whose first one imports pandas (a second on a cold process).
breakdown_area = st.container()
if len(fitted) > 1:
    st.subheader("Fate of every block, strategy by strategy")
    st.html(fate_grid.fate_html(fitted))
import pandas as pd  # noqa: E402  (after the charts: see above)

with verdict_area:
    st.subheader("Verdict")
    rows = verdict.verdict_rows(plans)
    styles = pd.DataFrame(verdict.styles(rows))
    widgets.table(pd.DataFrame(verdict.table(rows)).style.apply(lambda _: styles, axis=None).hide(axis="index"),
                presenting, hide_index=True, width="stretch", key="verdict",
                column_config={verdict.HEADERS["description"]: st.column_config.TextColumn(width="large")})
    st.caption("Best value of each column highlighted. Prompt cost: the prompt at the model's catalog input price "
               "(the reply is billed on top).")
    st.download_button("Download the comparison (HTML)", partial(report.comparison_html, plans, source_name=source.name,
                       settings=compare_view.report_settings(setup)), file_name=f"contextfit-{source.stem}.html",
                       mime="text/html", key="report", on_click="ignore",
                       help="One file with the verdict, settings, breakdown and charts; opens offline.")

if fitted:
    with breakdown_area:
        st.subheader("Tokens by kind")
        st.caption("What each strategy sends, by kind of block (SillyTavern's prompt itemization); chat overhead is "
                   "the reply priming and framing no block holds. Each column adds up to the prompt tokens.")
        st.dataframe(pd.DataFrame(breakdown.breakdown_table(fitted)), hide_index=True, key="breakdown")
        if (tools := breakdown.per_tool(next(iter(fitted.values())))):
            st.caption("Tool definitions, per tool (the same for every strategy), largest first:")
            st.dataframe(pd.DataFrame(tools), hide_index=True, key="tools")

if len(fitted) > 1:
    st.subheader("What two strategies do differently")
    names, (left, right), pair = list(fitted), st.columns(2), diff.default_pair(fitted)
    first = left.selectbox("Strategy A", names, index=pair[0], key="diff-a")
    second = right.selectbox("Strategy B", names, index=pair[1], key="diff-b")
    differences = diff.differences(fitted[first], fitted[second])  # none when the two are one
    st.caption(diff.summary(first, second, differences))
    if differences:
        st.dataframe(pd.DataFrame([d.to_row(first, second) for d in differences]), hide_index=True, key="diff")

st.subheader("Edit the conversation")
st.caption("Pin a block to protect it, mark it for manual exclusion, or set its relevance (0–1); the comparison follows.")
rows, fate_columns, column = editor.editor_rows(conversation, setup, plans), [f"fate: {name}" for name in plans], st.column_config
edited = st.data_editor(
    pd.DataFrame(diff.fate_columns(rows, plans)), key=f"editor-{session[state.EDITOR_VERSION]}", placeholder="—",
    hide_index=True, width="stretch", disabled=["id", "role", "kind", "text", "tokens", *fate_columns],
    column_order=["id", "role", "kind", "text", "tokens", *editor.EDITABLE.values(), *fate_columns],
    column_config={
        "pinned": column.CheckboxColumn("pinned", help="Protected: never dropped."),
        "exclude": column.CheckboxColumn("exclude", help="meta.manualExcluded: the manual strategy drops it first."),
        "relevance": column.NumberColumn("relevance", min_value=0.0, max_value=1.0, step=0.05,
                                         help="meta.relevance, used by vector-recall instead of its own score."),
        "text": column.TextColumn("text", width="medium"),  # room for each strategy's fate column
    },
)
if (changes := editor.overrides_from_rows(edited.to_dict("records"), rows)):
    session[state.OVERRIDES] = editor.merge_overrides(session[state.OVERRIDES], changes)
    st.rerun()  # the same editor (same key) stays: its scroll position and the open sections are kept
