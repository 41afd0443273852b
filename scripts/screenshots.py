"""Capture the user guide's screenshots (docs/images/guide-*.png) from a fresh Tokenforge.

Reproducible: it starts ``tokenforge serve`` with its data in a temporary folder, signs up, adds
content the way a user does (GPT-2's files through the import form, two corpora through the upload
form, a small BPE trained through the training form, a leaderboard built with its form), then
drives Debian's Chromium through Playwright to the encode, compare, chat and leaderboard pages and
saves each page's relevant part, about 1000 px wide. Nothing is downloaded: the GPT-2 files and the
corpora come from ``--data`` (the shared cs336 fixtures), and the OpenAI presets are added only when
``--presets`` names a folder written by ``tokenforge presets install --dir``.

    .venv/bin/python scripts/screenshots.py [--out docs/images] [--data ../shared/data/cs336] [--presets DIR]

Left out: the guide's text (docs/guide.md) and any check of what the pages show (the browser
tests do that).
"""

from __future__ import annotations

import argparse
import os
import re
import signal
import socket
import subprocess
import sys
import tempfile
import time
import urllib.error
import urllib.request
from pathlib import Path
from typing import Any

REPO = Path(__file__).resolve().parents[1]
CHROMIUM = "/usr/bin/chromium"
CHROMIUM_ARGS = ["--headless", "--no-sandbox", "--disable-gpu", "--disable-background-networking",
                 "--disable-component-update", "--disable-sync"]
WIDTH = 1000  # CSS pixels of the viewport, and so of every picture
MAX_HEIGHT = 1100  # a taller region is cut: the guide shows the top of a page, not all of it
EMAIL, PASSWORD = "guide@example.com", "correct horse battery staple"
# Latin only: Debian's chromium has no CJK or emoji font unless one is installed, and boxes teach nothing.
ENCODE_TEXT = "Tokenizers split text into tokens. Numbers like 12,345, code like x += 1, café and <|endoftext|> too."
COMPARE_TEXT = ("Once upon a time, a little robot named Tokenforge counted words.\n"
                "It found 1,234 tokens in GPT-2 and fewer in its own vocabulary.\n"
                "def count(text): return len(text.split())")
CHAT = [("system", "You are a concise assistant."),
        ("user", "How many tokens does this chat cost?"),
        ("assistant", "Fewer than you would think: the template adds a few.")]
SPECIALS = "<|endoftext|>\n<|im_start|>\n<|im_end|>"


def _free_port() -> int:
    with socket.socket() as sock:
        sock.bind(("127.0.0.1", 0))
        return int(sock.getsockname()[1])


def start_server(data_dir: Path, log: Path) -> tuple[subprocess.Popen[bytes], str]:
    """``tokenforge serve`` on a free local port, its data in ``data_dir``; returns it and its URL."""
    port = _free_port()
    env = {**os.environ, "TOKENFORGE_DATA_DIR": str(data_dir), "PYTHONPATH": str(REPO)}
    env.pop("DATABASE_URL", None)
    with log.open("wb") as out:
        process = subprocess.Popen([sys.executable, "-m", "webapp.cli", "serve", "--host", "127.0.0.1",
                                    "--port", str(port), "--workers", "1", "--threads", "4"],
                                   cwd=data_dir, env=env, stdout=out, stderr=subprocess.STDOUT)
    url = f"http://127.0.0.1:{port}/"
    deadline = time.monotonic() + 90
    while True:
        try:
            with urllib.request.urlopen(url + "healthz", timeout=2) as response:
                if response.status == 200:
                    return process, url
        except (urllib.error.URLError, ConnectionError):
            pass
        if process.poll() is not None or time.monotonic() > deadline:
            process.kill()
            raise SystemExit(f"tokenforge serve did not start; its log:\n{log.read_text()}")
        time.sleep(0.2)


def install_presets(data_dir: Path, folder: Path) -> None:
    """Register the OpenAI presets from a folder of verified tables (no download)."""
    env = {**os.environ, "TOKENFORGE_DATA_DIR": str(data_dir), "PYTHONPATH": str(REPO)}
    env.pop("DATABASE_URL", None)
    done = subprocess.run([sys.executable, "-m", "webapp.cli", "presets", "install", "--from", str(folder)],
                          cwd=data_dir, env=env, capture_output=True, text=True, timeout=300)
    if done.returncode != 0:
        raise SystemExit(f"tokenforge presets install --from {folder} failed:\n{done.stderr or done.stdout}")


def shoot(page: Any, path: Path, selector: str = "main", *, top: str | None = None) -> None:
    """Save the region of ``selector`` (from ``top``'s upper edge, if given), at most MAX_HEIGHT tall."""
    box = page.locator(selector).first.bounding_box()
    if top is not None:
        upper = page.locator(top).first.bounding_box()
        box = {**box, "height": box["y"] + box["height"] - upper["y"], "y": upper["y"]}
    scrolled = page.evaluate("[window.scrollX, window.scrollY]")  # boxes are in the viewport, clips in the page
    clip = {"x": box["x"] + scrolled[0], "y": box["y"] + scrolled[1], "width": min(box["width"], WIDTH),
            "height": min(box["height"], MAX_HEIGHT)}
    page.screenshot(path=str(path), clip=clip, full_page=True, animations="disabled")
    print(f"wrote {path.relative_to(REPO) if path.is_relative_to(REPO) else path} ({path.stat().st_size // 1024} KiB)")


def sign_up(page: Any, url: str) -> None:
    page.goto(url + "signup")
    page.fill('input[name="email"]', EMAIL)
    page.fill('input[name="name"]', "Ada")
    page.fill('input[name="password"]', PASSWORD)
    page.fill('input[name="confirm"]', PASSWORD)
    page.locator('form button[type="submit"]').click()
    page.wait_for_url(re.compile(r"/tokenizers/?$"))


def import_gpt2(page: Any, url: str, data: Path) -> int:
    page.goto(url + "import")
    page.get_by_test_id("kind-gpt2").check()
    page.fill('input[name="name"]', "GPT-2")
    page.set_input_files('input[name="vocab"]', str(data / "gpt2_vocab.json"))
    page.set_input_files('input[name="merges"]', str(data / "gpt2_merges.txt"))
    page.select_option('select[name="pattern"]', "gpt2")
    page.get_by_test_id("special-tokens").fill(SPECIALS)
    page.get_by_test_id("import-submit").click()
    page.wait_for_url(re.compile(r"/tokenizers/\d+/play$"), timeout=120_000)
    return int(page.url.split("/")[-2])


def upload_corpora(page: Any, url: str, files: list[Path]) -> None:
    page.goto(url + "corpora/")
    page.set_input_files('input[name="files"]', [str(f) for f in files])
    page.get_by_role("button", name="Upload").click()
    page.wait_for_load_state("networkidle")


def train_bpe(page: Any, url: str, corpus: str, vocab: int) -> int:
    """Train a byte-level BPE through the form and wait for the job; returns the tokenizer's id."""
    page.goto(url + "train")
    page.get_by_label(corpus).check()
    with page.expect_response(re.compile(r"/train\?algorithm=")):
        page.select_option('select[name="algorithm"]', "bpe")
    page.fill('input[name="name"]', f"English BPE {vocab // 1000}k")
    page.fill('input[name="opt-vocab_size"]', str(vocab))
    page.get_by_role("button", name="Start training").click()
    page.wait_for_url(re.compile(r"/jobs/\d+$"))
    link = page.locator("p.done a").first
    link.wait_for(timeout=600_000)
    link.click()
    page.wait_for_url(re.compile(r"/tokenizers/\d+/play$"))
    return int(page.url.split("/")[-2])


def encode_page(page: Any, url: str, gpt2: int, out: Path) -> None:
    page.goto(f"{url}tokenizers/{gpt2}/play")
    box = page.get_by_test_id("text")
    box.fill(ENCODE_TEXT)
    page.get_by_test_id("count-tokens").wait_for()
    page.wait_for_load_state("networkidle")
    page.locator(".spans .tok").nth(3).click()
    page.get_by_test_id("inspector-id").wait_for()
    shoot(page, out / "guide-encode.png", ".play-grid")


def compare_page(page: Any, url: str, ids: list[int], out: Path) -> None:
    query = "&".join(f"ids={i}" for i in ids)
    page.goto(f"{url}compare?{query}&mark=counts&text={urllib.request.quote(COMPARE_TEXT)}")
    page.get_by_test_id("compare-summary").wait_for()
    shoot(page, out / "guide-compare.png", "#comparison", top='label[for="compare-text"]')


def chat_page(page: Any, url: str, gpt2: int, out: Path) -> None:
    page.goto(f"{url}tokenizers/{gpt2}/chat")
    page.select_option('[data-testid="chat-template"]', "chatml")
    rows = page.get_by_test_id("chat-message")
    for row, (role, content) in enumerate(CHAT):
        rows.nth(row).get_by_test_id("chat-role").fill(role)
        rows.nth(row).get_by_test_id("chat-content").fill(content)
    rows.nth(len(CHAT) - 1).get_by_test_id("chat-content").press("End")
    page.get_by_test_id("chat-total").wait_for()
    page.wait_for_load_state("networkidle")
    shoot(page, out / "guide-chat.png")


def leaderboard_page(page: Any, url: str, tokenizers: list[int], corpora: list[str], out: Path) -> None:
    page.goto(url + "leaderboards")
    page.fill('input[name="name"]', "English and German")
    for tokenizer_id in tokenizers:
        page.locator(f'input[name="tokenizer_ids"][value="{tokenizer_id}"]').check()
    for name in corpora:
        page.get_by_label(name).check()
    page.get_by_role("button", name="Build the leaderboard").click()
    page.wait_for_url(re.compile(r"/leaderboards/\d+$"))
    page.locator('[data-testid="board"][data-finished="yes"]').wait_for(timeout=600_000)
    shoot(page, out / "guide-leaderboard.png")


def main(argv: list[str] | None = None) -> int:
    parser = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    parser.add_argument("--out", type=Path, default=REPO / "docs" / "images", help="where the PNGs go")
    parser.add_argument("--data", type=Path, default=REPO.parent / "shared" / "data" / "cs336",
                        help="folder with gpt2_vocab.json, gpt2_merges.txt, corpus.en and german.txt")
    parser.add_argument("--presets", type=Path, help="a folder written by 'tokenforge presets install --dir'")
    args = parser.parse_args(argv)
    needed = ["gpt2_vocab.json", "gpt2_merges.txt", "corpus.en", "german.txt"]
    missing = [name for name in needed if not (args.data / name).is_file()]
    if missing:
        parser.error(f"{args.data} lacks {', '.join(missing)}; pass --data with the cs336 fixtures")
    if not Path(CHROMIUM).exists():
        parser.error(f"{CHROMIUM} is missing; install Debian's chromium package")
    from playwright.sync_api import sync_playwright

    args.out.mkdir(parents=True, exist_ok=True)
    with tempfile.TemporaryDirectory(prefix="tokenforge-screens-") as temp:
        data_dir = Path(temp)
        process, url = start_server(data_dir, data_dir / "serve.log")
        try:
            if args.presets is not None:
                install_presets(data_dir, args.presets)
            with sync_playwright() as playwright:
                browser = playwright.chromium.launch(executable_path=CHROMIUM, args=CHROMIUM_ARGS, headless=True)
                page = browser.new_page(viewport={"width": WIDTH, "height": 900}, color_scheme="light")
                page.set_default_timeout(60_000)
                sign_up(page, url)
                gpt2 = import_gpt2(page, url, args.data)
                # The upload form takes .txt and .jsonl: give corpus.en its plain name in the temp folder.
                english = data_dir / "english.txt"
                english.write_bytes((args.data / "corpus.en").read_bytes())
                upload_corpora(page, url, [english, args.data / "german.txt"])
                bpe = train_bpe(page, url, "english.txt", 2000)
                compared = [gpt2, bpe]
                if args.presets is not None:
                    page.goto(url + "tokenizers")
                    link = page.get_by_role("link", name="GPT-4o (o200k_base)", exact=True)
                    compared.append(int(link.get_attribute("href").split("/")[2]))
                encode_page(page, url, gpt2, args.out)
                # Two columns read best: GPT-2 against GPT-4o when the presets are there, else our BPE.
                compare_page(page, url, [gpt2, compared[-1]], args.out)
                chat_page(page, url, gpt2, args.out)
                leaderboard_page(page, url, compared, ["english.txt", "german.txt"], args.out)
                browser.close()
        finally:
            process.send_signal(signal.SIGTERM)
            try:
                process.wait(timeout=60)
            except subprocess.TimeoutExpired:
                process.kill()
    return 0


if __name__ == "__main__":
    raise SystemExit(main())
