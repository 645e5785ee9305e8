"""OpenAI Responses API requests: import, detection, counting, reasoning, rendering back."""

from __future__ import annotations

import base64
import copy
import json

import pytest
from support.paths import TEST_DATA, shared_path

from contextfit import InvalidConversation, load_conversation, plan_prompt
from contextfit.inputs.formats import detect_format
from contextfit.inputs.formats import list_conversations
from contextfit.inputs.formats.responses import is_responses_body
from contextfit.tokens.chat_counter import token_counter
from contextfit.tokens.reasoning_items import encrypted_tokens, reasoning_item_tokens
from contextfit.tokens.responses_render import responses_input, responses_tools
from contextfit.tokens.sent import render

REQUEST = TEST_DATA / "formats" / "responses_request.json"


def body() -> dict:
    return json.loads(REQUEST.read_text())


def request(items, **extra) -> dict:
    return {"model": "gpt-5", "input": items, **extra}


def user(text: str) -> dict:
    return {"role": "user", "content": text}


def call(call_id: str, name: str = "lookup", arguments="{}") -> dict:
    return {"type": "function_call", "call_id": call_id, "name": name, "arguments": arguments}


def output(call_id: str, text: str = "ok") -> dict:
    return {"type": "function_call_output", "call_id": call_id, "output": text}


def plain(message: dict) -> dict:
    return {key: value for key, value in message.items() if key not in ("meta", "id")}


# -- import --------------------------------------------------------------------------------------------


def test_the_request_becomes_chat_completions_messages():
    conversation = load_conversation(REQUEST.read_text())
    assert conversation.format == "openai-responses" and conversation.model == "gpt-5"
    messages = conversation.messages
    assert [m["role"] for m in messages] == ["system", "user", "assistant", "tool", "assistant", "user", "assistant", "tool"]
    # instructions are the system block
    assert messages[0]["content"] == body()["instructions"] and messages[0]["meta"] == {"id": "instructions", "kind": "system"}
    # parts in the Chat Completions shape; the image keeps its data URL and detail
    text, image = messages[1]["content"]
    assert text == {"type": "text", "text": "Where was this photo taken? I'm going there next week."}
    assert image["type"] == "image_url" and image["image_url"]["detail"] == "high"
    assert image["image_url"]["url"].startswith("data:image/png;base64,")
    # reasoning leads the assistant turn it belongs to; the call joins that turn
    first = messages[2]
    assert [part["type"] for part in first["content"]] == ["reasoning", "text"]
    assert first["content"][0]["id"] == "rs_001" and first["meta"]["id"] == "msg_001"
    assert first["tool_calls"] == [
        {"id": "call_weather", "type": "function", "function": {"name": "get_weather", "arguments": '{"city":"Lisbon"}'}}
    ]
    assert plain(messages[3]) == {"role": "tool", "tool_call_id": "call_weather", "content": '{"temp_c": 21, "sky": "clear"}'}
    assert messages[6]["content"][0]["encrypted_content"] and messages[6]["content"][0]["type"] == "reasoning"
    assert messages[6]["tool_calls"][0]["id"] == "call_rate" and messages[6]["meta"]["id"] == "fc_002"


def test_tools_are_the_chat_completions_tools_and_counted_alike():
    conversation = load_conversation(REQUEST.read_text())
    flat = [tool for tool in body()["tools"] if tool["type"] == "function"]
    nested = [{"type": "function", "function": {k: v for k, v in tool.items() if k != "type"}} for tool in flat]
    assert conversation.tools == nested
    assert any("hosted tools (web_search)" in warning for warning in conversation.warnings)
    counter = token_counter("gpt-5")
    assert counter.count_tools(conversation.tools) == counter.count_tools(nested) > 0
    plan = plan_prompt(conversation, model="gpt-5")
    # the instructions are a system message: the definitions join it (tokens/openai_tools.py)
    assert plan.blocks[0].kind == "tools" and plan.tools_tokens == counter.count_tools(nested, conversation.messages)
    assert sorted(tool["name"] for tool in plan.tools_view["perTool"]) == ["get_exchange_rate", "get_weather"]
    assert responses_tools(conversation.tools) == flat  # back to the flat form


def test_the_image_is_counted_from_its_dimensions_like_a_chat_completions_image():
    conversation = load_conversation(REQUEST.read_text())
    image = conversation.messages[1]["content"][1]
    counter = token_counter("gpt-4o")
    # 600x400 at high detail: 2 tiles of 512 px -> 85 + 2 * 170
    assert counter.images.count(image) == (425, False)
    responses_part = body()["input"][0]["content"][1]
    assert counter.images.count(responses_part) == (425, False)
    plan = plan_prompt(conversation, model="gpt-4o")
    assert not any(d["code"] == "IMAGE_SIZE_UNKNOWN" for d in plan.diagnostics)


def test_detection_and_every_face_read_the_same_file():
    text = REQUEST.read_text()
    assert detect_format(text) == "openai-responses"
    assert detect_format(REQUEST) == "openai-responses"
    assert detect_format(json.dumps(body()["input"])) == "openai-responses"  # a bare item list
    assert load_conversation(text, format="responses").format == "openai-responses"
    (entry,) = list_conversations(text.encode())  # the dashboard's Paste / Upload
    assert entry.conversation.messages == load_conversation(text).messages
    # an input string beside model/instructions is a request; an Alpaca record is not
    assert detect_format('{"model": "gpt-5", "input": "Hi"}') == "openai-responses"
    assert not is_responses_body({"instruction": "Translate.", "input": "Hallo", "output": "Hello"})
    # Chat Completions lists stay Chat Completions
    assert detect_format('[{"role": "user", "content": "Hi"}]') == "openai"
    assert detect_format('{"messages": [{"role": "user", "content": "Hi"}], "input": "x"}') == "openai"


def test_the_cli_reads_a_responses_request():
    import io

    from contextfit import cli

    out = io.StringIO()
    assert cli.main(["fit", str(REQUEST), "--strategy", "truncate", "--json"], out) == 0
    plan = json.loads(out.getvalue())["truncate"]
    assert plan["model"] == "gpt-5"  # the request's model
    rows = {block["id"]: block for block in plan["blocks"]}
    assert rows["fc_002:reasoning"]["kind"] == "reasoning" and rows["tools"]["kind"] == "tools"
    assert any(d["code"] == "REASONING_ESTIMATED" for d in plan["diagnostics"])


def test_the_api_previews_the_imported_request(store):
    from support.api import LOCAL
    from fastapi.testclient import TestClient

    from contextfit.serving.api import create_app
    from contextfit.serving.providers import EchoProvider

    conversation = load_conversation(REQUEST.read_text())
    local = plan_prompt(conversation, model="gpt-5")
    with TestClient(create_app(store, {"echo": EchoProvider()}), base_url=LOCAL) as client:
        sent = {"messages": conversation.messages, "tools": conversation.tools, "model": "gpt-5"}
        response = client.post("/api/v2/context-preview", json=sent)
    assert response.status_code == 200, response.text
    plan = response.json()
    assert [(b["id"], b["kind"], b["included"], b["reason"]) for b in plan["blocks"]] == [
        (b.id, b.kind, b.included, b.reason) for b in local.blocks
    ]
    assert plan["promptTokens"] == local.prompt_tokens and plan["providerMessages"] == local.provider_messages


def test_input_as_a_plain_string_and_the_short_message_form():
    conversation = load_conversation({"model": "gpt-5", "instructions": "Be brief.", "input": "Hi there"})
    assert [plain(m) for m in conversation.messages] == [
        {"role": "system", "content": "Be brief."},
        {"role": "user", "content": "Hi there"},
    ]
    short = load_conversation(request([{"role": "developer", "content": "Terse."}, user("Hi")]))
    assert [m["meta"]["kind"] for m in short.messages] == ["system", "history"]


def test_a_response_body_reads_its_output_items():
    response = {
        "object": "response", "model": "gpt-5",
        "output": [
            {"type": "reasoning", "id": "rs_9", "summary": []},
            {"type": "message", "id": "msg_9", "role": "assistant", "status": "completed",
             "content": [{"type": "output_text", "text": "Done.", "annotations": []}]},
        ],
    }
    conversation = load_conversation(response)
    assert conversation.format == "openai-responses"
    assert [part["type"] for part in conversation.messages[0]["content"]] == ["reasoning", "text"]
    assert any("response body" in warning for warning in conversation.warnings)


# -- hostile input -----------------------------------------------------------------------------------


def test_an_output_without_its_call_is_kept_unlinked_and_said():
    conversation = load_conversation(request([user("Hi"), output("ghost")]))
    assert conversation.messages[-1]["tool_call_id"] == "ghost"
    assert any("no earlier function_call has it" in w and "$.input[1]" in w for w in conversation.warnings)


def test_a_call_without_its_output_is_said():
    conversation = load_conversation(request([user("Hi"), call("c1")]))
    assert conversation.messages[-1]["tool_calls"][0]["id"] == "c1"
    assert any("'c1'" in w and "has no function_call_output" in w for w in conversation.warnings)


def test_a_duplicate_call_id_is_said_and_starts_a_new_group():
    items = [user("Hi"), call("c1"), output("c1"), user("Again"), call("c1"), output("c1", "again")]
    conversation = load_conversation(request(items))
    assert any("'c1' at $.input[4] was already used at $.input[1]" in w for w in conversation.warnings)
    plan = plan_prompt(conversation, model="gpt-4o")
    group_of = {block.id: block.group for block in plan.blocks}
    # Groups by answering (SPEC 3.2): each result answers the nearest earlier unanswered call with its id.
    assert group_of["m1"] == group_of["m2"] is not None
    assert group_of["m4"] == group_of["m5"] is not None
    assert group_of["m1"] != group_of["m4"]


def test_non_string_arguments():
    conversation = load_conversation(request([user("Hi"), call("c1", arguments={"city": "Oslo"}), output("c1")]))
    assert conversation.messages[1]["tool_calls"][0]["function"]["arguments"] == '{"city": "Oslo"}'
    assert any("not a JSON string" in w for w in conversation.warnings)
    with pytest.raises(InvalidConversation) as error:
        load_conversation(request([user("Hi"), call("c1", arguments=42)]))
    assert error.value.location == "$.input[1].arguments" and "a JSON string" in error.value.message


def test_unknown_items_are_skipped_and_named():
    items = [
        user("Search the web"),
        {"type": "web_search_call", "id": "ws_1", "status": "completed", "action": {"query": "x"}},
        {"type": "item_reference", "id": "msg_old"},
        {"type": "message", "role": "assistant", "content": [{"type": "output_text", "text": "Found it."}]},
    ]
    conversation = load_conversation(request(items))
    assert [m["role"] for m in conversation.messages] == ["user", "assistant"]
    (warning,) = [w for w in conversation.warnings if w.startswith("Skipped")]
    assert "web_search_call ($.input[1])" in warning and "item_reference 'msg_old' ($.input[2])" in warning


@pytest.mark.parametrize(
    "value, location, words",
    [
        (request([]), "$", "nothing to read"),
        ({"model": "gpt-5", "input": 5}, "$.input", "a string or a list of input items"),
        (request(["hello"]), "$.input[0]", "must be an object"),
        (request([{"content": "no role or type"}]), "$.input[0]", "neither a message"),
        (request([{"role": "tool", "content": "x"}]), "$.input[0].role", "expected one of user"),
        (request([{"type": "function_call", "name": "f", "arguments": "{}"}]), "$.input[0].call_id", "non-empty string"),
        (request([{"type": "function_call_output", "call_id": "c", "output": {"a": 1}}]), "$.input[0].output", "a string"),
        (request([{"type": "reasoning", "summary": "thought"}]), "$.input[0].summary", "summary_text"),
        (request([{"type": "reasoning", "summary": [], "encrypted_content": 7}]), "$.input[0].encrypted_content", "a string"),
        (request([user("x")], instructions=["a"]), "$.instructions", "a string"),
        (request([{"role": "user", "content": [{"type": "input_text", "text": None}]}]), "$.input[0].content[0].text", "a string"),
        (request([{"role": "user", "content": [{"type": "input_image", "image_url": 3}]}]), "$.input[0].content[0].image_url", "URL"),
    ],
)
def test_malformed_requests_are_one_clear_error(value, location, words):
    with pytest.raises(InvalidConversation) as error:
        load_conversation(value, format="openai-responses")
    assert error.value.location == location and words in error.value.message
    assert "\n" not in error.value.message and "Traceback" not in error.value.message


def test_the_malformed_fixture_is_one_clear_error():
    # the request fixture with its first function_call's call_id left out
    with pytest.raises(InvalidConversation) as error:
        load_conversation(REQUEST.with_name("responses_malformed.json"))
    assert error.value.location == "$.input[3].call_id" and "a function_call needs it" in error.value.message


def test_a_list_of_anthropic_response_bodies_stays_anthropic():
    bodies = [{"type": "message", "role": "user", "content": "Hi"},
              {"type": "message", "role": "assistant", "content": [{"type": "thinking", "thinking": "hm"},
                                                                    {"type": "text", "text": "Hello"}]}]
    assert detect_format(json.dumps(bodies)) == "anthropic"
    assert detect_format(json.dumps(bodies[:1])) == "openai-responses"  # a Responses message item alone


def test_empty_input_with_instructions_is_just_the_system_block():
    conversation = load_conversation(request([], instructions="Be kind."))
    assert [plain(m) for m in conversation.messages] == [{"role": "system", "content": "Be kind."}]


def test_reasoning_with_nothing_after_it_is_its_own_turn_and_said():
    conversation = load_conversation(request([user("Hi"), {"type": "reasoning", "id": "rs_x", "summary": []}, user("Hello?")]))
    assert [m["role"] for m in conversation.messages] == ["user", "assistant", "user"]
    assert conversation.messages[1]["meta"]["id"] == "rs_x"
    assert any("rs_x" not in w and "$.input[1] is followed by no message" in w for w in conversation.warnings)


def test_request_fields_that_are_not_counted_are_said():
    conversation = load_conversation(request("Hi", previous_response_id="resp_1", reasoning={"context": "all_turns"}))
    assert any("previous_response_id 'resp_1'" in w for w in conversation.warnings)
    assert any("reasoning.context is all_turns" in w for w in conversation.warnings)


def test_importing_never_changes_the_input():
    value = body()
    before = copy.deepcopy(value)
    load_conversation(value)
    assert value == before


# -- reasoning -----------------------------------------------------------------------------------------


def test_reasoning_rows_follow_openais_rule():
    plan = plan_prompt(load_conversation(REQUEST.read_text()), model="gpt-5")
    rows = {block.id: block for block in plan.blocks if block.kind == "reasoning"}
    # an earlier turn's reasoning is not sent; the current turn's (around its function call) is
    earlier, current = rows["msg_001:reasoning"], rows["fc_002:reasoning"]
    assert (earlier.included, earlier.reason) == (False, "not_sent")
    assert current.included and current.reason == "within_budget"
    assert current.content == "Need the USD/EUR rate."
    sent_reasoning = [p for m in plan.provider_messages for p in m.get("content") or [] if isinstance(p, dict) and p.get("type") == "reasoning"]
    assert [p["id"] for p in sent_reasoning] == ["rs_002"]


def test_encrypted_reasoning_is_estimated_not_counted_as_text():
    conversation = load_conversation(REQUEST.read_text())
    part = conversation.messages[6]["content"][0]
    counter = token_counter("gpt-5")
    decoded = len(base64.b64decode(part["encrypted_content"]))
    assert encrypted_tokens(part["encrypted_content"]) == decoded // 4 == 384
    summary = counter.tokenizer.count("Need the USD/EUR rate.")
    assert reasoning_item_tokens(part, counter.tokenizer.count) == summary + 384
    as_text = counter.tokenizer.count(json.dumps(part))
    assert as_text > summary + 384 * 1.2  # what counting the base64 as text would have said
    plan = plan_prompt(conversation, model="gpt-5")
    row = next(block for block in plan.blocks if block.id == "fc_002:reasoning")
    assert row.tokens == summary + 384
    (diagnostic,) = [d for d in plan.diagnostics if d["code"] == "REASONING_ESTIMATED"]
    assert diagnostic["blocks"] == ["fc_002:reasoning"] and diagnostic["tokens"] == 384
    assert plan.tokenizer.approximate


def test_a_plan_without_encrypted_reasoning_is_not_flagged():
    value = body()
    del value["input"][7]["encrypted_content"]
    plan = plan_prompt(load_conversation(value), model="gpt-5")
    assert not any(d["code"] == "REASONING_ESTIMATED" for d in plan.diagnostics)
    # what still makes it approximate: an assistant turn with text beside its tool call, a shape
    # no recorded OpenAI count covers (counted on the high side)
    (flag,) = [d for d in plan.diagnostics if d["code"] == "TOOL_SHAPES_UNVERIFIED"]
    assert flag["shapes"] == {"text beside tool calls": 1} and flag["blocks"] == ["msg_001"]
    assert plan.tokenizer.approximate
    value["input"][2]["content"] = []  # the turn holds only its call
    plan = plan_prompt(load_conversation(value), model="gpt-5")
    assert not plan.tokenizer.approximate and not plan.diagnostics


# -- rendering back ------------------------------------------------------------------------------------


def test_tool_pairs_render_as_assistant_tool_calls_and_tool_messages():
    conversation = load_conversation(REQUEST.read_text())
    prompt = render(conversation.messages, "openai")
    roles = [(m["role"], bool(m.get("tool_calls")), m.get("tool_call_id")) for m in prompt.messages]
    assert roles[2:4] == [("assistant", True, None), ("tool", False, "call_weather")]
    assert roles[6:] == [("assistant", True, None), ("tool", False, "call_rate")]
    assert all("meta" not in m and "id" not in m for m in prompt.messages)


def test_a_plan_renders_back_to_responses_items():
    conversation = load_conversation(REQUEST.read_text())
    plan = plan_prompt(conversation, model="gpt-5")
    items = responses_input(plan.provider_messages)
    kinds = [item.get("type") for item in items]
    assert kinds == ["message", "message", "message", "function_call", "function_call_output", "message", "message",
                     "reasoning", "function_call", "function_call_output"]
    assert items[1]["content"][1] == body()["input"][0]["content"][1]  # the image part, as it came
    assert items[7] == {k: v for k, v in body()["input"][7].items()}
    again = load_conversation(request(items, tools=responses_tools(conversation.tools)))
    assert [plain(m) for m in again.messages] == [plain(m) for m in plan.provider_messages]


# -- the shared fixture: pydantic-ai's recorded /v1/responses traffic ------------------------------------


def _recorded_requests():
    yaml = pytest.importorskip("yaml")
    path = shared_path("pydantic-ai", "anthropic_messages", "test_live_tool_search_handoff_anthropic_openai_anthropic.yaml")
    cassette = yaml.safe_load(path.read_text())
    found = []
    for interaction in cassette["interactions"]:
        sent = interaction["request"]
        if sent["uri"].endswith("/v1/responses"):
            usage = interaction["response"]["parsed_body"]["usage"]
            found.append((sent["parsed_body"], usage["input_tokens"]))
    return found


def test_recorded_responses_requests_import():
    recorded = _recorded_requests()
    assert len(recorded) == 2
    for sent, _ in recorded:
        assert detect_format(json.dumps(sent)) == "openai-responses"
        conversation = load_conversation(sent)
        calls = {c["id"] for m in conversation.messages for c in m.get("tool_calls") or ()}
        results = {m["tool_call_id"] for m in conversation.messages if m["role"] == "tool"}
        assert results == calls and calls  # every function_call has its output
        warnings = " ".join(conversation.warnings)
        assert "Skipped" not in warnings  # the tool search's call and output are read, as a call and its result
        search = next(m for m in conversation.messages if any(
            c["function"]["name"] == "tool_search" for c in m.get("tool_calls") or ()))
        assert search["tool_calls"][0]["function"]["arguments"] == '{"queries": ["get exchange rate"]}'
        output = next(m for m in conversation.messages if m.get("tool_call_id") == search["tool_calls"][0]["id"])
        assert json.loads(output["content"])[0]["name"] == "get_exchange_rate"
        # the tool search is counted with the tools; the deferred function it loaded is sent
        assert "hosted tools" not in warnings and "1 tool definition loaded by a tool search" in warnings
        assert [tool.get("type") for tool in conversation.tools] == ["tool_search", "function"]
        assert not any(tool.get("defer_loading") for tool in conversation.tools)
        assert "reasoning.context is all_turns" in warnings
        plan = plan_prompt(conversation, model="gpt-5")
        grouped = [block for block in plan.blocks if block.role in ("tool",) or block.message.get("tool_calls")]
        assert grouped and all(block.group is not None for block in grouped)


def test_openai_reasoning_is_not_sent_to_anthropic():
    plan = plan_prompt(load_conversation(REQUEST.read_text()), model="claude-sonnet-4")
    assert plan.template == "anthropic"
    parts = [part.get("type") for m in plan.provider_messages for part in m["content"]]
    assert "reasoning" not in parts and "tool_use" in parts and "tool_result" in parts
    rows = [(b.id, b.included, b.reason) for b in plan.blocks if b.kind == "reasoning"]
    assert rows == [("msg_001:reasoning", False, "not_sent"), ("fc_002:reasoning", False, "not_sent")]
    assert not any(d["code"] == "REASONING_ESTIMATED" for d in plan.diagnostics)


@pytest.mark.parametrize("strategy", ["truncate", "summarize", "clear-tool-results"])
@pytest.mark.parametrize("limit", [700, 800, 1400])
def test_a_responses_import_fits_like_the_same_chat_in_chat_completions(strategy, limit):
    conversation = load_conversation(REQUEST.read_text())
    chat = load_conversation({"model": "gpt-5", "messages": render(conversation.messages, "openai").messages,
                              "tools": conversation.tools})
    assert chat.format == "openai"
    plans = [plan_prompt(c, model="gpt-4o", context_strategy=strategy, context_limit=limit, response_reserve=100)
             for c in (conversation, chat)]
    rows = [[(b.role, b.kind, b.tokens, b.included, b.reason, b.group) for b in plan.blocks] for plan in plans]
    assert rows[0] == rows[1] and plans[0].prompt_tokens == plans[1].prompt_tokens
    assert plans[0].provider_messages == plans[1].provider_messages
