"""HF post-processors: the ids put around one text, against the real ``tokenizers`` library.

Small hand-made ``tokenizer.json`` documents over one WordLevel vocabulary, each with another
``post_processor``: a template whose tokens are added tokens or only its own ids (InternLM 2's
``<s>``), ``BertProcessing``/``RobertaProcessing``, ``ByteLevel`` (offsets only) and the
``Sequence`` Llama 3.1 and 3.2 ship (``ByteLevel`` then a template). Written back, Hugging Face
reads the same ids.
"""

from __future__ import annotations

import json
from typing import Any

import pytest

from engine.errors import FormatError
from engine.tokenizer import Tokenizer

HFTokenizer = pytest.importorskip("tokenizers").Tokenizer

VOCAB = {"<unk>": 0, "<s>": 1, "</s>": 2, "[CLS]": 3, "[SEP]": 4, "hello": 5, "world": 6, "<|bos|>": 7}
ADDED = [{"id": 7, "content": "<|bos|>", "single_word": False, "lstrip": False, "rstrip": False,
          "normalized": False, "special": True}]


def document(post_processor: dict[str, Any] | None, added: list[dict[str, Any]] = ADDED) -> str:
    return json.dumps({"version": "1.0", "truncation": None, "padding": None, "added_tokens": added,
                       "normalizer": None, "pre_tokenizer": {"type": "WhitespaceSplit"},
                       "post_processor": post_processor, "decoder": None,
                       "model": {"type": "WordLevel", "vocab": VOCAB, "unk_token": "<unk>"}})


def template(single: list[str], ids: dict[str, list[int]]) -> dict[str, Any]:
    parts = [{"Sequence": {"id": "A", "type_id": 0}} if p == "$A" else {"SpecialToken": {"id": p, "type_id": 0}}
             for p in single]
    return {"type": "TemplateProcessing", "single": parts, "pair": parts,
            "special_tokens": {name: {"id": name, "ids": value, "tokens": [name] * len(value)}
                               for name, value in ids.items()}}


BYTE_LEVEL = {"type": "ByteLevel", "add_prefix_space": True, "trim_offsets": False, "use_regex": True}
CASES = {
    "template of an added token": template(["<|bos|>", "$A"], {"<|bos|>": [7]}),
    "template of vocabulary entries only": template(["<s>", "$A", "</s>"], {"<s>": [1], "</s>": [2]}),
    "template token of two ids": template(["<s>", "$A"], {"<s>": [1, 3]}),
    "bert": {"type": "BertProcessing", "sep": ["[SEP]", 4], "cls": ["[CLS]", 3]},
    "roberta": {"type": "RobertaProcessing", "sep": ["</s>", 2], "cls": ["<s>", 1], "trim_offsets": True,
                "add_prefix_space": True},
    "byte level": BYTE_LEVEL,
    "sequence, as Llama 3.1": {"type": "Sequence", "processors": [BYTE_LEVEL, template(["<|bos|>", "$A"],
                                                                                        {"<|bos|>": [7]})]},
    "sequence of byte level only": {"type": "Sequence", "processors": [BYTE_LEVEL]},
    "none": None,
}
TEXTS = ["hello world", "world", "", "hello <|bos|> other"]


@pytest.mark.parametrize("post_processor", CASES.values(), ids=CASES.keys())
def test_the_ids_around_a_text_are_hugging_faces(post_processor: dict[str, Any] | None) -> None:
    doc = document(post_processor)
    ours, hf = Tokenizer.from_json(doc), HFTokenizer.from_str(doc)
    for text in TEXTS:
        assert ours.encode(text, allowed_special="all") == hf.encode(text).ids, text
        assert ours.encode(text, allowed_special="all", add_special_tokens=False) == \
            hf.encode(text, add_special_tokens=False).ids, text
    again = HFTokenizer.from_str(ours.to_json())
    assert [again.encode(text).ids for text in TEXTS] == [hf.encode(text).ids for text in TEXTS]


def test_the_template_uses_its_own_ids_by_the_numbers() -> None:
    ours = Tokenizer.from_json(document(template(["<s>", "$A", "</s>"], {"<s>": [1], "</s>": [2]})))
    assert ours.encode("hello world") == [1, 5, 6, 2]  # <s> and </s> are no added tokens here
    assert ours.encode("<s>", add_special_tokens=False) == [1]  # a vocabulary word, as typed


BAD = {
    "two templates in a sequence": ({"type": "Sequence", "processors": [
        template(["<|bos|>", "$A"], {"<|bos|>": [7]}), template(["$A", "</s>"], {"</s>": [2]})]},
        "more than one step that adds tokens"),
    "a sequence without its list": ({"type": "Sequence"}, "needs a list of at most 8 processors"),
    "a sequence too long": ({"type": "Sequence", "processors": [BYTE_LEVEL] * 9}, "needs a list of at most 8"),
    "a negative id": (template(["<s>", "$A"], {"<s>": [-1]}), "needs a list of 1 to 16 ids"),
    "no ids": (template(["<s>", "$A"], {"<s>": []}), "needs a list of 1 to 16 ids"),
    "an id that is not an integer": (template(["<s>", "$A"], {"<s>": ["1"]}), "needs a list of 1 to 16 ids"),
    "a token the template does not name": (template(["<pad>", "$A"], {}), "not a special token"),
    "too many parts": (template(["<s>"] * 70 + ["$A"], {"<s>": [1]}), "at most 64"),
    "an unknown type": ({"type": "Mystery"}, "'Mystery' is not supported"),
}


@pytest.mark.parametrize(("post_processor", "message"), BAD.values(), ids=BAD.keys())
def test_a_post_processor_we_cannot_follow_is_refused_by_name(post_processor: dict[str, Any], message: str) -> None:
    with pytest.raises(FormatError, match=message):
        Tokenizer.from_json(document(post_processor))
