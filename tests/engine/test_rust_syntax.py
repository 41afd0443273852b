"""tiktoken's regexes (Rust's) against the regex module's, through the real ``tiktoken``: a tiktoken
file's pattern is read as tiktoken reads it, and the patterns we write into tiktoken files and
tokenizer.json files mean there what they mean here (engine/rust_syntax.py)."""

from __future__ import annotations

import pytest

from engine.errors import ConfigError, FormatError
from engine.formats.js_tiktoken import parse_rank_table
from engine.formats.tiktoken import build_tiktoken
from engine.pretokenizers import RegexSplit
from engine.pretokenizers_hf import pretokenizer_from_hf
from engine.rust_syntax import from_rust, to_rust
from tests.preset_tables import presets_dir

tiktoken = pytest.importorskip("tiktoken")

POSIX = ["alnum", "alpha", "ascii", "blank", "cntrl", "digit", "graph", "lower", "print", "punct", "space", "upper",
         "word", "xdigit"]
# Read otherwise by the two engines before: ASCII classes, hex digits, anchors, Rust's escapes.
RUST_PATTERNS = ([f"[[:{name}:]]+" for name in POSIX] + [f"[[:^{name}:]]+" for name in POSIX]
                 + [f"[x[:^{name}:]é]+" for name in POSIX]
                 + [r"\h+", r"\H+", r"[\h\s]+", r"[^\h]+", r"a$", r"a\Z", r"\n\Z", r"a\n*\Z", r"(?m)a$",
                    r"\x{e9}+|\u{263a}", r"\e", r"\w+$|\s+"])
# Every code point up to U+2FFF, then what the anchors are about: final newlines.
TEXT = "".join(chr(c) for c in range(1, 0x3000) if not 0xD800 <= c <= 0xDFFF) + "a\n\n a\n a\r\n x a"


def _tiktoken_matches(pattern: str, text: str) -> str:
    """What tiktoken's regex matches in ``text``, in order: it encodes only the matches."""
    encoding = tiktoken.Encoding(name="probe", pat_str=pattern, mergeable_ranks={bytes([i]): i for i in range(256)},
                                 special_tokens={})
    return bytes(encoding.encode_ordinary(text)).decode("utf-8")


@pytest.mark.parametrize("pattern", RUST_PATTERNS)
def test_a_tiktoken_pattern_matches_as_tiktoken(pattern: str) -> None:
    ours = RegexSplit(pattern, keep_gaps=False, rust=True)
    assert "".join(ours.pieces(TEXT)) == _tiktoken_matches(pattern, TEXT)
    # Written back into a tiktoken file, and into a tokenizer.json, it means the same.
    assert ours.findall_pattern() == pattern
    again = pretokenizer_from_hf(ours.to_hf())
    assert again.pieces(TEXT) == ours.pieces(TEXT)


def test_the_translations() -> None:
    assert from_rust(r"[[:alpha:]_]+|\h") == r"[A-Za-z_]+|[0-9A-Fa-f]"
    assert from_rust(r"^\s+$|x\Z") == r"^\s+\Z|x(?=\n*\z)"
    assert from_rust(r"(?m)^a$") == r"(?m)^a$"
    assert from_rust(r"\x{1F600}\e") == "\U0001f600\\x1b"
    assert to_rust(r"a$|b\Z") == r"a(?=\n?\z)|b\z" and to_rust(r"b\Z|(?m:c)") == r"b\z|(?m:c)"
    with pytest.raises(ConfigError, match="means two things"):
        to_rust(r"a$|(?m:b$)")


@pytest.mark.parametrize(("pattern", "message"), [(r"[a-z&&[^aeiou]]+", "set operation"), (r"[a-c--b]", "set operation"),
                                                  (r"[[a]b]", "nested set"), (r"[[:vowel:]]", "no POSIX class"),
                                                  (r"(?m:a)$", r"\(\?m\) is on for a part"),
                                                  (r"\N{DIGIT ONE}", r"\\N"), (r"\x{D800}", "surrogate"),
                                                  (r"\x{FFFFFF}", "past the last code point")])
def test_patterns_tiktoken_reads_otherwise_are_refused(pattern: str, message: str) -> None:
    with pytest.raises(ConfigError, match=message):
        RegexSplit(pattern, keep_gaps=False, rust=True)


def test_a_tiktoken_file_with_such_a_pattern_gives_tiktokens_ids() -> None:
    """The import's route (``build_tiktoken``), with real merges: pieces cut elsewhere give other ids."""
    folder = presets_dir()
    table = parse_rank_table((folder / "cl100k_base.js").read_text(encoding="utf-8"))
    pattern = r"[[:alpha:]]+$|[[:alpha:]]+| ?[[:punct:]]+|\h+|\s+\Z|\s+|[^\s[:alnum:]]+|\d"
    ours = build_tiktoken(table.entries, pattern=pattern)
    theirs = tiktoken.Encoding(name="probe", pat_str=pattern, mergeable_ranks=table.ranks(), special_tokens={})
    for text in ["Naïve café: 3 €, DEADbeef 42!\n\n", "déjà vu\n", "x = [a, b]; # ok\r\n", TEXT[-2000:]]:
        assert ours.encode_ordinary(text) == theirs.encode_ordinary(text), text


def test_our_patterns_are_written_for_tiktoken_as_we_read_them() -> None:
    """The ``regex`` module's ``$`` holds before a final newline, its ``\\Z`` only at the end."""
    for pattern in (r"\w+$|\s+", r"\w+\Z|\s+"):
        ours = RegexSplit(pattern, keep_gaps=False)
        written = ours.findall_pattern()
        for text in ("end\n", "end", "a b\n\n"):
            assert _tiktoken_matches(written, text) == "".join(ours.pieces(text)), (pattern, text)
    # A tokenizer.json's pattern (Onig's: $ at every line) written for tiktoken.
    onig = pretokenizer_from_hf({"type": "Split", "pattern": {"Regex": r"\w+$"}, "behavior": "Removed", "invert": True})
    assert isinstance(onig, RegexSplit)
    assert _tiktoken_matches(onig.findall_pattern(), "ab\ncd\nef") == "".join(onig.pieces("ab\ncd\nef"))


@pytest.mark.parametrize("pattern", [r"[[:alpha:]]+", r"[^[:punct:]]", r"\h+", r"[\H]"])
def test_a_pattern_three_engines_read_three_ways_is_refused_where_people_type_it(pattern: str) -> None:
    with pytest.raises(ConfigError, match=r"POSIX class|\\[hH]"):
        RegexSplit(pattern)
    assert RegexSplit(r"[[:xdigit:]]+|[^[:ascii:]]").pieces("cafe, café") == ["cafe", ", ", "caf", "é"]


def test_a_posix_class_tiktoken_reads_as_ascii_is_not_written_into_a_tiktoken_file() -> None:
    onig = pretokenizer_from_hf({"type": "Split", "pattern": {"Regex": r"[[:alpha:]]+"}, "behavior": "Isolated",
                                 "invert": False})
    assert isinstance(onig, RegexSplit)
    with pytest.raises(ConfigError, match=r"\[:alpha:\].*ASCII only"):
        onig.findall_pattern()
    with pytest.raises(FormatError):  # and a pattern Onig refuses stays refused
        pretokenizer_from_hf({"type": "Split", "pattern": {"Regex": r"[a[bc]]"}, "behavior": "Isolated", "invert": False})
