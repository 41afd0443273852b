"""Time the encode view on the server: a 10 KB input, encoded, grouped and rendered to HTML.

Measures the stages separately and the whole htmx request, each as the median of ``--runs``
runs after a warm-up (the tokenizer is parsed and its pre-token cache warmed once, as in a
running server): ``encode`` (``encode_with_offsets``), ``spans`` (grapheme grouping),
``display`` (both, as the view calls them), ``render`` (the result block: spans and ids HTML
and the Jinja around them), and ``request`` (the Flask test client posting the form as a
logged-in owner: session, database lookup, form parsing and all). The target is a median under
50 ms wall-clock for the request. The machine the figures come from is shared, so each stage
also shows this thread's CPU time, which other jobs inflate much less, and the load average.

    python benchmarks/bench_render.py                      # GPT-2 from ../shared/data/cs336
    python benchmarks/bench_render.py --text FILE --kb 10
    python benchmarks/bench_render.py --profile            # and where the request's time goes
"""

from __future__ import annotations

import argparse
import cProfile
import os
import pstats
import statistics
import sys
import tempfile
import time
from collections.abc import Callable
from dataclasses import dataclass
from pathlib import Path

from flask_login import login_user

ROOT = Path(__file__).resolve().parents[1]
sys.path.insert(0, str(ROOT))

from tests.shared_data import CS336  # noqa: E402
from tests.webapp.conftest import login_as, make_app  # noqa: E402
from tests.webapp.playground_samples import _gpt2, store  # noqa: E402
from webapp.playground.encode_page import encode_context  # noqa: E402
from webapp.playground.encode_view import encode_for_display  # noqa: E402
from webapp.playground.spans import group_spans  # noqa: E402
from webapp.store import db  # noqa: E402
from webapp.store.models import User  # noqa: E402
from webapp.tokenizers.loaded import load  # noqa: E402
from webapp.web.htmx import render_block  # noqa: E402


@dataclass(frozen=True, slots=True)
class Timing:
    """One stage: median wall-clock and CPU time (this thread's, less hurt by other jobs), wall p90."""

    wall: float
    cpu: float
    wall_p90: float


def timed(fn: Callable[[], object], runs: int) -> Timing:
    walls, cpus = [], []
    for _ in range(runs):
        start, start_cpu = time.perf_counter(), time.thread_time()
        fn()
        cpus.append((time.thread_time() - start_cpu) * 1000)
        walls.append((time.perf_counter() - start) * 1000)
    walls.sort()
    return Timing(statistics.median(walls), statistics.median(cpus), walls[min(len(walls) - 1, int(len(walls) * 0.9))])


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--text", type=Path, default=CS336 / "corpus.en")
    parser.add_argument("--kb", type=int, default=10)
    parser.add_argument("--runs", type=int, default=21)
    parser.add_argument("--profile", action="store_true", help="also print a cProfile of the requests")
    args = parser.parse_args()
    if not (CS336 / "gpt2_vocab.json").is_file():
        sys.exit(f"The GPT-2 files (gpt2_vocab.json, gpt2_merges.txt) are not in {CS336}.")
    raw = args.text.read_bytes()[: args.kb * 1024]
    text = raw.decode("utf-8", errors="ignore")
    tok = _gpt2()
    with tempfile.TemporaryDirectory() as tmp:
        app = make_app(Path(tmp), f"sqlite:///{tmp}/bench.sqlite3")
        ref = store(app, tok)
        client = login_as(app.test_client(), 1)  # Alice, the owner: the encode route needs a login
        post = lambda: client.post(f"/tokenizers/{ref}/encode", data={"text": text, "allowed_special": "on"},  # noqa: E731
                                   headers={"HX-Request": "true"})
        assert post().status_code == 200  # warm-up: parse the tokenizer once, fill the caches
        form = {"text": text, "allowed_special": "on"}
        with app.test_request_context(f"/tokenizers/{ref}/encode", method="POST", data=form):
            login_user(db.get_session().get(User, 1))
            loaded = load(ref)  # the tokenizer the request uses: parsed from the row, cached
            served = loaded.tokenizer
            spans = served.encode_with_offsets(text, allowed_special="all")
            context, _ = encode_context(loaded, text)  # the same context the view renders
            stages = {
                "encode": timed(lambda: served.encode_with_offsets(text, allowed_special="all"), args.runs),
                "spans": timed(lambda: group_spans(text, spans, served), args.runs),
                "display": timed(lambda: encode_for_display(served, text), args.runs),
                "render": timed(lambda: render_block("playground/play.html", "result", **context), args.runs),
            }
        stages["request"] = timed(post, args.runs)
        if args.profile:
            profiler = cProfile.Profile()
            profiler.runcall(lambda: [post() for _ in range(args.runs)])
            pstats.Stats(profiler).sort_stats("cumulative").print_stats(40)
        db.get_engine(app).dispose()
    loadavg = ", ".join(f"{x:.2f}" for x in os.getloadavg())
    print(f"input: {len(raw):,} bytes, {len(text):,} chars, {len(spans):,} tokens (GPT-2), {args.runs} runs")
    print(f"load average {loadavg} on {os.cpu_count()} CPUs (at the end)")
    print(f"  {'stage':8s} {'wall':>7s} {'cpu':>7s} {'wall p90':>9s}   (medians, ms)")
    for name, t in stages.items():
        print(f"  {name:8s} {t.wall:7.1f} {t.cpu:7.1f} {t.wall_p90:9.1f}")
    request = stages["request"].wall
    print(f"target: request < 50 ms (median wall) -> {'met' if request < 50 else 'NOT met'}")


if __name__ == "__main__":
    main()
