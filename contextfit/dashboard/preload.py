"""Start loading the browser's chart and table code while the server works.

Streamlit's frontend fetches and compiles the code that draws a plotly chart
(some 4.7 MB of JavaScript) or a data grid only when the first such element
arrives, and the Compare page sends its charts after every strategy is
fitted: the browser would sit idle, then compile for seconds. :func:`script`
asks it to import those chunks at once, at the top of the run, so the
compiling overlaps the server's work; the chart elements then find them
loaded (a module is imported once per page). Only chunks of the installed
Streamlit that exist are named (:func:`chunk_files`, given its static
folder); nothing else is loaded, and no user text goes into the script.

This module imports nothing of the engine (``import contextfit`` loads
nothing either), so ``app.py`` sends the script before the engine loads.
"""

from __future__ import annotations

import json
from pathlib import Path

#: The frontend chunks the Audit and Replay pages need for their first screen, imported in this order.
CHUNKS = ("PlotlyChart", "DataFrame")
#: Compare's: its charts are HTML (no plotly chart to compile the chart code for), its tables data grids.
COMPARE_CHUNKS = ("DataFrame",)


def static_folder(streamlit_package: Path) -> Path:
    """Where an installed Streamlit (its package folder) keeps its frontend's JavaScript chunks."""
    return streamlit_package / "static" / "static" / "js"


def chunk_files(static: Path, chunks: tuple[str, ...] = CHUNKS) -> list[str]:
    """File names of the frontend ``chunks`` in the ``static`` folder (hashed names, e.g. ``PlotlyChart.D9Z0_fxz.js``).

    >>> chunk_files(Path("/nonexistent"))
    []
    """
    if not static.is_dir():
        return []
    found = []
    for chunk in chunks:
        names = sorted(path.name for path in static.glob(f"{chunk}.*.js"))
        if len(names) == 1:  # one build's chunk; several would be a guess
            found.append(names[0])
    return found


def script(files: list[str]) -> str:
    """HTML with a script importing ``files`` (:func:`chunk_files`) from the folder of the page's
    own Streamlit bundle ("" if none).

    >>> script([])
    ''
    >>> "PlotlyChart.x.js" in script(["PlotlyChart.x.js"])
    True
    """
    if not files:
        return ""
    return (
        # The element takes no room: its container is hidden (a script runs all the same).
        '<style>[data-testid="stElementContainer"]:has(.contextfit-preload) { display: none; }</style>'
        '<div class="contextfit-preload"></div>'
        "<script>(() => {"
        "const own = document.querySelector('script[type=module][src*=\"/static/js/index.\"]');"
        "if (!own || window.__contextfitPreloaded) return; window.__contextfitPreloaded = true;"
        "const base = own.src.slice(0, own.src.lastIndexOf('/') + 1);"
        # One after the other, in CHUNKS' order: the chart code is compiled first (the charts go out first).
        "let chain = Promise.resolve();"
        f"for (const file of {json.dumps(files)}) chain = chain.then(() => import(base + file)).catch(() => {{}});"
        "})();</script>"
    )
