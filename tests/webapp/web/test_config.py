"""Settings from environment variables: defaults, overrides, the secret key and URL mapping."""

from __future__ import annotations

from pathlib import Path

import pytest

from webapp.web.config import SettingsError, finish_settings, load_settings, normalize_database_url


def test_defaults_put_everything_in_the_data_dir(tmp_path: Path) -> None:
    settings = finish_settings(load_settings({"TOKENFORGE_DATA_DIR": str(tmp_path)}))
    assert settings["DATABASE_URL"] == f"sqlite:///{tmp_path / 'tokenforge.sqlite3'}"
    assert settings["CORPUS_DIR"] == str(tmp_path / "corpora")
    assert settings["MAX_UPLOAD_BYTES"] == 1024**3
    assert settings["MAX_ATTEMPTS"] == 2
    assert settings["STALE_SECONDS"] == 30.0
    assert (settings["LEADERBOARD_MAX_BYTES"], settings["LEADERBOARD_PAIR_SECONDS"]) == (1 << 20, 60.0)
    assert settings["CHAT_RENDER_SECONDS"] == 3.0


def test_environment_overrides(tmp_path: Path) -> None:
    env = {
        "TOKENFORGE_DATA_DIR": str(tmp_path),
        "DATABASE_URL": "postgresql://u:p@db.example/tf",
        "TOKENFORGE_MAX_UPLOAD_BYTES": "1000",
        "SECRET_KEY": "s3cret",
        "TOKENFORGE_LEADERBOARD_MAX_BYTES": "4096",
        "TOKENFORGE_LEADERBOARD_PAIR_SECONDS": "2.5",
        "TOKENFORGE_CHAT_RENDER_SECONDS": "0.5",
    }
    settings = finish_settings(load_settings(env))
    assert (settings["LEADERBOARD_MAX_BYTES"], settings["LEADERBOARD_PAIR_SECONDS"]) == (4096, 2.5)
    assert settings["CHAT_RENDER_SECONDS"] == 0.5
    assert settings["DATABASE_URL"] == "postgresql+psycopg://u:p@db.example/tf"
    assert settings["MAX_UPLOAD_BYTES"] == 1000
    assert settings["SECRET_KEY"] == "s3cret"
    assert not (tmp_path / "secret_key").exists()


@pytest.mark.parametrize(
    ("url", "expected"),
    [
        ("postgresql://h/db", "postgresql+psycopg://h/db"),
        ("postgres://h/db", "postgresql+psycopg://h/db"),
        ("postgresql+psycopg://h/db", "postgresql+psycopg://h/db"),
        ("sqlite:////tmp/x.db", "sqlite:////tmp/x.db"),
    ],
    ids=["postgresql", "postgres-alias", "already-psycopg", "sqlite"],
)
def test_postgres_urls_use_psycopg3(url: str, expected: str) -> None:
    assert normalize_database_url(url) == expected


def test_secret_key_is_generated_once_and_persisted(tmp_path: Path) -> None:
    first = finish_settings(load_settings({"TOKENFORGE_DATA_DIR": str(tmp_path)}))["SECRET_KEY"]
    second = finish_settings(load_settings({"TOKENFORGE_DATA_DIR": str(tmp_path)}))["SECRET_KEY"]
    assert first == second
    assert len(first) == 64
    assert (tmp_path / "secret_key").stat().st_mode & 0o777 == 0o600
    assert [p.name for p in tmp_path.iterdir()] == ["secret_key"]  # no temp file left


def test_bad_numbers_are_named(tmp_path: Path) -> None:
    with pytest.raises(SettingsError, match="TOKENFORGE_MAX_UPLOAD_BYTES must be a number, not '1GB'"):
        load_settings({"TOKENFORGE_DATA_DIR": str(tmp_path), "TOKENFORGE_MAX_UPLOAD_BYTES": "1GB"})
    with pytest.raises(SettingsError, match="TOKENFORGE_CHAT_RENDER_SECONDS must be greater than 0, got 0.0"):
        load_settings({"TOKENFORGE_DATA_DIR": str(tmp_path), "TOKENFORGE_CHAT_RENDER_SECONDS": "0"})
