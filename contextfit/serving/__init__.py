"""Layer 4, serving: the store, the audit, generation, providers and the HTTP API.

Imports the engine and everything below it, never the views.
"""
