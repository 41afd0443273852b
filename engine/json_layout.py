"""``json.dumps(obj, ensure_ascii=False, indent=2)``, the same text, with the C encoder doing the work.

Given an ``indent``, the standard library leaves its C encoder for a pure-Python one, which
visits every node in Python: about 50 ms for an 8,000-piece sentencepiece-style
``tokenizer.json``, three times its C encoding without indentation. Here the layout (brackets,
commas, newlines and indentation, exactly as ``json.encoder`` writes them) is built by a walk
over the containers, and every scalar (string, dict key, number, ``true``/``false``/``null``) is
encoded by the C encoder in one call: the scalars go out as one list whose separator is a
newline, and since an encoded scalar never holds a raw newline (JSON escapes it inside a
string), splitting that text at newlines gives them back one by one.

The walk would still cost a Python step per node, so the three shapes that hold nearly all of
a tokenizer are laid out whole, by repeating one item's pieces: a list of scalars, a dict of
scalars (a vocabulary) and a list of equally long lists of scalars (merges as pairs). Whatever
else is walked. A dict with a key that is not a string, or an object ``json`` cannot encode, is
handed to ``json.dumps`` itself and re-indented by putting the nesting after every newline
(exact for the same reason), so the text, and the errors, stay the standard library's.

Left out: every other option of ``json.dumps``, and its check for circular references (a
document that contains itself recurses until ``RecursionError``).

Internal: not part of the engine's API (``engine.PUBLIC_MODULES``).
"""

from __future__ import annotations

import json
from itertools import chain
from typing import Any

__all__ = ["dumps_indented"]

_STEP = "  "  # indent=2
_SCALARS = (str, int, float, type(None))  # bool is an int
_FLAT = frozenset({str, int, float, bool, type(None)})  # exact types: a subclass is walked instead


class _Layout:
    """The text being laid out: ``pieces``, with an empty string where each scalar goes.

    The scalars, in document order, are in ``scalars``; ``runs`` says where they go: a run
    ``(start, count)`` puts ``count`` of them at ``pieces[start]``, ``pieces[start + 2]``, ...
    """

    def __init__(self) -> None:
        self.pieces: list[str] = []
        self.scalars: list[Any] = []
        self.runs: list[tuple[int, int]] = []

    def add_items(self, first: str, separator: str, between: str, size: int, count: int) -> None:
        """``count`` items of ``size`` scalars each: ``first`` or ``separator`` before an item,
        ``between`` between its scalars (the scalars themselves go in ``scalars``)."""
        start = len(self.pieces)
        self.pieces += ([separator, ""] + [between, ""] * (size - 1)) * count
        self.pieces[start] = first
        self.runs.append((start + 1, size * count))

    def text(self) -> str:
        encoded = json.dumps(self.scalars, ensure_ascii=False, separators=("\n", ":"))[1:-1].split("\n")
        done = 0
        for start, count in self.runs:
            self.pieces[start:start + 2 * count:2] = encoded[done:done + count]
            done += count
        return "".join(self.pieces)


def dumps_indented(obj: Any) -> str:
    """The text of ``json.dumps(obj, ensure_ascii=False, indent=2)``, character for character."""
    layout = _Layout()
    _lay_out(obj, "\n", layout)
    return layout.text()


def _lay_out(value: Any, newline: str, layout: _Layout) -> None:
    """Add ``value`` to ``layout``; ``newline`` is "\\n" and the indentation of ``value``'s level."""
    inner = newline + _STEP
    if isinstance(value, _SCALARS):
        layout.add_items("", "", "", 1, 1)
        layout.scalars.append(value)
    elif isinstance(value, (list, tuple)) and value:
        if _FLAT.issuperset(map(type, value)):
            layout.add_items("[" + inner, "," + inner, "", 1, len(value))
            layout.scalars += value
        elif _is_table(value):
            item = inner + _STEP
            layout.add_items("[" + inner + "[" + item, inner + "]," + inner + "[" + item, "," + item,
                             len(value[0]), len(value))
            layout.scalars += chain.from_iterable(value)
            layout.pieces.append(inner + "]")
        else:
            layout.pieces.append("[" + inner)
            for index, item in enumerate(value):
                if index:
                    layout.pieces.append("," + inner)
                _lay_out(item, inner, layout)
        layout.pieces.append(newline + "]")
    elif isinstance(value, dict) and value and all(isinstance(key, str) for key in value):
        if _FLAT.issuperset(map(type, value.values())):
            layout.add_items("{" + inner, "," + inner, ": ", 2, len(value))
            layout.scalars += chain.from_iterable(value.items())
        else:
            for index, (key, item) in enumerate(value.items()):
                layout.add_items("{" + inner if index == 0 else "," + inner, "", "", 1, 1)
                layout.scalars.append(key)
                layout.pieces.append(": ")
                _lay_out(item, inner, layout)
        layout.pieces.append(newline + "}")
    else:  # [], {}, other keys, other types: the standard library's text (or its TypeError)
        layout.pieces.append(json.dumps(value, ensure_ascii=False, indent=2).replace("\n", newline))


def _is_table(value: list[Any] | tuple[Any, ...]) -> bool:
    """Whether ``value`` is a list of lists (or tuples) of scalars, all of one length, not empty."""
    return (set(map(type, value)) <= {list, tuple} and len(set(map(len, value))) == 1
            and len(value[0]) > 0 and _FLAT.issuperset(map(type, chain.from_iterable(value))))
