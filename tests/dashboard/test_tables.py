"""The HTML tables' alignment rule (contextfit.dashboard.tables): figures right, words left."""

from __future__ import annotations

import pandas as pd

from contextfit.dashboard.tables import aligned, numeric_columns


def test_figures_as_the_dashboard_writes_them_make_a_numeric_column_and_words_do_not():
    rows = pd.DataFrame([{"strategy": "truncate", "tokens": "up to 1,781", "cost": "$0.004895", "share": "98.9%",
                          "month": "$1.2K", "lost": "memories 1–2", "turn": None},
                         {"strategy": "manual", "tokens": "—", "cost": "$0.005018", "share": "<1%", "month": "$93",
                          "lost": "—", "turn": 3}])
    assert numeric_columns((name, rows[name].tolist()) for name in rows.columns) == [
        "tokens", "cost", "share", "month", "turn"]
    html = aligned(rows).to_html()
    style = html[:html.index("</style>")]
    for position in (1, 2, 3, 4, 6):  # each figure column: its cells and its header
        assert f"_row0_col{position}" in style and f"_row1_col{position}" in style and f"th.col_heading.col{position} {{" in style
    assert "col0" not in style and "col5" not in style
    assert "<td id" in html and ">—</td>" in html  # a plain frame's missing value reads "—"


def test_a_column_of_dashes_only_or_of_words_stays_left():
    rows = pd.DataFrame([{"a": "—", "b": "x 1", "c": True}])
    assert numeric_columns((name, rows[name].tolist()) for name in rows.columns) == []
    assert "text-align" not in aligned(rows).to_html()
