"""A vocabulary diff (``vocab_diff.py``) as ``tokenforge diff`` prints it: plain text or JSON.

The text report gives the counts, then the pieces only in each tokenizer grouped by script, at
most ``limit`` a group ("… and N more" says how many were left out), then the lines that encode
differently. The JSON carries the same lists under the same bound, a group's ``more`` saying how
many it left out; ``limit`` 0 lists everything. A piece is written as its vocabulary string,
with ``repr``-style escapes for control characters, so a newline piece stays on its line.
Left out: the web page (``webapp/tokenizers/diff_views.py`` renders its own).

Internal: not part of the engine's API (``engine.PUBLIC_MODULES``).
"""

from __future__ import annotations

from typing import Any

from engine.vocab_diff import LineDiff, Piece, VocabDiff

DEFAULT_LIMIT = 20


def shown_piece(token: str) -> str:
    """A piece on one line: control characters and spaces at the ends escaped, the rest as is."""
    out = "".join(char if char.isprintable() or char == " " else repr(char)[1:-1] for char in token)
    return out if out == out.strip() else repr(out)


def _piece_dict(piece: Piece) -> dict[str, Any]:
    row: dict[str, Any] = {"id": piece.id, "piece": piece.piece, "type": piece.type}
    if piece.rank is not None:
        row["rank"] = piece.rank
    if piece.score is not None:
        row["score"] = piece.score
    return row


def _side(groups: dict[str, list[Piece]], limit: int) -> dict[str, Any]:
    cut = limit or None
    return {"count": sum(map(len, groups.values())),
            "by_script": {name: {"count": len(pieces), "pieces": [_piece_dict(p) for p in pieces[:cut]],
                                 "more": max(0, len(pieces) - limit) if limit else 0}
                          for name, pieces in groups.items()}}


def to_dict(result: VocabDiff, lines: LineDiff | None, *, names: tuple[str, str],
            limit: int = DEFAULT_LIMIT) -> dict[str, Any]:
    """The diff as a JSON-ready dict (the CLI's ``--json``)."""
    out: dict[str, Any] = {
        "a": {"name": names[0], "pieces": result.pieces_a, "duplicates": result.duplicates_a},
        "b": {"name": names[1], "pieces": result.pieces_b, "duplicates": result.duplicates_b},
        "shared": {"count": result.shared, "same_id": result.shared_same_id, "by_script": result.shared_by_script},
        "only_a": _side(result.only_a, limit),
        "only_b": _side(result.only_b, limit),
    }
    if lines is not None:
        out["lines"] = {"compared": lines.compared, "differing": lines.differing, "not_compared": lines.not_compared,
                        "shown": [{"line": c.number, "text": c.text, "a": c.tokens_a, "b": c.tokens_b,
                                   "count_a": c.count_a, "count_b": c.count_b} for c in lines.changes]}
    return out


def _piece_line(piece: Piece) -> str:
    extra = f"  rank {piece.rank:,}" if piece.rank is not None else ""
    extra += f"  score {piece.score:.4g}" if piece.score is not None else ""
    return f"    {piece.id:>8}  {shown_piece(piece.piece)}  {piece.type}{extra}"


def _tokens(tokens: list[str], count: int) -> str:
    more = f" … and {count - len(tokens):,} more" if count > len(tokens) else ""
    return " ".join(shown_piece(t) for t in tokens) + more


def to_text(result: VocabDiff, lines: LineDiff | None, *, names: tuple[str, str], limit: int = DEFAULT_LIMIT) -> str:
    """The plain-text report (the CLI's default output)."""
    out = [f"A: {names[0]} ({result.pieces_a:,} pieces)", f"B: {names[1]} ({result.pieces_b:,} pieces)",
           f"shared: {result.shared:,} ({result.shared_same_id:,} at the same id)",
           f"only in A: {result.only_a_count:,}", f"only in B: {result.only_b_count:,}"]
    for label, groups in (("A", result.only_a), ("B", result.only_b)):
        if not groups:
            continue
        out += ["", f"Only in {label}:"]
        for name, pieces in groups.items():
            out.append(f"  {name} ({len(pieces):,}):")
            out += [_piece_line(piece) for piece in (pieces[:limit] if limit else pieces)]
            if limit and len(pieces) > limit:
                out.append(f"    … and {len(pieces) - limit:,} more")
    if lines is not None:
        out += ["", f"Lines encoded differently: {lines.differing:,} of {lines.compared:,}"
                    + (f" ({lines.not_compared:,} lines past the limit not compared)" if lines.not_compared else "")]
        for change in lines.changes:
            out += [f"  line {change.number}: {shown_piece(change.text)}",
                    f"    A ({change.count_a:,}): {_tokens(change.tokens_a, change.count_a)}",
                    f"    B ({change.count_b:,}): {_tokens(change.tokens_b, change.count_b)}"]
        if lines.differing > len(lines.changes):
            out.append(f"  … and {lines.differing - len(lines.changes):,} more lines")
    return "\n".join(out) + "\n"
