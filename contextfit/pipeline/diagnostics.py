"""A plan's diagnostics about counts that are estimates, not readings.

* ``IMAGE_SIZE_UNKNOWN``: kept images counted at a rule's default. The counting
  rules live in :mod:`contextfit.tokens.images`; the images whose size could not
  be read become a diagnostic on the plan.
* ``REASONING_ESTIMATED``: an OpenAI Responses reasoning item sent back with
  ``encrypted_content`` is counted with a documented estimate
  (:mod:`contextfit.tokens.reasoning_items`), not from its text; the plan says
  so and names the blocks.
* ``TOOL_SHAPES_UNVERIFIED``: :mod:`contextfit.tokens.openai_tools` counts what
  recorded API counts pin down exactly; a shape none covers (a schema keyword,
  text beside tool calls, three or more parallel calls, legacy function calls
  on GPT-4o, OpenAI's hosted tool search, deferred tools) is counted with a
  margin or a measured estimate, and the plan says so, naming the blocks.

And one about the prompt's length against what the model was measured to use:

* ``EFFECTIVE_CONTEXT_EXCEEDED``: the prompt is longer than the model's
  published effective context (:mod:`contextfit.tokens.effective`: the
  benchmark, its figure and its source, from the catalog).
"""

from __future__ import annotations

from collections.abc import Mapping, Sequence
from typing import Any

from ..tokens import openai_tools, tool_defs
from ..tokens.chat_counter import TokenCounter
from ..tokens.effective import EffectiveContext
from ..tokens.images import ImageRule, unknown_size
from ..tokens.reasoning import REASONING
from ..tokens.reasoning_items import BYTES_PER_TOKEN, encrypted_tokens, is_estimated
from ..fitting import results


def reasoning_diagnostic(blocks: Sequence[Any]) -> list[dict]:
    """``REASONING_ESTIMATED`` for the sent ``reasoning`` rows holding encrypted reasoning
    (a row is named ``<message id>:reasoning``; its message is on the message's own row)."""
    sent = {block.id for block in blocks if block.kind == REASONING and block.included}
    found: dict[str, int] = {}
    tokens = 0
    for block in blocks:
        row = f"{block.id}:{REASONING}"
        if row not in sent or not isinstance(block.message, Mapping):
            continue
        content = block.message.get("content")
        items = [part for part in content if is_estimated(part)] if isinstance(content, list) else []
        if items:
            found[row] = len(items)
            tokens += sum(encrypted_tokens(part["encrypted_content"]) for part in items)
    if not found:
        return []
    count = sum(found.values())
    return [
        {
            "code": results.REASONING_ESTIMATED,
            "blocks": list(found),
            "items": count,
            "tokens": tokens,
            "message": f"{count} reasoning item(s) are sent as encrypted_content, whose tokens cannot be read; "
            f"they are estimated at {tokens} tokens (decoded bytes / {BYTES_PER_TOKEN}), so this count is approximate.",
        }
    ]


def image_diagnostic(blocks: Sequence[Any], rule: ImageRule) -> list[dict]:
    """``IMAGE_SIZE_UNKNOWN`` for the kept plan blocks holding an image counted at the default."""
    found: dict[str, int] = {}
    for block in blocks:
        content = block.message.get("content") if block.included and isinstance(block.message, Mapping) else None
        unknown = sum(1 for part in content if unknown_size(part)) if isinstance(content, list) else 0
        if unknown:
            found[block.id] = unknown
    if not found:
        return []
    images = sum(found.values())
    return [
        {
            "code": results.IMAGE_SIZE_UNKNOWN,
            "blocks": list(found),
            "images": images,
            "tokensEach": rule.default(),
            "message": f"{images} image(s) have no readable size (a URL, or a header that is cut or lies); each is "
            f"counted at the {rule.name} default of {rule.default()} tokens, so this count is approximate.",
        }
    ]


def tool_shape_diagnostic(counter: TokenCounter, tools: Sequence[Any], deferred: Sequence[Any],
                          sent: Sequence[tuple[str, Mapping]]) -> list[dict]:
    """``TOOL_SHAPES_UNVERIFIED`` for an OpenAI plan whose sent ``tools``, ``deferred`` tools or
    ``sent`` messages (``(block id, provider message)`` pairs) hold a shape no recorded count covers."""
    rule = counter.chat.openai
    if not rule or counter.approximate:
        return []
    shapes: dict[str, int] = {}
    blocks: list[str] = []
    margin = 0
    constructs = openai_tools.definition_margins(tools, rule)
    searches = sum(1 for tool in tools if openai_tools.is_hosted_search(tool))
    for construct, times in sorted(constructs.items()):
        shapes[f"tool schema: {construct}"] = times
    margin += sum(constructs.values())
    if searches:
        shapes["hosted tool_search (estimated)"] = searches
    if deferred:
        shapes["deferred tool names and descriptions (estimated)"] = len(deferred)
    if constructs or searches or deferred:
        blocks.append(tool_defs.TOOLS_ID)
    for ident, message in sent:
        found, extra = openai_tools.message_margins(message, rule)
        if found:
            margin += extra
            if ident not in blocks:
                blocks.append(ident)
            for shape in found:
                shapes[shape] = shapes.get(shape, 0) + 1
    if not shapes:
        return []
    listed = "; ".join(f"{shape} ({times})" for shape, times in shapes.items())
    how = [f"{margin} token(s) of margin"] if margin else []
    if searches or deferred:
        how.append("the tool search and deferred tools at a measured estimate")
    return [
        {
            "code": results.TOOL_SHAPES_UNVERIFIED,
            "blocks": blocks,
            "shapes": shapes,
            "marginTokens": margin,
            "message": f"No recorded API count covers these tool shapes, so they are counted on the high side"
            f"{' (' + '; '.join(how) + ')' if how else ''}: {listed}. This count is approximate.",
        }
    ]


def effective_context_diagnostic(effective: EffectiveContext | None) -> list[dict]:
    """``EFFECTIVE_CONTEXT_EXCEEDED`` when the prompt is longer than the model's published
    effective context (the figure the note uses: :func:`~contextfit.tokens.effective.lowest`)."""
    if effective is None or not effective.exceeded:
        return []
    figure = effective.figure
    return [
        {
            "code": results.EFFECTIVE_CONTEXT_EXCEEDED,
            "promptTokens": effective.prompt_tokens,
            "effectiveTokens": figure.tokens,
            "below": figure.below,
            "benchmark": figure.benchmark,
            "source": figure.source,
            "message": effective.message(),
        }
    ]
