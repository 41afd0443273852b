"""``tokenforge extend``: learn N new tokens for a tokenizer from a corpus, its ids unchanged.

Writes ``OUTDIR/tokenizer.json`` plus the files ``train`` writes for the same model
(``vocab.json`` and ``merges.txt`` for byte-level BPE; none more for character-level BPE),
``OUTDIR/tokenizer_config.json`` (for ``AutoTokenizer``, with the chat template and bos/eos/pad of
a ``tokenizer_config.json`` found beside the base) and ``OUTDIR/report.json``, and prints the
report (``engine/extend/report.py``). Without ``--held-out FILE`` the last tenth of the last
corpus file's lines is held out and not learned from. Error reporting is ``cli.py``'s:
everything here raises TokenforgeError.

Internal: not part of the engine's API (``engine.PUBLIC_MODULES``).
"""

from __future__ import annotations

import argparse
import json
import re
import tempfile
from pathlib import Path

from engine.cli_inputs import chat_settings_beside, load_tokenizer, read_text
from engine.errors import ConfigError


def _count(raw: str) -> int:
    """A whole number of tokens, for argparse (the bounds are the engine's to check)."""
    try:
        return int(raw)
    except ValueError:
        raise argparse.ArgumentTypeError(f"expected a whole number of tokens, not {raw!r}") from None


def _fraction(raw: str) -> float:
    """A number, for argparse (the bounds are the engine's to check)."""
    try:
        return float(raw)
    except ValueError:
        raise argparse.ArgumentTypeError(f"expected a fraction such as 0.9995, not {raw!r}") from None


def add_extend_arguments(parser: argparse.ArgumentParser, which: str = "a tokenizer.json") -> None:
    """The flags of ``extend``; ``which`` says what names a tokenizer."""
    parser.add_argument("-t", "--tokenizer", required=True, metavar="BASE",
                        help=f"the tokenizer to extend: {which}")
    parser.add_argument("--add", required=True, type=_count, metavar="N", help="how many new tokens to learn")
    parser.add_argument("-o", "--output", required=True, metavar="OUTDIR", help="folder to write the files to")
    parser.add_argument("--unprotected", action="store_true",
                        help="learn merges anywhere, not only inside characters the base falls back on "
                             "(text the base handles may then encode differently)")
    parser.add_argument("--held-out", metavar="FILE",
                        help="text to measure tokens per character on (default: the last tenth of the last "
                             "corpus file's lines, which are then not learned from)")
    parser.add_argument("--reference", metavar="FILE",
                        help="a text in the base's language: tokens per character and lines changed")
    parser.add_argument("--min-frequency", type=_count, default=2, metavar="N",
                        help="stop when the best pair occurs fewer times than this (default: 2)")
    parser.add_argument("--character-coverage", type=_fraction, default=0.9995, metavar="F",
                        help="character-level bases: add the characters the base lacks, most frequent first, "
                             "until they cover this fraction of their occurrences (default: 0.9995)")
    parser.add_argument("files", nargs="+", metavar="CORPUS", help="UTF-8 corpus files")


def cmd_extend(args: argparse.Namespace) -> int:
    """Extend a tokenizer with new tokens learned from a corpus; write OUTDIR/tokenizer.json and report.json."""
    from engine.cli_train import _check_writable, _write_model_files
    from engine.extend import ExtendOptions, build_report, check_extendable, extend_bpe, report_lines, split_held_out
    from engine.extend.options import check_add
    from engine.formats.transformers_config import dumps_tokenizer_config

    base = load_tokenizer(args.tokenizer, args.named)
    chat = chat_settings_beside(args.tokenizer, args.named)
    check_extendable(base)
    try:
        options = ExtendOptions(add=args.add, protected=not args.unprotected, min_frequency=args.min_frequency,
                                character_coverage=args.character_coverage)
        check_add(base, args.add)
    except ConfigError as exc:  # name the flag, not the field
        raise ConfigError(re.sub(r"\b(add|min_frequency|character_coverage)=",
                                 lambda m: f"--{m[1].replace('_', '-')}=", str(exc)),
                          option=exc.option) from None
    for path in args.files:
        if not Path(path).is_file():
            raise ConfigError(f"The corpus file {path!r} does not exist.")
    outdir = Path(args.output)
    _check_writable(outdir)
    reference = read_text(args.reference) if args.reference else None
    with tempfile.TemporaryDirectory(prefix="tokenforge-extend-") as workdir:
        if args.held_out:
            files, held_out = list(args.files), read_text(args.held_out)
        else:
            files, held_out = split_held_out(args.files, Path(workdir))
        extension = extend_bpe(base, files, options)
    report = build_report(extension, base, held_out=held_out, reference=reference)
    tokenizer = extension.tokenizer
    outdir.mkdir(parents=True, exist_ok=True)
    tokenizer.save(outdir / "tokenizer.json")
    # The base's ids are kept, so its chat template and bos/eos/pad still fit the extension.
    (outdir / "tokenizer_config.json").write_text(
        dumps_tokenizer_config(tokenizer, known=chat, chat_template=chat.get("template")), encoding="utf-8")
    written = [outdir / "tokenizer.json", outdir / "tokenizer_config.json", *_write_model_files(tokenizer, outdir),
               outdir / "report.json"]
    (outdir / "report.json").write_text(json.dumps(report, indent=2) + "\n", encoding="utf-8")
    print("\n".join(report_lines(report)))
    print(f"Wrote {', '.join(str(p) for p in written)}.")
    return 0
