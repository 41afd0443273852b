"""Hypothesis against every import format: malformed files only ever raise ``TokenforgeError``.

Each format starts from a valid file, which the strategies damage: text edits (hostile snippets
such as ``"zzqq": 2147483648``, deletions, repeated stretches) and, for the JSON formats, a
value anywhere in the document replaced by a hostile one (ids of 2**31 and 10**18, empty and
long strings, deep nesting). Whatever loads must then encode and decode a sample within a time
budget, again raising nothing but our errors. ``tracemalloc`` measures each example's peak: it
must stay under 200 MB (issue #11's target; a single id of 2**31 used to need 17 GB).
"""

from __future__ import annotations

import base64
import json
import tracemalloc
from collections.abc import Callable
from typing import Any

import pytest
from hypothesis import given, settings
from hypothesis import strategies as st

from engine import TokenforgeError, Tokenizer, byte_level_bpe, time_budget
from engine.formats import gpt2, spm, tiktoken, vocab_txt
from engine.models.unigram import Unigram
from engine.models.wordpiece import WordPiece
from engine.pretokenizers import BertPreTokenizer, Metaspace, RegexSplit

FUZZ = settings(max_examples=60, deadline=None)
PEAK_LIMIT = 200 * 2**20
SAMPLE = "Hello, world! <|endoftext|> naïve café 日本 ,,,,"
EOT = "<|endoftext|>"

HOSTILE_INTS = st.sampled_from([-1, 0, 2**31, 2**63, 10**18, 999_999_999_999, 1_999_999, 2_000_000])
HOSTILE_STRINGS = st.sampled_from(["", "a" * 5000, "\x00", "(?:.*,){6}X|\\s|\\S", "(a)|b", "\\b", "[", EOT])
JSON_VALUES = st.recursive(
    st.none() | st.booleans() | st.integers(-(2**70), 2**70) | HOSTILE_INTS | st.floats(allow_nan=False)
    | st.text(max_size=20) | HOSTILE_STRINGS,
    lambda inner: st.lists(inner, max_size=4) | st.dictionaries(st.text(max_size=8), inner, max_size=4),
    max_leaves=12,
)
SNIPPETS = st.sampled_from(['"zzqq": 2147483648,', "999999999999", "-1", '""', "[" * 50, "}", "\\u0000", "\t",
                            "a" * 3000, ", ", "\n", "1e400", "null", "=", "\r\n", " 0\n", "<unk>\t-1\n"])


def bpe() -> Tokenizer:
    vocab = {b: bytes([b]) for b in range(256)} | {256: b"th", 257: b"the", 258: b" w"}
    return byte_level_bpe(vocab, [(b"t", b"h"), (b"th", b"e"), (b" ", b"w")], special_tokens={EOT: 259})


def wordpiece() -> Tokenizer:
    tokens = ["[PAD]", "[UNK]", "[CLS]", "[SEP]", "hello", "world", "##s", "!"]
    return Tokenizer(WordPiece({t: i for i, t in enumerate(tokens)}), pre_tokenizer=BertPreTokenizer(),
                     special_tokens={"[UNK]": 1, "[CLS]": 2})


def unigram() -> Tokenizer:
    model = Unigram([("<unk>", 0.0), ("▁hello", -1.0), ("▁", -2.0), ("h", -3.0), ("e", -3.0)], unk_id=0)
    return Tokenizer(model, pre_tokenizer=Metaspace(), special_tokens={"<unk>": 0})


def custom_pattern() -> Tokenizer:
    vocab = {b: bytes([b]) for b in range(256)}
    return byte_level_bpe(vocab, [], pretokenizer=RegexSplit(r"\w+|\s+|[^\w\s]+"))


def mutate_text(text: str, data: st.DataObject) -> str:
    """A few edits: insert a hostile snippet or random text, delete a stretch, or repeat one."""
    for _ in range(data.draw(st.integers(1, 4), label="edits")):
        at = data.draw(st.integers(0, len(text)), label="at")
        action = data.draw(st.sampled_from(["insert", "delete", "repeat"]), label="action")
        if action == "insert":
            text = text[:at] + data.draw(SNIPPETS | st.text(max_size=20), label="snippet") + text[at:]
        elif action == "delete":
            text = text[:at] + text[at + data.draw(st.integers(1, 60), label="length"):]
        else:
            text = text[:at] + text[at:at + 300] * data.draw(st.integers(2, 4), label="times") + text[at:]
    return text


def mutate_json(document: Any, data: st.DataObject) -> Any:
    """Replace one value somewhere in ``document`` (walking down a random path) by a hostile one."""
    if not isinstance(document, dict | list) or not document or data.draw(st.integers(0, 3), label="stop") == 0:
        return data.draw(JSON_VALUES, label="value")
    if isinstance(document, dict):
        key = data.draw(st.sampled_from(sorted(document)), label="key")
        if data.draw(st.booleans(), label="new key") and isinstance(document.get(key), dict):
            document[key][data.draw(HOSTILE_STRINGS | st.text(max_size=8), label="name")] = data.draw(
                JSON_VALUES, label="value")
            return document
        document[key] = mutate_json(document[key], data)
        return document
    index = data.draw(st.integers(0, len(document) - 1), label="index")
    document[index] = mutate_json(document[index], data)
    return document


def survives(load: Callable[[], Tokenizer | Any]) -> None:
    """``load`` (then encoding a sample) raises only TokenforgeError and peaks under 200 MB."""
    tracemalloc.start()
    try:
        try:
            loaded = load()
            if isinstance(loaded, Tokenizer):
                with time_budget(2):
                    ids = loaded.encode(SAMPLE, allowed_special="all")
                    loaded.encode_with_offsets(SAMPLE, disallowed_special=())
                loaded.decode(ids)
        except TokenforgeError as exc:
            assert str(exc).strip()
        peak = tracemalloc.get_traced_memory()[1]
    finally:
        tracemalloc.stop()
    assert peak < PEAK_LIMIT, f"{peak / 2**20:.0f} MB"


TOKENIZER_JSON = {"bpe": bpe, "wordpiece": wordpiece, "unigram": unigram, "custom-pattern": custom_pattern}


@pytest.mark.parametrize("make", TOKENIZER_JSON.values(), ids=TOKENIZER_JSON.keys())
def test_damaged_tokenizer_json_raises_only_our_errors(make: Callable[[], Tokenizer]) -> None:
    text = make().to_json()

    @FUZZ
    @given(data=st.data(), structured=st.booleans())
    def check(data: st.DataObject, structured: bool) -> None:
        damaged = json.dumps(mutate_json(json.loads(text), data)) if structured else mutate_text(text, data)
        survives(lambda: Tokenizer.from_json(damaged))

    check()


def test_damaged_gpt2_files_raise_only_our_errors() -> None:
    tok = bpe()
    files = {"vocab": gpt2.dumps_vocab(tok), "merges": gpt2.dumps_merges(tok)}

    def load(vocab: str, merges: str) -> Tokenizer:
        parsed, lines = gpt2.parse_vocab_lines(vocab)
        return gpt2.build_gpt2(parsed, gpt2.parse_merges_txt(merges), special_tokens=[EOT], vocab_lines=lines)

    @FUZZ
    @given(data=st.data(), which=st.sampled_from(["vocab", "merges", "vocab-json"]))
    def check(data: st.DataObject, which: str) -> None:
        vocab, merges = files["vocab"], files["merges"]
        if which == "vocab-json":
            vocab = json.dumps(mutate_json(json.loads(vocab), data))
        elif which == "vocab":
            vocab = mutate_text(vocab, data)
        else:
            merges = mutate_text(merges, data)
        survives(lambda: load(vocab, merges))

    check()


def test_damaged_tiktoken_files_raise_only_our_errors() -> None:
    tok = bpe()
    ranks, sidecar = tiktoken.dumps_ranks(tok), tiktoken.dumps_sidecar(tok)
    long_line = f"{base64.b64encode(b'x' * 1200).decode()} 300\n"

    @FUZZ
    @given(data=st.data(), which=st.sampled_from(["ranks", "sidecar", "sidecar-json", "long-token"]))
    def check(data: st.DataObject, which: str) -> None:
        rank_text, side = ranks, sidecar
        if which == "ranks":
            rank_text = mutate_text(ranks, data)
        elif which == "sidecar":
            side = mutate_text(sidecar, data)
        elif which == "sidecar-json":
            side = json.dumps(mutate_json(json.loads(sidecar), data))
        else:
            rank_text = ranks + long_line
        survives(lambda: tiktoken.loads_tiktoken(rank_text, side))

    check()


def test_damaged_vocab_txt_and_sentencepiece_vocab_raise_only_our_errors() -> None:
    words = "[PAD]\n[UNK]\n[CLS]\n[SEP]\nhello\nworld\n##s\n!\n"
    pieces = spm.dumps_vocab(unigram().model)  # type: ignore[arg-type]

    @FUZZ
    @given(data=st.data(), which=st.sampled_from(["vocab.txt", ".vocab"]))
    def check(data: st.DataObject, which: str) -> None:
        if which == "vocab.txt":
            text = mutate_text(words, data)
            survives(lambda: vocab_txt.bert_tokenizer(vocab_txt.parse_vocab_txt(text)))
        else:
            text = mutate_text(pieces, data)
            survives(lambda: Tokenizer(spm.loads_vocab(text), pre_tokenizer=Metaspace()))

    check()
