"""sentencepiece-style BPE (``--model bpe --level spm``): exact pieces on a tiny corpus, and a model
trained on half the held-out lines that gives the same ids on the other half in sentencepiece
(its ``tokenizer.model``), in Hugging Face ``tokenizers`` and read back by us (its ``tokenizer.json``)."""

from __future__ import annotations

import re
from pathlib import Path

import pytest
from hypothesis import example, given
from hypothesis import strategies as st

from engine.cli import main
from engine.formats.spm_model import load_spm_model
from engine.tokenizer import Tokenizer
from engine.trainers import make_options, option_specs, train
from engine.trainers.bpe_spm import SpmBpeOptions, spelled, unmarked_words
from engine.trainers.packed import PackedStrings
from tests.engine.cli_run import run
from tests.heldout import heldout_lines

TINY = "low lower newest widest\nthe 2024 low, lowest!\n\n  new  low\n"
SPECIAL_LITERALS = ("<s>", "</s>", "<unk>")  # matched as added tokens by HF, read as text by sentencepiece


def test_words_are_sentencepieces() -> None:
    assert unmarked_words("a  b\n\n\nc d\n  \nx\u2581y\r\n") == ["a", "", "b", "c", "d", "", "", "", "x", "y\r"]
    assert unmarked_words(" cut before a space\nnext") == ["cut", "before", "a", "space", "next"]
    assert unmarked_words("\n\n") == []


def reference_spm_words(text: str) -> list[str]:
    """The words the obvious way: empty lines dropped, a dummy ``▁`` and ``▁`` for each space per line."""
    mid_line = text.startswith(" ")
    text = re.sub("\n{2,}", "\n", text).strip("\n")
    if not text:
        return []
    joined = text.replace(" ", "\u2581").replace("\n", "\u2581")
    return ["\u2581" + part for part in (joined if mid_line else "\u2581" + joined).split("\u2581")[1:]]


@given(st.text(st.sampled_from(" \n\n\n\r\u2581ab東"), max_size=40) | st.text(max_size=40))
def test_words_match_the_reference(text: str) -> None:
    assert ["\u2581" + word for word in unmarked_words(text)] == reference_spm_words(text)


@given(st.lists(st.characters(), min_size=1, max_size=30, unique=True).flatmap(
    lambda alphabet: st.tuples(st.just(alphabet), st.lists(st.text(st.sampled_from(alphabet), min_size=1), max_size=8))))
@example((["\ud800"], ["\ud800"]))  # a lone surrogate in the text: UTF-32 needs surrogatepass to carry it
def test_segments_are_spelled_by_alphabet_index(case: tuple[list[str], list[str]]) -> None:
    alphabet, segs = case
    symbols = spelled(PackedStrings.of(segs), alphabet)
    index = {c: i for i, c in enumerate(alphabet)}
    assert symbols.lengths.tolist() == [len(seg) for seg in segs]
    assert symbols.codes.tolist() == [index[c] for seg in segs for c in seg]


def test_an_index_in_the_surrogate_range_is_a_symbol() -> None:
    alphabet = [chr(i) for i in range(0x10000, 0x10000 + 0xD801)]
    assert spelled(PackedStrings.of([alphabet[0xD800] + alphabet[7], alphabet[0]]), alphabet).strings() == \
        ["\ud800\x07", "\x00"]


def test_tiny_corpus_pieces(tmp_path: Path) -> None:
    corpus = tmp_path / "tiny.txt"
    corpus.write_text(TINY, encoding="utf-8")
    result = train("bpe", [corpus], {"level": "spm", "vocab_size": 30, "byte_fallback": False,
                                     "character_coverage": 0.9})
    # ("▁", "l"), ("l", "o") and ("o", "w") all count 5: the greatest as UTF-8 bytes goes first.
    # Digits merge with nothing; "d h i r 4" are the rarest 10% of characters, left out.
    assert result.tokenizer.model.pieces() == [
        ("<unk>", 0.0), ("<s>", 0.0), ("</s>", 0.0),
        ("▁l", -0.0), ("▁lo", -1.0), ("▁low", -2.0), ("st", -3.0), ("est", -4.0), ("▁n", -5.0), ("▁ne", -6.0),
        ("▁new", -7.0), ("▁newest", -8.0), ("▁lowest", -9.0), ("▁lowe", -10.0), ("▁w", -11.0), ("▁t", -12.0),
        ("▁", -13.0), ("w", -14.0), ("e", -15.0), ("l", -16.0), ("o", -17.0), ("t", -18.0), ("s", -19.0),
        ("2", -20.0), ("n", -21.0), ("!", -22.0), (",", -23.0), ("0", -24.0)]
    assert result.stats["merges"][:3] == [[16, 19, 5], [3, 20, 5], [4, 17, 5]]
    tokenizer = result.tokenizer
    assert tokenizer.encode_ordinary("lowest 12 newer") == [12, 16, 0, 23, 10, 18, 0]
    assert tokenizer.decode(tokenizer.encode_ordinary("lowest 2 new")) == "lowest 2 new"


def test_the_compression_curve_counts_each_words_space(tmp_path: Path) -> None:
    corpus = tmp_path / "tiny.txt"
    corpus.write_text(TINY, encoding="utf-8")
    result = train("bpe", [corpus], {"level": "spm", "vocab_size": 30, "byte_fallback": False,
                                     "character_coverage": 1.0})
    # Each line's text with a "▁" (3 bytes, one symbol) for every space and before every line.
    spelled_text = "".join("▁" + line.replace(" ", "▁") for line in TINY.splitlines() if line)
    curve = result.stats["curve"]
    assert curve[0][1] == round(len(spelled_text.encode()) / len(spelled_text), 4)
    tokens = sum(len(result.tokenizer.encode_ordinary(line)) for line in TINY.splitlines() if line)
    assert curve[-1][1] == round(len(spelled_text.encode()) / tokens, 4)


def test_byte_fallback_pieces_come_after_the_specials(tmp_path: Path) -> None:
    corpus = tmp_path / "tiny.txt"
    corpus.write_text(TINY, encoding="utf-8")
    tokenizer = train("bpe", [corpus], {"level": "spm", "vocab_size": 280}).tokenizer
    pieces = [piece for piece, _ in tokenizer.model.pieces()]
    assert pieces[:4] == ["<unk>", "<s>", "</s>", "<0x00>"] and pieces[258:263] == ["<0xFF>", "▁l", "▁lo", "▁low", "st"]
    assert tokenizer.encode_ordinary("é") == [pieces.index("▁"), 3 + 0xC3, 3 + 0xA9]


def test_level_spm_is_a_bpe_option() -> None:
    specs = {spec.name: spec for spec in option_specs("bpe")}
    assert specs["level"].choices is not None and "spm" in specs["level"].choices
    assert (specs["character_coverage"].default, specs["byte_fallback"].default, specs["split_digits"].default) == (
        0.9995, True, True)
    options = make_options("bpe", {"level": "spm", "min_frequency": "2", "pretokenizer": ""})  # defaults: ignored
    assert options == SpmBpeOptions()
    assert make_options("bpe", {"level": "byte", "split_digits": False}).level == "byte"  # type: ignore[attr-defined]


@pytest.mark.parametrize(("flags", "message"), [
    pytest.param(("--character-coverage", "1.5"), "--character-coverage=1.5 must be above 0 and at most 1", id="coverage"),
    pytest.param(("--vocab-size", "100"), "--vocab-size=100 must be between 260", id="floor"),
    pytest.param(("--vocab-size", "262"), "--vocab-size=262 cannot hold the 17 characters", id="alphabet"),
    pytest.param(("--pretokenizer", "gpt2"), "--pretokenizer does nothing at --level spm", id="other-level"),
    pytest.param(("--special-token", "<pad>"), "--special-token does nothing at --level spm (it always has <unk> <s> </s>)", id="specials"),
])
def test_bad_options_give_one_line(tmp_path: Path, capsys: pytest.CaptureFixture[str], flags: tuple[str, ...],
                                   message: str) -> None:
    corpus = tmp_path / "tiny.txt"
    corpus.write_text(TINY, encoding="utf-8")
    code, out, err = run(capsys, "train", "--model", "bpe", "--level", "spm", *flags, "-o", str(tmp_path / "out"),
                         str(corpus))
    assert code != 0 and out == "" and len(err.strip().splitlines()) == 1 and message in err, err
    assert not (tmp_path / "out").exists()


# ------------------------------------------------------------------ held-out interoperability
@pytest.fixture(scope="module")
def trained(tmp_path_factory: pytest.TempPathFactory) -> tuple[Path, list[str]]:
    """``tokenforge train --model bpe --level spm`` on every other held-out line; the rest held out."""
    lines = heldout_lines()
    folder = tmp_path_factory.mktemp("spm-bpe")
    corpus = folder / "train.txt"
    corpus.write_text("\n".join(lines[::2]) + "\n", encoding="utf-8")
    code = main(["train", "--model", "bpe", "--level", "spm", "--vocab-size", "4000", "-o", str(folder / "out"),
                 str(corpus)])
    assert code == 0
    return folder / "out", lines[1::2]


def test_cli_writes_json_and_model(trained: tuple[Path, list[str]]) -> None:
    out, _ = trained
    assert sorted(p.name for p in out.iterdir()) == ["tokenizer.json", "tokenizer.model"]
    tokenizer = load_spm_model((out / "tokenizer.model").read_bytes())
    assert tokenizer.vocab_size == 4000 and tokenizer.model.level == "spm"


def test_sentencepiece_gives_our_ids(trained: tuple[Path, list[str]]) -> None:
    spm = pytest.importorskip("sentencepiece")
    out, held = trained
    ours = load_spm_model((out / "tokenizer.model").read_bytes())
    reference = spm.SentencePieceProcessor(model_file=str(out / "tokenizer.model"))
    assert len(held) > 2000
    wrong = [line for line in held if ours.encode_ordinary(line) != reference.encode(line)]
    assert wrong == []


def test_hugging_face_gives_our_ids(trained: tuple[Path, list[str]]) -> None:
    tokenizers = pytest.importorskip("tokenizers")
    out, held = trained
    ours = load_spm_model((out / "tokenizer.model").read_bytes())
    theirs = tokenizers.Tokenizer.from_file(str(out / "tokenizer.json"))
    texts = [line for line in held if not any(s in line for s in SPECIAL_LITERALS)]
    wrong = [line for line in texts if ours.encode_ordinary(line) != theirs.encode(line, add_special_tokens=False).ids]
    assert wrong == []


def test_our_tokenizer_json_reads_back(trained: tuple[Path, list[str]]) -> None:
    out, held = trained
    ours = load_spm_model((out / "tokenizer.model").read_bytes())
    saved = Tokenizer.from_file(out / "tokenizer.json")
    again = Tokenizer.from_json((out / "tokenizer.json").read_text(encoding="utf-8"))
    assert [line for line in held if again.encode_ordinary(line) != ours.encode_ordinary(line)] == []
    assert [line for line in held if saved.encode_ordinary(line) != ours.encode_ordinary(line)] == []
