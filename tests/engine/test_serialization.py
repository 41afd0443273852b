"""tokenizer.json: our export loads in the real Hugging Face ``tokenizers`` library and gives
identical ids; HF's own byte-level BPE export loads in ours with identical ids; malformed
documents raise FormatError naming the problem, and nothing else."""

from __future__ import annotations

import copy
import json

import pytest
from hypothesis import given
from hypothesis import strategies as st

from engine.errors import FormatError, TokenforgeError
from engine.formats.gpt2 import load_gpt2
from engine.presets import byte_level_bpe
from engine.tokenizer import Tokenizer
from engine.tokenizer_json import to_hf_dict
from tests.shared_data import cs336_file, gpt2_files

hf = pytest.importorskip("tokenizers")

EOT = "<|endoftext|>"
TEXTS = [
    "",
    "Hello world",
    "Héllò hôw are ü? 🙃",
    "  leading and trailing  \n\n\tspaces  ",
    "I'm sure they'll've can't 12345 6.7e-8 $$$ 中文",
    f"one{EOT}two {EOT}{EOT}",
]
MERGES = [(b"t", b"h"), (b"th", b"e"), (b" ", b"the"), (b"c", b"a"), (b" ", b"ca"), (b" ca", b"t"), (b"\xf0", b"\x9f")]


def tiny(pretokenizer: str) -> Tokenizer:
    vocab = {b + 1: bytes([b]) for b in range(256)}
    for index, (left, right) in enumerate(MERGES):
        vocab[257 + index] = left + right
    return byte_level_bpe(vocab, MERGES, pretokenizer=pretokenizer, special_tokens={EOT: 0})


@pytest.mark.parametrize("pretokenizer", ["gpt2", "gpt4", "o200k", "whitespace"])
@pytest.mark.parametrize("text", TEXTS, ids=range(len(TEXTS)))
def test_export_loads_in_hf_with_identical_ids(pretokenizer: str, text: str) -> None:
    ours = tiny(pretokenizer)
    theirs = hf.Tokenizer.from_str(ours.to_json())
    assert theirs.encode(text).ids == ours.encode(text, allowed_special="all")
    assert Tokenizer.from_json(ours.to_json()).encode(text, allowed_special="all") == ours.encode(text, allowed_special="all")


def test_gpt2_export_matches_hf_on_real_text() -> None:
    ours = load_gpt2(*gpt2_files(), special_tokens=[EOT])
    theirs = hf.Tokenizer.from_str(ours.to_json())
    for name in ("address.txt", "german.txt", "tinystories_sample.txt"):
        text = cs336_file(name).read_text(encoding="utf-8")
        assert theirs.encode(text).ids == ours.encode(text, allowed_special="all"), name


def test_hf_trained_byte_level_bpe_loads_with_identical_ids() -> None:
    from tokenizers import decoders, models, pre_tokenizers, trainers

    tokenizer = hf.Tokenizer(models.BPE())
    tokenizer.pre_tokenizer = pre_tokenizers.ByteLevel(add_prefix_space=False)
    tokenizer.decoder = decoders.ByteLevel()
    trainer = trainers.BpeTrainer(vocab_size=300, special_tokens=[EOT], initial_alphabet=pre_tokenizers.ByteLevel.alphabet(),
                                  show_progress=False)
    tokenizer.train_from_iterator(["the cat sat on the mat", "the cathedral", "Héllò 🙃"] * 20, trainer=trainer)
    ours = Tokenizer.from_json(tokenizer.to_str())
    for text in TEXTS:
        assert ours.encode(text, allowed_special="all") == tokenizer.encode(text).ids, text


def document() -> dict[str, object]:
    return to_hf_dict(tiny("gpt2"))


def broken(path: list[object], value: object) -> str:
    data = document()
    target: object = data
    for key in path[:-1]:
        target = target[key]  # type: ignore[index]
    target[path[-1]] = value  # type: ignore[index]
    return json.dumps(data)


@pytest.mark.parametrize(
    ("text", "message"),
    [
        pytest.param("{not json", "line 1: The file is not valid JSON", id="not-json"),
        pytest.param("[]", 'This is not a tokenizer.json document: it has no "model" object.', id="no-model"),
        pytest.param(broken(["model", "type"], "Fancy"), "The model type 'Fancy' is not supported", id="model-type"),
        pytest.param(broken(["model", "merges", 0], "t h e"), "line 1: A merge must have exactly two parts", id="bad-merge"),
        pytest.param(broken(["model", "merges", 0], "t q"), "line 1: Merge 1 (t q) uses 'tq', which is not in the vocabulary.", id="merge-result-missing"),
        pytest.param(broken(["model", "vocab", "t"], -1), "The id of token 't' must be a non-negative integer", id="negative-id"),
        pytest.param(broken(["model", "vocab", "☃"], 5), "Id 5 is used by two tokens ('☃' and another)", id="raw-token-reusing-an-id"),
        pytest.param(broken(["added_tokens", 0, "id"], "zero"), "An added token must have a string content and an integer id", id="added-token"),
        pytest.param(broken(["pre_tokenizer"], {"type": "Sequence", "pretokenizers": [{"type": "ByteLevel"}, {"type": "Digits"}]}), "The ByteLevel pre-tokenizer (pre_tokenizer.pretokenizers[0]) must be the last step", id="byte-level-not-last"),
        pytest.param(broken(["pre_tokenizer"], {"type": "Split", "pattern": {"Regex": "a"}, "behavior": "Sideways"}), "pre_tokenizer has behavior 'Sideways'", id="split-behavior"),
    ],
)
def test_loader_format_errors(text: str, message: str) -> None:
    with pytest.raises(FormatError) as error:
        Tokenizer.from_json(text)
    assert str(error.value).startswith(message)


@given(st.text(max_size=200))
def test_loader_on_arbitrary_text_raises_only_format_error(text: str) -> None:
    try:
        Tokenizer.from_json(text)
    except FormatError:
        pass


JSON = st.recursive(st.none() | st.booleans() | st.integers(-3, 300) | st.text(max_size=5),
                    lambda inner: st.lists(inner, max_size=3) | st.dictionaries(st.text(max_size=5), inner, max_size=3),
                    max_leaves=6)
PATHS = [["model"], ["model", "vocab"], ["model", "merges"], ["model", "type"], ["added_tokens"], ["pre_tokenizer"],
         ["pre_tokenizer", "pretokenizers"], ["decoder"], ["normalizer"], ["post_processor"], ["model", "merges", 0]]


@given(path=st.sampled_from(PATHS), value=JSON)
def test_loader_on_mutated_documents_raises_only_tokenforge_errors(path: list[object], value: object) -> None:
    try:
        Tokenizer.from_json(broken(copy.deepcopy(path), value))
    except TokenforgeError:
        pass
