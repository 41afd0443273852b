"""GPT-2 (vocab.json + merges.txt) and tiktoken (rank file + sidecar): round trips, validation
that names the line, and fuzzing that proves malformed files only ever raise FormatError."""

from __future__ import annotations

import base64
import json
from pathlib import Path

import pytest
from hypothesis import given
from hypothesis import strategies as st

from engine.byte_unicode import bytes_to_symbols
from engine.errors import ConfigError, FormatError, TokenforgeError
from engine.formats.gpt2 import (
    MERGES_HEADER,
    build_gpt2,
    dumps_gpt2,
    dumps_merges,
    dumps_vocab,
    load_gpt2,
    parse_merges_txt,
    parse_vocab_json,
    parse_vocab_lines,
    save_gpt2,
)
from engine.formats.tiktoken import (
    dumps_ranks,
    dumps_sidecar,
    load_tiktoken,
    loads_tiktoken,
    save_tiktoken,
    sidecar_path,
)
from engine.presets import byte_level_bpe
from engine.tokenizer import Tokenizer

EOT = "<|endoftext|>"
MERGES = [(b"t", b"h"), (b"th", b"e"), (b" ", b"the"), (b"c", b"a"), (b" ", b"ca"), (b" ca", b"t")]
TEXT = "the cat sat on the mat, é 🙃\n\n  the  cathe"


def tiny(pretokenizer: str = "gpt2") -> Tokenizer:
    vocab = {b + 1: bytes([b]) for b in range(256)}
    for index, (left, right) in enumerate(MERGES):
        vocab[257 + index] = left + right
    return byte_level_bpe(vocab, MERGES, pretokenizer=pretokenizer, special_tokens={EOT: 0})


def vocab_text(extra: dict[str, int] | None = None, drop: str | None = None) -> str:
    vocab = {bytes_to_symbols(bytes([b])): b for b in range(256)}
    vocab.update({"Ġ": 32, "th": 256, "the": 257})
    vocab.update(extra or {})
    if drop is not None:
        del vocab[drop]
    return json.dumps(vocab, indent=1)


# ----------------------------------------------------------------------------- GPT-2 files
@pytest.mark.parametrize("pretokenizer", ["gpt2", "gpt4", "o200k"])
def test_gpt2_round_trip(tmp_path: Path, pretokenizer: str) -> None:
    original = tiny(pretokenizer)
    save_gpt2(original, tmp_path / "vocab.json", tmp_path / "merges.txt")
    assert (tmp_path / "merges.txt").read_text(encoding="utf-8").splitlines()[:3] == [MERGES_HEADER, "t h", "th e"]
    loaded = load_gpt2(tmp_path / "vocab.json", tmp_path / "merges.txt", pretokenizer=pretokenizer, special_tokens=[EOT])
    assert loaded.model.merges == original.model.merges  # type: ignore[attr-defined]
    assert loaded.special_tokens == {EOT: 0}
    assert loaded.encode(TEXT + EOT, allowed_special="all") == original.encode(TEXT + EOT, allowed_special="all")
    assert dumps_vocab(loaded) == dumps_vocab(original) and dumps_merges(loaded) == dumps_merges(original)
    assert dumps_gpt2(original) == (dumps_vocab(original), dumps_merges(original))  # the names made once serve both


@pytest.mark.parametrize("header", [pytest.param("", id="no-header"), pytest.param("#version: 0.2\n", id="header")])
def test_merges_with_or_without_header(header: str) -> None:
    assert parse_merges_txt(header + "t h\n# #\n\nth e\n") == [
        ("t", "h", 1 + bool(header)),
        ("#", "#", 2 + bool(header)),
        ("th", "e", 4 + bool(header)),
    ]


def test_special_token_missing_from_vocab_gets_next_id() -> None:
    tokenizer = build_gpt2(parse_vocab_json(vocab_text()), parse_merges_txt("t h\nth e"), special_tokens=["<s>"])
    assert tokenizer.special_tokens == {"<s>": 258}
    assert tokenizer.encode("<s>the", allowed_special="all") == [258, 257]


@pytest.mark.parametrize(
    ("vocab", "merges", "message"),
    [
        pytest.param(vocab_text(), "t h\nth e\nth x\n", "merges.txt, line 3: The merge 'th x' uses the merge result 'thx', which is not in the vocabulary.", id="result-missing"),
        pytest.param(vocab_text(), "#version: 0.2\nt h\nq\u0100 e\n", "merges.txt, line 3: The merge 'q\u0100 e' uses the token 'q\u0100', which is not in the vocabulary.", id="part-missing"),
        pytest.param(vocab_text(), "t h\nth  e\n", "merges.txt, line 2: A merge must be two tokens separated by one space, not 'th  e'.", id="three-parts"),
        pytest.param(vocab_text(), "t h\n☃ e\n", "merges.txt, line 2: The merge '☃ e' uses the token '☃', which is not in the vocabulary.", id="outside-alphabet"),
        pytest.param(vocab_text(drop="a"), "t h\n", "vocab.json: The vocabulary lacks the single byte 0x61 ('a'); 1 of the 256 single bytes are missing and byte-level BPE needs all of them.", id="missing-byte"),
        pytest.param(vocab_text({"x!": 256}), "", "vocab.json, line 260: Id 256 is used twice: by 'th' and by 'x!'.", id="duplicate-id"),
        pytest.param('{\n"a": 1,\n"a": 2\n}', "", "vocab.json, line 3: The token 'a' appears twice.", id="duplicate-token"),
        pytest.param('{\n"a": -1}', "", "vocab.json, line 2: The id of token 'a' must be a non-negative integer, not -1.", id="negative-id"),
        pytest.param('{"a": 1,\n"b" 2}', "", "vocab.json, line 2: Expected ':' after the token 'b'.", id="bad-json"),
        pytest.param('["a"]', "", "vocab.json, line 1: A vocab.json file must be one JSON object of token to id, starting with '{'.", id="not-object"),
        pytest.param(vocab_text({"<s>x☃": 300}), "", "vocab.json, line 260: The token '<s>x☃' has characters outside GPT-2's byte alphabet; if it is a special token, pass it with --special-token / special_tokens.", id="non-alphabet-token"),
    ],
)
def test_gpt2_validation_names_the_line(vocab: str, merges: str, message: str) -> None:
    with pytest.raises(FormatError) as error:
        parsed, lines = parse_vocab_lines(vocab)
        build_gpt2(parsed, parse_merges_txt(merges), vocab_lines=lines)
    assert str(error.value) == message


def test_gpt2_file_that_is_not_utf8(tmp_path: Path) -> None:
    (tmp_path / "vocab.json").write_bytes(b'{"\xff": 1}')
    (tmp_path / "merges.txt").write_text("", encoding="utf-8")
    with pytest.raises(FormatError, match=r"vocab.json: The file is not UTF-8 text \(bad byte at offset 2\)"):
        load_gpt2(tmp_path / "vocab.json", tmp_path / "merges.txt")


@given(vocab=st.text(max_size=200), merges=st.text(max_size=200))
def test_gpt2_parsers_raise_only_format_errors_on_text(vocab: str, merges: str) -> None:
    try:
        build_gpt2(parse_vocab_json(vocab), parse_merges_txt(merges))
    except FormatError:
        pass


@given(entries=st.dictionaries(st.text(max_size=4), st.integers(-2, 300) | st.text(max_size=3) | st.none(), max_size=20),
       merges=st.lists(st.text(st.sampled_from("thĠe #x "), max_size=5), max_size=10))
def test_gpt2_parsers_raise_only_format_errors_on_near_valid_files(entries: dict[str, object], merges: list[str]) -> None:
    base = json.loads(vocab_text())
    base.update(entries)
    try:
        build_gpt2(parse_vocab_json(json.dumps(base)), parse_merges_txt("\n".join(["t h", *merges])))
    except FormatError:
        pass


# ----------------------------------------------------------------------------- tiktoken files
def test_tiktoken_round_trip(tmp_path: Path) -> None:
    original = tiny("gpt4")
    side = save_tiktoken(original, tmp_path / "tiny.tiktoken")
    assert side == sidecar_path(tmp_path / "tiny.tiktoken") == tmp_path / "tiny.tiktoken.json"
    assert json.loads(side.read_text(encoding="utf-8"))["special_tokens"] == {EOT: 0}
    assert (tmp_path / "tiny.tiktoken").read_text(encoding="ascii").splitlines()[0] == "AA== 1"
    loaded = load_tiktoken(tmp_path / "tiny.tiktoken")
    assert loaded.model.merges == original.model.merges  # type: ignore[attr-defined]
    assert loaded.encode(TEXT + EOT, allowed_special="all") == original.encode(TEXT + EOT, allowed_special="all")


def test_tiktoken_file_loads_in_tiktoken(tmp_path: Path) -> None:
    tiktoken = pytest.importorskip("tiktoken")
    from tiktoken.load import load_tiktoken_bpe

    original = tiny("gpt2")
    save_tiktoken(original, tmp_path / "tiny.tiktoken")
    sidecar = json.loads((tmp_path / "tiny.tiktoken.json").read_text(encoding="utf-8"))
    encoding = tiktoken.Encoding(mergeable_ranks=load_tiktoken_bpe(str(tmp_path / "tiny.tiktoken")), **sidecar)
    assert encoding.encode(TEXT + EOT, allowed_special="all") == original.encode(TEXT + EOT, allowed_special="all")


def test_tiktoken_without_sidecar_needs_a_pretokenizer() -> None:
    ranks = dumps_ranks(tiny())
    with pytest.raises(ConfigError, match="give its sidecar"):
        loads_tiktoken(ranks)
    tokenizer = loads_tiktoken(ranks, pretokenizer="gpt2", special_tokens=["<s>"])
    assert tokenizer.special_tokens == {"<s>": 263}
    assert tokenizer.encode(" the cat") == [259, 262]


def b64(data: bytes) -> str:
    return base64.b64encode(data).decode()


BYTES = "".join(f"{b64(bytes([b]))} {b}\n" for b in range(256))


@pytest.mark.parametrize(
    ("ranks", "message"),
    [
        pytest.param(BYTES + f"{b64(b'ab')} 256\n{b64(b'ab')} 257\n", "line 258: The token 'ab' appears twice (first on line 257).", id="duplicate-token"),
        pytest.param(BYTES + f"{b64(b'ab')} 255\n", "line 257: The rank 255 is used twice (first on line 256).", id="duplicate-rank"),
        pytest.param(BYTES + "@@@ 256\n", "line 257: '@@@' is not valid base64.", id="bad-base64"),
        pytest.param(BYTES + f"{b64(b'ab')} -3\n", "line 257: The rank must be a non-negative integer, not '-3'.", id="bad-rank"),
        pytest.param(BYTES + f"{b64(b'ab')}\n", "line 257: A line must be a base64 token and a rank, not 'YWI='.", id="one-field"),
        pytest.param(BYTES.replace(f"{b64(b'a')} 97\n", ""), "The file lacks the single byte 0x61; 1 of the 256 single bytes are missing and byte-level BPE needs all of them.", id="missing-byte"),
    ],
)
def test_tiktoken_validation_names_the_line(ranks: str, message: str) -> None:
    with pytest.raises(FormatError) as error:
        loads_tiktoken(ranks, pretokenizer="gpt2", source="x.tiktoken")
    assert str(error.value) == f"x.tiktoken, {message}" if message.startswith("line") else f"x.tiktoken: {message}"


@pytest.mark.parametrize(
    ("sidecar", "message"),
    [
        pytest.param("{", "s.json, line 1: The sidecar is not valid JSON", id="bad-json"),
        pytest.param("{}", 's.json: The sidecar must be a JSON object with a "pat_str" string.', id="no-pattern"),
        pytest.param('{"pat_str": "(", "special_tokens": {}}', "s.json: The pattern is unusable", id="bad-regex"),
        pytest.param('{"pat_str": "x", "special_tokens": {"a": 1, "b": 1}}', "s.json: The special tokens 'a' and 'b' share the id 1; each needs its own.", id="shared-id"),
        pytest.param('{"pat_str": "x", "special_tokens": {"a": 5}}', "x.tiktoken: The special token id 5 is also the rank", id="id-clash"),
    ],
)
def test_tiktoken_sidecar_validation(sidecar: str, message: str) -> None:
    with pytest.raises(FormatError) as error:
        loads_tiktoken(BYTES, sidecar, source="x.tiktoken", sidecar_source="s.json")
    assert str(error.value).startswith(message)


def test_tiktoken_writer_refuses_out_of_order_merges() -> None:
    vocab = {b: bytes([b]) for b in range(256)} | {300: b"th", 299: b"the"}
    tokenizer = byte_level_bpe(vocab, [(b"t", b"h"), (b"th", b"e")])
    with pytest.raises(ConfigError, match="The merge th e is out of id order"):
        dumps_ranks(tokenizer)
    assert json.loads(dumps_sidecar(tokenizer))["pat_str"] == tokenizer.pre_tokenizer.pattern  # type: ignore[union-attr]


@given(ranks=st.text(max_size=300), sidecar=st.none() | st.text(max_size=100))
def test_tiktoken_parsers_raise_only_format_errors_on_text(ranks: str, sidecar: str | None) -> None:
    try:
        loads_tiktoken(ranks, sidecar, pretokenizer=None if sidecar is not None else "gpt2")
    except FormatError:
        pass


@given(extra=st.lists(st.tuples(st.binary(min_size=1, max_size=4), st.integers(0, 300)), max_size=10))
def test_tiktoken_parser_on_near_valid_files(extra: list[tuple[bytes, int]]) -> None:
    text = BYTES + "".join(f"{b64(token)} {rank}\n" for token, rank in extra)
    try:
        loads_tiktoken(text, pretokenizer="gpt2")
    except TokenforgeError as exc:
        assert isinstance(exc, FormatError)
