"""Snapshots of parsed tokenizers on disk: written once, read by the next cold load, never needed.

The documents here are small, so ``MIN_DOCUMENT_CHARS`` is lowered to 0; ``Tokenizer.from_json``
is counted to tell a parse from a snapshot read.
"""

from __future__ import annotations

import os
from collections.abc import Iterator
from pathlib import Path

import pytest
from flask import Flask
from flask.testing import FlaskClient

from engine import Tokenizer
from tests.webapp.playground_samples import byte_bpe, store
from webapp.tokenizers import loaded, snapshots


@pytest.fixture(autouse=True)
def small_documents_too(monkeypatch: pytest.MonkeyPatch) -> Iterator[None]:
    monkeypatch.setattr(snapshots, "MIN_DOCUMENT_CHARS", 0)
    loaded.clear_cache()
    yield
    loaded.clear_cache()


@pytest.fixture
def parses(monkeypatch: pytest.MonkeyPatch) -> list[int]:
    """One entry per document parsed from JSON."""
    calls: list[int] = []
    original = Tokenizer.from_json.__func__  # type: ignore[attr-defined]

    def counting(cls: type[Tokenizer], text: str | bytes) -> Tokenizer:
        calls.append(len(text))
        return original(cls, text)

    monkeypatch.setattr(Tokenizer, "from_json", classmethod(counting))
    return calls


def folder(app: Flask) -> Path:
    return Path(app.config["DATA_DIR"]) / "snapshots"


def encode(client: FlaskClient, tokenizer_id: int) -> list[int]:
    response = client.post("/api/v1/encode", json={"tokenizer": tokenizer_id, "text": "hello world<|endoftext|>",
                                                    "allowed_special": "all"})
    assert response.status_code == 200, response.get_data(as_text=True)
    return response.get_json()["ids"]


def test_the_first_load_writes_a_snapshot_and_the_next_cold_one_reads_it(
        app: Flask, client: FlaskClient, parses: list[int]) -> None:
    tokenizer = byte_bpe()
    row_id = store(app, tokenizer)
    expected = tokenizer.encode("hello world<|endoftext|>", allowed_special="all")
    assert encode(client, row_id) == expected
    assert len(parses) == 1
    written = list(folder(app).iterdir())
    assert [path.suffix for path in written] == [".npz"]
    loaded.clear_cache()  # as a new process, or after eviction
    assert encode(client, row_id) == expected
    assert len(parses) == 1  # read from the snapshot, not parsed


def test_a_broken_snapshot_is_ignored_and_replaced(app: Flask, client: FlaskClient, parses: list[int]) -> None:
    row_id = store(app, byte_bpe())
    expected = encode(client, row_id)
    [path] = folder(app).iterdir()
    path.write_bytes(b"not a snapshot")
    loaded.clear_cache()
    assert encode(client, row_id) == expected
    assert len(parses) == 2
    loaded.clear_cache()
    assert encode(client, row_id) == expected
    assert len(parses) == 2  # the rewritten one is good


def test_off_when_the_budget_is_zero(app: Flask, client: FlaskClient) -> None:
    app.config["SNAPSHOT_BYTES"] = 0
    encode(client, store(app, byte_bpe()))
    assert not folder(app).exists()


def test_the_folder_keeps_the_most_recently_used_within_its_budget(app: Flask, client: FlaskClient) -> None:
    first, second = store(app, byte_bpe("one")), store(app, byte_bpe("two", merges=[(b"h", b"e")]))
    encode(client, first)
    [one] = folder(app).iterdir()
    os.utime(one, (1, 1))  # long unused
    app.config["SNAPSHOT_BYTES"] = one.stat().st_size + 1  # room for one of them
    encode(client, second)
    [kept] = folder(app).iterdir()
    assert kept != one


def test_an_unwritable_folder_only_costs_the_snapshot(app: Flask, client: FlaskClient) -> None:
    folder(app).parent.mkdir(parents=True, exist_ok=True)
    folder(app).write_text("a file where the folder should be")
    assert encode(client, store(app, byte_bpe())) == byte_bpe().encode("hello world<|endoftext|>",
                                                                       allowed_special="all")


def test_abandoned_partial_writes_are_removed(app: Flask, client: FlaskClient) -> None:
    folder(app).mkdir(parents=True)
    stale, fresh = folder(app) / f"{snapshots.WRITING}old", folder(app) / f"{snapshots.WRITING}new"
    stale.write_bytes(b"x")
    fresh.write_bytes(b"x")
    os.utime(stale, (1, 1))
    encode(client, store(app, byte_bpe()))
    assert not stale.exists() and fresh.exists()
