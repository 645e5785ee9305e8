"""Importers: OpenAI, Anthropic, SillyTavern chats, character cards (JSON or PNG),
World Info lorebooks, ShareGPT datasets and plain-text transcripts.

>>> from contextfit.inputs.formats import load_conversation
>>> load_conversation("User: What is 2+2?\\nAssistant: 4").messages[1]["content"]
'4'
"""

from .conversation import FORMATS, CharacterCard, Conversation
from .load import DEFAULT_MAX_BYTES, detect_format, list_conversations, load_conversation, load_conversation_file
from .records import FileConversation

__all__ = [
    "DEFAULT_MAX_BYTES",
    "FORMATS",
    "CharacterCard",
    "Conversation",
    "FileConversation",
    "detect_format",
    "list_conversations",
    "load_conversation",
    "load_conversation_file",
]
