"""Layer 2, tokens: tokenizer profiles, vocabularies, counters, chat-format overhead and the model catalog.

Imports the inputs layer and the top-level shared modules, nothing higher.
"""
