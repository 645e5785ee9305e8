"""contextfit.caches.clear_caches(): one function empties every cache, and no cache escapes the registry."""

from __future__ import annotations

import ast
import asyncio
import importlib
import pkgutil
from pathlib import Path

import pytest
from support.api import FakeProvider

import contextfit
from contextfit import caches
from contextfit.inputs.lorebook import Lorebook, LorebookEntry

PACKAGE = Path(contextfit.__file__).resolve().parent

# Module-level objects that look like caches to the source scan below but are not:
# clearing them would change what the program does, not only how fast.
NOT_CACHES = {
    "process_owner": "this process's identity as the owner of its generations (store recovery relies on it)",
    "_shared": "open database stores with their connections (a resource, one per database; not a memo)",
    "_plugin_errors": "what loading plugins reported (state shown on the Plugins page)",
    "_plugin_cleanups": "undo callables of loaded plugins (state)",
    "_NAMED": "the cache registry itself",
    "MIGRATIONS": "the schema migrations, in order (filled by a decorator at import)",
    "_NFC_CLASS": "the NFC-normalizing tiktoken.Encoding subclass, defined once on first use (a class, not data)",
    "CARRY_TRIMMERS": "functions strategies register at import, one per carried entry of an analysis (code, not data)",
}


def _warm_everything() -> None:
    """Use every cache the package registers (from empty: an earlier test's
    memoized counts would let the warm-up skip a cache)."""
    contextfit.caches.clear_caches()
    history = [{"role": "system", "content": "You are a guide."}]
    for turn in range(30):
        history.append({"role": "user", "content": f"Tell me about the shadow fangs, part {turn}. " * 3})
        history.append({"role": "assistant", "content": f"The forest of Eldoria hides them ({turn}). " * 3})
        if turn % 10 == 0:  # a tool call and its result (summaries read them as lines)
            function = {"name": "lookup", "arguments": '{"q": "fangs"}'}
            call = {"id": f"call_{turn}", "type": "function", "function": function}
            history.append({"role": "assistant", "content": None, "tool_calls": [call]})
            history.append({"role": "tool", "tool_call_id": f"call_{turn}", "content": "Fangs are silver."})
    history.append({"role": "user", "content": "And the needle?"})
    book = Lorebook(entries=(
        LorebookEntry(uid=1, keys=("/shadow ?fangs?/i",), content="Shadow fangs bite."),
        LorebookEntry(uid=2, keys=("needle",), content="A needle is sharp."),
    ))
    for strategy in ("truncate", "summarize", "vector-recall", "fact-ledger"):
        contextfit.plan_prompt(history, model="gpt-4o", context_strategy=strategy, context_limit=600,
                               response_reserve=100, lorebook=book, memory=["The fangs are silver.", "Needles."])
    contextfit.get_tokenizer("gemini").count("12345 apples")  # a digit-splitting profile
    contextfit.get_tokenizer("o200k_base").count("x" + " " * 20_000 + "y")  # a blank run past tiktoken's reach
    from contextfit.serving.providers import http

    http._ssl_context()
    from contextfit.serving.sessions import chat_sessions
    from contextfit.serving.store import Chat
    from contextfit.dashboard.sessions import session_for

    chat_sessions().session_for(Chat("chat_warm", None, None, {}, history, "t0", "t0"))  # the API's sessions
    session_for(contextfit.load_conversation('{"messages": [{"role": "user", "content": "Hi"}]}'))
    from contextfit.dashboard import retention_view
    from contextfit.retention.headline import citation

    retention_view.load()  # the Retention page's measurements
    citation("fact-ledger")  # the protocol's headline the answer cites

    from contextfit.serving import native_count

    with FakeProvider() as fake:  # a provider's token count of a request, cached by its hash
        counter = native_count.NativeCounter("anthropic", fake.url("success", anthropic=True), "key")
        plan = contextfit.plan_prompt([{"role": "user", "content": "Hi"}], model="claude-sonnet-4")
        asyncio.run(native_count.count_plan(plan, {"anthropic": counter}))


def test_clear_caches_empties_every_registered_cache_after_warming():
    _warm_everything()
    warm = caches.entries()
    cold_already = sorted(name for name, size in warm.items() if size == 0)
    assert not cold_already, f"the warm-up does not reach {cold_already}: use them above"
    assert {"relevance.bags", "summarize.text_units", "lorebook.regex_keys", "counting.counter_states",
            "tokenizers.vocabularies", caches.MEMOS} <= set(warm)

    contextfit.caches.clear_caches()

    assert {name: size for name, size in caches.entries().items() if size} == {}


def test_clear_caches_can_keep_the_vocabularies():
    _warm_everything()
    contextfit.caches.clear_caches(vocabularies=False)
    left = {name: size for name, size in caches.entries().items() if size}
    # the loaded vocabularies and their fast counting engines (each 0.1-1.3 s to load again)
    assert set(left) == {"tokenizers.vocabularies", "tokenizers.digit_tables", "fast.counters"}


def test_a_counter_kept_across_clear_caches_starts_over_and_counts_the_same():
    counter = contextfit.token_counter("gpt-4o")
    chat = [{"role": "user", "content": "Hello world!"}, {"role": "assistant", "content": "Hi there."}]
    before = counter(chat)
    result = contextfit.shift_context(chat, counter, 100, strategy="truncate")
    assert len(counter.tokenizer._cache) > 0

    contextfit.caches.clear_caches()

    assert len(counter.tokenizer._cache) == 0 and counter._role_costs == {}
    assert counter(chat) == before
    again = contextfit.shift_context(chat, counter, 100, strategy="truncate")
    assert [d.reason for d in again.decisions] == [d.reason for d in result.decisions]
    assert contextfit.token_counter("gpt-4o")(chat) == before  # a new counter, same counts


def test_register_refuses_what_it_cannot_clear():
    with pytest.raises(TypeError, match="clear= and size="):
        caches.register("test.not_a_cache", object())
    assert "test.not_a_cache" not in caches.registered()


# -- no cache escapes the registry ----------------------------------------------------

_CACHE_DECORATORS = {"lru_cache", "cache"}
_CACHE_CALLS = {"TextMemo", "WeakKeyDictionary", "WeakValueDictionary", "OrderedDict", "defaultdict"}


def _called_name(node: ast.AST) -> str | None:
    target = node.func if isinstance(node, ast.Call) else node
    if isinstance(target, ast.Attribute):
        return target.attr
    return target.id if isinstance(target, ast.Name) else None


def _looks_like_a_cache(value: ast.AST) -> bool:
    """An empty mutable container or a known cache object, made at module level."""
    if isinstance(value, ast.Call) and _called_name(value) == "register":
        return False  # made inside register(...): registered
    if isinstance(value, (ast.Dict, ast.List, ast.Set)) and not getattr(value, "keys", getattr(value, "elts", None)):
        return True
    if isinstance(value, ast.Call):
        name = _called_name(value)
        if name in _CACHE_CALLS:
            return True
        if name in ("dict", "list", "set") and not value.args and not value.keywords:
            return True
    return False


def _candidates() -> list[tuple[str, str]]:
    """(module, name) of every cache-like thing the package's source makes at module level."""
    found = []
    for path in sorted(PACKAGE.rglob("*.py")):
        module = ".".join(("contextfit", *path.relative_to(PACKAGE).with_suffix("").parts)).removesuffix(".__init__")
        tree = ast.parse(path.read_text(encoding="utf-8"))
        for node in ast.walk(tree):
            if isinstance(node, (ast.FunctionDef, ast.AsyncFunctionDef)):
                if any(_called_name(d) in _CACHE_DECORATORS for d in node.decorator_list):
                    found.append((module, node.name))
        for node in tree.body:
            if isinstance(node, (ast.Assign, ast.AnnAssign)) and node.value is not None:
                targets = node.targets if isinstance(node, ast.Assign) else [node.target]
                if _looks_like_a_cache(node.value):
                    found += [(module, t.id) for t in targets if isinstance(t, ast.Name) and t.id != "__all__"]
    return found


def test_every_cache_in_the_package_is_registered_or_named_as_not_a_cache():
    candidates = _candidates()
    for module_name in {module_name for module_name, _ in candidates}:  # a module registers its caches on import
        importlib.import_module(module_name)
    registered = {id(cache) for cache in caches.registered().values()}
    loose = []
    for module_name, name in candidates:
        if name in NOT_CACHES:
            continue
        module = importlib.import_module(module_name)
        obj = getattr(module, name, None)
        if obj is None or id(obj) not in registered:
            loose.append(f"{module_name}.{name}")
    assert not loose, (
        f"caches that contextfit.caches.clear_caches() would miss: {loose}. Register each where it is made "
        "(contextfit.caches.register), or add it to NOT_CACHES with the reason it is not a cache."
    )


def test_every_module_level_cache_object_at_run_time_is_registered():
    """The same from the other side: import every module and look at what it holds."""
    from contextfit.memo import TextMemo

    for info in pkgutil.walk_packages([str(PACKAGE)], "contextfit."):
        if not info.name.endswith("__main__"):  # running it is the CLI
            importlib.import_module(info.name)
    registered = {id(cache) for cache in caches.registered().values()}
    import sys
    import weakref

    loose = []
    for name, module in list(sys.modules.items()):
        if not (name == "contextfit" or name.startswith("contextfit.")):
            continue
        for attribute, value in vars(module).items():
            if attribute in NOT_CACHES:
                continue
            if isinstance(value, (TextMemo, weakref.WeakKeyDictionary, weakref.WeakValueDictionary)) or (
                callable(getattr(value, "cache_clear", None))
            ):
                if id(value) not in registered:
                    loose.append(f"{name}.{attribute}")
    assert not loose, f"caches contextfit.caches.clear_caches() would miss: {loose}"


def test_the_source_scan_finds_an_unregistered_cache():
    """The scan is not blind: a module with a new lru_cache and a module-level dict is caught."""
    tree = ast.parse("import functools\n_SEEN = {}\n@functools.lru_cache\ndef f(x):\n    return x\n")
    assert _looks_like_a_cache(tree.body[1].value)
    assert any(_called_name(d) in _CACHE_DECORATORS for d in tree.body[2].decorator_list)
    assert not _looks_like_a_cache(ast.parse("_MONTHS = {'jan': 1}").body[0].value)
    assert not _looks_like_a_cache(ast.parse("_X = register('x', {})").body[0].value)
