"""Compare every strategy side by side on one conversation."""

from functools import partial

import pandas as pd
import streamlit as st

import contextfit
from contextfit.views import charts, dashboard, source_panel

state = st.session_state
state.setdefault("overrides", {})
state.setdefault("editor_version", 0)


st.title("Compare strategies")
st.caption(
    "Which blocks does the model see? Every strategy fits the same conversation into the same budget. "
    "Each strategy's bar is the context window: what is sent, the free budget, and the response reserve."
)
st.html(charts.legend_html())

source = source_panel.conversation_source()  # the sidebar's "Conversation" section
if source is None:
    st.stop()
conversation = source.conversation

input_key = source.key
if state.get("input_key") != input_key:  # a new conversation: fresh defaults and no edits
    state.input_key = input_key
    state.overrides = {}
    state.model = dashboard.suggested_setup(conversation).model

with st.sidebar:
    st.header("Model and budget")
    models = [info.id for info in contextfit.list_models()]
    model = st.selectbox("Model", models, key="model", help="From the catalog; the tokenizer follows the model.")
    suggested = dashboard.suggested_setup(conversation, model)
    if state.get("limits_for") != (input_key, model):
        state.limits_for = (input_key, model)
        state.limit, state.reserve = suggested.context_limit, suggested.response_reserve
    limit = st.number_input("Context limit", min_value=1, step=256, key="limit",
                            help="The model's whole window, prompt and response together.")
    reserve = st.number_input("Response reserve", min_value=0, step=128, key="reserve",
                              help="Room kept free for the answer; the prompt's budget is the limit minus this.")
    names = contextfit.registry.names()
    strategies = st.multiselect("Strategies", names, default=[n for n in names if n in contextfit.engine.pipeline.BUILTIN_STRATEGIES],
                                help="Each one fits the same conversation; they are shown side by side.")
    with st.expander("Strategy options"):
        summary_tokens = st.number_input("Summary size (tokens)", min_value=0, value=0, step=32,
                                         help="summarize: the summary's maximum size; 0 chooses a tenth of the budget.")
        relevance_window = st.number_input("Relevance query window", min_value=1, value=6,
                                           help="vector-recall: how many recent messages lorebook and memory are compared with.")
        user_name = st.text_input("User name", value="User", help="Fills {{user}} in cards, lorebooks and chats.")

if conversation.warnings:
    with st.expander(f"Import notes ({len(conversation.warnings)})"):
        st.text("\n".join(conversation.warnings))
if not strategies:
    st.info("Choose at least one strategy in the sidebar.")
    st.stop()

setup = dashboard.Setup(
    model=model, context_limit=int(limit), response_reserve=int(reserve), strategies=tuple(strategies),
    summary_tokens=int(summary_tokens) or None, relevance_window=int(relevance_window), user_name=user_name,
    overrides=state.overrides,
)
# Each strategy's column is drawn as soon as its plan is made, so the
# browser renders one strategy while the next is fitted.
progress = st.progress(0.0, text="Counting tokens and fitting…")
plans: dict[str, contextfit.PromptPlan | contextfit.ContextfitError] = {}
columns = st.columns(len(strategies))
for done, (column, (name, plan)) in enumerate(zip(columns, dashboard.iter_plans(conversation, setup)), start=1):
    plans[name] = plan
    progress.progress(done / len(strategies), text=f"Fitted {name} ({done} of {len(strategies)})")
    with column:
        st.subheader(name)
        if isinstance(plan, contextfit.ContextfitError):
            st.error(dashboard.error_text(plan))
            continue
        numbers = dashboard.headline(plan)
        st.metric("Prompt tokens", f"{numbers['prompt_tokens']:,}",
                  help="What is sent, counted with the model's tokenizer (chat overhead included).")
        st.caption(
            f"of a {numbers['budget']:,}-token budget ({numbers['used_percent']}%) · context {numbers['context_limit']:,}"
            f" · reserve {numbers['response_reserve']:,}"
        )
        st.caption(f"tokenizer {numbers['tokenizer']}" + (" · approximate" if numbers["approximate"] else " · exact"))
        st.plotly_chart(charts.budget_figure(plan), key=f"budget-{name}", width="stretch")
        st.plotly_chart(charts.blocks_figure(plan), key=f"blocks-{name}", width="stretch")
        with st.expander(f"Excluded or summarized: {numbers['dropped']} blocks, {numbers['dropped_tokens']:,} tokens"):
            st.text("\n".join(dashboard.dropped_lines(plan)) or "Nothing: every block is sent.")
        if plan.summary is not None:
            with st.expander("Summary sent to the model"):
                st.text(plan.summary.content)
        # Files are made when a button is clicked, not on every run.
        st.download_button("Provider messages (JSON)", partial(dashboard.provider_json, plan), file_name=f"{name}-messages.json",
                           mime="application/json", key=f"messages-{name}", on_click="ignore", width="stretch")
        st.download_button("Blocks (CSV)", partial(dashboard.blocks_csv, plan), file_name=f"{name}-blocks.csv",
                           mime="text/csv", key=f"csv-{name}", on_click="ignore", width="stretch")
        st.download_button("Plan (JSON)", partial(dashboard.plan_json, plan), file_name=f"{name}-plan.json",
                           mime="application/json", key=f"plan-{name}", on_click="ignore", width="stretch")
        if st.button("Send with echo provider", key=f"send-{name}", width="stretch",
                     help="Store this conversation as a chat, generate with the offline echo provider under this "
                     "strategy, and open its audit."):
            with st.spinner("Generating…"):
                state.audit_chat = dashboard.send_with_echo(conversation, setup, name)
            st.switch_page("pages/audit.py")
        for note in plan.diagnostics:
            if note["code"] not in ("RELEVANCE", "ORPHAN_TOOL_RESULT"):
                st.caption(f"{note['code']}: " + dashboard.plain(note.get("message", "")))
progress.empty()

fitted = {name: plan for name, plan in plans.items() if not isinstance(plan, contextfit.ContextfitError)}
if len(fitted) > 1:
    st.subheader("Fate of every block, strategy by strategy")
    st.plotly_chart(charts.fate_matrix_figure(fitted), key="matrix", width="stretch")

st.subheader("Edit the conversation")
st.caption("Pin a block to protect it, mark it for manual exclusion, or set its relevance (0–1); the comparison follows.")
rows = dashboard.editor_rows(conversation, setup, plans)
edited = st.data_editor(
    pd.DataFrame(rows),
    key=f"editor-{state.editor_version}",
    placeholder="—",
    hide_index=True,
    width="stretch",
    disabled=["id", "role", "kind", "text", "tokens"],
    column_config={
        "pinned": st.column_config.CheckboxColumn("pinned", help="Protected: never dropped."),
        "exclude": st.column_config.CheckboxColumn("exclude", help="meta.manualExcluded: the manual strategy drops it first."),
        "relevance": st.column_config.NumberColumn("relevance", min_value=0.0, max_value=1.0, step=0.05,
                                                   help="meta.relevance, used by vector-recall instead of its own score."),
        "text": st.column_config.TextColumn("text", width="large"),
    },
)
changes = dashboard.overrides_from_rows(edited.to_dict("records"), rows)
if changes:
    state.overrides = dashboard.merge_overrides(state.overrides, changes)
    state.editor_version += 1
    st.rerun()
