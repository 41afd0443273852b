"""``normalize_aligned``: the ASCII-run fast path gives exactly the per-cluster reference's text
and map, for every normalizer, on text that mixes ASCII with what could trip it up; and the text
is always what ``normalize`` gives, context included; position-dependent steps (Prepend, Strip,
Replace) and Sequences of them map exactly (their HF parity is in ``test_hf_normalizers``)."""

from __future__ import annotations

import pytest
from hypothesis import given
from hypothesis import strategies as st

from engine.normalizers import (
    BertCleanup,
    Normalizer,
    Prepend,
    Replace,
    Sequence,
    Strip,
    get_normalizer,
    normalize_aligned,
    normalize_aligned_reference,
)

# ASCII (with CR LF and a control character), combining marks that join the ASCII letter before
# them, a Prepend character (U+0600) that joins the character after it, final-sigma Greek, and
# characters whose normal forms change length (ﬁ, İ, Å, Hangul).
ALPHABET = list("aZ9 .\r\n\t\x01") + ["\u0301", "\u0308", "\u0600", "Σ", "Α", "ﬁ", "İ", "Å", "한", "中", "é", "\u200d"]
SPECS = ["lowercase", "strip_accents", "nfc", "nfd", "nfkc", "nfkd", "lowercase,strip_accents", "nfkc,lowercase"]


@pytest.mark.parametrize("spec", SPECS)
@given(text=st.text(st.sampled_from(ALPHABET), max_size=40))
def test_fast_path_equals_the_per_cluster_reference(spec: str, text: str) -> None:
    normalizer = get_normalizer(spec)
    assert normalizer is not None and normalizer.ascii_charwise  # type: ignore[attr-defined]
    out, offsets = normalize_aligned(normalizer, text)
    assert (out, offsets) == normalize_aligned_reference(normalizer, text)
    assert out == normalizer.normalize(text)  # the ids must be encode's
    assert len(offsets) == len(out) + 1 and offsets == sorted(offsets) and offsets[-1] == len(text)


def test_normalizers_that_drop_ascii_keep_the_per_cluster_path() -> None:
    cleanup = Sequence([BertCleanup(), get_normalizer("lowercase")])  # type: ignore[list-item]
    assert not cleanup.ascii_charwise
    text = "Tab\there, a\x01bell; Cafe\u0301"
    assert normalize_aligned(cleanup, text) == normalize_aligned_reference(cleanup, text)
    out, offsets = normalize_aligned(cleanup, text)
    assert out == "tab here, abell; cafe\u0301" and offsets[len("tab here, a")] == len("Tab\there, a\x01")


def test_a_mark_after_the_last_ascii_letter_stays_with_its_cluster() -> None:
    out, offsets = normalize_aligned(get_normalizer("nfc"), "Cafe\u0301 ok")  # type: ignore[arg-type]
    assert out == "Café ok"
    assert offsets == [0, 1, 2, 3, 5, 6, 7, 8]  # é (two input characters) maps to where its cluster began


class PythonLower:
    """A normalizer that sees context: Python lowercases a word-final "Σ" to "ς"."""

    name = "python_lower"
    ascii_charwise = False

    def normalize(self, text: str) -> str:
        return text.lower()

    def to_hf(self) -> dict[str, str]:
        return {"type": "PythonLower"}


def test_context_the_clusters_cannot_see_is_the_whole_texts() -> None:
    out, offsets = normalize_aligned(PythonLower(), "ΟΔΟΣ ΚΑΙ Σ")
    assert out == "οδος και σ"  # the clusters alone would give "οδοσ"
    assert offsets == list(range(11))


def test_lowercase_is_per_character_as_in_hugging_face() -> None:
    lowercase = get_normalizer("lowercase")
    assert normalize_aligned(lowercase, "ΟΔΟΣ İ") == ("οδοσ i\u0307", [0, 1, 2, 3, 4, 5, 5, 6])  # type: ignore[arg-type]


@pytest.mark.parametrize("steps", [
    [Prepend("▁"), Replace(string=" ", content="▁")],  # Llama 2
    [Replace(string=" ", content="▁")],  # Gemma 3
    [Strip(left=True, right=True), get_normalizer("nfkc"), Replace(pattern=" +", content=" "), Prepend("<")],
    [get_normalizer("lowercase,strip_accents"), Replace(string="e\u0301", content="E")],
], ids=["llama2", "gemma3", "strip-nfkc-replace-prepend", "local-then-spanning"])
@given(text=st.lists(st.sampled_from(ALPHABET + ["e\u0301", "  "]), max_size=30).map("".join))
def test_sequences_compose_exact_maps(steps: list[Normalizer], text: str) -> None:
    sequence = Sequence(steps)
    out, offsets = normalize_aligned(sequence, text)
    assert out == sequence.normalize(text)
    assert len(offsets) == len(out) + 1 and offsets == sorted(offsets) and offsets[-1] == len(text)
    assert all(0 <= o <= len(text) for o in offsets)


def test_llama2_maps_each_space_to_its_own_position() -> None:
    llama2 = Sequence([Prepend("▁"), Replace(string=" ", content="▁")])
    assert normalize_aligned(llama2, "a b") == ("▁a▁b", [0, 0, 1, 2, 3])
    assert normalize_aligned(llama2, "") == ("", [0])
