"""``.model`` ↔ Tokenizer against the real sentencepiece: ids and decoded text on held-out lines
in several scripts, byte-identical export, piece types, our trained Unigram loading there, and
the CLI accepting a ``.model``."""

from __future__ import annotations

import json
import random
from pathlib import Path

import pytest

from engine.cli import main
from engine.errors import FormatError
from engine.formats.spm_model import dump_spm_model, load_spm_model, piece_type_counts
from engine.formats.spm_proto import (
    CONTROL,
    UNKNOWN,
    UNUSED,
    USER_DEFINED,
    NormalizerSpec,
    Piece,
    TrainerSpec,
    new_model,
    write_model,
)
from engine.tokenizer import Tokenizer
from engine.trainers.base import Reporter
from engine.trainers.unigram import UnigramOptions, train
from tests.shared_data import cs336_file

spm = pytest.importorskip("sentencepiece")
hf = pytest.importorskip("tokenizers")

WORDS = {
    "latin": "the of and to in is was for on that with as by at from café naïve Straße",
    "cyrillic": "привет мир как дела это тест язык книга город время",
    "cjk": "東京 日本 首都 你好 世界 这是 一个 测试 中文 学习",
    "arabic": "مرحبا بالعالم السلام عليكم كتاب مدينة",
    "emoji": "🙂 🚀 👍🏽 ❤️ 🇫🇷",
    "code": "def return x+1; for (int i=0;i<10;i++) {} 1234567 0x1F <mask> foo <ctl> <s> </s>",
}
ODD_SPACE = [" ", "  ", "\t", "\n", "\u3000", "\u00a0", " \t "]


def generated_lines(count: int, seed: int) -> list[str]:
    rng = random.Random(seed)
    pools = {name: words.split() for name, words in WORDS.items()}
    lines = []
    for _ in range(count):
        scripts = rng.sample(list(pools), rng.randint(1, 3))
        parts = [rng.choice(pools[rng.choice(scripts)]) for _ in range(rng.randint(1, 12))]
        lines.append("".join(p + rng.choice(ODD_SPACE if rng.random() < 0.2 else [" "]) for p in parts).rstrip(" "))
    return lines


@pytest.fixture(scope="module")
def corpora(tmp_path_factory: pytest.TempPathFactory) -> tuple[Path, list[str]]:
    text = cs336_file("corpus.en").read_text(encoding="utf-8").splitlines()
    stories = cs336_file("tinystories_sample.txt").read_text(encoding="utf-8").splitlines()
    folder = tmp_path_factory.mktemp("spm_model")
    corpus = folder / "corpus.txt"
    corpus.write_text("\n".join(text[:500] + stories + generated_lines(1500, 1)), encoding="utf-8")
    held_out = [s for line in text[500:] for s in line.split(". ") if s][:1200] + generated_lines(1500, 2)
    held_out += ["", " ", "  leading\tand   trailing  ", "Ⓩ\u0307", "ｶﾞ", "x\u0000y", "﷽"]
    return corpus, held_out


MODELS = {
    "unigram_nmt_nfkc": {"model_type": "unigram", "vocab_size": 1000},
    "unigram_identity": {"model_type": "unigram", "vocab_size": 800, "normalization_rule_name": "identity"},
    "bpe_byte_fallback": {"model_type": "bpe", "vocab_size": 1200, "byte_fallback": True, "split_digits": True,
                          "user_defined_symbols": ["<mask>", "foo"], "control_symbols": ["<ctl>"],
                          "normalization_rule_name": "identity", "remove_extra_whitespaces": False},
    # The dummy ▁ after the text: "a b" is "a▁b▁", decoded "a b " by sentencepiece.
    "unigram_suffix": {"model_type": "unigram", "vocab_size": 1000, "treat_whitespace_as_suffix": True},
    "bpe_suffix_spaces_kept": {"model_type": "bpe", "vocab_size": 1200, "byte_fallback": True,
                               "treat_whitespace_as_suffix": True, "normalization_rule_name": "identity",
                               "remove_extra_whitespaces": False, "user_defined_symbols": ["<mask>"]},
}


@pytest.fixture(scope="module")
def models(corpora: tuple[Path, list[str]]) -> dict[str, bytes]:
    corpus, _ = corpora
    out = {}
    for name, options in MODELS.items():
        prefix = corpus.parent / name
        spm.SentencePieceTrainer.train(input=str(corpus), model_prefix=str(prefix), minloglevel=2, **options)
        out[name] = Path(f"{prefix}.model").read_bytes()
    return out


@pytest.mark.parametrize("name", list(MODELS))
def test_ids_and_text_equal_sentencepiece(models: dict[str, bytes], corpora: tuple[Path, list[str]], name: str) -> None:
    _, held_out = corpora
    assert len(held_out) >= 2000
    tokenizer = load_spm_model(models[name])
    reference = spm.SentencePieceProcessor(model_proto=models[name])
    wrong_ids = [line for line in held_out if tokenizer.encode_ordinary(line) != reference.encode(line)]
    assert wrong_ids == []
    wrong_text = [line for line in held_out if tokenizer.decode(reference.encode(line)) != reference.decode(reference.encode(line))]
    assert wrong_text == []


@pytest.mark.parametrize("name", list(MODELS))
def test_export_is_byte_identical_and_types_match(models: dict[str, bytes], name: str) -> None:
    tokenizer = load_spm_model(models[name])
    assert dump_spm_model(tokenizer) == models[name]
    reference = spm.SentencePieceProcessor(model_proto=models[name])
    counts = piece_type_counts(tokenizer)
    ids = range(reference.get_piece_size())
    assert counts["CONTROL"] == sum(map(reference.is_control, ids))
    assert counts["BYTE"] == sum(map(reference.is_byte, ids))
    assert counts["UNKNOWN"] == sum(map(reference.is_unknown, ids)) == 1
    assert counts["UNUSED"] == sum(map(reference.is_unused, ids)) == 0
    assert sum(counts.values()) == reference.get_piece_size() == tokenizer.vocab_size


@pytest.mark.parametrize("name", ["unigram_nmt_nfkc", "unigram_identity", "unigram_suffix", "bpe_suffix_spaces_kept"])
def test_the_tokenizer_json_download_gives_the_same_ids_in_hugging_face(
        models: dict[str, bytes], corpora: tuple[Path, list[str]], name: str) -> None:
    # The dummy ▁ after the text is a Replace of the empty match at the end there (Hugging Face
    # has no Append). Left out: lines with "<s>" or "</s>", which Hugging Face matches as control
    # pieces and sentencepiece never does, and with the user-defined "<mask>", which sentencepiece
    # matches before normalizing and the tokenizer.json keeps as a vocabulary entry.
    _, held_out = corpora
    reference = spm.SentencePieceProcessor(model_proto=models[name])
    exported = hf.Tokenizer.from_str(load_spm_model(models[name]).to_json())
    lines = [line for line in held_out if not any(piece in line for piece in ("<s>", "</s>", "<mask>"))]
    assert len(lines) > 1700
    # Texts of several lines: sentencepiece strips the spaces at the text's ends only (Onig's ^ and
    # $ would strip them at every line).
    lines += [" \n ".join(lines[i:i + 3]) + " " for i in range(0, 600, 3)]
    assert [line for line in lines if exported.encode(line, add_special_tokens=False).ids != reference.encode(line)] == []


def test_bpe_model_details(models: dict[str, bytes]) -> None:
    tokenizer = load_spm_model(models["bpe_byte_fallback"])
    assert piece_type_counts(tokenizer) == {"NORMAL": 938, "UNKNOWN": 1, "CONTROL": 3, "USER_DEFINED": 2,
                                            "UNUSED": 0, "BYTE": 256}
    assert tokenizer.special_tokens == {"<s>": 1, "</s>": 2, "<ctl>": 3}
    reference = spm.SentencePieceProcessor(model_proto=models["bpe_byte_fallback"])
    text = "x<mask>foo 1234 ☃ <ctl>"
    assert tokenizer.encode_ordinary(text) == reference.encode(text)
    assert [tokenizer.id_to_token(i) for i in tokenizer.encode_ordinary("☃")][-3:] == ["<0xE2>", "<0x98>", "<0x83>"]
    assert tokenizer.model.to_hf()["byte_fallback"] is True
    assert tokenizer.model.to_hf()["merges"][0] == ["▁", "t"]


def test_user_defined_and_unused_pieces_from_scratch() -> None:
    for model_type in (1, 2):
        pieces = [Piece("<unk>", 0.0, UNKNOWN), Piece("<s>", 0.0, CONTROL), Piece("▁", -1.0), Piece("a", -2.0),
                  Piece("b", -2.0), Piece("ab", -1.0), Piece("▁a", -1.5, UNUSED), Piece("ba", 0.0, USER_DEFINED),
                  Piece("▁ab", -3.0)]
        data = write_model(new_model(pieces, TrainerSpec(model_type=model_type, vocab_size=9),
                                     NormalizerSpec(name="identity")))
        reference = spm.SentencePieceProcessor(model_proto=data)
        tokenizer = load_spm_model(data)
        for text in ["ab", "aab bab", "abba ba", "a", "c ab", "bababa ab"]:
            assert tokenizer.encode_ordinary(text) == reference.encode(text), (model_type, text)
        assert piece_type_counts(tokenizer)["UNUSED"] == 1


@pytest.mark.parametrize(("first", "pieces"), [(-0.0, ["▁", "tu"]), (0.0, ["▁t", "u"]), (-1.0, ["▁", "tu"])],
                         ids=["minus-zero", "zero", "minus-one"])
def test_bpe_ranks_a_score_of_minus_zero_below_zero(first: float, pieces: list[str]) -> None:
    """A trained model's first merge scores -0.0 and merge_tokenizers.py appends pieces scoring 0:
    sentencepiece merges the appended "tu" before "▁t", though the two scores compare equal."""
    vocab = [Piece("<unk>", 0.0, UNKNOWN), Piece("▁t", first), Piece("▁", -2.0), Piece("t", -3.0), Piece("u", -4.0),
             Piece("tu", 0.0)]
    data = write_model(new_model(vocab, TrainerSpec(model_type=2, vocab_size=6), NormalizerSpec(name="identity")))
    reference = spm.SentencePieceProcessor(model_proto=data)
    tokenizer = load_spm_model(data)
    exported = hf.Tokenizer.from_str(tokenizer.to_json())  # and the tokenizer.json download agrees
    for text in ["tu", "tutu", "u tu", "ttu"]:
        assert tokenizer.encode_ordinary(text) == reference.encode(text) == exported.encode(text).ids, (first, text)
    assert reference.encode("tu", out_type=str) == pieces


def test_our_trained_unigram_model_loads_in_sentencepiece(corpora: tuple[Path, list[str]]) -> None:
    corpus, held_out = corpora
    tokenizer = train([corpus], UnigramOptions(vocab_size=700, seed_size=20_000), reporter=Reporter()).tokenizer
    data = dump_spm_model(tokenizer)
    reference = spm.SentencePieceProcessor(model_proto=data)
    counts = piece_type_counts(tokenizer)
    assert counts == {"NORMAL": 700 - 259, "UNKNOWN": 1, "CONTROL": 2, "USER_DEFINED": 0, "UNUSED": 0, "BYTE": 256}
    assert sum(map(reference.is_byte, range(700))) == 256
    # Lines that begin with spaces too: a ▁ goes before them as sentencepiece puts it (it did not
    # before 2026-11-29, when a Metaspace added the ▁ and skipped such lines).
    lines = [*held_out, "  two leading spaces", " one", "   ", "\tno space"]
    assert any(line.startswith(" ") for line in held_out)
    assert [line for line in lines if tokenizer.encode_ordinary(line) != reference.encode(line)] == []
    # Read back from its tokenizer.json (as the web app stores it), it writes the same .model, and
    # Hugging Face gives the same ids.
    stored = Tokenizer.from_json(tokenizer.to_json())
    assert dump_spm_model(stored) == data
    hf = pytest.importorskip("tokenizers").Tokenizer.from_str(tokenizer.to_json())
    plain = [line for line in lines if not any(t in line for t in ("<s>", "</s>", "<unk>"))]  # HF matches those
    assert len(plain) > 100
    assert [line for line in plain if hf.encode(line, add_special_tokens=False).ids != reference.encode(line)] == []
    again = load_spm_model(data)
    assert dump_spm_model(again) == data
    assert [line for line in held_out if again.encode_ordinary(line) != reference.encode(line)] == []


def test_refusals() -> None:
    word = write_model(new_model([Piece("<unk>", 0.0, UNKNOWN), Piece("a")], TrainerSpec(model_type=3), NormalizerSpec()))
    with pytest.raises(FormatError, match="m.model: The trainer_spec's model_type is WORD"):
        load_spm_model(word, source="m.model")
    twice = write_model(new_model([Piece("<unk>", 0.0, UNKNOWN), Piece("<s>", 0.0, CONTROL), Piece("<s>")],
                                  TrainerSpec(), NormalizerSpec()))
    with pytest.raises(FormatError, match="'<s>' is both id 1 and id 2 \\(CONTROL and NORMAL\\)"):
        load_spm_model(twice)


def test_cli_encodes_with_a_model_file(models: dict[str, bytes], tmp_path: Path, capsys: pytest.CaptureFixture[str]) -> None:
    path = tmp_path / "m.bin"  # no .model suffix: found by sniffing
    path.write_bytes(models["unigram_identity"])
    assert main(["encode", "-t", str(path), "--text", "Hello world"]) == 0
    reference = spm.SentencePieceProcessor(model_proto=models["unigram_identity"])
    assert json.loads(capsys.readouterr().out) == reference.encode("Hello world")


@pytest.mark.parametrize("algorithm, options", [("bpe", {"level": "spm"}), ("unigram", {})], ids=["spm-bpe", "unigram"])
def test_nul_is_never_a_piece_so_sentencepiece_loads_our_model(tmp_path: Path, algorithm: str,
                                                               options: dict[str, object]) -> None:
    """A NUL in the corpus: sentencepiece makes no piece of it and refuses a .model that has one (or
    reads it as UNUSED with byte fallback); ours spell it <0x00>, as sentencepiece does."""
    from engine.errors import ConfigError
    from engine.trainers import train as train_any

    corpus = tmp_path / "nul.txt"
    corpus.write_text("ab\x00cd ef\x00\x00 gh\nab cd\n" * 6, encoding="utf-8")
    tokenizer = train_any(algorithm, [corpus], {"vocab_size": 270, **options}).tokenizer
    assert not any("\x00" in piece for piece, _ in tokenizer.model.pieces())
    reference = spm.SentencePieceProcessor(model_proto=dump_spm_model(tokenizer))
    for text in ["ab\x00cd", "\x00", "ef\x00\x00 gh"]:
        assert tokenizer.encode_ordinary(text) == reference.encode(text), repr(text)
    assert 3 in tokenizer.encode_ordinary("\x00")  # <0x00>
    if algorithm == "unigram":  # no dummy ▁ either: no character a piece may hold, one sentence
        nothing = tmp_path / "only-nul.txt"
        nothing.write_text("\x00\x00\n", encoding="utf-8")
        with pytest.raises(ConfigError, match="no character a piece may hold"):
            train_any(algorithm, [nothing], {"vocab_size": 270, "add_dummy_prefix": False})
