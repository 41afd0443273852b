"""Time the BPE merge loop alone (``bpe_merge.merge_words``) of this checkout against another's.

The merge loop is the serial heart of BPE training (issue 25's serial part, and a third of
sentencepiece-style BPE training, issue 21), but a whole ``tokenforge train`` process also
counts, writes and starts up, and on a shared 2-core machine the noise of those hides a 10%
change in the loop. So this script works in two steps:

    python benchmarks/merge_loop_bench.py capture /tmp/spm5.pkl -- --model bpe --level spm \\
        --vocab-size 8000 /tmp/corpora/en_5M.txt        # no -o needed: nothing is written
    python benchmarks/merge_loop_bench.py time /tmp/spm5.pkl --against ../main --rounds 9

``capture`` runs ``tokenforge train`` with the given arguments up to the merge loop and saves
that call's inputs (the distinct words, their counts and the options) instead of merging.
``time`` loads ``bpe_merge``, ``bpe_pairs``, ``bpe_step`` and ``packed`` of both checkouts side by side in
one process and runs the loop on the saved inputs, the two in turn (A B B A ...), by thread
CPU time, which other processes on the machine disturb less than wall time; it prints the
medians and their ratio, and fails if the two learn different merges.

The saved file is a pickle: load only files this script wrote. Timings belong here, never in
the tests.
"""

from __future__ import annotations

import argparse
import gc
import hashlib
import importlib
import os
import pickle
import statistics
import sys
import tempfile
import time
from pathlib import Path
from typing import Any

ROOT = Path(__file__).resolve().parents[1]
LOOP = ("bpe_merge", "bpe_pairs", "bpe_step", "packed")  # the loop and what it imports


class _Captured(Exception):
    """Raised in place of merging, once the merge loop's inputs are saved."""


def capture(out: Path, train_args: list[str]) -> None:
    """Run ``tokenforge train train_args`` up to its merge loop; save the loop's inputs to ``out``."""
    sys.path.insert(0, str(ROOT))
    from engine import cli
    from engine.trainers import bpe, bpe_spm

    def save(words: Any, freqs: Any, num_merges: int, **options: Any) -> None:
        options.pop("tick", None)
        if hasattr(words, "strings"):  # packed (byte-level BPE's bytes): saved as strings, which any checkout reads
            words, freqs = words.strings(), freqs.tolist()
        out.write_bytes(pickle.dumps((list(words), list(freqs), num_merges, options), protocol=5))
        raise _Captured

    bpe.merge_words = save  # both trainers call the loop by this name
    bpe_spm.merge_words = save
    with tempfile.TemporaryDirectory() as scratch:
        if not {"-o", "--output"} & set(train_args):  # nothing is written, but the command asks for a folder
            train_args = [*train_args, "-o", scratch]
        try:
            cli.main(["train", *train_args])
        except _Captured:
            print(f"saved the merge loop's inputs to {out}")
            return
    raise SystemExit("the command ended without reaching the merge loop (is it a BPE training?)")


def _load_loop(checkout: Path, name: str, scratch: Path) -> Any:
    """``bpe_merge`` of ``checkout`` as package ``name`` (the modules of :data:`LOOP` import one another relatively)."""
    package = scratch / name
    package.mkdir()
    (package / "__init__.py").write_text("")
    for module in LOOP:
        source = (checkout / "engine" / "trainers" / f"{module}.py").read_text(encoding="utf-8")
        (package / f"{module}.py").write_text(source.replace("from engine.trainers.", "from ."), encoding="utf-8")
    return importlib.import_module(f"{name}.bpe_merge")


def time_against(inputs: Path, other: Path, rounds: int) -> None:
    """Run both checkouts' loops on ``inputs`` in turn; print medians of thread CPU time and the ratio."""
    words, freqs, num_merges, options = pickle.loads(inputs.read_bytes())
    with tempfile.TemporaryDirectory() as scratch:
        sys.path.insert(0, scratch)
        loops = {"other": _load_loop(other, "loop_other", Path(scratch)),
                 "this": _load_loop(ROOT, "loop_this", Path(scratch))}
        seconds: dict[str, list[float]] = {name: [] for name in loops}
        digests = {}
        for r in range(rounds):
            for name in (("other", "this") if r % 2 == 0 else ("this", "other")):
                gc.collect()
                start = time.thread_time()
                merges, token_bytes = loops[name].merge_words(words, freqs, num_merges, **options)
                seconds[name].append(time.thread_time() - start)
                digests[name] = hashlib.sha256(repr((merges, token_bytes)).encode()).hexdigest()
    if digests["this"] != digests["other"]:
        raise SystemExit("the two checkouts learn different merges")
    this, that = statistics.median(seconds["this"]), statistics.median(seconds["other"])
    print(f"{inputs.name}: {len(merges)} merges over {len(words):,} words, {rounds} rounds, "
          f"load average {os.getloadavg()[0]:.1f}")
    print(f"  this checkout  {this:.3f} s (each: {' '.join(f'{s:.2f}' for s in seconds['this'])})")
    print(f"  {other}  {that:.3f} s (each: {' '.join(f'{s:.2f}' for s in seconds['other'])})")
    print(f"  ratio {this / that:.2f}x, identical merges")


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    commands = parser.add_subparsers(dest="command", required=True)
    save = commands.add_parser("capture", help="save the merge loop's inputs of a `tokenforge train` command")
    save.add_argument("out", type=Path)
    save.add_argument("train_args", nargs=argparse.REMAINDER, help="-- then the arguments of `tokenforge train`")
    timing = commands.add_parser("time", help="time this checkout's merge loop against another's")
    timing.add_argument("inputs", type=Path)
    timing.add_argument("--against", type=Path, required=True, help="the root of the other checkout")
    timing.add_argument("--rounds", type=int, default=5)
    args = parser.parse_args()
    if args.command == "capture":
        capture(args.out, args.train_args[1:] if args.train_args[:1] == ["--"] else args.train_args)
    else:
        time_against(args.inputs, args.against.resolve(), args.rounds)


if __name__ == "__main__":
    main()
