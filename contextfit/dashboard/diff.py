"""Two strategies block by block: which blocks they treat differently and why,
and each block's fate under every strategy (the edit table's columns).

Blocks are matched by their one name, :func:`~contextfit.dashboard.charts.block_keys`
(the id, made unique), the name every chart and table uses.
"""

from __future__ import annotations

from collections.abc import Mapping, Sequence
from dataclasses import dataclass
from typing import Any

from ..pipeline.plan import PlanBlock, PromptPlan
from .charts import SHADES, block_keys, plan_shades, shade_of

#: The cell of a block a plan does not have (the summary, under any strategy but summarize).
ABSENT = "not in this plan"


def fate_text(block: PlanBlock | None, shade: str | None = None) -> str:
    """A block's fate as one table cell: its shade, with the reason when it says more.

    >>> from contextfit.pipeline.plan import PlanBlock
    >>> fate_text(PlanBlock(0, "m0", "user", "history", "hi", 1, False, "over_budget"))
    'excluded: over budget'
    >>> fate_text(PlanBlock(0, "m0", "user", "history", "hi", 1, True, "pinned"))
    'protected (pinned)'
    """
    if block is None:
        return ABSENT
    shade = shade or shade_of(block.reason)
    label = SHADES[shade].label
    return label if shade == block.reason else f"{label} ({block.reason})"


@dataclass(frozen=True, slots=True)
class BlockDifference:
    """A block two strategies treat differently."""

    block: str
    role: str
    kind: str
    tokens_a: int | None
    tokens_b: int | None
    fate_a: str
    fate_b: str
    reason_a: str | None
    reason_b: str | None

    def to_row(self, a: str, b: str) -> dict[str, Any]:
        """A table row with the strategies' names in the headers; tokens with thousands separators,
        "—" where a plan does not have the block (never ``None``).

        >>> BlockDifference("summary", "system", "summary", None, 1234, ABSENT, "summary (sent)", None, "summary").to_row("a", "b")
        {'block': 'summary', 'role': 'system', 'kind': 'summary', 'a: fate': 'not in this plan', 'b: fate': 'summary (sent)', 'a: tokens': '—', 'b: tokens': '1,234'}
        """
        return {"block": self.block, "role": self.role, "kind": self.kind,
                f"{a}: fate": self.fate_a, f"{b}: fate": self.fate_b,
                f"{a}: tokens": _tokens(self.tokens_a), f"{b}: tokens": _tokens(self.tokens_b)}


def _tokens(tokens: int | None) -> str:
    return "—" if tokens is None else f"{tokens:,}"


def _keyed(plan: PromptPlan) -> dict[str, PlanBlock]:
    return dict(zip(block_keys(plan), plan.blocks))


def differences(a: PromptPlan, b: PromptPlan) -> list[BlockDifference]:
    """Every block whose fate, reason or sent tokens differ between two plans,
    in prompt order (a block only one plan has — a summary — is a difference).

    >>> from contextfit import plan_prompt
    >>> chat = [{"role": "user", "content": f"turn {i} " * 40} for i in range(8)]
    >>> one = plan_prompt(chat, model="gpt-4o", context_limit=700, response_reserve=200)
    >>> differences(one, one)
    []
    """
    left, right = _keyed(a), _keyed(b)
    shaded = {id(block): shade for plan in (a, b) for block, shade in zip(plan.blocks, plan_shades(plan))}
    order = list(left) + [key for key in right if key not in left]
    found = []
    for key in order:
        x, y = left.get(key), right.get(key)
        same = (x is not None and y is not None and x.included == y.included and x.reason == y.reason
                and x.tokens == y.tokens)
        if same:
            continue
        either = x if x is not None else y
        assert either is not None
        found.append(BlockDifference(
            block=key, role=either.role, kind=either.kind,
            tokens_a=None if x is None else x.tokens, tokens_b=None if y is None else y.tokens,
            fate_a=fate_text(x, None if x is None else shaded[id(x)]),
            fate_b=fate_text(y, None if y is None else shaded[id(y)]),
            reason_a=None if x is None else x.reason, reason_b=None if y is None else y.reason,
        ))
    return found


def fate_columns(rows: Sequence[Mapping[str, Any]], plans: Mapping[str, PromptPlan | Any]) -> list[dict[str, Any]]:
    """The edit table's rows with one more column per strategy: the block's
    fate under it (matched by ``id``). A strategy that could not plan shows "—".

    The new columns are named after the strategies, so they never clash with
    the editable ones (``pinned``, ``exclude``, ``relevance``).
    """
    fates: dict[str, dict[str, str]] = {}
    for name, plan in plans.items():
        if isinstance(plan, PromptPlan):
            shades = dict(zip(block_keys(plan), plan_shades(plan)))
            fates[name] = {key: fate_text(block, shades[key]) for key, block in _keyed(plan).items()}
        else:
            fates[name] = {}
    return [{**row, **{f"fate: {name}": fates[name].get(row["id"], "—") for name in plans}} for row in rows]


def default_pair(plans: Mapping[str, PromptPlan]) -> tuple[int, int]:
    """Positions of the two strategies the diff view opens on: the first, and
    the first other one that treats some block differently (else the second).

    >>> from contextfit import plan_prompt
    >>> chat = [{"role": "user", "content": "Hi"}]
    >>> default_pair({"a": plan_prompt(chat, model="gpt-4o"), "b": plan_prompt(chat, model="gpt-4o")})
    (0, 1)
    """
    plans_list = list(plans.values())
    if len(plans_list) < 2:
        return 0, 0
    first = plans_list[0]
    for position, plan in enumerate(plans_list[1:], start=1):
        if differences(first, plan):
            return 0, position
    return 0, 1


def summary(first: str, second: str, found: Sequence[BlockDifference]) -> str:
    """The line above the diff table: how many blocks two strategies treat differently.

    >>> summary("truncate", "truncate", []), summary("truncate", "manual", [])
    ('Pick two different strategies.', 'Same blocks, same fates.')
    """
    if first == second:
        return "Pick two different strategies."
    return f"{len(found)} blocks differ." if found else "Same blocks, same fates."
