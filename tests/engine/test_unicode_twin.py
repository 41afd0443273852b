"""The reference libraries' Unicode tables (engine/unicode_twin.py) against the real ``tokenizers`` and
``tiktoken``: text with characters they do not know yet splits as they split it."""

from __future__ import annotations

import pytest
from hypothesis import given, settings
from hypothesis import strategies as st

from engine.ascii_split import fastest_split
from engine.byte_unicode import bytes_to_symbols
from engine.errors import ConfigError
from engine.formats.js_tiktoken import parse_rank_table
from engine.formats.tiktoken import build_tiktoken
from engine.normalizers import normalizer_from_hf
from engine.onig_unassigned import RANGES
from engine.presets import TIKTOKEN_ENCODINGS
from engine.pretokenizers import GPT2_PATTERN, GPT4_PATTERN, O200K_PATTERN, RegexSplit
from engine.pretokenizers_hf import pretokenizer_from_hf
from engine.tokenizer_json import _split_byte_level
from engine.unicode_twin import _newer, needs_twin
from tests.preset_tables import presets_dir, tiktoken_encoding
from tests.repo_scripts import load_script

tokenizers = pytest.importorskip("tokenizers")

# Assigned in the regex module's Unicode, unassigned in Onig's: the riyal sign (Sc), a CJK Extension J
# ideograph (Lo), an arrow (So), an Arabic symbol (Sk); and the zero-width joiners, outside Onig's \w.
NEWER = ["\u20c1", "\U000323b0", "\u2b96", "\ufbc3"]
JOINERS = ["\u200c", "\u200d"]
# ʕ changed category (Ll to the references, Lo here); ² and ½ are in Onig's \w outside a class only.
CHANGED = ["\u0295", "\u00b2", "\u00bd"]
OLD = ["a", "Z", "9", " ", "  ", ",", "!", "é", "世", "\n", "Δ", "٣"]
ATOMS = [r"\p{L}", r"\p{N}", r"\p{P}", r"\p{S}", r"\p{M}", r"\p{Han}", r"\P{L}", r"\p{Cn}", r"\w", r"\W", r"\d", r"\D",
         r"[^\s\p{L}\p{N}]", r"[\p{P}\p{S}]", r"[a\w]", r"[^\w\s]", r"[[:alpha:]_]", r"\p{^L}", r"\s", r".",
         r"\p{Ll}", r"[\p{Lu}\p{Lo}]", r"(?:\b\w)", r"\p{Word}", r"[[:word:]]"]
# Every code point but the surrogates, and those both tables assign.
EVERY = "".join(chr(c) for c in range(0x20, 0x110000) if not 0xD800 <= c <= 0xDFFF)
TAILS = ["", "+", "*", "?", "{1,2}"]


def test_the_chosen_characters_are_ones_the_tables_disagree_on() -> None:
    assert set(NEWER) <= set(_newer())


def test_the_unassigned_table_is_the_installed_tokenizers() -> None:
    script = load_script("onig_unassigned")
    written = [tuple(int(x, 16) for x in (span.split("-") * 2)[:2]) for span in RANGES.split()]
    assert script.onig_unassigned() == written, "tokenizers' Onig tables changed: run scripts/onig_unassigned.py"


def test_a_twin_is_needed_only_for_text_onig_reads_otherwise() -> None:
    assert not needs_twin(r"\p{L}+", "plain ASCII text, 100%")
    assert not needs_twin(r"\p{L}+", "déjà vu 世界 \U0001f600")
    assert needs_twin(r"\p{L}+", "price \u20c1")
    assert needs_twin(r"\p{L}+", "\U000e0100\u0378")  # unassigned in both: a harmless twin
    assert not needs_twin(r"\p{L}+", "a\u200cb") and needs_twin(r"\w+", "a\u200cb")
    assert needs_twin(r"\p{L}+", "\u0295") and needs_twin(r"\w+", "m\u00b2") and not needs_twin(r"\p{L}+", "m\u00b2")
    assert not needs_twin(r"\w+", "m\u00b2", onig_word=False)  # Rust's \w is the regex module's there


_WORD_FORMS = [r"\w+", r"(?i)\w+", r"[\w]+", r"\W+", r"[^\W]+", r"\p{Word}+", r"\P{Word}+", r"\b\w+\b", r"\w+|[^\w\s]+",
               r"[[:word:]]+", r"[\W\d]+"]
_POSIX_FORMS = [r"[[:digit:]]+", r"[[:^alnum:]]+", r"[[:punct:]]+", r"[[:^punct:]]+", r"[^[:^punct:]]", r"[x[:^digit:]]+",
                r"[[:lower:]]+", r"[[:alpha:][:space:]]+"]


@pytest.mark.parametrize("pattern", _WORD_FORMS + _POSIX_FORMS)
def test_every_code_point_splits_as_hugging_face_splits_it(pattern: str) -> None:
    """The forms of ``\\w`` (Onig's bare ``\\w`` takes ``²³¹¼½¾``, none takes the joiners) and the
    POSIX brackets Onig reads otherwise (``engine/onig.py``), over every code point at once."""
    ours = pretokenizer_from_hf({"type": "Split", "pattern": {"Regex": pattern}, "behavior": "Isolated", "invert": False})
    assert ours.pieces(EVERY) == _hf_pieces(pattern, EVERY)


def test_every_general_category_is_the_references() -> None:
    """Of the characters both tables assign, only ʕ (U+0295) changed category; the twin reads it
    as Onig and tiktoken do, through its stand-in."""
    assigned = _hf_pieces(r"\P{Cn}+", EVERY, "removed")  # the gaps: what Onig leaves unassigned
    text = "".join(_hf_pieces(r"\p{Cn}+", EVERY, "removed"))
    assert len(text) > 250_000 and assigned
    for category in ("Lu", "Ll", "Lt", "Lm", "Lo", "Mn", "Mc", "Me", "Nd", "Nl", "No", "Pc", "Pd", "Ps", "Pe", "Pi",
                     "Pf", "Po", "Sm", "Sc", "Sk", "So", "Zs", "Cc", "Cf", "Co"):
        pattern = rf"\p{{{category}}}+"
        ours = pretokenizer_from_hf({"type": "Split", "pattern": {"Regex": pattern}, "behavior": "Isolated",
                                     "invert": False})
        assert ours.pieces(text) == _hf_pieces(pattern, text), category


@pytest.mark.parametrize("pattern", [r"\p{Ll}+", r"\p{Lo}+|\p{Lu}+", r"\w+", r"\W+", r"\b\w"])
def test_rusts_tables_read_the_changed_characters_as_tiktoken(pattern: str) -> None:
    """tiktoken's regex (Rust's crate) has Onig's categories but its own \\w: joiners in, ``²`` out."""
    text = "ʕaʕ ʖʕ Aʕ m² ½x a\u200cb ٣ʕ"
    split = fastest_split(RegexSplit(pattern, keep_gaps=False))
    assert "".join(split(text)) == _tiktoken_matches(pattern, text)


def _hf_pieces(pattern: str, text: str, behavior: str = "isolated") -> list[str]:
    split = tokenizers.pre_tokenizers.Split(tokenizers.Regex(pattern), behavior)
    return [piece for piece, _ in split.pre_tokenize_str(text)]


@settings(max_examples=400, deadline=None)
@given(parts=st.lists(st.tuples(st.sampled_from(ATOMS), st.sampled_from(TAILS)), min_size=1, max_size=3),
       alternatives=st.integers(min_value=1, max_value=2),
       behavior=st.sampled_from(["Isolated", "Removed", "MergedWithPrevious"]),
       text=st.lists(st.sampled_from(NEWER + JOINERS + CHANGED + OLD), max_size=14).map("".join))
def test_random_property_patterns_split_as_hugging_face(parts: list[tuple[str, str]], alternatives: int,
                                                         behavior: str, text: str) -> None:
    atoms = ["".join(atom + tail for atom, tail in parts[i::alternatives]) for i in range(alternatives)]
    pattern = "|".join(a for a in atoms if a) or r"\p{L}"
    ours = pretokenizer_from_hf({"type": "Split", "pattern": {"Regex": pattern}, "behavior": behavior, "invert": False})
    hf_behavior = {"MergedWithPrevious": "merged_with_previous"}.get(behavior, behavior.lower())
    assert ours.pieces(text) == _hf_pieces(pattern, text, hf_behavior)


TEXTS = ["price \u20c1100, ok\u20c1! \u2b96x", "x \U000323b0\U000323b1字 and \U000323b0the", "join\u200cer\u200dx ١٢٣\u20c1",
         "\ufbc3\ufbc4 \u0627\ufbc3 a\u20c1b", "mixed " * 400 + "\u20c1 long text " * 300]


@pytest.mark.parametrize("pattern", [GPT2_PATTERN, GPT4_PATTERN, O200K_PATTERN], ids=["gpt2", "gpt4", "o200k"])
def test_the_named_patterns_of_a_tokenizer_json_split_as_hugging_face(pattern: str) -> None:
    # The tokenizer's own route: the fast ASCII split, which hands such text to the twin.
    split = fastest_split(pretokenizer_from_hf({"type": "Split", "pattern": {"Regex": pattern}, "behavior": "Isolated",
                                                "invert": False}))
    for text in TEXTS:
        assert split(text) == _hf_pieces(pattern, text), text[:40]


def test_byte_level_with_its_regex_and_whitespace_split_as_hugging_face() -> None:
    _, ours = _split_byte_level({"type": "ByteLevel", "add_prefix_space": False, "use_regex": True})
    assert ours is not None
    byte_level = tokenizers.pre_tokenizers.ByteLevel(add_prefix_space=False, use_regex=True)
    whitespace = pretokenizer_from_hf({"type": "Whitespace"})  # Rust's regex crate: the joiners are in its \w
    for text in TEXTS:
        assert [bytes_to_symbols(p.encode()) for p in fastest_split(ours)(text)] == \
            [p for p, _ in byte_level.pre_tokenize_str(text)], text[:40]
        assert whitespace.pieces(text) == [p for p, _ in tokenizers.pre_tokenizers.Whitespace().pre_tokenize_str(text)]


def test_a_replace_normalizer_replaces_as_hugging_face() -> None:
    for pattern in (r"[\p{S}\p{P}]+", r"\p{Cn}", r"\w+"):
        ours = normalizer_from_hf({"type": "Replace", "pattern": {"Regex": pattern}, "content": "_"})
        theirs = tokenizers.normalizers.Replace(tokenizers.Regex(pattern), "_")
        for text in TEXTS[:4]:
            assert ours.normalize(text) == theirs.normalize_str(text), (pattern, text)


def _tiktoken_matches(pattern: str, text: str) -> str:
    """The characters of ``text`` that tiktoken's regex (Rust's ``regex`` crate, through
    fancy-regex) matches with ``pattern``: it encodes only the matches."""
    tiktoken = pytest.importorskip("tiktoken")
    encoding = tiktoken.Encoding(name="probe", pat_str=pattern, mergeable_ranks={bytes([i]): i for i in range(256)},
                                 special_tokens={})
    return bytes(encoding.encode_ordinary(text)).decode("utf-8")


def test_tiktoken_leaves_the_same_code_points_unassigned() -> None:
    """One table serves both libraries: tiktoken's ``\\p{Cn}`` is Onig's."""
    text = "".join(chr(c) for c in range(0x110000) if not 0xD800 <= c <= 0xDFFF)
    unassigned = {ord(c) for c in _tiktoken_matches(r"\p{Cn}", text)}
    assert unassigned == {c for span in RANGES.split()
                          for c in range(int(span.split("-")[0], 16), int(span.split("-")[-1], 16) + 1)}


@pytest.mark.parametrize("pattern", [r"\w+|\p{S}+", r"[\p{L}\p{N}]+", r"\p{L}+|\d"])
def test_a_tiktoken_pattern_matches_as_tiktoken(pattern: str) -> None:
    """What a pattern matches (a named pattern matches everything: the presets' ids test those)."""
    split = fastest_split(RegexSplit(pattern, keep_gaps=False))
    for text in TEXTS:
        assert "".join(split(text)) == _tiktoken_matches(pattern, text), text[:40]


@pytest.mark.parametrize("name", ["cl100k_base", "o200k_base"])
def test_the_openai_presets_give_tiktokens_ids_on_newer_text(name: str) -> None:
    folder = presets_dir()
    table = parse_rank_table((folder / f"{name}.js").read_text(encoding="utf-8"))
    encoding = TIKTOKEN_ENCODINGS[name]
    ours = build_tiktoken(table.entries, pattern=encoding.pattern, special_tokens=encoding.special_tokens)
    theirs = tiktoken_encoding(folder, name)
    # Found by drawing strings of Unicode 17's letters, digits, marks and symbols: other ids before.
    for text in ["\U0001247a\U0001247aE\ua7cf\u2e61\ufbc7\U000107bb.c.", "\U0001247a\u1ad3 \u1ad4\ua7f1'b", *TEXTS]:
        assert ours.encode_ordinary(text) == theirs.encode_ordinary(text), text[:40]


def test_a_twin_past_its_bound_is_refused_with_the_limits_name() -> None:
    """400 word boundaries in a 2 KB pattern made a 2.2 MB twin that compiled in 1.5 s."""
    pattern = "|".join([r"\b\w"] * 400)
    split = pretokenizer_from_hf({"type": "Split", "pattern": {"Regex": pattern}, "behavior": "Isolated",
                                  "invert": False})
    assert split.pieces("plain words") == _hf_pieces(pattern, "plain words")  # no twin needed
    with pytest.raises(ConfigError, match=r"too many Unicode properties .*\(engine\.limits\.MAX_TWIN_LENGTH\)"):
        split.pieces("price \u20c1")
