"""Small inputs that took a whole server: each refused or counted, with memory bounded, on every face.

Measured before these bounds (``python -m bench.hostile``, the 2-CPU VM, under a
4 GB address-space cap): the 24-character lorebook key ``/(?:a{999999}){999999}/``
peaked at 2.6-3.8 GB (no cap: 24 GB); an 83 KB preview with a 3,000-character
user name and ``{{user}}`` ten thousand times at 1.7 GB; a 320 KB one with a
256-character name at 0.74 GB; a million blanks made the qwen, deepseek and
mistral-tekken previews answer 500, and ``contextfit fit`` print a Rust panic.

Each case runs in a fresh interpreter under a 4 GB address-space cap (so a
regression fails here rather than taking the machine), and its peak resident
set is read from ``/proc/self/status`` (VmHWM): the growth past the warmed-up process
(API, library) or the whole CLI process is held to a bound far below the
figures above. Nothing here times anything.
"""

from __future__ import annotations

import json
import resource
import subprocess
import sys
import textwrap

import pytest

from support.paths import REPO
from contextfit import limits

CAP_BYTES = 4 * 1024**3
KEY_BOMB = "/(?:a{999999}){999999}/"
LOREBOOK = {"entries": {"0": {"uid": 0, "key": [KEY_BOMB, "forest"], "content": "The forest is old."}}}
USER = {"role": "user", "content": "Tell me about the forest."}
MACRO_BOMB = [{"role": "system", "content": "You are {{char}}."}, {"role": "user", "content": "{{user}}" * 10_000}]
GROWTH_BOMB = [{"role": "user", "content": "{{user}}" * 40_000}]
#: Peak growth allowed past a warmed-up process (a preview of a 1 MB message costs about 100 MB).
GROWTH_MB = 250
#: Peak of a whole `contextfit fit` process (it starts at about 100 MB).
CLI_MB = 400


# The process's own peak (VmHWM): ru_maxrss would carry over the parent's from before exec.
_PEAK = ("def _peak_kb():\n"
         "    return int(next(line for line in open('/proc/self/status') if line.startswith('VmHWM:')).split()[1])\n")


def _capped() -> None:
    resource.setrlimit(resource.RLIMIT_AS, (CAP_BYTES, CAP_BYTES))


def measured(setup: str, run: str) -> dict:
    """``run`` (an expression) after ``setup``, in a fresh capped interpreter: its outcome and peak growth in MB."""
    script = _PEAK + textwrap.dedent(setup) + textwrap.dedent(f"""
        import json as _json
        _before = _peak_kb()
        try:
            _outcome = {run}
        except Exception as _exc:
            _outcome = {{"error": type(_exc).__name__, "code": getattr(_exc, "code", None), "message": str(_exc)[:600]}}
        print(_json.dumps({{"outcome": _outcome, "growth_mb": (_peak_kb() - _before) / 1024}}))
    """)
    done = subprocess.run([sys.executable, "-"], input=script, capture_output=True, text=True, timeout=600,
                          preexec_fn=_capped, cwd=REPO)
    assert done.returncode == 0, done.stderr[-2000:]
    return json.loads(done.stdout.strip().splitlines()[-1])


LIBRARY = """
    import contextfit
    contextfit.plan_prompt([{"role": "user", "content": "warm up"}], model="gpt-4o",
                           lorebook={"entries": {"0": {"key": ["/war+m/"], "content": "x"}}})
"""

API = """
    import json, tempfile, os
    from fastapi.testclient import TestClient
    from contextfit.serving.api import create_app
    from contextfit.serving.api.guard import LOOPBACK_HOSTS
    from contextfit.serving.providers import EchoProvider
    from contextfit.serving.store import open_store
    store = open_store(os.path.join(tempfile.mkdtemp(), "hostile.db"))
    client = TestClient(create_app(store, {"echo": EchoProvider()}, hosts=[*LOOPBACK_HOSTS, "testserver"]),
                        base_url="http://127.0.0.1", raise_server_exceptions=False).__enter__()
    def preview(body):
        response = client.post("/api/v2/context-preview", json=body)
        return {"status": response.status_code, "body": response.json()}
    for model in %s:
        preview({"model": model, "messages": [{"role": "user", "content": "warm up " * 2000}],
                 "lorebook": {"entries": {"0": {"key": ["/war+m/"], "content": "x"}}}})
"""


def api_setup(*models: str) -> str:
    return API % (list(models) or ["gpt-4o"],)


#: ``python -m contextfit ARGS...`` that writes its own peak RSS (KB) to the file named first.
_CLI = (_PEAK + "import runpy, sys\n"
        "peak, sys.argv = sys.argv[1], ['contextfit', *sys.argv[2:]]\n"
        "try:\n"
        "    runpy.run_module('contextfit', run_name='__main__', alter_sys=True)\n"
        "finally:\n"
        "    open(peak, 'w').write(str(_peak_kb()))\n")


def cli(tmp_path, document: object, *args: str) -> tuple[subprocess.CompletedProcess, float]:
    """``contextfit fit`` on ``document`` in a capped process: its result and its peak RSS in MB."""
    path, peak = tmp_path / "input.json", tmp_path / "peak"
    path.write_text(json.dumps(document))
    done = subprocess.run([sys.executable, "-c", _CLI, str(peak), "fit", str(path), *args], capture_output=True,
                          text=True, timeout=600, preexec_fn=_capped, cwd=REPO)
    return done, int(peak.read_text()) / 1024


def assert_clean(done: subprocess.CompletedProcess) -> None:
    assert "Traceback" not in done.stderr and "panicked" not in done.stderr, done.stderr[-1500:]


# -- the lorebook key that compiled into gigabytes ------------------------------------


def test_the_key_bomb_is_refused_in_the_library_with_memory_bounded() -> None:
    found = measured(LIBRARY, f"""[d["code"] for d in contextfit.plan_prompt([{USER!r}], model="gpt-4o",
                                   lorebook={LOREBOOK!r}).diagnostics]""")
    assert "LOREBOOK_KEY_TOO_LARGE" in found["outcome"]
    assert found["growth_mb"] < GROWTH_MB, found


def test_the_key_bomb_is_refused_by_the_preview_endpoint_with_memory_bounded() -> None:
    found = measured(api_setup(), f"preview({{'model': 'gpt-4o', 'messages': [{USER!r}], 'lorebook': {LOREBOOK!r}}})")
    answer = found["outcome"]
    assert answer["status"] == 200
    assert "LOREBOOK_KEY_TOO_LARGE" in [d["code"] for d in answer["body"]["diagnostics"]]
    assert any(block["kind"] == "lorebook" for block in answer["body"]["blocks"])  # its plain key still woke it
    assert found["growth_mb"] < GROWTH_MB, found


def test_the_key_bomb_is_refused_by_the_cli_with_memory_bounded(tmp_path) -> None:
    done, peak_mb = cli(tmp_path, {"contextfit": "conversation", "messages": [USER], "lorebook": LOREBOOK},
                        "--strategy", "truncate")
    assert done.returncode == 0, done.stderr
    assert "note: LOREBOOK_KEY_TOO_LARGE" in done.stdout
    assert_clean(done)
    assert peak_mb < CLI_MB


def test_a_key_with_groups_in_a_repeat_keeps_no_capture_history() -> None:
    # Where a key matches is all that is used: its groups are compiled non-capturing, so a search
    # of a million characters does not keep a million captures per group (273 MB within 0.25 s).
    book = {"entries": {"0": {"uid": 0, "key": ["/((((((((((a))))))))))+/"], "content": "Lore."}}}
    found = measured(LIBRARY, f"""[b.kind for b in contextfit.plan_prompt([{{"role": "user", "content": "a" * 1_000_000}}],
                                   model="gpt-4o", lorebook={book!r}, context_limit=400_000).blocks]""")
    assert "lorebook" in found["outcome"]
    assert found["growth_mb"] < 60, found


# -- {{user}} ten thousand times --------------------------------------------------------


def test_the_macro_bombs_are_refused_by_the_preview_endpoint_with_memory_bounded() -> None:
    found = measured(api_setup(), f"""[preview({{"model": "gpt-4o", "messages": {MACRO_BOMB!r},
                                                 "settings": {{"userName": "N" * 3000}}}}),
                                       preview({{"model": "gpt-4o", "messages": {GROWTH_BOMB!r},
                                                 "settings": {{"userName": "N" * 256, "contextLimit": 20000000,
                                                               "responseReserve": 1000}}}})]""")
    long_name, many_macros = found["outcome"]
    assert long_name["status"] == 422 and long_name["body"]["error"]["code"] == "INVALID_SETTINGS"
    assert "userName" in long_name["body"]["error"]["message"]
    assert many_macros["status"] == 422 and many_macros["body"]["error"]["code"] == "INVALID_SETTINGS"
    assert f"more than the {limits.MAX_MACRO_GROWTH:,} allowed" in many_macros["body"]["error"]["message"]
    assert "messages[0].content adds" in many_macros["body"]["error"]["message"]
    assert found["growth_mb"] < GROWTH_MB, found


def test_the_macro_bomb_is_refused_by_the_library_and_the_cli(tmp_path) -> None:
    found = measured(LIBRARY, f"""contextfit.plan_prompt({GROWTH_BOMB!r}, model="gpt-4o", user_name="N" * 256,
                                                        context_limit=20_000_000, response_reserve=1000)""")
    assert found["outcome"]["code"] == "INVALID_SETTINGS" and found["growth_mb"] < GROWTH_MB, found
    done, peak_mb = cli(tmp_path, {"contextfit": "conversation", "messages": MACRO_BOMB,
                                   "settings": {"userName": "N" * 3000}})
    assert done.returncode != 0 and "INVALID_SETTINGS" in done.stderr and "userName" in done.stderr
    assert_clean(done)
    assert peak_mb < CLI_MB


# -- a million blanks -------------------------------------------------------------------

#: A catalog model for every exact open profile.
MODELS = {"llama-3.1-8b": "llama3", "llama-4-scout": "llama4", "qwen2.5-72b": "qwen", "qwen3-32b": "qwen3",
          "mistral-large": "mistral", "mistral-small": "mistral-tekken", "deepseek-v3": "deepseek",
          "gpt-4o": "o200k_base", "gpt-4": "cl100k_base"}
BLANKS = "word " + " \t" * 500_000 + "1"


def test_a_million_blanks_preview_for_every_exact_profile_with_its_count() -> None:
    from contextfit.tokens.chat_counter import token_counter
    from contextfit.tokens.tokenizers import get_tokenizer

    found = measured(api_setup(*MODELS), f"""[preview({{"model": model, "messages": [{{"role": "user", "content": text}}],
                                                        "settings": {{"contextLimit": 3000000, "responseReserve": 1000}}}})
                                              for model in {list(MODELS)!r} for text in ({BLANKS!r}, " " * 1_000_000)]""")
    answers = iter(found["outcome"])
    for model, profile in MODELS.items():
        for _text in (BLANKS, " " * 1_000_000):
            answer = next(answers)
            assert answer["status"] == 200, (model, answer["body"])
            body = answer["body"]
            assert body["tokenizer"] == {"profile": profile, "approximate": get_tokenizer(profile).approximate}
            assert body["promptTokens"] == token_counter(model)(body["providerMessages"]), model  # the library's count


@pytest.mark.parametrize(("model", "text"), [("qwen2.5-72b", " " * 1_000_000 + "x"), ("deepseek-v3", "\x00" * 1_000_000),
                                             ("mistral-small", "x" + "\t" * 1_000_000 + "x")])
def test_a_million_blanks_through_the_cli(tmp_path, model: str, text: str) -> None:
    done, peak_mb = cli(tmp_path, {"messages": [{"role": "user", "content": text}]}, "--model", model, "--limit",
                        "3000000", "--reserve", "1000", "--strategy", "truncate", "--json")
    assert done.returncode == 0, done.stderr[-1500:]
    assert_clean(done)
    assert json.loads(done.stdout)["truncate"]["promptTokens"] > 0
    assert peak_mb < CLI_MB


# -- a JSON list over the message limit ------------------------------------------------


def test_the_cli_names_the_first_message_over_the_limit_of_a_json_list(tmp_path) -> None:
    done, _ = cli(tmp_path, [{"role": "user", "content": "hi"}] * (limits.MAX_MESSAGES + 1))
    assert done.returncode != 0 and f"$[{limits.MAX_MESSAGES}]" in done.stderr, done.stderr[-500:]
    assert_clean(done)
