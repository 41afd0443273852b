"""Hugging Face's pre-tokenizers as real tokenizer.json files use them, against the real library.

Each case builds the same pre-tokenizer on both sides and compares the pieces and their spans
on hand-picked and random text; the tokenizer-level cases compare ids of whole documents that
chain several Split steps (DeepSeek V3's shape), ByteLevel's add_prefix_space, and added tokens.
"""

from __future__ import annotations

import json
from typing import Any

import pytest
import regex
from hypothesis import given, settings
from hypothesis import strategies as st

from engine.errors import FormatError
from engine.hf_scripts import RANGES
from engine.normalizers_hf import hf_numeric, hf_punctuation
from engine.pretokenizers_hf import pretokenizer_from_hf
from engine.tokenizer import Tokenizer
from tests.repo_scripts import load_script

tokenizers = pytest.importorskip("tokenizers")

TEXTS = [
    "",
    "Hello, world! 123 4567",
    "a  b   c\n\nd\t e",
    "naïve café — 日本語のテキスト 123,456.78 ¡hola!",
    "  leading and trailing  ",
    "x==y&&z||w;;",
    "▁already▁metaspaced and not",
    "١٢٣ ٤٥ digits in Arabic-Indic, ½ and ²",
]
SPLITS = [
    {"type": "Split", "pattern": {"String": " "}, "behavior": behavior, "invert": invert}
    for behavior in ("Removed", "Isolated", "MergedWithPrevious", "MergedWithNext", "Contiguous")
    for invert in (False, True)
] + [
    {"type": "Split", "pattern": {"Regex": r"\p{N}{1,3}"}, "behavior": behavior, "invert": invert}
    for behavior in ("Removed", "Isolated", "MergedWithPrevious", "MergedWithNext", "Contiguous")
    for invert in (False, True)
] + [
    {"type": "Digits", "individual_digits": True},
    {"type": "Digits", "individual_digits": False},
    {"type": "Punctuation", "behavior": "Isolated"},
    {"type": "Punctuation", "behavior": "Contiguous"},
    {"type": "Punctuation", "behavior": "MergedWithPrevious"},
    {"type": "WhitespaceSplit"},
    {"type": "Whitespace"},
    {"type": "Metaspace", "replacement": "▁", "prepend_scheme": "always", "split": True},
    {"type": "Metaspace", "replacement": "▁", "prepend_scheme": "never", "split": True},
    {"type": "Metaspace", "replacement": "▁", "prepend_scheme": "first", "split": False},
    {"type": "Sequence", "pretokenizers": [
        {"type": "Split", "pattern": {"Regex": r"\p{N}{1,3}"}, "behavior": "Isolated", "invert": False},
        {"type": "Split", "pattern": {"Regex": "[\u4e00-\u9fa5\u3040-\u309f\u30a0-\u30ff]+"}, "behavior": "Isolated",
         "invert": False},
        {"type": "Punctuation", "behavior": "Isolated"},
        {"type": "Split", "pattern": {"String": " "}, "behavior": "MergedWithNext", "invert": False},
    ]},
    {"type": "CharDelimiterSplit", "delimiter": " "},
    {"type": "CharDelimiterSplit", "delimiter": "a"},
    # prepend_scheme "first" after another step: only the piece at the input's start gets the "▁".
    {"type": "Sequence", "pretokenizers": [
        {"type": "Digits", "individual_digits": False},
        {"type": "Metaspace", "replacement": "▁", "prepend_scheme": "first", "split": False}]},
    {"type": "Sequence", "pretokenizers": [
        {"type": "Punctuation", "behavior": "Isolated"},
        {"type": "Metaspace", "replacement": "▁", "prepend_scheme": "first", "split": True}]},
]


def _id(data: dict[str, Any]) -> str:
    if data["type"] == "Split":
        kind, pattern = next(iter(data["pattern"].items()))
        return f"split-{kind}-{data['behavior']}-{'invert' if data['invert'] else 'plain'}"
    return "-".join(str(v) for v in data.values() if not isinstance(v, list)) + (
        f"-{len(data['pretokenizers'])}" if "pretokenizers" in data else "")


def hf_pieces(data: dict[str, Any], text: str) -> list[tuple[str, tuple[int, int]]]:
    document = {"version": "1.0", "added_tokens": [], "normalizer": None, "pre_tokenizer": data,
                "post_processor": None, "decoder": None, "truncation": None, "padding": None,
                "model": {"type": "WordLevel", "vocab": {"[UNK]": 0}, "unk_token": "[UNK]"}}
    hf = tokenizers.Tokenizer.from_str(json.dumps(document))
    return [(piece, tuple(span)) for piece, span in hf.pre_tokenizer.pre_tokenize_str(text)]


def our_pieces(data: dict[str, Any], text: str) -> list[tuple[str, tuple[int, int]]]:
    pre = pretokenizer_from_hf(data)
    assert pre is not None
    return [(piece.text, (piece.start, piece.end)) for piece in pre.split(text)]


@pytest.mark.parametrize("data", SPLITS, ids=_id)
@pytest.mark.parametrize("text", TEXTS, ids=lambda t: repr(t[:12]))
def test_pieces_and_spans_equal_hugging_face(data: dict[str, Any], text: str) -> None:
    assert our_pieces(data, text) == hf_pieces(data, text)


@settings(max_examples=60, deadline=None)
@given(st.sampled_from(SPLITS), st.text(alphabet=st.sampled_from(list(" a1٣.,!▁\n日本x-")), max_size=24))
def test_random_text_equals_hugging_face(data: dict[str, Any], text: str) -> None:
    assert our_pieces(data, text) == hf_pieces(data, text)


# Every code point, three at a time between letters: what each step cuts by its character tables.
_CODE_POINTS = "".join(chr(c) for c in range(1, 0x110000) if not 0xD800 <= c <= 0xDFFF)
EVERY = "a".join(_CODE_POINTS[i:i + 3] for i in range(0, len(_CODE_POINTS), 3))
TABLE_STEPS = [{"type": "BertPreTokenizer"}, {"type": "UnicodeScripts"}, {"type": "Digits", "individual_digits": True},
               {"type": "Digits", "individual_digits": False}] + [
    {"type": "Punctuation", "behavior": behavior}
    for behavior in ("Removed", "Isolated", "MergedWithPrevious", "MergedWithNext", "Contiguous")]


@pytest.mark.parametrize("data", TABLE_STEPS, ids=_id)
def test_every_code_point_is_cut_as_hugging_face_cuts_it(data: dict[str, Any]) -> None:
    """Punctuation is ASCII's and P* of HF's older tables (145 of the regex module's are not, two
    more are), a digit is Rust's ``is_numeric`` (not 300 of the regex module's cuneiform numbers)."""
    assert [piece for piece, _ in our_pieces(data, EVERY)] == [piece for piece, _ in hf_pieces(data, EVERY)]


def test_the_punctuation_and_numeric_tables_are_the_installed_tokenizers() -> None:
    text = "a".join(chr(c) for c in range(0x110000) if not 0xD800 <= c <= 0xDFFF and c != ord("a"))
    punctuation = {p for p, _ in hf_pieces({"type": "Punctuation", "behavior": "Isolated"}, text) if "a" not in p}
    numeric = {p for p, _ in hf_pieces({"type": "Digits", "individual_digits": True}, text) if "a" not in p}
    assert {chr(c) for a, b in _runs_of(hf_punctuation()) for c in range(a, b + 1)} == punctuation
    assert {chr(c) for a, b in _runs_of(hf_numeric()) for c in range(a, b + 1)} == numeric


def test_the_script_table_is_the_installed_tokenizers() -> None:
    script = load_script("hf_scripts")
    written = [(int(a, 16), int(b or a, 16), int(k)) for item in RANGES.split()
               for (a, _, b), k in [(item.partition(":")[0].partition("-"), item.partition(":")[2])]]
    assert script.hf_script_classes() == written, "tokenizers' script table changed: run scripts/hf_scripts.py"


@settings(max_examples=300, deadline=None)
@given(text=st.lists(st.sampled_from(["a", "日", "ひ", "カ", "ー", " ", "  ", "1", ".", "é", "Ω", "\u0301", "\u0378",
                                      "\u20c1", "\n", "Ж", "😀", "ـ"]), max_size=12).map("".join))
def test_unicode_scripts_cut_as_hugging_face(text: str) -> None:
    """Spaces and unknown characters stay with the piece before; text before the first script is dropped."""
    assert our_pieces({"type": "UnicodeScripts"}, text) == hf_pieces({"type": "UnicodeScripts"}, text)


def _runs_of(members: str) -> list[tuple[int, int]]:
    """The ranges of a class's members as ``normalizers_hf._members`` spells them."""
    chars = regex.findall(r"\\x[0-9a-f]{2}|.", members)
    points = [int(c[2:], 16) if len(c) == 4 else ord(c) for c in chars]
    runs, i = [], 0
    while i < len(points):
        if i + 2 < len(points) and chars[i + 1] == "-":
            runs.append((points[i], points[i + 2]))
            i += 3
        else:
            runs.append((points[i], points[i]))
            i += 1
    return runs


def test_written_back_as_read() -> None:
    for data in SPLITS:
        pre = pretokenizer_from_hf(data)
        assert pre is not None
        written = pre.to_hf()
        assert pretokenizer_from_hf(written).to_hf() == written  # type: ignore[union-attr]


@pytest.mark.parametrize(
    ("data", "message"),
    [
        pytest.param({"type": "Split", "pattern": {"Regex": "a"}, "behavior": "Merged"}, "pre_tokenizer has behavior 'Merged'",
                     id="behavior"),
        pytest.param({"type": "Split", "pattern": {"Glob": "a"}, "behavior": "Isolated"},
                     'pre_tokenizer.pattern must be {"String": text} or {"Regex": pattern}', id="pattern-kind"),
        pytest.param({"type": "Sequence", "pretokenizers": [{"type": "Nope"}]},
                     "The pre-tokenizer type 'Nope' (pre_tokenizer.pretokenizers[0]) is not supported", id="unknown"),
        pytest.param({"type": "Split", "pattern": {"Regex": "(a"}, "behavior": "Contiguous"}, "pre_tokenizer: The Split pattern",
                     id="bad-regex"),
        pytest.param({"type": "Metaspace", "prepend_scheme": "sometimes"}, "pre_tokenizer.prepend_scheme must be", id="scheme"),
        pytest.param({"type": "CharDelimiterSplit", "delimiter": "ab"}, "pre_tokenizer.delimiter must be one character",
                     id="delimiter"),
        pytest.param({"type": "Scripts"}, "The pre-tokenizer type 'Scripts' (pre_tokenizer) is not supported",
                     id="unknown"),
    ],
)
def test_bad_parts_are_named(data: dict[str, Any], message: str) -> None:
    with pytest.raises(FormatError) as error:
        pretokenizer_from_hf(data)
    assert str(error.value).startswith(message)


def test_deep_sequence_is_refused_not_a_recursion_error() -> None:
    data: dict[str, Any] = {"type": "WhitespaceSplit"}
    for _ in range(10_000):
        data = {"type": "Sequence", "pretokenizers": [data]}
    with pytest.raises(FormatError, match="nests or chains too many pre-tokenizers"):
        pretokenizer_from_hf(data)
    deep = '{"type": "Sequence", "pretokenizers": [' * 10_000 + "null" + "]}" * 10_000
    with pytest.raises(FormatError, match="nested too deeply"):
        Tokenizer.from_json('{"model": {"type": "WordLevel", "vocab": {"a": 0}, "unk_token": "a"}, "pre_tokenizer": ' + deep + "}")


# ----------------------------------------------------------------------------- whole documents


def _byte_level_document(pre: dict[str, Any], added: list[dict[str, Any]]) -> str:
    """A byte-level BPE over the 256 bytes plus a few merges, with the given pre-tokenizer."""
    from engine.byte_unicode import bytes_to_symbols

    vocab = {bytes_to_symbols(bytes([b])): b for b in range(256)}
    merges = [("Ġ", "t"), ("h", "e"), ("Ġt", "he"), ("1", "2"), ("12", "3"), ("Ġ", "Ġ")]
    for left, right in merges:
        vocab[left + right] = len(vocab)
    for entry in added:
        vocab[entry["content"]] = entry["id"]
    return json.dumps({
        "version": "1.0", "truncation": None, "padding": None, "added_tokens": added, "normalizer": None,
        "pre_tokenizer": pre, "post_processor": None,
        "decoder": {"type": "ByteLevel", "add_prefix_space": True, "trim_offsets": True, "use_regex": True},
        "model": {"type": "BPE", "vocab": vocab, "merges": [f"{a} {b}" for a, b in merges]},
    })


def _added(content: str, token_id: int, *, special: bool, lstrip: bool = False, rstrip: bool = False) -> dict[str, Any]:
    return {"id": token_id, "content": content, "single_word": False, "lstrip": lstrip, "rstrip": rstrip,
            "normalized": False, "special": special}


DOC_TEXTS = ["the theme 123456 then", "  the\n\n\tthe  ", "日本 the 12 <sep>the<sep>  <eot> x", "<eot><eot>the", ""]
DOCUMENTS = {
    "three-splits": {"type": "Sequence", "pretokenizers": [
        {"type": "Split", "pattern": {"Regex": r"\p{N}{1,3}"}, "behavior": "Isolated", "invert": False},
        {"type": "Split", "pattern": {"Regex": "[\u4e00-\u9fa5]+"}, "behavior": "Isolated", "invert": False},
        {"type": "Split", "pattern": {"Regex": r" ?\p{L}+|\s+(?!\S)|\s+|[^\s\p{L}]+"}, "behavior": "Isolated",
         "invert": False},
        {"type": "ByteLevel", "add_prefix_space": False, "trim_offsets": True, "use_regex": False}]},
    "prefix-space-regex": {"type": "ByteLevel", "add_prefix_space": True, "trim_offsets": True, "use_regex": True},
    "prefix-space-after-split": {"type": "Sequence", "pretokenizers": [
        {"type": "Split", "pattern": {"String": " "}, "behavior": "MergedWithNext", "invert": False},
        {"type": "ByteLevel", "add_prefix_space": True, "trim_offsets": True, "use_regex": False}]},
    "digits-punctuation": {"type": "Sequence", "pretokenizers": [
        {"type": "Digits", "individual_digits": True}, {"type": "WhitespaceSplit"},
        {"type": "ByteLevel", "add_prefix_space": False, "trim_offsets": True, "use_regex": False}]},
}
ADDED = [
    _added("<eot>", 300, special=True),
    _added("<sep>", 301, special=False, lstrip=True, rstrip=True),
]


@pytest.mark.parametrize("name", list(DOCUMENTS))
@pytest.mark.parametrize("text", DOC_TEXTS, ids=lambda t: repr(t[:10]))
def test_documents_give_hugging_face_ids(name: str, text: str) -> None:
    document = _byte_level_document(DOCUMENTS[name], ADDED)
    ours = Tokenizer.from_json(document)
    hf = tokenizers.Tokenizer.from_str(document)
    expected = hf.encode(text, add_special_tokens=False).ids
    assert ours.encode(text, allowed_special="all", add_special_tokens=False) == expected
    assert hf.decode(expected, skip_special_tokens=False) == ours.decode(expected)
    # Written back, Hugging Face reads the same tokenizer.
    again = tokenizers.Tokenizer.from_str(ours.to_json())
    assert again.encode(text, add_special_tokens=False).ids == expected


def test_added_tokens_need_no_allowing_special_tokens_do() -> None:
    ours = Tokenizer.from_json(_byte_level_document(DOCUMENTS["three-splits"], ADDED))
    assert ours.encode("a<sep>b") == [ord("a"), 301, ord("b")]
    assert ours.encode_ordinary("a <sep> b<eot>") == [ord("a"), 301, ord("b"), *ours.encode_ordinary("<eot>")]
    with pytest.raises(Exception, match="special token '<eot>'"):
        ours.encode("x<eot>")
    assert ours.special_tokens == {"<eot>": 300}
    assert ours.added_tokens == {"<sep>": 301}
    assert ours.is_special(300) and not ours.is_special(301)


_WORDS_VOCAB = {"[UNK]": 0, "ing": 1, "<mask>": 2, "tok": 3, "a": 4, "is": 5, "é": 6}
_SINGLE_WORD_CASES = {  # (content, id, special, lstrip, rstrip, normalized) of each added token
    "plain": [("ing", 1, False, False, False, False)],
    "lstrip-special": [("<mask>", 2, True, True, False, False)],
    "both-normalized": [("<mask>", 2, False, True, True, True)],
    "rstrip-beside-another": [("ing", 1, False, False, True, False), ("tok", 3, False, False, False, False)],
}


@pytest.mark.parametrize("name", list(_SINGLE_WORD_CASES))
@settings(max_examples=150, deadline=None)
@given(text=st.lists(st.sampled_from(["ing", "<mask>", "tok", " ", "  ", "a", "é", "_", "\u0301", ".", "\n", "²",
                                      "\u200c"]), max_size=8).map("".join))
def test_single_word_added_tokens_match_as_hugging_face(name: str, text: str) -> None:
    """A single_word token next to a word character (Rust's ``\\w``: ``_``, ``é``, a joiner; not
    ``²``) is text; its lstrip/rstrip whitespace does not count as that neighbour."""
    added = [{"id": i, "content": c, "single_word": c != "tok", "lstrip": ls, "rstrip": rs, "normalized": n,
              "special": sp} for c, i, sp, ls, rs, n in _SINGLE_WORD_CASES[name]]
    document = {"version": "1.0", "truncation": None, "padding": None, "added_tokens": added,
                "normalizer": {"type": "Lowercase"}, "pre_tokenizer": {"type": "Whitespace"}, "post_processor": None,
                "decoder": None, "model": {"type": "WordLevel", "vocab": _WORDS_VOCAB, "unk_token": "[UNK]"}}
    ours = Tokenizer.from_json(json.dumps(document))
    theirs = tokenizers.Tokenizer.from_str(json.dumps(document))
    assert ours.encode(text, allowed_special="all") == theirs.encode(text, add_special_tokens=False).ids
    assert json.loads(ours.to_json())["added_tokens"] == added


@pytest.mark.parametrize("text", ["    msg: the text", "msg: the text", "  ", "x <eot> y", "<eot>  y"])
def test_first_prefix_follows_the_original_offset_after_a_normalizer(text: str) -> None:
    """Hugging Face prepends "first"'s "▁" where a piece's original offset is 0: not after a
    Strip normalizer removed the leading spaces, nor after a special token."""
    document = json.loads(_byte_level_document(None, ADDED))  # type: ignore[arg-type]
    document["normalizer"] = {"type": "Strip", "strip_left": True, "strip_right": True}
    document["pre_tokenizer"] = {"type": "Metaspace", "replacement": "▁", "prepend_scheme": "first", "split": True}
    document["decoder"] = None
    document["model"] = {"type": "WordPiece", "unk_token": "<unk>", "continuing_subword_prefix": "##",
                         "max_input_chars_per_word": 100,
                         "vocab": {t: i for i, t in enumerate(["<unk>", "▁", "▁msg", "msg", ":", "▁the", "the", "▁text",
                                                               "text", "x", "▁x", "y", "▁y", "<eot>", "<sep>"])}}
    document["added_tokens"] = [{**entry, "id": 13 + i} for i, entry in enumerate(ADDED)]
    ours = Tokenizer.from_json(json.dumps(document))
    hf = tokenizers.Tokenizer.from_str(json.dumps(document))
    expected = hf.encode(text, add_special_tokens=False).ids
    assert ours.encode(text, allowed_special="all", add_special_tokens=False) == expected
    spans = ours.encode_with_offsets(text, allowed_special="all", add_special_tokens=False)
    assert [span.id for span in spans] == expected
