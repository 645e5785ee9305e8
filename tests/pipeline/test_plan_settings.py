"""One planning path: ``plan_prompt(conversation_or_messages, settings)`` over one :class:`PlanSettings`.

SPEC's keyword form, a settings object and camelCase JSON settings give the
same plan; the CLI, the API preview and the dashboard give the same plan for
the same input; bad settings are refused with ``INVALID_SETTINGS`` whichever
door they come through.
"""

from __future__ import annotations

import dataclasses
import io
import json
from pathlib import Path

import pytest
from fastapi.testclient import TestClient

import contextfit
from contextfit import FitSession
from contextfit.pipeline.plan import BUILTIN_STRATEGIES
from contextfit.pipeline.settings import PlanSettings
from contextfit.dashboard.setup import suggested_setup
from contextfit.dashboard.sessions import session_for
from contextfit.dashboard import audit_view
from contextfit.serving.api import create_app
from contextfit.serving.chat_json import conversation_chat
from contextfit.cli import main
from contextfit.serving.store import open_store

from support.api import LOCAL
from contextfit.inputs.formats import load_conversation_file

STRATEGIES = list(BUILTIN_STRATEGIES)
ROLEPLAY = Path(contextfit.__file__).parent / "data" / "samples" / "roleplay.json"
#: Settings the role-play bundle suggests beyond its limit and reserve (the dashboard once ignored them).
SUGGESTED = {"contextLimit": 1500, "responseReserve": 400, "summaryTokens": 80, "scanDepth": 3, "relevanceWindow": 3}


def same(plan) -> dict:
    return plan.to_dict()


@pytest.fixture
def bundle(tmp_path) -> Path:
    """The role-play sample (card, lorebook, persona, memory) suggesting more settings."""
    data = json.loads(ROLEPLAY.read_text(encoding="utf-8"))
    data["settings"] = SUGGESTED
    path = tmp_path / "roleplay.json"
    path.write_text(json.dumps(data), encoding="utf-8")
    return path


@pytest.mark.parametrize("strategy", STRATEGIES)
def test_keywords_settings_object_and_json_settings_give_the_same_plan(bundle, strategy):
    conversation = load_conversation_file(bundle)
    messages, stored = conversation_chat(conversation)  # the chat's JSON settings: card, lorebook, persona, memory
    json_settings = {**stored, "contextStrategy": strategy}
    # SPEC's keyword form, every part passed by hand (the only place a test spells the mapping out).
    by_keywords = contextfit.plan_prompt(
        conversation.messages, model="gpt-4o", context_strategy=strategy, context_limit=1500, response_reserve=400,
        character=conversation.character, persona=conversation.persona, lorebook=conversation.lorebook,
        memory=conversation.memory, summary_tokens=80, scan_depth=3, relevance_window=3,
    )  # fmt: skip
    by_object = contextfit.plan_prompt(
        conversation.messages,
        PlanSettings(
            model="gpt-4o", context_strategy=strategy, context_limit=1500, response_reserve=400,
            character=conversation.character, persona=conversation.persona, lorebook=conversation.lorebook,
            memory=conversation.memory, scan_depth=3, options={"summary_tokens": 80, "relevance_window": 3},
        ),
    )  # fmt: skip
    by_json = contextfit.plan_prompt(messages, PlanSettings.from_json(json_settings, model="gpt-4o"))
    by_conversation = contextfit.plan_prompt(conversation, model="gpt-4o", context_strategy=strategy)
    assert same(by_keywords) == same(by_object) == same(by_json) == same(by_conversation)
    assert by_keywords.strategy == strategy and {"character", "persona", "memory"} <= {b.kind for b in by_keywords.blocks}


def test_keywords_on_top_of_a_settings_object_win():
    chat = [{"role": "user", "content": "word " * 400}, {"role": "user", "content": "Now?"}]
    base = PlanSettings(model="gpt-4o", context_limit=300, response_reserve=100)
    assert same(contextfit.plan_prompt(chat, base, context_limit=250)) == same(
        contextfit.plan_prompt(chat, model="gpt-4o", context_limit=250, response_reserve=100)
    )
    assert contextfit.plan_prompt(chat, base, context_limit=250).context_limit == 250
    assert base.context_limit == 300  # the settings object is a value: never changed


def test_compare_strategies_is_the_generator_the_dashboard_draws(bundle):
    conversation = contextfit.inputs.formats.load_conversation_file(bundle)
    setup = suggested_setup(conversation)
    drawn = list(session_for(conversation).plans(setup.settings, strategies=setup.strategies))
    compared = dict(FitSession(conversation).plans(setup.settings, strategies=setup.strategies))
    assert [name for name, _ in drawn] == list(compared) == list(contextfit.pipeline.plan.BUILTIN_STRATEGIES)
    assert [same(plan) for _, plan in drawn] == [same(plan) for plan in compared.values()]
    one_by_one = {name: same(contextfit.plan_prompt(conversation, setup.settings, context_strategy=name))
                  for name in compared}  # fmt: skip
    assert one_by_one == {name: same(plan) for name, plan in compared.items()}


@pytest.mark.parametrize("strategy", ["summarize", "vector-recall"])
def test_the_cli_the_api_preview_and_the_dashboard_plan_the_same(bundle, strategy):
    """One file in, one plan out, whichever face plans it (the bundle's suggested
    summary size, scan depth and relevance window included)."""
    conversation = load_conversation_file(bundle)
    out = io.StringIO()
    assert main(["fit", str(bundle), "--strategy", strategy, "--json"], out=out) == 0
    from_cli = json.loads(out.getvalue())[strategy]

    from_dashboard = session_for(conversation).plan(strategy, suggested_setup(conversation).settings).to_dict()

    messages, settings = conversation_chat(conversation)
    with TestClient(create_app(open_store(":memory:")), base_url=LOCAL) as client:
        response = client.post(
            "/api/v2/context-preview",
            json={"messages": messages, "model": conversation.model, "settings": {**settings, "contextStrategy": strategy}},
        )
    assert response.status_code == 200, response.text
    from_api = response.json()

    assert from_cli == from_api  # where the facts land too: the bundle's facts, or the default ones
    assert from_cli["factPlacement"]["facts"]
    assert {key: value for key, value in from_cli.items() if key != "factPlacement"} == from_dashboard
    assert from_cli["strategy"] == strategy and from_cli["contextLimit"] == 1500
    summary = [block for block in from_cli["blocks"] if block["reason"] == "summary"]
    if strategy == "summarize":  # the suggested summary size was used, not the default
        unsuggested = dataclasses.replace(conversation, settings={"contextLimit": 1500, "responseReserve": 400})
        default = contextfit.plan_prompt(unsuggested, model="gpt-4o", context_strategy=strategy).summary
        assert summary and summary[0]["tokens"] <= 80 < default.tokens


def test_sending_from_the_dashboard_audits_the_plan_the_dashboard_shows(bundle, tmp_path):
    conversation = contextfit.inputs.formats.load_conversation_file(bundle)
    setup = suggested_setup(conversation)
    shown = session_for(conversation).plan("summarize", setup.settings)
    store = open_store(str(tmp_path / "sent.db"))
    chat_id = audit_view.send_with_echo(conversation, setup, "summarize", store=store)
    audit = store.get_audit(chat_id)
    assert [(b.id, b.tokens, b.reason) for b in audit.blocks] == [(b.id, b.tokens, b.reason) for b in shown.blocks]
    assert audit.provider_messages == shown.provider_messages


def test_settings_json_round_trips():
    settings = PlanSettings.from_keywords(
        model="gpt-4o", context_strategy="manual", context_limit=900, user_name="Ann", overrides={"m1": {"pinned": True}},
        summary_tokens=40,
    )  # fmt: skip
    assert PlanSettings.from_json(settings.to_json(), model="gpt-4o") == settings
    assert settings.to_json()["overrides"] == {"m1": {"pinned": True}}


# -- hostile ----------------------------------------------------------------------------------


def test_an_unknown_setting_is_refused_through_every_door():
    chat = [{"role": "user", "content": "hi"}]
    with pytest.raises(contextfit.errors.InvalidSettings, match=r"unknown keyword 'context_limt' \(did you mean 'context_limit'\?\)"):
        contextfit.plan_prompt(chat, model="gpt-4o", context_limt=500)
    with pytest.raises(contextfit.errors.InvalidSettings, match="unknown keyword 'context_limt'"):
        contextfit.plan_prompt(chat, PlanSettings.from_keywords(model="gpt-4o", context_limt=500))
    with pytest.raises(contextfit.errors.InvalidSettings, match="unknown keyword 'context_limt'"):
        contextfit.plan_prompt(chat, PlanSettings(model="gpt-4o"), context_limt=500)
    with pytest.raises(contextfit.errors.InvalidSettings, match=r"Unknown setting 'contextlimit' \(did you mean 'contextLimit'\?\)"):
        PlanSettings.from_json({"contextlimit": 500}, model="gpt-4o")
    with pytest.raises(contextfit.errors.InvalidSettings, match="unknown keyword 'contextStrategy'.*'context_strategy'"):
        dict(FitSession(chat).plans(model="gpt-4o", contextStrategy="summarize"))
    with pytest.raises(TypeError):
        PlanSettings(model="gpt-4o", context_limt=500)  # the object itself has only its fields


@pytest.mark.parametrize(
    ("keywords", "json_settings", "message"),
    [
        ({"context_limit": "8000"}, {"contextLimit": "8000"}, "8000"),
        ({"context_limit": True}, {"contextLimit": True}, "True"),
        ({"response_reserve": -1}, {"responseReserve": -1}, "-1"),
        ({"scan_depth": 1.5}, {"scanDepth": 1.5}, "1.5"),
        ({"template": "cohere"}, {"template": "cohere"}, "cohere"),
    ],
)
def test_a_wrong_type_is_refused_with_a_clear_message_through_every_door(keywords, json_settings, message):
    chat = [{"role": "user", "content": "hi"}]
    for plan in (
        lambda: contextfit.plan_prompt(chat, model="gpt-4o", **keywords),
        lambda: contextfit.plan_prompt(chat, PlanSettings(model="gpt-4o", **keywords)),
        lambda: contextfit.plan_prompt(chat, PlanSettings.from_json(json_settings, model="gpt-4o")),
    ):
        with pytest.raises(contextfit.errors.InvalidSettings) as caught:
            plan()
        assert message in caught.value.message and caught.value.code == "INVALID_SETTINGS"


def test_settings_that_are_not_a_settings_object_are_refused():
    chat = [{"role": "user", "content": "hi"}]
    with pytest.raises(contextfit.errors.InvalidSettings, match="settings must be a PlanSettings.*from_json"):
        contextfit.plan_prompt(chat, {"contextStrategy": "summarize"})
    with pytest.raises(contextfit.errors.InvalidSettings, match="need a model"):
        contextfit.plan_prompt(chat, context_strategy="summarize")
    with pytest.raises(contextfit.errors.InvalidSettings, match="model must be a model id"):
        PlanSettings(model=4)
    with pytest.raises(contextfit.errors.InvalidSettings, match="no JSON form"):
        PlanSettings(model="gpt-4o", interceptors=[print]).to_json()


def test_a_settings_object_cannot_be_changed_after_it_is_made():
    options = {"summary_tokens": 50}
    settings = PlanSettings(model="gpt-4o", options=options)
    options["summary_tokens"] = 5
    assert settings.options["summary_tokens"] == 50
    with pytest.raises(TypeError):
        settings.options["summary_tokens"] = 5  # type: ignore[index]
    with pytest.raises(AttributeError):
        settings.model = "o3"  # type: ignore[misc]
