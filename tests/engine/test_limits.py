"""The engine's bounds (engine/limits.py) against the attacks of issue #11, in every import format.

Each test is one finding: ids that would size a table by gigabytes, a 10 MB token, an empty or
out-of-range special token, a custom pattern with a capturing group or an empty match, and a
pattern that backtracks for minutes, which the time budget stops with ``EncodeTimeout``.
"""

from __future__ import annotations

import base64
import json
import time
import tracemalloc
from collections.abc import Callable
from pathlib import Path
from typing import Any

import pytest

from engine import EncodeTimeout, FormatError, Tokenizer, byte_level_bpe, time_budget
from engine.cli import main
from engine.errors import ConfigError
from engine.formats import gpt2, spm, tiktoken, vocab_txt
from engine.limits import (
    MAX_FILE_BYTES,
    MAX_PATTERN_LENGTH,
    MAX_SPECIAL_TOKEN_LENGTH,
    MAX_SPECIAL_TOKENS,
    MAX_TOKEN_LENGTH,
    MAX_VOCAB_SIZE,
    read_bytes,
)
from engine.models.bpe import BPE
from engine.pretokenizers import RegexSplit
from tests.hostile_patterns import SLOW

EOT = "<|endoftext|>"
TEN_MB = 10 * 1024 * 1024


def tiny(pretokenizer: str | RegexSplit = "gpt2") -> Tokenizer:
    vocab = {b: bytes([b]) for b in range(256)} | {256: b"th", 257: b"the"}
    return byte_level_bpe(vocab, [(b"t", b"h"), (b"th", b"e")], pretokenizer=pretokenizer,
                          special_tokens={EOT: 258})


def tiny_json(**edits: Callable[[dict[str, Any]], None]) -> str:
    data = json.loads(tiny().to_json())
    for edit in edits.values():
        edit(data)
    return json.dumps(data)


def refused_with_peak(load: Callable[[], object]) -> tuple[str, float]:
    """Run ``load``, which must raise FormatError: its message and the peak MiB it allocated."""
    tracemalloc.start()
    try:
        with pytest.raises(FormatError) as error:
            load()
        return str(error.value), tracemalloc.get_traced_memory()[1] / 2**20
    finally:
        tracemalloc.stop()


# --------------------------------------------------------------------------- finding 1: ids
@pytest.mark.parametrize("token_id", [2**31, 10**18, MAX_VOCAB_SIZE], ids=["2^31", "10^18", "the-limit"])
def test_a_huge_id_in_tokenizer_json_is_refused_before_anything_is_sized_by_it(token_id: int) -> None:
    # Before: BPE built [empty] * (id + 1): 23.6 GB for 2^31, and a 500 for 10^18.
    text = tiny_json(add=lambda d: d["model"]["vocab"].__setitem__("zzqq", token_id))
    message, peak = refused_with_peak(lambda: Tokenizer.from_json(text))
    assert message == (f"The token 'zzqq' has the id {token_id}; ids must be below 2,000,000 "
                       "(engine.limits.MAX_VOCAB_SIZE). Renumber the vocabulary from 0.")
    assert peak < 50


def test_the_largest_allowed_id_loads() -> None:
    tok = Tokenizer.from_json(tiny_json(add=lambda d: d["model"]["vocab"].__setitem__("zzqq", MAX_VOCAB_SIZE - 1)))
    assert tok.vocab_size == MAX_VOCAB_SIZE
    assert tok.token_to_id("zzqq") == MAX_VOCAB_SIZE - 1


@pytest.mark.parametrize("kind", ["WordPiece", "WordLevel", "MaxMatch"])
def test_string_vocabularies_refuse_huge_ids(kind: str) -> None:
    doc = {"model": {"type": kind, "unk_token": "[UNK]", "vocab": {"[UNK]": 0, "a": 10**12}}}
    with pytest.raises(FormatError, match=r"The token 'a' has the id 1000000000000; ids must be below 2,000,000"):
        Tokenizer.from_json(json.dumps(doc))


def test_a_gpt2_vocab_json_id_of_999999999999_names_its_line() -> None:
    vocab = gpt2.dumps_vocab(tiny()).replace('"the": 257', '"the": 999999999999')
    with pytest.raises(FormatError) as error:
        gpt2.parse_vocab_json(vocab, source="vocab.json")
    line = vocab[: vocab.index("999999999999")].count("\n") + 1
    assert str(error.value) == (f"vocab.json, line {line}: The token 'the' has the id 999999999999; ids must be "
                                "below 2,000,000 (engine.limits.MAX_VOCAB_SIZE). Renumber the vocabulary from 0.")


def test_tiktoken_ranks_and_bpe_built_in_code_are_bounded_too() -> None:
    line = f"{base64.b64encode(b'zz').decode()} {10**15}\n"
    with pytest.raises(FormatError, match=r"r.tiktoken, line 1: The token 'zz' has the id 1000000000000000"):
        tiktoken.parse_ranks(line, source="r.tiktoken")
    vocab = {b: bytes([b]) for b in range(256)} | {2**31: b"zz"}
    with pytest.raises(FormatError, match="ids must be below 2,000,000"):
        BPE(vocab, [])


def test_merge_lists_are_bounded(monkeypatch: pytest.MonkeyPatch) -> None:
    import engine.formats.gpt2 as gpt2_module
    import engine.models.bpe as bpe_module

    monkeypatch.setattr(bpe_module, "MAX_MERGES", 1)
    monkeypatch.setattr(gpt2_module, "MAX_MERGES", 1)
    with pytest.raises(FormatError, match=r"The tokenizer has 2 merges; at most 1 are accepted \(engine.limits.MAX_MERGES\)"):
        Tokenizer.from_json(tiny().to_json())
    with pytest.raises(FormatError, match=r"merges.txt: The tokenizer has 2 merges or more; at most 1 are accepted"):
        gpt2.parse_merges_txt("t h\nth e\n", source="merges.txt")


# --------------------------------------------------------------------------- finding 3: token length
def _bpe_json_with(token: str) -> str:
    return tiny_json(add=lambda d: d["model"]["vocab"].__setitem__(token, 300))


def _wordpiece_json_with(token: str) -> str:
    return json.dumps({"model": {"type": "WordPiece", "vocab": {"[UNK]": 0, token: 1}}})


def _unigram_json_with(token: str) -> str:
    return json.dumps({"model": {"type": "Unigram", "unk_id": 0, "vocab": [["<unk>", 0.0], [token, -1.0]]}})


LONG_TOKEN_LOADERS: dict[str, Callable[[str], object]] = {
    "tokenizer.json BPE": lambda t: Tokenizer.from_json(_bpe_json_with(t)),
    "tokenizer.json WordPiece": lambda t: Tokenizer.from_json(_wordpiece_json_with(t)),
    "tokenizer.json Unigram": lambda t: Tokenizer.from_json(_unigram_json_with(t)),
    "vocab.json": lambda t: gpt2.parse_vocab_json(json.dumps({t: 0})),
    "merges.txt": lambda t: gpt2.parse_merges_txt(f"{t} a\n"),
    "vocab.txt": lambda t: vocab_txt.parse_vocab_txt(f"[UNK]\n{t}\n"),
    "tiktoken": lambda t: tiktoken.parse_ranks(f"{base64.b64encode(t.encode()).decode()} 0\n"),
    "sentencepiece .vocab": lambda t: spm.loads_vocab(f"<unk>\t0\n{t}\t-1\n"),
}


@pytest.mark.parametrize("loader", LONG_TOKEN_LOADERS.values(), ids=LONG_TOKEN_LOADERS.keys())
def test_a_10_mb_token_is_refused_by_every_format(loader: Callable[[str], object]) -> None:
    with pytest.raises(FormatError, match=r"The token b?'a{40}'… \(10,485,760 (characters|bytes)\) is longer than "
                                          r"1,024 (characters|bytes) \(engine.limits.MAX_TOKEN_LENGTH\)"):
        loader("a" * TEN_MB)


@pytest.mark.parametrize("loader", LONG_TOKEN_LOADERS.values(), ids=LONG_TOKEN_LOADERS.keys())
def test_a_token_at_the_length_limit_is_accepted(loader: Callable[[str], object]) -> None:
    try:
        loader("a" * MAX_TOKEN_LENGTH)
    except FormatError as exc:  # some formats refuse the tiny file for other reasons, never the length
        assert "MAX_TOKEN_LENGTH" not in str(exc)


# --------------------------------------------------------------------------- finding 12: special tokens
def _added(content: object, token_id: object) -> Callable[[dict[str, Any]], None]:
    def edit(data: dict[str, Any]) -> None:
        data["added_tokens"].append({"id": token_id, "content": content, "special": True})

    return edit


@pytest.mark.parametrize("content, token_id, message", [
    pytest.param("", 300, "A special token must be a non-empty string, not '' (id 300); an empty one would match "
                          "between every two characters.", id="empty"),
    pytest.param("<big>", 10**12, "The token '<big>' has the id 1000000000000; ids must be below 2,000,000",
                 id="id-10^12"),
    pytest.param("<dup>", 258, f"The special tokens '{EOT}' and '<dup>' share the id 258", id="shared-id"),
    pytest.param("<" * (MAX_SPECIAL_TOKEN_LENGTH + 1), 300, "is longer than 256 characters", id="too-long"),
])
def test_bad_special_tokens_in_tokenizer_json_are_refused(content: str, token_id: int, message: str) -> None:
    # Before: the empty token put its id between every two characters, and 10^12 became the vocab size.
    with pytest.raises(FormatError) as error:
        Tokenizer.from_json(tiny_json(add=_added(content, token_id)))
    assert message in str(error.value)


def test_special_tokens_are_checked_in_every_format_and_in_the_library() -> None:
    with pytest.raises(FormatError, match="A special token must be a non-empty string"):
        Tokenizer(tiny().model, special_tokens={"": 5})
    with pytest.raises(FormatError, match=r"s.json: The token 'x' has the id 1000000000000"):
        tiktoken.parse_sidecar('{"pat_str": "gpt2", "special_tokens": {"x": 1000000000000}}', source="s.json")
    with pytest.raises(FormatError, match="s.json: A special token must be a non-empty string"):
        tiktoken.parse_sidecar('{"pat_str": "gpt2", "special_tokens": {"": 5}}', source="s.json")
    many = [f"<{i}>" for i in range(MAX_SPECIAL_TOKENS + 1)]
    with pytest.raises(FormatError, match="at most 8,192 are accepted"):
        gpt2.build_gpt2(gpt2.parse_vocab_json(gpt2.dumps_vocab(tiny())), [], special_tokens=many)
    long = {f"<{i:04}{'x' * 250}>": 300 + i for i in range(600)}  # 600 × 256 characters > 131,072
    with pytest.raises(FormatError, match=r"have 153,600 characters in all; at most 131,072"):
        Tokenizer(tiny().model, special_tokens=long)


# --------------------------------------------------------------------------- other malformed documents
@pytest.mark.parametrize("text, message", [
    pytest.param("[" * 100_000, "nested too deeply", id="deep-nesting"),
    pytest.param('{"model": {"type": "WordLevel", "vocab": {"a": ' + "9" * 5000 + "}}}", "not valid JSON",
                 id="5000-digit-int"),
    pytest.param(json.dumps({"model": {"type": "Unigram", "unk_id": 0, "vocab": [["<unk>", 10**400]]}}),
                 "scores must be finite numbers", id="unigram-score-10^400"),
])
def test_malformed_documents_are_format_errors(text: str, message: str) -> None:
    # Before: RecursionError, ValueError and OverflowError escaped Tokenizer.from_json().
    with pytest.raises(FormatError, match=message):
        Tokenizer.from_json(text)


def test_a_split_with_an_unknown_behavior_is_refused_by_path() -> None:
    data = json.loads(tiny(RegexSplit(r"\w+|\s")).to_json())
    data["pre_tokenizer"]["pretokenizers"][0]["behavior"] = "Sideways"
    with pytest.raises(FormatError, match=r"pre_tokenizer.pretokenizers\[0\] has behavior 'Sideways'"):
        Tokenizer.from_json(json.dumps(data))


def test_engine_loaders_refuse_files_over_the_size_limit(tmp_path: Path) -> None:
    path = tmp_path / "big.txt"
    path.write_bytes(b"x" * 11)
    assert read_bytes(path, limit=11) == b"x" * 11
    with pytest.raises(FormatError, match=r"big.txt: The file is larger than 0 MiB"):
        read_bytes(path, limit=10)
    assert MAX_FILE_BYTES == 256 << 20


def test_rank_files_whose_merges_would_take_minutes_to_derive_are_refused() -> None:
    # The prefixes of three 1,024-byte strings took 48 s; the work is bounded before it starts.
    lines = [f"{base64.b64encode(bytes([b])).decode()} {b}" for b in range(256)]
    lines += [f"{base64.b64encode(bytes([65 + i % 26]) * 1000 + bytes([i])).decode()} {256 + i}" for i in range(101)]
    work = 256 + 101 * 1001**2
    with pytest.raises(FormatError, match=f"r.tiktoken: The tokens are too long in all to derive their merges: "
                                          f"the sum of their squared lengths is {work:,}, over the 100,000,000"):
        tiktoken.loads_tiktoken("\n".join(lines), pretokenizer="gpt2", source="r.tiktoken")


# --------------------------------------------------------------------------- finding 10: patterns
def test_a_capturing_group_gives_whole_matches_as_hugging_face_does() -> None:
    pattern = r"(\p{L})\p{L}*|(\d)\d*|\s+|[^\s\p{L}\d]+"
    text = "Hello world 2024, naïve café!"
    pieces = RegexSplit(pattern).pieces(text)
    assert pieces == ["Hello", " ", "world", " ", "2024", ",", " ", "naïve", " ", "café", "!"]
    hf = pytest.importorskip("tokenizers")
    split = hf.pre_tokenizers.Split(hf.Regex(pattern), behavior="isolated")
    assert [p for p, _ in split.pre_tokenize_str(text)] == pieces
    tok = Tokenizer.from_json(tiny(RegexSplit(pattern)).to_json())  # before: findall gave the groups, then a crash
    assert tok.decode(tok.encode(text)) == text
    assert [s.char_start for s in tok.encode_with_offsets("the the")] == [0, 3, 4]


@pytest.mark.parametrize("pattern, message", [
    pytest.param(r"\b|\w+", "matches an empty piece (at character 0 of", id="empty-piece"),
    pytest.param(r"x*", "matches the empty string", id="empty-string"),
    pytest.param("a" * (MAX_PATTERN_LENGTH + 1), "has 2,049 characters; at most 2,048", id="too-long"),
    pytest.param(r"(a", "is not a valid regex", id="invalid"),
    pytest.param(r"(?:(?:a|a)*)*b|\S", "took over 0.5 s on a", id="slow-on-the-sample"),
    # 24 characters that regex.compile never finished expanding (no timeout applies to compiling)
    pytest.param(r"((a{1000}){1000}){1000}|\S", "has nested counted repeats that expand to over 100,000 elements",
                 id="compile-bomb"),
    pytest.param(r"[[](a{1000}){1000}", "expand to over 100,000", id="bomb-behind-a-bracket"),
])
def test_unusable_patterns_are_refused_with_the_reason(pattern: str, message: str) -> None:
    with pytest.raises(ConfigError, match=message.replace("(", r"\(")):
        RegexSplit(pattern)


def test_real_patterns_are_far_below_the_expansion_limit() -> None:
    from engine.limits import expanded_size
    from engine.pretokenizers import PATTERNS

    assert {name: expanded_size(p) for name, p in PATTERNS.items()} == {"gpt2": 21, "gpt4": 26, "o200k": 56}
    assert expanded_size(r"(ab|cd){3}\p{L}{2}[{}]{5}") == 12 + 2 + 5
    assert RegexSplit(r"\w{1,60000}|\s").pieces("ab c") == ["ab", " ", "c"]


# --------------------------------------------------------------------------- finding 5: ReDoS
def test_a_backtracking_pattern_stops_at_the_time_budget() -> None:
    tok = Tokenizer.from_json(tiny(RegexSplit(SLOW)).to_json())
    assert tok.encode("a,b") == [97, 44, 98]
    started = time.process_time()  # regex counts CPU time; wall time depends on the machine's load
    with time_budget(0.5), pytest.raises(EncodeTimeout) as error:
        tok.encode("," * 2000)  # about two minutes of matching without the budget
    assert time.process_time() - started < 5
    assert str(error.value).startswith("The pre-tokenizer pattern took longer than 0.5 s on this text; "
                                       "it backtracks too much")
    with time_budget(0.5), pytest.raises(EncodeTimeout):
        tok.encode_with_offsets("," * 2000)


def _times_out(timeout: float | None) -> None:
    raise TimeoutError  # what regex raises when a call outruns its timeout


def test_budgets_charge_pattern_calls_and_nest() -> None:
    from engine.limits import _BUDGET, run_budgeted

    assert run_budgeted(lambda timeout: timeout, "x", "y") is None  # no budget: no timeout at all
    with time_budget(5):
        outer = _BUDGET.get()
        assert outer is not None and 4.9 < run_budgeted(lambda timeout: timeout, "x", "y") <= 5  # type: ignore[operator]
        with time_budget(100):
            assert run_budgeted(lambda timeout: timeout, "x", "y") <= 5  # type: ignore[operator]
        with time_budget(1):
            with pytest.raises(EncodeTimeout, match=r"^The thing took longer than 1 s on this text; do less.$"):
                run_budgeted(_times_out, "The thing", "do less.")
            with pytest.raises(EncodeTimeout):  # spent: the next call is refused before it starts
                run_budgeted(lambda timeout: timeout, "The thing", "do less.")
        assert 3.9 < outer.left < 4  # the inner block spent its whole second of the outer five
        assert run_budgeted(lambda timeout: timeout, "x", "y") == pytest.approx(outer.left, abs=0.1)
    assert _BUDGET.get() is None
    with pytest.raises(ConfigError, match="positive number of seconds, not 0"):
        with time_budget(0):
            pass


def test_the_cli_encode_has_an_optional_time_limit(tmp_path: Path, capsys: pytest.CaptureFixture[str]) -> None:
    path = tmp_path / "redos.json"
    tiny(RegexSplit(SLOW)).save(path)
    assert main(["encode", "-t", str(path), "--time-limit", "0.5", "--text", "," * 2000]) == 1
    assert "tokenforge encode: error: The pre-tokenizer pattern took longer than 0.5 s" in capsys.readouterr().err
    assert main(["encode", "-t", str(path), "--time-limit", "5", "--text", "a,b"]) == 0
    assert json.loads(capsys.readouterr().out) == [97, 44, 98]
    with pytest.raises(SystemExit):
        main(["encode", "-t", str(path), "--time-limit", "0", "--text", "a"])
    assert "expected a positive number of seconds, not '0'" in capsys.readouterr().err
