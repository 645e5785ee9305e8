"""Layer 1, inputs: what a user hands us — message dicts, conversation formats, lorebooks, samples.

Imports only the top-level shared modules (errors, jsonpath, limits, text).
"""
