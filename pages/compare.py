"""Compare every strategy side by side on one conversation."""

from functools import partial

import streamlit as st

import contextfit
from contextfit.dashboard import block_chart, breakdown, budget_bar, charts, compare_state, page_data as dashboard, diff, fate_grid, presentation, report, source_panel, verdict
from contextfit.dashboard.frame import in_frame
from contextfit.tokens.models import list_models

in_frame()

state = st.session_state
state.setdefault("overrides", {})
state.setdefault("editor_version", 0)


st.title("Compare strategies")
st.caption(
    "Which blocks does the model see? Every strategy fits the same conversation into the same budget. "
    "Each strategy's bar is the context window: what is sent, the free budget, and the response reserve."
)
presenting = st.toggle("Presentation mode", key="presentation",
                       help="Larger text and charts for a projector (1920×1080); the sidebar folds away.")
if presenting:
    st.html(presentation.CSS)
if presenting != state.get("was_presenting", False):
    state.was_presenting = presenting
    st.set_page_config(initial_sidebar_state="collapsed" if presenting else "expanded")
st.html(charts.legend_html())
st.html(budget_bar.CSS + block_chart.CSS)

source = source_panel.conversation_source()  # the sidebar's "Conversation" section
if source is None:
    state.pop(compare_state.CURRENT, None)
    st.stop()
stem = dashboard.file_stem(source.name)  # downloads name the conversation: two chats' files do not clash
conversation = source.conversation
# the Replay page's "Current conversation"
state[compare_state.CURRENT], state[compare_state.CURRENT_KEY] = conversation, source.key

input_key = source.key
models = [info.id for info in list_models()]
names = contextfit.registry.names()
# Settings survive page switches and reruns (kept outside widget state), start from the URL once per
# session, and are repaired before the widgets are drawn: a widget never holds a value the engine refuses.
notes = compare_state.settle(state, input_key=input_key, suggest=partial(dashboard.suggested_setup, conversation),
                             models=models, names=names, query=st.query_params.to_dict())
for key, value in compare_state.query_of(state).items():
    if st.query_params.get(key) != value:
        st.query_params[key] = value
for note in notes:
    st.warning(note)

with st.sidebar:  # the number boxes: value=None, so an emptied one holds None (settle gives it its default)
    st.header("Model and budget")
    model = st.selectbox("Model", models, key="model", help="From the catalog; the tokenizer follows the model.")
    limit = st.number_input("Context limit", min_value=1, max_value=compare_state.MAX_LIMIT, value=None, step=256,
                            key="limit", help="The model's whole window, prompt and response together.")
    reserve = st.number_input("Response reserve", min_value=0, max_value=compare_state.reserve_max(limit), value=None,
                              step=128, key="reserve", help="Room kept free for the answer; the prompt's budget is "
                              "the limit minus this, so it stays below the limit.")
    strategies = st.multiselect("Strategies", names, key="strategies",
                                help="Each one fits the same conversation; they are shown side by side.")
    with st.expander("Strategy options"):
        summary_tokens = st.number_input("Summary size (tokens)", min_value=0, max_value=compare_state.MAX_SUMMARY_TOKENS,
                                         value=None, step=32, key="summary_tokens",
                                         help="summarize: the summary's maximum size; 0 chooses a tenth of the budget.")
        relevance_window = st.number_input("Relevance query window", min_value=1, max_value=compare_state.MAX_RELEVANCE_WINDOW,
                                           value=None, key="relevance_window",
                                           help="vector-recall: how many recent messages lorebook and memory are compared with.")
        user_name = st.text_input("User name", key="user_name", max_chars=compare_state.MAX_USER_NAME,
                                  help="Fills {{user}} in cards, lorebooks and chats.")

if conversation.warnings:
    with st.expander(f"Import notes ({len(conversation.warnings)})", key="import-notes"):
        st.text("\n".join(conversation.warnings))
if (current_input := compare_state.current_input_note(conversation)) is not None:
    st.caption(current_input)
if not strategies:
    st.info("Choose at least one strategy in the sidebar.")
    st.stop()

setup = dashboard.Setup(
    model=model, context_limit=int(limit), response_reserve=int(reserve), strategies=tuple(strategies),
    summary_tokens=int(summary_tokens) or None, relevance_window=int(relevance_window), user_name=user_name,
    overrides=state.overrides,
)
verdict_area = st.container()  # the verdict row goes on top, once every plan is made
# Each strategy's column is drawn as soon as its plan is made, so the
# browser renders one strategy while the next is fitted; the charts follow
# once all are made, so side-by-side charts can share their scales.
fits = st.empty()  # says so when every block fits, with the Squeeze button
progress = st.progress(0.0, text="Counting tokens and fitting…")
plans: dict[str, contextfit.PromptPlan | contextfit.ContextfitError] = {}
chart_slots = {}
error_slots = {}  # a failed strategy's box, made one line when every strategy failed alike
columns = st.columns(len(strategies))
# The charts get a row of their own, so they line up across the strategies whatever the text above them
# takes (a long name or caption wraps in a narrow column); what to do with each plan goes below them.
chart_columns = st.columns(len(strategies))
detail_columns = st.columns(len(strategies))


made = compare_state.each_strategy(dashboard.iter_plans(conversation, setup), strategies)  # an error is a column's, never the page's
for done, (column, chart_column, details, (name, plan)) in enumerate(zip(columns, chart_columns, detail_columns, made), start=1):
    plans[name] = plan
    progress.progress(done / len(strategies), text=f"Fitted {name} ({done} of {len(strategies)})")
    with column:
        st.subheader(name)
        if isinstance(plan, contextfit.ContextfitError):
            error_slots[name] = st.empty()
            error_slots[name].error(dashboard.error_text(plan))
            continue
        numbers = dashboard.headline(plan)
        st.metric("Prompt tokens", f"{numbers['prompt_tokens']:,}",
                  help="What is sent, counted with the model's tokenizer (tool definitions and chat overhead included).")
        st.caption(
            f"of a {numbers['budget']:,}-token budget ({numbers['used_percent']}%) · context {numbers['context_limit']:,}"
            f" · reserve {numbers['response_reserve']:,}"
        )
        # an approximate profile's count is a band: "about E tokens (approximate, up to N)"; the metric is N
        st.caption(f"tokenizer {numbers['tokenizer']} · " + (numbers["band"] if numbers["approximate"] else "exact"))
    with chart_column:
        chart_slots[name] = (st.container(), st.container())  # not st.empty: a refit updates the charts in place
    with details:
        # Keyed: the label counts change with every refit, and an unkeyed expander with a new label is a
        # new element, which the browser draws closed.
        with st.expander(f"Excluded or summarized: {numbers['dropped']} blocks, {numbers['dropped_tokens']:,} tokens",
                         key=f"dropped-{name}"):
            st.text("\n".join(dashboard.dropped_lines(plan)) or "Nothing: every block is sent.")
        if plan.summary is not None:
            with st.expander("Summary sent to the model", key=f"summary-{name}"):
                st.text(plan.summary.content)
        actions = st.container(horizontal=True)  # side by side, or one under the other in a narrow column
        with actions.popover("Export", help="This strategy's request, blocks or whole plan as a file."):
            # Files are made when a button is clicked, not on every run.
            st.download_button("Provider messages (JSON)", partial(dashboard.provider_json, plan), file_name=f"{stem}-{name}-messages.json",
                               mime="application/json", key=f"messages-{name}", on_click="ignore")
            st.download_button("Blocks (CSV)", partial(dashboard.blocks_csv, plan), file_name=f"{stem}-{name}-blocks.csv",
                               mime="text/csv", key=f"csv-{name}", on_click="ignore")
            st.download_button("Plan (JSON)", partial(dashboard.plan_json, plan), file_name=f"{stem}-{name}-plan.json",
                               mime="application/json", key=f"plan-{name}", on_click="ignore")
        if actions.button("Send", key=f"send-{name}",
                          help="Store this conversation as a chat, generate with the offline echo provider under this "
                          "strategy, and open its audit."):
            with st.spinner("Generating…"):
                state.audit_chat = dashboard.send_with_echo(conversation, setup, name, name=source.name[:80])
            st.switch_page("pages/audit.py")
        for note in plan.diagnostics:
            if note["code"] not in ("RELEVANCE", "ORPHAN_TOOL_RESULT"):
                st.caption(f"{note['code']}: " + dashboard.plain(note.get("message", "")))
progress.empty()
if (common := dashboard.common_failure(plans)) is not None:  # said once, above the columns
    fits.error(f"No strategy can fit this conversation: {common}")
    for slot in error_slots.values():
        slot.caption("Does not fit (see above).")
if compare_state.everything_fits(plans):
    whole = next(plan for plan in plans.values() if isinstance(plan, contextfit.PromptPlan))
    squeezed = compare_state.squeeze_limit(whole)
    with fits.container():
        st.info(compare_state.fits_note(plans))
        if squeezed is not None:
            st.button(f"Squeeze: lower the context limit to {squeezed:,}", key="squeeze",
                      on_click=compare_state.remember, args=(state, "limit", squeezed),
                      help="A limit under which a quarter of what may be dropped no longer fits, to see the strategies at work.")

fitted = {name: plan for name, plan in plans.items() if not isinstance(plan, contextfit.ContextfitError)}
token_scale = charts.prompt_scale(list(fitted.values()))
dense = block_chart.dense_threshold(len(fitted))  # side by side: few enough bars that each can be hovered
block_scale = charts.block_scale(list(fitted.values()), dense)
for name, (budget_slot, blocks_slot) in chart_slots.items():
    # HTML, not plotly: plotly charts cost the browser most, and a refit would mount each anew
    with budget_slot:
        st.html(budget_bar.budget_html(fitted[name], token_scale=token_scale))
    with blocks_slot:
        st.html(block_chart.blocks_html(fitted[name], token_scale=block_scale, dense_threshold=dense))

# Every chart goes out before the tables (the fate matrix into its place below the breakdown): the browser
# draws them while the server makes the tables, whose first one imports pandas (a second on a cold process).
breakdown_area = st.container()
if len(fitted) > 1:
    st.subheader("Fate of every block, strategy by strategy")
    st.html(fate_grid.fate_html(fitted))
import pandas as pd  # noqa: E402  (after the charts: see above)

with verdict_area:
    st.subheader("Verdict")
    rows = verdict.verdict_rows(plans)
    table = pd.DataFrame(verdict.table(rows))
    styles = pd.DataFrame(verdict.styles(rows))
    styled = table.style.apply(lambda _: styles, axis=None).hide(axis="index")
    if presenting:  # HTML, which the presentation CSS enlarges (a data grid is a canvas)
        st.table(styled)
    else:
        st.dataframe(styled, hide_index=True, width="stretch", key="verdict",
                     column_config={verdict.HEADERS["description"]: st.column_config.TextColumn(width="large")})
    st.caption("Best value of each column highlighted. Prompt cost: the prompt at the model's catalog input price "
               "(the reply is billed on top).")
    settings = {"model": model, "context limit": f"{int(limit):,}", "response reserve": f"{int(reserve):,}",
                "strategies": ", ".join(strategies), "user name": user_name}
    st.download_button("Download the comparison (HTML)", partial(report.comparison_html, plans, source_name=source.name,
                                                                   settings=settings),
                       file_name=f"contextfit-{stem}.html", mime="text/html", key="report", on_click="ignore",
                       help="One file with the verdict, settings, breakdown and charts; opens offline.")

if fitted:
    with breakdown_area:
        st.subheader("Tokens by kind")
        st.caption("What each strategy sends, by kind of block (SillyTavern's prompt itemization); "
                   "chat overhead is the reply priming and framing no block holds. Each column adds up to the prompt tokens.")
        st.dataframe(pd.DataFrame(breakdown.breakdown_table(fitted)), hide_index=True, key="breakdown")
        tools = breakdown.per_tool(next(iter(fitted.values())))
        if tools:
            st.caption("Tool definitions, per tool (the same for every strategy), largest first:")
            st.dataframe(pd.DataFrame(tools), hide_index=True, key="tools")

if len(fitted) > 1:
    st.subheader("What two strategies do differently")
    names = list(fitted)
    left, right = st.columns(2)
    pair = diff.default_pair(fitted)
    first = left.selectbox("Strategy A", names, index=pair[0], key="diff-a")
    second = right.selectbox("Strategy B", names, index=pair[1], key="diff-b")
    differences = diff.differences(fitted[first], fitted[second])
    if first == second or not differences:
        st.caption("Same blocks, same fates." if first != second else "Pick two different strategies.")
    else:
        st.caption(f"{len(differences)} blocks differ.")
        st.dataframe(pd.DataFrame([d.to_row(first, second) for d in differences]), hide_index=True, key="diff")

st.subheader("Edit the conversation")
st.caption("Pin a block to protect it, mark it for manual exclusion, or set its relevance (0–1); the comparison follows.")
rows = dashboard.editor_rows(conversation, setup, plans)
shown = diff.fate_columns(rows, plans)
fate_columns = [f"fate: {name}" for name in plans]
edited = st.data_editor(
    pd.DataFrame(shown),
    key=f"editor-{state.editor_version}",
    placeholder="—",
    hide_index=True,
    width="stretch",
    disabled=["id", "role", "kind", "text", "tokens", *fate_columns],
    column_order=["id", "role", "kind", "text", "tokens", *dashboard.EDITABLE.values(), *fate_columns],
    column_config={
        "pinned": st.column_config.CheckboxColumn("pinned", help="Protected: never dropped."),
        "exclude": st.column_config.CheckboxColumn("exclude", help="meta.manualExcluded: the manual strategy drops it first."),
        "relevance": st.column_config.NumberColumn("relevance", min_value=0.0, max_value=1.0, step=0.05,
                                                   help="meta.relevance, used by vector-recall instead of its own score."),
        "text": st.column_config.TextColumn("text", width="medium"),  # room for each strategy's fate column
    },
)
changes = dashboard.overrides_from_rows(edited.to_dict("records"), rows)
if changes:
    state.overrides = dashboard.merge_overrides(state.overrides, changes)
    st.rerun()  # the same editor (same key) stays: its scroll position and the open sections are kept
