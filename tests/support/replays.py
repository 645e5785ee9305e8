"""A replay checked turn by turn against fresh plans of each prefix (the slow way)."""

from __future__ import annotations

import contextfit
from contextfit.inputs import messages as msg
from contextfit.pipeline.plan import plan_prompt
from contextfit.replays.facts import contains_word, entities
from contextfit.replays.run import ENTITY_RULE, replay, request_positions, variants
from contextfit.tokens.sent import sent_counter, trace

VARIANTS = ["truncate", "summarize", "clear-tool-results", "vector-recall", "manual",
            {"strategy": "truncate", "options": {"stable_prefix": True}},
            {"strategy": "summarize", "options": {"stable_prefix": True}},
            {"strategy": "clear-tool-results", "options": {"stable_prefix": True}},
            # options of the refits that carry truncate's walk (tests/fitting/test_carried_refits.py)
            {"strategy": "summarize", "options": {"summary_tokens": 30, "summary_scan_chars": 300}},
            {"strategy": "vector-recall", "options": {"relevance_window": 2}},
            {"strategy": "clear-tool-results", "options": {"keep": 1, "clear_at_least": 20, "exclude_tools": ["lookup"]}},
            # capped results, carried from request to request (fitting/result_cap.py)
            {"strategy": "truncate", "options": {"tool_result_cap": 40}},
            {"strategy": "clear-tool-results", "options": {"tool_result_cap": 60}}]


def _common(a: list, b: list) -> int:
    j = 0
    while j < min(len(a), len(b)) and a[j] == b[j]:
        j += 1
    return j


def check_against_fresh_plans(chat: list[dict], model: str, limit: int, reserve: int, strategies: list = VARIANTS) -> None:
    """Every turn of a replay of ``chat`` is what planning its prefix from scratch gives, for every variant."""
    result = replay(chat, model=model, context_limit=limit, response_reserve=reserve, strategies=strategies,
                    facts=ENTITY_RULE)  # the entity rule, turn by turn: the oracle below is its slow form
    requests = request_positions(chat)
    for variant in strategies:
        name = variant if isinstance(variant, str) else variant["strategy"]
        options = {} if isinstance(variant, str) else variant["options"]
        label = variants([variant])[0].label
        previous = None
        for turn, position in zip(result.turns[label], requests):
            try:
                plan = plan_prompt(chat[: position + 1], model=model, context_limit=limit, response_reserve=reserve,
                                   context_strategy=name, **options)
            except contextfit.ContextfitError as exc:
                assert turn.error == exc.code
                previous = None
                continue
            assert turn.error is None
            assert (turn.prompt_tokens, turn.sent_blocks) == (plan.prompt_tokens, len(plan.fit.kept))
            # the cache prefix, the slow way: whole provider messages from the start, the blocks fully inside them
            if previous is None:
                assert turn.shared_tokens == 0
            else:
                traced = trace(plan.fit.kept, plan.template)
                j = _common(previous.provider_messages, plan.provider_messages)
                inside = {p for s in traced.sources[:j] for p in s} - {p for s in traced.sources[j:] for p in s}
                counter = sent_counter(contextfit.token_counter(model), plan.template)
                shared = sum(counter.count_message(plan.fit.kept[p]) for p in inside)
                if previous.provider_system == plan.provider_system:  # Anthropic's system text comes first
                    shared += sum(counter.count_message(plan.fit.kept[p]) for p in traced.system_sources)
                elif plan.provider_system is not None or previous.provider_system is not None:
                    shared = 0
                assert turn.shared_tokens == min(shared, plan.prompt_tokens - counter.base_tokens)
            # the default entity rule, the slow way: the whole earlier text, every sent block; a tool
            # round's request reads its turn's user message
            anchor = next((p for p in range(position, -1, -1) if chat[p].get("role") == "user" and not any(
                isinstance(part, dict) and str(part.get("type", "")).endswith("tool_result")
                for part in (chat[p]["content"] if isinstance(chat[p].get("content"), list) else ()))), position)
            earlier = "\n".join(msg.message_text(m) for m in chat[:anchor])
            in_force = [e for e in entities(msg.message_text(chat[anchor])) if contains_word(earlier, e)]
            assert [fact.name for fact in turn.facts] == in_force
            current = msg.explicit_id(chat[anchor]) or f"m{anchor}"
            plain = "\n".join(msg.message_text(b) for b in plan.fit.kept if msg.kind_of(b) != msg.SUMMARY
                              and not (msg.message_id(b, -1) == current and msg.role_of(b) == "user"))
            summary = "\n".join(msg.message_text(b) for b in plan.fit.kept if msg.kind_of(b) == msg.SUMMARY)
            assert [fact.status for fact in turn.facts] == [
                "verbatim" if contains_word(plain, e) else "summary" if contains_word(summary, e) else "lost"
                for e in in_force]
            previous = plan
