"""pipeline: one settings object, assembly (persona, card, lorebook, memory), the plan
(:func:`plan_prompt`, the one door every face uses) and the session that refits a growing chat.

Imports fitting and everything below it, nothing higher.
"""
