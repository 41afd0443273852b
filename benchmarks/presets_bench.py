"""How fast the presets load and encode, and how much memory a web process holding them needs.

    python benchmarks/presets_bench.py --presets DIR [--work /tmp/presets-bench] [--runs 3]

``DIR`` is a folder written by ``tokenforge presets install --dir`` (the OpenAI rank tables
``NAME.js`` and the open models' files in ``open/NAME/tokenizer.json``). Each preset is measured
on the document the web app stores and parses (``webapp/tokenizers/presets.py``: the engine's
``tokenizer.json``, built from the table or the model's file), written once into ``--work``.
Hugging Face ``tokenizers`` reads the same documents and is the anchor.

1. **Load**: the whole process ``python -c "Tokenizer.from_json(open(F).read())"`` against the whole process
   ``python -c "Tokenizer.from_file(F)"``, run in turn, median of ``--runs`` (start-up included).
2. **First encode** and **warm encode**, in a fresh process: the seconds from reading the file to
   the ids of 2 KB of text (what the first request on a cold preset waits for), once parsing the
   document and once reading its snapshot (``NAME.npz``, what the web app reads: ``presets
   install`` writes one for each preset, ``webapp/tokenizers/snapshots.py``), in turn; then the
   median of ``--warm`` encodes of the same 2 KB (the tokenizer's piece cache warm, as in a
   running server).
3. **Memory**: one process that uses every preset once, in catalogue order, through a cache that
   evicts like the web app's (``webapp/tokenizers/loaded.py``: at most ``CACHE_SIZE`` entries,
   ``estimated_bytes`` per entry, the default budget or ``TOKENFORGE_TOKENIZER_CACHE_BYTES``,
   room made before loading), each loaded from its snapshot. It prints its peak RSS, and each
   preset's RSS in a fresh process beside the estimate. Linux only (``/proc``). The peak is the
   process's own ``VmHWM``: ``ru_maxrss`` would also count the parent's memory at the fork (Linux
   keeps the larger of the two across ``exec``), and this script's parent has just parsed every
   document when it writes the snapshots.

Leaves out the database and Flask around the cache: they add the same few tens of MB to any
process. Timings go to ``docs/benchmarks.md`` by hand; nothing here asserts a target.
"""

from __future__ import annotations

import argparse
import json
import statistics
import subprocess
import sys
import time
from pathlib import Path

from engine.presets import OPEN_MODELS, TIKTOKEN_ENCODINGS

ROOT = Path(__file__).resolve().parent.parent
OPENAI = tuple(TIKTOKEN_ENCODINGS)  # r50k_base ... o200k_base
OPEN = tuple(OPEN_MODELS)  # llama2 ... command_r_plus
# 2 KB of mixed text: prose, code, numbers, accents, CJK and emoji, as a playground request has.
SAMPLE = ("The quick brown fox jumps over the lazy dog; naïve café owners paid $1,234.56 for 42 crêpes. "
          "def tokenize(text: str) -> list[int]:\n    return [ord(c) for c in text]  # 日本語のテキスト 🙂\n"
          "Всеобщая декларация прав человека, Universal Declaration of Human Rights (1948). ") * 8
SAMPLE = SAMPLE.encode("utf-8")[:2048].decode("utf-8", "ignore")

OURS_LOAD = "from engine import Tokenizer; Tokenizer.from_json(open({path!r}, encoding='utf-8').read())"
HF_LOAD = "import tokenizers; tokenizers.Tokenizer.from_file({path!r})"
# One fresh process: the first encode (load included) and the warm encodes, printed as JSON.
ENCODE = """
import json, statistics, sys, time
t0 = time.perf_counter()
{load}
t1 = time.perf_counter()
ids = tok.encode({text!r})
t2 = time.perf_counter()
warm = []
for _ in range({warm}):
    start = time.perf_counter(); tok.encode({text!r}); warm.append(time.perf_counter() - start)
print(json.dumps({{"load": t1 - t0, "first": t2 - t0, "encode": t2 - t1, "warm": statistics.median(warm),
                  "tokens": len(ids)}}))
"""
FROM_DOCUMENT = "from engine import Tokenizer; tok = Tokenizer.from_json(open({path!r}, encoding='utf-8').read())"
FROM_SNAPSHOT = "from engine.snapshot import load_snapshot; tok = load_snapshot(open({path!r}, 'rb'))"
# One fresh process: the RSS a preset adds (load and one encode, the document freed).
ONE_RSS = """
import gc, json
def rss(): return int(open('/proc/self/statm').read().split()[1]) * 4096
from engine.snapshot import load_snapshot
from webapp.tokenizers.loaded import estimated_bytes
gc.collect(); before = rss()
tok = load_snapshot(open({path!r}, 'rb')); tok.encode({text!r}); gc.collect()
print(json.dumps({{"held": rss() - before, "estimate": estimated_bytes(tok.vocab_size), "vocab_size": tok.vocab_size}}))
"""
# Every preset once through a cache that evicts as loaded.py's does.
ALL_RSS = """
import json, sys
from collections import OrderedDict
from engine.snapshot import load_snapshot
from webapp.tokenizers.loaded import CACHE_SIZE, cache_budget, estimated_bytes
def rss(): return int(open('/proc/self/statm').read().split()[1]) * 4096
def peak(): return int(next(l for l in open('/proc/self/status') if l.startswith('VmHWM:')).split()[1]) * 1024
cache, held, budget, after = OrderedDict(), 0, cache_budget(), {{}}
for name, path in {paths!r}:
    size = estimated_bytes({sizes!r}[name])  # the row's vocab_size: known before parsing
    while cache and (len(cache) >= CACHE_SIZE or held + size > budget):
        held -= cache.popitem(last=False)[1][1]
    tok = load_snapshot(open(path, 'rb'))
    tok.encode({text!r})
    cache[name] = (tok, size); held += size; del tok
    after[name] = rss()
print(json.dumps({{"budget": budget, "after": after, "kept": list(cache),
                  "peak": peak()}}))
"""


def write_documents(presets: Path, work: Path) -> dict[str, Path]:
    """The document the web app stores for each preset, and its snapshot (``NAME.npz``, as
    ``presets install`` writes it: ``webapp/tokenizers/snapshots.py``), written once into ``work``."""
    sys.path.insert(0, str(ROOT))
    from engine.formats.js_tiktoken import parse_rank_table
    from engine.formats.tiktoken import build_tiktoken
    from engine.presets import TIKTOKEN_ENCODINGS
    from engine.snapshot import snapshot_of
    from engine.tokenizer import Tokenizer

    work.mkdir(parents=True, exist_ok=True)
    paths: dict[str, Path] = {}
    for name in (*OPENAI, *OPEN):
        target = paths[name] = work / f"{name}.json"
        if target.exists():
            continue
        if name in OPENAI:
            encoding = TIKTOKEN_ENCODINGS[name]
            table = parse_rank_table((presets / f"{name}.js").read_text(encoding="utf-8"))
            tokenizer = build_tiktoken(table.entries, pattern=encoding.pattern,
                                       special_tokens=encoding.special_tokens, name=encoding.title)
        else:
            tokenizer = Tokenizer.from_json((presets / "open" / name / "tokenizer.json").read_text(encoding="utf-8"))
        target.write_text(tokenizer.to_json(), encoding="utf-8")
    for name, target in paths.items():
        if not target.with_suffix(".npz").exists():
            target.with_suffix(".npz").write_bytes(
                snapshot_of(Tokenizer.from_json(target.read_text(encoding="utf-8"))) or b"")
    return paths


def run_python(code: str) -> tuple[float, str]:
    """Wall seconds of a whole ``python -c code`` process, and what it printed."""
    start = time.perf_counter()
    done = subprocess.run([sys.executable, "-c", code], cwd=ROOT, capture_output=True, text=True, check=True)
    return time.perf_counter() - start, done.stdout


def load_times(path: Path, runs: int) -> tuple[float, float, float]:
    """Median whole-process seconds of ours and HF's load, run in turn, and the median ratio."""
    ours, anchor = [], []
    for _ in range(runs):
        ours.append(run_python(OURS_LOAD.format(path=str(path)))[0])
        anchor.append(run_python(HF_LOAD.format(path=str(path)))[0])
    ratio = statistics.median(a / b for a, b in zip(ours, anchor))
    return statistics.median(ours), statistics.median(anchor), ratio


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    parser.add_argument("--presets", type=Path, required=True, help="a folder written by `presets install --dir`")
    parser.add_argument("--work", type=Path, default=Path("/tmp/presets-bench"), help="where the documents go")
    parser.add_argument("--runs", type=int, default=3, help="processes per measurement (median)")
    parser.add_argument("--warm", type=int, default=51, help="warm encodes per preset (median)")
    parser.add_argument("--only", nargs="*", default=None, help="preset names (default: every preset)")
    parser.add_argument("--skip-load", action="store_true", help="skip the whole-process load timings")
    args = parser.parse_args()
    paths = write_documents(args.presets, args.work)
    names = args.only or list(paths)
    sizes: dict[str, int] = {}
    print("| preset | parse, ours | parse, HF | ratio | first encode, parsed | first encode, from the snapshot "
          "| warm 2 KB encode | RSS held | estimate |")
    print("|---|---|---|---|---|---|---|---|---|")
    for name in names:
        path = paths[name]
        load = (float("nan"),) * 3 if args.skip_load else load_times(path, args.runs)
        parsed, snapshot = [], []
        for _ in range(args.runs):  # in turn
            for loader, out in ((FROM_DOCUMENT, parsed), (FROM_SNAPSHOT, snapshot)):
                load_code = loader.format(path=str(path if loader is FROM_DOCUMENT else path.with_suffix(".npz")))
                out.append(json.loads(run_python(ENCODE.format(load=load_code, text=SAMPLE, warm=args.warm))[1]))
        first = statistics.median(t["first"] for t in parsed)
        first_snapshot = statistics.median(t["first"] for t in snapshot)
        warm = statistics.median(t["warm"] for t in snapshot)
        held = json.loads(run_python(ONE_RSS.format(path=str(path.with_suffix(".npz")), text=SAMPLE))[1])
        sizes[name] = held["vocab_size"]
        print(f"| {name} | {load[0]:.2f} s | {load[1]:.2f} s | {load[2]:.2f}× | {first:.2f} s | "
              f"{first_snapshot:.2f} s | "
              f"{warm * 1000:.1f} ms | {held['held'] / 2**20:.0f} MiB | {held['estimate'] / 2**20:.0f} MiB |",
              flush=True)
    if set(names) == set(paths):
        report = json.loads(run_python(ALL_RSS.format(paths=[(n, str(paths[n].with_suffix(".npz"))) for n in names],
                                                      sizes=sizes, text=SAMPLE))[1])
        print(f"\nEvery preset once, budget {report['budget'] / 2**20:.0f} MiB: peak RSS "
              f"{report['peak'] / 2**20:.0f} MiB; kept at the end: {', '.join(report['kept'])}")
        print("RSS after each: " + ", ".join(f"{n} {v / 2**20:.0f}" for n, v in report["after"].items()) + " MiB")


if __name__ == "__main__":
    main()
