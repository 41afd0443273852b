"""GPT-2's byte-to-symbol alphabet (engine/byte_unicode.py): one token and many at once."""

from __future__ import annotations

from hypothesis import given
from hypothesis import strategies as st

from engine.byte_unicode import bytes_to_symbols, many_bytes_to_symbols, many_symbols_to_bytes, symbols_to_bytes


def test_gpt2_symbols_of_known_bytes() -> None:
    assert bytes_to_symbols(b" the\n") == "\u0120the\u010a"  # "Ġthe" and "Ċ", as in GPT-2's vocab.json
    assert bytes_to_symbols(bytes([0, 0x7F, 0xAD, 0xA1, 0xFF])) == "\u0100\u0121\u0143\xa1\xff"
    assert len({bytes_to_symbols(bytes([b])) for b in range(256)}) == 256


@given(st.lists(st.binary(max_size=12), max_size=40))
def test_many_tokens_at_once_equal_one_by_one(tokens: list[bytes]) -> None:
    symbols = many_bytes_to_symbols(tokens)
    assert symbols == [bytes_to_symbols(token) for token in tokens]
    assert [symbols_to_bytes(s) for s in symbols] == tokens
    assert many_symbols_to_bytes(symbols) == tokens
