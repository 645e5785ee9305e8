"""The latest generation of a chat: what the model saw beside what it answered, and what was left out and why."""

import json
from datetime import UTC, datetime

import pandas as pd
import streamlit as st

import widgets
from contextfit.dashboard import audit_view as views
from contextfit.dashboard import bands, charts, times
from contextfit.dashboard.markdown import plain
from contextfit.serving.audits import AUDIT_CHOICE, AUDIT_KEPT, AUDIT_PARAM, choose_audit_chat, list_audited_chats

widgets.in_frame()
now, where = datetime.now(UTC), times.zone(st.context.timezone)  # the reader's clock and time zone

st.title("Audit")
st.caption("Every generation records what was sent before the provider is called, and finishes as completed, failed "
           "or cancelled. Only the latest audit of each chat is kept.")
presenting = widgets.presentation_mode()  # Compare's toggle: larger text and HTML tables here too
chats = list_audited_chats()
if not chats:
    st.info("No generation yet. Use a strategy's “Send” button on Compare strategies (the offline echo provider), "
            "or the HTTP API (contextfit serve).")
    st.stop()

labels = {chat.id: views.chat_choice_label(chat, now, where) for chat in chats}
choose_audit_chat(st.session_state, list(labels), st.query_params.to_dict())  # the one sent, chosen before, or linked
chat_id = st.selectbox("Chat", list(labels), format_func=labels.get, key=AUDIT_CHOICE)
st.session_state[AUDIT_KEPT] = chat_id  # a page switch drops the widget's value
if st.query_params.get(AUDIT_PARAM) != chat_id:
    st.query_params[AUDIT_PARAM] = chat_id  # a reload opens the same chat
audit, plan, reply = views.load_audit_page(chat_id)
if st.button("Replay under other settings", key="audit-replay",
             help="This chat turn by turn under other strategies, limits or models, on the Replay page (writes nothing)."):
    widgets.source.open_chat(chat_id)  # the conversation of the shared sidebar
    st.switch_page("pages/replay.py")

status = {"completed": st.success, "failed": st.error, "cancelled": st.warning}.get(audit.status, st.info)
status(plain(views.status_text(audit, now, where)))
left, middle, right = st.columns(3)
left.metric("Prompt tokens", "—" if audit.prompt_tokens is None else f"{audit.prompt_tokens:,}",
            help="Counted with the model's tokenizer; for an approximate profile, the upper end of its band.")
middle.metric("Budget", f"{audit.budget:,}", help="Context limit minus response reserve.")
right.metric("Context limit", f"{audit.context_limit:,}", help=f"Response reserve {audit.response_reserve:,}.")
st.caption(f"strategy {audit.strategy or '—'} · tokenizer {audit.tokenizer.profile}: {bands.band_text(audit)}")
if bands.provider_count_text(audit):
    st.caption(bands.provider_count_text(audit))

seen, answered = st.columns([3, 2])
seen.subheader("What the model saw")
with seen.container(height=720 if presenting else 560):  # a long request scrolls beside the reply
    for shown in views.sent_bubbles(audit):
        with st.chat_message(shown.role, avatar=views.AVATARS.get(shown.role)):
            if shown.note:
                st.caption(plain(shown.note))
            st.markdown(views.bubble_markdown(shown.text))
answered.subheader("The reply")
if reply is not None:
    with answered.chat_message("assistant", avatar=views.AVATARS["assistant"]):
        st.markdown(views.bubble_markdown(reply.text))
else:
    answered.info(views.no_reply_text(audit))

if audit.facts:
    st.subheader("Must-survive facts")
    st.caption("The chat's facts setting: verbatim (a sent block holds it), summary (a summary line quotes it) or lost.")
    widgets.table(pd.DataFrame(views.fact_rows(audit)), presenting, hide_index=True, width="stretch")
st.html(charts.legend_html())
if audit.blocks:
    st.plotly_chart(charts.budget_figure(plan), key="audit-budget", width="stretch")
    st.plotly_chart(charts.blocks_figure(plan), key="audit-blocks", width="stretch")
    st.subheader("Blocks")
    blocks = pd.DataFrame(views.audit_rows(audit))
    blocks = blocks.astype({name: "Int64" for name in views.NUMBERS if name in blocks})  # whole numbers, or none
    widgets.table(blocks, presenting, html=blocks.style.format(thousands=",", na_rep="—").hide(axis="index"),
                  hide_index=True, width="stretch", placeholder="—",
                  column_config={name: st.column_config.NumberColumn(format="localized") for name in views.NUMBERS})
with st.expander("The request as sent (JSON)"):
    if audit.provider_system is not None:
        st.text("system: " + audit.provider_system)
    st.json(audit.provider_messages, expanded=False)
with st.expander("Interceptor diagnostics"):
    if audit.interceptor_diagnostics:
        st.json(audit.interceptor_diagnostics, expanded=False)
    else:
        st.text("No interceptor ran.")
st.download_button("Audit (JSON)", json.dumps(audit.to_dict(), ensure_ascii=False, indent=2),
                   file_name=f"audit-{chat_id}.json", mime="application/json", on_click="ignore")
