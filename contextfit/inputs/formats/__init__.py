"""Importers: OpenAI, Anthropic, SillyTavern chats, character cards (JSON or PNG),
World Info lorebooks, ShareGPT datasets and plain-text transcripts.

>>> from contextfit.inputs.formats import load_conversation
>>> load_conversation("User: What is 2+2?\\nAssistant: 4").messages[1]["content"]
'4'
"""

from .conversation import FORMATS, CharacterCard, Conversation
from .load import DEFAULT_MAX_BYTES, detect_format, load_conversation, load_conversation_file

__all__ = [
    "DEFAULT_MAX_BYTES",
    "FORMATS",
    "CharacterCard",
    "Conversation",
    "detect_format",
    "load_conversation",
    "load_conversation_file",
]
