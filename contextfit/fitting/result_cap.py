"""``tool_result_cap``: one oversized tool result is sent as its head and tail.

Agents read files and dump searches into their context; a single result can
outweigh the whole conversation. Like LibreChat's soft trim of long tool
output, Strands' result offloader (2,500 tokens) and Claude Code, which keeps
results over 25,000 tokens out of the prompt, ``tool_result_cap`` (tokens,
an option of every strategy, off by default) sends a text tool result over
the cap as its head and its tail, with a marker between them naming what
was cut — how many tokens, which characters of how many, of which tool::

    [… 11,872 tokens cut from the middle of this read_file result (characters 4,771 to 52,904 of 57,310); its head and tail are shown …]

It happens before fitting, in the host, so every strategy (a plugin's too)
fits the capped conversation: a capped result is a ``compressed`` block
standing where the original stood (``meta.compressed`` and ``meta.capped``, in
``FitResult.truncated``), and the original is excluded with reason
``summarized``, as a cleared result is — the plan keeps it as a block with
its whole content, so the audit and the dashboard still show what was cut.
Only the content of a result changes, never its links, so no tool group is
split; protected blocks (the current input's group, pinned ones) are never
capped. A result is a ``tool`` / ``function`` message or a ``*tool_result``
part, capped when its content is text (a string or text parts); the head
and tail are cut at a line break near the cut when there is one. Each
result's capped copy is worked out once per analysis (a refit and a replay's
later turns reuse it).
"""

from __future__ import annotations

from bisect import bisect_left
from typing import Any

from ..errors import InvalidSettings
from ..inputs.messages import clone, message_text
from . import results
from .analysis import ChatAnalysis, FitView
from .results import InsertedBlock
from .strategies.base import Proposal
from .strategies.clear_tool_results import result_sites, result_tool, view_result_sites, view_tool_names, with_results

#: The option's name (``toolResultCap`` in chat settings).
OPTION = "tool_result_cap"
#: A cap to start from where one is offered (the Compare page): Strands' offloader's threshold, a
#: few pages of a file or a search dump; well under any current model's window.
SUGGESTED_CAP = 2500
MARKER = ("[… {cut} tokens cut from the middle of this {tool} result (characters {start} to {end} of {length}); "
          "its head and tail are shown …]")
#: How far back from a cut a line break is looked for (share of the part's length).
_SNAP = 0.25


def cap_option(options: dict[str, Any]) -> int | None:
    """Take ``tool_result_cap`` out of ``options`` (the host applies it; a strategy never
    sees it), checked: ``None`` (off) or a whole number of tokens of at least 1.

    >>> options = {"tool_result_cap": 2500, "keep": 2}
    >>> cap_option(options), options
    (2500, {'keep': 2})
    """
    value = options.pop(OPTION, None)
    if value is None:
        return None
    if isinstance(value, bool) or not isinstance(value, int) or value < 1:
        raise InvalidSettings(f"tool_result_cap must be a whole number of tokens of at least 1 (or unset: off), "
                              f"got {value!r}.")
    return value


class CapSet:
    """The capped results of one analysis: ``copies`` (index -> (copy, tokens)), the
    protection they were chosen under, the indices whose copy names a tool not known yet
    (made again at the next fit), and the analysis of the capped messages once a fit made it."""

    __slots__ = ("n", "protected", "copies", "unknown", "analysis", "base")

    def __init__(self, n: int, protected: frozenset, copies: dict, unknown: tuple, base: ChatAnalysis | None) -> None:
        self.n, self.protected, self.copies, self.unknown = n, protected, copies, unknown
        self.analysis: ChatAnalysis | None = None
        self.base = base  # the previous set's analysis, when the capped messages before its end are unchanged


def capped(view: FitView, cap: int) -> CapSet:
    """The unprotected messages with a text tool result over ``cap`` tokens (``copies``: each
    one's copy with those results capped, and the copy's tokens).

    Each copy is made once per analysis (``derived``). The set is carried from the analysis
    of the chat before this one (a replay's previous request, a session's last fit): only the
    results added since, and those whose protection changed, are looked at again, so a long
    agent run is not rescanned at every request."""
    protect, derived = view.protect, view.analysis.derived
    key = (_SET, -1, cap)
    carried: CapSet | None = derived.get(key)  # type: ignore[assignment]
    protected = frozenset(view.protected)
    if carried is not None and carried.n == view.n and carried.protected == protected and not carried.unknown:
        return carried  # the other strategies of this fit's request
    sites = view_result_sites(view)
    if carried is not None and carried.n <= view.n:
        start, out = carried.n, dict(carried.copies)
        again = {*(index for index in carried.protected - protected if index < start), *carried.unknown}
        dropped = protected.intersection(out)
        for index in dropped:
            del out[index]
    else:
        start, out, again, dropped = 0, {}, set(), set()
    names: list[dict[str, str]] = []
    fresh = dict.fromkeys(found[0] for found in sites[bisect_left(sites, (start,)):])
    unknown = []
    for index in (*sorted(again), *fresh):
        if protect[index] is not None:
            continue
        found, known = _copy_of(view, index, cap, names)
        if not known:
            unknown.append(index)
        if found is not None:
            out[index] = found
        else:
            out.pop(index, None)
    # the capped messages before the carried set's end are unchanged: its analysis extends to these
    before = carried.copies if carried is not None else {}
    changed = any(out.get(index) is not before.get(index) for index in (*dropped, *again) if index < start)
    base = carried.analysis if carried is not None and not changed and carried.analysis is not None else None
    result = derived[key] = CapSet(view.n, protected, out, tuple(unknown), base)
    return result


#: analysis.derived key of the :class:`CapSet` of an analysis
_SET = "cap-set"


def _copy_of(view: FitView, index: int, cap: int,
             names: list[dict[str, str]]) -> tuple[tuple[dict, int] | None, bool]:
    """:func:`_capped_copy` of message ``index`` (cached in the analysis), and whether it is final."""
    derived = view.analysis.derived
    key = ("cap", index, cap)
    found = derived.get(key, key)
    if found is not key:
        return found, True  # type: ignore[return-value]
    if not names:
        names.append(view_tool_names(view))
    found, known = _capped_copy(view, index, cap, names[0])
    if known:  # a result whose call comes later is named "tool" until then: not cached
        derived[key] = found
        view.analysis.derived_bytes += 200 + (len(message_text(found[0])) if found else 0)
    return found, known


def capped_view(view: FitView, capset: CapSet) -> FitView:
    """The fit's view with each capped message standing as its copy: what the strategy fits.

    Its analysis is that of the capped messages, made once per analysis and shared by the
    strategies of one request; the next request, whose capped messages before its new ones
    are unchanged, extends it by those new messages instead of analysing the chat again. It
    carries no walk (a session's walks count the originals)."""
    messages = list(view.messages)
    for index, (copy, _) in capset.copies.items():
        messages[index] = copy
    counted = view.analysis.counted_total is not None
    analysis = capset.analysis
    if analysis is None or analysis.n != view.n or (counted and analysis.counted_total is None):
        base = capset.base if capset.base is not None and capset.base.n <= view.n else ChatAnalysis()
        analysis = capset.analysis = base.extended(messages, view.counting, counted)
        view.analysis.derived_bytes += analysis.nbytes - base.nbytes  # what the capped copy holds besides
    capped = FitView(messages, analysis, view.counting)
    if counted:
        capped.count_all()
    return capped


def with_capped(proposal: Proposal, copies: CapSet) -> Proposal:
    """A proposal made over :func:`capped_view` for the real view: a capped message the
    strategy kept as it is sent as its copy (a ``compressed`` block; the original
    ``summarized``). One it dropped, summarized or replaced keeps what the strategy gave it."""
    reasons = proposal.reasons
    added = []
    for index, (copy, tokens) in copies.copies.items():
        if reasons[index] is None:
            reasons[index] = results.SUMMARIZED
            added.append(InsertedBlock(clone(copy), index, results.COMPRESSED, tokens, (index,)))  # a copy of its own
    if added:
        proposal.inserted = sorted([*proposal.inserted, *added], key=lambda block: block.before)
        proposal.assembled = None
    return proposal


def _capped_copy(view: FitView, index: int, cap: int, names: dict[str, str]) -> tuple[tuple[dict, int] | None, bool]:
    """Message ``index`` with each text result over ``cap`` tokens capped, and its tokens;
    ``None`` when none is over the cap (or capping saves nothing). Also whether every
    capped result's tool is named (else the copy is not cached)."""
    message = view.messages[index]
    count = view.count(index)
    texts: dict[int | None, str] = {}
    known = True
    for site, link in result_sites(message):
        text = _text_of(message, site)
        if text is None:
            continue
        empty = view.count_block(with_results(message, {site: ""}))
        size = max(count - empty, 0)
        if size <= cap:
            continue

        def tokens_of(value: str, site=site, empty=empty) -> int:
            return max(view.count_block(with_results(message, {site: value})) - empty, 0)

        tool = result_tool(message, link, names)
        known = known and (link in names or isinstance(message.get("name"), str))
        texts[site] = head_and_tail(text, size, cap, tool, tokens_of)
    if not texts:
        return None, known
    copy = with_results(message, texts)
    copy["meta"]["capped"] = True  # its head and tail are sent (losses.py says "capped", not "cleared")
    tokens = view.count_block(copy)
    return ((copy, tokens) if tokens < count else None), known


def _text_of(message: dict, site: int | None) -> str | None:
    """The text of a result (its content: a string, or text parts joined by line breaks),
    or ``None`` when it holds anything else (images, structured search results)."""
    content = message.get("content") if site is None else message["content"][site].get("content")
    if isinstance(content, str):
        return content
    if not isinstance(content, list) or not content:
        return None
    texts = []
    for part in content:
        if isinstance(part, str):
            texts.append(part)
        elif isinstance(part, dict) and part.get("type") in ("text", "input_text", "output_text") and isinstance(
                part.get("text"), str):
            texts.append(part["text"])
        else:
            return None
    return "\n".join(texts)


def head_and_tail(text: str, tokens: int, cap: int, tool: str, tokens_of) -> str:
    """``text`` (``tokens`` long) as its head, a marker and its tail, within ``cap`` tokens
    by ``tokens_of`` (the marker alone when the cap leaves no room for text).

    >>> words = lambda value: len(value.split())
    >>> print(head_and_tail("\\n".join(f"line {i}" for i in range(100)), 200, 40, "ls", words))
    line 0
    line 1
    line 2
    <BLANKLINE>
    [… 186 tokens cut from the middle of this ls result (characters 21 to 758 of 789); its head and tail are shown …]
    line 96
    line 97
    line 98
    line 99
    """
    length = len(text)
    widest = MARKER.format(cut=f"{tokens:,}", tool=tool, start=f"{length:,}", end=f"{length:,}", length=f"{length:,}")
    room = cap - tokens_of("\n" + widest + "\n")
    for _ in range(4):
        head = _prefix(text, max(room, 0) - max(room, 0) // 2, tokens_of, tokens)
        tail = _suffix(text, max(room, 0) // 2, tokens_of, tokens, head)
        start, end = head, length - tail
        kept = tokens_of(text[:start]) + tokens_of(text[end:]) if start or tail else 0
        marker = MARKER.format(cut=f"{max(tokens - kept, 0):,}", tool=tool, start=f"{start:,}", end=f"{end:,}",
                               length=f"{length:,}")
        capped = f"{text[:start]}\n{marker}\n{text[end:]}" if start or tail else marker
        over = tokens_of(capped) - cap
        if over <= 0 or room <= 0:
            return capped
        room -= over + 1  # the parts and the marker did not add up exactly: ask less
    return marker


def _prefix(text: str, target: int, tokens_of, tokens: int) -> int:
    """How many characters of ``text`` from the start make at most ``target`` tokens
    (close to it), snapped back to a line break near the end when there is one."""
    return _fit_chars(text, target, lambda k: tokens_of(text[:k]), tokens, lambda k: text.rfind("\n", 0, k) + 1)


def _suffix(text: str, target: int, tokens_of, tokens: int, head: int) -> int:
    """How many characters of ``text`` from the end (not reaching into the first ``head``)
    make at most ``target`` tokens, snapped forward to a line break near the start."""
    length = len(text)

    def snap(k: int) -> int:
        found = text.find("\n", length - k)
        return length - found - 1 if found != -1 else 0

    return min(_fit_chars(text, target, lambda k: tokens_of(text[length - k:]), tokens, snap), length - head)


def _fit_chars(text: str, target: int, measure, tokens: int, snap) -> int:
    """The largest number of characters (found in a few measurements, by the text's
    own characters per token) whose ``measure`` is at most ``target``, then snapped."""
    length = len(text)
    if target <= 0 or length == 0:
        return 0
    low, high = 0, length  # measure(low) <= target < measure(high), as far as known
    guess = min(length, max(1, target * length // max(tokens, 1)))
    for _ in range(12):
        value = measure(guess)
        if value <= target:
            low = guess
            if value >= target * 0.97 or guess == length:
                break
        else:
            high = guess
        if high - low <= 1:
            break
        estimate = guess * target // max(value, 1)
        guess = min(max(estimate, low + 1), high - 1)
    snapped = snap(low)
    return snapped if snapped >= low * (1 - _SNAP) and snapped > 0 else low
