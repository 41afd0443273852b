"""``dumps_indented`` writes exactly the text of ``json.dumps(obj, ensure_ascii=False, indent=2)``:
for any JSON value (non-ASCII and escaped strings, floats, nested and empty containers, the shapes
it lays out whole and those it walks), for real trained tokenizers, and for what it hands to the
standard library (keys that are not strings, objects json cannot encode: the same TypeError)."""

from __future__ import annotations

import json
import math
from typing import Any

import pytest
from hypothesis import given, settings
from hypothesis import strategies as st

from engine import train
from engine.json_layout import dumps_indented
from engine.tokenizer_json import dumps, to_hf_dict

CORPUS = ("the cat sat on the mat; the dog sat on the log. naïve café, 東京 and 東京タワー.\n"
          "def tokenize(text): return [ord(c) for c in text]  # 42 crêpes for $1,234.56 \"quoted\"\t\\\n") * 30


def reference(obj: Any) -> str:
    return json.dumps(obj, ensure_ascii=False, indent=2)


texts = st.text(st.characters(codec="utf-8"), max_size=8) | st.sampled_from(["", "\n", "\"", "\\", ",\n  ", "▁", "🙃"])
scalars = st.none() | st.booleans() | st.integers() | st.floats() | texts  # floats: NaN and ±inf too
values = st.recursive(
    scalars,
    lambda inner: (st.lists(inner, max_size=5) | st.dictionaries(texts, inner, max_size=5)
                   | st.lists(st.lists(scalars, min_size=2, max_size=2), max_size=5)  # merges as pairs
                   | st.lists(st.tuples(texts, st.floats(allow_nan=False)), max_size=5)  # Unigram's vocab
                   | st.dictionaries(texts, scalars, max_size=5)),  # a vocabulary
    max_leaves=30)


@given(values)
@settings(max_examples=400)
def test_the_text_is_json_dumps_with_indent_2(obj: Any) -> None:
    assert dumps_indented(obj) == reference(obj)


@pytest.mark.parametrize("obj", [
    [], {}, [[]], [{}], {"a": []}, {"a": {}}, [[], []], [[1], []], [[1, 2], [3]], [(1, "é"), [2, "ü"]],
    {"vocab": {"▁the": 0, "東京": 1}, "merges": [["▁", "t"], ["h", "e"]]},
    {"vocab": [["<unk>", 0.0], ["▁a", -1.5], ["é", -1e-17]], "nan": math.nan, "inf": [-math.inf, math.inf]},
    {"deep": [[[["x"]]], {"k": [True, False, None]}]},
], ids=["empty-list", "empty-dict", "list-of-empty-list", "list-of-empty-dict", "dict-of-empty-list",
        "dict-of-empty-dict", "empty-pairs", "ragged-1", "ragged-2", "tuples", "bpe", "unigram", "deep"])
def test_edge_shapes(obj: Any) -> None:
    assert dumps_indented(obj) == reference(obj)


def test_what_it_hands_to_the_standard_library() -> None:
    odd_keys = {"model": {1: "a", 2.5: "b", False: None, None: [1]}, "x": [{"k": {3: [4]}}]}
    assert dumps_indented(odd_keys) == reference(odd_keys)

    class Sub(str):
        pass

    subclasses = {"v": [Sub("a"), 1], "w": {"k": Sub("é")}}
    assert dumps_indented(subclasses) == reference(subclasses)
    with pytest.raises(TypeError, match="not JSON serializable"):
        dumps_indented({"model": {"vocab": [object()]}})


@pytest.mark.parametrize("algorithm, options", [
    ("bpe", {"vocab_size": 300}),
    ("bpe", {"vocab_size": 400, "level": "spm", "character_coverage": 1.0}),
    ("bpe", {"vocab_size": 200, "level": "char"}),
    ("unigram", {"vocab_size": 400}),
    ("wordpiece", {"vocab_size": 200}),
], ids=["byte-bpe", "spm-bpe", "char-bpe", "unigram", "wordpiece"])
def test_trained_tokenizers_are_written_as_before(tmp_path: Any, algorithm: str, options: dict[str, Any]) -> None:
    corpus = tmp_path / "corpus.txt"
    corpus.write_text(CORPUS, encoding="utf-8")
    tokenizer = train(algorithm, [corpus], options).tokenizer
    assert dumps(tokenizer) == reference(to_hf_dict(tokenizer))
