"""``clear-tool-results``: old tool output gives way before whole turns do.

Agents spend most of their window on tool output that mattered once. Like
Anthropic's context editing (``clear_tool_uses``), LangChain's
``ClearToolUsesEdit`` and the Vercel AI SDK's ``pruneMessages``, this
strategy keeps every call and its result in place but replaces the content
of old results with a short placeholder that says what was cleared (the tool
and its original size), so each call still has its answer and no tool group
is split.

When the prompt does not fit:

1. the unprotected tool results older than the newest ``keep`` (default 3)
   are cleared, oldest first, skipping tools named in ``exclude_tools``,
   until the prompt fits; with ``clear_at_least`` the tokens saved are
   rounded up to a multiple of it, so a chat that grows turn by turn clears
   in steps and keeps a stable prompt prefix (cache hits) in between;
2. ``clear_inputs`` also empties the arguments of the calls whose results
   were all cleared;
3. if clearing is not enough it continues like ``truncate``: the oldest
   unprotected groups are dropped until the prompt fits.

A cleared message is a new block marked ``meta.compressed`` (reason
``compressed``, in ``FitResult.truncated``) standing where the original
stood; the original is excluded with reason ``summarized``, as for any block
whose content went into an added one. Nothing fits without need: a prompt
under budget is sent as it is.
"""

from __future__ import annotations

from bisect import bisect_left, bisect_right
from collections.abc import Callable, Sequence
from typing import Any

from ...inputs.messages import TOOL_RESULT_ROLES, clone, link_ids, meta_of, role_of
from .. import results
from ..analysis import CARRY_TRIMMERS, FitView, trim_scan
from ...errors import InvalidSettings
from ..results import InsertedBlock
from .base import BuiltinStrategy, Proposal, stable_budget, stable_prefix_step
from .thinking import drop_old_reasoning, drop_oldest_units, keep_thinking_option, with_replacements

DEFAULT_KEEP = 3
DEFAULT_PLACEHOLDER = "[tool result cleared: {tool} returned {tokens} tokens]"
CLEARED_ARGUMENTS = "{}"


def _option_int(options: dict, name: str, default: int) -> int:
    value = options.get(name, default)
    if value is None:
        return default
    if isinstance(value, bool) or not isinstance(value, int) or value < 0:
        raise InvalidSettings(f"clear-tool-results: {name} must be a whole number of at least 0, got {value!r}.")
    return value


def _option_names(options: dict) -> frozenset[str]:
    value = options.get("exclude_tools")
    if value is None:
        return frozenset()
    if isinstance(value, str) or not isinstance(value, (list, tuple, set, frozenset)) or not all(
        isinstance(name, str) for name in value
    ):
        raise InvalidSettings(f"clear-tool-results: exclude_tools must be a list of tool names, got {value!r}.")
    return frozenset(value)


def _option_placeholder(options: dict) -> str:
    value = options.get("placeholder")
    if value is None:
        return DEFAULT_PLACEHOLDER
    if not isinstance(value, str) or not value.strip():
        raise InvalidSettings(f"clear-tool-results: placeholder must be a non-empty string, got {value!r}.")
    return value


def placeholder_text(template: str, tool: str, tokens: int) -> str:
    """The placeholder for one cleared result; ``{tool}`` and ``{tokens}`` are
    filled in (plain replacement: other braces in a user's text stay as they are).

    >>> placeholder_text(DEFAULT_PLACEHOLDER, "read_file", 1200)
    '[tool result cleared: read_file returned 1200 tokens]'
    """
    return template.replace("{tool}", tool).replace("{tokens}", str(tokens))


def tool_names(messages: Sequence[dict]) -> dict[str, str]:
    """Tool name by call id, from OpenAI ``tool_calls`` and Anthropic ``tool_use`` parts.

    >>> tool_names([{"role": "assistant", "tool_calls": [{"id": "c1", "function": {"name": "ls"}}]}])
    {'c1': 'ls'}
    """
    names: dict[str, str] = {}
    for message in messages:
        calls = message.get("tool_calls")
        for call in calls if isinstance(calls, list) else ():
            function = call.get("function") if isinstance(call, dict) else None
            if isinstance(function, dict) and isinstance(call.get("id"), str):
                names[call["id"]] = str(function.get("name", "tool"))
        content = message.get("content")
        for part in content if isinstance(content, list) else ():
            if isinstance(part, dict) and str(part.get("type", "")).endswith("tool_use") and isinstance(part.get("id"), str):
                names[part["id"]] = str(part.get("name", "tool"))
    return names


def result_sites(message: dict) -> list[tuple[int | None, str]]:
    """The tool results a message holds: (content part index or ``None`` for
    the whole message, link id)."""
    content = message.get("content")
    if role_of(message) in TOOL_RESULT_ROLES:
        ids, _ = link_ids(message)
        return [(None, ids[0] if ids else "")]
    sites = []
    for position, part in enumerate(content if isinstance(content, list) else ()):
        if isinstance(part, dict) and str(part.get("type", "")).endswith("tool_result"):
            sites.append((position, str(part.get("tool_use_id", ""))))
    return sites


def result_tool(message: dict, link: str, names: dict[str, str]) -> str:
    """The name of the tool whose result ``link`` is (``tool`` when unknown)."""
    found = names.get(link)
    if found is None and isinstance(message.get("name"), str):
        found = message["name"]  # a legacy ``function`` message names its tool
    return found or "tool"


def with_results(message: dict, cleared: dict[int | None, str]) -> dict:
    """A copy of ``message`` whose chosen results say ``cleared[site]`` instead."""
    copy = clone(message)
    if None in cleared:
        copy["content"] = cleared[None]
    else:
        for position, text in cleared.items():
            copy["content"][position] = {**copy["content"][position], "content": text}
    # a capped result cleared in turn is cleared: it no longer says it was capped (result_cap.py)
    copy["meta"] = {**{key: value for key, value in meta_of(message).items() if key != "capped"}, "compressed": True}
    return copy


def _without_inputs(message: dict, links: set[str]) -> dict | None:
    """A copy of a call message with the arguments of the calls in ``links``
    emptied, or ``None`` when it has none of them."""
    copy = clone(message)
    changed = False
    calls = copy.get("tool_calls")
    for call in calls if isinstance(calls, list) else ():
        function = call.get("function") if isinstance(call, dict) else None
        if isinstance(function, dict) and call.get("id") in links and function.get("arguments") not in (None, CLEARED_ARGUMENTS):
            function["arguments"] = CLEARED_ARGUMENTS
            changed = True
    content = copy.get("content")
    for position, part in enumerate(content if isinstance(content, list) else ()):
        if isinstance(part, dict) and str(part.get("type", "")).endswith("tool_use") and part.get("id") in links:
            if part.get("input") not in (None, {}):
                content[position] = {**part, "input": {}}
                changed = True
    if not changed:
        return None
    copy["meta"] = {**meta_of(message), "compressed": True}
    return copy


class ClearToolResults(BuiltinStrategy):
    """Replaces old tool results with placeholders, then truncates if needed."""

    name = "clear-tool-results"
    takes_stable_prefix = True
    description = (
        "Keeps the newest `keep` tool results (default 3) and replaces older ones with a short placeholder "
        "naming the tool and its size, so every call keeps its result; then drops the oldest groups like "
        "truncate if more room is needed."
    )

    def propose(self, view: FitView, budget: int, **options: Any) -> Proposal:
        keep = _option_int(options, "keep", DEFAULT_KEEP)
        step = _option_int(options, "clear_at_least", 0)
        excluded_tools = _option_names(options)
        template = _option_placeholder(options)
        clear_inputs = options.get("clear_inputs", False)
        if not isinstance(clear_inputs, bool):
            raise InvalidSettings(f"clear-tool-results: clear_inputs must be true or false, got {clear_inputs!r}.")
        keep_thinking = keep_thinking_option(options)
        reasons: list[str | None] = [None] * view.n
        tokens = view.analysis.tokens
        costs = list(tokens) if view.analysis.counted_total is not None else [view.count(i) for i in range(view.n)]
        total = view.base_tokens + sum(costs)
        budget = stable_budget(total, budget, stable_prefix_step(budget, options))  # stable_prefix: cut in steps
        replaced: dict[int, InsertedBlock] = {}
        # older turns' reasoning first (keep_thinking), then old tool results
        total = drop_old_reasoning(view, budget, keep_thinking, costs, replaced, total)
        shared: set[int] = set()  # replaced by a copy the cache holds
        cleared: dict[int, tuple[dict, int]] = {}  # the carried walk's copies, made blocks once the cut is known
        if total > budget:
            if excluded_tools or replaced:  # a step would depend on the tool names or on the reasoning dropped
                total = self._clear(view, total - budget, step, keep, excluded_tools, template, clear_inputs, costs,
                                    replaced, shared)
            else:
                total = self._carried(view, total - budget, step, keep, template, clear_inputs, costs, replaced, cleared)
        # Not enough: drop the oldest unprotected units, as truncate does.
        drop_oldest_units(view, budget, reasons, costs, replaced, total)
        for index, (copy, tokens) in cleared.items():
            if reasons[index] is None:  # sent: a copy of its own, never the cache's
                replaced[index] = InsertedBlock(clone(copy), index, results.COMPRESSED, tokens, (index,))
        # What is sent gets copies of its own, never the cache's.
        for index in shared.intersection(replaced):
            block = replaced[index]
            replaced[index] = InsertedBlock(clone(block.message), index, results.COMPRESSED, block.tokens, (index,))
        return Proposal(reasons, with_replacements(reasons, replaced))

    def _carried(
        self,
        view: FitView,
        need: int,
        step: int,
        keep: int,
        template: str,
        clear_inputs: bool,
        costs: list[int],
        replaced: dict[int, InsertedBlock],
        cleared: dict[int, tuple[dict, int]],
    ) -> int:
        """:meth:`_clear` from the walk over old results (:func:`_clearing_walk`):
        fills ``cleared`` with each cleared message's copy and tokens, ``costs``
        and (``clear_inputs``) ``replaced``; returns the new total."""
        derived = view.analysis.derived
        names: list[dict[str, str]] = []

        def copy_of(index: int, trial: tuple) -> tuple[dict, int, bool]:
            key = ("clear", index, template, trial)
            found = derived.get(key)
            if found is None:
                if not names:
                    names.append(view_tool_names(view))
                found = _cleared_copy(view, index, template, trial, names[0])
                return found[0], found[1], key in derived  # type: ignore[index]
            return found[0], found[1], True  # type: ignore[index]

        sites = view_result_sites(view)
        target = -(-need // step) * step if step else need
        steps = _clearing_walk(view, target, keep, sites, _site_index(view), copy_of)
        links: set[str] = set()
        for index, _, link, _, copy, tokens, saving in steps:
            if saving:
                costs[index] = tokens
                cleared[index] = (copy, tokens)
                links.add(link)
        if clear_inputs and links:
            self._clear_inputs(view, links, costs, replaced, set())
        return view.base_tokens + sum(costs)

    def _clear(
        self,
        view: FitView,
        need: int,
        step: int,
        keep: int,
        excluded_tools: frozenset[str],
        template: str,
        clear_inputs: bool,
        costs: list[int],
        replaced: dict[int, InsertedBlock],
        shared: set[int],
    ) -> int:
        """Clear old results oldest first until ``need`` tokens (rounded up to a
        multiple of ``step``) are saved; fills ``replaced`` and ``costs`` (and
        ``shared`` with the indices replaced by a cached copy), returns the new total."""
        messages, protect = view.messages, view.protect
        names = view_tool_names(view)
        sites = [found for found in view_result_sites(view) if protect[found[0]] is None]
        candidates = sites[: max(len(sites) - keep, 0)]
        target = -(-need // step) * step if step else need
        saved = 0
        chosen: dict[int, tuple] = {}
        cleared_links: set[str] = set()
        derived = view.analysis.derived
        for index, site, link in candidates:
            if saved >= target:
                break
            if excluded_tools and result_tool(messages[index], link, names) in excluded_tools:
                continue
            previous = chosen.get(index)
            trial = (site,) if previous is None else (*previous, site)
            found = derived.get(("clear", index, template, trial))  # _cleared_copy's cache, read inline
            copy, tokens = found if found is not None else _cleared_copy(view, index, template, trial, names)
            if tokens >= costs[index]:
                continue  # already shorter than its placeholder
            saved += costs[index] - tokens
            costs[index] = tokens
            chosen[index] = trial
            cleared_links.add(link)
            replaced[index] = InsertedBlock(copy, index, results.COMPRESSED, tokens, (index,))
            shared.add(index)
        if clear_inputs and cleared_links:
            self._clear_inputs(view, cleared_links, costs, replaced, shared)
        return view.base_tokens + sum(costs)

    @staticmethod
    def _clear_inputs(
        view: FitView, cleared_links: set[str], costs: list[int], replaced: dict[int, InsertedBlock], shared: set[int]
    ) -> None:
        """``clear_inputs``: empty the arguments of the calls whose results were cleared."""
        messages, protect = view.messages, view.protect
        if cleared_links:
            for index in range(view.n):
                if protect[index] is not None:
                    continue
                ids, is_result = link_ids(messages[index])
                links = cleared_links.intersection(ids)
                if is_result or not links:
                    continue
                # a call message may already stand without its reasoning (keep_thinking)
                copy = _without_inputs(replaced[index].message if index in replaced else messages[index], links)
                if copy is None:
                    continue
                tokens = view.count_block(copy)
                if tokens < costs[index]:
                    costs[index] = tokens
                    replaced[index] = InsertedBlock(copy, index, results.COMPRESSED, tokens, (index,))
                    shared.discard(index)


# What a refit reuses, kept in the analysis' ``derived`` cache (valid as long as the
# chat's prefix is unedited): the result sites and tool names scanned so far, and
# each cleared copy with its tokens. A 10,000-message refit re-scanned and
# re-counted them all (80-127 ms against 2-11 ms for truncate in the bench).
_SITES = ("clear-sites", -1)  # (messages scanned, ((index, site, link), ...))
_NAMES = ("clear-names", -1)  # (messages scanned, {link: tool name})
CARRY_TRIMMERS[_SITES[0]] = trim_scan
# A plain tail names no tool (it links nothing): the names scanned are those of the messages before it.
CARRY_TRIMMERS[_NAMES[0]] = lambda value, k: (min(value[0], k), value[1])


def view_result_sites(view: FitView) -> tuple[tuple[int, int | None, str], ...]:
    """Every tool result of the chat, oldest first: (message, site, link id)."""
    derived = view.analysis.derived
    scanned, found = derived.get(_SITES, (0, ()))  # type: ignore[misc]
    if scanned > view.n:
        scanned, found = 0, ()
    if scanned < view.n:
        messages = view.messages
        new = [(index, site, link) for index in range(scanned, view.n) for site, link in result_sites(messages[index])]
        found = (*found, *new)
        derived[_SITES] = (view.n, found)
        view.analysis.derived_bytes += 72 * len(new)
    return found


_SITE_INDEX = ("clear-site-index", -1)  # (results listed, [message of each result, ...])
CARRY_TRIMMERS[_SITE_INDEX[0]] = lambda value, k: value  # checked against the sites at each use


def _site_index(view: FitView) -> list[int]:
    """The message of each of :func:`view_result_sites`' results, in the same order (ascending)."""
    sites = view_result_sites(view)
    derived = view.analysis.derived
    listed, index = derived.get(_SITE_INDEX, (0, []))  # type: ignore[misc]
    if listed > len(sites) or (listed and index[listed - 1] != sites[listed - 1][0]):
        listed, index = 0, []
    if listed < len(sites):
        index = [*index, *(found[0] for found in sites[listed:])]  # a new list: a shorter chat's analysis keep theirs
        derived[_SITE_INDEX] = (len(sites), index)
        view.analysis.derived_bytes += 8 * (len(sites) - listed)
    return index


def view_tool_names(view: FitView) -> dict[str, str]:
    """:func:`tool_names` of the chat, extended by the messages added since the last fit."""
    derived = view.analysis.derived
    scanned, names = derived.get(_NAMES, (0, {}))  # type: ignore[misc]
    if scanned > view.n:
        scanned, names = 0, {}
    if scanned < view.n:
        added = tool_names(view.messages[scanned: view.n])
        if added:
            names = {**names, **added}  # a new dict: the shorter chat's analysis keep theirs
            view.analysis.derived_bytes += 120 * len(added)
        derived[_NAMES] = (view.n, names)
    return names


def _cleared_copy(view: FitView, index: int, template: str, sites: tuple, names: dict[str, str]) -> tuple[dict, int]:
    """Message ``index`` with the results at ``sites`` replaced by their
    placeholders, and its tokens (cached: the same result clears the same way
    in every refit). Each placeholder names the result's own tokens: the
    message as it is, less the message with that result emptied."""
    derived = view.analysis.derived
    key = ("clear", index, template, sites)
    found = derived.get(key)
    if found is None:
        message = view.messages[index]
        links = dict(result_sites(message))
        texts: dict[int | None, str] = {}
        for site in sites:
            size = max(view.count(index) - view.count_block(with_results(message, {site: ""})), 0)
            texts[site] = placeholder_text(template, result_tool(message, links.get(site, ""), names), size)
        copy = with_results(message, texts)
        found = (copy, view.count_block(copy))
        # A result whose call comes later in the chat is named "tool" until then: not cached.
        if all(links.get(site, "") in names or isinstance(message.get("name"), str) for site in sites):
            derived[key] = found
            view.analysis.derived_bytes += 160 + sum(map(len, texts.values()))
    return found  # type: ignore[return-value]


#: One step of the walk: (message, site, link id, sites cleared in that message so far, cleared copy, its tokens,
#: tokens saved: 0 when the copy is no shorter and the step clears nothing).
Step = tuple[int, Any, str, tuple, dict, int, int]


def _clearing_walk(
    view: FitView,
    target: int,
    keep: int,
    sites: tuple[tuple[int, Any, str], ...],
    site_index: list[int],
    copy_of: Callable[[int, tuple], tuple[dict, int, bool]],
) -> list[Step]:
    """The steps a fit takes over the chat's tool results, oldest first: it stops once ``target``
    tokens are saved, or after the oldest ``len(unprotected) - keep`` results.

    ``sites`` are the tool results (message, site, link), ``site_index`` their messages;
    ``copy_of(index, trial)`` gives the cleared copy of a message and its tokens. (Carrying
    the walk from one fit of a growing chat to the next saved 0.11 ms of a fit's 0.35 in a
    1,000-turn replay: not worth its lines; ``bench/replay.py``.)
    """
    protect, tokens = view.protect, view.analysis.tokens
    protected = sum(bisect_right(site_index, i) - bisect_left(site_index, i) for i in view.protected)
    candidates = max(len(sites) - protected - keep, 0)
    steps: list[Step] = []
    costs: dict[int, int] = {}
    chosen: dict[int, tuple] = {}
    saved = used = 0
    while len(steps) < candidates and saved < target and used < len(sites):
        index, site, link = sites[used]
        used += 1
        if protect[index] is not None:
            continue
        previous = chosen.get(index)
        trial = (site,) if previous is None else (*previous, site)
        copy, copy_tokens, _ = copy_of(index, trial)
        cost = costs.get(index, tokens[index])
        saving = cost - copy_tokens if copy_tokens < cost else 0
        if saving:
            costs[index] = copy_tokens
            chosen[index] = trial
        steps.append((index, site, link, trial, copy, copy_tokens, saving))
        saved += saving
    return steps
