"""Unigram against the references: our Viterbi gives sentencepiece's ids (its float32 sums and
tie rule), and our ``tokenizer.json`` gives our ids in Hugging Face ``tokenizers`` except where
HF cannot: float32 ties (runs such as ``^^^^``), and literal piece names whose text holds a
character no piece covers. Models are trained on ``corpus.en`` (skipped where it is absent)
plus generated lines with runs and angle brackets."""

from __future__ import annotations

import random
from pathlib import Path

import pytest

from engine.models.unigram import BYTE_PIECES, Unigram, f32
from engine.trainers import train
from engine.trainers.unigram import on_score_grid

RUNS = [c * k for c in "^*-=~#_." for k in range(1, 41)]
LITERALS = ["a <0x18> b", "x <unk> y <s> z </s>", "<0x41><0x0A>", "<unk>", "<s></s>", "see <b>this</b> a < b"]


def split_corpus(cs336: Path, tmp_path: Path) -> tuple[Path, list[str]]:
    """70% of corpus.en, with runs and tags mixed in, to train on; the rest held out."""
    lines = (cs336 / "corpus.en").read_text(encoding="utf-8").splitlines()
    cut = len(lines) * 7 // 10
    rng = random.Random(0)
    out: list[str] = []
    for line in lines[:cut]:
        out.append(line)
        if rng.random() < 0.3:
            out.append(rng.choice("^*-=~#_") * rng.randint(2, 24))
        if rng.random() < 0.2:
            out.append("see <b>this</b> and a < b > c / x0 " + line[:30])
    path = tmp_path / "train.txt"
    path.write_text("\n".join(out) + "\n", encoding="utf-8")
    return path, lines[cut:]


def test_f32_rounds_and_saturates() -> None:
    assert f32(-3.231789) == -3.2317891120910645
    assert f32(1e300) == 3.4028234663852886e38 and f32(-1e300) == -3.4028234663852886e38


def test_to_hf_scores_unmatched_pieces_below_every_cover() -> None:
    vocab = [("<unk>", 0.0), ("<s>", 0.0)] + [(b, 0.0) for b in BYTE_PIECES] + [("a", -2.0), ("<", -5.0)]
    model = Unigram(vocab, byte_fallback=True, special_tokens={"<s>": 1})
    assert model.hf_unmatched_score() == 6 * -5.0 - 1.0  # "<0x18>": 6 characters at -5 at worst
    scores = dict((p, s) for p, s in model.to_hf()["vocab"])
    assert scores["<unk>"] == scores["<s>"] == scores["<0x41>"] == -31.0
    assert scores["a"] == -2.0 and scores["<"] == -5.0
    back = Unigram.from_hf(model.to_hf(), special_tokens={"<s>": 1})
    assert back.pieces() == model.pieces() and back.to_hf() == model.to_hf()  # read back at 0.0


def test_a_literal_with_an_uncovered_character_is_hfs_limit() -> None:
    # HF's unknown score is the lowest of all pieces minus 10, so no score for "<unk>" makes it
    # lose to a path through an unknown ">": HF gives the piece, we spell the text.
    tokenizers = pytest.importorskip("tokenizers")
    vocab = [("<unk>", 0.0), ("<", -3.0), ("u", -3.0), ("n", -3.0), ("k", -3.0)]
    model = Unigram(vocab)
    assert model.tokenize("<unk>") == [1, 2, 3, 4, 0]
    hf = tokenizers.models.Unigram([tuple(e) for e in model.to_hf()["vocab"]], unk_id=0)
    assert [t.id for t in hf.tokenize("<unk>")] == [0]  # the piece <unk>, not the unknown ">"
    assert [t.id for t in hf.tokenize("<un")] == [1, 2, 3]


def test_our_viterbi_gives_sentencepiece_ids(cs336: Path, tmp_path: Path) -> None:
    spm = pytest.importorskip("sentencepiece")
    corpus, held = split_corpus(cs336, tmp_path)
    spm.SentencePieceTrainer.train(
        input=str(corpus), model_prefix=str(tmp_path / "sp"), vocab_size=1000, model_type="unigram",
        normalization_rule_name="identity", byte_fallback=True, remove_extra_whitespaces=False,
        minloglevel=2, num_threads=2)
    sp = spm.SentencePieceProcessor(model_file=str(tmp_path / "sp.model"))
    pieces = [(sp.id_to_piece(i), sp.get_score(i)) for i in range(sp.get_piece_size())]
    controls = {sp.id_to_piece(i): i for i in range(sp.get_piece_size()) if sp.is_control(i)}
    model = Unigram(pieces, unk_id=sp.unk_id(), byte_fallback=True, special_tokens=controls)
    ties = 0
    for line in held + RUNS + LITERALS:
        text = "▁" + line.replace(" ", "▁")
        assert model.tokenize(text) == sp.encode(line), line
        ties += line in RUNS and _float64_path(model, text) != sp.encode(line)
    assert ties > 0  # the runs do exercise float32 ties: float64 sums choose otherwise


def test_exported_json_gives_our_ids_in_hf(cs336: Path, tmp_path: Path) -> None:
    tokenizers = pytest.importorskip("tokenizers")
    corpus, held = split_corpus(cs336, tmp_path)
    ours = train("unigram", [corpus], {"vocab_size": 1000, "seed_size": 20000}).tokenizer
    single = {p for p, _ in ours.model.pieces() if len(p) == 1}
    assert set("<>/0xAunks18") <= single  # every literal is spelled by real pieces, so HF can agree
    hf = tokenizers.Tokenizer.from_str(ours.to_json())
    hf.encode_special_tokens = True  # "<s>" in text is text, as in encode_ordinary
    differ = []
    for line in held + LITERALS + RUNS:
        if hf.encode(line, add_special_tokens=False).ids != ours.encode_ordinary(line):
            differ.append(line)
    # HF sums in float64 and sentencepiece in float32; scores on a binary grid add exactly in
    # both, so even the tied orders in runs of one character fall alike (see the docs).
    assert differ == []
    assert all(s == on_score_grid(s) for _, s in ours.model.pieces())
    assert ours.encode_ordinary("a <0x18> b") == hf.encode("a <0x18> b", add_special_tokens=False).ids


def _float64_path(model: Unigram, text: str) -> list[int]:
    """Viterbi in float64 with the same tie rule: what HF computes for these scores."""
    best = [0.0] + [float("-inf")] * len(text)
    back = [(0, 0)] * (len(text) + 1)
    for i, here in enumerate(model.lattice(text)):
        for end, token_id, score in here:
            if best[i] + score > best[end]:
                best[end], back[end] = best[i] + score, (i, token_id)
    path, end = [], len(text)
    while end:
        start, token_id = back[end]
        path.append((start, end, token_id))
        end = start
    return model.ids_for_path(text, path[::-1])
