"""Retention: which strategy keeps the facts a conversation depends on, on a published protocol."""

import pandas as pd
import streamlit as st

import widgets
from contextfit.dashboard import answer_box
from contextfit.dashboard import retention_view as views
from contextfit.dashboard.tables import aligned
from contextfit.retention.results import ResultsUnavailable

widgets.in_frame()

st.title("Retention benchmark")
widgets.presentation_mode()  # Compare's toggle: larger text here too
try:
    found = views.load()  # what `make retention` measured, shipped with the package: no wait
except ResultsUnavailable as error:
    st.error(str(error))
    st.stop()
rows = found.rows()  # the bench's own table (contextfit.retention.runner.rows_of)
st.html(answer_box.ANSWER_CSS + views.headline_html(found))
st.markdown(views.protocol_text(found))
st.caption(views.caption(found))

budgets = {views.budget_label(share): share for share in found.shares}
chosen = st.segmented_control("Budget (share of each conversation's tokens)", [*budgets, "every budget"],
                              default=views.budget_label(views.HEADLINE_SHARE), key="retention-budget") or "every budget"
share = budgets.get(chosen)
if share is not None:  # the bars a room reads first: every strategy at one budget
    st.html(views.bars_html(rows, share))
table = views.table_rows(rows, share)
marks = pd.DataFrame(views.table_styles(table))
# HTML tables: every row in view (a data grid showed ten rows and hid fact-ledger's below its scroll bar)
st.table(aligned(pd.DataFrame(table).style.apply(lambda _: marks, axis=None).hide(axis="index")))
st.caption("Retained: the fact's current value is sent, verbatim or quoted by a summary or ledger line. Tokens sent: "
           "the mean prompt of the request that asks; cost: 1,000 such requests at the catalog's input price "
           "(uncached; the reply, the same for every strategy, is left out). Best of each budget highlighted.")
if (check := views.check_text(found)):
    st.caption(check)

where = share if share is not None else views.HEADLINE_SHARE
st.subheader(f"Where the kept facts were set, at {views.budget_label(where)}")
st.caption("The share of facts kept, by where in the conversation their current value was set (quarters), and by "
           "the conversation's length.")
st.table(aligned(pd.DataFrame(views.position_rows(found, where)).style.hide(axis="index")))
if found.held_out:
    with st.expander(f"Held-out seeds {', '.join(map(str, found.held_out_seeds))}: never used to tune anything"):
        st.table(aligned(pd.DataFrame(views.table_rows(found.held_out_rows())).style.hide(axis="index")))
