"""Export a tokenizer in every format that can represent it, each file verified before it is served.

A format first has to fit the model: GPT-2 and tiktoken files hold byte-level BPE, vocab.txt
WordPiece, a sentencepiece .vocab Unigram. :func:`plan` answers that from the tokenizer's shape
alone (its model class, normalizer and pre-tokenizer), without writing anything, so the page
opens at once even for o200k (building and re-reading its three formats took seconds). A format
for another kind of model is not an error: the page leaves it out and names it once, neutrally.

:func:`build` writes a format's files and reads them back with the engine's own reader, checking
that the ids of a mixed-script sample are identical; a mismatch raises :class:`ExportError`. It
runs only when a file is asked for. The outcome of that check is remembered per tokenizer, so a
second download (or the zip after a download) writes the files without reading them back again,
and a format that failed its check shows the reason on the page from then on.
:func:`zip_all` bundles every format that fits with a README that says how to load each file in
``tokenizers``, ``tiktoken`` and ``transformers``.

Left out: HTTP (``views.py``) and the formats themselves (``engine.tokenizer_json``,
``engine.formats``).
"""

from __future__ import annotations

import io
import stat
import threading
import time
import weakref
import zipfile
from collections.abc import Callable, Mapping
from dataclasses import dataclass
from typing import Any

from engine import BPE, ConfigError, FormatError, TokenforgeError, Tokenizer
from engine.formats.spm_model import is_sentencepiece
from engine.formats.transformers_config import dumps_tokenizer_config

VERIFY_TEXT = ("Hello, world! The quick brown fox jumps over 13 lazy dogs.\n"
               "  Indented\tline: café naïve coöperate — 日本語のテキスト, Ünïcödé 👩‍🚀🇫🇷.\n")


class ExportError(ValueError):
    """A format could not be written, or did not read back to the same tokenizer."""


@dataclass(frozen=True, slots=True)
class Format:
    """One downloadable format: its key, files, what it is for, and why not, if unavailable.

    ``fits`` is False when the format holds another kind of model altogether (vocab.txt for a
    BPE tokenizer): the page leaves such a format out. When it fits but this tokenizer cannot be
    written in it (a normalizer GPT-2 files cannot store), ``reason`` says why.
    """

    key: str
    label: str
    files: tuple[str, ...]
    description: str
    reason: str | None = None
    fits: bool = True
    holds: str = ""  # the kind of model the format is made for ("WordPiece"), empty for any

    @property
    def available(self) -> bool:
        return self.reason is None


class NotForThisModel(ConfigError):
    """The format holds another kind of model; not a fault of this tokenizer."""


def _model_kind(tok: Tokenizer) -> str:
    """The model as people name it: "byte-level BPE", "character-level BPE", "WordPiece", …"""
    kind = tok.model.kind
    if kind == "bpe":
        return "byte-level BPE" if isinstance(tok.model, BPE) else "character-level BPE"
    return {"wordpiece": "WordPiece", "unigram": "Unigram", "wordlevel": "word-level", "char": "character-level",
            "byte": "byte-level", "maxmatch": "max-match"}.get(kind, kind)


def _needs_byte_bpe(tok: Tokenizer, what: str) -> None:
    if not isinstance(tok.model, BPE):
        raise NotForThisModel(f"{what} hold byte-level BPE; this tokenizer is {_model_kind(tok)}.")
def _same_ids(original: Tokenizer, copy: Tokenizer, what: str) -> None:
    a = original.encode(VERIFY_TEXT, disallowed_special=())
    b = copy.encode(VERIFY_TEXT, disallowed_special=())
    if a != b:
        at = next((i for i, (x, y) in enumerate(zip(a, b)) if x != y), min(len(a), len(b)))
        raise ExportError(f"The exported {what} does not read back to the same tokenizer "
                          f"(the ids differ at token {at}); it was not offered for download.")


def _any_model(tok: Tokenizer) -> None:
    """tokenizer.json holds every pipeline the engine can run."""


def _tokenizer_json(tok: Tokenizer, verify: bool) -> dict[str, bytes]:
    text = tok.to_json()
    if verify:
        _same_ids(tok, Tokenizer.from_json(text), "tokenizer.json")
    return {"tokenizer.json": text.encode("utf-8")}


def _transformers_config(tok: Tokenizer, chat: Mapping[str, Any]) -> dict[str, bytes]:
    """``tokenizer_config.json`` for ``AutoTokenizer``, with what an import kept (see :func:`build`)."""
    template = chat.get("template") if isinstance(chat.get("template"), str) else None
    return {"tokenizer_config.json": dumps_tokenizer_config(tok, known=chat, chat_template=template).encode()}


def _no_template(tok: Tokenizer, what: str) -> None:
    """Refuse a tokenizer whose post-processor adds ids (Llama 3.1's bos): ``what`` has no place for it."""
    before, after = tok.post_processor.added if tok.post_processor is not None else ([], [])
    if before or after:
        added = " and ".join(filter(None, (
            tok.decode(before, skip_special_tokens=False), tok.decode(after, skip_special_tokens=False))))
        raise ConfigError(f"{what} cannot hold this tokenizer's template, which adds {added} around the text; "
                          "use tokenizer.json.")


def _gpt2_fits(tok: Tokenizer) -> None:
    _needs_byte_bpe(tok, "GPT-2 files")
    _no_template(tok, "vocab.json + merges.txt")
    if tok.pre_tokenizer is None:
        raise ConfigError("This tokenizer has no pre-tokenizer; vocab.json + merges.txt need one.")
    if tok.normalizer is not None:
        raise ConfigError("vocab.json + merges.txt cannot hold this tokenizer's normalizer; use tokenizer.json.")
    if getattr(tok.model, "ignore_merges", False):
        raise ConfigError("vocab.json + merges.txt cannot say ignore_merges (a pre-token that is in the vocabulary "
                          "is one token, as Llama 3 reads text); use tokenizer.json.")


def _gpt2(tok: Tokenizer, verify: bool) -> dict[str, bytes]:
    from engine.formats import gpt2

    vocab, merges = gpt2.dumps_gpt2(tok)
    if verify:
        copy = gpt2.build_gpt2(gpt2.parse_vocab_json(vocab), gpt2.parse_merges_txt(merges),
                               pretokenizer=tok.pre_tokenizer, special_tokens=list(tok.special_tokens))
        _same_ids(tok, copy, "vocab.json + merges.txt")
    return {"vocab.json": vocab.encode("utf-8"), "merges.txt": merges.encode("utf-8")}


def _tiktoken_fits(tok: Tokenizer) -> None:
    from engine.formats import tiktoken

    _needs_byte_bpe(tok, "tiktoken files")
    _no_template(tok, "A tiktoken rank file")
    if tok.normalizer is not None:
        raise ConfigError("tiktoken has no normalizers; this tokenizer's normalizer cannot be written.")
    tiktoken.dumps_sidecar(tok)  # refuses a pre-tokenizer that is not one regex; cheap


def _tiktoken(tok: Tokenizer, verify: bool) -> dict[str, bytes]:
    from engine.formats import tiktoken

    ranks, sidecar = tiktoken.dumps_ranks(tok), tiktoken.dumps_sidecar(tok)
    if verify:
        _same_ids(tok, tiktoken.loads_tiktoken(ranks, sidecar), "tiktoken rank file")
    return {"ranks.tiktoken": ranks.encode("ascii"), "ranks.tiktoken.json": sidecar.encode("utf-8")}


def _vocab_txt_fits(tok: Tokenizer) -> None:
    if tok.model.kind != "wordpiece":
        raise NotForThisModel(f"vocab.txt holds WordPiece vocabularies; this tokenizer is {_model_kind(tok)}.")


def _vocab_txt(tok: Tokenizer, verify: bool) -> dict[str, bytes]:
    from engine.formats.vocab_txt import dumps_vocab_txt, parse_vocab_txt

    vocab = tok.model.vocab()
    try:
        text = dumps_vocab_txt(vocab)
    except FormatError as exc:
        raise ConfigError(str(exc)) from None
    if verify and parse_vocab_txt(text) != vocab:
        raise ExportError("The exported vocab.txt does not read back to the same vocabulary.")
    return {"vocab.txt": text.encode("utf-8")}


def _spm_fits(tok: Tokenizer) -> None:
    if tok.model.kind != "unigram":
        raise NotForThisModel(f"A sentencepiece .vocab holds Unigram models; this tokenizer is {_model_kind(tok)}.")


def _spm_vocab(tok: Tokenizer, verify: bool) -> dict[str, bytes]:
    from engine.formats import spm

    text = spm.dumps_vocab(tok.model)  # type: ignore[arg-type]
    if verify and spm.loads_vocab(text).pieces() != tok.model.pieces():  # type: ignore[attr-defined]
        raise ExportError("The exported .vocab does not read back to the same pieces and scores.")
    return {"tokenizer.vocab": text.encode("utf-8")}


def _spm_model_fits(tok: Tokenizer) -> None:
    if not is_sentencepiece(tok):
        raise NotForThisModel(f"A sentencepiece .model holds Unigram and sentencepiece BPE models; this tokenizer is "
                              f"{_model_kind(tok)}.")


def _spm_model(tok: Tokenizer, verify: bool) -> dict[str, bytes]:
    from engine.formats.spm_model import dump_spm_model, load_spm_model

    data = dump_spm_model(tok)
    if verify:
        _same_ids(tok, load_spm_model(data), "tokenizer.model")
    return {"tokenizer.model": data}


@dataclass(frozen=True, slots=True)
class Builder:
    """How one format is named, checked against a tokenizer's shape, and written."""

    label: str
    files: tuple[str, ...]
    description: str
    holds: str  # the kind of model the format is made for, as people name it; "" for every kind
    fits: Callable[[Tokenizer], None]  # raises NotForThisModel, or ConfigError for this tokenizer; writes nothing
    write: Callable[[Tokenizer, bool], dict[str, bytes]]  # the files; reads them back when told to verify
    # files written from the row's chat settings too (``build``'s ``chat``), beside ``write``'s
    beside: Callable[[Tokenizer, Mapping[str, Any]], dict[str, bytes]] | None = None


BUILDERS: dict[str, Builder] = {
    "tokenizer.json": Builder("tokenizer.json", ("tokenizer.json", "tokenizer_config.json"),
                              "The whole pipeline, for Hugging Face tokenizers, and with the config for "
                              "transformers' AutoTokenizer.",
                              "", _any_model, _tokenizer_json, beside=_transformers_config),
    "gpt2": Builder("vocab.json + merges.txt", ("vocab.json", "merges.txt"), "GPT-2's two files (byte-level BPE).",
                    "byte-level BPE", _gpt2_fits, _gpt2),
    "tiktoken": Builder("tiktoken rank file", ("ranks.tiktoken", "ranks.tiktoken.json"),
                        "Ranks plus a sidecar with the pattern and special tokens.", "byte-level BPE",
                        _tiktoken_fits, _tiktoken),
    "vocab.txt": Builder("vocab.txt", ("vocab.txt",), "BERT's one-token-a-line WordPiece vocabulary.",
                         "WordPiece", _vocab_txt_fits, _vocab_txt),
    "spm": Builder(".vocab", ("tokenizer.vocab",), "sentencepiece's piece-and-score list (Unigram).",
                   "Unigram", _spm_fits, _spm_vocab),
    "spm_model": Builder(".model", ("tokenizer.model",), "sentencepiece's binary model, for SentencePieceProcessor.",
                         "Unigram or sentencepiece BPE", _spm_model_fits, _spm_model),
}

MAX_REASON = 300  # characters of a reason shown on the page (an engine message may quote a token)

# key -> None once the format's files read back to the same ids, or the reason they did not.
# Outcomes live as long as their tokenizer object (``tokenizers/loaded.py``'s cache decides that), not longer;
# tokenizers are immutable, so an outcome never goes stale.
_outcomes: weakref.WeakKeyDictionary[Tokenizer, dict[str, str | None]] = weakref.WeakKeyDictionary()
_outcomes_lock = threading.Lock()


def _shown(text: str) -> str:
    return text if len(text) <= MAX_REASON else text[:MAX_REASON] + "…"


def _outcome(tok: Tokenizer, key: str) -> tuple[bool, str | None]:
    """(known, reason): whether ``key`` was verified for ``tok`` already, and why it failed if so."""
    with _outcomes_lock:
        seen = _outcomes.get(tok, {})
        return key in seen, seen.get(key)


def _remember(tok: Tokenizer, key: str, reason: str | None) -> None:
    with _outcomes_lock:
        _outcomes.setdefault(tok, {})[key] = reason


def build(tok: Tokenizer, key: str, *, chat: Mapping[str, Any] | None = None,
          originals: Mapping[str, bytes] | None = None) -> dict[str, bytes]:
    """The files of format ``key``, verified; raises ExportError with the reason if impossible.

    The first build of a format for a tokenizer reads the files back; later ones only write them.
    ``chat`` is what an import kept of the tokenizer's own ``tokenizer_config.json`` (its chat
    template and bos/eos/pad tokens), written again into the ``tokenizer_config.json`` beside
    ``tokenizer.json``. ``originals`` are files an import kept verbatim (``tokenizers/originals.py``): given
    for ``key``, that file is the download, as it came.
    """
    if originals and key in originals:
        return {BUILDERS[key].files[0]: originals[key]}
    if key not in BUILDERS:
        raise ExportError(f"There is no download format {key!r}; choose one of {', '.join(BUILDERS)}.")
    known, reason = _outcome(tok, key)
    if reason is not None:
        raise ExportError(reason)
    builder = BUILDERS[key]
    try:
        builder.fits(tok)
        files = builder.write(tok, not known)
        if builder.beside is not None:
            files.update(builder.beside(tok, chat or {}))
    except (TokenforgeError, ImportError, ValueError, KeyError) as exc:
        _remember(tok, key, _shown(str(exc)))
        raise ExportError(str(exc)) from None
    _remember(tok, key, None)
    return files


def plan(tok: Tokenizer, originals: Mapping[str, bytes] | None = None) -> list[Format]:
    """Every format: whether it fits this kind of model, and why not where this tokenizer cannot use it.

    Cheap by design: it looks at the tokenizer's shape and at checks already run by
    :func:`build`, and writes no file (the page is opened far more often than a file is taken).
    """
    out = []
    for key, builder in BUILDERS.items():
        fits, reason = True, None
        try:
            if originals and key in originals:
                out.append(Format(key, builder.label, builder.files, builder.description, None, True, builder.holds))
                continue
            builder.fits(tok)
            reason = _outcome(tok, key)[1]
        except NotForThisModel as exc:
            fits, reason = False, str(exc)
        except (TokenforgeError, ImportError, ValueError, KeyError) as exc:
            reason = _shown(str(exc))
        out.append(Format(key, builder.label, builder.files, builder.description, reason, fits, builder.holds))
    return out


README = """# {name}

Exported from Tokenforge. Every file below was read back and checked to give the same ids.
Each recipe is a separate block, run from this folder.

{sections}
"""

# Each recipe is its own fenced ```python block and leaves its tokenizer in its last assigned name:
# ``tests/webapp/transfer/test_download_recipes.py`` runs every block of a downloaded README, each in a
# folder holding only that section's files, and compares the ids with ours. transformers 5 ignores
# ``vocab_file=``/``merges_file=`` passed to a tokenizer's constructor (an empty vocabulary, no error),
# so the transformers recipes load a folder with ``from_pretrained``, which works in 4.x and 5.x alike.
SECTIONS = {
    "tokenizer.json": """## tokenizer.json + tokenizer_config.json (Hugging Face tokenizers, transformers)

```python
from tokenizers import Tokenizer
tok = Tokenizer.from_file("tokenizer.json")
tok.encode("Hello world").ids
```

```python
from transformers import AutoTokenizer
tok = AutoTokenizer.from_pretrained(".")  # the folder of tokenizer.json and tokenizer_config.json
tok.encode("Hello world")
```
""",
    "gpt2": """## vocab.json + merges.txt (GPT-2 style byte-level BPE)

```python
from tokenizers import Tokenizer, decoders, models, pre_tokenizers
tok = Tokenizer(models.BPE.from_file("vocab.json", "merges.txt"))
tok.pre_tokenizer = pre_tokenizers.ByteLevel(add_prefix_space=False)
tok.decoder = decoders.ByteLevel()
tok.encode("Hello world").ids
```

```python
from transformers import GPT2TokenizerFast
# The folder of vocab.json and merges.txt; a tokenizer.json beside them is read instead (same ids).
# Not GPT2TokenizerFast(vocab_file=..., merges_file=...): transformers 5 ignores those arguments.
tok = GPT2TokenizerFast.from_pretrained(".")
tok.encode("Hello world")
```

These files do not store the split pattern: both recipes split as GPT-2 does, which gives these ids
only where this tokenizer's pattern is GPT-2's. tokenizer.json stores the pattern, and so does
ranks.tiktoken.json (pat_str) when that file is included.
""",
    "tiktoken": """## ranks.tiktoken + ranks.tiktoken.json (tiktoken)

```python
import base64, json, tiktoken
# Not tiktoken.load.load_tiktoken_bpe("ranks.tiktoken"): tiktoken keeps a copy of every file it
# loads under the file's path, so another download at the same path would read this one.
with open("ranks.tiktoken", "rb") as f:
    ranks = {base64.b64decode(token): int(rank) for token, rank in (line.split() for line in f if line.strip())}
with open("ranks.tiktoken.json", encoding="utf-8") as f:
    enc = tiktoken.Encoding(mergeable_ranks=ranks, **json.load(f))
enc.encode("Hello world")
```
""",
    "vocab.txt": """## vocab.txt (WordPiece, BERT)

```python
from transformers import BertTokenizerFast
# The folder of vocab.txt; a tokenizer.json beside it is read instead.
# Not BertTokenizerFast(vocab_file=...): transformers 5 ignores that argument.
tok = BertTokenizerFast.from_pretrained(".")
tok.encode("Hello world")
```

```python
from tokenizers import BertWordPieceTokenizer
tok = BertWordPieceTokenizer("vocab.txt")
tok.encode("Hello world").ids
```

vocab.txt holds the vocabulary only; both recipes add BERT's own normalizer (lower-casing, accents
stripped, CJK ideographs split apart) and pre-tokenizer, so they give these ids where this
tokenizer's pipeline is BERT's. tokenizer.json holds the exact pipeline.
""",
    "spm": """## tokenizer.vocab (sentencepiece pieces and scores)

One `piece<TAB>score` line per id. sentencepiece itself loads the binary .model (below, where
this tokenizer has one); use tokenizer.json with `tokenizers`/`transformers` to run the model.
""",
    "spm_model": """## tokenizer.model (sentencepiece)

```python
import sentencepiece as spm
sp = spm.SentencePieceProcessor(model_file="tokenizer.model")
sp.encode("Hello world")
```
""",
}


FILE_MODE = 0o644  # rw-r--r--: ``writestr`` with a bare name gives 0600, unreadable to others once unzipped


def _add(archive: zipfile.ZipFile, filename: str, data: str | bytes) -> None:
    """Add one file, readable by everyone (``FILE_MODE``), stamped with the current time."""
    info = zipfile.ZipInfo(filename, date_time=time.localtime()[:6])
    info.compress_type = zipfile.ZIP_DEFLATED
    info.external_attr = (stat.S_IFREG | FILE_MODE) << 16
    archive.writestr(info, data)


def zip_all(tok: Tokenizer, name: str, *, chat: Mapping[str, Any] | None = None,
            originals: Mapping[str, bytes] | None = None) -> bytes:
    """A zip of every format that fits and verifies, plus README.md (``chat``: see :func:`build`)."""
    buffer = io.BytesIO()
    sections = []
    with zipfile.ZipFile(buffer, "w", zipfile.ZIP_DEFLATED) as archive:
        for key in (f.key for f in plan(tok, originals) if f.available):
            try:
                files = build(tok, key, chat=chat, originals=originals)
            except ExportError:
                continue
            for filename, data in files.items():
                _add(archive, filename, data)
            sections.append(SECTIONS[key])
        _add(archive, "README.md", README.format(name=name or "tokenizer", sections="\n".join(sections)))
    return buffer.getvalue()
