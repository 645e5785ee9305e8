"""The retention protocol's conversations: synthetic agent chats with planted facts.

After the Context Decay Benchmark (clawRxiv 2604.01047): a conversation of
``turns`` turns (a turn is one user request and the agent's answer, with a
tool call and its result in about a third of them) carries needle facts
planted at turns drawn uniformly over the conversation, and the facts are
asked about at the last turn, whose user message is the current input.

Facts (one per ten turns, at least five) come in two kinds, half each:

* **explicit** — marked as something to keep ("Important: the billing
  service port is 5433.", "For the record, search owner: Priya Raman.");
* **implicit** — embedded in ordinary prose with no marker, the attribute
  only implied ("Restarted billing on the new box and it came up on 5433,
  the health checks are green again.").

Values are of many sorts: numbers with units (``6 replicas``, ``250 ms``,
``$4,200``), bare numbers (ports), identifiers (``INC-4821``, commit
hashes, ``snake_case`` flags), dates and times, names of people, quoted
strings, plain words (a codename), and decisions ("use pnpm",
``eu-west-3``). A quarter of the facts planted in the first 70% of the
conversation are **superseded** later: the value is set again (explicitly or
implicitly) and the new one is current; the update never repeats the old
value. About a third of the facts are referred back to by a later user
message that names the attribute but not the value.

Filler is agent work about a code base: requests, explanations, tool calls
(``read_file``, ``run_tests``, ``grep``) and their outputs, with their own
numbers, hashes, timings and colleagues' names — distractors a fact keeper
must not mistake for facts. A fact's value occurs in no other message (the
generator draws again until it does not), so finding it in what is sent
means the fact was kept.

The same ``turns`` and ``seed`` give the same conversation on every machine
(``random.Random`` seeded with a string, the calls used stable across
Python versions).

>>> chat = generate(50, seed=1)
>>> len(chat.messages) > 100, chat.messages[-1]["role"], len(chat.facts)
(True, 'user', 5)
>>> generate(50, seed=1) == chat
True
"""

from __future__ import annotations

import json
import random
from dataclasses import dataclass, field
from typing import Callable

from ..replays.facts import contains_word

EXPLICIT = "explicit"
IMPLICIT = "implicit"
KINDS = (EXPLICIT, IMPLICIT)

#: One fact per this many turns, at least MIN_FACTS.
TURNS_PER_FACT = 10
MIN_FACTS = 5
SUPERSEDED_SHARE = 0.25
#: Only facts planted before this share of the conversation can be superseded (the update comes later).
SUPERSEDE_BEFORE = 0.7
REFER_BACK_SHARE = 0.3
TOOL_TURN_SHARE = 0.33

SYSTEM_PROMPT = (
    "You are a coding agent working in the acme monorepo. You can read files, run the test suite and search "
    "the code with tools. Keep answers short and concrete, say which files you touched, and ask before you "
    "change anything that affects production."
)
FINAL_QUESTION = (
    "Before we hand this over, list the current values of everything we settled in this session: ports, "
    "owners, limits, dates, names and decisions. Use the latest value where something changed."
)


@dataclass(frozen=True, slots=True)
class PlantedFact:
    """One needle: ``key`` (what it is about), its values in the order they were
    set with the message index of each (the last is current, the others stale),
    its ``kind`` (explicit or implicit) and ``sort`` (number, identifier, name...).
    ``asked_at`` is the message index of the request that asks about it."""

    key: str
    values: tuple[tuple[str, int], ...]
    kind: str
    sort: str
    asked_at: int

    @property
    def current(self) -> str:
        """The value in force when the fact is asked about."""
        return self.values[-1][0]

    @property
    def stale(self) -> tuple[str, ...]:
        """Values set earlier and replaced since."""
        return tuple(value for value, _ in self.values[:-1])

    @property
    def superseded(self) -> bool:
        return len(self.values) > 1

    def to_dict(self) -> dict:
        return {"key": self.key, "values": [list(pair) for pair in self.values], "kind": self.kind,
                "sort": self.sort, "askedAt": self.asked_at}


@dataclass(frozen=True, slots=True)
class ProtocolConversation:
    """A generated conversation: its messages (OpenAI shape, the last one the question) and its facts."""

    turns: int
    seed: int
    messages: tuple[dict, ...] = field(repr=False)
    facts: tuple[PlantedFact, ...]

    def to_dict(self) -> dict:
        return {"turns": self.turns, "seed": self.seed, "messages": list(self.messages),
                "facts": [fact.to_dict() for fact in self.facts]}


# -- values ------------------------------------------------------------------------------

_FIRST = ("Priya", "Tomasz", "Amara", "Kenji", "Lucía", "Oluwaseun", "Margit", "Rafael", "Ingrid", "Dev",
          "Halima", "Bruno", "Sunita", "Mateo", "Yara", "Gustav", "Noor", "Elif", "Callum", "Zanele")
_LAST = ("Raman", "Nowak", "Okafor", "Tanaka", "Ferreira", "Adeyemi", "Kovács", "Lindqvist", "Haddad", "Moreau",
         "Petrov", "Castillo", "Brennan", "Varga", "Osei", "Lindgren", "Mehta", "Duarte", "Kowalczyk", "Achebe")
_WORDS = ("heron", "basalt", "juniper", "ember", "tundra", "marlin", "quartz", "saffron", "lantern", "fjord",
          "cobalt", "meadow", "falcon", "orchid", "granite", "harbor", "willow", "sparrow", "obsidian", "cedar",
          "glacier", "pelican", "thistle", "mesa", "aurora", "bramble", "coral", "dune", "hemlock", "ibis")
#: words of flags and passphrases (apart from codenames, so a codename is never part of one)
_PARTS = ("amber", "birch", "comet", "delta", "echo", "fern", "gale", "hazel", "iris", "jade", "kelp", "lotus",
          "maple", "nova", "onyx", "pine", "quill", "raven", "sage", "tide")
_REGIONS = ("eu-west-3", "us-east-2", "ap-south-1", "eu-central-2", "us-west-1", "ca-central-1", "ap-northeast-3",
            "sa-east-1", "eu-north-1", "me-central-1", "us-west-2", "eu-west-1", "eu-south-2", "ap-southeast-2",
            "af-south-1", "il-central-1", "ap-east-1", "eu-west-2", "ap-southeast-3", "mx-central-1")
_DATABASES = ("PostgreSQL 16", "MySQL 8.4", "CockroachDB 24.1", "MariaDB 11", "ClickHouse 24.3", "DynamoDB",
              "Cassandra 5.0", "Redis 7.2", "SQL Server 2022", "Oracle 23ai", "MongoDB 7", "Neo4j 5",
              "TimescaleDB 2.14", "OpenSearch 2.13", "ScyllaDB 6", "DuckDB 1.0", "FoundationDB 7.3", "Spanner",
              "BigQuery", "Firestore")
_TOOLS = ("pnpm", "poetry", "uv", "bazel", "ruff", "esbuild", "vitest", "pytest-xdist", "nx", "turborepo",
          "gradle", "maven", "cargo", "webpack", "vite", "rollup", "pants", "hatch", "biome", "swc")
_MONTHS = ("January", "February", "March", "April", "May", "June", "July", "August", "September", "October",
           "November", "December")
_DAYS = ("Monday", "Tuesday", "Wednesday", "Thursday", "Friday")
_TICKET = ("INC", "OPS", "SEC", "PAY", "CORE", "DATA")


def _name(rng: random.Random) -> str:
    return f"{rng.choice(_FIRST)} {rng.choice(_LAST)}"


def _date(rng: random.Random) -> str:
    if rng.random() < 0.5:
        return f"2025-{rng.randint(1, 12):02d}-{rng.randint(1, 28):02d}"
    return f"{rng.choice(_MONTHS)} {rng.randint(1, 28)}"


#: value sorts: how a value is drawn
_VALUES: dict[str, Callable[[random.Random], str]] = {
    "port": lambda rng: str(rng.randint(3000, 9899)),
    "replicas": lambda rng: f"{rng.randint(2, 48)} replicas",
    "timeout": lambda rng: rng.choice((f"{rng.randint(2, 95) * 10} ms", f"{rng.randint(2, 90)} seconds")),
    "memory": lambda rng: rng.choice((f"{rng.randint(2, 64)} GiB", f"{rng.randint(3, 30) * 128} MiB")),
    "budget": lambda rng: f"${rng.randint(12, 980) * 50:,}",
    "person": _name,
    "date": _date,
    "ticket": lambda rng: f"{rng.choice(_TICKET)}-{rng.randint(1000, 9999)}",
    "version": lambda rng: f"v{rng.randint(1, 9)}.{rng.randint(0, 30)}.{rng.randint(0, 40)}",
    "region": lambda rng: rng.choice(_REGIONS),
    "database": lambda rng: rng.choice(_DATABASES),
    "codename": lambda rng: rng.choice(_WORDS),
    "flag": lambda rng: f"{rng.choice(('enable', 'use', 'skip', 'allow'))}_{rng.choice(_PARTS)}_{rng.choice(('v2', 'path', 'mode', 'cache'))}",
    "commit": lambda rng: "".join(rng.choice("0123456789abcdef") for _ in range(7)),
    "percent": lambda rng: f"{rng.randint(5, 95)}%",
    "meeting": lambda rng: f"{rng.choice(_DAYS)} {rng.randint(8, 17)}:{rng.choice(('00', '15', '30', '45'))}",
    "passphrase": lambda rng: f"{rng.choice(_PARTS)}-{rng.choice(_PARTS)}-{rng.randint(10, 99)}",
    "tool": lambda rng: rng.choice(_TOOLS),
}

#: value sort -> the sort a report groups it under
SORTS = {
    "port": "number", "replicas": "number+unit", "timeout": "number+unit", "memory": "number+unit",
    "budget": "number+unit", "percent": "number+unit", "person": "name", "date": "date", "meeting": "date",
    "ticket": "identifier", "version": "identifier", "flag": "identifier", "commit": "identifier",
    "region": "decision", "database": "decision", "tool": "decision", "codename": "word",
    "passphrase": "quoted",
}


@dataclass(frozen=True, slots=True)
class _Attribute:
    """What a fact is about (with a ``{service}``), its value sort and its phrasings."""

    key: str
    sort: str
    implicit: tuple[str, ...]
    update: tuple[str, ...]
    quoted: bool = False


_ATTRIBUTES = (
    _Attribute("{service} service port", "port",
               ("Restarted {service} on the new box and it came up on port {value}, the health checks are green again.",
                "The load balancer now forwards {service} traffic to {value} on the pods, I checked the listener."),
               ("After the network change {service} answers on port {value} instead.",)),
    _Attribute("{service} replica count", "replicas",
               ("Ops scaled {service} to {value} overnight because of the queue backlog.",
                "We ended up running {value} of {service} during the load test and it held."),
               ("{service} got rescaled to {value} after the incident review.",)),
    _Attribute("{service} request timeout", "timeout",
               ("Calls into {service} were cut off after {value} during the spike, that is what the config says too.",
                "I had to give {service} {value} before it gives up on upstream calls."),
               ("We relaxed {service} so it now waits {value} before giving up.",)),
    _Attribute("{service} memory limit", "memory",
               ("The {service} pods got OOM-killed until we gave them {value} each.",
                "Each {service} container is capped at {value} in the manifests I just read."),
               ("Platform raised the {service} pods to {value} this morning.",)),
    _Attribute("{service} monthly budget", "budget",
               ("Finance signed off on {value} a month for {service} infrastructure, so we should stay under that.",
                "Hosting for {service} may cost {value} per month at most, according to the planning sheet."),
               ("The revised plan gives {service} {value} a month.",)),
    _Attribute("{service} owner", "person",
               ("Anything about {service} goes through {value} since the reorg.",
                "{value} took over {service} last sprint, so ping them about the rollout."),
               ("{service} has moved over to {value} as of this week.",)),
    _Attribute("{service} release date", "date",
               ("Product wants the new {service} out on {value}, so the freeze starts the week before.",
                "We promised customers the {service} launch for {value}."),
               ("Marketing pushed the {service} launch to {value}.",)),
    _Attribute("{service} incident ticket", "ticket",
               ("The {service} outage from yesterday is tracked in {value}, link the fix there.",
                "I filed {value} for the {service} regression so QA can follow it."),
               ("The {service} problem was re-filed as {value} after triage.",)),
    _Attribute("{service} pinned version", "version",
               ("Production {service} runs {value} and we should not bump it before the audit.",
                "The lockfile pins {service} at {value} for now."),
               ("We moved {service} to {value} after the security fix landed.",)),
    _Attribute("{service} deploy region", "region",
               ("Legal wants {service} data to stay in {value}, so deploy it there.",
                "The {service} cluster lives in {value} now that the migration is done."),
               ("We are moving {service} over to {value} next week.",)),
    _Attribute("{service} database", "database",
               ("For {service} we decided to go with {value}, the team knows it best.",
                "The {service} schema is being ported to {value} in the new design."),
               ("After the benchmark we switched {service} to {value}.",)),
    _Attribute("{service} codename", "codename",
               ("In the roadmap the {service} rewrite goes by {value}, so search for that in the docs.",
                "Everyone calls the new {service} project {value} internally."),
               ("Branding renamed the {service} project to {value}.",)),
    _Attribute("{service} feature flag", "flag",
               ("The new {service} path sits behind {value}, keep it off in production.",
                "QA toggles the {service} change with {value} in the staging config."),
               ("The {service} rollout now hangs off {value} instead.",)),
    _Attribute("{service} last good commit", "commit",
               ("If {service} breaks again roll back to {value}, that build was clean.",
                "Bisecting {service} points at the change right after {value}, everything before it passes."),
               ("The new known-good {service} build is {value}.",)),
    _Attribute("{service} alert threshold", "percent",
               ("Pager fires for {service} when error rates pass {value}, which is what on-call agreed to.",
                "We only page someone about {service} once CPU stays above {value}."),
               ("On-call asked to page on {service} at {value} from now on.",)),
    _Attribute("{service} sync meeting", "meeting",
               ("The {service} folks meet {value} every week, bring the migration numbers.",
                "Let's demo the {service} changes at the {value} sync."),
               ("The {service} sync moved to {value}.",)),
    _Attribute("{service} staging passphrase", "passphrase",
               ("The {service} staging login wants \"{value}\" as the passphrase, it's in the vault too.",
                "Someone rotated the {service} staging secret to \"{value}\", don't paste it in tickets."),
               ("The {service} staging secret was rotated again, it is \"{value}\" now.",), quoted=True),
    _Attribute("{service} build tool", "tool",
               ("We agreed that {service} builds with {value} from here on, the old scripts go away.",
                "The {service} CI image only ships {value}, so that is what we build with."),
               ("We dropped the old setup and {service} builds with {value} now.",)),
)
_SERVICES = ("billing", "search", "auth", "gateway", "reports", "notifications", "ingest", "export", "checkout",
             "inventory", "payments", "analytics", "scheduler", "mailer")

_EXPLICIT = (
    "Important: the {key} is {value}.",
    "Please remember that the {key} is {value}.",
    "For the record, {key}: {value}.",
    "Note for later: set the {key} to {value}.",
    "Decision: use {value} as the {key}.",
)
_EXPLICIT_UPDATE = (
    "Change of plan: the {key} is now {value}.",
    "Update: use {value} for the {key} from now on.",
    "Correction, the {key} is {value} now.",
)
_REFER_BACK = (
    "Before the deploy, double-check the {key} we agreed on.",
    "Keep the {key} in mind for the rollout plan.",
    "Does the config still match the {key} from earlier?",
)

# -- filler --------------------------------------------------------------------------------

_FILES = ("src/{s}/handlers.py", "src/{s}/models.py", "src/{s}/client.ts", "services/{s}/main.go", "src/{s}/jobs.py",
          "tests/{s}/test_api.py", "deploy/{s}/values.yaml", "src/{s}/routes.ts", "lib/{s}/cache.rb")
_FUNCS = ("parse_payload", "retry_request", "build_query", "render_invoice", "sync_accounts", "flush_queue",
          "validate_token", "load_settings", "merge_batches", "schedule_jobs", "emit_metrics", "open_session")
_COLLEAGUES = ("Dana", "Marcus", "Ines", "Theo", "Wren", "Sasha", "Omar", "Greta")
_ASKS = (
    "Can you look at {f} and tell me why {fn} keeps failing on empty input?",
    "Please refactor {fn} in {f} so it stops duplicating the retry logic.",
    "The nightly job is slow again, check whether {fn} is the culprit.",
    "{c} says the tests in {f} are flaky, can you take a look?",
    "Add logging around {fn} so we can see what the payload looks like.",
    "What does {fn} do with timezones, and is it safe to call from the scheduler?",
    "Rename the helper in {f} to something clearer and update the callers.",
    "We need a unit test for {fn} that covers the error branch.",
    "Is there a reason {f} imports the whole client just for one call?",
    "Can you make {fn} idempotent? It gets called twice when the queue redelivers.",
)
_ASIDES = (
    "No rush, {c} is still reviewing the last change.",
    "I will be in meetings for an hour.",
    "Keep the diff small please.",
    "We talked about this in standup with {c}.",
    "This blocks the release branch.",
    "The linter complained about it too.",
)
_ANSWERS = (
    "I read {f} and {fn} assumes the list is never empty, so it indexes the first element without a check.",
    "The retry loop in {fn} sleeps on every attempt, including the first, which explains part of the delay.",
    "I moved the shared logic into one helper and kept the public signature of {fn} unchanged.",
    "The flaky test depends on wall-clock time; I replaced it with a fixed clock.",
    "There is a second caller of {fn} in the scheduler that I updated as well.",
    "The import was left over from an older version of {f}; nothing else uses it.",
    "I added a guard clause and a test for the empty case, the suite passes locally.",
    "{fn} converts everything to UTC before comparing, so the scheduler can call it safely.",
    "The payload now gets logged at debug level with the secrets masked.",
    "I would keep the change behind the existing config switch until {c} has reviewed it.",
    "Most of the time goes into serializing the batch twice; caching the encoded form halves it.",
    "I left a comment in {f} where the behaviour is still unclear to me.",
)
_RESULT_LINES = (
    "{t} INFO  {s}.{fn} started batch={n3} pid={pid}",
    "{t} WARN  {s}.{fn} retry {d}/5 after {ms}ms",
    "{t} DEBUG cache hit ratio {r} for {s}",
    "{t} ERROR {s}.{fn} failed: connection reset by peer",
    "PASSED {f}::test_{fn}_{d} ({ms}ms)",
    "FAILED {f}::test_{fn}_edge - AssertionError: expected {n3}, got {n2}",
    "{f}:{n2}:    return {fn}(payload, retries={d})",
    "{f}:{n2}:def {fn}(items, *, timeout=None):",
    "commit {h} {c}: tidy {fn} and its tests",
    "{n3} passed, {d} failed, {n2} skipped in {sec}s",
)


def _fill(template: str, rng: random.Random, service: str) -> str:
    return template.format(
        s=service, f=rng.choice(_FILES).format(s=service), fn=rng.choice(_FUNCS), c=rng.choice(_COLLEAGUES),
        t=f"{rng.randint(0, 23):02d}:{rng.randint(0, 59):02d}:{rng.randint(0, 59):02d}",
        n3=rng.randint(100, 999), n2=rng.randint(10, 99), d=rng.randint(1, 9), pid=rng.randint(10000, 99999),
        ms=rng.randint(1, 2999), r=f"0.{rng.randint(10, 99)}", sec=f"{rng.randint(1, 99)}.{rng.randint(0, 9)}",
        h="".join(rng.choice("0123456789abcdef") for _ in range(9)),
    )


@dataclass(slots=True)
class _Turn:
    """One turn under construction: the user's sentences, the answer's, and a tool exchange."""

    service: str
    user: list[str]
    answer: list[str]
    call: dict | None = None
    result: str | None = None


def _turn(rng: random.Random, number: int) -> _Turn:
    service = rng.choice(_SERVICES)
    user = [_fill(rng.choice(_ASKS), rng, service)]
    if rng.random() < 0.5:
        user.append(_fill(rng.choice(_ASIDES), rng, service))
    answer = [_fill(rng.choice(_ANSWERS), rng, service) for _ in range(rng.randint(2, 4))]
    turn = _Turn(service, user, answer)
    if rng.random() < TOOL_TURN_SHARE:
        tool = rng.choice(("read_file", "run_tests", "grep"))
        arguments = ({"path": rng.choice(_FILES).format(s=service)} if tool == "read_file"
                     else {"pattern": rng.choice(_FUNCS)} if tool == "grep" else {"target": f"tests/{service}"})
        turn.call = {"id": f"call_{number}", "type": "function",
                     "function": {"name": tool, "arguments": json.dumps(arguments)}}
        turn.result = "\n".join(_fill(rng.choice(_RESULT_LINES), rng, service) for _ in range(rng.randint(4, 10)))
    return turn


def _messages(turns: list[_Turn]) -> list[dict]:
    messages: list[dict] = [{"role": "system", "content": SYSTEM_PROMPT}]
    for turn in turns:
        messages.append({"role": "user", "content": " ".join(turn.user)})
        if turn.call is not None:
            messages.append({"role": "assistant", "content": "Let me check.", "tool_calls": [turn.call]})
            messages.append({"role": "tool", "tool_call_id": turn.call["id"], "content": turn.result})
        messages.append({"role": "assistant", "content": " ".join(turn.answer)})
    return messages


def _insert(rng: random.Random, sentences: list[str], sentence: str) -> None:
    sentences.insert(rng.randint(0, len(sentences)), sentence)


def generate(turns: int, seed: int = 1) -> ProtocolConversation:
    """The protocol conversation of ``turns`` turns (at least 10) for ``seed`` (module docstring)."""
    if isinstance(turns, bool) or not isinstance(turns, int) or turns < 10:
        raise ValueError(f"turns must be a whole number of at least 10, got {turns!r}")
    rng = random.Random(f"contextfit-retention:{turns}:{seed}")
    body = [_turn(rng, number) for number in range(turns - 1)]  # the last turn is the question
    count = max(MIN_FACTS, turns // TURNS_PER_FACT)
    pairs = rng.sample([(attribute, service) for attribute in _ATTRIBUTES for service in _SERVICES], count)
    filler = "\n".join(m.get("content") or "" for m in _messages(body))
    used: set[str] = set()

    def fresh(sort: str) -> str:
        for _ in range(200):
            value = _VALUES[sort](rng)
            clash = any(contains_word(other, value) or contains_word(value, other) for other in used)
            if not clash and not contains_word(filler, value):
                used.add(value)
                return value
        raise RuntimeError(f"no fresh {sort} value")  # pragma: no cover - the pools are far larger

    planned = []
    for position, (attribute, service) in enumerate(pairs):
        kind = KINDS[position % 2]  # half each; the pairs are in random order
        key = attribute.key.format(service=service)
        at = rng.randrange(turns - 1)
        values = [(fresh(attribute.sort), at)]
        if at < SUPERSEDE_BEFORE * (turns - 1) and rng.random() < SUPERSEDED_SHARE / SUPERSEDE_BEFORE:
            values.append((fresh(attribute.sort), rng.randrange(at + 1, turns - 1)))
        planned.append((attribute, service, key, kind, values))
    for attribute, service, key, kind, values in planned:
        for step, (value, at) in enumerate(values):
            shown = f'"{value}"' if attribute.quoted and kind == EXPLICIT else value
            if kind == EXPLICIT:
                template = rng.choice(_EXPLICIT if step == 0 else _EXPLICIT_UPDATE)
                sentence = template.format(key=key, value=shown)
            else:
                sentence = rng.choice(attribute.implicit if step == 0 else attribute.update).format(
                    service=service, value=value)
                sentence = sentence[0].upper() + sentence[1:]
            turn = body[at]
            _insert(rng, turn.user if rng.random() < 0.7 else turn.answer, sentence)
        last = values[-1][1]
        if rng.random() < REFER_BACK_SHARE and last < turns - 2:
            later = rng.randrange(last + 1, turns - 1)
            _insert(rng, body[later].user, rng.choice(_REFER_BACK).format(key=key))
    messages = _messages(body)
    messages.append({"role": "user", "content": FINAL_QUESTION})
    asked = len(messages) - 1
    where = _turn_positions(messages)
    facts = tuple(
        PlantedFact(key, tuple((value, _holder(messages, where[at], value)) for value, at in values), kind,
                    SORTS[attribute.sort], asked)
        for attribute, service, key, kind, values in planned
    )
    return ProtocolConversation(turns, seed, tuple(messages), facts)


def _turn_positions(messages: list[dict]) -> list[int]:
    """The message index of each turn's user message."""
    return [index for index, message in enumerate(messages) if message["role"] == "user"]


def _holder(messages: list[dict], start: int, value: str) -> int:
    """The index of the message of the turn starting at ``start`` that holds ``value``."""
    for index in range(start, len(messages)):
        if contains_word(messages[index].get("content") or "", value):
            return index
    raise AssertionError(f"planted value {value!r} not found")  # pragma: no cover - planted just above


__all__ = ["EXPLICIT", "IMPLICIT", "KINDS", "PlantedFact", "ProtocolConversation", "generate"]
