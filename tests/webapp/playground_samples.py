"""Small tokenizers of each kind for the playground tests, built in memory (no files needed).

``gpt2()`` is the real GPT-2, from ``tests/shared_data.py``'s ``gpt2_files`` (which skips the
test where the files are absent).
"""

from __future__ import annotations

import functools

from engine import Tokenizer, byte_level_bpe
from engine.decoders import MetaspaceDecoder, WordPieceDecoder
from engine.models.unigram import Unigram
from engine.models.wordpiece import WordPiece
from engine.normalizers import get_normalizer
from engine.post_processors import TemplateProcessing
from engine.pretokenizers import BertPreTokenizer, Metaspace
from tests.shared_data import gpt2_files

EOT = "<|endoftext|>"
MERGES = [(b"t", b"h"), (b"th", b"e"), (b" ", b"w"), (b" w", b"o"), (b"\xc3", b"\xa9")]


def byte_bpe(name: str = "tiny-bpe", merges: list[tuple[bytes, bytes]] | None = None) -> Tokenizer:
    """Byte-level BPE: the 256 bytes, a few merges (ids 256…), and ``<|endoftext|>`` last."""
    merges = MERGES if merges is None else merges
    vocab = {i: bytes([i]) for i in range(256)}
    for left, right in merges:
        vocab[len(vocab)] = left + right
    return byte_level_bpe(vocab, merges, special_tokens={EOT: len(vocab)}, name=name)


def wordpiece() -> Tokenizer:
    """A BERT-style WordPiece with lower-casing, ``[CLS] $A [SEP]`` and a few words."""
    tokens = ["[PAD]", "[UNK]", "[CLS]", "[SEP]", "hello", "world", "un", "##able", "##s", "!", "h", "##e"]
    model = WordPiece({t: i for i, t in enumerate(tokens)})
    specials = {"[PAD]": 0, "[UNK]": 1, "[CLS]": 2, "[SEP]": 3}
    return Tokenizer(model, normalizer=get_normalizer("lowercase"), pre_tokenizer=BertPreTokenizer(),
                     special_tokens=specials, post_processor=TemplateProcessing("[CLS] $A [SEP]", specials),
                     decoder=WordPieceDecoder(), name="tiny-wordpiece")


def unigram() -> Tokenizer:
    """A sentencepiece-style Unigram over a handful of pieces."""
    pieces = [("<unk>", 0.0), ("▁the", -1.0), ("▁", -2.0), ("t", -3.0), ("h", -3.0), ("e", -3.0),
              ("▁cat", -1.5), ("s", -3.5), ("a", -3.0), ("c", -3.0)]
    model = Unigram(pieces, unk_id=0)
    return Tokenizer(model, pre_tokenizer=Metaspace(), special_tokens={"<unk>": 0},
                     decoder=MetaspaceDecoder(), name="tiny-unigram")


def chinese_unigram() -> Tokenizer:
    """A donor for :func:`unigram`: ``▁中国``, ``中``, ``国`` and ``人`` are pieces it lacks."""
    pieces = [("<unk>", 0.0), ("▁中国", -1.0), ("▁", -2.0), ("中", -3.0), ("国", -3.0), ("▁the", -1.0), ("人", -3.0)]
    return Tokenizer(Unigram(pieces, unk_id=0), pre_tokenizer=Metaspace(), special_tokens={"<unk>": 0},
                     decoder=MetaspaceDecoder(), name="donor")


@functools.cache
def _gpt2() -> Tokenizer:
    import json

    from engine.byte_unicode import symbols_to_bytes

    vocab_path, merges_path = gpt2_files()
    vocab = json.loads(vocab_path.read_text(encoding="utf-8"))
    lines = [line for line in merges_path.read_text(encoding="utf-8").splitlines() if line and not line.startswith("#version")]
    merges = [(symbols_to_bytes(a), symbols_to_bytes(b)) for a, b in (line.split(" ") for line in lines)]
    ids = {i: symbols_to_bytes(t) for t, i in vocab.items() if t != EOT}
    return byte_level_bpe(ids, merges, special_tokens={EOT: vocab[EOT]}, name="gpt2")


def gpt2() -> Tokenizer:
    """GPT-2 built from the shared files (cached), or skip."""
    gpt2_files()
    return _gpt2()


def store(app: object, tokenizer: Tokenizer, *, stats: dict | None = None, name: str | None = None,
          team_id: int = 1) -> int:
    """Save ``tokenizer`` as a database row of ``app`` and return its id."""
    from webapp.store.db import get_session
    from webapp.store.models import Tokenizer as Row

    with app.app_context():  # type: ignore[attr-defined]
        session = get_session()
        row = Row(team_id=team_id, name=name or tokenizer.name, algorithm=tokenizer.model.kind, tokenizer_json=tokenizer.to_json(),
                  vocab_size=tokenizer.vocab_size, stats=stats or {}, config={})
        session.add(row)
        session.commit()
        return row.id
