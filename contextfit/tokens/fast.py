"""Counting with the fastest exact engine, tiktoken kept as the reference.

tiktoken stays the reference for ``o200k_base`` and ``cl100k_base``: it gives
the token ids and pieces, and it counts whenever the fast engine is missing,
still loading, turned off or found wrong. A :class:`FastCounter` (one per
vocabulary, shared by every tokenizer profile counting with it) counts with
**toktok-rs** (a Rust BPE counter) once that is loaded and verified:

* **pinned**: only toktok-rs :data:`ENGINE_VERSION` is used, the version the
  differential tests prove exact; its per-text counter is the package's
  private ``toktok._encoding(name).count``, tested explicitly
  (``tests/tokens/test_fast_count.py``);
* **vocabulary checksum**: the ranks compiled into the engine must hash to
  :data:`VOCABULARY_SHA256`, the hash of the ``bpe-openai`` ranks that
  tiktoken's own SHA-256 vouches for;
* **a probe** of hard text must count as tiktoken counts it before the engine
  is trusted;
* **routing**: text holding a code point first assigned in Unicode 17 (the
  engine's character classes are Unicode 17, tiktoken 0.14's are Unicode 16,
  so such text can split differently) or a lone surrogate (which tiktoken
  repairs and the engine refuses) is counted by tiktoken;
* **a sampled self-check**: one fast count in :data:`SAMPLE_EVERY` is also
  counted by tiktoken; a disagreement (or an engine error) switches the
  vocabulary to tiktoken for the rest of the process, with a ``RuntimeWarning``
  and a log line (``FAST_COUNT_DISAGREED`` / ``FAST_COUNT_FAILED``).

Loading the engine takes 0.4-1.3 s per vocabulary and holds the interpreter
lock while it runs, so nothing loads at import or on the first count: a
counter starts loading in a background thread after its vocabulary has
counted :data:`AUTOLOAD_CHARS` characters with tiktoken in this process, or
when :func:`preload` asks (the dashboard does, after its first page is drawn).
``CONTEXTFIT_FAST_COUNT=0`` keeps every count on tiktoken.

>>> counter = FastCounter("o200k_base", None, loader=None)
>>> counter.status()["engine"], counter.status()["state"]
('tiktoken', 'off')
"""

from __future__ import annotations

import hashlib
import importlib
import logging
import re
import threading
import warnings
from collections.abc import Callable, Iterable
from dataclasses import dataclass
from typing import Any

from contextfit import environment
from contextfit.caches import register
from contextfit.tokens import long_blanks

__all__ = [
    "AUTOLOAD_CHARS",
    "ENGINE_VERSION",
    "ENV_VAR",
    "SAMPLE_EVERY",
    "Engine",
    "FastCounter",
    "counter_for",
    "load_toktok",
    "preload",
    "statuses",
]

#: ``0``/``off``/``false``/``no`` keeps every count on tiktoken.
ENV_VAR = "CONTEXTFIT_FAST_COUNT"
#: The package and version the differential tests prove exact (pinned in requirements.txt).
ENGINE_PACKAGE = "toktok"
ENGINE_DISTRIBUTION = "toktok-rs"
ENGINE_VERSION = "0.3.0"
#: One fast count in this many is checked against tiktoken.
SAMPLE_EVERY = 1000
#: Characters a vocabulary counts with tiktoken before its fast engine loads by itself.
AUTOLOAD_CHARS = 4_000_000

#: sha256 of the engine's ranks: one byte per token (its length), then every
#: token's bytes, in rank order. Equal to the same hash of the ``bpe-openai``
#: ranks (``tests/tokens/test_fast_count.py`` proves it), which tiktoken checks.
VOCABULARY_SHA256 = {
    "o200k_base": "440741350e7cfa1c0f4869ce742d1b043550adbda5187adcac9e787edac6fba9",
    "cl100k_base": "18288f996f452d44e0e65996176591a4b712a3eb1b42afd6f0511e735c099480",
}

#: Code points assigned in Unicode 17.0 but not in 16.0 (4,803 in 47 ranges;
#: 4,699 of them change an o200k count, 4,657 a cl100k one).
UNICODE_17_NEW = (
    (0x88F, 0x88F), (0xC5C, 0xC5C), (0xCDC, 0xCDC), (0x1ACF, 0x1ADD), (0x1AE0, 0x1AEB), (0x20C1, 0x20C1),
    (0x2B96, 0x2B96), (0xA7CE, 0xA7CF), (0xA7D2, 0xA7D2), (0xA7D4, 0xA7D4), (0xA7F1, 0xA7F1), (0xFBC3, 0xFBD2),
    (0xFD90, 0xFD91), (0xFDC8, 0xFDCE), (0x10940, 0x10959), (0x10EC5, 0x10EC7), (0x10ED0, 0x10ED8),
    (0x10EFA, 0x10EFB), (0x11B60, 0x11B67), (0x11DB0, 0x11DDB), (0x11DE0, 0x11DE9), (0x16EA0, 0x16EB8),
    (0x16EBB, 0x16ED3), (0x16FF2, 0x16FF6), (0x187F8, 0x187FF), (0x18D09, 0x18D1E), (0x18D80, 0x18DF2),
    (0x1CCFA, 0x1CCFC), (0x1CEBA, 0x1CED0), (0x1CEE0, 0x1CEF0), (0x1E6C0, 0x1E6DE), (0x1E6E0, 0x1E6F5),
    (0x1E6FE, 0x1E6FF), (0x1F6D8, 0x1F6D8), (0x1F777, 0x1F77A), (0x1F8D0, 0x1F8D8), (0x1FA54, 0x1FA57),
    (0x1FA8A, 0x1FA8A), (0x1FA8E, 0x1FA8E), (0x1FAC8, 0x1FAC8), (0x1FACD, 0x1FACD), (0x1FAEA, 0x1FAEA),
    (0x1FAEF, 0x1FAEF), (0x1FBFA, 0x1FBFA), (0x2B73A, 0x2B73F), (0x2CEA2, 0x2CEAD), (0x323B0, 0x33479),
)

# What tiktoken counts instead of the engine: the code points above and surrogates.
_ROUTED = re.compile(
    "[" + "".join(f"{re.escape(chr(first))}-{re.escape(chr(last))}" for first, last in UNICODE_17_NEW)
    + "\ud800-\udfff]"
)

# Text the engine must count exactly as tiktoken does before it is trusted.
_PROBE = "Hello world! don't  \n\n 日本語 🚀 12345 ΣΊΣΥΦΟΣ\r\n\tx  <|endoftext|> ❤️ ⅷ" + " " * 40 + "end"

_LOG = logging.getLogger("contextfit.tokens.fast")


class EngineUnavailable(RuntimeError):
    """Why the fast engine cannot count a vocabulary (tiktoken counts instead)."""


@dataclass(frozen=True, slots=True)
class Engine:
    """A loaded fast engine for one vocabulary: its name and its ``count(text)``."""

    name: str
    count: Callable[[str], int]


def load_toktok(vocabulary: str) -> Engine:
    """Load and verify toktok-rs for ``vocabulary``; raises :class:`EngineUnavailable`.

    Offline: the ranks are compiled into the extension module.
    """
    try:
        toktok = importlib.import_module(ENGINE_PACKAGE)
    except ImportError as exc:
        raise EngineUnavailable(
            f"{ENGINE_DISTRIBUTION} is not installed (`pip install {ENGINE_DISTRIBUTION}=={ENGINE_VERSION}`)"
        ) from exc
    version = getattr(toktok, "__version__", "?")
    if version != ENGINE_VERSION:
        raise EngineUnavailable(
            f"{ENGINE_DISTRIBUTION} {version} is installed; only {ENGINE_VERSION} is proven exact "
            f"(`pip install {ENGINE_DISTRIBUTION}=={ENGINE_VERSION}`)"
        )
    expected = VOCABULARY_SHA256.get(vocabulary)
    if expected is None:
        raise EngineUnavailable(f"no fast engine for {vocabulary}")
    tokenizer = toktok._encoding(vocabulary)  # private accessor, pinned by version and tested
    tokens = tokenizer.token_byte_values()
    actual = vocabulary_sha256(tokens)
    if actual != expected:
        raise EngineUnavailable(
            f"{ENGINE_DISTRIBUTION}'s {vocabulary} ranks failed their SHA-256 check (expected {expected}, got {actual})"
        )
    return Engine(f"{ENGINE_DISTRIBUTION} {version}", tokenizer.count)


def vocabulary_sha256(tokens: Iterable[bytes]) -> str:
    """The hash :data:`VOCABULARY_SHA256` pins, of token byte strings in rank order.

    >>> vocabulary_sha256([b"a", b"bc"])[:12]
    'bf0e4665c55d'
    """
    tokens = list(tokens)
    return hashlib.sha256(bytes(map(len, tokens)) + b"".join(tokens)).hexdigest()


def _enabled(env: Any = None) -> bool:
    value = (environment.read(ENV_VAR, env) or "").strip().lower()
    return value not in ("0", "off", "false", "no")


class FastCounter:
    """Counts one vocabulary: the fast engine when it is ready and trusted, tiktoken otherwise.

    ``count`` is an attribute that always holds the right function, so the
    tokenizer calls ``counter.count(text)`` without asking anything first.
    ``reference`` is the exact tiktoken encoding; ``loader`` returns an
    :class:`Engine` (``None``: no fast engine at all).
    """

    def __init__(
        self,
        vocabulary: str,
        reference: Any,
        *,
        loader: Callable[[str], Engine] | None = load_toktok,
        sample_every: int = SAMPLE_EVERY,
        autoload_chars: int = AUTOLOAD_CHARS,
        enabled: bool | None = None,
    ) -> None:
        self.vocabulary = vocabulary
        self.reference = reference
        self._loader = loader
        self._sample_every = max(1, sample_every)
        self._until_check = self._sample_every
        self._chars_left = autoload_chars
        self._lock = threading.Lock()
        self._ready = threading.Event()
        self._engine: Engine | None = None
        self.checked = 0  # fast counts also counted by tiktoken
        self.routed = 0  # texts the guard sent to tiktoken
        self.reason: str | None = None  # why tiktoken counts, when it does for good
        self.diagnostic: str | None = None  # FAST_COUNT_DISAGREED / FAST_COUNT_FAILED
        if loader is None or not (_enabled() if enabled is None else enabled):
            self.state = "off"
            self.reason = "no fast engine" if loader is None else f"turned off ({ENV_VAR}=0)"
            self.count: Callable[[str], int] = self.count_reference
            self._ready.set()
        else:
            self.state = "waiting"
            self.count = self._count_waiting

    # ---------------------------------------------------------------- loading

    def start(self, delay: float = 0.0) -> None:
        """Load the engine in a background thread (after ``delay`` seconds); idempotent."""
        with self._lock:
            if self.state != "waiting":
                return
            self.state = "loading"
        thread = threading.Timer(delay, self.load) if delay > 0 else threading.Thread(target=self.load)
        thread.name = f"contextfit-fast-{self.vocabulary}"
        thread.daemon = True
        thread.start()

    def wait(self, timeout: float | None = None) -> bool:
        """Start loading if nobody has, wait for it; True when the fast engine counts."""
        self.start()
        self._ready.wait(timeout)
        return self.state == "fast"

    def load(self) -> None:
        """Load, verify and switch to the engine, in the calling thread; tiktoken stays on failure."""
        with self._lock:
            if self.state not in ("waiting", "loading"):
                return  # turned off, or decided already
            self.state = "loading"
        try:
            assert self._loader is not None
            engine = self._loader(self.vocabulary)
            probe = [_PROBE, _PROBE.upper(), " " * 3 + "\t\n" * 5, "", "x" * 300]
            got = [engine.count(text) for text in probe]
            want = [self.count_reference(text) for text in probe]
            if got != want:
                raise EngineUnavailable(f"{engine.name} counted the probe texts {got}, tiktoken {want}")
        except BaseException as exc:  # noqa: BLE001 - a Rust panic is a BaseException
            if isinstance(exc, (KeyboardInterrupt, SystemExit)):
                raise
            self._to_tiktoken("unavailable", f"{type(exc).__name__}: {exc}")
        else:
            with self._lock:
                if self.state == "loading":
                    self._engine = engine
                    self.state = "fast"
                    self.count = self._count_fast
        finally:
            self._ready.set()

    # --------------------------------------------------------------- counting

    def count_reference(self, text: str) -> int:
        """tiktoken's count, exactly as the tokenizer makes it (blank runs of any length)."""
        if len(text) < long_blanks.LONG_BLANK_RUN:
            return len(self.reference.encode_ordinary(text))
        return sum(map(len, long_blanks.encode_parts(self.reference, text)))

    def _count_waiting(self, text: str) -> int:
        self._chars_left -= len(text)
        if self._chars_left < 0:
            self.start()
        return self.count_reference(text)

    def _count_fast(self, text: str) -> int:
        if not text.isascii() and _ROUTED.search(text) is not None:
            self.routed += 1
            return self.count_reference(text)
        try:
            tokens = self._engine.count(text)  # type: ignore[union-attr]
        except BaseException as exc:  # noqa: BLE001 - a Rust panic is a BaseException
            if isinstance(exc, (KeyboardInterrupt, SystemExit)):
                raise
            self._to_tiktoken("FAST_COUNT_FAILED", f"it raised {type(exc).__name__}: {exc}", text)
            return self.count_reference(text)
        self._until_check -= 1  # a sampling clock: a lost update between threads is harmless
        if self._until_check <= 0:
            self._until_check = self._sample_every
            self.checked += 1
            reference = self.count_reference(text)
            if reference != tokens:
                self._to_tiktoken("FAST_COUNT_DISAGREED", f"it counted {tokens} tokens where tiktoken counts {reference}", text)
                return reference
        return tokens

    def _to_tiktoken(self, why: str, detail: str, text: str | None = None) -> None:
        """Count with tiktoken from now on; say why (a warning and a log line when it was a surprise)."""
        with self._lock:
            engine = self._engine.name if self._engine is not None else f"{ENGINE_DISTRIBUTION}"
            self.state = "tiktoken"
            self.count = self.count_reference
            self._engine = None
        if text is None:  # the engine never loaded: a missing optional dependency, not an alarm
            self.reason = f"{engine} unavailable: {detail}"
            _LOG.info("counting %s with tiktoken: %s", self.vocabulary, self.reason)
            return
        self.diagnostic = why
        where = f"a text of {len(text):,} characters, sha256 {hashlib.sha256(text.encode('utf-8', 'surrogatepass')).hexdigest()[:16]}"
        self.reason = f"{why}: {engine} on {self.vocabulary}: {detail} ({where}); tiktoken counts it from now on"
        _LOG.warning(self.reason)
        warnings.warn(self.reason, RuntimeWarning, stacklevel=3)

    # ------------------------------------------------------------------ status

    @property
    def engine(self) -> str:
        """Who counts now: the fast engine's name, or ``"tiktoken"``."""
        engine = self._engine
        return engine.name if engine is not None and self.state == "fast" else "tiktoken"

    def status(self) -> dict[str, Any]:
        """What the Models page shows: vocabulary, engine, state, reason, checks."""
        return {
            "vocabulary": self.vocabulary,
            "engine": self.engine,
            "state": self.state,
            "reason": self.reason,
            "diagnostic": self.diagnostic,
            "checked": self.checked,
            "routed": self.routed,
        }


# A loaded engine is as slow to load again as a vocabulary: kept by clear_caches(vocabularies=False).
_COUNTERS: dict[str, FastCounter] = register("fast.counters", {}, vocabulary=True)
_REGISTRY_LOCK = threading.Lock()


def counter_for(vocabulary: str, reference: Any) -> FastCounter | None:
    """The process's :class:`FastCounter` for ``vocabulary`` (exact vocabularies only, else None).

    ``reference`` is the SHA-verified tiktoken encoding the tokenizers share;
    a counter is created once per vocabulary and loads nothing yet.
    """
    if vocabulary not in VOCABULARY_SHA256:
        return None
    counter = _COUNTERS.get(vocabulary)
    if counter is None:
        with _REGISTRY_LOCK:
            counter = _COUNTERS.get(vocabulary)
            if counter is None:
                counter = _COUNTERS[vocabulary] = FastCounter(vocabulary, reference)
    return counter


def preload(delay: float = 0.0) -> None:
    """Start loading the fast engine of every vocabulary a tokenizer uses so far, in the background."""
    for counter in list(_COUNTERS.values()):
        counter.start(delay)


def statuses() -> list[dict[str, Any]]:
    """:meth:`FastCounter.status` of every vocabulary a tokenizer uses so far."""
    return [counter.status() for counter in list(_COUNTERS.values())]
