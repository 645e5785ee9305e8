"""The ``contextfit`` command: ``fit``, ``replay``, ``models``, ``dashboard`` (and ``serve``).

Errors print their message on standard error and exit non-zero: 2 for bad
input or settings, 1 when a strategy cannot fit the budget (``replay``: at
some turn; the replay is printed all the same).
"""

from __future__ import annotations

import argparse
import json
import os
import subprocess
import sys
from collections.abc import Sequence
from pathlib import Path
from typing import TextIO

from . import environment
from .errors import ContextfitError
from .pipeline.plan import BUILTIN_STRATEGIES, PromptPlan
from .pipeline.session import FitSession
from .pipeline.settings import PlanSettings, conversation_model
from .dashboard.bands import band_text
from .dashboard.progress import PercentSteps
from .amounts import money
from .dashboard.verdict import replay_verdict, rules_text
from .fitting.registry import BUILT_IN, registry
from .replays.answer import recommendation_for
from .replays.facts import conversation_facts, fact_from_line
from .replays.must_survive import DECLARED, DEFAULT_FACTS, must_survive
from .replays.placement import with_fact_placement
from .replays.recommend import PRIORITIES, PRIORITY_WORDS
from .replays.volume import DEFAULT_CONVERSATIONS_PER_DAY

_BAR = {"protected": "█", "kept": "▓", "summarized": "▒", "compressed": "▒"}
_BAR_WIDTH = 60


def budget_bar(plan: PromptPlan, width: int = _BAR_WIDTH) -> str:
    """One line: tokens by fate against the context limit, the reserve at the end.

    ``█`` protected, ``▓`` kept, ``▒`` summarized or compressed, ``░`` free
    budget, ``▁`` response reserve.
    """
    scale = width / plan.context_limit
    used: dict[str, int] = {}
    for block in plan.blocks:
        if block.included and block.tokens:
            used[block.fate] = used.get(block.fate, 0) + block.tokens
    overhead = plan.prompt_tokens - sum(used.values())
    used["protected"] = used.get("protected", 0) + max(overhead, 0)
    bar = "".join(_BAR[fate] * round(tokens * scale) for fate, tokens in sorted(used.items(), key=lambda kv: list(_BAR).index(kv[0])))
    reserve = max(round(plan.response_reserve * scale), 1 if plan.response_reserve else 0)
    bar = bar[: width - reserve]
    return "[" + bar + "░" * (width - reserve - len(bar)) + "▁" * reserve + "]"


def _preview(text: str, width: int = 48) -> str:
    flat = " ".join(text.split())
    return flat if len(flat) <= width else flat[: width - 1] + "…"


def print_plan(name: str, plan: PromptPlan | ContextfitError, out: TextIO) -> None:
    """A strategy's plan as a table with its budget bar."""
    if isinstance(plan, ContextfitError):
        print(f"\n{name}: {plan.code}: {plan}", file=out)
        return
    print(
        f"\n{name} — {plan.prompt_tokens:,} of {plan.budget:,} tokens "
        f"(context {plan.context_limit:,}, reserve {plan.response_reserve:,}; {plan.tokenizer.profile}: {band_text(plan)})",
        file=out,
    )
    print(budget_bar(plan), file=out)
    if plan.fact_placement is not None:
        print(plan.fact_placement.line(), file=out)
    print(f"{'#':>4}  {'id':<18} {'role':<9} {'kind':<10} {'tokens':>7}  {'fate':<10} {'reason':<14} text", file=out)
    for block in plan.blocks:
        tokens = "—" if block.tokens is None else f"{block.tokens:,}"
        print(
            f"{block.index:>4}  {block.id[:18]:<18} {block.role[:9]:<9} {block.kind[:10]:<10} {tokens:>7}  "
            f"{block.fate:<10} {block.reason:<14} {_preview(block.content)}",
            file=out,
        )
    for diagnostic in plan.diagnostics:
        if diagnostic["code"] != "RELEVANCE":
            print(f"  note: {diagnostic['code']}: {diagnostic.get('message', '')}", file=out)


def _fit(args: argparse.Namespace, out: TextIO) -> int:
    from .inputs.formats import load_conversation, load_conversation_file

    if args.file == "-":
        conversation = load_conversation(sys.stdin.buffer.read(), args.format)
    else:
        conversation = load_conversation_file(args.file, args.format)
    strategies = list(BUILTIN_STRATEGIES) if args.strategy == "all" else [args.strategy]
    model = conversation_model(conversation, args.model)
    # The conversation's parts and a bundle's suggested settings apply; the flags win.
    settings = PlanSettings.from_keywords(model=model, context_limit=args.limit, response_reserve=args.reserve,
                                          tool_result_cap=args.tool_result_cap)
    facts = _declared_facts(args, conversation)
    if args.recommend:
        return _recommend(args, conversation, settings, strategies, out, facts)
    plans = dict(FitSession(conversation).plans(settings, strategies=strategies))
    # where each must-survive fact lands: the declared facts, else the default list (found once for every plan)
    marked, rule = (must_survive(conversation, settings), DEFAULT_FACTS) if facts is None else (facts, DECLARED)
    plans = {name: plan if isinstance(plan, ContextfitError) else with_fact_placement(plan, marked, rule=rule)
             for name, plan in plans.items()}
    if args.json:
        payload = {
            name: {"error": plan.to_dict()} if isinstance(plan, ContextfitError) else plan.to_dict()
            for name, plan in plans.items()
        }
        json.dump(payload, out, ensure_ascii=False, indent=2)
        out.write("\n")
    else:
        print(f"{args.file}: {conversation.format}, {len(conversation.messages)} messages, model {model}", file=out)
        for warning in conversation.warnings:
            print(f"  note: {warning}", file=out)
        for name, plan in plans.items():
            print_plan(name, plan, out)
        if len(plans) > 1:
            answer = recommendation_for(conversation, settings, strategies=strategies, priority=args.priority,
                                        facts=facts)
            print(f"\n{answer.sentence}", file=out)
    failed = [name for name, plan in plans.items() if isinstance(plan, ContextfitError)]
    if failed:
        for name in failed:
            print(f"contextfit: {name}: {plans[name]}", file=sys.stderr)
        return 1
    return 0


def _declared_facts(args: argparse.Namespace, conversation) -> list | None:
    """The must-survive facts ``--fact`` declares, else the conversation's own (a bundle's ``settings.facts``),
    else ``None``: the default list."""
    if args.fact:
        return [fact_from_line(text.strip()) for text in args.fact]
    return conversation_facts(conversation)


def _recommend(args: argparse.Namespace, conversation, settings: PlanSettings, strategies: list, out: TextIO,
               facts: list | None = None) -> int:
    """``fit --recommend``: the recommendation for the latest request, alone (the sentence Compare shows)."""
    answer = recommendation_for(conversation, settings, strategies=strategies, priority=args.priority, facts=facts)
    if args.json:
        json.dump(answer.to_dict(args.conversations_per_day), out, ensure_ascii=False, indent=2)
        out.write("\n")
        return 0
    print(answer.sentence, file=out)
    print_outcomes(answer, args.conversations_per_day, out)
    return 0


def print_outcomes(answer, conversations_per_day: int, out: TextIO) -> None:
    """Each strategy's costs at volume and its Lost line, under the recommendation."""
    print(f"\nPriority: {answer.priority} ({PRIORITY_WORDS[answer.priority]}); "
          f"{answer.reply_text}", file=out)
    for label, volume in answer.volumes(conversations_per_day).items():
        outcome = answer.outcome(label)
        mark = " (not recommended: it " + outcome.refusal + ")" if outcome.refusal else ""
        print(f"  {label}{mark}: {volume.text() if outcome.error is None else 'no plan'}", file=out)
        print(f"    {outcome.lost_line()}", file=out)


class TerminalProgress(PercentSteps):
    r"""A replay's progress on one line of a terminal (``stream``), rewritten when
    its whole percent changes and erased at the end; nothing when the stream is
    not a terminal (a pipe or a file keeps only the result).

    >>> import io
    >>> class Terminal(io.StringIO):
    ...     def isatty(self): return True
    >>> screen = Terminal()
    >>> progress = TerminalProgress(screen)
    >>> progress(0, 200); progress(1, 200); progress(2, 200); progress.clear()
    >>> screen.getvalue().split("\r")[1:]
    ['contextfit: replayed 0 of 200 turns', 'contextfit: replayed 2 of 200 turns', '                                   ', '']
    >>> TerminalProgress(io.StringIO()).live
    False
    """

    def __init__(self, stream: TextIO) -> None:
        super().__init__()
        self.stream = stream
        isatty = getattr(stream, "isatty", None)
        self.live = bool(isatty()) if callable(isatty) else False
        self.width = 0

    def draw(self, percent: int, done: int, total: int) -> None:
        line = f"contextfit: replayed {done:,} of {total:,} turns"
        self.width = max(self.width, len(line))
        self.stream.write("\r" + line)
        self.stream.flush()

    def clear(self) -> None:
        if self.shown is not None:
            self.stream.write("\r" + " " * self.width + "\r")
            self.stream.flush()
            self.shown = None


def _replay(args: argparse.Namespace, out: TextIO) -> int:
    from .replays.run import replay
    from .inputs.formats import load_conversation, load_conversation_file

    if args.file == "-":
        conversation = load_conversation(sys.stdin.buffer.read(), args.format)
    else:
        conversation = load_conversation_file(args.file, args.format)
    strategies: list = list(BUILTIN_STRATEGIES) if args.strategy == "all" else [args.strategy]
    if args.stable_prefix:
        strategies += [{"strategy": name, "options": {"stable_prefix": True}} for name in strategies
                       if name in ("truncate", "summarize", "clear-tool-results")]
    model = conversation_model(conversation, args.model)
    settings = PlanSettings.from_keywords(model=model, context_limit=args.limit, response_reserve=args.reserve,
                                          tool_result_cap=args.tool_result_cap)
    facts = [fact_from_line(text.strip()) for text in args.fact] if args.fact else None
    progress = TerminalProgress(sys.stderr)
    try:
        result = replay(conversation, settings=settings, strategies=strategies, facts=facts,
                        progress=progress if progress.live else None, priority=args.priority)
    finally:
        progress.clear()
    if args.json:
        payload = result.to_dict()
        if result.recommendation is not None:  # a month at the chosen volume
            payload["recommendation"] = result.recommendation.to_dict(args.conversations_per_day)
        json.dump(payload, out, ensure_ascii=False, indent=2)
        out.write("\n")
        return _replay_status(result)
    turns = len(result.requests)
    rows = next(iter(result.turns.values()), [])
    rounds = sum(1 for row in rows if row.trigger != "user")
    agent = f" ({len(result.user_turns):,} user turn{'s' if len(result.user_turns) != 1 else ''}, {rounds:,} tool " \
            f"round{'s' if rounds != 1 else ''}: every model call is a request)" if rounds else ""
    print(f"{args.file}: {turns} turn{'s' if turns != 1 else ''}{agent}, model {result.model} (budget {result.budget:,}; "
          f"{rules_text(result).replace(' · ', '; ')})", file=out)
    print(f"{'strategy':<34} {'total':>12} {'mean / turn':>12} {'cache hit':>9} {'tokens sent':>12} "
          f"{'retention':>9} {'first loss':>10}", file=out)
    for totals in result.totals.values():
        # the page's dollars: cents from a dollar, else four significant figures, never "1.8e-06"
        sent = totals.failed_turns < totals.turns  # a strategy that fitted no turn sent nothing to rate
        kept = "—" if totals.retention is None or not sent else f"{totals.retention:.0%}"
        loss = "—" if totals.first_loss_turn is None else str(totals.first_loss_turn)
        cache, tokens = (f"{totals.cache_hit_rate:.1%}", f"{totals.tokens_sent:,}") if sent else ("—", "—")
        print(f"{totals.strategy[:34]:<34} {money(totals.total_cost, '—'):>12} {money(totals.mean_cost, '—'):>12} "
              f"{cache:>9} {tokens:>12} {kept:>9} {loss:>10}", file=out)
    print(replay_verdict(result, "pass --strategy all"), file=out)
    if len(result.totals) > 1 and result.recommendation is not None:
        print(f"\n{result.recommendation.sentence}", file=out)
        print_outcomes(result.recommendation, args.conversations_per_day, out)
        print("", file=out)
    if args.requests:
        print_requests(result, out)
    for note in result.notes:
        print(f"  note: {note}", file=out)
    return _replay_status(result)


def print_requests(result, out: TextIO) -> None:
    """Each strategy's requests: the user turn and tool round, prompt tokens, cache read and write, why the cache
    read no more, and the cost; then the totals of each user turn."""
    for label, rows in result.turns.items():
        print(f"\n{label}: {'request':>7} {'turn':>5} {'round':>5} {'prompt':>9} {'cached':>9} {'written':>9} "
              f"{'cost':>11}  cache miss", file=out)
        for row in rows:
            prompt = "—" if row.prompt_tokens is None else f"{row.prompt_tokens:,}"
            cost = money(None if row.cost is None else row.cost.total, "—")
            miss = row.error or row.cache_miss or ""
            print(f"{'':{len(label) + 1}} {row.turn:>7} {row.user_turn:>5} {row.round:>5} {prompt:>9} "
                  f"{row.cache_read:>9,} {row.cache_write:>9,} {cost:>11}  {miss}", file=out)
        for turn in result.user_turn_totals()[label]:
            print(f"{'':{len(label) + 1}} user turn {turn.user_turn}: {turn.requests} request"
                  f"{'s' if turn.requests != 1 else ''}, {turn.prompt_tokens:,} prompt tokens, {turn.cache_read:,} "
                  f"cached, {money(turn.cost, '—')}", file=out)


def _replay_status(result) -> int:
    """1 when a strategy could not fit some turn (as ``fit`` when a plan fails), each named on standard error."""
    failed = [totals for totals in result.totals.values() if totals.failed_turns]
    for totals in failed:
        error = next(row for row in result.turns[totals.strategy] if row.error is not None)
        print(f"contextfit: {totals.strategy}: {totals.failed_turns} of {totals.turns} turn"
              f"{'s' if totals.turns != 1 else ''} could not be fitted ({error.error}: {error.error_message})",
              file=sys.stderr)
    return 1 if failed else 0


def _models(args: argparse.Namespace, out: TextIO) -> int:
    from .tokens.models import list_models
    from .dashboard.catalog import price_row

    print(f"{'model':<34} {'provider':<10} {'context':>10} {'max output':>10} {'in $/M':>8} {'out $/M':>8}  tokenizer",
          file=out)
    for info in list_models():
        from .tokens.tokenizers import get_tokenizer

        approximate = " (approximate)" if get_tokenizer(info.tokenizer).approximate else ""
        prices = price_row(info)
        print(
            f"{info.id:<34} {info.provider:<10} {info.context_limit:>10,} {info.max_output:>10,} "
            f"{prices['input $/M']:>8} {prices['output $/M']:>8}  {info.tokenizer}{approximate}",
            file=out,
        )
    print("Prices: US dollars per million tokens from the catalog, base tier (— = none in the catalog). "
          "Sources, dates and cache prices: the Models page, or get_model(id).prices.", file=out)
    return 0


def _calibrate(args: argparse.Namespace, out: TextIO) -> int:
    from .serving.store import open_store
    from .dashboard.calibration import calibration, calibration_lines

    store = open_store(args.db)
    try:
        rows = calibration(store)
    finally:
        store.close()
    if args.json:
        json.dump([row.to_dict() for row in rows], out, indent=2)
        out.write("\n")
    else:
        print("\n".join(calibration_lines(rows)), file=out)
    return 0


def dashboard_app() -> Path:
    """The dashboard's ``app.py``: the copy an installed wheel carries (``setup.py``), else the checkout's."""
    here = Path(__file__).resolve().parent
    for app in (here / "app" / "app.py", here.parent / "app.py"):
        if app.is_file() and (app.parent / "pages").is_dir() and (app.parent / "app_server.py").is_file():
            return app
    raise ContextfitError(f"The dashboard's app.py is missing from this installation ({here / 'app'}); reinstall contextfit.")


def _dashboard(args: argparse.Namespace, out: TextIO) -> int:
    """``streamlit run`` the dashboard's server (``app_server.py`` beside ``app.py``: the app with
    its frame policy). On POSIX the command becomes the
    server (``exec``): a signal that stops it (a service manager's SIGTERM,
    a test's ``terminate()``) stops the server, where a child process would
    have been left running, holding its port."""
    app = dashboard_app().with_name("app_server.py")
    command = [sys.executable, "-m", "streamlit", "run", str(app), "--server.port", str(args.port)]
    if os.name == "posix":
        out.flush()
        os.chdir(app.parent)
        os.execv(sys.executable, command)  # does not return
    return subprocess.call(command, cwd=app.parent)


def _serve(args: argparse.Namespace, out: TextIO) -> int:
    try:
        from .serving.api import create_app, serving
        from .serving.api.guard import allowed_hosts, is_loopback
        from .serving.api.limits import ServerLimits
        from .inputs.lorebook.matching import RegexLimits
    except ImportError as exc:
        raise ContextfitError(f"contextfit serve needs the API extras ({exc.name} is missing): pip install 'contextfit[api]'.") from None
    from sqlalchemy.exc import SQLAlchemyError

    from .serving.store import open_store

    api_key = args.api_key or environment.read("CONTEXTFIT_API_KEY") or None
    if not is_loopback(args.host) and api_key is None and not args.insecure_no_auth:
        raise ContextfitError(
            f"--host {args.host} is reachable from other machines: give an API key (--api-key, or better "
            "$CONTEXTFIT_API_KEY), or run without one explicitly with --insecure-no-auth."
        )
    limits = _server_limits(args, ServerLimits, RegexLimits)
    hosts = allowed_hosts(args.host, args.allowed_host)
    try:
        store = open_store(args.db)
    except SQLAlchemyError as exc:
        reason = getattr(exc, "orig", None) or exc
        raise ContextfitError(f"Cannot open the database given by --db: {type(reason).__name__}: {reason}".strip()) from None
    print(f"contextfit: chats and audits in {store.engine.url.render_as_string(hide_password=True)}", file=sys.stderr)
    print(f"contextfit: answering the host names {', '.join(sorted(hosts))}", file=sys.stderr)
    if api_key is not None:
        print("contextfit: every request needs the API key (Authorization: Bearer KEY, or X-API-Key: KEY)", file=sys.stderr)
    elif not is_loopback(args.host):
        print(f"contextfit: WARNING: --insecure-no-auth: anyone who can reach {args.host} can read and change every chat",
              file=sys.stderr)  # fmt: skip
    if args.processes > 1:  # the schema is migrated and checked: now N processes on one socket
        from .serving.api.processes import ServeOptions, run_processes

        store.close()
        print(f"contextfit: {args.processes} API processes on {args.host}:{args.port}", file=sys.stderr)
        run_processes(ServeOptions(args.db, args.host, args.port, frozenset(hosts), api_key, limits), args.processes)
        return 0
    try:
        app = create_app(store, limits=limits, hosts=hosts, api_key=api_key)
        serving.run(app, host=args.host, port=args.port, limits=limits)
    finally:
        store.close()
    return 0


#: ``contextfit serve``'s limit flags: flag, type, the ``ServerLimits`` field (``regex_`` ones: ``RegexLimits``'), help.
_LIMIT_FLAGS = (
    ("--threads", int, "workers", "planning threads (fitting, tokenizing, lorebooks) in each process"),
    ("--queue", int, "queue", "requests waiting for a worker before 503 SERVER_BUSY"),
    ("--request-timeout", float, "request_seconds", "seconds of work per request before 503 REQUEST_TIMEOUT"),
    ("--regex-key-timeout", float, "regex_key_seconds", "seconds one lorebook regex key may run"),
    ("--regex-request-timeout", float, "regex_request_seconds", "seconds all regex keys of one request may run"),
    ("--header-timeout", float, "header_seconds", "seconds a client has to send its request headers"),
    ("--body-timeout", float, "body_seconds", "seconds a client has to send its request body"),
    ("--keep-alive-timeout", int, "keep_alive_seconds", "seconds an idle connection is kept open"),
    ("--max-connections", int, "max_connections", "open connections; more are closed at once"),
)


def _server_limits(args: argparse.Namespace, server_limits: type, regex_limits: type):
    """The ``ServerLimits`` with the limit flags given over its defaults."""
    given = {field: getattr(args, field) for _, _, field, _ in _LIMIT_FLAGS if getattr(args, field) is not None}
    regex = {field[len("regex_"):]: given.pop(field) for field in list(given) if field.startswith("regex_")}
    return server_limits(**given, regex=regex_limits(**regex))


def parser() -> argparse.ArgumentParser:
    """The command-line interface."""
    top = argparse.ArgumentParser(prog="contextfit", description="See exactly what an LLM will see.")
    commands = top.add_subparsers(dest="command", required=True)

    builtins = ", ".join(entry.name for entry in registry.entries() if entry.origin == BUILT_IN)
    fit = commands.add_parser("fit", help="fit a conversation file under each strategy")
    fit.add_argument("file", help="a conversation, card, or lorebook file (- for standard input)")
    fit.add_argument("--model", help="model id or alias (default: the file's model, else gpt-4o)")
    fit.add_argument("--strategy", default="all",
                     help=f"a strategy name, or 'all' (default) for the built-ins: {builtins}")
    fit.add_argument("--limit", type=int, help="context limit in tokens (default: the model's)")
    fit.add_argument("--reserve", type=int, help="response reserve in tokens (default: the model's max output)")
    fit.add_argument("--tool-result-cap", type=int, metavar="TOKENS",
                     help="send a tool result over this many tokens as its head and tail with a marker "
                     "naming what was cut (every strategy; default off; 2500 is a good start)")
    fit.add_argument("--format", help="the input format, when detection should not guess")
    fit.add_argument("--json", action="store_true",
                     help="print each plan as JSON, keyed by strategy (with --recommend: the recommendation alone)")
    fit.add_argument("--recommend", action="store_true",
                     help="print only the recommendation for the latest request: which strategy to ship, what it "
                     "loses, its cost at volume")
    _fact_flag(fit)
    _volume_flags(fit)
    fit.set_defaults(run=_fit)

    replaying = commands.add_parser("replay", help="replay a conversation turn by turn under each strategy: cost, cache, facts")
    replaying.add_argument("file", help="a conversation file (- for standard input)")
    replaying.add_argument("--model", help="model id or alias (default: the file's model, else gpt-4o)")
    replaying.add_argument("--strategy", default="all",
                           help=f"a strategy name, or 'all' (default) for the built-ins: {builtins}")
    replaying.add_argument("--stable-prefix", action="store_true",
                           help="also replay truncate, summarize and clear-tool-results with stable_prefix")
    _fact_flag(replaying)
    replaying.add_argument("--limit", type=int, help="context limit in tokens (default: the model's)")
    replaying.add_argument("--reserve", type=int, help="response reserve in tokens (default: the model's max output)")
    replaying.add_argument("--tool-result-cap", type=int, metavar="TOKENS",
                           help="send a tool result over this many tokens as its head and tail with a marker "
                           "naming what was cut (every strategy; default off; 2500 is a good start)")
    replaying.add_argument("--format", help="the input format, when detection should not guess")
    replaying.add_argument("--requests", action="store_true",
                           help="also list each request (user turns and tool rounds) with its cache reads, writes, "
                           "why the cache missed, and cost")
    replaying.add_argument("--json", action="store_true", help="print the whole replay as JSON")
    _volume_flags(replaying)
    replaying.set_defaults(run=_replay)

    models = commands.add_parser("models", help="list the model catalog")
    models.set_defaults(run=_models)

    calibrate = commands.add_parser("calibrate", help="the provider-reported prompt tokens against ours, per model")
    calibrate.add_argument("--db", help="SQLite file or database URL (default: $CONTEXTFIT_DB, else contextfit.db)")
    calibrate.add_argument("--json", action="store_true", help="print the rows as JSON")
    calibrate.set_defaults(run=_calibrate)

    serve = commands.add_parser("serve", help="start the HTTP API (/api/v2)")
    serve.add_argument("--host", default="127.0.0.1", help="address to listen on (default 127.0.0.1, this machine only)")
    serve.add_argument("--port", type=int, default=8000, help="port (default 8000)")
    serve.add_argument("--db", help="SQLite file or database URL (default: $CONTEXTFIT_DB, else contextfit.db)")
    serve.add_argument("--workers", "--processes", dest="processes", type=int, default=1, metavar="N",
                       help="API worker processes sharing the port (default 1; --threads is the planning threads of each)")  # fmt: skip
    serve.add_argument("--allowed-host", action="append", default=[], metavar="NAME",
                       help="another Host name to answer (repeatable); 127.0.0.1, localhost, [::1] and --host always are")  # fmt: skip
    serve.add_argument("--api-key", help="require this key on every request (prefer $CONTEXTFIT_API_KEY: "
                       "a command line is visible to other users)")  # fmt: skip
    serve.add_argument("--insecure-no-auth", action="store_true",
                       help="listen beyond this machine without an API key (anyone who reaches it can read every chat)")  # fmt: skip
    limits = serve.add_argument_group("limits (defaults and meaning: docs/operations.md, Limits)")
    for flag, kind, field, text in _LIMIT_FLAGS:
        limits.add_argument(flag, type=kind, dest=field, metavar="N", help=text)
    serve.set_defaults(run=_serve)

    dashboard = commands.add_parser("dashboard", help="start the Streamlit dashboard (same as make run)")
    dashboard.add_argument("--port", type=int, default=8501)
    dashboard.set_defaults(run=_dashboard)
    return top


def _fact_flag(command: argparse.ArgumentParser) -> None:
    command.add_argument("--fact", action="append", metavar="TEXT",
                         help="a must-survive fact: text, /regex/flags, or a JSON object such as "
                         "'{\"text\": \"ORD-7731\", \"message\": 3}' (pinned to a message); repeatable; "
                         "default: what the conversation marks (pins, names, required lore, quoted tool results, "
                         "what the latest turns refer back to)")


def _volume_flags(command: argparse.ArgumentParser) -> None:
    command.add_argument("--priority", choices=PRIORITIES, default=PRIORITIES[0],
                         help="what the recommendation favours: " + "; ".join(
                             f"{name}: {words}" for name, words in PRIORITY_WORDS.items()) + f" (default {PRIORITIES[0]})")
    command.add_argument("--conversations-per-day", type=_whole, default=DEFAULT_CONVERSATIONS_PER_DAY, metavar="N",
                         help=f"the volume a month's cost is shown for (default {DEFAULT_CONVERSATIONS_PER_DAY:,})")


def _whole(text: str) -> int:
    value = int(text)
    if value < 0:
        raise argparse.ArgumentTypeError(f"must be 0 or more, got {value}")
    return value


def main(argv: Sequence[str] | None = None, out: TextIO | None = None) -> int:
    """Run the command line; returns the exit status."""
    args = parser().parse_args(argv)
    try:
        return args.run(args, out or sys.stdout)
    except ContextfitError as exc:
        where = getattr(exc, "location", None)
        print(f"contextfit: {exc.code}: {exc}" + (f" (at {where})" if where else ""), file=sys.stderr)
        return 2
    except BrokenPipeError:  # the reader of the output left (``| head``): not an input it could not read
        _silence_stdout()
        return 1
    except OSError as exc:
        print(f"contextfit: cannot read {getattr(exc, 'filename', '') or 'the input'}: {exc.strerror or exc}", file=sys.stderr)
        return 2



def _silence_stdout() -> None:
    """Point standard output at the null device, so that flushing it at exit raises nothing more
    (the way the Python documentation handles SIGPIPE)."""
    try:
        devnull = os.open(os.devnull, os.O_WRONLY)
        os.dup2(devnull, sys.stdout.fileno())
    except (OSError, ValueError):  # no real file behind sys.stdout: nothing will be flushed to a pipe
        pass


if __name__ == "__main__":  # pragma: no cover
    sys.exit(main())
