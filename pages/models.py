"""The model catalog, and how a text splits into tokens."""

import pandas as pd
import streamlit as st

import contextfit
import widgets
from contextfit.tokens import fast
from contextfit.dashboard.catalog import price_row, price_rows
from contextfit.serving.store_cache import shared_store
from contextfit.dashboard import bands, calibration
from contextfit.tokens.models import list_models

widgets.in_frame()

st.title("Models & tokenizers")
st.caption("Context limits, default response reserves and tokenizer profiles; approximate profiles over-count on purpose.")
profiles = {profile.name: profile for profile in contextfit.tokens.tokenizers.profiles()}
st.dataframe(
    pd.DataFrame(
        [
            {
                "model": info.id,
                "provider": info.provider,
                "context limit": info.context_limit,
                "max output (reserve)": info.max_output,
                "tokenizer": info.tokenizer,
                "approximate": profiles[info.tokenizer].approximate,
                "band": profiles[info.tokenizer].band or ("exact" if not profiles[info.tokenizer].approximate else ""),
                "input $/M": price_row(info)["input $/M"],
                "output $/M": price_row(info)["output $/M"],
                "source": info.source,
            }
            for info in list_models()
        ]
    ),
    hide_index=True,
    width="stretch",
    column_config={"source": st.column_config.LinkColumn("source")},
)

st.subheader("Prices")
st.caption(
    "US dollars per million tokens, as each provider's pricing page gave them on the date shown. "
    "Cached input is a prompt-cache read, of prompts from the length shown on; a cache write costs the input "
    "price unless listed. Models without "
    "a row have no first-party price (open weights, retired ids). Override or add prices in your models file."
)
st.dataframe(
    pd.DataFrame(price_rows(list_models())),
    hide_index=True,
    width="stretch",
    column_config={"source": st.column_config.LinkColumn("source")},
)

st.subheader("Token viewer")
left, right = st.columns([1, 2])
with left:
    name = st.selectbox("Tokenizer profile", list(profiles), help="Exact: OpenAI, Llama, Qwen, Mistral and DeepSeek vocabularies. Claude and Gemini: estimates with a measured band.")
    st.caption(profiles[name].basis)
    if profiles[name].band:
        st.caption(f"Measured band: {profiles[name].band}")
with right:
    text = st.text_area("Text", value="contextfit shows exactly what an LLM will see. 日本語も数えます。", height=120)
tokenizer = contextfit.get_tokenizer(name)
pieces = tokenizer.pieces(text)  # pieces and ids always come from tiktoken, the reference
st.metric("Tokens", f"{tokenizer.count(text):,}", help="Approximate profiles scale an exact count up; pieces show the base split.")
st.caption(bands.tokens_text(tokenizer.count(text), tokenizer.estimate(text), tokenizer.approximate))
st.code(" | ".join(piece.replace("\n", "↵").replace(" ", "·") for piece in pieces) or "(empty)", language=None)
st.dataframe(
    pd.DataFrame({"piece": [repr(piece)[1:-1] for piece in pieces], "id": tokenizer.encode(text)}),
    width="stretch",
)

st.subheader("Counting engines")
st.caption(
    "Who counts each vocabulary now: the fast exact engine once it is loaded and verified, tiktoken (the "
    "reference, which also gives the pieces and ids above) otherwise. Profiles that split digits count with tiktoken."
)
st.dataframe(
    pd.DataFrame(
        [
            {
                "vocabulary": status["vocabulary"],
                "counts with": status["engine"],
                "state": status["state"],
                "checked against tiktoken": status["checked"],
                "sent to tiktoken (Unicode 17, surrogates)": status["routed"],
                "why tiktoken": status["reason"] or "",
            }
            for status in fast.statuses()
        ],
        columns=["vocabulary", "counts with", "state", "checked against tiktoken",
                 "sent to tiktoken (Unicode 17, surrogates)", "why tiktoken"],
    ),
    hide_index=True,
    width="stretch",
)

st.subheader("Calibration from real usage")
st.caption(
    "The prompt tokens providers reported for the stored generations (the latest of each chat), and their "
    "token-count endpoints' answers when native counting is on, against contextfit's count. Above 1: contextfit "
    "counted low. The same table: contextfit calibrate."
)
rows = calibration.calibration(shared_store())
if rows:
    st.dataframe(pd.DataFrame([row.to_dict() for row in rows]), hide_index=True, width="stretch")
else:
    st.text(calibration.calibration_lines(rows)[0])
