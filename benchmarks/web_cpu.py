"""CPU time per web request, in-process: the load test's loop through the Flask test client.

The load test (``load_test.py``) measures a real server on a machine other work shares, so its
figures move with the machine's load. This script measures what a request costs the app itself,
quietly: it builds the app in a temporary folder (SQLite, CSRF on, the API's rate limit raised,
the web processes' garbage-collection setting of ``webapp/web/server.py``), stores GPT-2 (from
``../shared/data/cs336``), signs in through the login form, and times the requests of the load
test's loop: the playground page, an htmx encode of ``--text-bytes`` of ``--corpus`` (64 slices
in turn, their pre-tokens cached first, as in a running server) and a JSON API encode. Each kind
runs in blocks of ``--requests``; the answer is this process's CPU time per request, the median
of ``--blocks`` blocks, and the load test's mix (page + 3 htmx encodes + API) / 5. Two more kinds
show the fixed costs: ``healthz`` (a request that does nothing) and ``short`` (an htmx encode of
two characters).

``--against CHECKOUT`` compares two builds under the same load: it starts this script once on
this checkout and once on CHECKOUT (another ``git worktree``, say of the parent commit; it needs
the same test helpers, ``tests/webapp/conftest.py`` and ``playground_samples.py``), alternates
their blocks (the order flipped every round) and prints each kind's median ratio of this build
to the other.

    python benchmarks/web_cpu.py --corpus "$CORPORA/en_5M.txt"
    python benchmarks/web_cpu.py --corpus "$CORPORA/en_5M.txt" --against ../base --blocks 15
    python benchmarks/web_cpu.py --corpus "$CORPORA/en_5M.txt" --profile htmx   # where it goes (cProfile)
    python benchmarks/web_cpu.py --corpus "$CORPORA/en_5M.txt" --statements     # the SQL of each kind
"""

from __future__ import annotations

import argparse
import cProfile
import gc
import html
import json
import os
import pstats
import random
import statistics
import subprocess
import sys
import tempfile
import time
from collections.abc import Callable
from pathlib import Path
from typing import Any

ROOT = Path(__file__).resolve().parents[1]
KINDS = ("page", "htmx", "api")


def build(checkout: Path, corpus: Path, text_bytes: int) -> dict[str, Callable[[], None]]:
    """The app of ``checkout``, signed in, with one callable per kind of request."""
    sys.path.insert(0, str(checkout))
    from sqlalchemy import event

    from tests.webapp.conftest import PASSWORD, make_app
    from webapp.store import db
    from webapp.web.server import GC_YOUNG_THRESHOLD

    gc.set_threshold(GC_YOUNG_THRESHOLD, *gc.get_threshold()[1:])
    text = corpus.read_bytes()[: 4 << 20].decode("utf-8", "ignore")
    rng = random.Random(1)
    texts = [text[s:s + text_bytes] for s in (rng.randrange(max(1, len(text) - text_bytes)) for _ in range(64))]
    tmp = Path(tempfile.mkdtemp(prefix="web-cpu-"))
    app = make_app(tmp, f"sqlite:///{tmp}/web.sqlite3", TESTING=False, WTF_CSRF_ENABLED=True,
                   API_RATE_LIMIT="1000000000/60")
    ref, key = _gpt2_and_key(app, "web_cpu")
    client = app.test_client()
    login = client.get("/login").get_data(as_text=True)
    token = login.partition('name="csrf_token" value="')[2].partition('"')[0]
    answer = client.post("/login", data={"csrf_token": token, "email": "alice@example.com", "password": PASSWORD})
    if answer.status_code not in (302, 303):
        raise SystemExit(f"web_cpu: the login answered {answer.status_code}")
    play, csrf, turn = f"/tokenizers/{ref}/play", {}, [0]

    def page() -> None:
        body = client.get(play, headers={"Accept": "text/html"}).get_data(as_text=True)
        headers = html.unescape(body.partition("<body hx-headers='")[2].partition("'")[0])
        csrf["header"] = json.loads(headers)["X-CSRFToken"]
        csrf["field"] = body.partition('name="csrf_token" value="')[2].partition('"')[0]

    def htmx() -> None:
        turn[0] += 1
        answer = client.post(f"/tokenizers/{ref}/encode",
                             data={"csrf_token": csrf["field"], "text": texts[turn[0] % 64], "allowed_special": "on"},
                             headers={"HX-Request": "true", "HX-Trigger": "encode-form", "HX-Target": "encode-result",
                                      "HX-Current-URL": f"http://localhost{play}", "X-CSRFToken": csrf["header"]})
        if answer.status_code != 200:
            raise SystemExit(f"web_cpu: an htmx encode answered {answer.status_code}")

    def api() -> None:
        turn[0] += 1
        answer = client.post("/api/v1/encode", data=json.dumps({"tokenizer": ref, "text": texts[turn[0] % 64]}),
                             headers={"Authorization": f"Bearer {key}", "Content-Type": "application/json"})
        if answer.status_code != 200:
            raise SystemExit(f"web_cpu: an API encode answered {answer.status_code}")

    def healthz() -> None:  # a request that does nothing: the frame's and the test client's own cost
        client.get("/healthz")

    def short() -> None:  # an htmx encode of two characters: the request's fixed costs
        client.post(f"/tokenizers/{ref}/encode", data={"csrf_token": csrf["field"], "text": "hi"},
                    headers={"HX-Request": "true", "X-CSRFToken": csrf["header"]})

    kinds = {"page": page, "htmx": htmx, "api": api, "healthz": healthz, "short": short}
    page()
    for _ in range(64):  # every text once, so its pre-tokens are cached as in a running server
        htmx()
        api()
    kinds["statements"] = lambda: print_statements(db.get_engine(app), kinds, event)
    return kinds


def _gpt2_and_key(app: Any, label: str) -> tuple[int, str]:
    """GPT-2 stored in ``app`` (for its first user, Alice) and an API key of hers: (tokenizer id, key)."""
    from tests.webapp.playground_samples import gpt2, store
    from webapp.access.auth import new_api_key
    from webapp.store import db
    from webapp.store.models import User

    ref = store(app, gpt2())
    with app.app_context():
        session = db.get_session()
        row, key = new_api_key(session.get(User, 1), label)
        session.add(row)
        session.commit()
    return ref, key


def prepare(checkout: Path, folder: Path) -> None:
    """A data folder for ``serve`` (``serve_cpu.py``): GPT-2 stored, Alice's password, an API key."""
    sys.path.insert(0, str(checkout))
    from tests.webapp.conftest import PASSWORD, make_app
    from webapp.store import db

    app = make_app(folder, f"sqlite:///{folder / 'data' / 'tokenforge.sqlite3'}", DATA_DIR=str(folder / "data"))
    ref, key = _gpt2_and_key(app, "serve_cpu")
    db.get_engine(app).dispose()
    info = {"ref": ref, "key": key, "email": "alice@example.com", "password": PASSWORD}
    (folder / "info.json").write_text(json.dumps(info))


def print_statements(engine: object, kinds: dict[str, Callable[[], None]], event: object) -> None:
    seen: list[str] = []
    event.listen(engine, "before_cursor_execute", lambda *args: seen.append(args[2]))  # type: ignore[attr-defined]
    for kind in KINDS:
        seen.clear()
        kinds[kind]()
        print(f"{kind}: {len(seen)} statements")
        for statement in seen:
            print("   ", " ".join(statement.split())[:160])


def cpu_ms(call: Callable[[], None], requests: int) -> float:
    start = time.process_time()
    for _ in range(requests):
        call()
    return (time.process_time() - start) * 1000 / requests


def mix(ms: dict[str, float]) -> float:
    """The load test's loop: one page, three htmx encodes, one API encode."""
    return (ms["page"] + 3 * ms["htmx"] + ms["api"]) / 5


def serve(kinds: dict[str, Callable[[], None]]) -> None:
    """Answer ``<kind> <requests>`` lines on stdin with CPU ms per request (for --against)."""
    print("ready", flush=True)
    for line in sys.stdin:
        kind, requests = line.split()
        print(cpu_ms(kinds[kind], int(requests)), flush=True)


def against(args: argparse.Namespace) -> None:
    """Alternate blocks between this checkout and ``args.against``; print medians and ratios."""
    builds = {"this": ROOT, "other": args.against.resolve()}
    workers = {}
    for name, checkout in builds.items():
        command = [sys.executable, str(Path(__file__).resolve()), "--serve", "--checkout", str(checkout),
                   "--corpus", str(args.corpus), "--text-bytes", str(args.text_bytes)]
        workers[name] = subprocess.Popen(command, cwd=checkout, stdin=subprocess.PIPE, stdout=subprocess.PIPE,
                                         text=True)
        if workers[name].stdout.readline().strip() != "ready":  # type: ignore[union-attr]
            raise SystemExit(f"web_cpu: the worker for {checkout} did not start")
    times: dict[str, dict[str, list[float]]] = {name: {kind: [] for kind in KINDS} for name in builds}
    for block in range(args.blocks):
        for kind in KINDS:
            for name in (("this", "other") if block % 2 == 0 else ("other", "this")):
                worker = workers[name]
                worker.stdin.write(f"{kind} {args.requests}\n")  # type: ignore[union-attr]
                worker.stdin.flush()  # type: ignore[union-attr]
                times[name][kind].append(float(worker.stdout.readline()))  # type: ignore[union-attr]
    for worker in workers.values():
        worker.stdin.close()  # type: ignore[union-attr]
        worker.wait()
    print(f"CPU ms per request, medians of {args.blocks} blocks of {args.requests}, alternated "
          f"(load average {os.getloadavg()[0]:.1f} at the end):")
    for kind in KINDS:
        ratios = [a / b for a, b in zip(times["this"][kind], times["other"][kind])]
        print(f"  {kind:5s} this {statistics.median(times['this'][kind]):6.2f}   other "
              f"{statistics.median(times['other'][kind]):6.2f}   this/other {statistics.median(ratios):.2f}")
    for name, checkout in builds.items():
        print(f"  load-test mix, {name} ({checkout}): "
              f"{mix({kind: statistics.median(times[name][kind]) for kind in KINDS}):.2f} ms a request")


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    parser.add_argument("--corpus", type=Path, required=True, help="text to encode (slices of --text-bytes)")
    parser.add_argument("--text-bytes", type=int, default=2048, help="size of each encoded text (default 2048)")
    parser.add_argument("--requests", type=int, default=50, help="requests per block (default 50)")
    parser.add_argument("--blocks", type=int, default=5, help="blocks per kind (default 5)")
    parser.add_argument("--against", type=Path, help="another checkout to alternate with")
    parser.add_argument("--profile", choices=(*KINDS, "healthz", "short"),
                        help="print a cProfile of --requests requests of this kind")
    parser.add_argument("--statements", action="store_true", help="print the SQL statements of each kind")
    parser.add_argument("--serve", action="store_true", help=argparse.SUPPRESS)  # a worker of --against
    parser.add_argument("--prepare", type=Path, help=argparse.SUPPRESS)  # serve_cpu.py's data folder
    parser.add_argument("--checkout", type=Path, default=ROOT, help=argparse.SUPPRESS)
    args = parser.parse_args()
    if args.against is not None:
        against(args)
        return
    if args.prepare is not None:
        prepare(args.checkout.resolve(), args.prepare)
        return
    kinds = build(args.checkout.resolve(), args.corpus, args.text_bytes)
    if args.serve:
        serve(kinds)
    elif args.statements:
        kinds["statements"]()
    elif args.profile:
        profiler = cProfile.Profile()
        profiler.runcall(lambda: [kinds[args.profile]() for _ in range(args.requests)])
        pstats.Stats(profiler).sort_stats("cumulative").print_stats(40)
    else:
        ms = {kind: statistics.median(cpu_ms(kinds[kind], args.requests) for _ in range(args.blocks))
              for kind in (*KINDS, "healthz", "short")}
        print(f"CPU ms per request, medians of {args.blocks} blocks of {args.requests} "
              f"(load average {os.getloadavg()[0]:.1f}): " + ", ".join(f"{k} {v:.2f}" for k, v in ms.items())
              + f"; load-test mix {mix(ms):.2f}")


if __name__ == "__main__":
    main()
