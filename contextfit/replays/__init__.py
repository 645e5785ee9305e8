"""replays: every strategy over a whole conversation, request by request: the replay,
the must-survive facts it checks, and the providers' prompt-cache rules.

Imports pipeline and everything below it, nothing higher. (Named in the plural: ``contextfit.replay`` is the function.)
"""
