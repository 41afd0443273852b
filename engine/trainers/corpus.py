"""Read corpus files as a stream of chunks of whole documents, for the pre-token counter.

:func:`iter_documents` reads files in blocks (a whole file is never one string) and yields
chunks that end where pre-tokenization restarts anyway: right after a special token (a
document boundary), or, inside a document longer than a chunk, at a *safe cut*.
:func:`split_specials` then cuts a chunk into the stretches between special tokens (longest
match first, as the tokenizer does). Counting the chunks is ``trainers/counting.py``.

Why the safe cut is safe: it is placed before a ``" "`` or ``"\\n"`` that has a letter on
both sides. Under the GPT-2, GPT-4 and o200k patterns, whitespace splitting and BERT's split,
a piece that ends in a letter never takes the whitespace after it (letter runs stop at
whitespace, and only whitespace-run pieces look ahead), and a piece starting at that single
whitespace character is the same whether the text before it is there or not. So cutting there
changes no piece. Whitespace splitting and BERT's split never join across *any* whitespace, so
for them the cut also survives the built-in normalizers (Unicode forms, lowercase, strip
accents): each maps text character by character except around combining marks and final sigma,
and a space or newline blocks both (it is a starter that composes with nothing, and it is
neither cased nor case-ignorable). A custom regex, a callable splitter or another normalizer
gives no such guarantee, so then documents are only cut at special tokens (an over-long
document is held whole).

Left out: counting, what the counts are for, and any model logic. Files must be UTF-8; bytes
are read as they are (no newline translation).

Internal: not part of the engine's API (``engine.PUBLIC_MODULES``).
"""

from __future__ import annotations

import codecs
from collections.abc import Iterable, Iterator, Sequence
from pathlib import Path

import regex

from engine.errors import FormatError
from engine.normalizers import Lowercase, Normalizer, StripAccents, UnicodeForm
from engine.normalizers import Sequence as NormalizerSequence

MAX_CHUNK_CHARS = 1 << 20
DOCUMENT_SEPARATOR = "<|endoftext|>"
"""How stored corpora join documents; trainers whose specials lack it still treat it as one."""
SAFE_CUT_SPECS = frozenset({"gpt2", "gpt4", "o200k", "whitespace", "bert"})
WORD_SPLITS = frozenset({"whitespace", "bert"})
"""Pre-tokenizers that never join across whitespace: each piece lies inside one ``\\S+`` run."""
_SAFE_CUT = regex.compile(r"(?r)(?<=\p{L})[ \n](?=\p{L})")
_LOCAL_NORMALIZERS = (Lowercase, StripAccents, UnicodeForm)


def cuts_are_safe(split: object, normalizer: Normalizer | None) -> bool:
    """Whether over-long documents may be cut at safe cuts under this split and normalizer."""
    if not isinstance(split, str) or split not in SAFE_CUT_SPECS:
        return False
    if normalizer is None:
        return True
    steps = normalizer.normalizers if isinstance(normalizer, NormalizerSequence) else [normalizer]
    return split in WORD_SPLITS and all(isinstance(step, _LOCAL_NORMALIZERS) for step in steps)


def special_pattern(special_tokens: Iterable[str]) -> regex.Pattern[str] | None:
    """An alternation of the special tokens, longest first, so the longest match wins."""
    tokens = sorted(set(special_tokens), key=lambda t: (-len(t), t))
    return regex.compile("|".join(map(regex.escape, tokens))) if tokens else None


def _cut(buf: str, start: int, specials: regex.Pattern[str] | None, longest: int, safe_cuts: bool,
         want: int) -> int:
    """Where to end the next chunk of ``buf`` (0: read more first); ``buf[:start]`` holds no cut."""
    # A special token match only counts if the longest special could have matched at its start,
    # else "<|a|>" might be the start of a longer special cut off by the end of the buffer.
    usable = len(buf) - longest
    if specials is not None:
        end = 0
        for match in specials.finditer(buf, start, len(buf)):
            if match.start() > usable:
                break
            end = match.end()
        if end:
            return end
    if safe_cuts and len(buf) >= want:
        match = _SAFE_CUT.search(buf, max(want // 2, start), max(usable, 0))
        if match is not None:
            return match.start()
    return 0


def iter_documents(
    files: Sequence[str | Path],
    special_tokens: Iterable[str] = (),
    *,
    max_chunk_chars: int = MAX_CHUNK_CHARS,
    safe_cuts: bool = True,
) -> Iterator[tuple[str, int]]:
    """Yield ``(chunk, bytes_read)``: the files' text in chunks of whole documents.

    A chunk ends right after a special token, at a safe cut inside an over-long document (only
    with ``safe_cuts``; see the module docstring), or at the end of a file, and is about
    ``max_chunk_chars`` long. ``bytes_read`` counts the bytes of all files read so far (for
    progress). Raises :class:`FormatError` on a file that is not UTF-8.
    """
    special_tokens = tuple(special_tokens)
    specials = special_pattern(special_tokens)
    longest = max((len(t) for t in special_tokens), default=1)
    done = 0
    for path in files:
        decoder = codecs.getincrementaldecoder("utf-8")()
        buf = ""
        start = 0  # buf[:start] was searched for a cut in vain (keeps a long document linear)
        with open(path, "rb") as stream:
            while True:
                block = stream.read(max_chunk_chars)
                held = len(decoder.getstate()[0])  # the undecoded end of the previous block
                try:
                    buf += decoder.decode(block, final=not block)
                except UnicodeDecodeError as exc:
                    offset = stream.tell() - len(block) - held + exc.start
                    raise FormatError(
                        f"The corpus is not UTF-8 text (byte {offset} cannot be decoded); convert it to UTF-8 first.",
                        source=str(path),
                    ) from None
                done += len(block)
                while len(buf) >= max_chunk_chars:
                    end = _cut(buf, start, specials, longest, safe_cuts, max_chunk_chars)
                    if not end:
                        start = max(len(buf) - longest, 0)
                        break
                    yield buf[:end], done
                    buf = buf[end:]
                    start = 0
                if not block:
                    break
        if buf:
            yield buf, done


def split_specials(text: str, specials: regex.Pattern[str] | None) -> list[str]:
    """The non-empty stretches of ``text`` between special tokens (the tokens dropped)."""
    if specials is None:
        return [text] if text else []
    return [part for part in specials.split(text) if part]
