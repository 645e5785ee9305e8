"""Message roles: one check, shared by every door into the engine and by the store.

SPEC §3.2 allows ``system``, ``developer``, ``user``, ``assistant``, ``tool``
and ``function``. A message with any other role (``wizard``, ``5``, ``None``,
none at all) is refused with ``INVALID_MESSAGES`` naming ``messages[i].role``
— by ``plan_prompt``, ``shift_context``, a session, a replay and the store
alike — and never sent: not from the caller, not from a plugin strategy's
added block, not from an interceptor.
"""

from __future__ import annotations

import pytest

import contextfit
from contextfit.errors import InvalidMessages
from contextfit.inputs.messages import ROLES, check_role
from contextfit.serving.validation import storable_messages
from contextfit.tokens.chat_counter import token_counter

BAD_ROLES = ["wizard", 5, None, "", "User", "SYSTEM", ["user"], {"role": "user"}, True, "x" * 5_000]
ids = [repr(role)[:12] for role in BAD_ROLES]


def chat(role: object) -> list[dict]:
    return [{"role": "system", "content": "Be brief."}, {"role": role, "content": "abracadabra"},
            {"role": "user", "content": "Hello?"}]


def refusal(call) -> InvalidMessages:
    with pytest.raises(InvalidMessages) as caught:
        call()
    assert caught.value.code == "INVALID_MESSAGES"
    return caught.value


@pytest.mark.parametrize("role", BAD_ROLES, ids=ids)
def test_plan_prompt_and_shift_context_refuse_a_role_outside_the_spec(role: object) -> None:
    counter = token_counter("gpt-4o")
    store_error = refusal(lambda: storable_messages(chat(role)))  # what the API and the store answer
    for call in (lambda: contextfit.plan_prompt(chat(role), model="gpt-4o"),
                 lambda: contextfit.shift_context(chat(role), counter, 1_000),
                 lambda: contextfit.shift_context(chat(role), counter, 1_000, strategy="summarize"),
                 lambda: dict(contextfit.FitSession(chat(role)).plans(model="gpt-4o"))):
        error = refusal(call)
        assert error.location == "messages[1].role"
        assert str(error) == str(store_error)  # one check: the same words everywhere
    assert len(str(store_error)) < 300  # a role of 5,000 characters is not echoed back whole


def test_a_missing_role_is_refused_too() -> None:
    messages = [{"content": "no role"}, {"role": "user", "content": "hi"}]
    assert refusal(lambda: contextfit.plan_prompt(messages, model="gpt-4o")).location == "messages[0].role"
    assert refusal(lambda: contextfit.shift_context(messages, token_counter("gpt-4o"), 100)).location == "messages[0].role"


def test_every_role_of_the_spec_is_accepted() -> None:
    messages = [{"role": role, "content": "ok", **({"tool_call_id": "c1"} if role in ("tool", "function") else {})}
                for role in ROLES]
    messages.insert(4, {"role": "assistant", "content": None,
                        "tool_calls": [{"id": "c1", "type": "function", "function": {"name": "f", "arguments": "{}"}}]})
    messages.append({"role": "user", "content": "and?"})
    plan = contextfit.plan_prompt(messages, model="gpt-4o")
    assert {m["role"] for m in plan.provider_messages} == set(ROLES)
    fit = contextfit.shift_context(messages, token_counter("gpt-4o"), 10_000)
    assert len(fit.kept) == len(messages)
    for index, message in enumerate(messages):
        check_role(message, f"messages[{index}]")


@pytest.mark.parametrize("role", ["wizard", None, 7], ids=["wizard", "None", "7"])
def test_a_session_and_a_replay_refuse_it_as_well(role: object) -> None:
    session = contextfit.FitSession([{"role": "user", "content": "hi"}])
    assert refusal(lambda: session.append({"role": role, "content": "x"})).location == "messages[1].role"
    assert refusal(lambda: contextfit.FitSession(chat(role))).location == "messages[1].role"
    assert refusal(lambda: contextfit.replay(chat(role), model="gpt-4o", strategies=["truncate"])).location == (
        "messages[1].role")


def test_an_interceptor_cannot_send_a_role_outside_the_spec() -> None:
    def wizardry(messages: list[dict]) -> list[dict]:
        return [*messages, {"role": "wizard", "content": "Sneaked in."}]

    cleanup = contextfit.register_interceptor(wizardry, name="wizardry")
    try:
        plan = contextfit.plan_prompt([{"role": "user", "content": "hi"}], model="gpt-4o")
    finally:
        cleanup()
    assert [m["role"] for m in plan.provider_messages] == ["user"]
    [failed] = [d for d in plan.diagnostics if d["code"] == "INTERCEPTOR_FAILED"]
    assert "'wizard'" in failed["message"]


def test_a_plugin_strategy_cannot_add_a_block_with_a_role_outside_the_spec() -> None:
    def sorcery(messages, count_tokens, budget, **options):
        return [*messages[:-1], {"role": "wizard", "content": "A summary.", "meta": {"kind": "summary"}}, messages[-1]]

    cleanup = contextfit.registry.register("sorcery", sorcery)
    try:
        fit = contextfit.shift_context(chat("assistant"), token_counter("gpt-4o"), 1_000, strategy="sorcery")
    finally:
        cleanup()
    assert [m["role"] for m in fit.kept] == ["system", "assistant", "user"]
    [rejected] = [d for d in fit.diagnostics if d["code"] == "STRATEGY_REJECTED"]
    assert "'wizard'" in rejected["message"]


# -- one pass over the list: the first fault in list order, the same on every door ------------


FAULTS = {
    "not a dict": ("Hello", "messages[{i}]"),
    "bad role": ({"role": "wizard", "content": "x"}, "messages[{i}].role"),
    "lone surrogate": ({"role": "user", "content": [{"type": "text", "text": "bad \ud800"}]}, "messages[{i}].content[0].text"),
}


@pytest.mark.parametrize("first", list(FAULTS))
@pytest.mark.parametrize("second", list(FAULTS))
def test_every_door_names_the_first_faulty_message_whatever_the_faults(first: str, second: str) -> None:
    messages = [{"role": "system", "content": "Be brief."}, {"role": "user", "content": "Hé"},
                FAULTS[first][0], {"role": "assistant", "content": "ok"}, FAULTS[second][0]]
    expected = FAULTS[first][1].format(i=2)
    doors = {
        "plan_prompt": lambda: contextfit.plan_prompt(messages, model="gpt-4o"),
        "session": lambda: contextfit.FitSession(messages),
        "shift_context": lambda: contextfit.shift_context(messages, token_counter("gpt-4o"), 10_000),
        "replay": lambda: contextfit.replay(messages, model="gpt-4o", strategies=["truncate"]),
    }
    found = {door: refusal(call).location for door, call in doors.items()}
    assert found == dict.fromkeys(doors, expected)


def test_a_role_is_checked_before_the_text_of_the_same_message() -> None:
    messages = [{"role": "user", "content": "ok"}, {"role": "wizard", "content": "bad \ud800"}]
    assert refusal(lambda: contextfit.plan_prompt(messages, model="gpt-4o")).location == "messages[1].role"


def test_a_session_refuses_a_faulty_append_and_plans_on_with_what_it_had() -> None:
    session = contextfit.FitSession([{"role": "user", "content": "one"}, {"role": "assistant", "content": "two"}])
    before = session.plan(model="gpt-4o").provider_messages
    assert refusal(lambda: session.append({"role": "user", "content": "now \ud800"})).location == "messages[2].content"
    assert session.plan(model="gpt-4o").provider_messages == before
    session.append({"role": "user", "content": "three {{char}}"})
    assert session.plan(model="gpt-4o").provider_messages[-1]["content"] == "three Assistant"
