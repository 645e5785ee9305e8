"""What the engine knows about a conversation before any strategy runs.

:class:`ChatAnalysis` holds, for a list of messages, everything that does not depend
on the budget: each message's role, kind, id, protection mark, token count
(filled in lazily when the caller opts out of counting excluded blocks) and
the tool-call groups. ChatAnalysis are cached per counter and extended in place of
being rebuilt when a chat grows: a refit after one appended message checks
the old messages against snapshots in one C-level list comparison, then
analyses only the new message.

:class:`FitView` is what a strategy sees for one fit: the analysis plus the
per-fit protection (the current user input and every member of a group that
holds a protected block), with helpers to count and to walk groups.
"""

from __future__ import annotations

from bisect import bisect_left
from collections.abc import Callable, Iterator, Sequence
from typing import Any

from ..inputs.messages import (
    CHARACTER,
    HISTORY,
    LOREBOOK,
    MEMORY,
    PERSONA,
    ROLE_SET,
    SYSTEM,
    SYSTEM_ROLES,
    TOOL_RESULT_ROLES,
    check_role,
    clone,
    explicit_id,
    kind_of,
    link_ids,
    message_text,
    meta_of,
    refuse_lone_surrogates,
    role_of,
)
from . import results
from .counting import Counting
from ..errors import InvalidMessages, TokenBudgetExceeded

# How many recent analyses to keep per counter (the dashboard compares four
# strategies on one chat; the API serves a few chats at once), and how many
# bytes they may keep alive together: an analysis holds its messages' text.
_PREFIXES_KEPT = 8
#: Bytes the kept analyses of one counter may hold (their messages' text plus
#: :data:`MESSAGE_BYTES` each); the newest is kept whatever its size.
PREFIX_BYTES = 64 * 1024 * 1024
#: What an analysis holds per message besides its text: the snapshot dict and
#: a slot in each per-message list (measured with tracemalloc: about 330 bytes).
MESSAGE_BYTES = 400
_CHAT_KINDS = frozenset({HISTORY})
#: How many of the groups a repeated tool call id links are kept for its diagnostic (the newest):
#: an agent that sends ``call_1`` every round reuses it once per request.
REPEATS_KEPT = 10


def _snapshot(message: dict) -> dict:
    """A copy deep enough to notice later edits of the caller's message."""
    copy = message.copy()
    for key, value in copy.items():
        if type(value) is list and key == "tool_calls":
            copy[key] = _clone_calls(value)
        elif type(value) is dict or type(value) is list:
            copy[key] = clone(value)
    return copy


def _clone_calls(calls: list) -> list:
    """:func:`messages.clone` of OpenAI ``tool_calls``, with a short path for the usual shape."""
    out = []
    for call in calls:
        function = call.get("function") if type(call) is dict else None
        if (
            type(function) is dict
            and len(function) == 2
            and type(function.get("name")) is str
            and type(function.get("arguments")) is str
            and all(type(v) is str for k, v in call.items() if k != "function")
        ):
            call = call.copy()
            call["function"] = function.copy()
        else:
            call = clone(call)
        out.append(call)
    return out


def _plain_calls(calls: object) -> tuple[list[str], list[dict], int] | None:
    """For the usual OpenAI ``tool_calls`` (``{"id", "type", "function": {"name",
    "arguments"}}``, every string ASCII): their ids, a snapshot copy and their
    :func:`_text_size`, in one pass; ``None`` for anything else (the general path)."""
    if type(calls) is not list or not calls:
        return None
    ids, cloned, size = [], [], 8 * len(calls)
    for call in calls:
        if type(call) is not dict or len(call) != 3:
            return None
        ident, kind, function = call.get("id"), call.get("type"), call.get("function")
        if type(ident) is not str or not ident or type(kind) is not str or type(function) is not dict or len(function) != 2:
            return None
        name, arguments = function.get("name"), function.get("arguments")
        if type(name) is not str or type(arguments) is not str:
            return None
        if not (ident.isascii() and kind.isascii() and name.isascii() and arguments.isascii()):
            return None
        ids.append(ident)
        copy = call.copy()
        copy["function"] = function.copy()
        cloned.append(copy)
        size += len(ident) + len(kind) + len(name) + len(arguments) + 40
    return ids, cloned, size


def _calls_only(message: dict) -> tuple[list[str], bool] | None:
    """Link ids of a plain OpenAI call message, fast; ``None`` for any other shape."""
    calls = message.get("tool_calls")
    if type(calls) is not list or type(message.get("content")) is list:
        return None
    if "tool_call_id" in message or "toolCallId" in message or "callId" in message:
        return None
    ids = []
    for call in calls:
        ident = call.get("id") if type(call) is dict else None
        if type(ident) is not str or not ident:
            return None
        ids.append(ident)
    return ids, message.get("role") in TOOL_RESULT_ROLES


def _base_reason(message: dict, kind: str) -> str | None:
    """Protection that depends on the message alone (SPEC §3.3)."""
    if kind == SYSTEM:
        return results.SYSTEM
    if kind == CHARACTER:
        return results.CHARACTER
    if kind == PERSONA:
        return results.PERSONA
    meta = meta_of(message)
    if meta.get("required") is True:
        return results.REQUIRED
    if message.get("pinned") is True or meta.get("pinned") is True:
        return results.PINNED
    return None


#: ``derived`` entries carried over the whole chat (keyed ``(name, -1, ...)``), by
#: name: ``trim(value, k)`` gives the entry for the chat's first ``k`` messages when
#: the ones after them are a plain tail (:meth:`ChatAnalysis.trimmed`), or ``None`` to
#: make it again. Strategies register their own.
CARRY_TRIMMERS: dict[str, Callable[[Any, int], Any]] = {}


def trim_scan(value: Any, k: int) -> Any:
    """The trimmer of a ``(messages scanned, found)`` entry whose found items are
    message positions, or tuples that start with one.

    >>> trim_scan((9, (2, 5, 8)), 6), trim_scan((9, ((2, 0, "c1"), (7, 1, "c2"))), 6), trim_scan((4, (1,)), 6)
    ((6, (2, 5)), (6, ((2, 0, 'c1'),)), (4, (1,)))
    """
    scanned, found = value
    if scanned <= k:
        return value
    return k, tuple(item for item in found if (item if type(item) is int else item[0]) < k)


class ChatAnalysis:
    """Budget-independent analysis about ``messages[:n]``; extended, never edited.

    The exceptions to "never edited" are caches whose writes are idempotent,
    so sharing analysis between threads is safe: a ``None`` slot of ``tokens``
    is filled in when first counted, ``counted_total`` once all are, and
    ``derived`` holds what strategies compute from one message alone.
    """

    __slots__ = (
        "n",
        "snapshots",
        "roles",
        "kinds",
        "ids",
        "base_reasons",
        "protected_base",
        "manual",
        "recall",
        "relevance",
        "tokens",
        "link_root",
        "group_of",
        "members",
        "group_links",
        "has_call",
        "open_calls",
        "waiting",
        "repeated",
        "orphans",
        "derived",
        "texts",
        "counted_total",
        "shared",
        "nbytes",
        "derived_bytes",
    )

    def __init__(self) -> None:
        self.n = 0
        self.snapshots: list[dict] = []
        self.roles: list[str] = []
        self.kinds: list[str] = []
        self.ids: list[str | None] = []  # explicit ids; None means "use the position"
        self.base_reasons: list[str | None] = []
        self.protected_base: list[int] = []
        self.manual: list[int] = []
        self.recall: list[int] = []  # lorebook and memory blocks
        self.relevance: dict[int, float] = {}
        self.tokens: list[int | None] = []
        # Groups by answering (SPEC 3.2): a result answers the nearest earlier call with its
        # id that is still unanswered, so an id used again (``call_1`` every turn) starts a
        # new group rather than joining every turn's tools into one.
        self.link_root: dict[str, int] = {}  # link id -> root of the group of its latest call
        self.open_calls: dict[str, tuple[int, ...]] = {}  # link id -> roots of its unanswered calls, oldest first
        self.waiting: dict[str, int] = {}  # link id never called yet -> root of the results that carry it
        # link id used by several calls -> (how many call groups use it, the newest REPEATS_KEPT roots)
        self.repeated: dict[str, tuple[int, tuple[int, ...]]] = {}
        self.group_of: dict[int, int] = {}  # message index -> group root (linked messages only)
        self.members: dict[int, list[int]] = {}  # root -> member indices, ascending; root is the first
        self.group_links: dict[int, list[str]] = {}  # root -> its link ids
        self.has_call: dict[int, bool] = {}  # root -> whether a call (not only results) is in it
        self.orphans: list[list[int]] | None = None  # FitView.orphan_groups, once asked (the analysis are complete)
        # What strategies derive from one message alone, keyed by (what, index):
        # valid as long as these analysis are, since a reused prefix is unedited.
        self.derived: dict[tuple[str, int], object] = {}
        # Each message's readable text once read (FitView.text), else None or
        # not yet there: filled as read, like ``tokens``.
        self.texts: list[str | None] = []
        # The sum of ``tokens`` once every message is counted, else None.
        self.counted_total: int | None = 0
        # Whether the group and mark dicts below are still the parent's (copied on first write).
        self.shared = False
        # About how many bytes these analysis keep alive: the messages' text and
        # bookkeeping, and what strategies derived (set by them).
        self.nbytes = 0
        self.derived_bytes = 0

    def extended(
        self, messages: Sequence[dict], counting: Counting, count_now: bool, known: Known | None = None
    ) -> "ChatAnalysis":
        """New analysis for ``messages``, whose first ``self.n`` are these analysis
        (``known``: what the caller's earlier analyses learnt of each dict, see :data:`Known`)."""
        start = self.n
        new = ChatAnalysis()
        new.snapshots = self.snapshots[:start]
        new.roles = self.roles[:start]
        new.kinds = self.kinds[:start]
        new.ids = self.ids[:start]
        new.base_reasons = self.base_reasons[:start]
        new.protected_base = list(self.protected_base)
        new.manual = list(self.manual)
        new.recall = list(self.recall)
        new.tokens = self.tokens[:start]
        # Most appended messages link nothing: share these until one does.
        new.relevance = self.relevance
        new.link_root = self.link_root
        new.group_of = self.group_of
        new.members = self.members
        new.group_links = self.group_links
        new.has_call = self.has_call
        new.open_calls, new.waiting, new.repeated = self.open_calls, self.waiting, self.repeated
        new.shared = True
        new.derived = dict(self.derived)
        new.texts = self.texts[:start]
        new.counted_total = self.counted_total
        new.nbytes = self.nbytes
        new.derived_bytes = self.derived_bytes
        if known is None:
            new._add(messages, start, counting, count_now)
        else:
            new._add_known(messages, start, counting, count_now, known)
        return new

    def trimmed(self, k: int) -> "ChatAnalysis | None":
        """These analysis of the first ``k`` messages, when the ones after them are a
        plain tail: no link, no manual mark, relevance or recall (a character
        card's post-history instructions, which a new message goes before);
        ``None`` otherwise. What strategies derived from a tail message alone is
        left out: another message will stand at its position.

        What strategies carried over the whole chat (the ``-1`` entries of
        ``derived``) is kept where its strategy registered a trimmer for it
        (:data:`CARRY_TRIMMERS`), else left out: it is made again from these analysis."""
        if k > self.n:
            return None
        if k == self.n:
            return self
        tail = range(k, self.n)
        group_of, relevance = self.group_of, self.relevance
        if any(index in group_of or index in relevance for index in tail) or (
            self.manual and self.manual[-1] >= k) or (self.recall and self.recall[-1] >= k):
            return None
        new = ChatAnalysis()
        new.n = k
        new.snapshots, new.roles, new.kinds = self.snapshots[:k], self.roles[:k], self.kinds[:k]
        new.ids, new.base_reasons, new.tokens = self.ids[:k], self.base_reasons[:k], self.tokens[:k]
        new.texts = self.texts[:k]
        new.protected_base = self.protected_base[:bisect_left(self.protected_base, k)]
        new.manual, new.recall = list(self.manual), list(self.recall)
        new.relevance, new.link_root, new.group_of = self.relevance, self.link_root, self.group_of
        new.members, new.group_links, new.has_call = self.members, self.group_links, self.has_call
        new.open_calls, new.waiting, new.repeated = self.open_calls, self.waiting, self.repeated
        new.shared = True
        derived: dict = {}
        for key, value in self.derived.items():
            if len(key) > 1 and type(key[1]) is int and 0 <= key[1] < k:
                derived[key] = value  # made from one message before the tail
            elif key[0] in CARRY_TRIMMERS:  # carried over the chat: its trimmer makes it the prefix's
                trimmed = CARRY_TRIMMERS[key[0]](value, k)
                if trimmed is not None:
                    derived[key] = trimmed
        new.derived = derived
        new.counted_total = None if self.counted_total is None else sum(new.tokens)  # type: ignore[arg-type]
        new.nbytes = self.nbytes
        new.derived_bytes = sum(getattr(value, "nbytes", 0) for value in new.derived.values())
        return new

    def _add(
        self, messages: Sequence[dict], start: int, counting: Counting, count_now: bool, stop: int | None = None
    ) -> None:
        # The hot loop of a cold fit: one pass, locals only, and a short path
        # for the common message without ``meta``.
        count_message = counting.count_message
        snapshots, roles, kinds, ids = self.snapshots, self.roles, self.kinds, self.ids
        base_reasons, tokens, protected = self.base_reasons, self.tokens, self.protected_base
        system_roles, history, system = SYSTEM_ROLES, HISTORY, SYSTEM
        roles_allowed = ROLE_SET
        added_from = len(tokens)
        text_bytes = 0
        stop = len(messages) if stop is None else stop
        for index in range(start, stop):
            message = messages[index]
            if type(message) is not dict and not isinstance(message, dict):
                raise InvalidMessages(
                    f"each message must be a dict like {{'role': 'user', 'content': '...'}}, "
                    f"got {type(message).__name__}",
                    location=f"messages[{index}]",
                )
            role = message.get("role")
            if type(role) is not str or role not in roles_allowed:
                check_role(message, f"messages[{index}]")
            content = message.get("content")
            # Three common shapes have a short path: the plain chat turn
            # {"role", "content": str}, an OpenAI tool result and an OpenAI call
            # message (in the seeded 10,000-message bench chat the 1,200 of the
            # latter two took half the analysis time on the general path).
            snapshot: dict | None = None
            link: list[str] | None = None
            if type(role) is not str or type(message) is not dict:  # a dict subclass takes the general path
                pass
            elif len(message) == 2 and type(content) is str:
                text_bytes += len(content)
                if not (content.isascii() and role.isascii()):
                    refuse_lone_surrogates(message, f"messages[{index}]")
                snapshot = message.copy()
            elif len(message) == 3 and type(content) is str:
                call_id = message.get("tool_call_id")
                if type(call_id) is str and call_id:
                    if not (content.isascii() and role.isascii() and call_id.isascii()):
                        refuse_lone_surrogates(message, f"messages[{index}]")
                    text_bytes += len(content)
                    snapshot, link = message.copy(), [call_id]  # every value is a string: a flat copy is a snapshot
            elif len(message) == 3 and content is None and "content" in message and role.isascii():
                calls = _plain_calls(message.get("tool_calls"))
                if calls is not None:
                    link, cloned, size = calls
                    text_bytes += size + 8  # _text_size(None) + _text_size(calls)
                    snapshot = message.copy()
                    snapshot["tool_calls"] = cloned
            if snapshot is not None:
                kind = system if role in system_roles else history
                reason: str | None = results.SYSTEM if kind is system else None
                snapshots.append(snapshot)
                roles.append(role)
                kinds.append(kind)
                ids.append(None)
                base_reasons.append(reason)
                if reason is not None:
                    protected.append(index)
                tokens.append(count_message(message) if count_now else None)
                if link is not None:
                    self._link(index, link, role in TOOL_RESULT_ROLES)
                continue
            refuse_lone_surrogates(message, f"messages[{index}]")
            text_bytes += len(content) if type(content) is str else _text_size(content)
            if "tool_calls" in message:
                text_bytes += _text_size(message["tool_calls"])
            content_is_list = type(content) is list
            linked = content_is_list or "tool_calls" in message or "tool_call_id" in message or (
                "toolCallId" in message or "callId" in message
            )
            meta = message.get("meta")
            if meta is None:
                kind = system if role in system_roles else history
                if kind is system:
                    reason = results.SYSTEM
                else:
                    reason = results.PINNED if message.get("pinned") is True else None
                ident = message.get("id")
                if ident is not None and (type(ident) is not str or not ident):
                    ident = explicit_id(message)
                snapshots.append(_snapshot(message) if linked else message.copy())
            else:
                kind = kind_of(message)
                if kind == LOREBOOK or kind == MEMORY:
                    self.recall.append(index)
                reason = _base_reason(message, kind)
                ident = explicit_id(message)
                snapshots.append(_snapshot(message))
                if type(meta) is dict:
                    self._meta_marks(index, meta)
            roles.append(role)
            kinds.append(kind)
            ids.append(ident)
            base_reasons.append(reason)
            if reason is not None:
                protected.append(index)
            tokens.append(count_message(message) if count_now else None)
            if linked:
                call_id = message.get("tool_call_id")
                if type(call_id) is str and call_id and not content_is_list and not (
                    "tool_calls" in message or "toolCallId" in message or "callId" in message
                ):
                    self._link(index, [call_id], role in TOOL_RESULT_ROLES)  # an OpenAI tool result
                else:
                    link, is_result = _calls_only(message) or link_ids(message)
                    if link:
                        self._link(index, link, is_result)
        self.nbytes += text_bytes + MESSAGE_BYTES * (stop - start)
        self.n = stop
        if self.counted_total is not None:
            self.counted_total = self.counted_total + sum(tokens[added_from:]) if count_now else None

    def _add_known(self, messages: Sequence[dict], start: int, counting: Counting, count_now: bool,
                   known: Known) -> None:
        """:meth:`_add`, taking what ``known`` holds of a dict met before and
        still equal to its snapshot (the same analysis, without reading it
        again); the others are analysed by :meth:`_add` and added to ``known``."""
        count_message = counting.count_message
        snapshots, roles, kinds, ids = self.snapshots, self.roles, self.kinds, self.ids
        base_reasons, tokens, protected = self.base_reasons, self.tokens, self.protected_base
        get = known.get
        hits = text_bytes = counted = 0
        for index in range(start, len(messages)):
            message = messages[index]
            entry = get(id(message))
            if entry is not None and entry[0] is message:
                try:
                    same = message == entry[1]
                except Exception:  # values whose == raises (arrays, odd objects): read it again
                    same = False
            else:
                same = False
            if not same:
                before = self.nbytes
                self._add(messages, index, counting, count_now, index + 1)
                known[id(message)] = _known_entry(self, message, index, self.nbytes - before - MESSAGE_BYTES)
                continue
            _, snapshot, role, kind, ident, reason, token, link, manual, relevance, recall, size = entry
            snapshots.append(snapshot)
            roles.append(role)
            kinds.append(kind)
            ids.append(ident)
            base_reasons.append(reason)
            if reason is not None:
                protected.append(index)
            if count_now:
                if token is None:
                    token = count_message(message)
                    known[id(message)] = (*entry[:6], token, *entry[7:])
                counted += token
                tokens.append(token)
            else:
                tokens.append(None)
            if recall:
                self.recall.append(index)
            if manual or relevance is not None:
                if self.shared:
                    self._unshare()
                if manual:
                    self.manual.append(index)
                if relevance is not None:
                    self.relevance[index] = relevance
            if link is not None:
                self._link(index, *link)
            hits += 1
            text_bytes += size
        self.nbytes += text_bytes + MESSAGE_BYTES * hits
        self.n = len(messages)
        if self.counted_total is not None:
            self.counted_total = self.counted_total + counted if count_now else None

    def copy(self) -> "ChatAnalysis":
        """An independent copy of what strategies read (no snapshots, no
        derived cache): what a plugin's view holds, so that what it writes
        never reaches the cached analysis."""
        new = ChatAnalysis()
        new.n = self.n
        new.roles, new.kinds, new.ids = list(self.roles), list(self.kinds), list(self.ids)
        new.base_reasons, new.protected_base = list(self.base_reasons), list(self.protected_base)
        new.manual, new.recall, new.relevance = list(self.manual), list(self.recall), dict(self.relevance)
        new.tokens = list(self.tokens)
        new.link_root, new.group_of, new.has_call = dict(self.link_root), dict(self.group_of), dict(self.has_call)
        new.members = {root: list(members) for root, members in self.members.items()}
        new.group_links = {root: list(links) for root, links in self.group_links.items()}
        new.open_calls, new.waiting, new.repeated = dict(self.open_calls), dict(self.waiting), dict(self.repeated)
        new.counted_total = self.counted_total
        return new

    def _unshare(self) -> None:
        self.relevance = dict(self.relevance)
        self.link_root = dict(self.link_root)
        self.group_of = dict(self.group_of)
        self.members = dict(self.members)
        self.group_links = dict(self.group_links)
        self.has_call = dict(self.has_call)
        self.open_calls = dict(self.open_calls)
        self.waiting = dict(self.waiting)
        self.repeated = dict(self.repeated)
        self.shared = False

    def _meta_marks(self, index: int, meta: dict) -> None:
        if self.shared:
            self._unshare()
        if meta.get("manualExcluded") is True:
            self.manual.append(index)
        relevance = meta.get("relevance")
        if isinstance(relevance, (int, float)) and not isinstance(relevance, bool) and relevance == relevance:
            self.relevance[index] = float(min(max(relevance, 0), 1))  # clamped first: 10**400 has no float

    def _link(self, index: int, ids: list[str], is_result: bool) -> None:
        """Put message ``index`` (the newest) in its tool group, by answering (SPEC 3.2).

        A result joins the nearest earlier call with its id that is still unanswered,
        else the latest call with its id (a second result of one call), else the
        results with its id that wait for a call (an orphan group, until a call with
        the id comes: it then joins them, as a call whose results were sent first).
        A call whose id an earlier call used starts a group of its own. A message
        whose ids reach several groups (results answering calls of two messages)
        folds them into the earliest. The dicts are the parent analysis' until
        :meth:`_unshare`; their values are never changed in place.
        """
        if self.shared:
            self._unshare()
        open_calls, link_root, waiting = self.open_calls, self.link_root, self.waiting
        if is_result and len(ids) == 1:
            opened = open_calls.get(ids[0])
            if opened is not None:  # a result answering its call: the common case
                root = opened[-1]
                if len(opened) == 1:
                    del open_calls[ids[0]]
                else:
                    open_calls[ids[0]] = opened[:-1]
                self.members[root] = [*self.members[root], index]
                self.group_of[index] = root
                return
        joined: list[int] = []
        answered: set[str] = set()  # ids of this call answered by results that came first
        for link in ids:
            if is_result:
                opened = open_calls.get(link)
                if opened:
                    joined.append(opened[-1])
                    if len(opened) == 1:
                        del open_calls[link]
                    else:
                        open_calls[link] = opened[:-1]
                elif link in link_root:
                    joined.append(link_root[link])
                elif link in waiting:
                    joined.append(waiting[link])
            elif link not in link_root and link in waiting:
                joined.append(waiting[link])
                answered.add(link)
        root = min(joined) if joined else index
        if not joined:
            self.members[root] = [index]
            self.group_links[root] = []
            self.has_call[root] = not is_result
        else:
            others = sorted(set(joined) - {root})
            members = [*self.members[root], index]
            links = list(self.group_links[root])
            has_call = self.has_call[root] or not is_result
            for other in others:
                # Two groups meet in this message (rare: one message answering calls of
                # two messages): fold the later one into the earlier.
                for member in self.members.pop(other):
                    self.group_of[member] = root
                    members.append(member)
                for link in self.group_links.pop(other):
                    if link not in links:
                        links.append(link)
                has_call = has_call or self.has_call.pop(other)
                self._moved(other, root)
            if others:
                members.sort()
            self.members[root] = members
            self.group_links[root] = links
            self.has_call[root] = has_call
        self.group_of[index] = root
        links = self.group_links[root]
        fresh = [link for link in ids if link not in links]
        if fresh:
            self.group_links[root] = [*links, *dict.fromkeys(fresh)]
        for link in ids:
            if is_result:
                if link not in link_root and link not in waiting:
                    waiting[link] = root
                continue
            if link in answered:  # the results sent first answer this call (its first instance, if twice)
                answered.discard(link)
                waiting.pop(link, None)
            else:
                if link in link_root and link_root[link] != root:
                    calls, roots = self.repeated.get(link) or (1, (link_root[link],))
                    self.repeated[link] = (calls + 1, (*roots, root)[-REPEATS_KEPT:])
                open_calls[link] = (*open_calls.get(link, ()), root)
            link_root[link] = root

    def _moved(self, old: int, new: int) -> None:
        """Point every record of group ``old`` at ``new`` (``old`` was folded into it)."""
        for mapping in (self.link_root, self.waiting):
            for link in [link for link, root in mapping.items() if root == old]:
                mapping[link] = new
        for link in [link for link, roots in self.open_calls.items() if old in roots]:
            self.open_calls[link] = tuple(new if root == old else root for root in self.open_calls[link])
        for link in [link for link, (_, roots) in self.repeated.items() if old in roots]:
            calls, roots = self.repeated[link]
            merged = tuple(dict.fromkeys(new if root == old else root for root in roots))
            calls -= len(roots) - len(merged)
            if calls > 1:
                self.repeated[link] = (calls, merged)
            else:  # its calls are one group now
                del self.repeated[link]


#: What analyses learnt of each message dict, by ``id``, for the next analysis
#: that meets the same dict (a session's lorebook plan is assembled again at
#: every turn from the same blocks): ``(dict, snapshot, role, kind, id, base
#: reason, tokens or None, (link ids, is a result) or None, manualExcluded,
#: relevance or None, a lorebook or memory block, text bytes)``. The dict is
#: held, so its ``id`` names no other; an entry is used only while the dict
#: equals its snapshot, and its tokens are of one counter.
Known = dict[int, tuple]


def _known_entry(analysis: ChatAnalysis, message: dict, index: int, size: int) -> tuple:
    """What :meth:`ChatAnalysis._add` just learnt of ``message``, the last at ``index`` (``size``: its text bytes)."""
    return (
        message, analysis.snapshots[index], analysis.roles[index], analysis.kinds[index], analysis.ids[index],
        analysis.base_reasons[index], analysis.tokens[index], _link_args(message) if index in analysis.group_of else None,
        bool(analysis.manual) and analysis.manual[-1] == index, analysis.relevance.get(index),
        bool(analysis.recall) and analysis.recall[-1] == index, size,
    )


def _link_args(message: dict) -> tuple[list[str], bool] | None:
    """The link ids :meth:`ChatAnalysis._add` groups ``message`` by, and whether it is a result."""
    role = message.get("role")
    if type(role) is not str:
        role = role_of(message)
    call_id = message.get("tool_call_id")
    if type(call_id) is str and call_id and type(message.get("content")) is not list and not (
        "tool_calls" in message or "toolCallId" in message or "callId" in message
    ):
        return [call_id], role in TOOL_RESULT_ROLES
    link, is_result = _calls_only(message) or link_ids(message)
    return (list(link), is_result) if link else None


def _text_size(value: object, depth: int = 0) -> int:
    """Characters of text in a message (any shape), and 8 per other value."""
    kind = type(value)
    if kind is str:
        return len(value)  # type: ignore[arg-type]
    if depth > 32:
        return 8
    if kind is dict:
        return sum(_text_size(item, depth + 1) + 8 for item in value.values())  # type: ignore[attr-defined]
    if kind is list or kind is tuple:
        return sum(_text_size(item, depth + 1) + 8 for item in value)  # type: ignore[attr-defined]
    return 8


def _same_prefix(messages: list[dict], analysis: ChatAnalysis) -> bool:
    """Whether ``messages`` starts with what ``analysis`` analysed, unedited."""
    k = analysis.n
    try:
        return bool(messages[k - 1] == analysis.snapshots[k - 1] and messages[:k] == analysis.snapshots)
    except Exception:  # values whose == raises (arrays, odd objects): no reuse
        return False


def analysis_for(messages: list[dict], counting: Counting, count_now: bool, known: Known | None = None) -> ChatAnalysis:
    """ChatAnalysis for ``messages``, reusing a cached analysis of a prefix of them
    (and, given ``known``, what earlier analyses learnt of each dict)."""
    state = counting.state
    n = len(messages)
    best: ChatAnalysis | None = None
    with state.lock:
        candidates = list(state.prefixes)
    for analysis in sorted(candidates, key=lambda f: f.n, reverse=True):
        if analysis.n <= n and (analysis.n == 0 or _same_prefix(messages, analysis)):
            best = analysis
            break
    if best is not None and best.n == n:
        return best
    base = best if best is not None else ChatAnalysis()
    analysis = base.extended(messages, counting, count_now, known)
    with state.lock:
        # The shorter analysis stays too: the next call may edit or regenerate
        # the last message instead of appending one. The newest always stays
        # (the other strategies of a comparison refit from it); older ones
        # while all fit in PREFIX_BYTES, the rest are forgotten.
        prefixes, held = [analysis], analysis.nbytes + analysis.derived_bytes
        for kept in state.prefixes:
            size = kept.nbytes + kept.derived_bytes
            if kept is analysis or len(prefixes) == _PREFIXES_KEPT or held + size > PREFIX_BYTES:
                continue
            prefixes.append(kept)
            held += size
        state.prefixes = prefixes
    return analysis


class FitView:
    """One fit's view of a conversation: analysis plus per-fit protection."""

    __slots__ = ("messages", "analysis", "counting", "n", "protect", "protected", "current_input", "base_tokens", "walks")

    def __init__(self, messages: list[dict], analysis: ChatAnalysis, counting: Counting) -> None:
        self.messages = messages
        # Earlier ``truncate`` walks over a prefix of these messages that is known
        # unedited (a FitSession's, which owns its messages), else None: see strategies/carried_walk.py.
        self.walks: dict | None = None
        self.analysis = analysis
        self.counting = counting
        self.n = analysis.n
        self.base_tokens = counting.base_tokens
        protect = list(analysis.base_reasons)
        protected = set(analysis.protected_base)
        group_of, members = analysis.group_of, analysis.members
        for index in analysis.protected_base:
            root = group_of.get(index)
            if root is not None:
                for member in members[root]:
                    if protect[member] is None:
                        protect[member] = protect[index]
                        protected.add(member)
        # The current input: the last chat message, when the user sent it. Blocks
        # a prompt template puts after the chat (post-history instructions) do
        # not count.
        current = last = None
        for index in range(self.n - 1, -1, -1):
            if analysis.kinds[index] in _CHAT_KINDS:
                last = index
                break
        if last is not None and analysis.roles[last] == "user":
            current = last
            if protect[last] is None:
                protect[last] = results.CURRENT_INPUT
                protected.add(last)
            root = group_of.get(last)
            if root is not None:
                for member in members[root]:
                    if protect[member] is None:
                        protect[member] = results.CURRENT_INPUT
                        protected.add(member)
        self.protect = protect
        self.protected = sorted(protected)
        self.current_input = current

    def detached(self, messages: list[dict]) -> "FitView":
        """A view of the same fit over ``messages`` (copies of this view's) with
        analysis and caches of its own: what an untrusted ``propose`` receives."""
        return FitView(messages, self.analysis.copy(), self.counting.detached())

    def refusal(self, tokens: int, budget: int, message: str | None = None) -> TokenBudgetExceeded:
        """``TOKEN_BUDGET_EXCEEDED`` for this fit, carrying every block with its
        tokens and reason: the protected ones (included, with their protection
        reason) are those that need ``tokens``; the others would be dropped."""
        blocks = []
        for index in range(self.n):
            reason = self.protect[index]
            blocks.append(
                {
                    "index": index,
                    "id": self.id_of(index),
                    "role": self.analysis.roles[index],
                    "kind": self.analysis.kinds[index],
                    "tokens": self.analysis.tokens[index],
                    "included": reason is not None,
                    "reason": reason or results.OVER_BUDGET,
                }
            )
        return TokenBudgetExceeded(tokens, budget, message, blocks=blocks)

    # -- counting -----------------------------------------------------------
    def count(self, index: int) -> int:
        """Tokens of message ``index`` (counted now if not yet)."""
        tokens = self.analysis.tokens
        value = tokens[index]
        if value is None:
            value = tokens[index] = self.counting.count_message(self.messages[index])
        return value

    def count_all(self) -> int:
        """Make sure every message is counted; returns the sum of their tokens."""
        analysis = self.analysis
        total = analysis.counted_total
        if total is None:
            tokens = analysis.tokens
            if None in tokens:
                count_message, messages = self.counting.count_message, self.messages
                for index, value in enumerate(tokens):
                    if value is None:
                        tokens[index] = count_message(messages[index])
            total = analysis.counted_total = sum(tokens)  # type: ignore[arg-type]
        return total

    def count_block(self, message: dict) -> int:
        """Tokens of a block that is not one of the input messages."""
        return self.counting.count_message(message)

    def count_joined(self, message: dict, parts: Sequence[str]) -> int:
        """Tokens of ``message`` with the content ``"".join(parts)``, from the parts'
        cached counts where that is exact (``Counting.count_joined``)."""
        return self.counting.count_joined(message, parts)

    def protected_tokens(self) -> int:
        """The fixed overhead plus every protected message."""
        count = self.count
        return self.base_tokens + sum(count(i) for i in self.protected)

    # -- groups ---------------------------------------------------------------
    def unit(self, index: int) -> list[int] | None:
        """The members of the unit whose first member is ``index``, or ``None``
        when ``index`` belongs to a group that starts earlier."""
        root = self.analysis.group_of.get(index)
        if root is None:
            return [index]
        if root != index:
            return None
        return self.analysis.members[root]

    def units_oldest_first(self) -> Iterator[list[int]]:
        """Unprotected units, oldest first."""
        protect = self.protect
        for index in range(self.n):
            if protect[index] is None:
                unit = self.unit(index)
                if unit is not None:
                    yield unit

    def group_members(self, index: int) -> list[int]:
        """All members of the group of message ``index`` (itself when alone)."""
        root = self.analysis.group_of.get(index)
        return [index] if root is None else self.analysis.members[root]

    def orphan_groups(self) -> list[list[int]]:
        """Groups made only of tool results whose call is not in the conversation."""
        analysis = self.analysis
        if analysis.orphans is None:  # every fit of a session's turn asks: the analysis' groups are final by then
            analysis.orphans = [analysis.members[root] for root, has_call in analysis.has_call.items() if not has_call]
        return list(analysis.orphans)

    def repeated_ids(self) -> list[tuple[str, int, list[list[int]]]]:
        """Link ids that more than one call uses, in order of first reuse: each with how many
        call groups use it and the newest :data:`REPEATS_KEPT` of those groups (each call with
        the results that answer it)."""
        analysis = self.analysis
        return [(link, calls, [list(analysis.members[root]) for root in roots if root in analysis.members])
                for link, (calls, roots) in analysis.repeated.items()]

    def unanswered_calls(self) -> list[tuple[str, list[int]]]:
        """Calls no result answers (providers refuse a request that sends one): each
        id with the members of its call's group, oldest first."""
        analysis = self.analysis
        found = [(root, link) for link, roots in analysis.open_calls.items() for root in dict.fromkeys(roots)]
        return [(link, list(analysis.members[root])) for root, link in sorted(found)]

    def id_of(self, index: int) -> str:
        """The id shown in audits: the message's own, else its position."""
        ident = self.analysis.ids[index]
        return str(index) if ident is None else ident

    def text(self, index: int) -> str:
        """Readable text of message ``index`` (read once per analysis: a refit
        reads the kept texts of the earlier messages)."""
        texts = self.analysis.texts
        if 0 <= index < len(texts):
            text = texts[index]
            if text is not None:
                return text
        elif len(texts) <= index < self.n:
            texts.extend([None] * (self.n - len(texts)))
        else:
            return message_text(self.messages[index])
        message = self.messages[index]
        text = texts[index] = message_text(message)
        if text is not message.get("content"):  # a new string (joined parts, tool lines): held by the analysis
            self.analysis.derived_bytes += len(text) + 50
        return text


def build_view(messages: Sequence[dict], counting: Counting, count_all: bool = True) -> FitView:
    """Analyse ``messages`` for one fit (reusing cached analysis where possible)."""
    if isinstance(messages, (str, bytes, dict)) or not isinstance(messages, Sequence):
        if isinstance(messages, (str, bytes, dict)) or not hasattr(messages, "__iter__"):
            raise InvalidMessages(
                f"messages must be a list of message dicts, got {type(messages).__name__}", location="messages"
            )
    listed = messages if type(messages) is list else list(messages)
    analysis = analysis_for(listed, counting, count_now=count_all)
    view = FitView(listed, analysis, counting)
    if count_all:
        view.count_all()
    return view
