"""The prompt pipeline: persona → lorebook → memory → template → tokenizer → fitting → interceptors."""

from __future__ import annotations

import copy
import os

import pytest
from support.paths import SHARED_FIXTURES, shared_params, shared_path
from support.conversations import groups

import contextfit
from contextfit import FitSession
from contextfit.pipeline.assembly import fill_macros
from contextfit.inputs.formats import load_conversation_file
from contextfit.tokens.models import get_model

STRATEGIES = ["truncate", "summarize", "vector-recall", "manual", "clear-tool-results", "fact-ledger"]


def seraphina():
    return load_conversation_file(shared_path("sillytavern", "default_Seraphina_staging_v2_ccv3.png"))


def test_defaults_come_from_the_model_catalog():
    chat = [{"role": "system", "content": "Be brief."}, {"role": "user", "content": "Hello!"}]
    plan = contextfit.plan_prompt(chat, model="gpt-4o")
    info = get_model("gpt-4o")
    assert (plan.context_limit, plan.response_reserve) == (info.context_limit, info.max_output)
    assert plan.budget == info.context_limit - info.max_output
    assert plan.tokenizer.to_dict() == {"profile": "o200k_base", "approximate": False}
    assert plan.strategy == "truncate" and plan.template == "openai"


def test_openai_provider_messages_are_what_is_counted():
    chat = [
        {"role": "system", "content": "Rules.", "meta": {"id": "s"}},
        {"role": "user", "content": "Hi", "pinned": True, "id": "u1"},
        {"role": "assistant", "content": None, "tool_calls": [{"id": "c", "type": "function", "function": {"name": "f", "arguments": "{}"}}]},
        {"role": "tool", "toolCallId": "c", "content": "42"},
        {"role": "user", "content": "And?"},
    ]
    before = copy.deepcopy(chat)
    plan = contextfit.plan_prompt(chat, model="gpt-4o")
    assert chat == before
    sent = plan.provider_messages
    assert all("meta" not in m and "pinned" not in m and "id" not in m for m in sent)
    assert sent[3] == {"role": "tool", "content": "42", "tool_call_id": "c"}  # toolCallId sent as the API spells it
    assert plan.prompt_tokens == contextfit.token_counter("gpt-4o")(sent) <= plan.budget


def test_roleplay_blocks_come_in_sillytavern_order_with_their_protection():
    card = seraphina()
    book = load_conversation_file(shared_path("sillytavern", "Eldoria_staging.json")).lorebook
    chat = [*card.messages, {"role": "user", "content": "What happened to Eldoria and the Shadowfangs?"}]
    plan = contextfit.plan_prompt(
        chat, model="gpt-4o", character=card.character, lorebook=book, persona="{{user}} is a lost traveler.",
        memory=["{{user}} fears wolves.", {"content": "The tea is chamomile.", "relevance": 0.1}], user_name="Ann",
    )
    kinds = [b.kind for b in plan.blocks]
    first_history = kinds.index("history")
    assert kinds.index("persona") < kinds.index("character") < first_history
    assert set(kinds[:first_history]) <= {"lorebook", "persona", "character", "example", "memory", "system"}
    reasons = {b.id: b.reason for b in plan.blocks}
    assert reasons["character"] == "character" and reasons["persona"] == "persona"
    assert all(b.included for b in plan.blocks)  # a 128k model fits it all
    text = "\n".join(b.content for b in plan.blocks)
    assert "{{user}}" not in text and "{{char}}" not in text and "Ann is a lost traveler." in text
    character = plan.blocks[kinds.index("character")].content
    assert character.startswith(fill_macros(card.character.description.strip(), {"char": "Seraphina", "user": "Ann"})[:200])
    # The card's own book and the Eldoria world are the same entries: each is sent once.
    lore = [b.content for b in plan.blocks if b.kind == "lorebook"]
    assert lore and len(lore) == len(set(lore))


def test_constant_lorebook_entries_are_required_and_keyed_ones_droppable():
    book = {"entries": {
        "0": {"uid": 0, "key": [], "content": "Magic exists.", "constant": True, "order": 10},
        "1": {"uid": 1, "key": ["wolf"], "content": "Wolves hunt at night. " * 20, "order": 20},
    }}
    chat = [{"role": "system", "content": "Narrate."}, {"role": "user", "content": "A wolf howls."}]
    counter = contextfit.token_counter("gpt-4o")
    tight = counter(chat) + counter([{"role": "system", "content": "Magic exists."}])
    plan = contextfit.plan_prompt(chat, model="gpt-4o", lorebook=book, context_limit=tight + 100, response_reserve=100)
    by_id = {b.id: b for b in plan.blocks}
    assert by_id["lorebook:0"].reason == "required"
    assert by_id["lorebook:1"].reason == "over_budget"


def test_lorebook_entries_at_depth_go_into_the_history():
    book = {"entries": {"0": {"uid": 0, "key": ["castle"], "content": "The castle is haunted.", "position": 4, "depth": 1}}}
    chat = [{"role": "user", "content": "Look."}, {"role": "assistant", "content": "It looms."}, {"role": "user", "content": "Enter the castle."}]
    plan = contextfit.plan_prompt(chat, model="gpt-4o", lorebook=book)
    assert [b.kind for b in plan.blocks] == ["history", "history", "lorebook", "history"]
    assert plan.blocks[-1].reason == "current_input"


def test_examples_are_droppable_and_post_history_instructions_protected():
    card = {"spec": "chara_card_v2", "spec_version": "2.0", "data": {
        "name": "Bot", "description": "A bot.", "mes_example": "<START>\n{{user}}: hi\n{{char}}: hello\n<START>\n{{user}}: bye\n{{char}}: ciao",
        "post_history_instructions": "Stay in character.", "personality": "", "scenario": "", "first_mes": "Hey."}}
    chat = [{"role": "user", "content": "Hi there."}]
    plan = contextfit.plan_prompt(chat, model="gpt-4o", character=card)
    assert [b.kind for b in plan.blocks] == ["character", "example", "example", "history", "character"]
    assert plan.blocks[1].content == "[Example Chat]\nUser: hi\nBot: hello"
    assert plan.blocks[3].reason == "current_input" and plan.blocks[4].reason == "character"
    counter = contextfit.token_counter("gpt-4o")
    protected = counter([b.message for b in plan.blocks if b.kind != "example"])
    small = contextfit.plan_prompt(chat, model="gpt-4o", character=card, context_limit=protected + 10, response_reserve=10)
    assert [b.reason for b in small.blocks if b.kind == "example"] == ["over_budget", "over_budget"]


def test_hidden_messages_are_not_part_of_the_prompt():
    chat = [{"role": "user", "content": "secret", "meta": {"hidden": True}}, {"role": "user", "content": "hi"}]
    plan = contextfit.plan_prompt(chat, model="gpt-4o")
    assert [b.content for b in plan.blocks] == ["hi"]
    assert plan.diagnostics[0]["code"] == "HIDDEN_MESSAGES_SKIPPED"


def test_anthropic_template_keeps_system_apart_and_translates_tools():
    chat = [
        {"role": "system", "content": "Be kind."},
        {"role": "user", "content": "Weather?"},
        {"role": "assistant", "content": None, "tool_calls": [{"id": "c1", "type": "function", "function": {"name": "weather", "arguments": '{"city": "Oslo"}'}}]},
        {"role": "tool", "tool_call_id": "c1", "content": "Snow."},
        {"role": "user", "content": "Thanks!"},
    ]
    plan = contextfit.plan_prompt(chat, model="claude-sonnet-4")
    assert plan.template == "anthropic" and plan.tokenizer.approximate
    assert plan.provider_system == "Be kind."
    roles = [m["role"] for m in plan.provider_messages]
    assert roles == ["user", "assistant", "user"]  # the tool result and the next user turn merge
    assert plan.provider_messages[1]["content"] == [{"type": "tool_use", "id": "c1", "name": "weather", "input": {"city": "Oslo"}}]
    assert plan.provider_messages[2]["content"][0] == {"type": "tool_result", "tool_use_id": "c1", "content": "Snow."}
    assert plan.to_dict()["providerSystem"] == "Be kind."


def test_settings_are_checked():
    chat = [{"role": "user", "content": "x"}]
    with pytest.raises(contextfit.errors.InvalidSettings, match="response_reserve"):
        contextfit.plan_prompt(chat, model="gpt-4o", context_limit=1000, response_reserve=1000)
    with pytest.raises(contextfit.errors.UnknownModel):
        contextfit.plan_prompt(chat, model="gpt-0")
    with pytest.raises(contextfit.errors.UnknownStrategy):
        contextfit.plan_prompt(chat, model="gpt-4o", context_strategy="nope")
    with pytest.raises(contextfit.errors.InvalidSettings):
        contextfit.plan_prompt(chat, model="gpt-4o", template="cohere")
    with pytest.raises(contextfit.TokenBudgetExceeded) as caught:
        contextfit.plan_prompt([{"role": "user", "content": "word " * 500}], model="gpt-4o", context_limit=200, response_reserve=100)
    assert caught.value.budget == 100


def test_compare_strategies_returns_a_plan_or_the_error_per_strategy():
    chat = [{"role": "system", "content": "s " * 300}, {"role": "user", "content": "hi"}]
    plans = dict(FitSession(chat).plans(model="gpt-4o", context_limit=400, response_reserve=200))
    assert list(plans) == STRATEGIES
    assert all(p.code == "TOKEN_BUDGET_EXCEEDED" for p in plans.values())


def test_planning_writes_nothing(tmp_path, monkeypatch):
    monkeypatch.chdir(tmp_path)
    chat = [{"role": "user", "content": "a " * 50}, {"role": "assistant", "content": "b " * 50}, {"role": "user", "content": "c"}]
    for name in STRATEGIES:
        contextfit.plan_prompt(chat, model="gpt-4o", context_strategy=name, context_limit=150, response_reserve=50)
    assert os.listdir(tmp_path) == []


def test_to_dict_has_the_api_keys():
    plan = contextfit.plan_prompt([{"role": "user", "content": "hi"}], model="gpt-4o")
    data = plan.to_dict()
    for key in ("blocks", "providerMessages", "promptTokens", "budget", "contextLimit", "responseReserve", "tokenizer", "strategy", "diagnostics"):
        assert key in data
    assert set(data["blocks"][0]) >= {"index", "id", "role", "kind", "content", "tokens", "included", "reason"}


def test_macros():
    assert fill_macros("<USER> and <BOT>, {{ char }}", {"user": "A", "char": "B"}) == "A and B, B"


SHARED = shared_params(sorted(
    p for p in SHARED_FIXTURES.rglob("*") if p.suffix in (".json", ".jsonl", ".png") and "jtokkit" not in p.parts
    and "openai-cookbook" not in p.parts and not p.name.endswith(".extracted.json")
))


@pytest.mark.parametrize("path", SHARED, ids=lambda p: str(p.relative_to(SHARED_FIXTURES)))
def test_every_shared_conversation_plans_with_groups_whole(path):
    conversation = load_conversation_file(path)
    for name in STRATEGIES:
        for limit in (4_000, 128_000):
            try:
                plan = contextfit.plan_prompt(
                    conversation, model="gpt-4o", context_strategy=name, context_limit=limit, response_reserve=1_000
                )
            except contextfit.TokenBudgetExceeded:
                continue
            assert plan.prompt_tokens <= plan.budget
            assert plan.prompt_tokens == sent_tokens(plan)
            inputs = [b for b in plan.blocks if b.origin == "input" and b.reason != "summary"]
            kept = {i for i, b in enumerate(inputs) if b.included}
            for group in groups([b.message for b in inputs]):
                assert group <= kept or not group & kept


# -- what is counted is what is sent ---------------------------------------------------------


def sent_tokens(plan) -> int:
    """An independent count of the request: the provider messages, the Anthropic
    system text as one system message, and the tool definitions."""
    counter = contextfit.token_counter(plan.model)
    system = plan.provider_system
    return (counter(plan.provider_messages) + plan.tools_tokens
            + (counter.count_message({"role": "system", "content": system}) if system else 0))


THINKING = ["test_anthropic_model_thinking_part_redacted", "test_anthropic_tool_with_thinking"]


@pytest.mark.parametrize("name", THINKING)
@pytest.mark.parametrize("model", ["gpt-4o", "claude-sonnet-4", "llama-3.1-8b", "mistral-large"])
@pytest.mark.parametrize("strategy", STRATEGIES)
def test_prompt_tokens_count_exactly_what_is_sent(name, model, strategy):
    path = shared_path("pydantic-ai", "anthropic_messages", f"{name}.request.json")
    conversation = load_conversation_file(path)
    for limit in (None, 1_200):
        settings = {} if limit is None else {"context_limit": limit, "response_reserve": 200}
        plan = contextfit.plan_prompt(conversation.messages, model=model, context_strategy=strategy, **settings)
        assert plan.prompt_tokens == sent_tokens(plan) <= plan.budget
        kept = sum(b.tokens for b in plan.blocks if b.included)
        assert plan.prompt_tokens <= kept + contextfit.token_counter(model).base_tokens


def test_thinking_from_another_provider_is_neither_sent_nor_counted():
    path = shared_path("pydantic-ai", "anthropic_messages", "test_anthropic_model_thinking_part_redacted.request.json")
    conversation = load_conversation_file(path)
    # The thinking stands in the current turn (after the last user message): Claude needs it.
    current = conversation.messages[:2]
    plan = contextfit.plan_prompt(current, model="gpt-4o")
    assert "redacted_thinking" not in str(plan.provider_messages)
    assert plan.prompt_tokens == sent_tokens(plan) < 200  # the signed blob is ~700 tokens
    answer = next(b for b in plan.blocks if b.kind == "history" and "redacted_thinking" in str(b.message))
    thinking = plan.blocks[answer.index - 1]
    assert (thinking.kind, thinking.included, thinking.reason, thinking.id) == ("reasoning", False, "not_sent", f"{answer.id}:reasoning")
    unsent = next(d for d in plan.diagnostics if d["code"] == "PARTS_NOT_SENT")
    assert unsent["blocks"] == [answer.id] and unsent["parts"] == ["redacted_thinking"]
    # For Claude the same parts are sent, and counted.
    claude = contextfit.plan_prompt(current, model="claude-sonnet-4")
    assert "redacted_thinking" in str(claude.provider_messages) and claude.prompt_tokens > 700
    assert all(d["code"] != "PARTS_NOT_SENT" for d in claude.diagnostics)
    row = next(b for b in claude.blocks if b.kind == "reasoning")
    assert row.included and row.tokens > 600 and claude.prompt_tokens == sent_tokens(claude)


def test_earlier_turns_thinking_is_sent_only_to_models_that_keep_it():
    path = shared_path("pydantic-ai", "anthropic_messages", "test_anthropic_model_thinking_part_redacted.request.json")
    messages = load_conversation_file(path).messages  # user, assistant (thinking), user
    # Claude Sonnet 4 strips an earlier turn's thinking and does not count it (docs/tokenizers.md, Reasoning).
    sonnet = contextfit.plan_prompt(messages, model="claude-sonnet-4")
    assert "redacted_thinking" not in str(sonnet.provider_messages)
    assert sonnet.prompt_tokens == sent_tokens(sonnet) < 250  # the blob would be 600+
    row = next(b for b in sonnet.blocks if b.kind == "reasoning")
    assert (row.included, row.reason) == (False, "not_sent") and row.tokens > 600  # what it would have cost
    # Claude Opus 4.5 keeps the thinking of every turn: sent and counted.
    opus = contextfit.plan_prompt(messages, model="claude-opus-4-5")
    assert "redacted_thinking" in str(opus.provider_messages) and opus.prompt_tokens == sent_tokens(opus) > 700
    row = next(b for b in opus.blocks if b.kind == "reasoning")
    assert row.included and row.reason == "within_budget"


@pytest.mark.parametrize("model", ["gpt-4o", "claude-sonnet-4"])
def test_summarize_puts_the_summary_just_before_the_current_input_for_every_shape(model):
    chat = [{"role": "system", "content": "Be brief."}]
    for i in range(30):
        role = "user" if i % 2 == 0 else "assistant"
        chat.append({"role": role, "content": f"Turn {i} talks about the castle and the river. " * 12})
    chat.append({"role": "user", "content": "What now?"})
    plan = contextfit.plan_prompt(chat, model=model, context_strategy="summarize", context_limit=1_500, response_reserve=200)
    summary = plan.summary
    assert summary is not None and summary.included
    assert summary.content not in (plan.provider_system or "")
    texts = []
    for message in plan.provider_messages:
        content = message["content"]
        texts += [content] if isinstance(content, str) else [part["text"] for part in content if part.get("type") == "text"]
    assert texts[-2:] == [summary.content, "What now?"]
    assert plan.prompt_tokens == sent_tokens(plan)


def test_plan_prompt_rejects_unknown_keywords_and_names_the_accepted_ones():
    chat = [{"role": "user", "content": "hi"}]
    with pytest.raises(contextfit.errors.InvalidSettings) as caught:
        contextfit.plan_prompt(chat, model="gpt-4o", contextStrategy="summarize")
    assert "'contextStrategy'" in caught.value.message and "context_strategy" in caught.value.message
    assert "summary_tokens" in caught.value.message and "context_limit" in caught.value.message
    with pytest.raises(contextfit.errors.InvalidSettings, match="context_limt"):
        contextfit.plan_prompt(chat, model="gpt-4o", context_limt=500)
    with pytest.raises(contextfit.errors.InvalidSettings, match="context_limt"):
        dict(FitSession(chat).plans(model="gpt-4o", context_limt=500))
    # Strategy options are keywords too.
    assert contextfit.plan_prompt(chat, model="gpt-4o", context_strategy="summarize", summary_tokens=50).strategy == "summarize"


def test_a_plugin_strategy_may_name_its_own_options():
    def keep_all(messages, count_tokens, budget, *, keep_last=None, **options):
        return list(messages)

    undo = contextfit.registry.register("keep-all-options", keep_all)
    try:
        chat = [{"role": "user", "content": "hi"}]
        assert contextfit.plan_prompt(chat, model="gpt-4o", context_strategy="keep-all-options", keep_last=2).strategy == "keep-all-options"
        with pytest.raises(contextfit.errors.InvalidSettings, match="keep_lats"):
            contextfit.plan_prompt(chat, model="gpt-4o", context_strategy="keep-all-options", keep_lats=2)
    finally:
        undo()


def test_a_refusal_names_the_protected_blocks_and_their_tokens():
    chat = [
        {"role": "system", "content": "rules " * 300, "meta": {"id": "rules"}},
        {"role": "user", "content": "old", "meta": {"id": "old"}},
        {"role": "assistant", "content": "pinned " * 50, "pinned": True, "meta": {"id": "pin"}},
        {"role": "user", "content": "hi", "meta": {"id": "now"}},
    ]
    with pytest.raises(contextfit.TokenBudgetExceeded) as caught:
        contextfit.plan_prompt(chat, model="gpt-4o", context_limit=300, response_reserve=100)
    error = caught.value
    data = error.to_dict()
    assert data["budget"] == 200 and data["promptTokens"] == error.prompt_tokens > 200
    blocks = {b["id"]: b for b in data["blocks"]}
    assert [blocks[i]["reason"] for i in ("rules", "old", "pin", "now")] == ["system", "over_budget", "pinned", "current_input"]
    assert blocks["rules"]["tokens"] > 290 and blocks["rules"]["included"] and not blocks["old"]["included"]
    counter = contextfit.token_counter("gpt-4o")
    assert error.prompt_tokens == counter([chat[0], chat[2], chat[3]])
