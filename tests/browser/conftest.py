"""Browser-test fixtures: Debian's Chromium through Playwright, and a live Tokenforge server.

Reusable by every browser test (the playground's too):

- ``browser_type_launch_args`` makes pytest-playwright's ``browser``/``page`` fixtures launch
  ``/usr/bin/chromium`` (never ``playwright install``, which downloads and fails offline);
- ``live_server`` runs the real ``tokenforge serve`` (migrations, gunicorn, one job worker) on a
  free port with its data in a temp folder, and stops it with SIGTERM afterwards;
- ``artifacts_dir`` is where screenshots go: ``$TOKENFORGE_TEST_ARTIFACTS`` if set, else
  ``<tmp>/tokenforge-test-artifacts`` (never the working directory).
"""

from __future__ import annotations

import os
import signal
import socket
import subprocess
import sys
import tempfile
import time
import urllib.error
import urllib.request
from collections.abc import Iterator
from dataclasses import dataclass
from pathlib import Path
from typing import Any

import pytest

REPO = Path(__file__).resolve().parents[2]
CHROMIUM = "/usr/bin/chromium"
CHROMIUM_ARGS = [
    "--headless", "--no-sandbox", "--disable-gpu", "--disable-background-networking",
    "--disable-component-update", "--disable-sync",
]


@pytest.fixture(scope="session")
def browser_type_launch_args(browser_type_launch_args: dict[str, Any]) -> dict[str, Any]:
    if not Path(CHROMIUM).exists():
        pytest.skip(f"{CHROMIUM} is missing; install Debian's chromium package")
    return {**browser_type_launch_args, "executable_path": CHROMIUM, "args": CHROMIUM_ARGS,
            "headless": True}


@pytest.fixture(scope="session")
def artifacts_dir() -> Path:
    path = Path(os.environ.get("TOKENFORGE_TEST_ARTIFACTS")
                or Path(tempfile.gettempdir()) / "tokenforge-test-artifacts")
    path.mkdir(parents=True, exist_ok=True)
    return path


@dataclass
class LiveServer:
    url: str  # with a trailing slash
    data_dir: Path
    log: Path


def _free_port() -> int:
    with socket.socket() as sock:
        sock.bind(("127.0.0.1", 0))
        return int(sock.getsockname()[1])


@pytest.fixture(scope="session")
def live_server(tmp_path_factory: pytest.TempPathFactory) -> Iterator[LiveServer]:
    """``tokenforge serve`` on 127.0.0.1 with a fresh SQLite database and corpus store."""
    data_dir = tmp_path_factory.mktemp("live-server")
    log = data_dir / "serve.log"
    port = _free_port()
    env = {**os.environ, "TOKENFORGE_DATA_DIR": str(data_dir), "PYTHONPATH": str(REPO),
           "TOKENFORGE_HEARTBEAT_SECONDS": "0.5"}
    env.pop("DATABASE_URL", None)
    with log.open("wb") as out:
        process = subprocess.Popen(
            [sys.executable, "-m", "webapp.cli", "serve", "--host", "127.0.0.1",
             "--port", str(port), "--workers", "1", "--threads", "4"],
            cwd=data_dir, env=env, stdout=out, stderr=subprocess.STDOUT,
        )
    url = f"http://127.0.0.1:{port}/"
    deadline = time.monotonic() + 60
    while True:
        try:
            with urllib.request.urlopen(url + "healthz", timeout=2) as response:
                if response.status == 200:
                    break
        except (urllib.error.URLError, ConnectionError):
            pass
        if process.poll() is not None or time.monotonic() > deadline:
            process.kill()
            raise RuntimeError(f"tokenforge serve did not start:\n{log.read_text()}")
        time.sleep(0.1)
    yield LiveServer(url, data_dir, log)
    process.send_signal(signal.SIGTERM)
    try:
        code = process.wait(timeout=60)
    except subprocess.TimeoutExpired:
        process.kill()
        process.wait()
        raise
    assert code == 0, log.read_text()
