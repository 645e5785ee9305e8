"""Layer 3, engine: assembly, fitting, strategies, plugins and the pipeline that runs them.

Imports tokens, inputs and the top-level shared modules, nothing higher.
"""
