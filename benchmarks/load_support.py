"""The plumbing of ``load_test.py``: the server it starts, the clients it talks through, its setup.

- :func:`start_server` / :func:`stop_server`: ``python -m webapp.cli serve`` in a data folder of
  its own and a process group of its own, stopped with SIGTERM and then SIGKILL.
- :class:`Browser`: a cookie-keeping ``urllib`` client for setting the server up; it fills in
  each form's CSRF token. :func:`prepare` uses it as a person would use the pages: sign up,
  make an API key, upload corpora, train the playground's tokenizer with a job, log the
  simulated users in. The job helpers queue a training from the train form and read a job's
  status from its page. None of these requests is measured.
- :class:`Connection`: the measured client, one keep-alive HTTP/1.1 connection per simulated
  user on ``asyncio`` streams, carrying that user's cookies and taking the ones the server sets.
  It never resends: a reset or a closed connection is raised to the caller, who counts it.
- :class:`Texts` and :func:`job_corpus`: what is encoded, and what the background job trains on.
- :func:`web_cpu_seconds`: the CPU time of the web processes, from ``/proc`` (Linux only).

Left out: what the simulated users do, the measurement and the report (``load_test.py``).
"""

from __future__ import annotations

import argparse
import asyncio
import html
import http.cookiejar
import math
import os
import random
import re
import signal
import socket
import sqlite3
import subprocess
import sys
import time
import urllib.error
import urllib.request
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any

REPO = Path(__file__).resolve().parents[1]
sys.path.insert(0, str(REPO))  # webapp.training.form and webapp.store.models, for names the pages use
CSRF_FIELD = re.compile(r'name="csrf_token" value="([^"]+)"')
EMAIL, PASSWORD = "load@example.com", "load test password"


class SetupError(RuntimeError):
    """The server could not be set up for the run (a failed upload, job or login)."""


# --- setting the server up (not measured) --------------------------------------------------------


class Browser:
    """A cookie-keeping HTTP client that fills in each form's CSRF token."""

    def __init__(self, base: str) -> None:
        self.base = base
        self.jar = http.cookiejar.CookieJar()
        self.opener = urllib.request.build_opener(urllib.request.HTTPCookieProcessor(self.jar))

    def get(self, path: str) -> str:
        with self.opener.open(self.base + path, timeout=120) as response:
            return str(response.read().decode("utf-8"))

    def post(self, path: str, fields: dict[str, str], files: dict[str, tuple[str, bytes]] | None = None,
             form_page: str | None = None) -> tuple[str, str]:
        """Submit a form as multipart; return the final URL (after redirects) and its page."""
        found = CSRF_FIELD.search(self.get(form_page or path))
        if found is None:
            raise SetupError(f"GET /{form_page or path} has no CSRF token; is it a form page?")
        request = multipart_request(self.base + path, {"csrf_token": found.group(1), **fields}, files)
        try:
            with self.opener.open(request, timeout=600) as response:
                return str(response.geturl()), str(response.read().decode("utf-8"))
        except urllib.error.HTTPError as exc:
            page = exc.read().decode("utf-8", "replace")
            problems = re.findall(r'class="(?:field-error|errors)"[^>]*>(.*?)</', page, re.S)
            raise SetupError(f"POST /{path} answered {exc.code}: {problems or page[:500]}") from None

    def cookies(self) -> dict[str, str]:
        return {cookie.name: cookie.value or "" for cookie in self.jar}


def multipart_request(url: str, fields: dict[str, str],
                      files: dict[str, tuple[str, bytes]] | None = None) -> urllib.request.Request:
    """A POST of ``fields`` and ``files`` (name -> (filename, bytes)) as ``multipart/form-data``."""
    boundary = "tokenforgebenchmark"
    parts = [f'--{boundary}\r\nContent-Disposition: form-data; name="{k}"\r\n\r\n{v}\r\n'.encode()
             for k, v in fields.items()]
    for name, (filename, data) in (files or {}).items():
        parts.append(f'--{boundary}\r\nContent-Disposition: form-data; name="{name}"; filename="{filename}"\r\n'
                     "Content-Type: application/octet-stream\r\n\r\n".encode() + data + b"\r\n")
    return urllib.request.Request(url, data=b"".join(parts) + f"--{boundary}--\r\n".encode(),
                                  headers={"Content-Type": f"multipart/form-data; boundary={boundary}"})


def free_port() -> int:
    with socket.socket() as sock:
        sock.bind(("127.0.0.1", 0))
        return int(sock.getsockname()[1])


def start_server(data_dir: Path, port: int, workers: int, threads: int,
                 env: dict[str, str]) -> subprocess.Popen[bytes]:
    """``tokenforge serve`` on 127.0.0.1:``port``; returns once ``/healthz`` answers."""
    full_env = {**os.environ, "TOKENFORGE_DATA_DIR": str(data_dir), "PYTHONPATH": str(REPO), **env}
    full_env.pop("DATABASE_URL", None)  # always SQLite in the temp folder, never a real database
    with (data_dir / "serve.log").open("wb") as log:
        # A process group of its own: Ctrl-C in the terminal reaches only this script, which
        # then stops the server in order (SIGTERM lets serve stop its job workers).
        process = subprocess.Popen([sys.executable, "-m", "webapp.cli", "serve", "--host", "127.0.0.1",
                                    "--port", str(port), "--workers", str(workers), "--threads", str(threads)],
                                   cwd=data_dir, env=full_env, stdout=log, stderr=subprocess.STDOUT,
                                   start_new_session=True)
    deadline = time.monotonic() + 120
    while time.monotonic() < deadline and process.poll() is None:
        try:
            with urllib.request.urlopen(f"http://127.0.0.1:{port}/healthz", timeout=2):
                return process
        except OSError:
            time.sleep(0.2)
    stop_server(process)
    raise SetupError(f"the server did not start; see {data_dir / 'serve.log'}")


def stop_server(process: subprocess.Popen[bytes], grace: float = 30.0) -> None:
    """SIGTERM, then SIGKILL to the server's process group if it has not stopped in ``grace`` s."""
    if process.poll() is None:
        process.send_signal(signal.SIGTERM)
        try:
            process.wait(grace)
        except subprocess.TimeoutExpired:
            pass
    try:
        os.killpg(process.pid, signal.SIGKILL)  # the group we created: workers, trainers left behind
    except (ProcessLookupError, PermissionError):
        pass
    process.wait()


def web_cpu_seconds(serve_pid: int) -> float:
    """CPU time used so far by the gunicorn web processes (serve's children but the job workers).

    Unlike latency, this hardly depends on what else the machine is running, so it shows what
    one request costs the server even on a busy, shared machine. Linux only (``/proc``).
    """
    tick = os.sysconf("SC_CLK_TCK")
    total = 0.0
    children = Path(f"/proc/{serve_pid}/task/{serve_pid}/children")
    for pid in children.read_text().split() if children.exists() else []:
        try:
            if b"worker" in Path(f"/proc/{pid}/cmdline").read_bytes().split(b"\0"):
                continue  # a job worker (``python -m webapp.cli worker``) trains; not web work
            fields = Path(f"/proc/{pid}/stat").read_text().rsplit(")", 1)[1].split()
        except OSError:
            continue
        total += (int(fields[11]) + int(fields[12])) / tick  # utime + stime
    return total


def percentiles(values: list[float]) -> dict[str, float | int]:
    """Count, nearest-rank p50/p95/p99, max and mean of latencies in seconds, as milliseconds."""
    ordered = sorted(values)

    def rank(p: float) -> float:
        return round(1000 * ordered[max(0, math.ceil(p * len(ordered)) - 1)], 1) if ordered else 0.0

    return {"count": len(ordered), "p50_ms": rank(0.50), "p95_ms": rank(0.95), "p99_ms": rank(0.99),
            "max_ms": round(1000 * ordered[-1], 1) if ordered else 0.0,
            "mean_ms": round(1000 * sum(ordered) / len(ordered), 1) if ordered else 0.0}


# --- the measured client --------------------------------------------------------------------------


class Connection:
    """One simulated user's keep-alive HTTP/1.1 connection, with the user's cookies."""

    opened = 0  # connections opened so far by every instance (users, chat burners): the report's

    def __init__(self, port: int, cookies: dict[str, str]) -> None:
        self.port = port
        self.cookies = dict(cookies)
        self.streams: tuple[asyncio.StreamReader, asyncio.StreamWriter] | None = None

    async def request(self, method: str, path: str, headers: dict[str, str],
                      body: bytes = b"") -> tuple[int, bytes]:
        """Send one request and read its whole answer: (status, body). Raises on a lost connection."""
        if self.streams is None:
            self.streams = await asyncio.open_connection("127.0.0.1", self.port)
            Connection.opened += 1
        reader, writer = self.streams
        lines = [f"{method} {path} HTTP/1.1", f"Host: 127.0.0.1:{self.port}",
                 *(f"{k}: {v}" for k, v in headers.items())]
        if self.cookies:
            lines.append("Cookie: " + "; ".join(f"{k}={v}" for k, v in self.cookies.items()))
        if body or method == "POST":
            lines.append(f"Content-Length: {len(body)}")
        writer.write(("\r\n".join(lines) + "\r\n\r\n").encode("latin-1") + body)
        await writer.drain()
        status_line = await reader.readline()
        if not status_line:
            raise ConnectionError("the server closed the connection without answering")
        length, chunked, close = None, False, False
        while (line := await reader.readline()) not in (b"\r\n", b""):
            name, _, value = line.decode("latin-1").partition(":")
            name, value = name.strip().lower(), value.strip()
            if name == "content-length":
                length = int(value)
            elif name == "transfer-encoding":
                chunked = "chunked" in value.lower()
            elif name == "connection":
                close = "close" in value.lower()
            elif name == "set-cookie":
                self._take_cookie(value)
        if chunked:
            payload = bytearray()
            while size := int((await reader.readline()).split(b";")[0], 16):
                payload += await reader.readexactly(size)
                await reader.readexactly(2)
            while await reader.readline() not in (b"\r\n", b""):
                pass  # trailers
        elif length is not None:
            payload = bytearray(await reader.readexactly(length))
        else:
            payload, close = bytearray(await reader.read()), True
        if close:  # the server said so: the next request opens a new connection
            self.close()
        parts = status_line.split(b" ", 2)
        return (int(parts[1]) if len(parts) > 1 and parts[1].isdigit() else 0), bytes(payload)

    def _take_cookie(self, header: str) -> None:
        pair, _, attributes = header.partition(";")
        name, _, value = pair.strip().partition("=")
        lowered = attributes.lower().replace(" ", "")
        if not value or "max-age=0" in lowered:  # how werkzeug deletes a cookie
            self.cookies.pop(name, None)
        else:
            self.cookies[name] = value

    def close(self) -> None:
        if self.streams is not None:
            self.streams[1].close()
            self.streams = None


# --- corpora and training jobs, through the web pages ----------------------------------------------


def upload_corpus(browser: Browser, filename: str, data: bytes) -> int:
    """Upload one corpus file; return its id."""
    url, _ = browser.post("corpora/", {}, {"files": (filename, data)})
    found = re.search(r"/corpora/(\d+)$", url.rstrip("/"))
    if found is None:
        raise SetupError(f"uploading {filename} did not open a corpus page but {url}")
    return int(found.group(1))


def wait_for_analysis(browser: Browser, corpus_id: int, timeout: float) -> None:
    """Wait until the corpus's analysis is over, so that it does not run during a measurement."""
    deadline = time.monotonic() + timeout
    while 'class="analysing"' in browser.get(f"corpora/{corpus_id}"):
        if time.monotonic() > deadline:
            raise SetupError(f"the analysis of corpus {corpus_id} took more than {timeout:.0f} s")
        time.sleep(1)


def train_form_fields(browser: Browser, options: dict[str, str]) -> dict[str, str]:
    """The BPE train form's option fields, every one at the form's default but ``options``."""
    from webapp.training.form import PREFIX

    form = browser.get("train?algorithm=bpe")
    fields = dict(re.findall(rf'<input type="(?:text|number)" name="({PREFIX}[^"]+)" id="[^"]+" value="([^"]*)"', form))
    fields.update(re.findall(rf'<textarea name="({PREFIX}[^"]+)" id="[^"]+" rows="3">([^<]*)</textarea>', form))
    fields.update((name, "on") for name in re.findall(rf'name="({PREFIX}[^"]+)" id="[^"]+" checked', form))
    for name, choices in re.findall(rf'<select name="({PREFIX}[^"]+)" id="[^"]+">(.*?)</select>', form, re.S):
        chosen = (re.search(r'<option value="([^"]*)"[^>]*selected', choices)
                  or re.search(r'<option value="([^"]*)"', choices))
        fields[name] = chosen.group(1) if chosen else ""
    fields.update((PREFIX + key, value) for key, value in options.items())
    return fields


def queue_training(browser: Browser, corpus_id: int, name: str, options: dict[str, str]) -> int:
    """Queue a BPE training job from the train form, every option at the form's default but ``options``."""
    fields = train_form_fields(browser, options)
    url, _ = browser.post("train", {"algorithm": "bpe", "corpus_ids": str(corpus_id), "name": name, **fields})
    found = re.search(r"/jobs/(\d+)$", url.rstrip("/"))
    if found is None:
        raise SetupError(f"queueing {name!r} did not open a job page but {url}")
    return int(found.group(1))


def job_state(browser: Browser, job_id: int) -> dict[str, Any]:
    """A training job as its page shows it: status, error, and the tokenizer it made."""
    page = browser.get(f"jobs/{job_id}")
    status = re.search(r'data-status="(\w+)"', page)
    error = re.search(r'<p class="errors">(.*?)</p>', page, re.S)
    done = re.search(r'class="done">.*?href="/tokenizers/(\d+)/play".*?\(([\d,]+) tokens\)', page, re.S)
    progress = re.search(r'data-status="running".*?</p>\s*<p>(.*?)</p>', page, re.S)
    return {"id": job_id, "status": status.group(1) if status else "unknown",
            "progress": (" ".join(html.unescape(re.sub(r"<[^>]+>", " ", progress.group(1))).split())
                         if progress else None),
            "error": error.group(1).strip() if error else None,
            "tokenizer_id": int(done.group(1)) if done else None,
            "vocab_size": int(done.group(2).replace(",", "")) if done else None}


def wait_for_job(browser: Browser, job_id: int, statuses: tuple[str, ...], timeout: float) -> dict[str, Any]:
    """Poll the job's page once a second until its status is one of ``statuses`` or it has ended."""
    deadline = time.monotonic() + timeout
    while True:
        state = job_state(browser, job_id)
        if state["status"] in statuses or state["status"] in ("succeeded", "failed", "cancelled"):
            return state
        if time.monotonic() > deadline:
            raise SetupError(f"job {job_id} was still {state['status']} after {timeout:.0f} s")
        time.sleep(1)


# --- what is encoded, and what the background job trains on ---------------------------------------


class Texts:
    """Varied ``size``-byte texts: runs of lines from a random place in the corpus."""

    def __init__(self, corpus: Path, size: int) -> None:
        with corpus.open("rb") as handle:  # 8 MiB of lines is variety enough
            self.lines = [line for line in handle.read(8 << 20).decode("utf-8", "ignore").splitlines() if line.strip()]
        if not self.lines:
            raise SetupError(f"{corpus} has no text to encode")
        self.size = size

    def pick(self, rng: random.Random) -> str:
        start, out, length = rng.randrange(len(self.lines)), [], 0
        while length < self.size:
            out.append(self.lines[(start + len(out)) % len(self.lines)])
            length += len(out[-1].encode()) + 1
        return "\n".join(out).encode()[: self.size].decode("utf-8", "ignore")


def job_corpus(corpus: Path, megabytes: float) -> bytes:
    """Text for the background training: the corpus's words, alone or run together in twos and
    threes, so that it has many distinct words and BPE keeps finding merges for a long time."""
    with corpus.open("rb") as handle:
        words = handle.read(8 << 20).decode("utf-8", "ignore").split()
    rng, lines, size = random.Random(0), [], 0
    while size < megabytes * 1e6:
        lines.append(" ".join("".join(rng.choices(words, k=rng.choice((1, 1, 2, 3)))) for _ in range(40)))
        size += len(lines[-1].encode()) + 1
    return "\n".join(lines).encode()


def stats_bytes(data_dir: Path, tokenizer_id: int) -> int | None:
    """The size of the tokenizer row's stats column, read from the run's own SQLite file."""
    from webapp.store.models import Tokenizer

    try:
        with sqlite3.connect(f"file:{data_dir / 'tokenforge.sqlite3'}?mode=ro", uri=True) as db:
            row = db.execute(f"SELECT length(CAST(stats AS BLOB)) FROM {Tokenizer.__tablename__} WHERE id = ?",
                             (tokenizer_id,)).fetchone()
    except sqlite3.Error:
        return None
    return int(row[0]) if row and row[0] is not None else None


# --- the run's account, tokenizer, corpora and sessions -------------------------------------------


@dataclass
class Setup:
    """What the simulated users need, and the background jobs queued so far (``job_ids``)."""

    port: int
    tokenizer_id: int
    key: str
    sessions: list[dict[str, str]]  # one login's cookies per simulated user
    admin: Browser
    job_corpus_id: int
    job_options: dict[str, str]
    job_ids: list[int] = field(default_factory=list)


def prepare(base: str, port: int, args: argparse.Namespace, users: int, data_dir: Path) -> tuple[Setup, dict[str, Any]]:
    """Sign up, make an API key, train the playground's tokenizer, upload the job corpus, log users in."""
    admin = Browser(base)
    admin.post("signup", {"email": EMAIL, "name": "Load", "password": PASSWORD, "confirm": PASSWORD})
    _, page = admin.post("account/keys", {"name": "load"}, form_page="account")
    key = page.partition('data-testid="new-key">')[2].partition("<")[0]
    if not key:
        raise SetupError("the account page showed no new API key")
    corpus_id = upload_corpus(admin, args.corpus.name, args.corpus.read_bytes())
    started = time.monotonic()
    job = queue_training(admin, corpus_id, f"bpe-{args.vocab_size}", {"vocab_size": str(args.vocab_size)})
    state = wait_for_job(admin, job, (), timeout=args.train_timeout)
    if state["status"] != "succeeded" or state["tokenizer_id"] is None:
        raise SetupError(f"training the playground's tokenizer (job {job}) ended {state['status']}: {state['error']}")
    tokenizer = {"id": state["tokenizer_id"], "requested_vocab_size": args.vocab_size,
                 "vocab_size": state["vocab_size"],
                 "training_wall_seconds": round(time.monotonic() - started, 1), "corpus": str(args.corpus),
                 "corpus_bytes": args.corpus.stat().st_size,
                 "stats_bytes": stats_bytes(data_dir, state["tokenizer_id"])}
    if state["vocab_size"] < args.vocab_size:
        tokenizer["note"] = (f"{args.corpus.name} is too small for {args.vocab_size:,} tokens: BPE ran out of pairs "
                             f"seen twice at {state['vocab_size']:,}. Pass a larger --corpus for a "
                             f"{args.vocab_size:,} vocabulary.")
        print("load_test: " + tokenizer["note"], file=sys.stderr)
    data = job_corpus(args.corpus, args.job_corpus_mb)
    job_corpus_id = upload_corpus(admin, "background.txt", data)
    for corpus in (corpus_id, job_corpus_id):  # the uploads' analyses must not run during a measurement
        wait_for_analysis(admin, corpus, timeout=args.train_timeout)
    sessions = []
    for _ in range(users):
        browser = Browser(base)
        browser.post("login", {"email": EMAIL, "password": PASSWORD})
        sessions.append(browser.cookies())
    setup = Setup(port, state["tokenizer_id"], key, sessions, admin, job_corpus_id,
                  {"vocab_size": str(args.job_vocab_size)})
    return setup, {**tokenizer, "job_corpus_bytes": len(data), "job_vocab_size": args.job_vocab_size}
