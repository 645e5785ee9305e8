"""The built-in strategies; they register through the same door as plugins."""

from .base import BuiltinStrategy, ContextStrategy, Proposal
from .manual import Manual
from .recall import VectorRecall
from .summarize import Summarize
from .truncate import Truncate

BUILTINS: tuple[BuiltinStrategy, ...] = (Truncate(), Summarize(), VectorRecall(), Manual())

__all__ = ["BUILTINS", "BuiltinStrategy", "ContextStrategy", "Manual", "Proposal", "Summarize", "Truncate", "VectorRecall"]
