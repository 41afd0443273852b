"""``tokenforge merge``: append a donor's pieces to a base, the ``merge_tokenizers.py`` way, costs first.

Without ``-o`` it only measures: for each score policy (``engine/extend/merge.py``) the pieces
that would be appended, the duplicates, the unreachable pieces, and on ``--reference`` (a text
in the base's language) and ``--held-out`` (one in the donor's) tokens per character and lines
changed. Nothing is written. With ``-o OUTDIR`` it writes the merge under ``--policy``:
``tokenizer.json``, ``tokenizer.model`` where the base is a sentencepiece model (or a Unigram
one can hold), ``tokenizer_config.json`` with the base's chat settings, and ``report.json``.
Error reporting is ``cli.py``'s: everything here raises TokenforgeError.

Internal: not part of the engine's API (``engine.PUBLIC_MODULES``).
"""

from __future__ import annotations

import argparse
import json
from pathlib import Path
from typing import Any

from engine.cli_inputs import chat_settings_beside, load_tokenizer, read_text

# engine/extend/merge.py's POLICIES, with their help; named here so that building the parser
# does not import the engine (a test checks the two agree).
POLICY_HELP = {
    "zero": "score 0, as merge_tokenizers.py writes them: appended pieces take precedence over the base's",
    "after": "ranked after every piece of the base, so the base's merges and likeliest pieces come first",
}


def add_merge_arguments(parser: argparse.ArgumentParser, which: str = "a tokenizer.json or sentencepiece .model"
                        ) -> None:
    """The flags of ``merge``; ``which`` says what names a tokenizer."""
    parser.add_argument("-t", "--tokenizer", required=True, metavar="BASE",
                        help=f"the base, whose ids are kept: {which}")
    parser.add_argument("--donor", required=True, metavar="DONOR",
                        help=f"the tokenizer whose pieces the base lacks are appended: {which}")
    parser.add_argument("--policy", choices=tuple(POLICY_HELP), default="zero",
                        help="the appended pieces' scores, with -o: " + "; ".join(f"{k}: {v}" for k, v in
                                                                               POLICY_HELP.items()))
    parser.add_argument("--reference", metavar="FILE", help="a text in the base's language: lines changed")
    parser.add_argument("--held-out", metavar="FILE", help="a text in the donor's language: tokens per character")
    parser.add_argument("-o", "--output", metavar="OUTDIR",
                        help="write the merge here; without it, only the costs of each policy are printed")


def cost_lines(policy: str, report: dict[str, Any]) -> list[str]:
    """One policy's costs as sentences for a terminal."""
    out = [f"{policy}: appends {report['pieces_added']:,} pieces (ids {report['base_vocab_size']:,} to "
           f"{report['vocab_size'] - 1:,}); {report['duplicates_skipped']:,} donor pieces the base has; "
           f"{report['unreachable']:,} appended pieces can never be produced."]
    for name in ("reference", "held_out"):
        part = report.get(name)
        if part and part["characters"]:
            out.append(f"  {name.replace('_', '-')}: {part['tokens_per_char_before']} -> "
                       f"{part['tokens_per_char_after']} tokens per character; {part['lines_changed']:,} of "
                       f"{part['lines']:,} lines encode differently.")
    return out


def cmd_merge(args: argparse.Namespace) -> int:
    """Append a donor's missing pieces to a base; print each policy's costs, or write one with -o."""
    from engine.cli_train import _check_writable, _write_model_files
    from engine.extend import build_report
    from engine.extend.merge import merge_vocabularies
    from engine.formats.transformers_config import dumps_tokenizer_config

    base, donor = load_tokenizer(args.tokenizer, args.named), load_tokenizer(args.donor, args.named)
    reference = read_text(args.reference) if args.reference else None
    held_out = read_text(args.held_out) if args.held_out else None
    outdir = Path(args.output) if args.output else None
    if outdir is not None:
        _check_writable(outdir)
    for policy in ([args.policy] if outdir is not None else POLICY_HELP):
        merged = merge_vocabularies(base, donor, policy=policy)
        report = {**build_report(merged, base, held_out=held_out, reference=reference), "policy": policy}
        print("\n".join(cost_lines(policy, report)))
    if outdir is None:
        print("Nothing written; pass -o OUTDIR (and --policy) to write a merge.")
        return 0
    tokenizer = merged.tokenizer
    outdir.mkdir(parents=True, exist_ok=True)
    tokenizer.save(outdir / "tokenizer.json")
    chat = chat_settings_beside(args.tokenizer, args.named)  # the base's ids are kept, so its template still fits
    (outdir / "tokenizer_config.json").write_text(
        dumps_tokenizer_config(tokenizer, known=chat, chat_template=chat.get("template")), encoding="utf-8")
    (outdir / "report.json").write_text(json.dumps(report, indent=2) + "\n", encoding="utf-8")
    written = [outdir / "tokenizer.json", outdir / "tokenizer_config.json", *_write_model_files(tokenizer, outdir),
               outdir / "report.json"]
    print(f"Wrote {', '.join(str(p) for p in written)}.")
    return 0
