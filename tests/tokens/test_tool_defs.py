"""Tool definitions are a protected ``tools`` block in every plan, chart, audit and CSV (issue 15),
and image and tool-definition blocks keep the pipeline's promises over random inputs."""

from __future__ import annotations

import base64
import json
import struct

from hypothesis import HealthCheck, given, settings
from hypothesis import strategies as st
from support.depth import examples

import contextfit
from contextfit.tokens import images
from contextfit.serving.audit import audit_from_plan
from contextfit.dashboard.charts import budget_figure
from contextfit.dashboard.exports import blocks_csv
from contextfit.inputs.formats import load_conversation
from contextfit.tokens.tool_defs import tool_costs


def function(name: str, description: str = "", properties: int = 1) -> dict:
    props = {f"arg{i}": {"type": "string", "description": f"argument number {i} of {name}"} for i in range(properties)}
    return {"type": "function", "function": {"name": name, "description": description,
                                             "parameters": {"type": "object", "properties": props}}}


TOOLS = [function("ping"), function("search_codebase", "Search every file of the repository.", 6),
         function("read_file", "Read a file.", 2)]
CHAT = [{"role": "system", "content": "You are an agent."}, {"role": "user", "content": "Find the bug."}]


def test_the_tools_are_the_first_block_protected_and_counted():
    plan = contextfit.plan_prompt(CHAT, model="gpt-4o", tools=TOOLS)
    block = plan.blocks[0]
    assert (block.kind, block.id, block.included, block.reason, block.fate) == ("tools", "tools", True, "required", "protected")
    # the chat has a system prompt: OpenAI's definitions join it (4 tokens less than on their own)
    counter = contextfit.token_counter("gpt-4o")
    assert block.tokens == plan.tools_tokens == counter.count_tools(TOOLS, CHAT) == counter.count_tools(TOOLS) - 4 > 0
    assert [b.index for b in plan.blocks] == list(range(len(plan.blocks)))
    assert "3 tool definitions: ping, search_codebase, read_file" == block.content
    assert sum(b.tokens for b in plan.blocks if b.included) + 3 == plan.prompt_tokens  # + the reply priming
    assert plan.to_dict()["blocks"][0]["kind"] == "tools"
    no_tools = contextfit.plan_prompt(CHAT, model="gpt-4o")
    assert [b.kind for b in no_tools.blocks] == ["system", "history"] and no_tools.to_dict()["tools"] == {}


def test_the_tools_view_lists_tokens_per_tool_largest_first():
    view = contextfit.plan_prompt(CHAT, model="gpt-4o", tools=TOOLS).to_dict()["tools"]
    assert [tool["name"] for tool in view["perTool"]] == ["search_codebase", "read_file", "ping"]
    costs = [tool["tokens"] for tool in view["perTool"]]
    assert costs == sorted(costs, reverse=True) and view["exact"] is True
    # the parts and the wrapper make up the whole within a token or two of merges; with the
    # chat's system prompt, OpenAI's definitions cost 4 less than on their own
    alone = contextfit.token_counter("gpt-4o").count_tools(TOOLS)
    assert abs(sum(costs) + 16 - alone) <= len(TOOLS) and view["tokens"] == alone - 4
    claude = contextfit.plan_prompt(CHAT, model="claude-sonnet-4", tools=TOOLS).to_dict()["tools"]
    assert claude["exact"] is False  # estimated, and flagged


def test_tight_budgets_never_drop_the_tools_block():
    total = contextfit.plan_prompt(CHAT, model="gpt-4o", tools=TOOLS).prompt_tokens
    chat = [*CHAT[:1], {"role": "user", "content": "old " * 200}, {"role": "assistant", "content": "ok"}, CHAT[1]]
    plan = contextfit.plan_prompt(chat, model="gpt-4o", tools=TOOLS, context_limit=total + 10 + 1000, response_reserve=1000)
    assert plan.blocks[0].included and plan.blocks[0].kind == "tools"
    assert any(not b.included for b in plan.blocks) and plan.prompt_tokens <= plan.budget


def test_chart_audit_and_csv_show_the_tools_block():
    plan = contextfit.plan_prompt(CHAT, model="gpt-4o", tools=TOOLS)
    names = [trace.hovertemplate for trace in budget_figure(plan).data if trace.hovertemplate]
    assert any("protected · tool definitions" in name for name in names)  # the tools block, by its plain name
    audit = audit_from_plan(plan, chat_id="c1", provider="echo").to_dict()
    assert audit["blocks"][0]["kind"] == "tools" and audit["blocks"][0]["tokens"] == plan.tools_tokens
    assert blocks_csv(plan).splitlines()[1].split(",")[:4] == ["0", "tools", "system", "tools"]


def test_anthropic_and_mcp_style_definitions_are_named():
    anthropic = {"name": "get_weather", "description": "Weather.", "input_schema": {"type": "object"}}
    mcp = {"name": "fs.read", "inputSchema": {"type": "object", "properties": {"path": {"type": "string"}}}}
    costs = tool_costs([anthropic, mcp], contextfit.token_counter("claude-sonnet-4"))
    assert sorted(cost.name for cost in costs) == ["fs.read", "get_weather"] and all(cost.tokens > 0 for cost in costs)
    bundle = {"format": "contextfit", "messages": CHAT, "tools": [mcp]}
    conversation = load_conversation(json.dumps(bundle))
    plan = contextfit.plan_prompt(conversation.messages, model="claude-sonnet-4", tools=conversation.tools)
    assert plan.blocks[0].kind == "tools" and plan.blocks[0].content.endswith("fs.read")


# -- properties over random inputs ---------------------------------------------------------------

SETTINGS = settings(max_examples=examples(60), suppress_health_check=[HealthCheck.too_slow])
names = st.from_regex(r"[a-z][a-z_]{0,12}", fullmatch=True)
tool_lists = st.lists(st.builds(function, names, st.text(max_size=40), st.integers(0, 5)), max_size=6)


def gif(width: int, height: int) -> str:
    return "data:image/gif;base64," + base64.b64encode(b"GIF89a" + struct.pack("<HH", width, height)).decode()


image_parts = st.one_of(
    st.builds(lambda w, h, d: {"type": "image_url", "image_url": {"url": gif(w, h), "detail": d}},
              st.integers(1, 9000), st.integers(1, 9000), st.sampled_from(["low", "high", "auto"])),
    st.just({"type": "image_url", "image_url": {"url": "https://example.com/x.png"}}),
)


@SETTINGS
@given(tool_lists, st.lists(image_parts, max_size=3), st.integers(0, 6), st.sampled_from(["gpt-4o", "claude-sonnet-4", "gpt-4o-mini"]),
       st.sampled_from(["truncate", "clear-tool-results", "summarize"]))
def test_image_and_tool_blocks_keep_the_plan_promises(tools, parts, turns, model, strategy):
    chat = [{"role": "system", "content": "Agent."}]
    for turn in range(turns):
        chat += [{"role": "user", "content": [{"type": "text", "text": f"look {turn}"}, *parts]},
                 {"role": "assistant", "content": f"seen {turn} " * 20}]
    chat.append({"role": "user", "content": "and now?"})
    counter = contextfit.token_counter(model)
    full = contextfit.plan_prompt(chat, model=model, tools=tools)
    limit = max(full.prompt_tokens // 2, full.tools_tokens + 400) + 10_000
    try:
        plan = contextfit.plan_prompt(chat, model=model, tools=tools, context_strategy=strategy,
                                      context_limit=limit, response_reserve=10_000)
    except contextfit.TokenBudgetExceeded:
        return
    assert plan.prompt_tokens <= plan.budget
    # what is counted is what is sent: the messages, the system text, the tool definitions
    system = plan.provider_system
    assert plan.prompt_tokens == (counter(plan.provider_messages) + plan.tools_tokens
                                  + (counter.count_message({"role": "system", "content": system}) if system else 0))
    assert (plan.blocks[0].kind == "tools") == bool(tools)
    assert all(b.included for b in plan.blocks if b.kind == "tools")
    # an image of unknown size makes the count approximate, and only then for an exact profile
    sent_unknown = any(images.unknown_size(p) for m in plan.provider_messages
                       for p in (m["content"] if isinstance(m.get("content"), list) else []))
    if sent_unknown:
        assert plan.tokenizer.approximate
    if not counter.approximate and not sent_unknown:
        assert not plan.tokenizer.approximate


def test_tool_rows_list_each_tool_largest_first_for_the_dashboard():
    from contextfit.dashboard.tools import tool_rows

    small = {"name": "ping", "input_schema": {"type": "object"}}
    big = {"name": "search", "description": "Search the web for pages about a topic. " * 10,
           "input_schema": {"type": "object", "properties": {"query": {"type": "string"}}}}
    chat = [{"role": "user", "content": "Hi"}]
    plan = contextfit.plan_prompt(chat, model="claude-sonnet-4", tools=[small, big])
    rows = tool_rows(plan)
    assert [row["tool"] for row in rows] == ["search", "ping"]
    assert rows[0]["tokens"] > rows[1]["tokens"] > 0 and not rows[0]["exact"]  # estimated outside OpenAI
    assert sum(row["share"] for row in rows) <= 1.0 and sum(row["tokens"] for row in rows) <= plan.tools_tokens
    assert [(row["tool"], row["tokens"]) for row in rows] == [(c["name"], c["tokens"]) for c in plan.to_dict()["tools"]["perTool"]]
    assert tool_rows(contextfit.plan_prompt(chat, model="gpt-4o")) == []
