"""Read uploaded tokenizer files into engine tokenizers, with a clear message for every bad file.

Five kinds: a ``tokenizer.json``; GPT-2's ``vocab.json`` + ``merges.txt`` with the split pattern
chosen from a list (and the special tokens guessed when none are named: ``<|endoftext|>``); a
WordPiece ``vocab.txt``; a tiktoken rank file with its pattern (from the list or its sidecar);
sentencepiece's binary ``.model`` (Unigram or BPE), whose bytes the row keeps so the download
gives the same file back. Every failure is an :class:`ImportProblem` whose message names the file
as uploaded and the problem (the engine's ``FormatError`` names the line). The engine's loaders
enforce the bounds of ``engine.limits`` (ids, vocabulary, token length, special tokens). An imported tokenizer must also
survive the round trip through ``tokenizer.json``, since that is how the database stores it.

Beside a ``tokenizer.json``, an optional ``tokenizer_config.json`` (:func:`read_config`) gives the
chat template and the bos/eos/pad tokens, which the row's ``config`` keeps under ``"chat"``.

Left out: HTTP, storing the row (``views.py``), and the parsers (``engine.formats``).
"""

from __future__ import annotations

from dataclasses import dataclass
from typing import Any

from engine import PATTERNS, FormatError, TokenforgeError, Tokenizer
from engine.formats.transformers_config import MAX_CONFIG_BYTES, read_chat_settings
from webapp.chat.sandbox import MAX_TEMPLATE_CHARS

KINDS = {
    "tokenizer_json": "tokenizer.json (Hugging Face)",
    "gpt2": "vocab.json + merges.txt (GPT-2 style)",
    "vocab_txt": "vocab.txt (WordPiece, BERT style)",
    "tiktoken": "tiktoken rank file",
    "spm_model": "sentencepiece .model (tokenizer.model)",
}
PATTERN_CHOICES = {"gpt2": "GPT-2 (r50k)", "gpt4": "GPT-4 (cl100k)", "o200k": "GPT-4o (o200k)"}
SAMPLE = "Round trip check: Hello, world! café 日本 👋\n"


class ImportProblem(ValueError):
    """An upload that cannot become a tokenizer; the message says which file and why."""


@dataclass(frozen=True, slots=True)
class Upload:
    """One uploaded file: its name as sent and its bytes."""

    filename: str
    data: bytes


def _text(upload: Upload | None, what: str) -> str:
    if upload is None or not upload.data:
        raise ImportProblem(f"Choose the {what} file; none was uploaded (or it is empty).")
    try:
        return upload.data.decode("utf-8-sig")
    except UnicodeDecodeError as exc:
        raise ImportProblem(f"{upload.filename or what} is not UTF-8 text: "
                            f"byte {exc.start} is 0x{upload.data[exc.start]:02X}.") from None


def _pattern(choice: str) -> str:
    if choice not in PATTERNS:
        raise ImportProblem(f"Choose the split pattern from the list ({', '.join(PATTERN_CHOICES)}), not {choice!r}.")
    return choice


def _specials(raw: str) -> list[str]:
    return [s for s in (part.strip() for part in raw.replace(",", "\n").splitlines()) if s]


def _name(files: dict[str, Upload | None], key: str, default: str) -> str:
    """The uploaded file's name for messages ("vocab.json, line 7: ..."), cut to a readable length."""
    upload = files.get(key)
    return (upload.filename if upload is not None and upload.filename else default)[:100]


def _vocab_txt(text: str, lowercase: bool, source: str) -> Tokenizer:
    from engine.formats.vocab_txt import bert_tokenizer, parse_vocab_txt

    return bert_tokenizer(parse_vocab_txt(text, source=source), lowercase=lowercase, source=source)


def read(kind: str, files: dict[str, Upload | None], *, pattern: str = "gpt2", specials: str = "",
         lowercase: bool = True, notes: list[str] | None = None) -> Tokenizer:
    """Build a tokenizer from the uploaded ``files`` of ``kind``; raise ImportProblem if impossible.

    ``notes``, when given, receives sentences for the user about what the import decided on its
    own: for GPT-2 files with the special tokens left empty, which entries were taken as special
    and why (``engine.formats.unreachable``), and which entries no merge can build.
    """
    if kind not in KINDS:
        raise ImportProblem(f"Choose what kind of file to import; {kind!r} is not one of them.")
    try:
        if kind == "tokenizer_json":
            tokenizer = Tokenizer.from_json(_text(files.get("file"), "tokenizer.json"))
        elif kind == "gpt2":
            from engine.formats import gpt2

            tokenizer, said = gpt2.import_gpt2(
                _text(files.get("vocab"), "vocab.json"), _text(files.get("merges"), "merges.txt"),
                pretokenizer=_pattern(pattern), special_tokens=_specials(specials),
                vocab_source=_name(files, "vocab", "vocab.json"), merges_source=_name(files, "merges", "merges.txt"))
            if notes is not None:
                notes.extend(said)
        elif kind == "spm_model":
            from engine.formats.spm_model import load_spm_model

            upload = files.get("file")
            if upload is None or not upload.data:
                raise ImportProblem("Choose the .model file; none was uploaded (or it is empty).")
            tokenizer = load_spm_model(upload.data, source=_name(files, "file", "tokenizer.model"))
        elif kind == "vocab_txt":
            tokenizer = _vocab_txt(_text(files.get("file"), "vocab.txt"), lowercase, _name(files, "file", "vocab.txt"))
        else:
            from engine.formats import tiktoken

            sidecar = files.get("sidecar")
            sidecar_text = _text(sidecar, "sidecar") if sidecar is not None and sidecar.data else None
            tokenizer = tiktoken.loads_tiktoken(
                _text(files.get("file"), "rank file"), sidecar_text,
                pretokenizer=None if sidecar_text and not pattern else _pattern(pattern),
                special_tokens=_specials(specials), source=_name(files, "file", "rank file"),
                sidecar_source=_name(files, "sidecar", "sidecar"))
    except ImportProblem:
        raise
    except (TokenforgeError, ValueError, KeyError, TypeError, RecursionError) as exc:
        raise ImportProblem(str(exc) or exc.__class__.__name__) from None
    try:
        stored = Tokenizer.from_json(tokenizer.to_json())
        # A .model is kept as it came and the tokenizer rebuilt from it (tokenizers/originals.py);
        # its tokenizer.json is the download for Hugging Face, checked when it is downloaded.
        same = kind == "spm_model" or (
            stored.encode(SAMPLE, disallowed_special=()) == tokenizer.encode(SAMPLE, disallowed_special=()))
    except (TokenforgeError, ValueError) as exc:
        raise ImportProblem(f"The tokenizer was read but cannot be stored: {exc}") from None
    if not same:
        raise ImportProblem("The tokenizer was read but does not survive conversion to tokenizer.json; "
                            "it was not imported.")
    return tokenizer


def read_config(upload: Upload | None) -> dict[str, Any]:
    """The chat settings of a tokenizer_config.json (``{}`` when none was uploaded); raise ImportProblem if bad."""
    if upload is None or not upload.data:
        return {}
    source = (upload.filename or "tokenizer_config.json")[:100]
    if len(upload.data) > MAX_CONFIG_BYTES:
        raise ImportProblem(f"{source} is larger than {MAX_CONFIG_BYTES >> 20} MiB, "
                            f"the most a tokenizer_config.json may be.")
    try:
        return read_chat_settings(_text(upload, "tokenizer_config.json"), source=source,
                                  max_template_chars=MAX_TEMPLATE_CHARS)
    except FormatError as exc:
        raise ImportProblem(str(exc)) from None
