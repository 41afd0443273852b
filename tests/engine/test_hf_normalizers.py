"""Hugging Face's normalizers (``engine.normalizers_hf`` and ``normalizer_from_hf``) against the real
``tokenizers`` library: the same text for every code point where the step is per character, and
on Hypothesis text otherwise; ``to_hf`` writes back what was read; ``normalize_aligned`` is
exact and monotone; bad files are refused with the path of the bad part."""

from __future__ import annotations

import json
import unicodedata
from typing import Any

import pytest
from hypothesis import given, settings
from hypothesis import strategies as st

from engine.code_points import codes
from engine.errors import EncodeTimeout, FormatError
from engine.limits import time_budget
from engine.normalizers import MAX_NORMALIZER_DEPTH, normalize_aligned, normalizer_from_hf
from engine.normalizers_hf import _FORM_DRIFT

tokenizers = pytest.importorskip("tokenizers")
HFTokenizer = tokenizers.Tokenizer
hf = tokenizers.normalizers

EVERY = "".join(chr(code) for code in range(0x110000) if not 0xD800 <= code <= 0xDFFF)
LLAMA2 = {"type": "Sequence", "normalizers": [{"type": "Prepend", "prepend": "▁"},
                                              {"type": "Replace", "pattern": {"String": " "}, "content": "▁"}]}
GEMMA3 = {"type": "Replace", "pattern": {"String": " "}, "content": "▁"}
FORMS: dict[str, dict[str, Any]] = {
    "llama2": LLAMA2,
    "gemma3": GEMMA3,
    "prepend": {"type": "Prepend", "prepend": "<s>"},
    "strip": {"type": "Strip", "strip_left": True, "strip_right": True},
    "strip-right": {"type": "Strip", "strip_left": False, "strip_right": True},
    "replace-regex": {"type": "Replace", "pattern": {"Regex": " {2,}"}, "content": " "},
    "replace-empty-matches": {"type": "Replace", "pattern": {"Regex": "x*"}, "content": "-"},
    "replace-lines": {"type": "Replace", "pattern": {"Regex": "^a|b$"}, "content": "AB"},
    "replace-multi": {"type": "Replace", "pattern": {"String": "ab"}, "content": "X"},
    "replace-delete": {"type": "Replace", "pattern": {"String": "\u0301"}, "content": ""},
    "lowercase": {"type": "Lowercase"},
    "strip-accents": {"type": "StripAccents"},
    "nmt": {"type": "Nmt"},
    "nfkc": {"type": "NFKC"},
    "bert": {"type": "BertNormalizer", "clean_text": True, "handle_chinese_chars": True, "strip_accents": None,
             "lowercase": True},
    "nested": {"type": "Sequence", "normalizers": [
        {"type": "Strip", "strip_left": True, "strip_right": False}, {"type": "Sequence", "normalizers": [
            {"type": "NFD"}, {"type": "StripAccents"}, {"type": "Lowercase"}]},
        {"type": "Prepend", "prepend": "▁"}, {"type": "Replace", "pattern": {"String": " "}, "content": "▁"},
        {"type": "Sequence", "normalizers": []}]},
}
ALPHABET = list("ab xX\t\n\r\x01") + ["\u0301", "\u0600", "Σ", "İ", "ﬁ", "中", "\u3000", "\u00a0", "\x1c", "▁", "\u2028"]


def hf_normalizer(data: dict[str, Any]) -> Any:
    """The reference: the normalizer HF builds from the same JSON."""
    document = {"version": "1.0", "truncation": None, "padding": None, "added_tokens": [], "normalizer": data,
                "pre_tokenizer": None, "post_processor": None, "decoder": None,
                "model": {"type": "WordLevel", "vocab": {"a": 0}, "unk_token": "a"}}
    return HFTokenizer.from_str(json.dumps(document)).normalizer


@pytest.mark.parametrize("name", FORMS)
def test_to_hf_writes_back_what_was_read(name: str) -> None:
    ours = normalizer_from_hf(FORMS[name])
    assert ours is not None and ours.to_hf() == FORMS[name]
    written = json.loads(HFTokenizer.to_str(hf_normalizer_tokenizer(FORMS[name])))["normalizer"]
    assert written == FORMS[name]  # and that is what HF itself writes


def hf_normalizer_tokenizer(data: dict[str, Any]) -> HFTokenizer:
    document = {"version": "1.0", "truncation": None, "padding": None, "added_tokens": [], "normalizer": data,
                "pre_tokenizer": None, "post_processor": None, "decoder": None,
                "model": {"type": "WordLevel", "vocab": {"a": 0}, "unk_token": "a"}}
    return HFTokenizer.from_str(json.dumps(document))


@pytest.mark.parametrize("name", FORMS)
@settings(max_examples=80, deadline=None)
@given(text=st.text(st.sampled_from(ALPHABET), max_size=30))
def test_same_text_as_hf_and_an_exact_monotone_map(name: str, text: str) -> None:
    ours = normalizer_from_hf(FORMS[name])
    assert ours is not None
    expected = hf_normalizer(FORMS[name]).normalize_str(text)
    assert ours.normalize(text) == expected
    out, offsets = normalize_aligned(ours, text)
    assert out == expected
    assert len(offsets) == len(out) + 1 and offsets == sorted(offsets)
    assert offsets[-1] == len(text) and all(0 <= o <= len(text) for o in offsets)


@pytest.mark.parametrize("data", [{"type": "Lowercase"}, {"type": "StripAccents"}, {"type": "Nmt"},
                                  {"type": "BertNormalizer", "clean_text": True, "handle_chinese_chars": True,
                                   "strip_accents": False, "lowercase": True}],
                         ids=["lowercase", "strip-accents", "nmt", "bert-clean-cjk-lower"])
def test_per_character_steps_match_hf_on_every_code_point(data: dict[str, Any]) -> None:
    ours = normalizer_from_hf(data)
    assert ours is not None and ours.normalize(EVERY) == hf_normalizer(data).normalize_str(EVERY)


def test_bert_strip_accents_matches_hf_on_every_code_point() -> None:
    data = {"type": "BertNormalizer", "clean_text": True, "handle_chinese_chars": True, "strip_accents": True,
            "lowercase": False}
    text = "a".join(EVERY)
    assert normalizer_from_hf(data).normalize(text) == hf_normalizer(data).normalize_str(text)  # type: ignore[union-attr]


# Every character after U+0345 (combining class 240) and before U+0316 (220): reordered there
# exactly when its own class is lower, or higher, than HF's tables say; and the one pair whose
# composition HF's tables lack (U+11935 U+11930 is U+11938 in Python's).
AROUND_MARKS = "\n".join(f"a\u0345{c}\na{c}\u0316" for c in EVERY) + "\n\U00011935\U00011930"


@pytest.mark.parametrize("form", ["NFC", "NFD", "NFKC", "NFKD"])
def test_the_unicode_forms_match_hf_on_every_code_point_and_around_every_mark(form: str) -> None:
    """HF's NF* tables are older than Python's: U+32FF, new modifier letters and marks stay as they are."""
    ours, theirs = normalizer_from_hf({"type": form}), getattr(hf, form)()
    assert ours is not None
    assert ours.normalize(EVERY) == theirs.normalize_str(EVERY)
    assert ours.normalize(AROUND_MARKS) == theirs.normalize_str(AROUND_MARKS)
    assert ours.normalize("\u32ff \U00011938 e\u0301") == theirs.normalize_str("\u32ff \U00011938 e\u0301")


def test_the_form_drift_table_is_what_the_installed_tokenizers_lacks() -> None:
    """Whatever Python's unicodedata decomposes, gives a combining class or composes, and HF leaves alone."""
    nfkd, nfd, nfc = hf.NFKD(), hf.NFD(), hf.NFC()
    found = {ord(c) for c in EVERY if nfkd.normalize_str(c) != unicodedata.normalize("NFKD", c)}
    found |= {ord(c) for c in EVERY for text in (f"a\u0345{c}", f"a{c}\u0316")
              if nfd.normalize_str(text) != unicodedata.normalize("NFD", text)}
    for code in list(found):
        parts = unicodedata.normalize("NFD", chr(code))
        if nfc.normalize_str(parts) != unicodedata.normalize("NFC", parts):
            found |= set(map(ord, parts))
    assert found == codes(_FORM_DRIFT), "tokenizers' NF* tables changed: update normalizers_hf._FORM_DRIFT"


@pytest.mark.parametrize(("data", "text", "expected"), [
    (LLAMA2, "Hello  world", "▁Hello▁▁world"),
    (LLAMA2, "", ""),  # Prepend leaves an empty text empty
    ({"type": "Lowercase"}, "ΟΔΟΣ İ", "οδοσ i\u0307"),  # no final sigma, as Rust's to_lowercase
    ({"type": "Strip", "strip_left": True, "strip_right": True}, "\u3000\x85 a \x1c", "a \x1c"),  # U+001C is not Rust whitespace
    ({"type": "StripAccents"}, "é e\u0301 \u0903", "é e "),  # no NFD; Mc marks go too
    ({"type": "Replace", "pattern": {"Regex": "x*"}, "content": "-"}, "abxd", "-a-b-d-"),  # Onig skips the empty match after "x"
    ({"type": "Replace", "pattern": {"String": ""}, "content": "-"}, "", ""),
    ({"type": "BertNormalizer", "clean_text": True, "handle_chinese_chars": True, "strip_accents": None,
      "lowercase": True}, "A\u2028b\U0002B821中", "a b\U0002B821 中 "),
], ids=["llama2", "llama2-empty", "lowercase-sigma", "strip-rust-whitespace", "strip-accents-marks-only",
        "replace-onig-empty", "replace-empty-text", "bert"])
def test_exact_values(data: dict[str, Any], text: str, expected: str) -> None:
    assert hf_normalizer(data).normalize_str(text) == expected
    assert normalizer_from_hf(data).normalize(text) == expected  # type: ignore[union-attr]


def test_llama2_offsets_point_at_the_input() -> None:
    out, offsets = normalize_aligned(normalizer_from_hf(LLAMA2), "ab cd")  # type: ignore[arg-type]
    assert out == "▁ab▁cd"
    assert offsets == [0, 0, 1, 2, 3, 4, 5]


def test_a_multi_character_match_maps_as_one_unit() -> None:
    data = {"type": "Replace", "pattern": {"String": "e\u0301x"}, "content": "Y"}  # spans two clusters
    out, offsets = normalize_aligned(normalizer_from_hf(data), "ae\u0301xb")  # type: ignore[arg-type]
    assert (out, offsets) == ("aYb", [0, 1, 4, 5])


def nested(depth: int) -> dict[str, Any]:
    data: dict[str, Any] = {"type": "Lowercase"}
    for _ in range(depth):
        data = {"type": "Sequence", "normalizers": [data]}
    return data


def test_deep_sequences_are_refused_not_a_recursion_error() -> None:
    assert normalizer_from_hf(nested(MAX_NORMALIZER_DEPTH)) is not None
    with pytest.raises(FormatError, match=r"nest more than 32 deep"):
        normalizer_from_hf(nested(10_000))


@pytest.mark.parametrize(("data", "message"), [
    ({"type": "Sequence", "normalizers": [{"type": "NFC"}, {"type": "Nope"}]},
     r"type 'Nope' is not supported \(at normalizer.normalizers\[1\]\)"),
    ({"type": "Sequence", "normalizers": [{"type": "Replace", "pattern": {"Regex": "(?m)a.b"}, "content": ""}]},
     r"normalizer.normalizers\[0\].pattern.Regex: .*dot-all"),
    ({"type": "Replace", "pattern": {"Regex": "a("}, "content": ""}, r"normalizer.pattern.Regex: .*compile"),
    ({"type": "Replace", "pattern": {"Regex": "\\h"}, "content": ""}, r"hex digit"),
    ({"type": "Replace", "pattern": {"String": "a", "Regex": "b"}, "content": ""}, r"normalizer.pattern must be"),
    ({"type": "Strip", "strip_left": True}, r"normalizer.strip_right must be a bool"),
    ({"type": "Prepend"}, r"normalizer.prepend must be a str"),
    ({"type": "Sequence"}, r"normalizer.normalizers must be a list"),
    ({"type": "BertNormalizer", "clean_text": True, "handle_chinese_chars": True, "strip_accents": 1,
      "lowercase": True}, r"normalizer.strip_accents must be true, false or null"),
    ("NFC", r"normalizer: a normalizer must be an object"),
], ids=["unknown-type", "onig-m-flag", "bad-regex", "onig-hex", "two-patterns", "strip-field", "prepend-field",
        "sequence-field", "bert-field", "not-an-object"])
def test_bad_normalizers_name_their_place(data: Any, message: str) -> None:
    with pytest.raises(FormatError, match=message):
        normalizer_from_hf(data)


def test_a_slow_replace_pattern_runs_out_of_budget() -> None:
    slow = normalizer_from_hf({"type": "Replace", "pattern": {"Regex": "(?:.*,){6}X|Q"}, "content": ""})
    assert slow.normalize("a,b") == "a,b"  # type: ignore[union-attr]
    with time_budget(0.2), pytest.raises(EncodeTimeout, match="Replace pattern took longer than 0.2 s"):
        slow.normalize("," * 2000)  # type: ignore[union-attr]
