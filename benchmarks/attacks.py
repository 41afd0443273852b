"""Replay the attacks of issue #11 against a real ``tokenforge serve`` and time each refusal.

The target (``docs/benchmarks.md``): every attack fails with a clear 4xx in under 1 s, and no
web process grows by more than 200 MB. The script starts its own server in a temporary folder
(SQLite, ``--workers 2``), signs up, then sends each attack once as an attacker would, over
HTTP, and reports per attack: the status, the seconds until the answer, the first words of the
answer, and the largest growth of any web process's peak memory (``VmHWM`` in ``/proc``, so
a spike that was freed again still counts). It exits 1 if any attack got a 5xx or a 2xx/3xx
where a refusal was due, took 1 s or more, or grew a web process by more than 200 MB.

    python benchmarks/attacks.py

Left out: findings that are about state, not cost (sessions, invites, team deletion, the
limiter, workers); their tests are the ``test_attacks*.py`` modules under ``tests/webapp/``.
"""

from __future__ import annotations

import argparse
import html
import json
import re
import socket
import sys
import tempfile
import threading
import time
import urllib.error
import urllib.request
from collections.abc import Callable
from pathlib import Path

sys.path.insert(0, str(Path(__file__).resolve().parent))
from load_support import CSRF_FIELD, Browser, free_port, multipart_request, start_server, stop_server, train_form_fields  # noqa: E402

MB = 1 << 20
Answer = tuple[int, str]


def web_pids(serve_pid: int) -> list[int]:
    """gunicorn's web workers: serve's children except the job-worker supervisor."""
    children = Path(f"/proc/{serve_pid}/task/{serve_pid}/children")
    pids = []
    for pid in children.read_text().split() if children.exists() else []:
        try:
            cmdline = Path(f"/proc/{pid}/cmdline").read_bytes()
        except OSError:
            continue
        if b"supervisor" not in cmdline and b"worker" not in cmdline.split(b"\0"):
            pids.append(int(pid))
    return pids


def reset_peak(pid: int) -> None:
    """Start ``VmHWM`` (peak memory) over from the current size (Linux: ``clear_refs`` 5)."""
    try:
        Path(f"/proc/{pid}/clear_refs").write_text("5")
    except OSError:
        pass  # an older kernel: the peak then counts from the process's start, a stricter test


def message_of(body: str) -> str:
    """The sentence a person or script would read: a JSON error, a form's alert, or the text."""
    try:
        return html.unescape(str(json.loads(body)["error"]))
    except (ValueError, KeyError, TypeError):
        pass
    for found in re.finditer(r'(?:role="alert"|class="error-message")[^>]*>(.*?)</(?:p|span|div)>', body, re.S):
        text = html.unescape(" ".join(re.sub(r"<[^>]+>", " ", found.group(1)).split()))
        if text:
            return text
    return " ".join(re.sub(r"<[^>]+>", " ", body).split())[:80]


def memory_kib(pid: int, field: str) -> int:
    """``VmRSS`` or ``VmHWM`` of a process, in KiB (0 if it is gone)."""
    try:
        status = Path(f"/proc/{pid}/status").read_text()
    except OSError:
        return 0
    found = re.search(rf"^{field}:\s+(\d+) kB", status, re.M)
    return int(found.group(1)) if found else 0


class Attacker:
    """Sends one request per attack through a logged-in browser session, or none."""

    def __init__(self, base: str, browser: Browser) -> None:
        self.base, self.browser = base, browser

    def _open(self, request: urllib.request.Request) -> Answer:
        try:
            with self.browser.opener.open(request, timeout=120) as response:
                return response.status, response.read().decode("utf-8", "replace")
        except urllib.error.HTTPError as exc:
            return exc.code, exc.read().decode("utf-8", "replace")

    def form(self, path: str, fields: dict[str, str], files: dict[str, tuple[str, bytes]] | None = None,
             form_page: str | None = None) -> Answer:
        """POST a multipart form with the CSRF token of ``form_page``; the answer after any redirect."""
        token = CSRF_FIELD.search(self.browser.get(form_page or path))
        fields = {"csrf_token": token.group(1) if token else "", **fields}
        return self._open(multipart_request(self.base + path, fields, files))

    def api(self, path: str, body: bytes) -> Answer:
        request = urllib.request.Request(self.base + path, data=body, headers={"Content-Type": "application/json"})
        return self._open(request)

    def get(self, path: str) -> Answer:
        return self._open(urllib.request.Request(self.base + path))


def raw_body(port: int, head: bytes, send_bytes: int) -> Answer:
    """Declare a body in ``head``, send ``send_bytes`` of it, and read the answer."""
    with socket.create_connection(("127.0.0.1", port)) as sock:
        sock.sendall(head)
        sock.settimeout(30)
        chunk = b"x" * MB
        try:
            for _ in range(send_bytes // MB):
                sock.sendall(chunk)
        except OSError:
            pass  # the server answered and closed: the rest is refused, as it should be
        answer = b""
        try:
            while part := sock.recv(65536):
                answer += part
        except OSError:
            pass
    status = re.match(rb"HTTP/1\.[01] (\d{3})", answer)
    return (int(status.group(1)) if status else 0), answer.split(b"\r\n\r\n", 1)[-1].decode("utf-8", "replace")


def slow_senders(port: int, base: str) -> Answer:
    """Ten logged-out connections trickle a login form at 1 byte/s; answer: the slowest /healthz."""
    sockets = [socket.create_connection(("127.0.0.1", port)) for _ in range(10)]
    stop = threading.Event()

    def trickle() -> None:
        for sock in sockets:
            sock.sendall(b"POST /login HTTP/1.1\r\nHost: x\r\n")
        while not stop.wait(1):
            for sock in sockets:
                try:
                    sock.sendall(b"X")
                except OSError:
                    pass

    thread = threading.Thread(target=trickle, daemon=True)
    thread.start()
    slowest, status = 0.0, 200
    try:
        for _ in range(3):
            time.sleep(1)
            started = time.monotonic()
            try:
                with urllib.request.urlopen(base + "healthz", timeout=5) as response:
                    status = min(status, response.status) if status == 200 else status
            except OSError:
                status = 0
            slowest = max(slowest, time.monotonic() - started)
    finally:
        stop.set()
        thread.join()
        for sock in sockets:
            sock.close()
    return status, f"slowest /healthz {slowest * 1000:.0f} ms while 10 clients sent 1 byte/s"


def tokenizer_json() -> dict[str, object]:
    """A small real byte-level BPE, as ``tokenizer.json``, to corrupt."""
    from engine.trainers import train

    with tempfile.TemporaryDirectory() as tmp:
        corpus = Path(tmp, "c.txt")
        corpus.write_text("the quick brown fox jumps over the lazy dog, again and again.\n" * 200, encoding="utf-8")
        return json.loads(train("bpe", [corpus], {"vocab_size": 300}).tokenizer.to_json())


REFUSED = frozenset(range(400, 500))


def attacks(attacker: Attacker, port: int, base: str) -> list[tuple[object, ...]]:
    """Each finding's attack as (label, send[, the statuses that mean it failed safely: a 4xx])."""
    good = tokenizer_json()

    def variant(change: Callable[[dict], None]) -> bytes:
        doc = json.loads(json.dumps(good))
        change(doc)
        return json.dumps(doc).encode()

    def import_json(data: bytes) -> Answer:
        return attacker.form("import", {"kind": "tokenizer_json", "name": "attack"},
                             {"file": ("tokenizer.json", data)})

    def add_vocab(token: str, token_id: int) -> Callable[[dict], None]:
        return lambda doc: doc["model"]["vocab"].__setitem__(token, token_id)

    def pattern(doc: dict) -> None:  # the GPT-2 layout (Split, then ByteLevel), with a slow regex
        doc["pre_tokenizer"]["pretokenizers"][0]["pattern"] = {"Regex": r"(?:.*,){6}X|\s|\S"}

    def special(content: str, token_id: int) -> Callable[[dict], None]:
        return lambda doc: doc["added_tokens"].append(
            {"id": token_id, "content": content, "single_word": False, "lstrip": False, "rstrip": False,
             "normalized": False, "special": True})

    # Set up before the clock starts: the slow pattern passes the import's sample check, and
    # the train form's fields are read once.
    attacker.form("import", {"kind": "tokenizer_json", "name": "redos"}, {"file": ("tokenizer.json", variant(pattern))})
    redos_ids = [t["id"] for t in json.loads(attacker.get("api/v1/tokenizers")[1])["tokenizers"]
                 if t["name"] == "redos"]
    train_fields = train_form_fields(attacker.browser, {"num_workers": "48", "vocab_size": "300"})

    def redos() -> Answer:
        if not redos_ids:
            return 422, "the import refused the pattern"
        return attacker.api("api/v1/encode", json.dumps({"tokenizer": redos_ids[0], "text": "," * 2000}).encode())

    gpt2_vocab = json.dumps({**{chr(c): c for c in range(33, 127)}, "zz": 999_999_999_999}).encode()
    big_head = (b"POST /corpora/ HTTP/1.1\r\nHost: x\r\nContent-Type: multipart/form-data; boundary=z\r\n"
                b"Content-Length: %d\r\n\r\n")
    return [
        ("1 import: vocab id 2147483648", lambda: import_json(variant(add_vocab("zzqq", 2_147_483_648)))),
        ("1 import: vocab id 10^18", lambda: import_json(variant(add_vocab("zzqq", 10**18)))),
        ("1 import: GPT-2 vocab.json id 999999999999", lambda: attacker.form(
            "import", {"kind": "gpt2", "name": "attack"},
            {"vocab": ("vocab.json", gpt2_vocab), "merges": ("merges.txt", b"#version: 0.2\n")})),
        ("2 logged-out upload declaring 2 GiB (16 MB sent)", lambda: raw_body(port, big_head % (2 << 30), 16 * MB)),
        ("2 logged-out upload declaring 5 GiB", lambda: raw_body(port, big_head % (5 << 30), 0)),
        ("3 import: a 10 MB token", lambda: import_json(variant(add_vocab("z" * 10_000_000, 299)))),
        ("4 train: num_workers=48", lambda: attacker.form(
            "train", {"algorithm": "bpe", "corpus_ids": "1", "name": "attack", **train_fields},
            form_page="train?algorithm=bpe")),
        ("5 API encode of 2,000 commas with an imported ReDoS pattern", redos),
        ("6 ten slow senders on /login", lambda: slow_senders(port, base), frozenset({200})),
        ("10 /account/team with ²", lambda: attacker.form("account/team", {"team_id": "²"}, form_page="account")),
        ("10 share link days=²", lambda: attacker.form("tokenizers/1/share", {"days": "²"},
                                                        form_page="tokenizers/1/share")),
        ("10 API tokenizer ²", lambda: attacker.api("api/v1/encode", b'{"tokenizer": "\\u00b2", "text": "a"}')),
        ("10 API body nested 100,000 deep", lambda: attacker.api("api/v1/encode", b"[" * 100_000 + b"]" * 100_000)),
        ("10 login page, next= with CRLF", lambda: attacker.get("login?next=/%0d%0aSet-Cookie:%20x=1"),
         frozenset({200})),
        ("10 API unknown route is JSON", lambda: attacker.get("api/v1/nothing-here")),
        ("12 import: empty special token", lambda: import_json(variant(special("", 300)))),
        ("12 import: special id 10^12", lambda: import_json(variant(special("<|x|>", 10**12)))),
    ]


def main(argv: list[str] | None = None) -> int:
    parser = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    parser.add_argument("--workers", type=int, default=2)
    args = parser.parse_args(argv)
    port = free_port()
    base = f"http://127.0.0.1:{port}/"
    failures = 0
    with tempfile.TemporaryDirectory(prefix="tokenforge-attacks-") as tmp:
        server = start_server(Path(tmp), port, args.workers, 4, {"TOKENFORGE_OPEN_SIGNUP": "1"})
        try:
            browser = Browser(base)
            browser.post("signup", {"email": "owner@example.com", "name": "Owner",
                                    "password": "attack test password", "confirm": "attack test password"})
            browser.post("corpora/", {}, {"files": ("c.txt", b"some text to train on\n" * 100)})  # corpus 1
            attacker = Attacker(base, browser)
            attacker.form("import", {"kind": "tokenizer_json", "name": "good"},  # tokenizer 1, to share
                          {"file": ("tokenizer.json", json.dumps(tokenizer_json()).encode())})
            print("| attack | answer | seconds | largest web-process growth (MB) |")
            print("|---|---|---|---|")
            for label, send, *statuses in attacks(attacker, port, base):
                expected = statuses[0] if statuses else REFUSED
                pids = web_pids(server.pid)
                before = {pid: memory_kib(pid, "VmRSS") for pid in pids}
                for pid in pids:
                    reset_peak(pid)
                started = time.monotonic()
                status, body = send()
                seconds = time.monotonic() - started
                growth = max((memory_kib(pid, "VmHWM") - rss) / 1024 for pid, rss in before.items())
                shown = message_of(body).replace("|", "\\|")
                refused = status in expected
                if label.startswith("6"):
                    seconds = float(re.search(r"(\d+) ms", body).group(1)) / 1000
                ok = refused and seconds < 1 and growth <= 200
                failures += not ok
                print(f"| {label} | {status}: {shown[:110]} | {seconds:.2f} | {max(0.0, growth):.1f} |"
                      + ("" if ok else " **FAIL**"))
        finally:
            stop_server(server)
    return 1 if failures else 0


if __name__ == "__main__":
    sys.exit(main())
