"""Export a tokenizer in every format that can represent it, each file verified before it is served.

:func:`plan` says, per format, whether this tokenizer can be written and if not why (the button
shows the reason instead of producing a broken file). :func:`build` writes a format's files
and reads them back with the engine's own reader, checking that the ids of a mixed-script sample
are identical; a mismatch raises :class:`ExportError`. :func:`zip_all` bundles every available
format with a README that says how to load each file in ``tokenizers``, ``tiktoken`` and
``transformers``.

Left out: HTTP (``transfer.py``) and the formats themselves (``engine.serialization``,
``engine.formats``).
"""

from __future__ import annotations

import io
import stat
import time
import weakref
import zipfile
from collections.abc import Callable
from dataclasses import dataclass

from engine import ConfigError, FormatError, Tokenizer, TokenforgeError
from engine.serialization import dumps, loads

VERIFY_TEXT = ("Hello, world! The quick brown fox jumps over 13 lazy dogs.\n"
               "  Indented\tline: café naïve coöperate — 日本語のテキスト, Ünïcödé 👩‍🚀🇫🇷.\n")


class ExportError(ValueError):
    """A format could not be written, or did not read back to the same tokenizer."""


@dataclass(frozen=True, slots=True)
class Format:
    """One downloadable format: its key, files, what it is for, and why not, if unavailable."""

    key: str
    label: str
    files: tuple[str, ...]
    description: str
    reason: str | None = None

    @property
    def available(self) -> bool:
        return self.reason is None


def _same_ids(original: Tokenizer, copy: Tokenizer, what: str) -> None:
    a = original.encode(VERIFY_TEXT, disallowed_special=())
    b = copy.encode(VERIFY_TEXT, disallowed_special=())
    if a != b:
        at = next((i for i, (x, y) in enumerate(zip(a, b)) if x != y), min(len(a), len(b)))
        raise ExportError(f"The exported {what} does not read back to the same tokenizer "
                          f"(the ids differ at token {at}); it was not offered for download.")


def _tokenizer_json(tok: Tokenizer) -> dict[str, bytes]:
    text = dumps(tok)
    _same_ids(tok, loads(text), "tokenizer.json")
    return {"tokenizer.json": text.encode("utf-8")}


def _gpt2(tok: Tokenizer) -> dict[str, bytes]:
    from engine.formats import gpt2

    vocab, merges = gpt2.dumps_vocab(tok), gpt2.dumps_merges(tok)
    pre = tok.pre_tokenizer
    if pre is None:
        raise ConfigError("This tokenizer has no pre-tokenizer; vocab.json + merges.txt need one.")
    copy = gpt2.build_gpt2(gpt2.parse_vocab_json(vocab), gpt2.parse_merges_txt(merges), pretokenizer=pre,
                           special_tokens=list(tok.special_tokens))
    if tok.normalizer is not None:
        raise ConfigError("vocab.json + merges.txt cannot hold this tokenizer's normalizer; use tokenizer.json.")
    _same_ids(tok, copy, "vocab.json + merges.txt")
    return {"vocab.json": vocab.encode("utf-8"), "merges.txt": merges.encode("utf-8")}


def _tiktoken(tok: Tokenizer) -> dict[str, bytes]:
    from engine.formats import tiktoken

    ranks, sidecar = tiktoken.dumps_ranks(tok), tiktoken.dumps_sidecar(tok)
    _same_ids(tok, tiktoken.loads_tiktoken(ranks, sidecar), "tiktoken rank file")
    return {"ranks.tiktoken": ranks.encode("ascii"), "ranks.tiktoken.json": sidecar.encode("utf-8")}


def _vocab_txt(tok: Tokenizer) -> dict[str, bytes]:
    from engine.formats.vocab_txt import dumps_vocab_txt, parse_vocab_txt

    if tok.model.kind != "wordpiece":
        raise ConfigError(f"vocab.txt holds WordPiece vocabularies; this tokenizer is {tok.model.kind}.")
    vocab = tok.model.vocab()
    try:
        text = dumps_vocab_txt(vocab)
    except FormatError as exc:
        raise ConfigError(str(exc)) from None
    if parse_vocab_txt(text) != vocab:
        raise ExportError("The exported vocab.txt does not read back to the same vocabulary.")
    return {"vocab.txt": text.encode("utf-8")}


def _spm_vocab(tok: Tokenizer) -> dict[str, bytes]:
    if tok.model.kind != "unigram":
        raise ConfigError(f"A sentencepiece .vocab holds Unigram models; this tokenizer is {tok.model.kind}.")
    from engine.formats import spm

    text = spm.dumps_vocab(tok.model)  # type: ignore[arg-type]
    if spm.loads_vocab(text).pieces() != tok.model.pieces():  # type: ignore[attr-defined]
        raise ExportError("The exported .vocab does not read back to the same pieces and scores.")
    return {"tokenizer.vocab": text.encode("utf-8")}


BUILDERS: dict[str, tuple[str, tuple[str, ...], str, Callable[[Tokenizer], dict[str, bytes]]]] = {
    "tokenizer.json": ("tokenizer.json", ("tokenizer.json",), "The whole pipeline, for Hugging Face tokenizers and transformers.", _tokenizer_json),
    "gpt2": ("vocab.json + merges.txt", ("vocab.json", "merges.txt"), "GPT-2's two files (byte-level BPE).", _gpt2),
    "tiktoken": ("tiktoken rank file", ("ranks.tiktoken", "ranks.tiktoken.json"), "Ranks plus a sidecar with the pattern and special tokens.", _tiktoken),
    "vocab.txt": ("vocab.txt", ("vocab.txt",), "BERT's one-token-a-line WordPiece vocabulary.", _vocab_txt),
    "spm": (".vocab", ("tokenizer.vocab",), "sentencepiece's piece-and-score list (Unigram).", _spm_vocab),
}


def build(tok: Tokenizer, key: str) -> dict[str, bytes]:
    """The files of format ``key``, verified; raises ExportError with the reason if impossible."""
    if key not in BUILDERS:
        raise ExportError(f"There is no download format {key!r}; choose one of {', '.join(BUILDERS)}.")
    try:
        return BUILDERS[key][3](tok)
    except ExportError:
        raise
    except (TokenforgeError, ImportError, ValueError, KeyError) as exc:
        raise ExportError(str(exc)) from None


MAX_REASON = 300  # characters of a reason shown on the page (an engine message may quote a token)


# Plans live as long as their tokenizer (``loaded.py``'s cache decides that), not longer.
_plans: weakref.WeakKeyDictionary[Tokenizer, tuple[Format, ...]] = weakref.WeakKeyDictionary()


def plan(tok: Tokenizer) -> list[Format]:
    """Every format, with the reason it cannot represent this tokenizer where that is so.

    Built once per tokenizer object (they are immutable): writing and reading back every
    format of a large vocabulary takes seconds, too slow to repeat on each view of the page.
    Two threads may both build it once; they get the same answer.
    """
    cached = _plans.get(tok)
    if cached is None:
        cached = _plans[tok] = _plan(tok)
    return list(cached)


def _plan(tok: Tokenizer) -> tuple[Format, ...]:
    out = []
    for key, (label, files, description, _builder) in BUILDERS.items():
        try:
            build(tok, key)
            reason = None
        except ExportError as exc:
            text = str(exc)
            reason = text if len(text) <= MAX_REASON else text[:MAX_REASON] + "…"
        out.append(Format(key, label, files, description, reason))
    return tuple(out)


README = """# {name}

Exported from Tokenforge. Every file below was read back and checked to give the same ids.

{sections}
"""

SECTIONS = {
    "tokenizer.json": """## tokenizer.json (Hugging Face tokenizers, transformers)

    from tokenizers import Tokenizer
    tok = Tokenizer.from_file("tokenizer.json")
    tok.encode("Hello world").ids

    from transformers import PreTrainedTokenizerFast
    tok = PreTrainedTokenizerFast(tokenizer_file="tokenizer.json")
""",
    "gpt2": """## vocab.json + merges.txt (GPT-2 style byte-level BPE)

    from tokenizers import Tokenizer, models, pre_tokenizers, decoders
    tok = Tokenizer(models.BPE.from_file("vocab.json", "merges.txt"))
    tok.pre_tokenizer = pre_tokenizers.ByteLevel(add_prefix_space=False)
    tok.decoder = decoders.ByteLevel()

    from transformers import GPT2TokenizerFast
    tok = GPT2TokenizerFast(vocab_file="vocab.json", merges_file="merges.txt")

These files do not store the split pattern; tokenizer.json does. The pattern used is in
ranks.tiktoken.json (pat_str) when that file is included.
""",
    "tiktoken": """## ranks.tiktoken + ranks.tiktoken.json (tiktoken)

    import json, tiktoken
    from tiktoken.load import load_tiktoken_bpe
    enc = tiktoken.Encoding(mergeable_ranks=load_tiktoken_bpe("ranks.tiktoken"),
                            **json.load(open("ranks.tiktoken.json")))
    enc.encode("Hello world")
""",
    "vocab.txt": """## vocab.txt (WordPiece, BERT)

    from transformers import BertTokenizerFast
    tok = BertTokenizerFast(vocab_file="vocab.txt")

    from tokenizers import BertWordPieceTokenizer
    tok = BertWordPieceTokenizer("vocab.txt")
""",
    "spm": """## tokenizer.vocab (sentencepiece pieces and scores)

One `piece<TAB>score` line per id. sentencepiece itself loads the binary .model, which this is
not; use tokenizer.json with `tokenizers`/`transformers` to run the model.
""",
}


FILE_MODE = 0o644  # rw-r--r--: ``writestr`` with a bare name gives 0600, unreadable to others once unzipped


def _add(archive: zipfile.ZipFile, filename: str, data: str | bytes) -> None:
    """Add one file, readable by everyone (``FILE_MODE``), stamped with the current time."""
    info = zipfile.ZipInfo(filename, date_time=time.localtime()[:6])
    info.compress_type = zipfile.ZIP_DEFLATED
    info.external_attr = (stat.S_IFREG | FILE_MODE) << 16
    archive.writestr(info, data)


def zip_all(tok: Tokenizer, name: str) -> bytes:
    """A zip of every available format plus README.md."""
    buffer = io.BytesIO()
    sections = []
    with zipfile.ZipFile(buffer, "w", zipfile.ZIP_DEFLATED) as archive:
        for key in BUILDERS:
            try:
                files = build(tok, key)
            except ExportError:
                continue
            for filename, data in files.items():
                _add(archive, filename, data)
            sections.append(SECTIONS[key])
        _add(archive, "README.md", README.format(name=name or "tokenizer", sections="\n".join(sections)))
    return buffer.getvalue()
