"""tokens: how many tokens a text, a message and a request cost, and what they cost in dollars.

The core, read first:

* ``tokenizers.py`` — :func:`get_tokenizer`, a profile's count of a text (``profiles.py`` is the
  catalogue of profiles, data only; ``vocabularies.py`` loads the exact OpenAI vocabularies offline);
* ``chat_counter.py`` — :func:`token_counter`, a whole message list as a provider bills it
  (``openai_tools.py``: tool calls and definitions as OpenAI's models read them; ``tool_defs.py``:
  the tools block of a plan; ``images.py``; ``reasoning.py``, ``reasoning_items.py``);
* ``sent.py`` — blocks rendered in the provider's message shape, and the count of what is sent;
* ``models.py`` and ``prices.py`` — the model catalog and its prices (``effective.py``: the effective
  context lengths long-context benchmarks published for some of its models).

Optional machinery, fenced in modules of its own; without it every count is the same, only slower
or approximate:

* ``fast.py`` — the fast counting engine (toktok-rs), checked against tiktoken, falling back to it;
* ``open_models.py`` and ``chat_templates.py`` — exact open-weight vocabularies and chat templates
  (from the data-only wheels of requirements-vocab.txt; without them those profiles estimate);
* ``summed_counts.py``, ``long_blanks.py``, ``memo.py`` — a joined text's count from its parts', long
  blank runs counted without tiktoken's panic, bounded caches keyed by text;
* ``approximate_rules.py`` — the extra tokens an approximate profile adds where its proxy under-counts.

Imports the inputs layer and the top-level shared modules, nothing higher.
"""
