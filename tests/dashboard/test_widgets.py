"""The frame ``app.py`` draws around the pages (``widgets/``): the sidebar Compare and Replay share,
a page opened by its address before any session ran ``app.py``, and what a page may read."""

from __future__ import annotations

import json
import os
import subprocess
import sys

import pytest
from support.paths import REPO
from streamlit.testing.v1 import AppTest

# Opens one page first, in an interpreter of its own (no conftest fixture): a server's first run,
# in Streamlit's pages-folder mode, where the page runs alone until frame.in_frame puts it in app.py.
FIRST_RUN = """
import json, sys
from streamlit.testing.v1 import AppTest
at = AppTest.from_file(sys.argv[1], default_timeout=120).switch_page(sys.argv[2]).run()
print(json.dumps({"exception": [str(e.value) for e in at.exception], "title": [t.value for t in at.title],
                  "sidebar": sorted(w.key for kind in ("number_input", "selectbox", "radio") for w in at.sidebar.get(kind)),
                  "preload": "contextfit-preload" in getattr(at.main.children[0].proto, "body", "")}))
"""


@pytest.mark.parametrize(("page", "title", "shared"), [("pages/replay.py", "Replay", True),
                                                      ("pages/models.py", "Models & tokenizers", False)])
def test_a_page_opened_first_runs_inside_app_py(page, title, shared, tmp_path):
    done = subprocess.run([sys.executable, "-c", FIRST_RUN, str(REPO / "app.py"), page], cwd=REPO,
                          capture_output=True, text=True, timeout=300,
                          env={**os.environ, "CONTEXTFIT_DB": str(tmp_path / "chats.db")})
    assert done.returncode == 0, done.stderr[-2000:]
    found = json.loads(done.stdout.strip().splitlines()[-1])
    assert found["exception"] == [] and found["title"] == [title] and found["preload"]
    # app.py's sidebar, on the pages that share it: drawn by the frame, not by the page
    assert ({"limit", "model", "reserve", "source_radio"} <= set(found["sidebar"])) is shared


def app() -> AppTest:
    return AppTest.from_file(str(REPO / "app.py"), default_timeout=120)


def test_the_sidebar_is_drawn_for_compare_and_replay_only(tmp_path, monkeypatch):
    monkeypatch.setenv("CONTEXTFIT_DB", str(tmp_path / "chats.db"))  # Audit and Models read the store
    at = app().run()
    assert at.sidebar.selectbox(key="model").value == "gpt-4o" and at.sidebar.radio(key="source_radio")
    for page in ("pages/audit.py", "pages/models.py", "pages/plugins.py"):
        at.switch_page(page).run()
        assert not at.exception and not at.sidebar.get("selectbox") and not at.sidebar.get("radio"), page
    at.switch_page("pages/replay.py").run()
    assert not at.exception and at.sidebar.number_input(key="limit").value == 2200


def test_the_settings_a_page_does_not_draw_outlive_it(tmp_path, monkeypatch):
    monkeypatch.setenv("CONTEXTFIT_DB", str(tmp_path / "chats.db"))
    # Compare's strategy options and Replay's facts are drawn by their page only; Streamlit forgets such a
    # widget's value on another page unless the run saves it again (state.keep, at the top of app.py)
    at = app().run()
    at.sidebar.number_input(key="summary_tokens").set_value(64).run()
    at.sidebar.text_input(key="user_name").set_value("Tomas").run()
    at.switch_page("pages/replay.py").run()
    at.text_area(key="replay_facts").input("ORD-7731").run()
    at.checkbox(key="replay_stable").uncheck().run()
    at.switch_page("pages/compare.py").run()
    assert (at.sidebar.number_input(key="summary_tokens").value, at.sidebar.text_input(key="user_name").value) == (
        64, "Tomas")
    at.switch_page("pages/models.py").run()
    at.switch_page("pages/replay.py").run()
    assert at.text_area(key="replay_facts").value == "ORD-7731" and at.checkbox(key="replay_stable").value is False


def test_the_priority_and_the_volume_are_the_same_on_both_pages_and_outlive_the_others(tmp_path, monkeypatch):
    monkeypatch.setenv("CONTEXTFIT_DB", str(tmp_path / "chats.db"))
    at = app().run()
    assert (at.sidebar.radio(key="priority").value, at.sidebar.number_input(key="conversations_per_day").value) == (
        "retention", 1_000)  # the defaults, shown
    at.sidebar.radio(key="priority").set_value("cache").run()
    at.sidebar.number_input(key="conversations_per_day").set_value(40_000).run()
    at.switch_page("pages/replay.py").run()
    assert (at.sidebar.radio(key="priority").value, at.sidebar.number_input(key="conversations_per_day").value) == (
        "cache", 40_000)
    at.switch_page("pages/models.py").run()
    at.switch_page("pages/compare.py").run()
    assert not at.exception
    assert (at.sidebar.radio(key="priority").value, at.sidebar.number_input(key="conversations_per_day").value) == (
        "cache", 40_000)
    assert (at.query_params["priority"], at.query_params["per_day"]) == ("cache", "40000")


def test_a_chat_from_the_audit_page_is_the_conversation_of_both_pages(tmp_path, monkeypatch):
    # "Replay under other settings" makes the stored chat the sidebar's conversation: Compare shows it too
    from contextfit import load_conversation
    from contextfit.dashboard.audit_view import send_with_echo
    from contextfit.dashboard.setup import Setup

    monkeypatch.setenv("CONTEXTFIT_DB", str(tmp_path / "chats.db"))
    chat = [{"role": "user", "content": f"turn {i} about the harbour " * 8} for i in range(6)]
    chat_id = send_with_echo(load_conversation(chat), Setup.of("gpt-4o-mini", 700, 100), "truncate",
                             store=str(tmp_path / "chats.db"), name="harbour")
    at = app().run()
    at.switch_page("pages/audit.py").run()
    at.button(key="audit-replay").click().run()
    assert not at.exception and at.title[0].value == "Replay"
    assert at.radio(key="source_radio").value == "Stored chat" and at.selectbox(key="source_chat_menu").value == chat_id
    assert at.query_params["chat"] in (chat_id, [chat_id])
    at.switch_page("pages/compare.py").run()
    assert not at.exception and not at.error
    assert at.selectbox(key="source_chat_menu").value == chat_id
    assert (at.selectbox(key="model").value, at.number_input(key="limit").value) == ("gpt-4o-mini", 700)
    table = at.dataframe[-1].value  # the edit table: the chat's blocks, the echo's reply among them
    assert len(table) == len(chat) + 1


def test_a_link_to_a_stored_chat_that_is_gone_says_so_and_shows_the_newest(tmp_path, monkeypatch):
    from contextfit import load_conversation
    from contextfit.dashboard.audit_view import send_with_echo
    from contextfit.dashboard.setup import Setup

    monkeypatch.setenv("CONTEXTFIT_DB", str(tmp_path / "chats.db"))
    kept = send_with_echo(load_conversation([{"role": "user", "content": "Hi"}]), Setup.of("gpt-4o", 900, 100),
                          "truncate", store=str(tmp_path / "chats.db"))
    at = app()
    at.query_params["chat"] = "chat_deleted"
    at.run()
    assert not at.exception and at.selectbox(key="source_chat_menu").value == kept
    assert any("Chat 'chat\\_deleted' is not among the stored chats" in warning.value for warning in at.warning)


def test_a_page_without_the_shared_sidebar_cannot_read_it():
    import widgets

    with pytest.raises(RuntimeError, match="shared sidebar"):
        widgets.shared()
