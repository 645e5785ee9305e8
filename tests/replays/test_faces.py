"""The replay's faces: ``contextfit replay`` and ``POST /api/v2/replay``."""

from __future__ import annotations

import io
import json

import pytest
from support.api import LOCAL
from fastapi.testclient import TestClient

from contextfit.serving.api import create_app
from contextfit.serving.providers import EchoProvider
from contextfit.cli import main


MESSAGES = [
    {"role": "system", "content": "You are a support agent."},
    {"role": "user", "content": "My router AX55 drops wifi. " * 30},
    {"role": "assistant", "content": "Which firmware is it on? " * 30},
    {"role": "user", "content": "Firmware 1.2.4 on the AX55."},
    {"role": "assistant", "content": "Update to 1.2.5."},
]


@pytest.fixture
def client(store):
    with TestClient(create_app(store, {"echo": EchoProvider()}), base_url=LOCAL) as test_client:
        yield test_client


def test_api_replays_inline_messages_and_writes_nothing(client, store):
    body = {"messages": MESSAGES, "model": "gpt-4o", "settings": {"contextLimit": 400, "responseReserve": 100},
            "strategies": ["truncate", {"strategy": "truncate", "options": {"stablePrefix": True}}],
            "facts": ["AX55"]}
    response = client.post("/api/v2/replay", json=body)
    assert response.status_code == 200, response.text
    data = response.json()
    assert data["strategies"] == ["truncate", "truncate+stable_prefix"]
    assert [turn["messageIndex"] for turn in data["turns"]["truncate"]] == [1, 3]
    assert data["factRule"] == "declared" and data["turns"]["truncate"][0]["facts"] == [{"name": "AX55", "status": "verbatim"}]
    assert set(data["verdict"]) == {"cheapest", "bestRetention", "bestCache"}
    assert data["totals"]["truncate"]["totalCost"] > 0
    assert store.list_chats() == []  # no chat, message or audit written


def test_api_replays_a_stored_chat_with_its_settings(client):
    chat_id = client.post("/api/v2/chats", json={"model": "gpt-4o", "messages": MESSAGES,
                                                 "settings": {"contextLimit": 400, "responseReserve": 100}}).json()["id"]
    data = client.post("/api/v2/replay", json={"chatId": chat_id, "strategies": ["summarize"]}).json()
    assert data["budget"] == 300 and list(data["totals"]) == ["summarize"]
    assert client.get(f"/api/v2/chats/{chat_id}/context-audit").status_code == 404


@pytest.mark.parametrize("body, status, code", [
    ({"messages": MESSAGES, "strategies": ["nope"]}, 422, "UNKNOWN_STRATEGY"),
    ({"messages": MESSAGES, "strategies": [{"strategy": "truncate", "options": {"stablePrefix": "yes"}}]}, 422,
     "INVALID_SETTINGS"),
    ({"messages": MESSAGES, "facts": [{"regex": "unclosed"}]}, 422, "INVALID_SETTINGS"),
    ({"messages": MESSAGES, "facts": ["AX55", {"text": "AX55", "name": "model"}]}, 422, "INVALID_SETTINGS"),
    ({"messages": [{"role": "system", "content": "x"}]}, 422, None),
    ({"chatId": "chat_missing"}, 404, "CHAT_NOT_FOUND"),
    # these ran the settings' strategy under a label such as "int" or "NoneType" (a 200)
    ({"messages": MESSAGES, "strategies": [{"strategy": 5}]}, 422, "INVALID_SETTINGS"),
    ({"messages": MESSAGES, "strategies": [{"strategy": None}]}, 422, "INVALID_SETTINGS"),
    ({"messages": MESSAGES, "strategies": [{"strategy": ["truncate"]}]}, 422, "INVALID_SETTINGS"),
    ({"messages": MESSAGES, "strategies": [{"strategy": "truncate", "label": {"a": 1}}]}, 422, "INVALID_SETTINGS"),
    ({"messages": MESSAGES, "strategies": [{"strategy": "truncate", "label": ""}]}, 422, "INVALID_SETTINGS"),
    # settings that are not strategy options were left out of the fit while the label named them (a 200)
    ({"messages": MESSAGES, "strategies": [{"strategy": "truncate", "options": {"contextLimit": 150}}]}, 422,
     "INVALID_SETTINGS"),
    ({"messages": MESSAGES, "strategies": [{"strategy": "truncate", "options": {"contextStrategy": "summarize"}}]}, 422,
     "INVALID_SETTINGS"),
    ({"messages": MESSAGES, "strategies": [{"strategy": "truncate", "options": {"facts": ["AX55"]}}]}, 422,
     "INVALID_SETTINGS"),
])
def test_api_refuses_bad_replays(client, body, status, code):
    response = client.post("/api/v2/replay", json=body)
    assert response.status_code == status, response.text
    if code:
        assert response.json()["error"]["code"] == code


def test_api_names_the_option_that_is_not_a_strategy_option(client):
    body = {"messages": MESSAGES, "strategies": ["truncate", {"strategy": "truncate", "options": {"contextLimit": 150}}]}
    message = client.post("/api/v2/replay", json=body).json()["error"]["message"]
    assert "strategies[1].options.contextLimit" in message and "settings" in message


def test_cli_replay_json_and_table(tmp_path):
    path = tmp_path / "chat.json"
    path.write_text(json.dumps(MESSAGES))
    out = io.StringIO()
    assert main(["replay", str(path), "--limit", "400", "--reserve", "100", "--strategy", "truncate",
                 "--stable-prefix", "--json"], out) == 0
    data = json.loads(out.getvalue())
    assert data["strategies"] == ["truncate", "truncate+stable_prefix"] and data["budget"] == 300
    table = io.StringIO()
    assert main(["replay", str(path), "--limit", "400", "--reserve", "100", "--fact", "AX55"], table) == 0
    text = table.getvalue()
    assert "2 turns" in text and "Cheapest: " in text and "summarize" in text


def test_cli_replay_writes_dollars_as_the_page_does(tmp_path):
    # A short chat on a cheap model cost "1.8e-06" in the table, and a lone strategy's
    # verdict read "cheapest: —" without saying why.
    path = tmp_path / "chat.json"
    path.write_text(json.dumps([{"role": "user", "content": "hi"}, {"role": "assistant", "content": "hello"}]))
    out = io.StringIO()
    assert main(["replay", str(path), "--model", "gpt-4o-mini", "--strategy", "truncate"], out) == 0
    text = out.getvalue()
    row = next(line for line in text.splitlines() if line.startswith("truncate"))
    assert "e-0" not in text and row.split()[1:3] == ["$0.000001800", "$0.000001800"]
    assert "Only truncate was replayed: pass --strategy all to compare it with others." in text


def test_cli_replay_reports_bad_input(tmp_path, capsys):
    path = tmp_path / "chat.json"
    path.write_text(json.dumps([{"role": "system", "content": "only a system prompt"}]))
    assert main(["replay", str(path)]) == 2
    assert "user message" in capsys.readouterr().err


def test_cli_replay_total_and_mean_agree_on_one_turn(tmp_path):
    # one turn: the total is the mean; the table printed 0.0000 beside 0.00003
    path = tmp_path / "chat.json"
    path.write_text(json.dumps([{"role": "user", "content": "Hello there"}]))
    out = io.StringIO()
    assert main(["replay", str(path), "--strategy", "truncate"], out) == 0
    row = next(line for line in out.getvalue().splitlines() if line.startswith("truncate"))
    total, mean = row.split()[1:3]
    assert total == mean and float(total.removeprefix("$")) > 0


def test_cli_replay_takes_pinned_facts_as_json_and_refuses_a_pin_to_no_message(tmp_path, capsys):
    path = tmp_path / "chat.json"
    path.write_text(json.dumps(MESSAGES))
    out = io.StringIO()
    assert main(["replay", str(path), "--strategy", "truncate", "--fact", '{"message": 1, "name": "first ask"}',
                 "--fact", "AX55", "--json"], out) == 0
    data = json.loads(out.getvalue())
    assert data["facts"][0] == {"name": "first ask", "message": 1} and data["factRule"] == "declared"
    assert main(["replay", str(path), "--fact", '{"message": 99}']) == 2
    assert "pinned to message 99" in capsys.readouterr().err


class _Terminal(io.StringIO):
    def isatty(self) -> bool:
        return True


def test_cli_replay_shows_its_progress_on_a_terminal_and_erases_it(tmp_path, monkeypatch):
    path = tmp_path / "chat.json"
    path.write_text(json.dumps(MESSAGES))
    screen = _Terminal()
    monkeypatch.setattr("sys.stderr", screen)
    out = io.StringIO()
    assert main(["replay", str(path), "--strategy", "truncate", "--json"], out) == 0
    lines = screen.getvalue().split("\r")
    assert lines[1:4] == ["contextfit: replayed 0 of 2 turns", "contextfit: replayed 1 of 2 turns",
                          "contextfit: replayed 2 of 2 turns"]
    assert lines[-2].strip() == "" and lines[-1] == ""  # erased: the terminal's line is blank again
    json.loads(out.getvalue())  # the result alone on standard output


def test_cli_replay_writes_no_progress_into_a_pipe(tmp_path, capsys):
    path = tmp_path / "chat.json"
    path.write_text(json.dumps(MESSAGES))
    assert main(["replay", str(path), "--strategy", "truncate"]) == 0
    assert capsys.readouterr().err == ""


def test_cli_replay_erases_its_progress_when_it_stops_on_an_error(tmp_path, monkeypatch):
    path = tmp_path / "chat.json"
    path.write_text(json.dumps(MESSAGES))
    screen = _Terminal()
    monkeypatch.setattr("sys.stderr", screen)
    assert main(["replay", str(path), "--strategy", "truncate", "--fact", '{"message": 99}']) == 2
    text = screen.getvalue()
    assert "replayed" not in text and "pinned to message 99" in text  # refused before any turn: no bar


def test_cli_replay_exits_1_when_a_strategy_cannot_fit_a_turn_and_still_prints_the_replay(tmp_path, capsys):
    # as `contextfit fit` exits 1 when a plan fails; a replay whose turns all fit exits 0 (the tests above)
    path = tmp_path / "chat.json"
    path.write_text(json.dumps(MESSAGES))
    assert main(["replay", str(path), "--limit", "120", "--reserve", "10", "--strategy", "truncate", "--json"]) == 1
    captured = capsys.readouterr()
    data = json.loads(captured.out)
    failed = data["totals"]["truncate"]["failedTurns"]
    assert failed >= 1
    assert f"contextfit: truncate: {failed} of 2 turns could not be fitted (TOKEN_BUDGET_EXCEEDED: " in captured.err
    assert main(["replay", str(path), "--limit", "120", "--reserve", "10", "--strategy", "truncate"]) == 1
    assert "could not be fitted" in capsys.readouterr().out  # the table's note says so too
