"""Web CPU per request of two builds' real servers, alternated: ``tokenforge serve`` against ``serve``.

``load_test.py`` measures one build at a time, so on a machine other work shares, the load moves
its figures more than a change of a few percent does. This script starts ``serve`` (``--workers``
x ``--threads``) from this checkout and from ``--against`` CHECKOUT side by side, each on its own
data folder holding GPT-2 and a signed-in user (made by ``web_cpu.py``'s set-up, so CHECKOUT needs
the same test helpers), and drives one at a time with ``--users`` closed-loop users for
``--seconds``, in ``--rounds`` rounds whose order flips every round. Each user loops over the load
test's requests (the playground page, three htmx encodes of 2 KB of ``--corpus``, one API
encode). It prints each build's web CPU per request (``load_support.web_cpu_seconds``) and
requests per second, and the median of the rounds' ratios. No training job runs.

    python benchmarks/serve_cpu.py --corpus "$CORPORA/en_5M.txt" --against ../parent-checkout
"""

from __future__ import annotations

import argparse
import asyncio
import html
import json
import os
import random
import statistics
import subprocess
import sys
import tempfile
import time
import urllib.parse
from pathlib import Path
from typing import Any

sys.path.insert(0, str(Path(__file__).resolve().parent))
from load_support import Browser, Connection, free_port, stop_server, web_cpu_seconds  # noqa: E402

ROOT = Path(__file__).resolve().parents[1]
WEB_CPU = Path(__file__).resolve().parent / "web_cpu.py"
STEPS = ("page", "htmx", "htmx", "htmx", "api")


def start(checkout: Path, folder: Path, args: argparse.Namespace) -> dict[str, Any]:
    """Prepare ``folder`` with ``checkout``'s code, start its ``serve`` and sign its users in."""
    subprocess.run([sys.executable, str(WEB_CPU), "--prepare", str(folder), "--checkout", str(checkout),
                    "--corpus", str(args.corpus)], cwd=checkout, check=True)
    info = json.loads((folder / "info.json").read_text())
    port = free_port()
    env = {**os.environ, "TOKENFORGE_DATA_DIR": str(folder / "data"), "PYTHONPATH": str(checkout),
           "TOKENFORGE_API_RATE_LIMIT": "1000000000/60", "TOKENFORGE_LOGIN_RATE_LIMIT": "1000000/60"}
    env.pop("DATABASE_URL", None)
    with (folder / "serve.log").open("wb") as log:
        process = subprocess.Popen([sys.executable, "-m", "webapp.cli", "serve", "--host", "127.0.0.1", "--port",
                                    str(port), "--workers", str(args.workers), "--threads", str(args.threads)],
                                   cwd=checkout, env=env, stdout=log, stderr=subprocess.STDOUT, start_new_session=True)
    base = f"http://127.0.0.1:{port}"
    for _ in range(600):
        try:
            Browser(base).get("/healthz")
            break
        except OSError:
            time.sleep(0.2)
    sessions = []
    for _ in range(args.users):
        browser = Browser(base)
        browser.post("/login", {"email": info["email"], "password": info["password"]})
        sessions.append(browser.cookies())
    return {"process": process, "port": port, "sessions": sessions, **info}


async def user(number: int, server: dict[str, Any], texts: list[str], stop: float, done: list[int]) -> None:
    """One user's closed loop until ``stop``; counts its answered requests in ``done``."""
    conn, rng, csrf = Connection(server["port"], server["sessions"][number]), random.Random(number), ("", "")
    play, ref = f"/tokenizers/{server['ref']}/play", server["ref"]
    while time.monotonic() < stop:
        for kind in STEPS:
            text = texts[rng.randrange(len(texts))]
            if kind == "page":
                status, body = await conn.request("GET", play, {"Accept": "text/html"})
                page = body.decode()
                header = html.unescape(page.partition("<body hx-headers='")[2].partition("'")[0])
                field = page.partition('name="csrf_token" value="')[2].partition('"')[0]
                csrf = (json.loads(header)["X-CSRFToken"], field)
            elif kind == "htmx":
                form = (f"csrf_token={urllib.parse.quote_plus(csrf[1])}&text={urllib.parse.quote_plus(text)}"
                        "&allowed_special=on")
                status, body = await conn.request("POST", f"/tokenizers/{ref}/encode", {
                    "HX-Request": "true", "HX-Trigger": "encode-form", "HX-Target": "encode-result",
                    "HX-Current-URL": f"http://127.0.0.1{play}", "X-CSRFToken": csrf[0],
                    "Content-Type": "application/x-www-form-urlencoded"}, form.encode())
            else:
                status, body = await conn.request("POST", "/api/v1/encode", {
                    "Authorization": f"Bearer {server['key']}", "Content-Type": "application/json"},
                    json.dumps({"tokenizer": ref, "text": text}).encode())
            if status != 200:
                raise SystemExit(f"serve_cpu: {kind} answered {status}: {body[:200]!r}")
            done[0] += 1
    conn.close()


def window(server: dict[str, Any], texts: list[str], args: argparse.Namespace) -> tuple[float, float]:
    """Drive ``server`` for ``args.seconds``: (web CPU ms per request, requests per second)."""
    done = [0]

    async def run() -> None:
        stop = time.monotonic() + args.seconds
        await asyncio.gather(*(user(n, server, texts, stop, done) for n in range(args.users)))

    cpu, started = web_cpu_seconds(server["process"].pid), time.monotonic()
    asyncio.run(run())
    return (web_cpu_seconds(server["process"].pid) - cpu) * 1000 / done[0], done[0] / (time.monotonic() - started)


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    parser.add_argument("--corpus", type=Path, required=True, help="text to encode (2 KB slices)")
    parser.add_argument("--against", type=Path, required=True, help="the other checkout")
    parser.add_argument("--users", type=int, default=20)
    parser.add_argument("--seconds", type=float, default=8, help="seconds per window (default 8)")
    parser.add_argument("--rounds", type=int, default=8, help="windows per build (default 8)")
    parser.add_argument("--workers", type=int, default=3)
    parser.add_argument("--threads", type=int, default=2)
    args = parser.parse_args()
    text = args.corpus.read_bytes()[: 4 << 20].decode("utf-8", "ignore")
    rng = random.Random(1)
    texts = [text[s:s + 2048] for s in (rng.randrange(max(1, len(text) - 2048)) for _ in range(64))]
    servers: dict[str, dict[str, Any]] = {}
    with tempfile.TemporaryDirectory(prefix="serve-cpu-") as tmp:
        try:
            for name, checkout in (("this", ROOT), ("other", args.against.resolve())):
                servers[name] = start(checkout, Path(tmp) / name, args)
            for server in servers.values():
                window(server, texts, args)  # warm-up: parse the tokenizer, fill the caches
            results: dict[str, list[tuple[float, float]]] = {"this": [], "other": []}
            for round_ in range(args.rounds):
                for name in (("this", "other") if round_ % 2 == 0 else ("other", "this")):
                    results[name].append(window(servers[name], texts, args))
        finally:
            for server in servers.values():
                stop_server(server["process"])
    for name, checkout in (("this", ROOT), ("other", args.against.resolve())):
        cpu = [r[0] for r in results[name]]
        print(f"{name} ({checkout}): web CPU {statistics.median(cpu):.2f} ms a request "
              f"({', '.join(f'{c:.2f}' for c in cpu)}), {statistics.median(r[1] for r in results[name]):.0f} req/s")
    ratios = [a[0] / b[0] for a, b in zip(results["this"], results["other"])]
    print(f"this/other, median of {args.rounds} rounds: {statistics.median(ratios):.2f} "
          f"(load average {os.getloadavg()[0]:.1f} at the end)")


if __name__ == "__main__":
    main()
