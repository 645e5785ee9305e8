"""replays: every strategy over a whole conversation, request by request: the replay,
the must-survive facts it checks, and the providers' prompt-cache rules; and the
answer they add up to — which strategy to ship under a priority (``recommend.py``,
``answer.py``), what each one loses in words (``losses.py``), what it costs at volume
(``volume.py``), the facts a conversation marks without any being typed
(``must_survive.py``), and where each fact lands in a prompt — its start, middle or end
(``placement.py``).

Imports pipeline and everything below it, nothing higher. (Named in the plural: ``contextfit.replay`` is the function.)
"""
