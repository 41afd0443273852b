"""Unigram: Viterbi on hand-made vocabularies, sampling, the seed, training by hand and end to
end (determinism, the Hugging Face round trip, bad options), and .vocab files."""

from __future__ import annotations

import json
import math
import random
from collections import Counter
from pathlib import Path

import pytest
from hypothesis import given, settings
from hypothesis import strategies as st

from engine.errors import ConfigError, FormatError
from engine.formats.spm import dumps_vocab, load_vocab, loads_vocab, save_vocab
from engine.models.unigram import BYTE_PIECES, Unigram
from engine.models.unigram_sampling import nbest
from engine.tokenizer import Tokenizer
from engine.trainers import train
from engine.trainers.packed import CountedWords
from engine.trainers.unigram import UnigramOptions, build_tokenizer, rounds_left, train_on_counts
from engine.trainers.unigram.seed import required_chars, seed_pieces

ABRA = [("<unk>", 0.0), ("abra", -3.0), ("cad", -3.0), ("ab", -2.5), ("ra", -2.5)] + [
    (c, -3.0) for c in "abcdr"
]


def pieces_of(model: Unigram, text: str) -> list[str]:
    return [model.id_to_token(i) or "" for i in model.tokenize(text)]


# ----------------------------------------------------------------- the model
def test_viterbi_abracadabra_by_hand() -> None:
    # abra|cad|abra = -9 beats ab|ra|cad|ab|ra = -13 and every split into letters.
    assert pieces_of(Unigram(ABRA), "abracadabra") == ["abra", "cad", "abra"]


def test_viterbi_prefers_the_higher_total() -> None:
    vocab = [("<unk>", 0.0), ("▁a", -1.0), ("b", -2.0), ("▁ab", -4.0), ("a", -1.5), ("▁", -2.0)]
    assert pieces_of(Unigram(vocab), "▁ab") == ["▁a", "b"]  # -3 beats -4 and -5.5


def test_ties_go_to_the_longest_last_piece() -> None:
    vocab = [("<unk>", 0.0), ("ab", -2.0), ("a", -1.0), ("b", -1.0)]
    assert pieces_of(Unigram(vocab), "ab") == ["ab"]


def test_unknown_runs_fuse_into_one_unk() -> None:
    model = Unigram(ABRA)
    assert model.tokenize("azzb") == [model.token_to_id("a"), 0, model.token_to_id("b")]
    assert model.unk_score == -13.0


def test_byte_fallback_spells_unknown_characters() -> None:
    model = Unigram([("<unk>", 0.0)] + [(b, 0.0) for b in BYTE_PIECES] + [("a", -1.0)], byte_fallback=True)
    ids = model.tokenize("aé")
    assert [model.id_to_token(i) for i in ids] == ["a", "<0xC3>", "<0xA9>"]
    assert b"".join(model.token_bytes(i) for i in ids) == "aé".encode()


def test_specials_and_byte_pieces_are_not_matched_in_text() -> None:
    model = Unigram([("<unk>", 0.0)] + [(b, 0.0) for b in BYTE_PIECES] + [("<", -1.0)], byte_fallback=True)
    ids = model.tokenize("<unk>")
    assert b"".join(model.token_bytes(i) for i in ids) == b"<unk>"
    assert 0 not in ids


@pytest.mark.parametrize(
    ("vocab", "message"),
    [
        pytest.param([], "at least one piece", id="empty"),
        pytest.param([("a", 0.0), ("a", -1.0)], "appears twice", id="duplicate"),
        pytest.param([("a", math.nan)], "finite", id="nan"),
        pytest.param([("a", 0.0), ("b", -math.inf)], "finite", id="inf"),
        pytest.param([("a", 0.0), ("b", 2**1000)], "finite", id="int-past-2^1000"),
        pytest.param([("a", 0.0), ("", 0.0)], "piece 1 must be a non-empty string", id="empty-piece"),
        pytest.param([("a", 0.0), (3, 0.0)], "piece 1 must be a non-empty string", id="not-a-string"),
        pytest.param([("a", True)], "piece 0 must be a non-empty string and a number", id="bool-score"),
    ],
)
def test_bad_vocabularies(vocab: list[tuple[str, float]], message: str) -> None:
    with pytest.raises(FormatError, match=message):
        Unigram(vocab)


def test_scores_at_the_edges_are_read_as_floats() -> None:
    # An int score, or a float far beyond any real one, is still a finite number, read as a float.
    for vocab in ([("a", -3), ("b", 2**999), ("c", 0.5)], [("a", -3), ("b", 1e305), ("c", 0.5)]):
        model = Unigram(vocab)
        assert model.pieces() == [(p, float(s)) for p, s in vocab]
        assert all(type(s) is float for _, s in model.pieces())
        assert [model.token_to_id(p) for p, _ in vocab] == [0, 1, 2]


# ----------------------------------------------------------------- sampling
def test_nbest_lists_the_best_paths_in_order() -> None:
    results = nbest(Unigram(ABRA).lattice("abra"), 3)
    assert [(s, [e for _, e, _ in p]) for s, p in results] == [(-3.0, [4]), (-5.0, [2, 4]), (-8.5, [1, 2, 4])]  # a|b|ra ties ab|r|a; found first


@pytest.mark.parametrize("nbest_size", [-1, 3], ids=["ffbs", "nbest3"])
def test_samples_are_segmentations_and_reproducible(nbest_size: int) -> None:
    model = Unigram(ABRA)
    seen = set()
    for seed in range(30):
        ids = model.sample("abracadabra", rng=random.Random(seed), alpha=0.5, nbest_size=nbest_size)
        assert "".join(model.id_to_token(i) or "" for i in ids) == "abracadabra"
        assert ids == model.sample("abracadabra", rng=random.Random(seed), alpha=0.5, nbest_size=nbest_size)
        seen.add(tuple(ids))
    assert len(seen) > 1
    assert model.sample("abracadabra", rng=random.Random(0), nbest_size=1) == model.tokenize("abracadabra")


# ----------------------------------------------------------------- seed and EM pieces
HUG = Counter({"▁hug": 10, "▁pug": 5, "▁pun": 12, "▁bun": 4, "▁hugs": 5})


def test_seed_by_hand() -> None:
    required = required_chars(CountedWords.of(HUG), 0.9995)
    assert list(required.items()) == [("u", 36), ("▁", 36), ("g", 20), ("p", 17), ("n", 16), ("h", 15), ("s", 5), ("b", 4)]
    seed = seed_pieces(HUG, required, seed_size=100, max_piece_length=16)
    # count x length; "▁hu" (always followed by g), "hu", "▁p" and "bu" are not right-branching.
    assert seed[8:] == [
        ("▁hug", 60.0), ("▁pu", 51.0), ("▁pun", 48.0), ("hug", 45.0), ("ug", 40.0), ("pun", 36.0),
        ("pu", 34.0), ("un", 32.0), ("▁hugs", 25.0), ("hugs", 20.0), ("▁pug", 20.0), ("▁bun", 16.0),
        ("pug", 15.0), ("ugs", 15.0), ("bun", 12.0), ("gs", 10.0),
    ]


def test_training_the_hug_corpus() -> None:
    options = UnigramOptions(vocab_size=20, seed_size=100, byte_fallback=False, special_tokens=("<unk>",))
    model, stats = train_on_counts(HUG, options)
    assert [p for p, _ in model.pieces()] == [
        "<unk>", "▁pun", "▁hug", "▁pug", "▁hugs", "▁bun", "b", "g", "h", "n", "p", "s", "u", "▁",
    ]
    assert stats["seed_size"] == 24


# ----------------------------------------------------------------- training end to end
TEXT = (
    "the quick brown fox jumps over the lazy dog\n"
    "a tokenizer cuts text into pieces and the pieces into ids\n"
    "unigram models score every segmentation and keep the best one\n"
    "sentencepiece trains them with expectation maximization\n"
) * 20 + "rare words like zyzzyva and quokka appear once\n"


@pytest.fixture()
def corpus(tmp_path: Path) -> Path:
    path = tmp_path / "corpus.txt"
    path.write_text(TEXT, encoding="utf-8")
    return path


def test_training_is_deterministic(corpus: Path) -> None:
    options = {"vocab_size": 120, "seed_size": 2000, "byte_fallback": False}
    first = train("unigram", [corpus], options).tokenizer.to_json()
    second = train("unigram", [corpus], options).tokenizer.to_json()
    assert first == second


def test_pruning_rounds_left_follow_the_shrinking_factor() -> None:
    assert rounds_left(100, 50, 0.75) == 2  # this round keeps 75; then 56, then 50
    assert rounds_left(60, 50, 0.75) == 0  # this round reaches 50: the last
    assert rounds_left(1_000_000, 35_200, 0.75) == 11


def test_em_progress_has_a_total_and_ends_at_it(corpus: Path) -> None:
    seen: list[tuple[int, int]] = []
    options = {"vocab_size": 120, "seed_size": 2000, "byte_fallback": False}
    train("unigram", [corpus], options,
          progress=lambda stage, current, total: seen.append((current, total)) if stage == "EM" else None)
    assert seen and all(0 <= current <= total for current, total in seen)
    assert all(current < total for current, total in seen[:-1]) and seen[-1][0] == seen[-1][1]  # ends at 100%


def test_hf_tokenizers_gives_identical_ids(corpus: Path, tmp_path: Path) -> None:
    tokenizers = pytest.importorskip("tokenizers")
    ours = train("unigram", [corpus], {"vocab_size": 120, "seed_size": 2000, "byte_fallback": False}).tokenizer
    path = tmp_path / "tokenizer.json"
    ours.save(path)
    theirs = tokenizers.Tokenizer.from_file(str(path))
    for line in ["the lazy fox cuts pieces", "quokka zyzzyva unigram", "tokenizers keep the best ids", "qwerty"]:
        assert theirs.encode(line, add_special_tokens=False).ids == ours.encode(line)


@pytest.mark.parametrize("add_dummy_prefix", [True, False])
def test_byte_fallback_exports_the_sentencepiece_decoder_chain_and_reads_it_back(
        corpus: Path, add_dummy_prefix: bool) -> None:
    tokenizers = pytest.importorskip("tokenizers")
    ours = train("unigram", [corpus], {"vocab_size": 300, "seed_size": 2000, "add_dummy_prefix": add_dummy_prefix}).tokenizer
    document = ours.to_json()
    chain = [d["type"] for d in json.loads(document)["decoder"]["decoders"]]
    assert chain == ["Replace", "ByteFallback", "Fuse"] + (["Strip"] if add_dummy_prefix else [])
    assert Tokenizer.from_json(document).to_json() == document
    theirs = tokenizers.Tokenizer.from_str(document)
    for text in ["café\n日本 🙂", "  lead and trail  ", "the lazy fox"]:
        ids = ours.encode(text)
        assert theirs.encode(text, add_special_tokens=False).ids == ids
        assert theirs.decode(ids) == ours.decode(ids)
    assert ours.decode(ours.encode("café\n日本 🙂")) == "café\n日本 🙂"
    # A file with the plain Metaspace decoder (ours before, or an import's) is written back with the chain.
    plain = json.loads(document) | {"decoder": {"type": "Metaspace", "replacement": "▁", "split": True,
                                                "prepend_scheme": "always" if add_dummy_prefix else "never"}}
    assert Tokenizer.from_json(json.dumps(plain)).to_json() == document


def test_without_split_by_whitespace_pieces_cross_spaces_as_in_sentencepiece(corpus: Path, tmp_path: Path) -> None:
    # sentencepiece's rule: ▁ may then sit inside a piece ("▁of▁the"), never at the end of a longer one.
    tokenizers = pytest.importorskip("tokenizers")
    options = {"vocab_size": 200, "seed_size": 2000, "byte_fallback": False, "split_by_whitespace": False}
    ours = train("unigram", [corpus], options).tokenizer
    vocab = ours.model.vocab()
    crossing = sorted(p for p in vocab if "▁" in p[1:])
    assert crossing == ["a▁a", "eep▁the▁best▁one", "s▁t", "ver▁the▁lazy▁dog", "▁pieces▁into▁ids"]
    assert not [p for p in vocab if len(p) > 1 and p.endswith("▁")]
    assert vocab["ver▁the▁lazy▁dog"] in ours.encode("jumps over the lazy dog")
    path = tmp_path / "tokenizer.json"
    ours.save(path)
    theirs = tokenizers.Tokenizer.from_file(str(path))
    for line in ["the lazy fox cuts pieces", "quokka zyzzyva unigram", "tokenizers keep  the best ids", "qwerty"]:
        assert theirs.encode(line, add_special_tokens=False).ids == ours.encode(line)
    with_split = train("unigram", [corpus], {**options, "split_by_whitespace": True}).tokenizer
    assert not [p for p in with_split.model.vocab() if "▁" in p[1:]]


def test_text_that_spells_a_byte_or_special_piece_keeps_one_id() -> None:
    words = Counter({"<0x0A>": 500, "<s>": 400, "▁ab": 30, "▁ba": 20})
    options = UnigramOptions(vocab_size=280, seed_size=1000, split_by_unicode_script=False)  # else "0x" is no piece
    pieces = [p for p, _ in train_on_counts(words, options)[0].pieces()]
    assert len(pieces) == len(set(pieces)) and pieces.count("<0x0A>") == pieces.count("<s>") == 1


def test_vocab_smaller_than_the_alphabet_is_a_config_error(corpus: Path) -> None:
    with pytest.raises(ConfigError, match="required characters"):
        train("unigram", [corpus], {"vocab_size": 10, "seed_size": 2000, "byte_fallback": False})


@pytest.mark.parametrize(
    ("options", "message"),
    [
        pytest.param({"vocab_size": 3}, "leaves no room", id="only-specials"),
        pytest.param({"shrinking_factor": 1.0}, "shrinking_factor", id="shrink"),
        pytest.param({"character_coverage": 0.0}, "character_coverage", id="coverage"),
        pytest.param({"special_tokens": []}, "unknown token", id="no-unk"),
        pytest.param({"normalization": "rot13"}, "Unknown normalizer", id="normalizer"),
    ],
)
def test_bad_options(corpus: Path, options: dict[str, object], message: str) -> None:
    with pytest.raises(ConfigError, match=message):
        train("unigram", [corpus], options)


# ----------------------------------------------------------------- .vocab files
def test_vocab_file_round_trip(tmp_path: Path) -> None:
    model = Unigram(ABRA)
    path = tmp_path / "m.vocab"
    save_vocab(model, path)
    assert path.read_text(encoding="utf-8").splitlines()[:2] == ["<unk>\t0.0", "abra\t-3.0"]
    again = load_vocab(path)
    assert again.pieces() == model.pieces() and again.unk_id == 0


@pytest.mark.parametrize(
    ("text", "message"),
    [
        pytest.param("<unk>\t0\nabc\n", "line 2: Expected 'piece<TAB>score'", id="no-tab"),
        pytest.param("<unk>\t0\nab\tx1\n", "line 2: The score 'x1'", id="bad-score"),
        pytest.param("<unk>\t0\nab\t-1\nab\t-2\n", "line 3: The piece 'ab' already", id="duplicate"),
        pytest.param("ab\t-1\n", "no <unk>", id="no-unk"),
        pytest.param("", "empty", id="empty"),
    ],
)
def test_bad_vocab_files(text: str, message: str) -> None:
    with pytest.raises(FormatError, match=message):
        loads_vocab(text, source="m.vocab")


# ----------------------------------------------------------------- properties
BYTE_MODEL = Unigram([("<unk>", 0.0)] + [(b, 0.0) for b in BYTE_PIECES] + ABRA[1:] + [("▁", -2.0)], byte_fallback=True)


@settings(max_examples=200, deadline=None)
@given(st.text(min_size=1, max_size=40))
def test_byte_fallback_round_trips_any_text(text: str) -> None:
    ids = BYTE_MODEL.tokenize(text)
    assert b"".join(BYTE_MODEL.token_bytes(i) for i in ids) == text.encode("utf-8")


@settings(max_examples=100, deadline=None)
@given(st.text(alphabet=st.sampled_from("abcdr z\u00e9\u4e2d"), max_size=40).filter(lambda t: not t.startswith(" ")))
def test_pipeline_round_trips(text: str) -> None:
    options = UnigramOptions(vocab_size=300, seed_size=300, byte_fallback=True, special_tokens=("<unk>",))
    tokenizer = build_tokenizer(BYTE_MODEL, options)
    assert tokenizer.decode(tokenizer.encode(text)) == text


def test_vocab_text_is_json_safe() -> None:
    assert json.loads(json.dumps(Unigram(ABRA).to_hf()))["vocab"][1] == ["abra", -3.0]
    assert dumps_vocab(Unigram(ABRA)).count("\n") == len(ABRA)
