"""The latest generation of a chat: what was sent, what was dropped and why."""

import json

import pandas as pd
import streamlit as st

import widgets
from contextfit.dashboard import bands, charts
from contextfit.dashboard.audit_view import audit_rows
from contextfit.dashboard.markdown import plain
from contextfit.serving.audits import (AUDIT_CHOICE, AUDIT_KEPT, AUDIT_PARAM, chat_label, choose_audit_chat,
                                     list_audited_chats, load_audit_plan)
from contextfit.serving.store_cache import shared_store

widgets.in_frame()

st.title("Audit")
st.caption(
    "Every generation records what was sent before the provider is called, and finishes as completed, failed "
    "or cancelled. Only the latest audit of each chat is kept."
)
st.html(charts.legend_html())
chats = list_audited_chats()
st.caption("Chats and audits in " + plain(shared_store().engine.url.render_as_string(hide_password=True)))
if not chats:
    st.info("No generation yet. Use a strategy's “Send” button on Compare strategies (the offline echo provider), "
            "or the HTTP API (contextfit serve).")
    st.stop()

labels = {chat.id: chat_label(chat, status=True) for chat in chats}
ids = list(labels)
choose_audit_chat(st.session_state, ids, st.query_params.to_dict())  # the one sent, or chosen before, or linked
chat_id = st.selectbox("Chat", ids, format_func=labels.get, key=AUDIT_CHOICE)
st.session_state[AUDIT_KEPT] = chat_id  # a page switch drops the widget's value
if st.query_params.get(AUDIT_PARAM) != chat_id:
    st.query_params[AUDIT_PARAM] = chat_id  # a reload opens the same chat
audit, plan = load_audit_plan(chat_id)
if st.button("Replay under other settings", key="audit-replay",
             help="This chat turn by turn under other strategies, limits or models, on the Replay page (writes nothing)."):
    widgets.source.open_chat(chat_id)  # the conversation of the shared sidebar
    st.switch_page("pages/replay.py")

status = {"completed": st.success, "failed": st.error, "cancelled": st.warning}.get(audit.status, st.info)
status(f"{audit.status} · {audit.provider} · {audit.model}" + (f" · {audit.error_code}" if audit.error_code else ""))
left, middle, right = st.columns(3)
left.metric("Prompt tokens", "—" if audit.prompt_tokens is None else f"{audit.prompt_tokens:,}",
            help="Counted with the model's tokenizer; for an approximate profile, the upper end of its band.")
middle.metric("Budget", f"{audit.budget:,}", help="Context limit minus response reserve.")
right.metric("Context limit", f"{audit.context_limit:,}", help=f"Response reserve {audit.response_reserve:,}.")
st.caption(
    f"strategy {audit.strategy or '—'} · tokenizer {audit.tokenizer.profile}: {bands.band_text(audit)}"
    + f" · started {audit.created_at} · finished {audit.finished_at or '—'}"
)
if bands.provider_count_text(audit):
    st.caption(bands.provider_count_text(audit))
if audit.facts:
    st.subheader("Must-survive facts")
    st.caption("The chat's facts setting: verbatim (a sent block holds it), summary (a summary line quotes it) or lost.")
    st.dataframe(pd.DataFrame(audit.facts), hide_index=True, width="stretch")
if audit.blocks:
    st.plotly_chart(charts.budget_figure(plan), key="audit-budget", width="stretch")
    st.plotly_chart(charts.blocks_figure(plan), key="audit-blocks", width="stretch")
    st.subheader("Blocks")
    st.dataframe(pd.DataFrame(audit_rows(audit)), hide_index=True, width="stretch", placeholder="—")
st.subheader("Provider messages")
if audit.provider_system is not None:
    st.text("system: " + audit.provider_system)
st.json(audit.provider_messages, expanded=False)
st.subheader("Interceptor diagnostics")
if audit.interceptor_diagnostics:
    st.json(audit.interceptor_diagnostics, expanded=False)
else:
    st.text("No interceptor ran.")
st.download_button("Audit (JSON)", json.dumps(audit.to_dict(), ensure_ascii=False, indent=2),
                   file_name=f"audit-{chat_id}.json", mime="application/json", on_click="ignore")
