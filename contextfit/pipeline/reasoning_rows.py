"""Reasoning as its own kind in a plan: one ``reasoning`` block per message that carries it.

The engine fits whole messages (a turn's reasoning stands or falls with its
answer, or is dropped on its own by ``keep_thinking``); the plan shows the
reasoning apart, just before the message it belongs to, so the tables, the
CSV, the charts and the audit can tell what reasoning costs and whether it
is sent:

* sent with its message: included, the message's reason, and its tokens
  (what the message costs with it, less what it costs without) are taken
  off the message's row, so the rows still add up to the prompt;
* in a message that is not sent: excluded with that message's reason;
* dropped by the provider's rule (an earlier turn's, tokens/reasoning.py) or
  not sent by the message shape (another provider's thinking): excluded
  with the reason ``not_sent`` and counted nowhere; its row shows what it
  would cost.
"""

from __future__ import annotations

from collections.abc import Callable, Mapping

from ..fitting import results
from ..tokens.reasoning import REASONING, has_reasoning, reasoning_text, strip_reasoning

#: The origin of a reasoning row (input rows are ``input``; the editor lists only those).
ORIGIN = "reasoning"


def with_reasoning_rows(blocks: list, counter, tokenizer, originals: Mapping[int, dict], plan_block: Callable) -> list:
    """``blocks`` (the plan's, in prompt order) with a ``reasoning`` row before
    each block that carries reasoning or lost it to the provider's rule, every
    row's ``index`` renumbered. ``counter`` counts as sent, ``tokenizer`` plainly;
    ``originals`` maps ``id`` of a fitted block to the message it was made from;
    ``plan_block`` makes a row (the pipeline's ``PlanBlock``)."""
    out = []
    for block in blocks:
        row = _row(block, counter, tokenizer, originals, plan_block)
        if row is not None:
            out.append(row)
        out.append(block)
    for position, block in enumerate(out):
        block.index = position
    return out


def _row(block, counter, tokenizer, originals, plan_block):
    message = block.message
    if not message:
        return None
    original = originals.get(id(message))
    if original is not None:  # the provider drops it: what it would cost, counted nowhere
        stripped = strip_reasoning(original) or original
        tokens = tokenizer.count_message(original) - tokenizer.count_message(stripped)
        return _make(plan_block, block, original, tokens, False, results.NOT_SENT)
    if not has_reasoning(message):
        return None
    stripped = strip_reasoning(message) or message
    tokens = counter.count_message(message) - counter.count_message(stripped)
    if tokens <= 0:  # the message shape leaves it out (another provider's thinking)
        tokens = tokenizer.count_message(message) - tokenizer.count_message(stripped)
        return _make(plan_block, block, message, tokens, False, results.NOT_SENT)
    if block.tokens is not None:
        block.tokens -= tokens
    else:
        tokens = None
    return _make(plan_block, block, message, tokens, block.included, block.reason)


def _make(plan_block, block, message: dict, tokens: int | None, included: bool, reason: str):
    return plan_block(
        block.index, f"{block.id}:reasoning", "assistant", REASONING, reasoning_text(message),
        tokens, included, reason, block.group, ORIGIN, block.sources,
    )
