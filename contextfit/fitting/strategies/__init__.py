"""The built-in strategies; they register through the same door as plugins."""

from .base import BuiltinStrategy, ContextStrategy, Proposal
from .clear_tool_results import ClearToolResults
from .fact_ledger import FactLedger
from .manual import Manual
from .recall import VectorRecall
from .summarize import Summarize
from .truncate import Truncate

BUILTINS: tuple[BuiltinStrategy, ...] = (Truncate(), Summarize(), VectorRecall(), Manual(), ClearToolResults(), FactLedger())


def is_trusted(strategy: object) -> bool:
    """Whether ``strategy`` is one of the package's own built-in objects (the
    ones it registers) — the only strategies the host trusts. Trust is by
    origin: a subclass, or a new instance passed as ``strategy=``, is not.

    >>> is_trusted(BUILTINS[0]), is_trusted(Truncate())
    (True, False)
    """
    return any(strategy is builtin for builtin in BUILTINS)


__all__ = ["BUILTINS", "BuiltinStrategy", "ClearToolResults", "ContextStrategy", "FactLedger", "Manual", "Proposal", "Summarize", "Truncate", "VectorRecall", "is_trusted"]
