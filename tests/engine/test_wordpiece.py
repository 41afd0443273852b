"""WordPiece: the trainer against hand-computed merges and a slow reference, the encoder, and
the round trip through Hugging Face ``tokenizers``."""

from __future__ import annotations

import json
from collections import Counter
from fractions import Fraction
from pathlib import Path

import pytest
from hypothesis import given, settings
from hypothesis import strategies as st

from engine.errors import ConfigError, FormatError
from engine.models.wordpiece import WordPiece
from engine.tokenizer import Tokenizer
from engine.trainers import limits, train
from engine.trainers.counting import count_pretokens
from engine.trainers.wordpiece import WordPieceOptions, learn

HUG = {"hug": 10, "pug": 5, "pun": 12, "bun": 4, "hugs": 5}
BASE = ["[PAD]", "[UNK]", "[CLS]", "[SEP]", "[MASK]", "b", "g", "h", "n", "p", "s", "u", "##g", "##n", "##s", "##u"]


def reference_learn(word_counts: dict[str, int], options: WordPieceOptions) -> list[str]:
    """Obviously correct and slow: recount everything before every merge, compare exact fractions."""
    prefix = options.continuing_subword_prefix
    words = {w: [w[0]] + [prefix + c for c in w[1:]] for w in word_counts}
    vocab = list(dict.fromkeys([*options.special_tokens, *sorted({c for w in words for c in w})]))
    vocab += sorted({s for split in words.values() for s in split[1:]})
    vocab = list(dict.fromkeys(vocab))
    while len(vocab) < options.vocab_size:
        symbols: Counter[str] = Counter()
        pairs: Counter[tuple[str, str]] = Counter()
        for word, split in words.items():
            for s in split:
                symbols[s] += word_counts[word]
            for pair in zip(split, split[1:]):
                pairs[pair] += word_counts[word]
        eligible = [p for p, n in pairs.items() if n >= max(options.min_frequency, 1)]
        if not eligible:
            break

        def score(p: tuple[str, str]) -> Fraction:
            n = pairs[p]
            return Fraction(n, symbols[p[0]] * symbols[p[1]]) if options.score == "likelihood" else Fraction(n)

        best = max(eligible, key=lambda p: (score(p), p))
        merged = best[0] + best[1].removeprefix(prefix)
        if merged not in vocab:
            vocab.append(merged)
        for word, split in words.items():
            out, i = [], 0
            while i < len(split):
                if i + 1 < len(split) and (split[i], split[i + 1]) == best:
                    out.append(merged)
                    i += 2
                else:
                    out.append(split[i])
                    i += 1
            words[word] = out
    return vocab


# -------------------------------------------------------------------------- training
@pytest.mark.parametrize(
    ("score", "merged"),
    [
        # likelihood: ##g+##s scores 5/(20*5); then six pairs tie at 1/36 and ("p", "##u") is the
        # greatest; then 1/19 ties go to ("h", "##u"); ("b", "##u") scores 4/(4*4); ...
        ("likelihood", ["##gs", "pu", "hu", "bu", "hugs", "hug", "bun", "pun", "pug"]),
        # frequency (Hugging Face's order): ##u+##g 20, ##u+##n 16, h+##ug 15, p+##un 12, then
        # p+##ug and hug+##s tie at 5 and "p" > "hug".
        ("frequency", ["##ug", "##un", "hug", "pun", "pug", "hugs", "bun"]),
    ],
    ids=["likelihood", "frequency"],
)
def test_hug_corpus_merges_by_hand(score: str, merged: list[str]) -> None:
    options = WordPieceOptions(vocab_size=100, score=score, min_frequency=0)
    vocab, merges, _ = learn(HUG, options)
    assert vocab == BASE + merged
    assert [m[0] + m[1].removeprefix("##") for m in merges] == merged


def test_frequency_mode_matches_hugging_face_on_the_hug_corpus() -> None:
    tokenizers = pytest.importorskip("tokenizers")
    hf = tokenizers.Tokenizer(tokenizers.models.WordPiece(unk_token="[UNK]"))
    hf.pre_tokenizer = tokenizers.pre_tokenizers.BertPreTokenizer()
    trainer = tokenizers.trainers.WordPieceTrainer(vocab_size=100, special_tokens=list(BASE[:5]))
    hf.train_from_iterator([" ".join([w] * n) for w, n in HUG.items()], trainer=trainer)
    ours, _, _ = learn(HUG, WordPieceOptions(vocab_size=100, score="frequency", min_frequency=0))
    theirs = sorted(hf.get_vocab().items(), key=lambda kv: kv[1])
    assert set(ours) == {t for t, _ in theirs}
    assert ours[len(BASE):] == [t for t, _ in theirs][len(BASE):]


@pytest.mark.parametrize("score", ["likelihood", "frequency"])
@pytest.mark.parametrize("min_frequency", [0, 3])
@settings(max_examples=40)
@given(
    corpus=st.dictionaries(
        st.text(alphabet="abcdé", min_size=1, max_size=7), st.integers(min_value=1, max_value=9), min_size=1, max_size=12
    ),
    extra=st.integers(min_value=0, max_value=25),
)
def test_fast_trainer_equals_the_reference(score: str, min_frequency: int, corpus: dict[str, int], extra: int) -> None:
    alphabet = {c for w in corpus for c in w}
    base = 1 + len(alphabet) + len({c for w in corpus for c in w[1:]})
    options = WordPieceOptions(vocab_size=base + extra, score=score, min_frequency=min_frequency, special_tokens=("[UNK]",))
    assert learn(corpus, options)[0] == reference_learn(corpus, options)


def test_limit_alphabet_keeps_the_most_frequent_characters_and_drops_other_words() -> None:
    options = WordPieceOptions(vocab_size=12, limit_alphabet=2, special_tokens=("[UNK]",), min_frequency=0)
    vocab, merges, _ = learn({"aab": 5, "bz": 1, "x": 1}, options)
    assert vocab[:5] == ["[UNK]", "a", "b", "##a", "##b"]
    assert [m[:2] for m in merges] == [("a", "##a"), ("aa", "##b")]


def write(tmp_path: Path, name: str, text: str) -> Path:
    path = tmp_path / name
    path.write_text(text, encoding="utf-8")
    return path


CORPUS = (
    "The quick brown fox jumps over the lazy dog. Unbelievable! The foxes were jumping, "
    "and the dogs weren't amused; naïve café owners hugged pugs and buns.\n"
) * 30 + "Tokenizers split words into word pieces; pieces rejoin into words.\n<|endoftext|>\n" * 20


def test_training_is_deterministic(tmp_path: Path) -> None:
    path = write(tmp_path, "corpus.txt", CORPUS)
    first = train("wordpiece", [path], {"vocab_size": 120}).tokenizer.to_json()
    second = train("wordpiece", [path], {"vocab_size": 120}).tokenizer.to_json()
    assert first == second


def test_one_or_two_counting_workers_train_the_same_vocabulary(tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> None:
    monkeypatch.setattr(limits, "cpu_count", lambda: 2)  # room for 2 workers on a 1-CPU machine
    path = write(tmp_path, "corpus.txt", CORPUS * 8)
    one = train("wordpiece", [path], {"vocab_size": 120, "num_workers": 1}).tokenizer.to_json()
    assert train("wordpiece", [path], {"vocab_size": 120, "num_workers": 2}).tokenizer.to_json() == one
    with pytest.raises(ConfigError, match=r"num_workers=0 must be between 1 and"):
        WordPieceOptions(num_workers=0)


@pytest.mark.parametrize("score", ["likelihood", "frequency"])
def test_export_loads_in_hugging_face_with_identical_ids(tmp_path: Path, score: str) -> None:
    tokenizers = pytest.importorskip("tokenizers")
    path = write(tmp_path, "corpus.txt", CORPUS)
    result = train("wordpiece", [path], {"vocab_size": 150, "score": score, "template": "[CLS] $A [SEP]"})
    ours = result.tokenizer
    out = tmp_path / "tokenizer.json"
    ours.save(out)
    theirs = tokenizers.Tokenizer.from_file(str(out))
    held_out = [
        "The lazy fox hugged a café owner's pug!",
        "Naïve dogs JUMPED over brown buns; unbelievable.",
        "emoji 🙂 and ünknown çharacters, Zebra-quagga",
        "x" * 101 + " word",
    ]
    for text in held_out:
        assert ours.encode(text) == theirs.encode(text).ids
    assert ours.encode("the fox")[0] == ours.token_to_id("[CLS]")
    assert Tokenizer.from_file(out).to_json() == ours.to_json()


def test_stats_and_unk(tmp_path: Path) -> None:
    path = write(tmp_path, "corpus.txt", CORPUS)
    result = train("wordpiece", [path], {"vocab_size": 100})
    assert result.stats["algorithm"] == "wordpiece"
    assert result.stats["vocab_size"] == 100
    assert result.stats["curve"][-1][0] == 100
    tok = result.tokenizer
    assert tok.encode("🙂") == [tok.token_to_id("[UNK]")]


# -------------------------------------------------------------------------- the model
MODEL = WordPiece({"[UNK]": 0, "hug": 1, "##s": 2, "p": 3, "##un": 4, "##u": 5, "##g": 6, "b": 7})


@pytest.mark.parametrize(
    ("word", "pieces"),
    [
        ("hugs", ["hug", "##s"]),
        ("pun", ["p", "##un"]),
        ("pug", ["p", "##u", "##g"]),
        ("bun", ["b", "##un"]),
        ("hugx", ["[UNK]"]),  # one unmatched position makes the whole word unknown
        ("", []),
    ],
    ids=["longest-first", "prefers-##un", "falls-back", "b-##un", "unmatched", "empty"],
)
def test_greedy_longest_match_first(word: str, pieces: list[str]) -> None:
    assert [MODEL.id_to_token(i) for i in MODEL.tokenize(word)] == pieces


def test_long_words_are_unknown() -> None:
    model = WordPiece({"[UNK]": 0, "a": 1, "##a": 2}, max_input_chars_per_word=5)
    assert model.tokenize("aaaaa") == [1, 2, 2, 2, 2]
    assert model.tokenize("aaaaaa") == [0]


def test_surface_bytes_strip_the_prefix() -> None:
    assert (MODEL.token_bytes(2), MODEL.surface_bytes(2)) == (b"##s", b"s")


def test_missing_unk_is_a_clear_error() -> None:
    model = WordPiece({"a": 0})
    with pytest.raises(ConfigError, match=r"The word 'b' has no WordPiece segmentation .* add it"):
        model.tokenize("b")


def test_from_hf_rejects_a_bad_vocab() -> None:
    with pytest.raises(FormatError, match="needs a \"vocab\" object"):
        WordPiece.from_hf({"type": "WordPiece", "vocab": ["a"]})


# -------------------------------------------------------------------------- options and files
@pytest.mark.parametrize(
    ("options", "message"),
    [
        ({"vocab_size": 5, "limit_alphabet": 10}, r"vocab_size 5 is smaller than the 5 special tokens plus the alphabet; use vocab_size of at least 15"),
        ({"normalizer": "nfx"}, r"Unknown normalizer 'nfx'; choose one of: none, nfc, nfkc, nfd, nfkd"),
        ({"score": "bleu"}, r"Unknown WordPiece score 'bleu'"),
        ({"unk_token": "<unk>"}, r"The unknown token '<unk>' is not among special_tokens"),
        ({"template": "[BOS] $A"}, r"The template token '\[BOS\]' is not a special token"),
        ({"continuing_subword_prefix": ""}, r"continuing_subword_prefix must not be empty"),
    ],
    ids=["vocab-below-alphabet", "unknown-normalizer", "unknown-score", "unk-not-special", "bad-template", "no-prefix"],
)
def test_bad_options_raise_config_error(options: dict[str, object], message: str) -> None:
    with pytest.raises(ConfigError, match=message):
        WordPieceOptions(**options)  # type: ignore[arg-type]


def test_vocab_smaller_than_the_corpus_alphabet(tmp_path: Path) -> None:
    path = write(tmp_path, "corpus.txt", "abcdefghij klmnop")
    with pytest.raises(ConfigError, match=r"vocab_size 10 is smaller than the \d+ special tokens and alphabet symbols"):
        train("wordpiece", [path], {"vocab_size": 10})


def test_a_file_that_is_not_utf8_is_a_format_error(tmp_path: Path) -> None:
    path = tmp_path / "latin1.txt"
    path.write_bytes("café".encode("latin-1"))
    with pytest.raises(FormatError, match=r"latin1.txt: The corpus is not UTF-8 text \(byte 3 cannot be decoded\)"):
        train("wordpiece", [path], {"vocab_size": 100})


# -------------------------------------------------------------------------- word counting
def test_word_counts_equal_pretokenizing_the_whole_text(tmp_path: Path) -> None:
    from engine.normalizers import get_normalizer
    from engine.pretokenizers import BertPreTokenizer

    text = CORPUS + "Ça va? ÉCOLE\x1cx 中文字 (a+b)=c ΟΔΟΣ" * 3
    path = write(tmp_path, "corpus.txt", text)
    names = ["nfkc", "strip_accents", "lowercase"]
    counts = count_pretokens([path], special_tokens=["<|endoftext|>"], split="bert", normalizer=get_normalizer(names))
    expected = Counter(BertPreTokenizer().pieces(get_normalizer(names).normalize(text.replace("<|endoftext|>", " "))))
    assert counts == expected


def test_fast_strip_accents_equals_the_reference() -> None:
    from engine.normalizers import StripAccents, strip_marks_reference

    text = "Ça va? ÉCOLE naïve Ångström 한국어 ḱṷṓn ﬁ"
    stripped = StripAccents().normalize(text)
    assert stripped == strip_marks_reference(text)
    assert stripped.startswith("Ca va? ECOLE naive Angstrom ")  # Hangul stays decomposed into jamo (NFD)


@settings(max_examples=60)
@given(st.lists(st.sampled_from(["hug", "pug", "pun", "bun", "hugs", "gun", "sun"]), min_size=1, max_size=12))
def test_decode_inverts_encode_on_known_words(words: list[str]) -> None:
    tokenizer = _hug_tokenizer()
    text = " ".join(words)
    assert tokenizer.decode(tokenizer.encode(text)) == text


_CACHE: dict[str, Tokenizer] = {}


def _hug_tokenizer() -> Tokenizer:
    if "hug" not in _CACHE:
        from engine.trainers.wordpiece import build_tokenizer

        # The likelihood score's hand-checked merges (test_hug_corpus_merges_by_hand) give "pu", not "pun".
        vocab, _, _ = learn(HUG, WordPieceOptions(vocab_size=22, score="likelihood", min_frequency=0))
        _CACHE["hug"] = build_tokenizer(vocab, WordPieceOptions(vocab_size=22))
    return _CACHE["hug"]


def test_hf_json_model_object() -> None:
    data = json.loads(_hug_tokenizer().to_json())
    assert data["model"]["type"] == "WordPiece"
    assert data["model"]["continuing_subword_prefix"] == "##"
    assert data["pre_tokenizer"] == {"type": "BertPreTokenizer"}
    assert data["decoder"] == {"type": "WordPiece", "prefix": "##", "cleanup": True}


def test_offsets_cover_the_original_text() -> None:
    tokenizer = _hug_tokenizer()
    text = "Pun  HUGS!"  # lowercased before matching; "!" is not in the vocabulary
    spans = tokenizer.encode_with_offsets(text)
    assert [(tokenizer.id_to_token(s.id), text[s.char_start : s.char_end]) for s in spans] == [
        ("pu", "Pu"), ("##n", "n"), ("hugs", "HUGS"), ("[UNK]", "!"),
    ]


def test_training_can_be_cancelled(tmp_path: Path) -> None:
    from engine.errors import TrainingCancelled

    path = write(tmp_path, "corpus.txt", CORPUS)
    seen: list[str] = []
    with pytest.raises(TrainingCancelled):
        train("wordpiece", [path], {"vocab_size": 120}, progress=lambda stage, *_: seen.append(stage), should_cancel=lambda: True)
    assert seen == []
