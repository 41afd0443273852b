"""Preset tokenizers: read-only for every team, installed from pinned, hash-checked rank tables.

(The open models' presets, and the cache that loads presets on first use: ``test_open_presets.py``.)

The access tests put a small preset row in the database directly, and the installer tests serve
their own tarballs from a local HTTP server: neither downloads. The tests that need the real
tables read them from ``$TOKENFORGE_TEST_PRESETS_DIR`` (``scripts/test.sh`` writes it once with
``tokenforge presets install --dir``) and skip cleanly without it.
"""

from __future__ import annotations

import hashlib
import io
import shutil
import tarfile
from pathlib import Path

import pytest
from flask import Flask
from flask.testing import FlaskClient
from sqlalchemy import func, select
from sqlalchemy.exc import IntegrityError

from engine.formats.js_tiktoken import parse_rank_table
from engine.presets import TIKTOKEN_ENCODINGS
from tests.preset_tables import installed_presets_dir, presets_dir, tiktoken_encoding
from tests.webapp.conftest import add_user, login_as, make_app
from tests.webapp.playground_samples import byte_bpe, store
from webapp.access.teams import delete_team_data
from webapp.cli import main as cli_main
from webapp.store import db
from webapp.store.models import ShareLink, Team, Tokenizer
from webapp.tokenizers import preset_install, preset_names, presets
from webapp.transfer.backup import backup, restore


def add_preset(app: Flask, name: str = "r50k_base") -> int:
    """A preset row holding a small byte-level BPE (the access rules do not depend on its size)."""
    tokenizer = byte_bpe(TIKTOKEN_ENCODINGS[name].title)
    with app.app_context():
        row = Tokenizer(team_id=None, preset=name, name=tokenizer.name, algorithm="bpe", source="preset",
                        tokenizer_json=tokenizer.to_json(), config={"preset": name}, stats={},
                        vocab_size=tokenizer.vocab_size)
        db.get_session().add(row)
        db.get_session().commit()
        return row.id


def preset_count(app: Flask) -> int:
    with app.app_context():
        return db.get_session().scalar(select(func.count()).select_from(Tokenizer).where(Tokenizer.preset.is_not(None)))


# Access: every team reads, no team changes -----------------------------------------------------

@pytest.fixture
def two_teams(app: Flask, client: FlaskClient) -> tuple[FlaskClient, FlaskClient, int]:
    """Alice's browser, Bob's (another team) and a preset's id."""
    bob, _ = add_user(app, "bob@example.com", "Bob")
    return client, login_as(app.test_client(), bob), add_preset(app)


@pytest.mark.parametrize("path", ["/tokenizers/{id}/play", "/tokenizers/{id}/vocab", "/tokenizers/{id}/downloads",
                                  "/tokenizers/{id}/download.zip", "/compare?ids={id}&text=the"])
def test_every_team_reads_a_preset(two_teams: tuple[FlaskClient, FlaskClient, int], path: str) -> None:
    *browsers, preset = two_teams
    for browser in browsers:
        assert browser.get(path.format(id=preset)).status_code == 200


def test_every_team_encodes_a_preset_through_the_api(two_teams: tuple[FlaskClient, FlaskClient, int]) -> None:
    *browsers, preset = two_teams
    for browser in browsers:
        answer = browser.post("/api/v1/encode", json={"tokenizer": preset, "text": "the wé"})
        assert answer.status_code == 200
        assert answer.get_json()["ids"] == byte_bpe().encode("the wé") == [257, 258, 260]
        listed = browser.get("/api/v1/tokenizers").get_json()["tokenizers"]
        assert preset in [t["id"] for t in listed]


@pytest.mark.parametrize(("method", "path"), [
    ("post", "/tokenizers/{id}/delete"),
    ("get", "/tokenizers/{id}/delete"),
    ("get", "/tokenizers/{id}/share"),
    ("post", "/tokenizers/{id}/share"),
    ("post", "/tokenizers/{id}/share/1/revoke"),
    ("post", "/tokenizers/{id}/share/1/texts"),
])
def test_no_team_can_delete_or_share_a_preset(app: Flask, two_teams: tuple[FlaskClient, FlaskClient, int],
                                               method: str, path: str) -> None:
    *browsers, preset = two_teams
    for browser in browsers:
        answer = getattr(browser, method)(path.format(id=preset), data={"confirmed": "yes", "text": "x"})
        assert answer.status_code == 403
        assert "preset tokenizer, shared read-only with every team" in answer.get_data(as_text=True)
    assert preset_count(app) == 1


def test_a_preset_page_offers_no_delete_or_share(two_teams: tuple[FlaskClient, FlaskClient, int]) -> None:
    alice, _, preset = two_teams
    page = alice.get(f"/tokenizers/{preset}/play").get_data(as_text=True)
    assert f"/tokenizers/{preset}/delete" not in page
    assert f"/tokenizers/{preset}/share" not in page


def test_another_teams_tokenizer_is_still_a_404(app: Flask, two_teams: tuple[FlaskClient, FlaskClient, int]) -> None:
    """Presets open reads to rows of no team only: Bob still cannot see that Alice's row exists."""
    alice, bob, _ = two_teams
    with app.app_context():
        row = Tokenizer(team_id=1, name="alice's", algorithm="bpe", source="imported",
                        tokenizer_json=byte_bpe().to_json(), config={}, stats={}, vocab_size=260)
        db.get_session().add(row)
        db.get_session().commit()
        own = row.id
    assert alice.get(f"/tokenizers/{own}/play").status_code == 200
    for path in (f"/tokenizers/{own}/play", f"/tokenizers/{own}/delete"):
        assert bob.get(path).status_code == 404
    assert bob.post(f"/tokenizers/{own}/delete", data={"confirmed": "yes"}).status_code == 404


def test_visitors_without_a_login_do_not_see_presets(app: Flask, anon_client: FlaskClient) -> None:
    preset = add_preset(app)
    assert anon_client.get(f"/tokenizers/{preset}/play").status_code == 303  # to the login page
    assert anon_client.post("/api/v1/encode", json={"tokenizer": preset, "text": "x"}).status_code == 401


def test_deleting_a_team_keeps_the_presets(app: Flask) -> None:
    add_preset(app)
    with app.app_context():
        counts = delete_team_data(db.get_session(), 1)
        db.get_session().commit()
    assert counts["tokenizers"] == 0
    assert preset_count(app) == 1


@pytest.mark.parametrize(("team_id", "preset", "source"), [
    pytest.param(None, None, "imported", id="no-team-but-not-a-preset"),
    pytest.param(1, "r50k_base", "preset", id="a-team-row-marked-preset"),
    pytest.param(None, "r50k_base", "imported", id="a-preset-with-another-source"),
])
def test_the_database_keeps_no_team_and_preset_together(db_app: Flask, team_id: int | None, preset: str | None,
                                                         source: str) -> None:
    with db_app.app_context():
        session = db.get_session()
        session.add(Tokenizer(team_id=team_id, preset=preset, name="x", algorithm="bpe", source=source,
                              tokenizer_json="{}", config={}, stats={}, vocab_size=1))
        with pytest.raises(IntegrityError):
            session.commit()


def test_the_list_says_how_to_install_presets_until_they_are(app: Flask, client: FlaskClient) -> None:
    page = client.get("/tokenizers").get_data(as_text=True)
    assert 'data-testid="presets-missing"' in page
    assert "<code>tokenforge presets install</code>" in page
    preset = add_preset(app, "cl100k_base")
    page = client.get("/tokenizers").get_data(as_text=True)
    assert 'data-testid="presets-missing"' not in page
    assert f'href="/tokenizers/{preset}/play">GPT-4 (cl100k_base)</a>' in page


# The installer: pinned bytes only, bounded, all or nothing --------------------------------------

def tarball(tables: dict[str, bytes]) -> bytes:
    """A .tgz laid out like the npm package, holding ``tables`` as dist/ranks/<name>.js."""
    buffer = io.BytesIO()
    with tarfile.open(fileobj=buffer, mode="w:gz") as archive:
        for name, data in tables.items():
            info = tarfile.TarInfo(f"package/dist/ranks/{name}.js")
            info.size = len(data)
            archive.addfile(info, io.BytesIO(data))
    return buffer.getvalue()


TINY = b'export default {"special_tokens": {}, "bpe_ranks": "! 0 YQ== Yg=="};'


def test_a_download_is_checked_against_its_pinned_hash(served: tuple[str, dict[str, bytes]]) -> None:
    url, files = served
    files["/pkg.tgz"] = data = tarball({"tiny": TINY})
    assert preset_install.download(url + "/pkg.tgz", expected_sha256=hashlib.sha256(data).hexdigest()) == data
    with pytest.raises(preset_install.PresetInstallError, match="not the pinned 0{64}; it is refused"):
        preset_install.download(url + "/pkg.tgz", expected_sha256="0" * 64)


def test_a_download_is_bounded_and_its_failures_are_sentences(served: tuple[str, dict[str, bytes]]) -> None:
    url, files = served
    files["/big.tgz"] = b"x" * 5000
    with pytest.raises(preset_install.PresetInstallError, match="is 5,000 bytes, over the 4,096 accepted"):
        preset_install.download(url + "/big.tgz", expected_sha256="0" * 64, max_bytes=4096)
    with pytest.raises(preset_install.PresetInstallError, match="Could not download .*/missing.tgz: Not Found"):
        preset_install.download(url + "/missing.tgz")


def test_each_table_in_the_tarball_is_checked_too() -> None:
    good = hashlib.sha256(TINY).hexdigest()
    assert preset_install.tables_from_tarball(tarball({"tiny": TINY}), {"tiny": good}) == {"tiny": TINY}
    with pytest.raises(preset_install.PresetInstallError, match="package/dist/ranks/tiny.js has SHA-256"):
        preset_install.tables_from_tarball(tarball({"tiny": TINY + b" "}), {"tiny": good})
    with pytest.raises(preset_install.PresetInstallError, match="has no package/dist/ranks/tiny.js"):
        preset_install.tables_from_tarball(tarball({"other": TINY}), {"tiny": good})
    with pytest.raises(preset_install.PresetInstallError, match="not a readable .tgz"):
        preset_install.tables_from_tarball(b"not a tarball", {"tiny": good})


def test_tables_are_written_all_at_once_and_replace_the_old_ones(tmp_path: Path) -> None:
    folder = tmp_path / "presets"
    preset_install.write_tables({"tiny": TINY}, folder)
    preset_install.write_tables({"tiny": TINY + b"\n"}, folder)
    assert preset_install.table_path(folder, "tiny").read_bytes() == TINY + b"\n"
    assert sorted(p.name for p in tmp_path.iterdir()) == ["presets"]  # no temp folder left behind
    assert parse_rank_table(TINY.decode()).ranks() == {b"a": 0, b"b": 1}


# With the real tables -------------------------------------------------------------------------

def test_a_tampered_table_is_refused_and_nothing_is_installed(tmp_path: Path) -> None:
    source = tmp_path / "copy"
    shutil.copytree(presets_dir(), source, ignore=shutil.ignore_patterns("open"))  # refused before those are read
    table = preset_install.table_path(source, "cl100k_base")
    table.write_bytes(table.read_bytes().replace(b"IQ==", b"Ig==", 1))  # rank 0 now spells '"'
    installed = tmp_path / "installed"
    with pytest.raises(preset_install.PresetInstallError, match=r"cl100k_base\.js has SHA-256 [0-9a-f]{64}, not the pinned"):
        presets.fetch(installed, from_folder=source)
    assert not installed.exists()
    with pytest.raises(preset_install.PresetInstallError, match="has SHA-256"):
        preset_names.build("cl100k_base", source)


def test_install_registers_every_preset_once(tmp_path: Path, monkeypatch: pytest.MonkeyPatch, db_app: Flask) -> None:
    """The OpenAI presets (the open models are copied but not built here: test_open_presets.py builds them)."""
    cache = installed_presets_dir()
    monkeypatch.setattr(presets, "OPEN_MODELS", {})
    app, client = db_app, login_as(db_app.test_client(), 1)
    monkeypatch.setenv("TOKENFORGE_DATA_DIR", app.config["DATA_DIR"])
    monkeypatch.setenv("DATABASE_URL", app.config["DATABASE_URL"])
    monkeypatch.setenv("SECRET_KEY", "test-secret")
    assert cli_main(["presets", "install", "--from", str(cache)]) == 0
    assert cli_main(["presets", "install", "--from", str(cache)]) == 0  # again: nothing changes
    with app.app_context():
        rows = presets.preset_rows(db.get_session())
        assert [(r.preset, r.vocab_size, r.team_id) for r in rows] == [
            ("r50k_base", 50257, None), ("p50k_base", 50281, None), ("cl100k_base", 100277, None),
            ("o200k_base", 200019, None)]
        ids = {r.preset: r.id for r in rows}
        assert db.get_session().scalar(select(func.count()).select_from(Team)) == 1
    assert (Path(app.config["DATA_DIR"]) / "presets" / "o200k_base.js").is_file()
    assert (Path(app.config["DATA_DIR"]) / "presets" / "open" / "gemma3" / "tokenizer.json").is_file()
    text = "Grüße, 世界! It's <|endoftext|> 12345 🤖"
    for name in ("cl100k_base", "o200k_base"):
        theirs = tiktoken_encoding(cache, name)
        answer = client.post("/api/v1/encode", json={"tokenizer": ids[name], "text": text, "allowed_special": "all"})
        assert answer.get_json()["ids"] == theirs.encode(text, allowed_special="all")


def test_every_team_sees_a_presets_summary(two_teams: tuple[FlaskClient, FlaskClient, int]) -> None:
    *browsers, preset = two_teams
    for browser in browsers:
        answer = browser.get(f"/tokenizers/{preset}")
        assert answer.status_code == 200
        page = answer.get_data(as_text=True)
        assert "<h1>GPT-2 (r50k_base)</h1>" in page
        assert f'href="/tokenizers/{preset}">Summary</a>' in browser.get(f"/tokenizers/{preset}/play").get_data(as_text=True)


def test_the_migration_goes_down_without_the_presets_and_up_again(db_app: Flask) -> None:
    preset = add_preset(db_app)
    url = db_app.config["DATABASE_URL"]
    db.get_engine(db_app).dispose()
    db.downgrade(url, "0004")
    db.upgrade(url)
    assert preset_count(db_app) == 0  # the downgrade deleted them; `tokenforge presets install` adds them back
    assert add_preset(db_app) >= preset


def test_a_share_link_visitor_sees_what_was_shared_and_no_preset(app: Flask, client: FlaskClient,
                                                                  anon_client: FlaskClient) -> None:
    preset = add_preset(app)
    with app.app_context():
        row = Tokenizer(team_id=1, name="shared one", algorithm="bpe", source="imported",
                        tokenizer_json=byte_bpe().to_json(), config={}, stats={}, vocab_size=260)
        db.get_session().add(row)
        db.get_session().commit()
        own = row.id
    assert client.post(f"/tokenizers/{own}/share", data={"days": ""}).status_code == 303
    with app.app_context():
        token = db.get_session().scalar(select(ShareLink.token))
    assert anon_client.get(f"/s/{token}").status_code in (200, 303)
    assert anon_client.get(f"/tokenizers/{own}/play").status_code == 200
    assert anon_client.get(f"/tokenizers/{preset}/play").status_code == 404
    assert f'value="{preset}"' not in anon_client.get(f"/compare?ids={own}").get_data(as_text=True)


def test_pickers_offer_the_presets_first(app: Flask, client: FlaskClient) -> None:
    """The encode picker and compare show a cut list; the presets stay in it however many tokenizers a team has."""
    preset = add_preset(app)
    with app.app_context():
        rows = [Tokenizer(team_id=1, name=f"own {i}", algorithm="bpe", source="imported",
                          tokenizer_json=byte_bpe().to_json(), config={}, stats={}, vocab_size=260) for i in range(3)]
        db.get_session().add_all(rows)
        db.get_session().commit()
        newest_first = [r.id for r in reversed(rows)]
    listed = client.get("/api/v1/tokenizers").get_json()["tokenizers"]
    assert [(t["id"], t["source"]) for t in listed] == [(preset, "preset")] + [(i, "imported") for i in newest_first]


def test_the_command_fails_in_one_line_and_installs_nothing(tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> None:
    monkeypatch.setenv("TOKENFORGE_DATA_DIR", str(tmp_path / "data"))
    (tmp_path / "empty").mkdir()
    with pytest.raises(SystemExit, match=r"^tokenforge: .*empty/r50k_base\.js is missing; write the tables with "
                                         r"`tokenforge presets install --dir FOLDER` first\.$"):
        cli_main(["presets", "install", "--from", str(tmp_path / "empty")])
    assert not (tmp_path / "data" / "presets").exists()
    with pytest.raises(SystemExit, match=r"^tokenforge: .*copy/r50k_base\.js is missing"):
        cli_main(["presets", "install", "--dir", str(tmp_path / "copy"), "--from", str(tmp_path / "copy")])


def test_restore_into_an_instance_with_presets_keeps_the_backups_ids(app: Flask, tmp_path: Path) -> None:
    """The new instance's presets step aside for the backup's rows and come back after them."""
    folder = presets_dir()
    kept = store(app, byte_bpe("kept-bpe"))
    archive = tmp_path / "backup.tar.gz"
    backup(dict(app.config), archive)
    target = make_app(tmp_path / "second", f"sqlite:///{tmp_path / 'second.sqlite3'}", seed=False)
    installed = Path(target.config["DATA_DIR"]) / "presets"  # where `tokenforge presets install` puts them
    shutil.copytree(folder, installed, ignore=shutil.ignore_patterns("open"))  # the open models are skipped
    with target.app_context():
        presets.register(db.get_session(), installed)
    assert preset_count(target) == len(TIKTOKEN_ENCODINGS)
    restore(dict(target.config), archive)
    with target.app_context():
        rows = db.get_session().scalars(select(Tokenizer).order_by(Tokenizer.id)).all()
        assert [(row.id, row.name) for row in rows if row.preset is None] == [(kept, "kept-bpe")]
        assert sorted(row.preset for row in rows if row.preset) == sorted(TIKTOKEN_ENCODINGS)
        assert min(row.id for row in rows if row.preset) > kept
    db.get_engine(target).dispose()
