"""The Audit page reads as a product page: the request as chat bubbles beside the reply, human times,
no database path, and no ``None`` in its tables."""

from __future__ import annotations

import json
from datetime import UTC, datetime, timedelta

import anyio
import pytest
from support.paths import REPO
from streamlit.testing.v1 import AppTest

from contextfit.dashboard import audit_view, times
from contextfit.dashboard.setup import suggested_setup
from contextfit.errors import ProviderTimeout
from contextfit.inputs.samples import load_sample
from contextfit.serving.generation import generate
from contextfit.serving.providers import EchoProvider
from contextfit.serving.store import open_store


def audit_page(monkeypatch, database: str) -> AppTest:
    monkeypatch.setenv("CONTEXTFIT_DB", database)
    return AppTest.from_file(str(REPO / "app.py"), default_timeout=180).switch_page("pages/audit.py").run()


def every_text(at: AppTest) -> str:
    """Everything the page shows as text (titles, captions, boxes, metrics, markdown, tables, options)."""
    parts = []
    for kind in ("title", "caption", "markdown", "info", "success", "error", "warning", "subheader", "metric"):
        parts += [str(getattr(element, "value", "")) + str(getattr(element, "label", "")) for element in at.get(kind)]
    parts += [frame.value.to_string() for frame in at.dataframe]
    parts += [str(option) for box in at.selectbox for option in box.options]
    parts += [box.format_func(box.value) if hasattr(box, "format_func") else "" for box in at.selectbox]
    parts += [element.proto.body for element in at.get("html")]
    return "\n".join(parts)


def test_the_reply_is_a_bubble_beside_what_the_model_saw(tmp_path, monkeypatch):
    database = str(tmp_path / "chats.db")
    conversation = load_sample("support_chat")
    chat_id = audit_view.send_with_echo(conversation, suggested_setup(conversation), "truncate", store=database,
                                        name="support_chat")
    at = audit_page(monkeypatch, database)
    assert not at.exception and not at.error
    audit = open_store(database).get_audit(chat_id)
    bubbles = at.chat_message
    sent = audit_view.sent_bubbles(audit)
    assert [bubble.name for bubble in bubbles][:len(sent)] == [bubble.role for bubble in sent]
    assert {"system", "user", "assistant"} <= {bubble.role for bubble in sent}
    reply = bubbles[len(sent)]  # the echo answers with the last user message: its own bubble, after the request
    assert reply.name == "assistant"
    last_user = next(bubble for bubble in reversed(sent) if bubble.role == "user")
    assert reply.markdown[0].value == audit_view.bubble_markdown(last_user.text)
    assert ["What the model saw", "The reply"] == [h.value for h in at.subheader][:2]
    assert at.success[0].value.startswith(f"completed · echo · {audit.model} · just now · took ")  # human times


def test_no_database_path_and_no_none_on_screen(tmp_path, monkeypatch):
    database = str(tmp_path / "private-place" / "chats.db")
    (tmp_path / "private-place").mkdir()
    conversation = load_sample("roleplay")
    audit_view.send_with_echo(conversation, suggested_setup(conversation), "summarize", store=database,
                              name="roleplay")
    at = audit_page(monkeypatch, database)
    assert not at.exception
    shown = every_text(at)
    assert "private-place" not in shown and "chats.db" not in shown and "sqlite" not in shown.lower()
    for frame in at.dataframe:
        assert "None" not in frame.value.to_string()
    blocks = next(frame for frame in at.dataframe if "fate" in frame.value.columns)
    assert str(blocks.value["tokens"].dtype) == "Int64" and blocks.proto.placeholder == "—"  # none: a dash
    assert json.loads(blocks.proto.columns)["tokens"]["type_config"]["format"] == "localized"  # 1,234
    label = at.selectbox(key="audit_chat_choice")
    assert label.format_func(label.value).startswith("roleplay · summarize · gpt-4o · ")
    assert label.format_func(label.value).endswith("— completed just now")


class Late:
    """A provider that times out."""

    name, template = "late", None

    async def complete(self, request):
        raise ProviderTimeout("late", detail="no answer in 60 s")


def test_a_failed_generation_says_why_there_is_no_reply(tmp_path, monkeypatch):
    database = str(tmp_path / "chats.db")
    opened = open_store(database)
    chat_id = opened.create_chat(messages=[{"role": "user", "content": "Hello?"}]).id

    async def run():
        with pytest.raises(ProviderTimeout):
            await generate(opened, {"late": Late(), "echo": EchoProvider()}, chat_id, provider="late")

    anyio.run(run)
    opened.close()
    at = audit_page(monkeypatch, database)
    assert not at.exception
    assert at.error[0].value.startswith("failed · late · ")
    assert any(info.value.startswith("No reply: the generation failed (PROVIDER_TIMEOUT") for info in at.info)
    assert [bubble.name for bubble in at.chat_message] == ["user"]


def test_times_read_as_people_say_them_in_the_readers_zone():
    now = datetime(2026, 12, 4, 15, 34, tzinfo=UTC)
    stamp = (now - timedelta(minutes=3)).isoformat().replace("+00:00", "Z")
    assert times.when_text(stamp, now) == "3 minutes ago"
    assert times.when_text("2026-12-04T09:05:00Z", now, times.zone("America/New_York")) == "Dec 4, 04:05"
    assert times.when_text("2025-12-31T23:30:00Z", now, times.zone("Asia/Tokyo")) == "Jan 1, 08:30"  # its year is now's
    assert times.when_text("2025-06-01T10:00:00Z", now) == "Jun 1 2025, 10:00 UTC"
    assert times.when_text("garbage", now) == "—"


def test_a_bubble_of_any_shape_reads_as_text():
    anthropic = {"role": "assistant", "content": [{"type": "text", "text": "Looking."},
                                                  {"type": "tool_use", "id": "toolu_1", "name": "lookup",
                                                   "input": {"order": "ORD-7"}}]}
    shown = audit_view.bubble(anthropic)
    assert shown.role == "assistant" and shown.note == "calls a tool" and 'lookup({"order": "ORD-7"})' in shown.text
    result = audit_view.bubble({"role": "user", "content": [{"type": "tool_result", "tool_use_id": "toolu_1",
                                                             "content": "In transit."}]})
    assert (result.role, result.text, result.note) == ("tool", "In transit.", "answers toolu_1")
    assert audit_view.bubble({"role": "developer", "content": "Be brief."}).role == "system"
    assert audit_view.bubble({"role": "model", "parts": [{"text": "Hi"}]}) == audit_view.Bubble("assistant", "Hi")
    assert audit_view.bubble({"role": "user", "content": ""}).text == "(empty)"
    assert audit_view.bubble("odd") == audit_view.Bubble("user", "odd")
    hostile = audit_view.bubble_markdown("[click](javascript:alert(1)) <script>x</script>")
    assert "](" not in hostile.replace("\\](", "") and "<script>" not in hostile
    assert json.dumps(audit_view.Bubble("user", "x").__class__.__name__) == '"Bubble"'


def test_presentation_mode_enlarges_the_audit_too(tmp_path, monkeypatch):
    database = str(tmp_path / "chats.db")
    conversation = load_sample("coding_agent")
    audit_view.send_with_echo(conversation, suggested_setup(conversation), "clear-tool-results", store=database)
    monkeypatch.setenv("CONTEXTFIT_DB", database)
    at = AppTest.from_file(str(REPO / "app.py"), default_timeout=180)
    at.session_state["presentation"] = True  # turned on on Compare
    at.switch_page("pages/audit.py").run()
    assert not at.exception and at.table and not at.dataframe
    assert any("!important" in element.proto.body for element in at.get("html"))  # the presentation CSS
    blocks = next(table.value for table in at.table if "fate" in table.value.columns)
    assert "None" not in blocks.to_string()
    tool = [bubble for bubble in at.chat_message if bubble.name == "tool"]
    assert tool and all(bubble.caption[0].value.startswith("answers ") for bubble in tool)
