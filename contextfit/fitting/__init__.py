"""fitting: the host (:func:`shift_context`), the strategy and interceptor registries,
proposals, results and the built-in strategies.

Imports tokens, inputs and the top-level shared modules, nothing higher.
"""
