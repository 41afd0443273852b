"""sentencepiece's normalizer: equal to ``SentencePieceProcessor.normalize`` on thousands of
strings (random Unicode, odd whitespace, USER_DEFINED pieces), aligned offsets, the HF forms."""

from __future__ import annotations

import base64
import random
from pathlib import Path

import pytest

from engine.errors import FormatError
from engine.formats.spm_proto import USER_DEFINED, read_model
from engine.spm_normalizer import CharsMap, Precompiled, SpmNormalizer

spm = pytest.importorskip("sentencepiece")
tokenizers = pytest.importorskip("tokenizers")

POOLS = [(0x20, 0x7E), (0xA0, 0x2AF), (0x300, 0x36F), (0x400, 0x4FF), (0x600, 0x6FF), (0x3000, 0x30FF),
         (0x4E00, 0x4E80), (0xFF00, 0xFFEF), (0x2460, 0x24FF), (0x1F600, 0x1F64F), (0x2000, 0x206F), (0xAC00, 0xAC40)]


def random_texts(count: int, seed: int) -> list[str]:
    rng = random.Random(seed)
    texts = []
    for _ in range(count):
        chars = []
        for _ in range(rng.randint(0, 30)):
            if rng.random() < 0.15:
                chars.append(rng.choice(" \t\n\u3000\u00a0  "))
            else:
                low, high = rng.choice(POOLS)
                chars.append(chr(rng.randint(low, high)))
        texts.append("".join(chars))
    return texts


SPECIAL_CASES = ["Ⓩ\u0307", "  a  b  ", "", " ", "   ", "ｶﾞ", "<mask> foo  x", "x<mask>", "ﬁ ＡＢＣ", "\ufeffa"]


def _normalizer(data: bytes) -> SpmNormalizer:
    proto = read_model(data)
    spec = proto.normalizer_spec
    return SpmNormalizer(spec.precompiled_charsmap, add_dummy_prefix=spec.add_dummy_prefix,
                         remove_extra_whitespaces=spec.remove_extra_whitespaces,
                         escape_whitespaces=spec.escape_whitespaces,
                         treat_whitespace_as_suffix=proto.trainer_spec.treat_whitespace_as_suffix,
                         user_defined=[p.piece for p in proto.pieces if p.type == USER_DEFINED])


CONFIGS = {
    "nmt_nfkc": {},
    "nfkc_cf": {"normalization_rule_name": "nfkc_cf"},
    "identity_keep_spaces": {"normalization_rule_name": "identity", "remove_extra_whitespaces": False,
                             "user_defined_symbols": ["<mask>", "foo"]},
    "no_prefix_suffix": {"add_dummy_prefix": True, "treat_whitespace_as_suffix": True},
    "no_dummy": {"add_dummy_prefix": False, "normalization_rule_name": "nfkc"},
}


@pytest.fixture(scope="module")
def trained(tmp_path_factory: pytest.TempPathFactory) -> dict[str, bytes]:
    folder = tmp_path_factory.mktemp("spm_normalizer")
    corpus = folder / "corpus.txt"
    corpus.write_text("\n".join(["the cat sat on the mat", "a dog ran in the park"] * 50), encoding="utf-8")
    out = {}
    for name, options in CONFIGS.items():
        spm.SentencePieceTrainer.train(input=str(corpus), model_prefix=str(folder / name), vocab_size=40,
                                       hard_vocab_limit=False, minloglevel=2, **options)
        out[name] = Path(folder / f"{name}.model").read_bytes()
    return out


@pytest.mark.parametrize("name", list(CONFIGS))
def test_equals_sentencepiece_normalize(trained: dict[str, bytes], name: str) -> None:
    ours = _normalizer(trained[name])
    reference = spm.SentencePieceProcessor(model_proto=trained[name])
    texts = random_texts(2500, 7) + SPECIAL_CASES
    differ = [t for t in texts if ours.normalize(t) != reference.normalize(t)]
    assert differ == []


def test_the_hf_counterexamples_follow_each_reference(trained: dict[str, bytes]) -> None:
    """A .model's normalizer is sentencepiece's; a tokenizer.json's Precompiled is Hugging Face's."""
    blob = read_model(trained["nmt_nfkc"]).normalizer_spec.precompiled_charsmap
    spm_way = SpmNormalizer(blob, add_dummy_prefix=False, remove_extra_whitespaces=False, escape_whitespaces=False)
    hf_way = Precompiled(blob)
    hf = tokenizers.normalizers.Precompiled(blob)
    for text, sentencepiece, hugging_face in [("Ⓩ\u0307", "Ż", "Z"), ("a\r\nb", "a  b", "a b"),
                                              ("\u1112\u1161\u11ab", "한", "\u1112\u1161\u11ab")]:
        assert spm_way.normalize(text) == sentencepiece
        assert hf_way.normalize(text) == hugging_face == hf.normalize_str(text)
    assert hf_way.normalize_aligned("xⓏ\u0307y") == ("xZy", [0, 1, 3, 4])


def test_precompiled_equals_hugging_faces(trained: dict[str, bytes]) -> None:
    for name in ("nmt_nfkc", "nfkc_cf"):
        blob = read_model(trained[name]).normalizer_spec.precompiled_charsmap
        ours, hf = Precompiled(blob), tokenizers.normalizers.Precompiled(blob)
        texts = random_texts(2500, 11) + SPECIAL_CASES
        assert [t for t in texts if ours.normalize(t) != hf.normalize_str(t)] == []


@pytest.mark.parametrize("name", list(CONFIGS))
def test_runs_of_plain_ascii_normalize_as_one_byte_at_a_time(trained: dict[str, bytes], name: str) -> None:
    """The copied runs give the bytes and the offsets the per-byte walk gives (letters before a
    combining mark still go through the charsmap: "a\u0301" is "á" under NFKC)."""
    fast = _normalizer(trained[name])
    slow = _normalizer(trained[name])
    slow._plain_run = None
    assert fast._plain_run is not None
    for text in random_texts(1500, 13) + SPECIAL_CASES + ["a\u0301 b\u0300c", "foo<mask>bar  baz", "x\u00a0y"]:
        data = text.encode("utf-8", "surrogatepass")
        assert fast.normalize_bytes(data) == slow.normalize_bytes(data), text


def test_whitespace_rules_without_charsmap() -> None:
    plain = SpmNormalizer()
    assert plain.normalize("  a   b  ") == "▁a▁b"
    assert SpmNormalizer(remove_extra_whitespaces=False).normalize(" a  b ") == "▁▁a▁▁b▁"
    assert SpmNormalizer(treat_whitespace_as_suffix=True).normalize(" a b ") == "a▁b▁"
    assert SpmNormalizer(escape_whitespaces=False).normalize("a  b") == " a b"
    assert SpmNormalizer(user_defined=["a  b"]).normalize("xa  b  c") == "▁xa▁▁b▁c"


def test_aligned_offsets(trained: dict[str, bytes]) -> None:
    ours = _normalizer(trained["nmt_nfkc"])
    assert ours.normalize_aligned("  ｶﾞ  x ") == ("▁ガ▁x", [2, 2, 4, 6, 7])
    assert ours.normalize_aligned("ﬁ") == ("▁fi", [0, 0, 0, 1])
    for text in random_texts(300, 3):
        out, positions = ours.normalize_aligned(text)
        assert out == ours.normalize(text)
        assert len(positions) == len(out) + 1
        assert positions == sorted(positions) and positions[-1] <= len(text)


def test_hf_forms(trained: dict[str, bytes]) -> None:
    blob = read_model(trained["nmt_nfkc"]).normalizer_spec.precompiled_charsmap
    data = _normalizer(trained["nmt_nfkc"]).to_hf()
    assert [step["type"] for step in data["normalizers"]] == ["Precompiled", "Replace", "Replace", "Replace", "Prepend"]
    assert base64.b64decode(data["normalizers"][0]["precompiled_charsmap"]) == blob
    again = Precompiled.from_hf(data["normalizers"][0])
    assert again.normalize("ＡＢＣ①") == "ABC1"
    assert again.to_hf() == data["normalizers"][0]


@pytest.mark.parametrize(("blob", "message"), [
    (b"\x00\x00", "shorter than its 4-byte trie size"),
    (b"\xff\x00\x00\x00abcd", "trie size 255 does not fit its 8 bytes"),
])
def test_broken_charsmaps_are_refused(blob: bytes, message: str) -> None:
    with pytest.raises(FormatError, match=message):
        CharsMap(blob)


def test_bad_base64_is_refused() -> None:
    with pytest.raises(FormatError, match="not valid base64"):
        Precompiled.from_hf({"type": "Precompiled", "precompiled_charsmap": "@@@"})


@pytest.mark.parametrize("dummy", [True, False])
@pytest.mark.parametrize("escape", [True, False])
def test_identity_without_removal_skips_the_byte_walk_with_its_result(dummy: bool, escape: bool) -> None:
    # Identity, spaces kept (our trained Unigram's, Llama 2's): only the spaces and the dummy change,
    # so no byte walk; a lone surrogate (U+FFFD in the walk) still takes it.
    normalizer = SpmNormalizer(b"", add_dummy_prefix=dummy, remove_extra_whitespaces=False, escape_whitespaces=escape)
    walk = SpmNormalizer(b"", add_dummy_prefix=dummy, remove_extra_whitespaces=False, escape_whitespaces=escape)
    walk._only_spaces = False
    assert normalizer._only_spaces
    rng = random.Random(7)
    alphabet = "ab \u2581\t\n\u6f22\u00e9\u0301\x00\ud800\U0001f642"
    for text in ["", " ", "  a", *("".join(rng.choice(alphabet) for _ in range(rng.randint(0, 12))) for _ in range(2000))]:
        assert normalizer.normalize(text) == walk.normalize(text), repr(text)
        assert normalizer.normalize_aligned(text) == walk.normalize_aligned(text), repr(text)
    if dummy:  # sentencepiece's dummy before a text that begins with spaces too
        assert normalizer.normalize("  a") == ("\u2581" * 3 + "a" if escape else "   a")
