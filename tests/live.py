"""A real ``tokenforge serve`` for tests: start it, crash it, restart it, and talk to it.

The one live-server harness: the fault and attack tests (``tests/webapp/``) and the browser
tests' ``live_server`` fixture (``tests/browser/conftest.py``) all run the server through it.

:class:`LiveApp` runs ``python -m webapp.cli serve`` on 127.0.0.1 with its data folder in a
test's ``tmp_path``, in a process group of its own, so :meth:`LiveApp.crash` can SIGKILL the
whole app at once (gunicorn, its workers, the job worker and any trainer), the way a power cut
or an OOM-killed container would. Every process the app starts carries its
:data:`TAG_VARIABLE` in its environment, so :func:`tagged_processes` finds what is left of it
however it was re-parented or regrouped (a job leads a process group of its own).
:class:`Client` is a cookie-keeping HTTP client that fills in CSRF tokens and never raises on a
4xx/5xx, so tests can assert every status they saw.

Left out: Playwright (``tests/browser/conftest.py``) and the in-process Flask client
(``tests/webapp/conftest.py``).
"""

from __future__ import annotations

import ctypes
import fcntl
import html
import http.cookiejar
import os
import re
import signal
import socket
import sqlite3
import struct
import subprocess
import sys
import termios
import time
import urllib.error
import urllib.parse
import urllib.request
import uuid
from collections.abc import Callable
from dataclasses import dataclass
from pathlib import Path
from typing import Any

REPO = Path(__file__).resolve().parents[1]
EMAIL = "admin@example.com"
PASSWORD = "correct horse battery staple"
CSRF = re.compile(r'name="csrf_token" value="([^"]+)"')
TAG_VARIABLE = "TOKENFORGE_TEST_TAG"
_PR_SET_PDEATHSIG = 1  # prctl option (linux/prctl.h): a signal for when the parent dies


def _end_with_this_process() -> None:
    """In the server's process, before it runs: have Linux send it SIGTERM when the test process
    dies. The server leads a session of its own, so a test run killed outright (SIGKILL, an OOM
    kill) would otherwise leave it serving; SIGTERM lets serve stop its workers as an operator's
    restart does."""
    if sys.platform.startswith("linux"):
        ctypes.CDLL(None, use_errno=True).prctl(_PR_SET_PDEATHSIG, signal.SIGTERM)


def wait_for(condition: Callable[[], bool], what: str, limit: float = 120) -> None:
    """Poll until ``condition`` holds (a generous deadline guards against hangs only)."""
    deadline = time.monotonic() + limit
    while not condition():
        if time.monotonic() > deadline:
            raise AssertionError(f"gave up waiting for {what}")
        time.sleep(0.02)


def unread_bytes(sock: socket.socket) -> int:
    """Bytes sent on ``sock`` (a client connected to 127.0.0.1) that the server has not yet read.

    What our kernel has not handed over (``TIOCOUTQ``), plus what waits in the server socket's
    receive queue (``/proc/net/tcp``): 0 means the server process has read all we sent.
    """
    unsent = struct.unpack("i", fcntl.ioctl(sock, termios.TIOCOUTQ, b"\0" * 4))[0]
    ours, theirs = sock.getsockname()[1], sock.getpeername()[1]
    for line in Path("/proc/net/tcp").read_text().splitlines()[1:]:
        local, remote, _state, queues = line.split()[1:5]
        if int(local.split(":")[1], 16) == theirs and int(remote.split(":")[1], 16) == ours:
            return int(unsent) + int(queues.split(":")[1], 16)
    raise AssertionError(f"no server side for the connection from port {ours} in /proc/net/tcp")


def free_port() -> int:
    with socket.socket() as sock:
        sock.bind(("127.0.0.1", 0))
        return int(sock.getsockname()[1])


class LiveApp:
    """One data folder, served by a ``tokenforge serve`` that can be crashed and restarted.

    By default the checkout's code serves (``python -m webapp.cli`` with the repository on
    ``PYTHONPATH``, from the data folder); the wheel test gives an installed ``command``, the
    ``base_env`` to run it in (no ``PYTHONPATH``) and a ``cwd`` outside the checkout instead.
    """

    def __init__(self, data_dir: Path, *, workers: int = 1, threads: int = 4, job_worker: bool = True,
                 env: dict[str, str] | None = None, command: list[str] | None = None,
                 base_env: dict[str, str] | None = None, cwd: Path | None = None) -> None:
        self.data_dir = data_dir
        self.command = command or [sys.executable, "-m", "webapp.cli"]
        self.cwd = cwd or data_dir
        self.port = free_port()
        self.url = f"http://127.0.0.1:{self.port}/"
        self.log = data_dir / "serve.log"
        self.tag = uuid.uuid4().hex
        self.args = ["--workers", str(workers), "--threads", str(threads)]
        if not job_worker:
            self.args.append("--no-worker")
        base = {**os.environ, "PYTHONPATH": str(REPO)} if base_env is None else base_env
        self.env = {**base, "TOKENFORGE_DATA_DIR": str(data_dir),
                    "TOKENFORGE_HEARTBEAT_SECONDS": "0.3", "TOKENFORGE_WORKER_NICE": "0",
                    "TOKENFORGE_API_RATE_LIMIT": "100000/60", "TOKENFORGE_LOGIN_RATE_LIMIT": "1000/60",
                    TAG_VARIABLE: self.tag, **(env or {})}
        self.env.pop("DATABASE_URL", None)
        self.env.pop("TOKENFORGE_CORPUS_DIR", None)
        self.process: subprocess.Popen[bytes] | None = None

    @property
    def database(self) -> Path:
        return self.data_dir / "tokenforge.sqlite3"

    @property
    def store(self) -> Path:
        return self.data_dir / "corpora"

    def start(self, limit: float = 60) -> None:
        """Start serving and wait until ``/healthz`` answers."""
        self.data_dir.mkdir(parents=True, exist_ok=True)
        with self.log.open("ab") as out:
            self.process = subprocess.Popen(
                [*self.command, "serve", "--host", "127.0.0.1", "--port", str(self.port), *self.args],
                cwd=self.cwd, env=self.env, stdout=out, stderr=subprocess.STDOUT,
                start_new_session=True, preexec_fn=_end_with_this_process)
        deadline = time.monotonic() + limit
        while True:
            try:
                with urllib.request.urlopen(self.url + "healthz", timeout=2):
                    return
            except (urllib.error.URLError, ConnectionError, TimeoutError):
                pass
            if self.process.poll() is not None or time.monotonic() > deadline:
                self.crash()
                raise RuntimeError(f"tokenforge serve did not start:\n{self.log.read_text()}")
            time.sleep(0.1)

    def crash(self) -> None:
        """SIGKILL every process of the app at once; nothing gets to clean up."""
        if self.process is None:
            return
        try:
            os.killpg(self.process.pid, signal.SIGKILL)
        except ProcessLookupError:
            pass
        self.process.wait()
        deadline = time.monotonic() + 30
        while group_alive(self.process.pid) and time.monotonic() < deadline:
            time.sleep(0.05)
        self.process = None

    def stop(self) -> int:
        """SIGTERM, as an operator's restart does; return serve's exit code.

        Whatever of the app outlives serve is SIGKILLed after it, so no test leaves processes.
        """
        if self.process is None:
            return 0
        self.process.send_signal(signal.SIGTERM)
        try:
            code = self.process.wait(timeout=60)
        except subprocess.TimeoutExpired:
            self.crash()
            raise
        if group_alive(self.process.pid):
            self.crash()
        self.process = None
        return code

    def rows(self, sql: str, *params: Any) -> list[tuple[Any, ...]]:
        """Read the database directly, as a second opinion on what the pages say."""
        with sqlite3.connect(self.database, timeout=30) as conn:
            return list(conn.execute(sql, params))

    def stored_objects(self) -> list[Path]:
        return sorted(p for p in (self.store / "objects").rglob("*") if p.is_file())

    def tmp_files(self) -> list[Path]:
        tmp = self.store / "tmp"
        return sorted(tmp.iterdir()) if tmp.is_dir() else []

    def processes(self) -> list[int]:
        """Every live process this app started, wherever it now is in the process tree."""
        return tagged_processes(self.tag)


def group_alive(pgid: int) -> bool:
    """Whether any non-zombie process is left in the process group."""
    for stat in Path("/proc").glob("[0-9]*/stat"):
        try:
            fields = stat.read_text().rsplit(")", 1)[1].split()
        except OSError:
            continue
        if int(fields[2]) == pgid and fields[0] != "Z":
            return True
    return False


def tagged_processes(tag: str) -> list[int]:
    """The live (non-zombie) processes whose environment has ``TOKENFORGE_TEST_TAG=tag``.

    Children inherit the environment (forked ones share their parent's), so this finds every
    process a tagged process started, even orphans re-parented to init. The calling process is
    left out (``monkeypatch.setenv`` tags the children of an in-process worker, not itself).
    """
    needle = f"{TAG_VARIABLE}={tag}".encode()
    found = []
    for proc in Path("/proc").glob("[0-9]*"):
        try:
            if needle not in (proc / "environ").read_bytes().split(b"\0"):
                continue
            state = (proc / "stat").read_text().rsplit(")", 1)[1].split()[0]
        except OSError:  # gone, or not ours to read
            continue
        if state != "Z" and int(proc.name) != os.getpid():
            found.append(int(proc.name))
    return sorted(found)


def children(pid: int) -> list[int]:
    """The child processes of ``pid`` (those of every thread), or [] once it is gone."""
    found: list[int] = []
    for task in Path(f"/proc/{pid}/task").glob("*"):
        try:
            found.extend(int(p) for p in (task / "children").read_text().split())
        except OSError:
            continue
    return sorted(found)


def process_commands(pgid: int) -> dict[int, list[str]]:
    """The command lines of the live processes in a process group, by pid."""
    found = {}
    for proc in Path("/proc").glob("[0-9]*"):
        try:
            fields = (proc / "stat").read_text().rsplit(")", 1)[1].split()
            argv = (proc / "cmdline").read_bytes().decode().split("\0")[:-1]
        except OSError:
            continue
        if int(fields[2]) == pgid and fields[0] != "Z":
            found[int(proc.name)] = argv
    return found


@dataclass
class Answer:
    status: int
    url: str
    body: str


class Client:
    """A browser stand-in: keeps cookies, fills in CSRF tokens, returns every status."""

    def __init__(self, base: str) -> None:
        self.base = base
        self.jar = http.cookiejar.CookieJar()
        self.opener = urllib.request.build_opener(urllib.request.HTTPCookieProcessor(self.jar))

    def request(self, path: str, data: bytes | None = None, headers: dict[str, str] | None = None,
                timeout: float = 60) -> Answer:
        request = urllib.request.Request(self.base + path, data=data, headers=headers or {})
        try:
            with self.opener.open(request, timeout=timeout) as response:
                return Answer(response.status, response.geturl(), response.read().decode("utf-8", "replace"))
        except urllib.error.HTTPError as exc:
            return Answer(exc.code, exc.geturl(), exc.read().decode("utf-8", "replace"))

    def token(self, page: str = "corpora/") -> str:
        found = CSRF.search(self.request(page).body)
        if found is None:
            raise AssertionError(f"{page} has no CSRF token")
        return found.group(1)

    def post(self, path: str, fields: dict[str, str | list[str]], *, token: str | None = None) -> Answer:
        pairs = [("csrf_token", token or self.token())]
        for name, value in fields.items():
            pairs.extend((name, v) for v in ([value] if isinstance(value, str) else value))
        return self.request(path, urllib.parse.urlencode(pairs).encode(),
                            {"Content-Type": "application/x-www-form-urlencoded"})

    def upload(self, filename: str, data: bytes, *, token: str | None = None) -> Answer:
        body, content_type = multipart({"csrf_token": token or self.token()}, filename, data)
        return self.request("corpora/", body, {"Content-Type": content_type})

    def signup(self) -> None:
        page = self.request("signup").body
        found = CSRF.search(page)
        assert found is not None, page[:500]
        answer = self.post("signup", {"email": EMAIL, "name": "Admin", "password": PASSWORD,
                                      "confirm": PASSWORD}, token=found.group(1))
        assert "/tokenizers" in answer.url, (answer.status, answer.url)

    def cookie_header(self) -> str:
        return "; ".join(f"{c.name}={c.value}" for c in self.jar)


def multipart(fields: dict[str, str], filename: str, data: bytes,
              boundary: str = "tokenforgefaulttest") -> tuple[bytes, str]:
    """A multipart/form-data body with ``fields`` and one file in ``files``."""
    parts = [f'--{boundary}\r\nContent-Disposition: form-data; name="{k}"\r\n\r\n{v}\r\n'.encode()
             for k, v in fields.items()]
    parts.append(f'--{boundary}\r\nContent-Disposition: form-data; name="files"; filename="{filename}"\r\n'
                 "Content-Type: text/plain\r\n\r\n".encode() + data + b"\r\n")
    body = b"".join(parts) + f"--{boundary}--\r\n".encode()
    return body, f"multipart/form-data; boundary={boundary}"


def train_fields(client: Client, vocab_size: int, algorithm: str = "bpe") -> dict[str, str]:
    """The training form's fields at their defaults (as the page offers them), plus a vocabulary size."""
    from webapp.training.form import PREFIX

    form = client.request(f"train?algorithm={algorithm}").body
    fields = dict(re.findall(rf'<input type="(?:text|number)" name="({PREFIX}[^"]+)" id="[^"]+" value="([^"]*)"', form))
    fields.update(re.findall(rf'<textarea name="({PREFIX}[^"]+)" id="[^"]+" rows="3">([^<]*)</textarea>', form))
    fields.update((name, "on") for name in re.findall(rf'name="({PREFIX}[^"]+)" id="[^"]+" checked', form))
    for name, options in re.findall(rf'<select name="({PREFIX}[^"]+)" id="[^"]+">(.*?)</select>', form, re.S):
        chosen = (re.search(r'<option value="([^"]*)"[^>]*selected', options)
                  or re.search(r'<option value="([^"]*)"', options))
        fields[name] = chosen.group(1) if chosen else ""
    fields[PREFIX + "vocab_size"] = str(vocab_size)
    return {"algorithm": algorithm, **{name: html.unescape(value) for name, value in fields.items()}}
