"""What an extension did, measured: the report the CLI prints (and writes as report.json).

Pieces added (new single characters among them, for a character-level, Unigram or WordPiece
base; for WordPiece, how many took ``[unused…]`` slots and how many were appended), duplicates
skipped, unreachable pieces, the new embedding rows a model needs
(``model.resize_token_embeddings(new vocab size)``: the new size minus the base's), and on each
text given, tokens per character and unknown tokens before and after and how many of its lines
now encode differently. A line is encoded on its own, a special token in it as that token (training cut them out too).

The held-out text defaults to the last tenth of the lines of the last corpus file
(:func:`split_held_out`), which the extension then does not learn from.

Left out: the diff of two vocabularies (``engine/vocab_diff.py``), timings.

Internal: not part of the engine's API (``engine.PUBLIC_MODULES``).
"""

from __future__ import annotations

from collections.abc import Sequence
from pathlib import Path
from typing import Any

from engine.extend.options import Extension
from engine.formats import read_utf8
from engine.tokenizer import Tokenizer

HELD_OUT_FRACTION = 0.1


def split_held_out(files: Sequence[str | Path], workdir: Path) -> tuple[list[Path], str]:
    """``(files to learn from, held-out text)``: the last tenth of the last file's lines is held out,
    and the rest of that file is written to ``workdir`` (the others are used as they are)."""
    paths = [Path(f) for f in files]
    text = read_utf8(paths[-1])
    lines = text.splitlines(keepends=True)
    keep = len(lines) - max(1, round(len(lines) * HELD_OUT_FRACTION)) if len(lines) > 1 else len(lines)
    head = workdir / f"learn-{paths[-1].name}"
    head.write_text("".join(lines[:keep]), encoding="utf-8")
    return [*paths[:-1], head], "".join(lines[keep:])


def _tokens(tokenizer: Tokenizer, line: str) -> list[int]:
    return tokenizer.encode(line, allowed_special="all", add_special_tokens=False)


def _unknown_id(tokenizer: Tokenizer) -> int | None:
    unk = getattr(tokenizer.model, "unk_id", None)
    return unk if isinstance(unk, int) else None


def measure(base: Tokenizer, extended: Tokenizer, text: str) -> dict[str, Any]:
    """Tokens per character of ``text`` under both tokenizers, its unknown tokens, and its lines
    that encode differently. Unknown tokens matter most for WordPiece: a word with one character
    the base lacks is one ``[UNK]``, so learning that character *raises* tokens per character
    while it makes the text readable."""
    lines = [line for line in text.splitlines() if line.strip()]
    before = after = changed = unknown_before = unknown_after = 0
    unk_before, unk_after = _unknown_id(base), _unknown_id(extended)
    for line in lines:
        old, new = _tokens(base, line), _tokens(extended, line)
        before, after, changed = before + len(old), after + len(new), changed + (old != new)
        unknown_before += old.count(unk_before) if unk_before is not None else 0
        unknown_after += new.count(unk_after) if unk_after is not None else 0
    chars = sum(map(len, lines))
    return {
        "lines": len(lines),
        "characters": chars,
        "tokens_before": before,
        "tokens_after": after,
        "tokens_per_char_before": round(before / chars, 4) if chars else None,
        "tokens_per_char_after": round(after / chars, 4) if chars else None,
        "drop": round(1 - after / before, 4) if before else None,
        "lines_changed": changed,
        "unknown_before": unknown_before,
        "unknown_after": unknown_after,
    }


def build_report(extension: Extension, base: Tokenizer, *, held_out: str | None = None,
                 reference: str | None = None) -> dict[str, Any]:
    """The report as a JSON-ready dict (``held_out``/``reference`` only where given)."""
    tokenizer = extension.tokenizer
    report: dict[str, Any] = {
        "base_vocab_size": extension.base_vocab_size,
        "vocab_size": tokenizer.vocab_size,
        "new_embedding_rows": tokenizer.vocab_size - extension.base_vocab_size,
        "pieces_added": len(extension.added),
        "characters_added": len(extension.symbols_added),
        "merges_added": len(extension.merges),
        "duplicates_skipped": extension.duplicates_skipped,
        "unreachable": extension.unreachable,
        "protected": extension.protected,
        "pretokens_learned_from": extension.pretokens_counted,
        "model": tokenizer.model.kind,
    }
    if tokenizer.model.kind == "wordpiece":  # new tokens take [unused…] slots before new ids
        report["slots_filled"] = extension.slots_filled
        report["appended"] = len(extension.added) - extension.slots_filled
    if held_out is not None:
        report["held_out"] = measure(base, tokenizer, held_out)
    if reference is not None:
        report["reference"] = measure(base, tokenizer, reference)
    return report


def report_lines(report: dict[str, Any]) -> list[str]:
    """The report as sentences for a terminal."""
    chars = report.get("characters_added", 0)
    made = f"{chars:,} new characters, " if chars else ""
    how = "protected" if report["protected"] else "unprotected"
    if report.get("model", "bpe") == "bpe":
        head = (f"Added {report['pieces_added']:,} pieces ({made}{report['merges_added']:,} merges) to a base of "
                f"{report['base_vocab_size']:,} tokens: ids {report['base_vocab_size']:,} to "
                f"{report['vocab_size'] - 1:,} are new, the base's are unchanged ({how}).")
    else:
        slots = report.get("slots_filled", 0)
        where = (f"{slots:,} took [unused] slots' ids, {report['appended']:,} were appended" if "appended" in report
                 else "appended after the base's ids")
        head = (f"Added {report['pieces_added']:,} {report['model']} pieces "
                f"({made.removesuffix(', ') or 'no new characters'}"
                f") to a base of {report['base_vocab_size']:,} tokens: {where}; the base's other ids are unchanged "
                f"({how}).")
    out = [
        head,
        f"Duplicates skipped: {report['duplicates_skipped']:,}; unreachable pieces: {report['unreachable']:,}.",
        f"New embedding rows: {report['new_embedding_rows']:,} "
        f"(model.resize_token_embeddings({report['vocab_size']})).",
    ]
    for name in ("held_out", "reference"):
        part = report.get(name)
        if part is None or not part["characters"]:
            continue
        drop = part["drop"]
        fewer = "" if drop is None else f", {drop:.1%} fewer tokens" if drop >= 0 else f", {-drop:.1%} more tokens"
        unknown = (f"; unknown tokens {part['unknown_before']:,} -> {part['unknown_after']:,}"
                   if part.get("unknown_before") or part.get("unknown_after") else "")
        out.append(f"{name.replace('_', '-').capitalize()}: {part['tokens_per_char_before']} -> "
                   f"{part['tokens_per_char_after']} tokens per character{fewer}{unknown}; "
                   f"{part['lines_changed']:,} of {part['lines']:,} lines encode differently.")
    return out
