"""``python -m bench.retention`` (``make retention``): how well each strategy keeps what a conversation depends on.

    .venv/bin/python -m bench.retention                 # the protocol, the held-out seeds, the real chats
    .venv/bin/python -m bench.retention --lengths 50 --seeds 1 --no-held-out --no-real   # a smoke run

The protocol (docs/retention.md, ``contextfit/retention``): seeded synthetic
agent conversations of 50, 200 and 1,000 turns with planted facts, fitted on
gpt-4o (o200k_base, exact) at 10%, 15% and 25% of each conversation's
tokens, every fact scored on the provider messages sent at the request that
asks about it. Prints the table (strategy × budget × fact kind: retention,
tokens sent, cost per 1,000 conversations), the same at 15% on the held-out
seeds, truncate's check against the published 14.3%, where the facts land
in the prompt (start, middle, end), and retention on the
shared real chats (joined end to end into long chats; skipped when the
fixtures folder is absent). Writes ``bench/results/retention.json``, and every
measurement of the protocol into ``contextfit/data/retention.json``
(:mod:`contextfit.retention.results`), which the dashboard's Retention view
reads: a full run only (``--results`` writes it elsewhere, a smoke run nowhere).
"""

from __future__ import annotations

import argparse
import json
import os
import sys
from pathlib import Path
from time import perf_counter

from contextfit.replays.facts import contains_word
from contextfit.retention import results, runner

from bench import retention_chats as real_chats
from contextfit.retention.scoring import sent_texts

from .conversations import FIXTURES, stitched

OUT = Path(__file__).resolve().parent / "results"
#: The published figures the protocol follows (clawRxiv 2604.01047).
PUBLISHED_TRUNCATE = results.PUBLISHED_TRUNCATE
PUBLISHED_BEST = 0.886
#: Real chats: the fixtures joined end to end, cut after this many user requests.
REAL_TURNS = (60, 150)


def _ints(text: str) -> tuple[int, ...]:
    return tuple(int(part) for part in text.split(",") if part)


def _parser() -> argparse.ArgumentParser:
    parser = argparse.ArgumentParser(prog="python -m bench.retention", description=__doc__.split("\n")[0])
    parser.add_argument("--lengths", type=_ints, default=runner.LENGTHS, help="conversation turns, e.g. 50,200,1000")
    parser.add_argument("--seeds", type=_ints, default=runner.SEEDS, help="the seeds reported (default 1,2,3)")
    parser.add_argument("--held-out", type=_ints, default=runner.HELD_OUT_SEEDS, help="held-out seeds (101,102,103)")
    parser.add_argument("--no-held-out", action="store_true", help="skip the held-out seeds")
    parser.add_argument("--no-real", action="store_true", help="skip the real chats")
    parser.add_argument("--out", type=Path, default=OUT, help="where retention.json goes")
    parser.add_argument("--results", type=Path, default=None,
                        help=f"where the measurements go (default: {results.RESULTS.name} in the package data, "
                        "on a run with the protocol's own lengths and seeds)")
    return parser


def first_plantings(lengths, seeds) -> tuple[int, int]:
    """truncate at 15%: how many facts' first value (planted uniformly, as the published protocol plants its
    needles) is in what is sent, of how many — the check against the published 14.3%."""
    from contextfit.pipeline.plan import plan_prepared, prepare
    from contextfit.pipeline.settings import PlanSettings
    from contextfit.retention.protocol import generate
    from contextfit.tokens.chat_counter import token_counter

    counter = token_counter(runner.MODEL)
    found = total = 0
    for turns in lengths:
        for seed in seeds:
            conversation = generate(turns, seed)
            messages = list(conversation.messages)
            settings = PlanSettings(model=runner.MODEL, context_limit=int(runner.HEADLINE_SHARE * counter(messages)),
                                    response_reserve=0)
            plan = plan_prepared(prepare(messages, settings), settings, "truncate")
            text = "\n".join(sent_texts(plan.provider_messages, plan.provider_system))
            for fact in conversation.facts:
                found += contains_word(text, fact.values[0][0])
                total += 1
    return found, total


#: The strategies whose placement the bench prints (the headline rows).
PLACED = ("truncate", "summarize", "clear-tool-results", "fact-ledger")


def placements(lengths, seeds, labels=PLACED) -> dict[str, dict[str, int]]:
    """At 15%: where each planted fact's current value lands in what each strategy sends (thirds of the
    prompt, ``contextfit.replays.placement``), and how many of the prompts pass the model's published
    effective context (``contextfit.tokens.effective``)."""
    from contextfit.pipeline.plan import plan_prepared, prepare
    from contextfit.pipeline.settings import PlanSettings
    from contextfit.replays.placement import fact_placement
    from contextfit.retention.protocol import generate
    from contextfit.tokens.chat_counter import token_counter

    counter = token_counter(runner.MODEL)
    variants = [variant for variant in runner.VARIANTS if variant.label in labels]
    tally = {variant.label: {"start": 0, "middle": 0, "end": 0, "notSent": 0, "prompts": 0, "pastEffective": 0}
             for variant in variants}
    for turns in lengths:
        for seed in seeds:
            conversation = generate(turns, seed)
            messages = list(conversation.messages)
            budget = int(runner.HEADLINE_SHARE * counter(messages))
            settings = PlanSettings(model=runner.MODEL, context_limit=budget, response_reserve=0)
            prepared = prepare(messages, settings)
            values = list(dict.fromkeys(fact.current for fact in conversation.facts))
            for variant in variants:
                plan = plan_prepared(prepared, settings.replace(**variant.resolved(budget)), variant.strategy)
                counts = tally[variant.label]
                for where, count in fact_placement(plan, values).counts().items():
                    counts[where] += count
                counts["prompts"] += 1
                counts["pastEffective"] += bool(plan.effective_context and plan.effective_context.exceeded)
    return tally


def main(argv: list[str] | None = None) -> int:
    args = _parser().parse_args(argv)
    started = perf_counter()
    out: dict = {"model": runner.MODEL, "lengths": list(args.lengths), "shares": list(runner.SHARES),
                 "seeds": list(args.seeds)}
    measured = runner.measure(args.lengths, runner.SHARES, args.seeds)
    rows = runner.rows_of(measured)
    out["rows"] = [row.to_dict() for row in rows]
    print(f"## Retention protocol: {len(args.lengths)} lengths ({', '.join(map(str, args.lengths))} turns) × "
          f"seeds {', '.join(map(str, args.seeds))}, {runner.MODEL} (o200k_base, exact)\n")
    print(runner.markdown_table(rows))
    print("\nAt 15%, by where the fact's current value was set (quarters of the conversation):\n")
    print("| strategy | 1st | 2nd | 3rd | 4th | by length |")
    print("|---|---:|---:|---:|---:|---|")
    for label in ("truncate", "summarize", "clear-tool-results", "fact-ledger"):
        quarters = runner.by_position(measured, label, runner.HEADLINE_SHARE)
        lengths = runner.by_length(measured, label, runner.HEADLINE_SHARE)
        cells = " | ".join("–" if q is None else f"{q:.0%}" for q in quarters)
        print(f"| {label} | {cells} | {', '.join(f'{t}: {v:.0%}' for t, v in lengths.items())} |")
    placed = placements(args.lengths, args.seeds)
    out["placement"] = placed
    print("\nAt 15%, where each fact's current value lands in what is sent (thirds of the prompt, by the token "
          "offset of its first occurrence):\n")
    print(f"| strategy | start | middle | end | not sent | prompts past {runner.MODEL}'s effective context |")
    print("|---|---:|---:|---:|---:|---:|")
    for label, counts in placed.items():
        print(f"| {label} | {counts['start']} | {counts['middle']} | {counts['end']} | {counts['notSent']} | "
              f"{counts['pastEffective']} of {counts['prompts']} |")
    found, total = first_plantings(args.lengths, args.seeds)
    out["truncateFirstPlantings"] = {"found": found, "total": total, "published": PUBLISHED_TRUNCATE}
    print(f"\nCheck against the published protocol: truncate at 15% sends the first value of {found} of {total} "
          f"facts ({found / total:.1%}; published for naive truncation: {PUBLISHED_TRUNCATE:.1%}).")
    held_measured: list = []
    if not args.no_held_out:
        held_measured = runner.measure(args.lengths, (runner.HEADLINE_SHARE,), args.held_out)
        held = runner.rows_of(held_measured)
        out["heldOut"] = {"seeds": list(args.held_out), "rows": [row.to_dict() for row in held]}
        print(f"\n## Held-out seeds {', '.join(map(str, args.held_out))} (never used to tune anything), 15%\n")
        print(runner.markdown_table(held))
    if not args.no_real:
        chats = [(f"fixtures joined, {turns} requests", stitched(turns, FIXTURES)) for turns in REAL_TURNS]
        chats = [(name, chat.messages) for name, chat in chats if chat is not None]
        if not chats:
            print(f"\n(The real chats are skipped: {FIXTURES} is not there.)")
        else:
            real = real_chats.chat_rows(chats)
            out["realChats"] = [row.to_dict() for row in real]
            print("\n## Real chats (shared fixtures joined end to end), default must-survive facts, every turn replayed\n")
            print(real_chats.markdown_table(real))
    target = args.results
    if target is None and tuple(args.lengths) == runner.LENGTHS and tuple(args.seeds) == runner.SEEDS \
            and not args.no_held_out and tuple(args.held_out) == runner.HELD_OUT_SEEDS:
        target = results.RESULTS  # the protocol as published: what the dashboard shows
    if target is not None:
        results.write(target, measured, lengths=args.lengths, shares=runner.SHARES, seeds=args.seeds,
                      variants=[variant.label for variant in runner.VARIANTS], held_out=held_measured,
                      held_out_seeds=() if args.no_held_out else args.held_out, first_plantings=(found, total))
        print(f"wrote {target}", file=sys.stderr)
    elapsed = perf_counter() - started
    out["elapsedSeconds"] = elapsed
    out["loadAverage"] = os.getloadavg()
    print(f"\n{elapsed:.0f} s on {os.cpu_count()} cores (load average {os.getloadavg()[0]:.2f}).")
    args.out.mkdir(parents=True, exist_ok=True)
    (args.out / "retention.json").write_text(json.dumps(out, indent=1))
    print(f"wrote {args.out / 'retention.json'}", file=sys.stderr)
    return 0


if __name__ == "__main__":
    sys.exit(main())
