"""Built-in sample conversations: each shows one point at a glance.

They are contextfit bundles (see ``formats/bundle.py``) in ``data/samples``:
the chat plus everything around it and suggested settings.
"""

from __future__ import annotations

from dataclasses import dataclass
from importlib import resources

from .formats import Conversation, load_conversation


@dataclass(frozen=True, slots=True)
class Sample:
    """A built-in sample: its key, title, one-line description and file name."""

    key: str
    title: str
    description: str
    filename: str


SAMPLES = (
    Sample(
        "roleplay",
        "Role-play with card, persona, lorebook and memory",
        "Which lore survives? truncate drops the oldest blocks, vector-recall the least relevant lore first, summarize folds old turns into a summary, manual drops the out-of-character aside, clear-tool-results clears the older ledger lookup.",
        "roleplay.json",
    ),
    Sample(
        "coding_agent",
        "Coding agent with parallel tool calls",
        "Three parallel reads whose results arrive out of order: calls and results are never split; clear-tool-results keeps every call and clears the oldest outputs.",
        "coding_agent.json",
    ),
    Sample(
        "support_chat",
        "Long support chat with pins and manual exclusions",
        "Pinned account details always stay; off-topic messages are excluded by hand with the manual strategy.",
        "support_chat.json",
    ),
)


def get_sample(key: str) -> Sample:
    """The sample called ``key``.

    >>> get_sample("coding_agent").filename
    'coding_agent.json'
    """
    for sample in SAMPLES:
        if sample.key == key:
            return sample
    raise KeyError(f"No sample {key!r}; samples: {', '.join(s.key for s in SAMPLES)}.")


def sample_text(key: str) -> str:
    """The sample's JSON text (what the dashboard shows in the paste box)."""
    return resources.files("contextfit").joinpath("data", "samples", get_sample(key).filename).read_text("utf-8")


def load_sample(key: str) -> Conversation:
    """The sample, imported.

    >>> conversation = load_sample("support_chat")
    >>> conversation.format, conversation.settings["contextLimit"]
    ('contextfit', 1100)
    """
    return load_conversation(sample_text(key))
