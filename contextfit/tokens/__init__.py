"""Token counting: vocabularies, tokenizers and chat-template overheads."""
