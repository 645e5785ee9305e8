"""Turning a run into numbers people read: ratios, targets, Markdown, a chart."""

from __future__ import annotations

import statistics
from pathlib import Path
from typing import Any

from .contenders import LANGCHAIN_OPTIONS
from .oracle import RULES, correct
from .run import LANGCHAIN_CAP, Case, Options, Row

# The main bench's targets.
FLOOR_RATIO = 1.3
LANGCHAIN_SPEEDUP = 20.0
WARM_SHARE = 0.02
MEMORY_RATIO = 1.5
TARGET_SIZE, MEMORY_SIZE = 10_000, 50_000

# Like with like: the lean fit, which counts only what it keeps, against LangChain
# with a memoized counter (the speed-up target); the fits that count every block
# against LangChain recounting every list it is given.
LIKE_FOR_LIKE = (
    ("contextfit truncate lazy cold", "langchain trim_messages memoized", True),
    ("contextfit truncate cold", "langchain trim_messages uncached", False),
)


# The judge's counting rules, short enough for a table header (oracle.RULES in full).
RULES_SHORT = "o200k_base, OpenAI chat format"


def _ok(verdict: dict | None) -> bool | None:
    return None if verdict is None else correct(verdict)


def fastest_cold(case: Case) -> float | None:
    """The fastest median among the cold fits (warm refits and the floor left out)."""
    medians = [row.median for row in case.rows if row.family != "floor" and row.mode != "warm" and row.median]
    return min(medians) if medians else None


def floor_median(case: Case) -> float | None:
    row = case.row("floor (tiktoken)")
    return row.median if row else None


def summary(case: Case, row: Row) -> dict[str, Any]:
    """The numbers of one row, ratios included."""
    floor, fastest = floor_median(case), fastest_cold(case)
    median = row.median
    memory = row.memory or {}
    return {
        "contender": row.contender,
        "median_s": median,
        "min_s": min(row.seconds) if row.seconds else None,
        "max_s": max(row.seconds) if row.seconds else None,
        "runs": len(row.seconds),
        "x_floor": median / floor if median and floor else None,
        "x_fastest_cold": median / fastest if median and fastest else None,
        "peak_mib": memory["peak_kib"] / 1024 if "peak_kib" in memory else None,
        "during_call_mib": memory["during_call_kib"] / 1024 if "during_call_kib" in memory else None,
        "ok": _ok(row.verdict),
    }


# -- targets --------------------------------------------------------------------


def _ratio_of(numerator: Row | None, denominator: Row | None) -> float | None:
    """Ratio of two rows' medians (``None`` when either was not measured)."""
    if numerator is None or denominator is None or not numerator.median or not denominator.median:
        return None
    return numerator.median / denominator.median


def paired_ratio(row: Row | None) -> float | None:
    """The median of each run over the baseline timed just before it (``Row.paired``)."""
    if row is None or not row.paired or len(row.paired) != len(row.seconds):
        return None
    return statistics.median(seconds / base for seconds, base in zip(row.seconds, row.paired) if base)


def _best(numerator: Row | None, denominator: Row | None) -> str:
    """The same ratio from the fastest run of each: less noise, a second opinion."""
    if numerator is None or denominator is None or not numerator.seconds or not denominator.seconds:
        return ""
    return f" (fastest runs: {min(numerator.seconds) / min(denominator.seconds):.3g}×)"


def steady_estimate(case: Case, key: str) -> float | None:
    """A fit's time over the floor's, estimated from the work beyond tokenizing
    (bench/overhead.py): (tokenizing + the fit's other work) / (tokenizing + the floor's)."""
    beyond, floor = case.beyond_tokenizing, case.row("floor (tiktoken)")
    if " lazy" in key:  # it tokenizes only what it keeps: the estimate does not apply
        return None
    if not beyond or key not in beyond or floor is None or not floor.median:
        return None
    tokenizing = floor.median - beyond["floor (tiktoken)"]
    return (tokenizing + beyond[key]) / floor.median


def _steady(case: Case, key: str) -> str:
    estimate = steady_estimate(case, key)
    return "" if estimate is None else f"; from the work beyond tokenizing: {estimate:.2f}×"


def _target(name: str, measured: float | None, limit: float | None, met: bool | None, detail: str) -> dict:
    return {"target": name, "measured": measured, "limit": limit, "met": met, "detail": detail}


def targets(cases: list[Case], options: Options) -> list[dict]:
    """The main bench's targets, each measured in this run (``met`` is ``None`` when not measured)."""
    synthetic = [case for case in cases if case.source["kind"] == "synthetic"]
    out = []
    for case in synthetic:
        if case.size < TARGET_SIZE:
            continue
        floor = case.row("floor (tiktoken)")
        for row in case.rows:
            if row.family == "contextfit" and row.mode == "cold" and row.counts_excluded:
                medians = _ratio_of(row, floor)
                paired = paired_ratio(row)
                ratio = paired if paired is not None else medians
                detail = f"{_ms(row.median)} vs floor {_ms(floor.median if floor else None)}"
                if paired is not None:
                    detail = (f"median of {len(row.paired)} runs each over a floor run just before it; medians: "
                              f"{detail} = {medians:.2f}×" if medians else detail)
                out.append(_target(
                    f"{row.strategy} cold, all counted, {case.size:,} into {case.budget_label}: <= {FLOOR_RATIO}x floor",
                    ratio, FLOOR_RATIO, None if ratio is None else ratio <= FLOOR_RATIO,
                    f"{detail}{_best(row, floor)}{_steady(case, row.contender)}"))
    for case in synthetic:
        if case.size == TARGET_SIZE and case.budget_label == "128k":
            for ours_key, theirs_key, is_target in LIKE_FOR_LIKE:
                ours, theirs = case.row(ours_key), case.row(theirs_key)
                medians, paired = _ratio_of(theirs, ours), paired_ratio(theirs)
                speedup = paired if paired is not None else medians
                name = (f"{ours_key.removeprefix('contextfit ')}, {case.size:,} into 128k, against "
                        f"{theirs_key.removeprefix('langchain trim_messages ')} LangChain")
                detail = (f"{_ms(ours.median if ours else None)} vs LangChain "
                          f"{_ms(theirs.median if theirs else None)}{_best(theirs, ours)}")
                if paired is not None and medians is not None:
                    detail = (f"median of {len(theirs.paired)} LangChain runs each over a contextfit fit timed just "
                              f"before it; medians: {detail.replace(' (', f' = {medians:.1f}× (', 1)}")
                if is_target:
                    out.append(_target(f"{name}: >= {LANGCHAIN_SPEEDUP:g}x faster", speedup, LANGCHAIN_SPEEDUP,
                                       None if speedup is None else speedup >= LANGCHAIN_SPEEDUP, detail))
                else:
                    note = _target(f"{name}: how many times faster", speedup, None, None, detail)
                    note["informational"] = True
                    out.append(note)
    for case in synthetic:
        if case.size != TARGET_SIZE:
            continue
        for cold in case.rows:
            if cold.family != "contextfit" or cold.mode != "cold":
                continue
            warm = case.row(cold.contender.replace(" cold", " warm"))
            medians = _ratio_of(warm, cold)
            paired = paired_ratio(warm)
            share = paired if paired is not None else medians
            detail = f"{_ms(warm.median if warm else None)} vs cold {_ms(cold.median)}"
            if paired is not None and warm is not None:
                detail = (f"median of {len(warm.paired)} refits each over the cold fit just before it; medians: "
                          f"{detail} = {medians:.2%}" if medians else detail)
            if not cold.counts_excluded:
                # The warm target is per strategy (every block counted); the lean
                # mode's refit is reported beside it, against both cold fits.
                counted = case.row("contextfit truncate cold")
                if counted and counted.median and warm and warm.median:
                    detail += f"; {warm.median / counted.median:.2%} of the all-counted truncate cold"
                note = _target(f"{cold.contender.replace(' cold', '')} warm refit vs lazy cold, {case.size:,} into "
                               f"{case.budget_label}", share, None, None, detail)
                note["informational"] = True
                out.append(note)
                continue
            out.append(_target(
                f"{cold.contender.replace(' cold', '')} warm refit, {case.size:,} into {case.budget_label}: "
                f"<= {WARM_SHARE:.0%} of cold",
                share, WARM_SHARE, None if share is None else share <= WARM_SHARE, detail))
    fits = [(case, row) for case in cases for row in case.rows if row.family == "contextfit" and row.verdict]
    bad = [f"{row.contender} on {case.input} into {case.budget_label}: {row.verdict}" for case, row in fits
           if not _ok(row.verdict)]
    out.append(_target("contextfit: never over budget, never a split group, never a lost protected block",
                       len(bad), 0, not bad if fits else None, f"{len(fits) - len(bad)} of {len(fits)} fits judged correct"
                       + ("; " + "; ".join(bad[:5]) if bad else "")))
    measured = False
    for case in synthetic:
        if case.size != MEMORY_SIZE:
            continue
        floor = case.row("floor (tiktoken)")
        floor_peak = (floor.memory or {}).get("peak_kib") if floor else None
        for row in case.rows:
            peak = (row.memory or {}).get("peak_kib")
            if row.family != "contextfit" or row.mode != "cold" or peak is None:
                continue
            measured = True
            ratio = peak / floor_peak if floor_peak else None
            out.append(_target(
                f"{row.strategy}{'' if row.counts_excluded else ' lazy'} cold peak memory, {case.size:,} into "
                f"{case.budget_label}: <= {MEMORY_RATIO}x floor",
                ratio, MEMORY_RATIO, None if ratio is None else ratio <= MEMORY_RATIO,
                f"peak RSS {peak / 1024:.0f} MiB vs floor {floor_peak / 1024 if floor_peak else 0:.0f} MiB; during the call "
                f"+{row.memory['during_call_kib'] / 1024:.0f} MiB vs floor "
                f"+{(floor.memory or {}).get('during_call_kib', 0) / 1024:.0f} MiB"))
    if not measured:
        out.append(_target(f"peak memory at {MEMORY_SIZE:,} messages: <= {MEMORY_RATIO}x floor", None, MEMORY_RATIO, None,
                           "not measured in this mode (run `make bench ARGS=--full`)"))
    return out


# -- Markdown -------------------------------------------------------------------


def _ms(seconds: float | None) -> str:
    if seconds is None:
        return "—"
    if seconds >= 10:
        return f"{seconds:,.1f} s"
    return f"{seconds * 1000:,.1f} ms" if seconds >= 0.0095 else f"{seconds * 1000:,.2f} ms"


def _ratio(value: float | None) -> str:
    if value is None:
        return "—"
    return f"{value:,.1f}×" if value >= 10 else f"{value:.2f}×"


def _flag(verdict: dict | None, key: str) -> str:
    if verdict is None or verdict.get("error"):
        return "—"
    value = verdict[key]
    if isinstance(value, bool):
        return "**yes**" if value else "no"
    return f"**{value}**" if value else "0"


def _memory(summary_row: dict, row: Row) -> str:
    if row.memory and row.memory.get("over_cap"):
        return "> cap"
    if row.memory and row.memory.get("error"):
        return "error"
    if summary_row["peak_mib"] is None:
        return "—"
    return f"{summary_row['peak_mib']:,.0f} (+{summary_row['during_call_mib']:,.0f})"


def _time_cell(row: Row, cap: float) -> str:
    if row.skipped and not row.over_cap:
        return "not run"
    if row.error:
        return "error"
    if row.over_cap and not row.seconds:
        return f"> {cap:g} s"
    return _ms(row.median)


def case_table(case: Case, options: Options) -> str:
    """One case as a Markdown table."""
    lines = [
        "| contender | median | min–max | runs | × floor | × fastest cold fit | peak RSS MiB (+ in call) "
        f"| over budget? (judge: {RULES_SHORT}) | split groups | protected lost | note |",
        "|---|--:|--:|--:|--:|--:|--:|:-:|:-:|:-:|---|",
    ]
    for row in case.rows:
        numbers = summary(case, row)
        cap = max(options.cap, LANGCHAIN_CAP) if row.family == "langchain" else options.cap
        spread = f"{_ms(numbers['min_s'])}–{_ms(numbers['max_s'])}" if numbers["runs"] > 1 else ""
        note = row.skipped or row.error or ((row.verdict or {}).get("error") or "")
        if row.over_cap and not row.skipped:
            note = "stopped at the cap" + (f" after {len(row.seconds)} runs" if row.seconds else "")
        if row.verdict and row.verdict.get("lost_kinds"):
            lost = ", ".join(f"{count} {kind}" for kind, count in sorted(row.verdict["lost_kinds"].items()))
            note = (note + "; " if note else "") + f"lost: {lost}"
        if row.verdict and row.verdict.get("note"):
            note = (note + "; " if note else "") + row.verdict["note"]
        if row.verdict and row.verdict.get("over_budget"):
            note = (note + "; " if note else "") + f"over by {row.verdict['tokens'] - case.budget:,} tokens"
        if row.verdict and row.verdict.get("altered"):
            note = (note + "; " if note else "") + f"{row.verdict['altered']} message(s) shortened or merged"
        lines.append(
            f"| {row.contender} | {_time_cell(row, cap)} | {spread} | {numbers['runs']} | {_ratio(numbers['x_floor'])} "
            f"| {_ratio(numbers['x_fastest_cold'])} | {_memory(numbers, row)} | {_flag(row.verdict, 'over_budget')} "
            f"| {_flag(row.verdict, 'split_groups')} | {_flag(row.verdict, 'lost_protected')} | {note} |"
        )
    return "\n".join(lines)


def beyond_table(case: Case) -> str:
    """bench/overhead.py's numbers for one case, with the estimate they give."""
    beyond = case.beyond_tokenizing
    if not beyond:
        return ""
    lines = ["| contender | work beyond tokenizing | estimated × floor |", "|---|--:|--:|"]
    for key, seconds in beyond.items():
        estimate = steady_estimate(case, key)
        lines.append(f"| {key} | {_ms(seconds)} | {_ratio(estimate)} |")
    return "\n".join(lines)


def fixtures_table(cases: list[Case], label: str) -> str:
    """All fixture cases of one budget, one line per contender: total time and failures."""
    chosen = [case for case in cases if case.source["kind"] == "fixture" and case.budget_label == label]
    if not chosen:
        return ""
    lines = ["| contender | total of medians | fixtures judged | over budget (most over) | split a group "
             "| lost a protected block | errors and notes |",
             "|---|--:|--:|--:|--:|--:|---|"]
    for row0 in chosen[0].rows:
        rows = [case.row(row0.contender) for case in chosen]
        rows = [row for row in rows if row is not None]
        total = sum(row.median or 0 for row in rows)
        verdicts = [row.verdict for row in rows if row.verdict]
        judged = [v for v in verdicts if not v.get("error")]
        errors = {(row.error or (row.verdict or {}).get("error") or row.skipped or "")[:80] for row in rows}
        errors |= {(row.verdict or {}).get("note") or "" for row in rows}
        errors = sorted(errors - {""})
        overs = [v["tokens"] - case.budget for case, v in zip(chosen, (row.verdict for row in rows))
                 if v and not v.get("error") and v["over_budget"]]
        over = f"{len(overs)} (+{max(overs):,})" if overs else "0"
        lines.append(
            f"| {row0.contender} | {_ms(total) if any(row.seconds for row in rows) else '—'} | {len(judged) if verdicts else '—'} "
            f"| {over if verdicts else '—'} | {sum(bool(v['split_groups']) for v in judged) if verdicts else '—'} "
            f"| {sum(bool(v['lost_protected']) for v in judged) if verdicts else '—'} | {'; '.join(errors)} |"
        )
    return "\n".join(lines)


def targets_table(found: list[dict]) -> str:
    lines = ["| target | measured | met? | detail |", "|---|--:|:-:|---|"]
    for target in found:
        measured = target["measured"]
        if measured is None:
            shown = "—"
        elif "LangChain" in target["target"]:
            shown = f"{measured:,.1f}×"
        elif "warm" in target["target"]:
            shown = f"{measured:.2%}"
        elif isinstance(measured, int):
            shown = str(measured)
        else:
            shown = f"{measured:.2f}×"
        met = "not a target" if target.get("informational") else {True: "yes", False: "**no**", None: "—"}[target["met"]]
        lines.append(f"| {target['target']} | {shown} | {met} | {target['detail']} |")
    return "\n".join(lines)


def _runs_text(options: Options) -> str:
    sizes = sorted(options.sizes)
    return ", ".join(f"{options.runs_for(size)} times at {size:,}" for size in sizes)


def markdown(options: Options, cases: list[Case], info: dict, found: list[dict], command: str) -> str:
    """The whole report."""
    versions = info["versions"]
    parts = [
        f"# contextfit benchmark ({options.mode})",
        "",
        f"Machine: {info['nproc']} CPUs ({info['cpu']}), Python {info['python']}, tiktoken {versions['tiktoken']}, "
        f"langchain-core {versions['langchain-core'] or 'absent'}, litellm {versions['litellm'] or 'absent'}; "
        f"load average at the start {info['load_average'][0]:.2f}"
        + (f", at the end {info['load_average_end'][0]:.2f}; the run took {info['elapsed_s'] / 60:.1f} minutes"
           if "elapsed_s" in info else "") + ".",
        f"Reproduce: `{command}`.",
        "",
        "Times are medians of interleaved runs (min–max beside them). Timed: the fit call alone. Not timed: "
        "building a fresh counter, converting the dicts to LangChain messages, stripping contextfit's own keys "
        "(`meta`, `pinned`, `id`) for LiteLLM, the first fit of a warm run, the judging. "
        "*Floor*: tiktoken `encode_ordinary` on every message's text once, no fitting. *Cold*: after "
        "`contextfit.caches.clear_caches(vocabularies=False)`, every cache contextfit holds empty but the loaded "
        "vocabulary (which the floor and LangChain use too). *Warm*: the counter fitted the chat without its last "
        "message first; the refit after that message is timed. *Lazy*: `count_excluded=False` (counts only what "
        "it keeps). LangChain: `trim_messages(" + ", ".join(f"{k}={v!r}" for k, v in LANGCHAIN_OPTIONS.items())
        + ")`, as its documentation configures a valid history, with an exact o200k_base counter: *uncached* "
        "recounts every list it is given (like for like with the fits that count every block), *memoized* keeps "
        "a per-message memo keyed by role, name, content and tool calls, empty at the start of each run (like "
        "for like with the lazy fit). "
        "*× fastest cold fit*: against the fastest cold fitter of the case. "
        "Peak memory: VmHWM of a fresh process that generated the chat and ran the contender once "
        "(the peak mark reset just before the call; in brackets, how much the call added). "
        f"Over budget / split groups / protected lost: the judge (bench/oracle.py) recounts what each contender "
        f"would send with one rule for all: {RULES}; groups and protection come from the test suite's independent "
        "oracle. "
        f"LangChain and LiteLLM run in worker processes; a LiteLLM run is stopped at {options.cap:g} s "
        f"(LangChain's safety cap: {max(options.cap, LANGCHAIN_CAP):g} s). The floor and the cold fits run "
        f"{_runs_text(options)}, the warm refits as often; LangChain and LiteLLM at most {options.other_runs} times. "
        "A shared machine drifts by tens of percent within seconds, so the ratio targets pair each run with a "
        "baseline timed just before it (a cold fit with a floor run, a warm refit with its own first, cold fit, "
        "a LangChain run with its like-for-like contextfit fit) "
        "and report the median of those ratios; the ratio of the medians is beside it.",
        "",
        "## Targets",
        "",
        targets_table(found),
        "",
    ]
    for case in cases:
        if case.source["kind"] != "synthetic":
            continue
        agree = "" if case.counter_agrees == case.size else (
            f" The judge's recount differs from contextfit's counter on {case.size - case.counter_agrees} message(s).")
        parts += [
            f"## {case.size:,} messages ({case.tokens:,} tokens) into {case.budget_label} ({case.budget:,} tokens)",
            "",
            f"{case.groups} tool-call groups; protected blocks {case.protected_tokens:,} tokens.{agree}",
            "",
            case_table(case, options),
            "",
        ]
        if case.beyond_tokenizing:
            parts += [
                f"Work beyond tokenizing (the tokenizer replaced by a memo of its answers, {options.overhead_runs} runs; "
                "estimated × floor = (floor − floor's own work + this work) / floor):",
                "",
                beyond_table(case),
                "",
            ]
    for label in ("25%", "128k"):
        table = fixtures_table(cases, label)
        if table:
            count = len([c for c in cases if c.source["kind"] == "fixture" and c.budget_label == label])
            parts += [f"## Real fixtures ({count} chats from ../shared/fixtures) into {label}", "", table, ""]
    return "\n".join(parts)


# -- chart ----------------------------------------------------------------------


def chart(cases: list[Case], options: Options, html: Path) -> list[str]:
    """Median time against conversation size, one line per contender, one panel
    per budget; an HTML file (and a PNG when kaleido works). Returns the files written."""
    import plotly.graph_objects as go
    from plotly.subplots import make_subplots

    synthetic = [case for case in cases if case.source["kind"] == "synthetic"]
    labels = ["25%", "128k"]
    figure = make_subplots(rows=1, cols=2, subplot_titles=[f"budget {label}" for label in labels], shared_yaxes=True)
    names = [row.contender for row in synthetic[0].rows] if synthetic else []
    palette = ["#444", "#1f77b4", "#2ca02c", "#9467bd", "#8c564b", "#17becf", "#1f77b4", "#2ca02c", "#9467bd",
               "#8c564b", "#17becf", "#d62728", "#e377c2", "#ff7f0e"]
    for column, label in enumerate(labels, start=1):
        for number, name in enumerate(names):
            points = [(case.size, case.row(name)) for case in synthetic if case.budget_label == label]
            xs, ys, text, symbols = [], [], [], []
            for size, row in points:
                if row is None:
                    continue
                if row.median is not None:
                    xs.append(size)
                    ys.append(row.median)
                    text.append(_ms(row.median) + (" (then > cap)" if row.over_cap else ""))
                    symbols.append("circle")
                elif row.over_cap:
                    xs.append(size)
                    ys.append(options.cap)
                    text.append(f"> {options.cap:g} s cap")
                    symbols.append("triangle-up")
            figure.add_trace(
                go.Scatter(
                    x=xs, y=ys, text=text, name=name, legendgroup=name, showlegend=column == 1,
                    mode="lines+markers", marker={"symbol": symbols, "size": 8},
                    line={"color": palette[number % len(palette)],
                          "dash": "dot" if "warm" in name or "memoized" in name else "solid"},
                    hovertemplate="%{x:,} messages: %{text}<extra>" + name + "</extra>",
                ),
                row=1, col=column,
            )
    figure.update_xaxes(type="log", title_text="messages")
    figure.update_yaxes(type="log", title_text="median seconds (log)", col=1)
    figure.update_layout(title=f"contextfit bench ({options.mode}): time against conversation size", height=600)
    html.parent.mkdir(parents=True, exist_ok=True)
    figure.write_html(html, include_plotlyjs=True)
    written = [str(html)]
    try:
        import kaleido  # noqa: F401 - only when it is installed and works offline

        png = html.with_suffix(".png")
        figure.write_image(png)
        written.append(str(png))
    except Exception:  # noqa: BLE001 - a PNG is a nicety; the HTML is the chart
        pass
    return written
