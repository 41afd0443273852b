"""The ``.model`` wire codec: byte-identical round trips, edits, files from scratch, and every
refusal (truncation, lengths past their message, limits, sentencepiece's load checks), plus a
Hypothesis fuzz that only FormatError ever comes out."""

from __future__ import annotations

import dataclasses
import random
import struct
import time
from pathlib import Path

import pytest
from hypothesis import given, settings
from hypothesis import strategies as st

from engine.errors import FormatError
from engine.formats import spm_proto
from engine.formats.spm_model import load_spm_model
from engine.formats.spm_proto import (
    BYTE,
    BYTE_PIECES,
    CONTROL,
    UNKNOWN,
    NormalizerSpec,
    Piece,
    TrainerSpec,
    check_model,
    new_model,
    read_model,
    write_model,
)

spm = pytest.importorskip("sentencepiece")

LINES = ["the cat sat on the mat", "a dog ran in the park 123", "Привет мир как дела",
         "你好世界这是测试", "مرحبا بالعالم", "def f(x): return x + 1"]


def _train(folder: Path, name: str, **options: object) -> bytes:
    corpus = folder / "corpus.txt"
    corpus.write_text("\n".join(LINES * 30), encoding="utf-8")
    spm.SentencePieceTrainer.train(input=str(corpus), model_prefix=str(folder / name), minloglevel=2, **options)
    return (folder / f"{name}.model").read_bytes()


@pytest.fixture(scope="module")
def models(tmp_path_factory: pytest.TempPathFactory) -> dict[str, bytes]:
    folder = tmp_path_factory.mktemp("spm_proto")
    return {
        "unigram_nfkc": _train(folder, "u", vocab_size=60, model_type="unigram"),
        "bpe_bytes": _train(folder, "b", vocab_size=330, model_type="bpe", byte_fallback=True,
                            user_defined_symbols=["<mask>"], control_symbols=["<ctl>"],
                            normalization_rule_name="identity"),
    }


@pytest.mark.parametrize("name", ["unigram_nfkc", "bpe_bytes"])
def test_read_then_write_is_byte_identical(models: dict[str, bytes], name: str) -> None:
    data = models[name]
    proto = read_model(data)
    check_model(proto)
    assert write_model(proto) == data


def test_decoded_views(models: dict[str, bytes]) -> None:
    proto = read_model(models["bpe_bytes"])
    assert proto.trainer_spec.model_type == 2
    assert proto.trainer_spec.vocab_size == 330
    assert proto.trainer_spec.byte_fallback is True
    assert (proto.trainer_spec.unk_id, proto.trainer_spec.bos_id, proto.trainer_spec.eos_id,
            proto.trainer_spec.pad_id) == (0, 1, 2, -1)
    assert proto.normalizer_spec.name == "identity"
    assert [(p.piece, p.type) for p in proto.pieces[:5]] == [
        ("<unk>", UNKNOWN), ("<s>", CONTROL), ("</s>", CONTROL), ("<ctl>", CONTROL), ("<mask>", 4)]
    assert sum(p.type == BYTE for p in proto.pieces) == 256
    nfkc = read_model(models["unigram_nfkc"]).normalizer_spec
    assert nfkc.name == "nmt_nfkc" and len(nfkc.precompiled_charsmap) > 100_000


def test_edited_fields_are_reencoded_and_load_in_sentencepiece(models: dict[str, bytes], tmp_path: Path) -> None:
    proto = read_model(models["unigram_nfkc"])
    proto.trainer_spec = dataclasses.replace(proto.trainer_spec, vocab_size=7, pad_id=3)
    proto.normalizer_spec = dataclasses.replace(proto.normalizer_spec, add_dummy_prefix=False)
    proto.pieces[10] = dataclasses.replace(proto.pieces[10], score=-0.5)
    data = write_model(proto)
    again = read_model(data)
    assert (again.trainer_spec.vocab_size, again.trainer_spec.pad_id) == (7, 3)
    assert again.normalizer_spec.add_dummy_prefix is False
    assert again.pieces[10].score == -0.5
    assert again.normalizer_spec.precompiled_charsmap == proto.normalizer_spec.precompiled_charsmap
    sp = spm.SentencePieceProcessor(model_proto=data)
    assert sp.normalize("the cat") == "the▁cat"
    assert sp.get_score(10) == -0.5


def test_model_from_scratch_loads_in_sentencepiece() -> None:
    pieces = [Piece("<unk>", 0.0, UNKNOWN), Piece("<s>", 0.0, CONTROL), Piece("</s>", 0.0, CONTROL),
              Piece("▁", -1.0), Piece("a", -2.0), Piece("b", -2.5), Piece("▁ab", -1.5)]
    data = write_model(new_model(pieces, TrainerSpec(vocab_size=7), NormalizerSpec(name="identity")))
    sp = spm.SentencePieceProcessor(model_proto=data)
    assert sp.encode("ab ba", out_type=str) == ["▁ab", "▁", "b", "a"]
    assert sp.encode("ab ba") == [6, 3, 5, 4]
    assert write_model(read_model(data)) == data


def _piece(text: bytes, extra: bytes = b"") -> bytes:
    body = b"\x0a" + bytes([len(text)]) + text + extra
    return b"\x0a" + bytes([len(body)]) + body


@pytest.mark.parametrize(("data", "message"), [
    pytest.param(b"\x0a", "ends inside the varint of ModelProto field 1 at byte 1", id="truncated-length"),
    pytest.param(b"\x8a", "ends inside the varint of a ModelProto field key at byte 0", id="truncated-key"),
    pytest.param(b"\x0a\x05ab", "ModelProto field 1 at byte 0 claims 5 bytes but its message ends at byte 4",
                 id="length-past-end"),
    pytest.param(b"\x0a\x03\x0a\x05a", "piece 0 field 1 at byte 2 claims 5 bytes but its message ends at byte 5",
                 id="nested-length-past-parent"),
    pytest.param(b"\x08" + b"\xff" * 11, "longer than 10 bytes", id="long-varint"),
    pytest.param(b"\x0b", "wire type 3", id="group"),
    pytest.param(b"\x00", "invalid field number 0", id="field-zero"),
    pytest.param(b"\x0a\x03\x15\x00\x00", "needs 4 bytes but its message ends at byte 5", id="truncated-float"),
    pytest.param(b"\x0a\x02\x10\x01", "score of piece 0 at byte 2 has wire type 0", id="score-not-float"),
    pytest.param(b"\x0a\x03\x0a\x01\xff", "piece 0 field 1 at byte 2 is not UTF-8", id="piece-not-utf8"),
    pytest.param(b"\x12\x02\x18\x01" + b"\x12\x01\x08", "ends inside the varint of trainer_spec field 1",
                 id="trainer-truncated"),
    pytest.param(b"\x12\x02\x20\x00" + b"\x1a\x02\x0a\x00\x0a", "ends inside the varint of ModelProto field 1 at byte 9",
                 id="tail"),
])
def test_malformed_wire_is_refused(data: bytes, message: str) -> None:
    with pytest.raises(FormatError, match=message.replace("(", r"\(")):
        read_model(data)


def test_too_many_pieces_and_huge_charsmap(monkeypatch: pytest.MonkeyPatch) -> None:
    monkeypatch.setattr(spm_proto, "MAX_VOCAB_SIZE", 3)
    with pytest.raises(FormatError, match="4 pieces; at most 3"):
        read_model(_piece(b"a") * 4)
    monkeypatch.setattr(spm_proto, "MAX_CHARSMAP_BYTES", 8)
    with pytest.raises(FormatError, match=r"precompiled_charsmap at byte 2 has 9 bytes; at most 8"):
        read_model(b"\x1a\x0b\x12\x09" + b"x" * 9)


def test_field_count_is_bounded(monkeypatch: pytest.MonkeyPatch) -> None:
    monkeypatch.setattr(spm_proto, "MAX_VOCAB_SIZE", 3)
    monkeypatch.setattr(spm_proto, "MAX_OTHER_FIELDS", 2)
    with pytest.raises(FormatError, match="over 6 fields by byte 12"):
        read_model(b"\x30\x01" * 10)


def _model(*pieces: Piece, byte_fallback: bool = False) -> spm_proto.ModelProto:
    return new_model(list(pieces), TrainerSpec(byte_fallback=byte_fallback), NormalizerSpec())


UNK = Piece("<unk>", 0.0, UNKNOWN)


@pytest.mark.parametrize(("proto", "message"), [
    pytest.param(_model(UNK, Piece("")), "Piece 1 is empty", id="empty"),
    pytest.param(_model(UNK, Piece("a"), Piece("a", 1.0)), "'a' appears twice \\(ids 1 and 2\\)", id="duplicate"),
    pytest.param(_model(UNK, Piece("<u2>", 0.0, UNKNOWN)), "Piece 1 \\('<u2>'\\) is a second UNKNOWN", id="two-unk"),
    pytest.param(_model(UNK, Piece("<0x41>", 0.0, BYTE)), "although byte_fallback is off", id="byte-no-fallback"),
    pytest.param(_model(UNK, Piece("<0xZZ>", 0.0, BYTE), byte_fallback=True), "'<0xZZ>', which is not", id="bad-byte"),
    pytest.param(_model(UNK, *[Piece(b, 0.0, BYTE) for b in BYTE_PIECES[:255]], byte_fallback=True),
                 "BYTE piece <0xFF> is missing", id="missing-byte"),
    pytest.param(_model(Piece("a")), "no UNKNOWN piece", id="no-unk"),
])
def test_sentencepiece_load_checks(proto: spm_proto.ModelProto, message: str) -> None:
    with pytest.raises(FormatError, match=message):
        check_model(read_model(write_model(proto)))
    with pytest.raises(RuntimeError):  # sentencepiece refuses the same files
        spm.SentencePieceProcessor(model_proto=write_model(proto))


def test_same_string_in_two_groups_is_allowed_by_the_check() -> None:
    check_model(_model(UNK, Piece("<s>", 0.0, CONTROL), Piece("<s>")))


def _mutations(data: bytes, seed: int) -> bytes:
    rng = random.Random(seed)
    out = bytearray(data)
    for _ in range(rng.randint(1, 6)):
        action = rng.random()
        at = rng.randrange(len(out) + 1)
        if action < 0.4 and out:
            out[min(at, len(out) - 1)] = rng.randrange(256)
        elif action < 0.7:
            del out[at:at + rng.randint(1, 40)]
        else:
            out[at:at] = bytes(rng.randrange(256) for _ in range(rng.randint(1, 8)))
    return bytes(out)


def _only_format_errors(data: bytes) -> None:
    started = time.perf_counter()
    try:
        tokenizer = load_spm_model(data)
        tokenizer.encode_ordinary("Hello wörld 123 ☃")
    except FormatError:
        pass
    assert time.perf_counter() - started < 2.0


@settings(max_examples=300)
@given(st.binary(max_size=200))
def test_fuzz_random_bytes(data: bytes) -> None:
    _only_format_errors(data)


@settings(max_examples=200)
@given(st.integers(0, 2**32))
def test_fuzz_mutated_real_file(models: dict[str, bytes], seed: int) -> None:
    _only_format_errors(_mutations(models["bpe_bytes"], seed))


def _varint(value: int) -> bytes:
    out = bytearray()
    while value >= 0x80:
        out.append(value & 0x7F | 0x80)
        value >>= 7
    return bytes([*out, value])


def _field(number: int, wire: int, payload: bytes) -> bytes:
    if wire == 2:
        payload = _varint(len(payload)) + payload
    return _varint(number << 3 | wire) + payload


_PIECE_PARTS = st.tuples(
    st.text(max_size=70),  # past 127 UTF-8 bytes with wide characters: a two-byte length
    st.floats(width=32, allow_nan=False),
    st.sampled_from([None, 0, 1, 2, 3, 4, 5, 6, 7, 300]),  # None: no type field (NORMAL); 0, 7, 300: unknown
    st.sampled_from(["plain", "swapped", "extra", "twice"]))


def _encoded_piece(text: str, score: float, kind: int | None, layout: str) -> bytes:
    parts = [_field(1, 2, text.encode("utf-8")), _field(2, 5, struct.pack("<f", score))]
    if kind is not None:
        parts.append(_field(3, 0, _varint(kind)))
    if layout == "swapped":
        parts.reverse()
    elif layout == "extra":
        parts.append(_field(9, 0, b"\x01"))  # a field the reader does not know: kept in the piece's raw bytes
    elif layout == "twice":
        parts.insert(0, _field(1, 2, b"old"))  # proto2: the last occurrence wins
    return _field(1, 2, b"".join(parts))


@settings(max_examples=300)
@given(st.lists(_PIECE_PARTS, min_size=1, max_size=12), st.booleans(), st.integers(0, 12))
def test_pieces_read_in_place_equal_the_general_readers(parts: list[tuple[str, float, int | None, str]],
                                                        with_spec: bool, cut: int) -> None:
    # read_model reads pieces laid out as sentencepiece writes them in place (spm_proto._plain_piece),
    # every other layout field by field: both must give the same pieces, and the same file back.
    spec = _field(2, 2, _field(3, 0, b"\x02")) if with_spec else b""
    pieces = [_encoded_piece(*p) for p in parts]
    data = spec + b"".join(pieces)
    general = [spm_proto._piece(data, f, i)
               for i, f in enumerate(f for f in spm_proto.read_fields(data, 0, len(data), "ModelProto") if f.number == 1)]
    read = read_model(data).pieces
    assert [(p.piece, p.score, p.type, p.raw) for p in read] == [(p.piece, p.score, p.type, p.raw) for p in general]
    assert write_model(read_model(data)) == data
    # Another field among the pieces: the reading resumes after it (the writer then puts it after them).
    split = spec + b"".join(pieces[:cut]) + _field(9, 0, b"\x05") + b"".join(pieces[cut:])
    assert [(p.piece, p.raw) for p in read_model(split).pieces] == [(p.piece, p.raw) for p in read]


def test_pieces_as_sentencepiece_writes_them_skip_the_general_reader(monkeypatch: pytest.MonkeyPatch) -> None:
    # Only the first piece (which marks where the pieces go) takes the field-by-field path.
    pieces = [UNK, *(Piece(f"▁w{i}", -i / 3, [1, 3, 4, 5][i % 4]) for i in range(50)), Piece("x" * 130, -99.0)]
    data = write_model(_model(*pieces))
    general = spm_proto._piece
    calls: list[int] = []
    monkeypatch.setattr(spm_proto, "_piece", lambda *args: calls.append(args[2]) or general(*args))
    assert [(p.piece, p.score, p.type) for p in read_model(data).pieces] == \
        [(p.piece, struct.unpack("<f", struct.pack("<f", p.score))[0], p.type) for p in pieces]
    assert calls == [0, 51]  # the first piece, and the one past 127 bytes
