"""Load test: 10, 25 and 50 playground users, closed loop, against a 32k BPE, while a job trains.

It starts its own ``tokenforge serve`` (``--workers``/``--threads``) in a temporary data folder,
with the login, sign-up and API rate limits raised (this measures capacity, not the limiters).
Through the web pages, as a person would, it signs up, creates an API key, uploads ``--corpus``
and trains a ``--vocab-size`` BPE on it with a training job, so the tokenizer's row holds the
statistics a real training writes (an import stores none). It uploads a second, larger corpus
made from the first one's words and keeps a training job on it running through every
measurement: before each one it makes sure that one job is running and a second is queued
behind it (the worker starts that one within a second if the first ends mid-measurement), and
it reports the jobs' statuses before and after. The job worker runs at its normal nice level.

Each simulated user has a login session of its own and one keep-alive connection, and repeats
what a playground user does, with no pause (a closed loop: the next request leaves when the
answer to the last has arrived): GET the tokenizer's playground page, reading its CSRF token;
three htmx encodes of ``--text-bytes`` of corpus text, sent as htmx sends the encode form; one
JSON API encode with a Bearer key. A short warm-up is not counted. A request that gets a
non-2xx answer, a wrong body, a reset or a closed connection is an error; nothing is resent.
Static files (CSS, htmx) are left out: browsers cache them.

For each user count it reports requests/s; p50/p95/p99/max latency overall and per kind of
request; errors; the web processes' CPU per request (from ``/proc``: unlike latency, the
machine's other load hardly changes it) and this script's own; the connections the clients
opened (``serve`` closes a busy process's keep-alive connections, ``webapp/web/server.py``); the load average before and
after; and the training jobs' statuses (``ran_throughout``: one was running at the start and
one at the end). It prints one JSON object and a Markdown table for ``docs/benchmarks.md``, and
exits 1 on any error (2 when no corpus is found or the server cannot be set up).

    python benchmarks/load_test.py --corpus /work/corpora/en_5M.txt

``--hostile`` adds a hostile member during every measurement (``load_hostile.py``): slow
uploads and a chat-template burner through a share link, and reports the answers they got.
"""

from __future__ import annotations

import argparse
import asyncio
import html
import json
import os
import random
import re
import resource
import shutil
import signal
import subprocess
import sys
import tempfile
import time
import urllib.parse
from pathlib import Path
from typing import Any

sys.path.insert(0, str(Path(__file__).resolve().parent))
from load_hostile import Hostile, prepare_hostile, run_hostile  # noqa: E402
from load_support import (  # noqa: E402
    REPO,
    Connection,
    Setup,
    SetupError,
    Texts,
    free_port,
    job_state,
    percentiles,
    prepare,
    queue_training,
    start_server,
    stop_server,
    wait_for_job,
    web_cpu_seconds,
)

from engine.presets import byte_level_bpe  # noqa: E402
from webapp.cli import default_web_workers  # noqa: E402 - the default serve uses

KINDS = ("page", "htmx_encode", "api_encode")
STEPS = ("page", "htmx_encode", "htmx_encode", "htmx_encode", "api_encode")  # one user's loop
# Raised for the run: this measures capacity, not the limiters.
LIMITS_ENV = {"TOKENFORGE_API_RATE_LIMIT": "1000000000/60", "TOKENFORGE_LOGIN_RATE_LIMIT": "1000000/60",
              "TOKENFORGE_SIGNUP_RATE_LIMIT": "1000000/60"}


def default_corpus() -> Path | None:
    """The largest text of ``../shared/data/cs336/*.txt`` and ``corpus.en`` beside the repository.

    ``gpt2_merges.txt`` and ``train-bpe-reference-merges.txt`` are left out: they are the
    largest ``.txt`` files there, but tokenizer files, not text a person would encode.
    """
    folder = REPO.parent / "shared" / "data" / "cs336"
    found = [p for p in [*folder.glob("*.txt"), folder / "corpus.en"] if p.is_file() and "merges" not in p.name]
    return max(found, key=lambda p: p.stat().st_size) if found else None


# --- what each simulated user does ----------------------------------------------------------------


async def step(conn: Connection, kind: str, setup: Setup, text: str, csrf: tuple[str, str] | None,
               ) -> tuple[str | None, tuple[str, str] | None]:
    """Send one request of ``kind``; return (error or None, the CSRF tokens a page gave)."""
    play = f"/tokenizers/{setup.tokenizer_id}/play"
    if kind == "page":
        status, body = await conn.request("GET", play, {"Accept": "text/html,application/xhtml+xml"})
        page = body.decode("utf-8", "replace")
        header = page.partition("<body hx-headers='")[2].partition("'")[0]
        field = page.partition('name="csrf_token" value="')[2].partition('"')[0]
        if status == 200 and header and field and 'id="encode-form"' in page:
            token = json.loads(html.unescape(header)).get("X-CSRFToken")
            if isinstance(token, str):
                return None, (token, field)
    elif kind == "htmx_encode" and csrf is not None:
        # What htmx 2 sends for the encode form (templates/playground/play.html): the form's
        # fields (the hidden CSRF token, the text, the checked "allow special tokens" box), its
        # request headers, and the X-CSRFToken header from hx-headers on <body>.
        body_out = (f"csrf_token={urllib.parse.quote_plus(csrf[1])}&text={urllib.parse.quote_plus(text)}"
                    f"&allowed_special=on")
        status, body = await conn.request("POST", f"/tokenizers/{setup.tokenizer_id}/encode", {
            "HX-Request": "true", "HX-Trigger": "encode-form", "HX-Target": "encode-result",
            "HX-Current-URL": f"http://127.0.0.1:{setup.port}{play}", "X-CSRFToken": csrf[0],
            "Content-Type": "application/x-www-form-urlencoded"}, body_out.encode())
        if status == 200 and body.lstrip().startswith(b'<dl class="counts"') and b'data-testid="ids"' in body:
            return None, csrf
    elif kind == "api_encode":
        payload = json.dumps({"tokenizer": setup.tokenizer_id, "text": text}).encode()
        status, body = await conn.request("POST", "/api/v1/encode", {
            "Authorization": f"Bearer {setup.key}", "Content-Type": "application/json"}, payload)
        answer = json.loads(body) if status == 200 else None
        if (isinstance(answer, dict) and isinstance(answer.get("ids"), list)
                and answer.get("count") == len(answer["ids"]) > 0):
            return None, csrf
    else:
        return "htmx_encode: skipped, the page before it failed", csrf
    return f"{kind}: HTTP {status} {body[:160]!r}", csrf


async def user(number: int, setup: Setup, texts: Texts, stop: float, timeout: float,
               records: list[tuple[str, float, float, str | None]]) -> None:
    """One user's closed loop until ``stop``: (kind, start, seconds, error) per request."""
    rng = random.Random(number)
    conn = Connection(setup.port, setup.sessions[number])
    csrf: tuple[str, str] | None = None
    while time.monotonic() < stop:
        for kind in STEPS:
            if time.monotonic() >= stop:
                break
            started = time.monotonic()
            try:
                error, csrf = await asyncio.wait_for(step(conn, kind, setup, texts.pick(rng), csrf), timeout)
            except (OSError, EOFError, asyncio.IncompleteReadError, asyncio.TimeoutError, ValueError) as exc:
                # A reset, a closed connection, no answer in time, or an answer that does not
                # parse: never resent; the next request goes on a new connection.
                conn.close()
                error = f"{kind}: {exc!r}"
            records.append((kind, started, time.monotonic() - started, error))
            if kind == "page" and error is not None:
                csrf = None
    conn.close()


# --- one measurement ------------------------------------------------------------------------------


def keep_training(setup: Setup) -> list[int]:
    """Have a background job running and a second one queued behind it, which the worker starts
    within a second should the first end during a measurement; return their ids."""
    live = [job for job in setup.job_ids if job_state(setup.admin, job)["status"] in ("queued", "running")]
    while len(live) < 2:
        live.append(queue_training(setup.admin, setup.job_corpus_id, "background training", setup.job_options))
        setup.job_ids.append(live[-1])
    wait_for_job(setup.admin, live[0], ("running",), timeout=300)
    return live


def training_now(setup: Setup, jobs: list[int]) -> tuple[str, int | None]:
    """The statuses of ``jobs`` as one line, and the id of the one running."""
    states = [job_state(setup.admin, job) for job in jobs]
    line = ", ".join(f"#{s['id']} {s['status']}" + (f" ({s['progress']})" if s["progress"] else "") for s in states)
    return line, next((s["id"] for s in states if s["status"] == "running"), None)


def measure(setup: Setup, texts: Texts, users: int, args: argparse.Namespace, serve_pid: int,
            hostile: Hostile | None = None) -> dict[str, Any]:
    """Run ``users`` users for the warm-up plus ``args.seconds`` (beside the hostile member's
    clients, if any); summarise the measured part."""
    jobs = keep_training(setup)
    (job_before, running_before), load_before = training_now(setup, jobs), os.getloadavg()
    records: list[tuple[str, float, float, str | None]] = []
    counters: dict[str, tuple[float, float]] = {}

    async def run() -> None:
        start = time.monotonic() + args.warmup
        stop = start + args.seconds

        async def mark_start() -> None:
            await asyncio.sleep(args.warmup)
            counters["start"] = (web_cpu_seconds(serve_pid), client_cpu_seconds())
            counters["opened"] = Connection.opened

        hostile_clients = ([run_hostile(hostile, stop, args.slow_uploads, args.slow_rate, args.burners)]
                           if hostile is not None else [])
        await asyncio.gather(mark_start(), *(user(n, setup, texts, stop, args.timeout, records) for n in range(users)),
                             *hostile_clients)
        counters["end"] = (web_cpu_seconds(serve_pid), client_cpu_seconds())
        counters["opened_end"] = Connection.opened
        counters["window"] = (start, stop)

    if hostile is not None:
        hostile.outcomes.clear()
    asyncio.run(run())
    start = counters["window"][0]
    measured = [r for r in records if r[1] >= start]
    ok = [r for r in measured if r[3] is None]
    errors = [r[3] for r in measured if r[3] is not None]
    warmup_errors = [r[3] for r in records if r[1] < start and r[3] is not None]
    count = max(1, len(measured))
    job_after, running_after = training_now(setup, jobs)
    return {
        "users": users, "seconds": args.seconds, "warmup_seconds": args.warmup,
        "requests": len(measured), "rps": round(len(measured) / args.seconds, 1),
        "errors": len(errors), "warmup_errors": len(warmup_errors), "error_samples": (errors + warmup_errors)[:5],
        "latency_ms": {"all": percentiles([r[2] for r in ok]),
                       **{kind: percentiles([r[2] for r in ok if r[0] == kind]) for kind in KINDS}},
        "web_cpu_ms_per_request": round(1000 * (counters["end"][0] - counters["start"][0]) / count, 2),
        "connections_opened": counters["opened_end"] - counters["opened"],
        "web_cpu_cores": round((counters["end"][0] - counters["start"][0]) / args.seconds, 2),
        "client_cpu_ms_per_request": round(1000 * (counters["end"][1] - counters["start"][1]) / count, 2),
        "load_average": {"before": [round(x, 2) for x in load_before], "after": [round(x, 2) for x in os.getloadavg()]},
        "training_job": {"before": job_before, "after": job_after,
                         "ran_throughout": running_before is not None and running_after is not None},
        **({"hostile": dict(sorted(hostile.outcomes.items()))} if hostile is not None else {}),
    }


def client_cpu_seconds() -> float:
    """This script's own CPU time: it shares the machine with the server, so it is reported."""
    usage = resource.getrusage(resource.RUSAGE_SELF)
    return usage.ru_utime + usage.ru_stime


# --- reporting ------------------------------------------------------------------------------------


def markdown(rounds: list[dict[str, Any]]) -> str:
    lines = ["| users | req/s | p50 ms | p95 ms | p99 ms | max ms | p99 page / htmx / API ms | errors "
             "| web CPU ms/req | load avg before → after | training job before → after |",
             "|---|---|---|---|---|---|---|---|---|---|---|"]
    for r in rounds:
        lat = r["latency_ms"]
        lines.append(f"| {r['users']} | {r['rps']} | {lat['all']['p50_ms']} | {lat['all']['p95_ms']} "
                     f"| {lat['all']['p99_ms']} "
                     f"| {lat['all']['max_ms']} | {' / '.join(str(lat[k]['p99_ms']) for k in KINDS)} "
                     f"| {r['errors'] + r['warmup_errors']} | {r['web_cpu_ms_per_request']} "
                     f"| {r['load_average']['before'][0]} → {r['load_average']['after'][0]} "
                     f"| {_statuses(r['training_job']['before'])} → {_statuses(r['training_job']['after'])} |")
    for r in rounds:
        if "hostile" in r:
            lines.append(f"\nHostile member during {r['users']} users: "
                         + ", ".join(f"{what}: {count}" for what, count in r["hostile"].items()))
    return "\n".join(lines)


def _statuses(line: str) -> str:
    """``#4 running (merging: 10 of 99), #5 queued`` without the progress: ``#4 running, #5 queued``."""
    return re.sub(r" \([^)]*\)", "", line)


def parse_args(argv: list[str] | None) -> argparse.Namespace:
    parser = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    parser.add_argument("--users", default="10,25,50", help="user counts to measure, in order (default: 10,25,50)")
    parser.add_argument("--seconds", type=float, default=30, help="measured seconds per user count")
    parser.add_argument("--warmup", type=float, default=5, help="seconds before each measurement, not counted")
    parser.add_argument("--corpus", type=Path, help="text to train the tokenizer on and to encode "
                        "(default: the largest of ../shared/data/cs336/*.txt and corpus.en)")
    parser.add_argument("--vocab-size", type=int, default=32000, help="the playground tokenizer's vocabulary")
    parser.add_argument("--text-bytes", type=int, default=2048, help="size of each encoded text")
    parser.add_argument("--job-corpus-mb", type=float, default=24, help="size of the background job's corpus")
    parser.add_argument("--job-vocab-size", type=int, default=200_000, help="the background job's vocabulary")
    parser.add_argument("--workers", type=int, default=default_web_workers(),
                        help="serve --workers (default: serve's own, one per CPU plus one)")
    parser.add_argument("--threads", type=int, default=2, help="serve --threads (default: serve's own, 2)")
    parser.add_argument("--timeout", type=float, default=60, help="seconds before a request counts as an error")
    parser.add_argument("--train-timeout", type=float, default=1800, help="longest wait for setup training")
    parser.add_argument("--hostile", action="store_true", help="run a hostile member's clients during each measurement")
    parser.add_argument("--slow-uploads", type=int, default=8, help="--hostile: slow uploads at once (default 8)")
    parser.add_argument("--slow-rate", type=int, default=10_000, help="--hostile: their bytes a second (default 10 KB)")
    parser.add_argument("--burners", type=int, default=6, help="--hostile: chat-template burners at once (default 6)")
    args = parser.parse_args(argv)
    try:
        args.user_counts = [int(n) for n in args.users.split(",")]
    except ValueError:
        parser.error(f"--users takes user counts separated by commas, such as 10,25,50; not {args.users!r}")
    if not args.user_counts or min(args.user_counts) < 1:
        parser.error(f"--users needs at least one count of 1 or more, not {args.users!r}")
    for name in ("seconds", "text_bytes", "job_corpus_mb", "timeout"):
        if getattr(args, name) <= 0:
            parser.error(f"--{name.replace('_', '-')} must be greater than 0, not {getattr(args, name)}")
    if args.warmup < 0:
        parser.error(f"--warmup must be 0 or more, not {args.warmup}")
    args.corpus = args.corpus or default_corpus()
    if args.corpus is None or not args.corpus.is_file():
        print(f"load_test: no corpus: {args.corpus or REPO.parent / 'shared/data/cs336'} has no text file. "
              "Pass --corpus FILE, e.g. /work/corpora/en_5M.txt (../shared/bench/make_corpora.sh).", file=sys.stderr)
        raise SystemExit(2)
    return args


def main(argv: list[str] | None = None) -> dict[str, Any]:
    args = parse_args(argv)
    texts = Texts(args.corpus, args.text_bytes)
    port = free_port()
    commit = subprocess.run(["git", "-C", str(REPO), "rev-parse", "--short", "HEAD"], capture_output=True, text=True)
    rounds: list[dict[str, Any]] = []
    with tempfile.TemporaryDirectory(prefix="tokenforge-load-") as tmp:
        server = None
        try:
            env = {**LIMITS_ENV, "TOKENFORGE_OPEN_SIGNUP": "1"} if args.hostile else LIMITS_ENV
            server = start_server(Path(tmp), port, args.workers, args.threads, env)
            setup, tokenizer = prepare(f"http://127.0.0.1:{port}/", port, args, max(args.user_counts), Path(tmp))
            hostile = None
            if args.hostile:  # a tiny tokenizer is enough to carry the burner's template
                tiny = byte_level_bpe({i: bytes([i]) for i in range(256)}, []).to_json().encode()
                hostile = prepare_hostile(f"http://127.0.0.1:{port}/", port, tiny)
            for users in args.user_counts:
                rounds.append(measure(setup, texts, users, args, server.pid, hostile))
                print(f"load_test: {users} users: {rounds[-1]['rps']} req/s, "
                      f"p99 {rounds[-1]['latency_ms']['all']['p99_ms']} ms, "
                      f"{rounds[-1]['errors']} errors", file=sys.stderr)
        finally:
            if server is not None:
                stop_server(server)
            # keep the tracebacks
            if len(rounds) < len(args.user_counts) or any(r["errors"] or r["warmup_errors"] for r in rounds):
                kept = Path(tempfile.gettempdir()) / f"tokenforge-load-serve-{os.getpid()}.log"
                shutil.copyfile(Path(tmp) / "serve.log", kept)
                print(f"load_test: the server's log is in {kept}", file=sys.stderr)
    report = {"commit": commit.stdout.strip(), "cpus": os.cpu_count(), "workers": args.workers, "threads": args.threads,
              "text_bytes": args.text_bytes, "loop": list(STEPS), "tokenizer": tokenizer, "rounds": rounds}
    print(json.dumps(report, indent=2, ensure_ascii=False))
    print(markdown(rounds))
    for r in rounds:
        if not r["training_job"]["ran_throughout"]:
            print(f"load_test: warning: the training job did not run through the {r['users']}-user measurement "
                  f"({r['training_job']['before']} → {r['training_job']['after']})", file=sys.stderr)
    return report


def _stop_on_sigterm(signum: int, frame: Any) -> None:
    """Stop as Ctrl-C does: asyncio's own SIGINT handler cancels the users and closes their
    connections (so the server need not wait for them), then main's ``finally`` stops it."""
    if signal.getsignal(signal.SIGINT) is signal.SIG_IGN:  # started in the background by a script
        raise KeyboardInterrupt
    os.kill(os.getpid(), signal.SIGINT)


if __name__ == "__main__":
    signal.signal(signal.SIGTERM, _stop_on_sigterm)
    try:
        result = main()
    except SetupError as exc:
        print(f"load_test: {exc}", file=sys.stderr)
        sys.exit(2)
    sys.exit(1 if any(r["errors"] or r["warmup_errors"] for r in result["rounds"]) else 0)
