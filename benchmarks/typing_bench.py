"""Typing latency on the encode page: from a keystroke's input event to its spans on screen.

It starts its own ``tokenforge serve`` (1 process, 4 threads, as the browser tests do) in a
temporary data folder, signs up, imports GPT-2 (built from ``../shared/data/cs336``'s
``gpt2_vocab.json``/``gpt2_merges.txt``, 50,257 ids) through the import form, and opens its
encode page in Debian's Chromium through Playwright.

For each text size (``--kb``, default 2 and 20 KB of ``--text``, its newlines made spaces so the
page's character count names the text exactly) it fills the box, waits for its spans, then types
``--keys`` characters at the end, one at a time: each keystroke's time runs from its ``input``
event (``event.timeStamp``) to the first frame after the result block shows that text's
character count (a ``MutationObserver`` sees the swap, then ``requestAnimationFrame`` and a task
after it, so the frame is painted); it also notes when htmx sent the request and when the answer
came in. The next key is pressed once the last one is painted. It
then types a burst of the same number of keys ``--burst-ms`` apart (a fast typist) and times the
last key to the spans of the final text, which is what a typist waits for.

The page opens at Playwright's 1280x720, where the spans box starts below the fold (the
figures in docs/benchmarks.md); ``--viewport 1280x1500`` shows the text box and the spans box
together, as a user watching the tokens would have them.

Prints p50/p95/max per size and a Markdown row for ``docs/benchmarks.md``; any console error
on the page is reported (a replaced request must not log one). Timings depend on the machine:
run it on a quiet one and say the load average.

    python benchmarks/typing_bench.py                 # 2 and 20 KB of corpus.en, 20 keys each
    python benchmarks/typing_bench.py --kb 2 --keys 40 --text FILE
"""

from __future__ import annotations

import argparse
import os
import re
import statistics
import sys
import tempfile
from pathlib import Path
from typing import Any

ROOT = Path(__file__).resolve().parents[1]
sys.path.insert(0, str(ROOT))

from tests.live import EMAIL, PASSWORD, Client, LiveApp  # noqa: E402
from tests.shared_data import CS336  # noqa: E402
from tests.webapp.playground_samples import _gpt2  # noqa: E402

CHROMIUM = "/usr/bin/chromium"
CHROMIUM_ARGS = ["--headless", "--no-sandbox", "--disable-gpu", "--disable-background-networking",
                 "--disable-component-update", "--disable-sync"]
KEYS = "the quick brown fox jumps over a lazy dog "

# Installed once per page: the time of each input event, and the frame after the block that
# shows the text's length is swapped in. ``window.__typing.wait(n)`` resolves with the delay (ms)
# from the latest input event to that frame, once the counts say ``n`` characters.
PROBE = """() => {
  const area = document.querySelector('[data-testid="text"]');
  const probe = window.__typing = {last: 0, want: -1, resolve: null};
  probe.phases = {};
  area.addEventListener('input', (event) => { probe.last = event.timeStamp; probe.phases = {}; });
  for (const name of ['beforeSend', 'beforeSwap', 'afterSwap']) {
    document.body.addEventListener('htmx:' + name, () => { probe.phases[name] = performance.now() - probe.last; });
  }
  const shown = () => {
    const count = document.querySelector('[data-testid="count-chars"]');
    return count ? parseInt(count.textContent.replace(/,/g, ''), 10) : -1;
  };
  const check = () => {
    if (probe.resolve && shown() === probe.want) {
      const done = probe.resolve, start = probe.last;
      probe.resolve = null;
      const phases = Object.assign({}, probe.phases);
      requestAnimationFrame(() => setTimeout(() => done(Object.assign(phases, {painted: performance.now() - start})), 0));
    }
  };
  new MutationObserver(check).observe(document.querySelector('.play-grid'), {childList: true, subtree: true, characterData: true});
  probe.wait = (n) => new Promise((resolve) => { probe.want = n; probe.resolve = resolve; check(); });
}"""  # noqa: E501 - the script's text is sent as it is


def text_of(path: Path, kb: int) -> str:
    """``kb`` KiB of ``path`` as one line (ASCII-safe count: newlines become spaces)."""
    raw = path.read_bytes()
    while len(raw) < kb * 1024:
        raw += b" " + raw
    text = raw[: kb * 1024].decode("utf-8", errors="ignore")
    return re.sub(r"\s", " ", text)


def import_gpt2(page: Any, base: str, folder: Path) -> int:
    """Import GPT-2 as a ``tokenizer.json`` through the import form; its id."""
    path = folder / "gpt2.json"
    path.write_text(_gpt2().to_json(), encoding="utf-8")
    page.goto(base + "import")
    page.get_by_test_id("kind-tokenizer_json").check()
    page.fill('input[name="name"]', "GPT-2")
    page.set_input_files('input[name="file"]', str(path))
    page.get_by_test_id("import-submit").click()
    page.wait_for_url(re.compile(r"/tokenizers/\d+/play$"), timeout=120_000)
    return int(page.url.split("/")[-2])


def chars(text: str) -> int:
    """The page's character count of ``text``: code points, as the server counts them."""
    return len(text)


def measure(page: Any, base: str, ref: int, text: str, keys: int, burst_ms: int) -> dict[str, Any]:
    """Per-key delays (ms) for ``keys`` keystrokes one at a time, and a burst's last key."""
    page.goto(f"{base}tokenizers/{ref}/play")
    page.wait_for_load_state("load")
    page.evaluate(PROBE)
    box = page.get_by_test_id("text")
    box.fill(text)
    page.evaluate("(n) => window.__typing.wait(n)", chars(text))
    page.evaluate("() => { const a = document.querySelector('[data-testid=\"text\"]');"
                  " a.focus(); a.setSelectionRange(a.value.length, a.value.length); }")
    typed = text
    delays: list[dict[str, float]] = []
    for i in range(keys + 2):  # the first two warm the connection and caches up, not counted
        key = KEYS[i % len(KEYS)]
        page.keyboard.type(key)
        typed += key
        delay = page.evaluate("(n) => window.__typing.wait(n)", chars(typed))
        if i >= 2:
            delays.append(delay)
    for i in range(keys):
        key = KEYS[i % len(KEYS)]
        page.keyboard.type(key)
        typed += key
        if i < keys - 1:
            page.wait_for_timeout(burst_ms)
    burst = page.evaluate("(n) => window.__typing.wait(n)", chars(typed))["painted"]
    return {"delays": delays, "burst_last": burst}


def summary(delays: list[dict[str, float]], phase: str = "painted") -> dict[str, float]:
    ordered = sorted(d.get(phase, float("nan")) for d in delays)
    p95 = ordered[min(len(ordered) - 1, round(0.95 * (len(ordered) - 1)))]
    return {"p50": statistics.median(ordered), "p95": p95, "max": ordered[-1]}


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--text", type=Path, default=CS336 / "corpus.en")
    parser.add_argument("--kb", type=int, nargs="+", default=[2, 20])
    parser.add_argument("--keys", type=int, default=20)
    parser.add_argument("--burst-ms", type=int, default=40, help="between the keys of the burst")
    parser.add_argument("--viewport", default="1280x720", help="the page's width x height in CSS pixels")
    args = parser.parse_args()
    if not (CS336 / "gpt2_vocab.json").is_file() or not Path(CHROMIUM).exists():
        sys.exit(f"Needs GPT-2's files in {CS336} and {CHROMIUM}.")
    from playwright.sync_api import sync_playwright

    errors: list[str] = []
    rows = {}
    with tempfile.TemporaryDirectory() as tmp:
        server = LiveApp(Path(tmp) / "data", workers=1, threads=4, job_worker=False)
        server.start()
        try:
            Client(server.url).signup()
            with sync_playwright() as play:
                browser = play.chromium.launch(executable_path=CHROMIUM, args=CHROMIUM_ARGS, headless=True)
                width, height = map(int, args.viewport.split("x"))
                page = browser.new_page(viewport={"width": width, "height": height})
                page.on("console", lambda m: errors.append(m.text) if m.type == "error" else None)
                page.on("pageerror", lambda e: errors.append(str(e)))
                page.goto(server.url + "login")
                page.fill('input[name="email"]', EMAIL)
                page.fill('input[name="password"]', PASSWORD)
                page.get_by_role("button", name="Log in").click()
                page.wait_for_url(re.compile(r"/tokenizers/?$"))
                ref = import_gpt2(page, server.url, Path(tmp))
                for kb in args.kb:
                    rows[kb] = measure(page, server.url, ref, text_of(args.text, kb), args.keys, args.burst_ms)
                browser.close()
        finally:
            server.stop()
    loadavg = ", ".join(f"{x:.2f}" for x in os.getloadavg())
    print(f"GPT-2 (50,257 ids), {args.keys} keys per size, viewport {args.viewport},"
          f" load average {loadavg} (at the end)")
    print(f"  {'text':>6s} {'p50':>7s} {'p95':>7s} {'max':>7s} {'burst, last key':>16s}   (ms)"
          "   p50 of: sent, answer in")
    for kb, row in rows.items():
        s = summary(row["delays"])
        phases = ", ".join(f"{summary(row['delays'], p)['p50']:.1f}" for p in ("beforeSend", "beforeSwap"))
        print(f"  {kb:>4d}KB {s['p50']:7.1f} {s['p95']:7.1f} {s['max']:7.1f} {row['burst_last']:16.1f}   {phases}")
    for kb, row in rows.items():
        s = summary(row["delays"])
        print(f"| {kb} KB | {s['p50']:.0f} ms | {s['p95']:.0f} ms | {s['max']:.0f} ms | {row['burst_last']:.0f} ms |")
    print(f"console errors: {len(errors)}" + "".join(f"\n  {e}" for e in errors[:10]))


if __name__ == "__main__":
    main()
