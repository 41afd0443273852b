"""Added tokens matched on normalized text (``"normalized": true``) give Hugging Face's ids.

Hugging Face first splits the text at the added tokens matched as typed, normalizes each
stretch between them, and then splits each normalized stretch at the tokens matched on
normalized text (``AddedVocabulary::extract_and_normalize``). NLLB's ``<mask>`` is one; before,
such a file was refused. Each case is built with ``tokenizers`` itself and compared id for id,
spans included.
"""

from __future__ import annotations

import pytest

from engine.tokenizer import Tokenizer

tokenizers = pytest.importorskip("tokenizers")

TEXTS = [
    "a <mask> b", "A <MASK> B", "＜ｍａｓｋ＞ and <mask>", "x<mask>y", "<mask><mask>", "  <mask>  ",
    "[SEP] <mask>[SEP]", "[sep] stays text", "ｔｈｅ <Mask>", "tag <b> and <B> and ＜b＞", "plain text only",
    "<mask", "mask>", "<ma[SEP]sk>",
]


def _hf_tokenizer(metaspace: bool) -> object:
    words = ["<unk>", "a", "b", "x", "y", "the", "and", "stays", "text", "plain", "only", "tag", "mask", "<", ">",
             "[", "]", "sep", "s", "e", "p", "m", "k", "t", "h", "n", "d", "l", "i", "o", "▁"]
    vocab = {w: i for i, w in enumerate(words)}
    model = tokenizers.models.WordPiece(vocab, unk_token="<unk>", max_input_chars_per_word=100)
    tok = tokenizers.Tokenizer(model)
    tok.normalizer = tokenizers.normalizers.Sequence([tokenizers.normalizers.NFKC(), tokenizers.normalizers.Lowercase()])
    tok.pre_tokenizer = (tokenizers.pre_tokenizers.Metaspace(prepend_scheme="first") if metaspace
                         else tokenizers.pre_tokenizers.BertPreTokenizer())
    tok.add_special_tokens([tokenizers.AddedToken("<mask>", normalized=True, lstrip=True),
                            tokenizers.AddedToken("[SEP]", normalized=False)])
    tok.add_tokens([tokenizers.AddedToken("<b>", normalized=True)])
    return tok


@pytest.mark.parametrize("metaspace", [False, True])
def test_tokens_matched_on_normalized_text_give_hugging_faces_ids(metaspace: bool) -> None:
    hf = _hf_tokenizer(metaspace)
    document = hf.to_str()  # type: ignore[attr-defined]
    ours = Tokenizer.from_json(document)
    for text in TEXTS:
        expected = hf.encode(text, add_special_tokens=False).ids  # type: ignore[attr-defined]
        assert ours.encode(text, allowed_special="all", add_special_tokens=False) == expected, text
        spans = ours.encode_with_offsets(text, allowed_special="all", add_special_tokens=False)
        assert [span.id for span in spans] == expected, text
        assert all(0 <= s.char_start <= s.char_end <= len(text) for s in spans), text
    # Written back, the flags stay: Hugging Face reads the same tokenizer.
    again = tokenizers.Tokenizer.from_str(ours.to_json())
    assert [again.encode(t, add_special_tokens=False).ids for t in TEXTS] == [
        hf.encode(t, add_special_tokens=False).ids for t in TEXTS]  # type: ignore[attr-defined]


def test_the_mask_takes_its_normalized_form() -> None:
    ours = Tokenizer.from_json(_hf_tokenizer(False).to_str())  # type: ignore[attr-defined]
    mask = ours.token_to_id("<mask>")
    assert ours.encode("A <MASK> B", allowed_special="all").count(mask) == 1
    assert ours.encode("A ＜ｍａｓｋ＞ B", allowed_special="all").count(mask) == 1
    assert mask not in ours.encode_ordinary("A <MASK> B")  # a special token: text unless allowed
