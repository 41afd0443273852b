"""Load test: N concurrent users encoding ~2 KB texts through the JSON API while a job trains.

Bounded and local: it only ever talks to 127.0.0.1. By default it starts its own
``tokenforge serve`` (gunicorn + one job worker) in a temporary data folder, signs up, creates
an API key, imports a small BPE tokenizer, uploads a corpus and queues a training job, then
runs ``--users`` asyncio clients for ``--seconds``. Each user sends one encode request, waits
for the answer, thinks for ``--think`` seconds (people type; the playground debounces) and
repeats. It prints the request count, errors and latency percentiles, and exits 1 on any
error. Requests are never resent: a reset or a closed connection counts as an error. The API
rate limit is raised for the run: this measures capacity, not the limiter.

    python benchmarks/load_test.py --users 50 --seconds 60
"""

from __future__ import annotations

import argparse
import asyncio
import http.cookiejar
import json
import os
import random
import re
import signal
import socket
import statistics
import subprocess
import sys
import tempfile
import time
import urllib.error
import urllib.parse
import urllib.request
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any

REPO = Path(__file__).resolve().parents[1]
sys.path.insert(0, str(REPO))
WORDS = ("the of and to in is was for on that with as by at from his her it an were which are this "
         "tokenizer merge vocabulary byte pair encoding naïve café 日本語 emoji 👋 data model").split()


@dataclass
class Result:
    latencies: list[float] = field(default_factory=list)
    errors: list[str] = field(default_factory=list)

    def summary(self, seconds: float) -> dict[str, Any]:
        ordered = sorted(self.latencies)

        def pct(p: float) -> float:
            return round(1000 * ordered[min(len(ordered) - 1, int(p * len(ordered)))], 1) if ordered else 0.0

        return {"requests": len(ordered), "errors": len(self.errors), "error_samples": self.errors[:5],
                "rps": round(len(ordered) / seconds, 1), "p50_ms": pct(0.50), "p95_ms": pct(0.95),
                "p99_ms": pct(0.99), "max_ms": round(1000 * max(ordered), 1) if ordered else 0.0,
                "mean_ms": round(1000 * statistics.fmean(ordered), 1) if ordered else 0.0}


def text_of(size: int, rng: random.Random) -> str:
    out: list[str] = []
    while len(" ".join(out).encode()) < size:
        out.append(rng.choice(WORDS))
    return " ".join(out)


async def user(port: int, key: str, tokenizer: int, deadline: float, think: float, size: int,
               result: Result, seed: int) -> None:
    """One simulated user on one keep-alive connection."""
    rng = random.Random(seed)
    reader, writer = await asyncio.open_connection("127.0.0.1", port)
    try:
        while time.monotonic() < deadline:
            body = json.dumps({"tokenizer": tokenizer, "text": text_of(size, rng)}).encode()
            head = (f"POST /api/v1/encode HTTP/1.1\r\nHost: 127.0.0.1:{port}\r\nAuthorization: Bearer {key}\r\n"
                    f"Content-Type: application/json\r\nContent-Length: {len(body)}\r\n\r\n").encode()
            started = time.monotonic()
            writer.write(head + body)
            await writer.drain()
            # No resending: a request lost on a reused connection is an error we count. The
            # server keeps idle connections far longer than any pause here (``KEEPALIVE_SECONDS``
            # in webapp/cli.py) and says ``Connection: close`` before it closes one itself.
            status_line = await reader.readline()
            if not status_line:
                raise ConnectionError("the server closed the connection without answering")
            length, close = 0, False
            while (line := await reader.readline()) not in (b"\r\n", b""):
                name, _, value = line.decode("latin-1").partition(":")
                if name.lower() == "content-length":
                    length = int(value)
                elif name.lower() == "connection" and "close" in value.lower():
                    close = True
            payload = await reader.readexactly(length)
            elapsed = time.monotonic() - started
            status = status_line.split(b" ")[1:2]
            if status != [b"200"] or b'"ids"' not in payload:
                result.errors.append(f"{status_line.decode(errors='replace').strip()} {payload[:120]!r}")
            else:
                result.latencies.append(elapsed)
            if close:
                writer.close()
                reader, writer = await asyncio.open_connection("127.0.0.1", port)
            await asyncio.sleep(rng.uniform(0.5 * think, 1.5 * think))
    except (ConnectionError, asyncio.IncompleteReadError) as exc:
        result.errors.append(f"connection: {exc!r}")
    finally:
        writer.close()


async def run_users(port: int, key: str, tokenizer: int, users: int, seconds: float, think: float,
                    size: int) -> Result:
    result = Result()
    deadline = time.monotonic() + seconds
    await asyncio.gather(*(user(port, key, tokenizer, deadline, think, size, result, i) for i in range(users)))
    return result


# --- setting up a server to test ----------------------------------------------------------------


class Browser:
    """A cookie-keeping HTTP client that fills in each form's CSRF token."""

    def __init__(self, base: str) -> None:
        self.base = base
        self.opener = urllib.request.build_opener(urllib.request.HTTPCookieProcessor(http.cookiejar.CookieJar()))

    def get(self, path: str) -> str:
        with self.opener.open(self.base + path, timeout=60) as response:
            return response.read().decode("utf-8")

    def post(self, path: str, fields: dict[str, str], files: dict[str, tuple[str, bytes]] | None = None,
             form_page: str | None = None) -> tuple[str, str]:
        page = self.get(form_page or path)
        fields = {"csrf_token": re.search(r'name="csrf_token" value="([^"]+)"', page).group(1), **fields}
        boundary = "tokenforgeloadtest"
        parts = [f'--{boundary}\r\nContent-Disposition: form-data; name="{k}"\r\n\r\n{v}\r\n'.encode() for k, v in fields.items()]
        for name, (filename, data) in (files or {}).items():
            parts.append(f'--{boundary}\r\nContent-Disposition: form-data; name="{name}"; filename="{filename}"\r\n'
                         f"Content-Type: application/octet-stream\r\n\r\n".encode() + data + b"\r\n")
        body = b"".join(parts) + f"--{boundary}--\r\n".encode()
        request = urllib.request.Request(self.base + path, data=body,
                                         headers={"Content-Type": f"multipart/form-data; boundary={boundary}"})
        try:
            with self.opener.open(request, timeout=300) as response:
                return response.geturl(), response.read().decode("utf-8")
        except urllib.error.HTTPError as exc:
            page = exc.read().decode("utf-8", "replace")
            problems = re.findall(r'class="(?:field-error|errors)"[^>]*>(.*?)</', page, re.S)
            raise SystemExit(f"POST {path} answered {exc.code}: {problems or page[:500]}") from None


def free_port() -> int:
    with socket.socket() as sock:
        sock.bind(("127.0.0.1", 0))
        return int(sock.getsockname()[1])


def start_server(data_dir: Path, port: int, workers: int, threads: int) -> subprocess.Popen[bytes]:
    env = {**os.environ, "TOKENFORGE_DATA_DIR": str(data_dir), "PYTHONPATH": str(REPO),
           "TOKENFORGE_API_RATE_LIMIT": "100000000/60"}
    env.pop("DATABASE_URL", None)
    with (data_dir / "serve.log").open("wb") as log:
        process = subprocess.Popen([sys.executable, "-m", "webapp.cli", "serve", "--host", "127.0.0.1",
                                    "--port", str(port), "--workers", str(workers), "--threads", str(threads)],
                                   cwd=data_dir, env=env, stdout=log, stderr=subprocess.STDOUT)
    deadline = time.monotonic() + 60
    while time.monotonic() < deadline:
        try:
            with urllib.request.urlopen(f"http://127.0.0.1:{port}/healthz", timeout=2):
                return process
        except OSError:
            time.sleep(0.2)
    process.kill()
    raise SystemExit("the server did not start; see " + str(data_dir / "serve.log"))


def web_cpu_seconds(serve_pid: int) -> float:
    """CPU time used so far by the gunicorn web processes (serve's children but the job worker).

    Unlike latency, this hardly depends on what else the machine is running, so it shows what
    one request costs the server even on a busy, shared machine. Linux only (``/proc``).
    """
    tick = os.sysconf("SC_CLK_TCK")
    total = 0.0
    children = Path(f"/proc/{serve_pid}/task/{serve_pid}/children")
    for pid in children.read_text().split() if children.exists() else []:
        try:
            if b"worker" in Path(f"/proc/{pid}/cmdline").read_bytes().split(b"\0"):
                continue  # the job worker (``python -m webapp.cli worker``) trains; not web work
            fields = Path(f"/proc/{pid}/stat").read_text().rsplit(")", 1)[1].split()
        except OSError:
            continue
        total += (int(fields[11]) + int(fields[12])) / tick  # utime + stime
    return total


def prepare(base: str, train_vocab: int) -> tuple[str, int, Browser]:
    """Sign up, create an API key, import a small tokenizer, queue a training job."""
    from engine.trainers import train

    browser = Browser(base)
    password = "load test password"
    browser.post("signup", {"email": "load@example.com", "name": "Load", "password": password, "confirm": password})
    _, page = browser.post("account/keys", {"name": "load"}, form_page="account")
    key = re.search(r'data-testid="new-key">([^<]+)<', page).group(1)
    rng = random.Random(0)
    with tempfile.TemporaryDirectory() as tmp:
        corpus = Path(tmp, "corpus.txt")
        corpus.write_text("\n".join(text_of(200, rng) for _ in range(2000)), encoding="utf-8")
        tokenizer = train("bpe", [corpus], {"vocab_size": 600}).tokenizer
        url, _ = browser.post("import", {"kind": "tokenizer_json", "name": "load-bpe"},
                              {"file": ("tokenizer.json", tokenizer.to_json().encode())})
        tokenizer_id = int(url.rstrip("/").split("/")[-2])
        big = Path(tmp, "train.txt")
        big.write_text("\n".join(text_of(400, rng) + f" n{i}" for i in range(40_000)), encoding="utf-8")
        url, _ = browser.post("corpora/", {}, {"files": ("train.txt", big.read_bytes())})
    corpus_id = url.rstrip("/").split("/")[-1]
    from webapp.training_form import PREFIX

    form = browser.get("train?algorithm=bpe")  # every option at its default, as the page offers it
    fields = dict(re.findall(rf'<input type="(?:text|number)" name="({PREFIX}[^"]+)" id="[^"]+" value="([^"]*)"', form))
    fields.update(re.findall(rf'<textarea name="({PREFIX}[^"]+)" id="[^"]+" rows="3">([^<]*)</textarea>', form))
    fields.update((name, "on") for name in re.findall(rf'name="({PREFIX}[^"]+)" id="[^"]+" checked', form))
    for name, options in re.findall(rf'<select name="({PREFIX}[^"]+)" id="[^"]+">(.*?)</select>', form, re.S):
        chosen = re.search(r'<option value="([^"]*)"[^>]*selected', options) or re.search(r'<option value="([^"]*)"', options)
        fields[name] = chosen.group(1) if chosen else ""
    fields[PREFIX + "vocab_size"] = str(train_vocab)
    browser.post("train", {"algorithm": "bpe", "corpus_ids": corpus_id, **fields})
    return key, tokenizer_id, browser


def job_status(browser: Browser) -> str:
    """The training job's status as its page shows it (the only training job; uploads queue
    analysis jobs too, so its id is not known in advance)."""
    job_id = re.search(r'<tr><td>(\d+)</td>', browser.get("jobs")).group(1)
    page = browser.get(f"jobs/{job_id}")
    found = re.search(r'status-(queued|running|succeeded|failed|cancelled)', page)
    error = re.search(r'<p class="errors">(.*?)</p>', page, re.S)
    return (found.group(1) if found else "unknown") + (f" ({error.group(1).strip()})" if error else "")


def main(argv: list[str] | None = None) -> dict[str, Any]:
    parser = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    parser.add_argument("--users", type=int, default=50)
    parser.add_argument("--seconds", type=float, default=60)
    parser.add_argument("--think", type=float, default=1.0, help="mean pause between a user's requests")
    parser.add_argument("--text-bytes", type=int, default=2048)
    parser.add_argument("--workers", type=int, default=2)
    parser.add_argument("--threads", type=int, default=4)
    parser.add_argument("--train-vocab", type=int, default=8000)
    args = parser.parse_args(argv)
    port = free_port()
    with tempfile.TemporaryDirectory(prefix="tokenforge-load-") as tmp:
        server = start_server(Path(tmp), port, args.workers, args.threads)
        try:
            key, tokenizer_id, browser = prepare(f"http://127.0.0.1:{port}/", args.train_vocab)
            before = job_status(browser)
            cpu_before, load_before = web_cpu_seconds(server.pid), os.getloadavg()[0]
            result = asyncio.run(run_users(port, key, tokenizer_id, args.users, args.seconds, args.think,
                                           args.text_bytes))
            summary = {**result.summary(args.seconds), "users": args.users, "seconds": args.seconds,
                       "think_s": args.think, "text_bytes": args.text_bytes, "cpus": os.cpu_count(),
                       "training_job": f"{before} -> {job_status(browser)}",
                       "web_cpu_ms_per_request": round(1000 * (web_cpu_seconds(server.pid) - cpu_before)
                                                       / max(1, len(result.latencies) + len(result.errors)), 2),
                       "load_average": [round(load_before, 2), round(os.getloadavg()[0], 2)]}
        finally:
            server.send_signal(signal.SIGTERM)
            try:
                server.wait(60)
            except subprocess.TimeoutExpired:
                server.kill()
    print(json.dumps(summary, indent=2, ensure_ascii=False))
    return summary


if __name__ == "__main__":
    sys.exit(1 if main()["errors"] else 0)
