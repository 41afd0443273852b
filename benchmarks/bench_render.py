"""Time the encode view on the server: a 10 KB input, encoded, grouped and rendered to HTML.

Measures three stages separately and the whole htmx request, each as the median of ``--runs``
runs after a warm-up (the tokenizer is parsed and its pre-token cache warmed once, as in a
running server): ``encode`` (``encode_with_offsets``), ``spans`` (grapheme grouping), ``render``
(the Jinja result block), and ``request`` (the Flask test client posting the form, database
lookup included). The target is a median under 50 ms for the request.

    python benchmarks/bench_render.py                      # GPT-2 from ../shared/data/cs336
    python benchmarks/bench_render.py --text FILE --kb 10
"""

from __future__ import annotations

import argparse
import statistics
import sys
import tempfile
import time
from pathlib import Path

from flask_login import login_user

ROOT = Path(__file__).resolve().parents[1]
sys.path.insert(0, str(ROOT))

from tests.webapp.conftest import login_as, make_app  # noqa: E402
from tests.webapp.playground_samples import CS336, _gpt2, store  # noqa: E402
from webapp import db  # noqa: E402
from webapp.encode_view import encode_for_display  # noqa: E402
from webapp.htmx import render_block  # noqa: E402
from webapp.loaded import load  # noqa: E402
from webapp.models import User  # noqa: E402
from webapp.playground import encode_context  # noqa: E402
from webapp.spans import group_spans  # noqa: E402


def median_ms(fn, runs: int) -> float:
    times = []
    for _ in range(runs):
        start = time.perf_counter()
        fn()
        times.append((time.perf_counter() - start) * 1000)
    return statistics.median(times)


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--text", type=Path, default=CS336 / "corpus.en")
    parser.add_argument("--kb", type=int, default=10)
    parser.add_argument("--runs", type=int, default=21)
    args = parser.parse_args()
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
                "encode": median_ms(lambda: served.encode_with_offsets(text, allowed_special="all"), args.runs),
                "spans": median_ms(lambda: group_spans(text, spans, served), args.runs),
                "display": median_ms(lambda: encode_for_display(served, text), args.runs),
                "render": median_ms(lambda: render_block("playground/play.html", "result", **context), args.runs),
            }
        stages["request"] = median_ms(post, args.runs)
        db.get_engine(app).dispose()
    print(f"input: {len(raw):,} bytes, {len(text):,} chars, {len(spans):,} tokens (GPT-2), {args.runs} runs, medians")
    for name, ms in stages.items():
        print(f"  {name:8s} {ms:7.1f} ms")
    print(f"target: request < 50 ms -> {'met' if stages['request'] < 50 else 'NOT met'}")


if __name__ == "__main__":
    main()
