"""What makes Compare's first paint quick (issue 14), asserted on the work done, never on time.

* the browser is asked for the chart code before the server imports contextfit;
* every chart goes out before the first table (pandas is imported after them).

The import-order checks run the page in a fresh interpreter: the test process has imported everything.
"""

from __future__ import annotations

import json
import os
import subprocess
import sys

from support.paths import REPO
from streamlit.delta_generator import DeltaGenerator
from streamlit.testing.v1 import AppTest

from contextfit.dashboard import preload
from contextfit.pipeline.plan import BUILTIN_STRATEGIES

# Runs app.py once through AppTest in a fresh interpreter and prints, for every element the run sends,
# its type and what was imported at that moment.
PROBE = """
import json, sys
from streamlit.delta_generator import DeltaGenerator
from streamlit.testing.v1 import AppTest
sent = []
original = DeltaGenerator._enqueue
def enqueue(self, delta_type, element_proto, *args, **kwargs):
    body = getattr(element_proto, "body", "") if delta_type == "html" else ""
    sent.append({"type": delta_type, "preload": "contextfit-preload" in body, "budget": any(f'class="contextfit-{name}"' in body for name in ("budget", "blocks", "matrix")),
                 "plotly_code": "PlotlyChart." in body,
                 "pandas": "pandas" in sys.modules, "engine": "contextfit.pipeline.plan" in sys.modules})
    return original(self, delta_type, element_proto, *args, **kwargs)
DeltaGenerator._enqueue = enqueue
at = AppTest.from_file(sys.argv[1], default_timeout=120).run()
assert not at.exception, at.exception
print(json.dumps({"sent": sent}))
"""


def fresh_run() -> dict:
    done = subprocess.run([sys.executable, "-c", PROBE, str(REPO / "app.py")], cwd=REPO, capture_output=True,
                          text=True, timeout=300, env={**os.environ, "PYTHONPATH": str(REPO)})
    assert done.returncode == 0, done.stderr[-2000:]
    return json.loads(done.stdout.strip().splitlines()[-1])


def charts_of(sent: list[dict]) -> list[int]:
    return [number for number, element in enumerate(sent) if element["type"] == "plotly_chart" or element["budget"]]


def test_a_cold_first_run_asks_for_the_chart_code_first_and_sends_every_chart_before_importing_pandas():
    found = fresh_run()
    sent = found["sent"]
    first = sent[0]
    assert first["preload"] and not first["engine"] and not first["pandas"]  # before contextfit is imported
    charts = charts_of(sent)
    assert len(charts) == 2 * len(BUILTIN_STRATEGIES) + 1  # a budget bar and a block chart each, the fate matrix: all HTML
    assert not any(element["type"] == "plotly_chart" for element in sent)
    assert not first["plotly_code"]  # so the browser is not asked to compile the 4.7 MB chart code for it
    assert not any(sent[number]["pandas"] for number in charts)  # every chart out before pandas is imported...
    assert sent[-1]["pandas"]  # ...which the tables then import


def test_every_chart_is_sent_before_the_first_table(monkeypatch):
    """In any run (pandas already imported): the tables never hold the charts back."""
    sent: list[str] = []
    original = DeltaGenerator._enqueue

    def enqueue(self, delta_type, element_proto, *args, **kwargs):
        body = getattr(element_proto, "body", "") if delta_type == "html" else ""
        html_chart = any(f'class="contextfit-{name}"' in body for name in ("budget", "blocks", "matrix"))
        sent.append("chart" if delta_type == "plotly_chart" or html_chart else delta_type)
        return original(self, delta_type, element_proto, *args, **kwargs)

    monkeypatch.setattr(DeltaGenerator, "_enqueue", enqueue)
    at = AppTest.from_file(str(REPO / "app.py"), default_timeout=120).run()
    assert not at.exception
    assert sent.count("chart") == 2 * len(BUILTIN_STRATEGIES) + 1 and "dataframe" in sent
    assert max(n for n, kind in enumerate(sent) if kind == "chart") < sent.index("dataframe")
    # ...and the page still shows them in their places: the strategies' columns first, then the fate matrix
    # (both in a projector's first 1080 pixels), then the verdict and the breakdown by kind.
    headers = [s.value for s in at.subheader]
    assert headers[:len(BUILTIN_STRATEGIES)] == list(BUILTIN_STRATEGIES)
    matrix = headers.index("Fate of every block, strategy by strategy")
    assert matrix == len(BUILTIN_STRATEGIES) and matrix < headers.index("Verdict") < headers.index("Tokens by kind")


def test_the_preload_imports_the_chart_code_first_then_the_rest():
    text = preload.script(["PlotlyChart.a.js", "DataFrame.b.js"])
    assert "chain = chain.then(() => import(base + file))" in text  # one after the other...
    assert text.index("PlotlyChart.a.js") < text.index("DataFrame.b.js")  # ...in CHUNKS' order, charts first
    assert preload.CHUNKS[0] == "PlotlyChart"
