"""``tokenforge train``: its flags, generated from the trainers' options, and the command.

Each trainer's options dataclass (``engine.trainers.option_specs``) becomes flags:
``vocab_size`` becomes ``--vocab-size``, a list field such as ``special_tokens`` a repeatable
``--special-token`` (and ``--no-special-tokens``), a bool ``--x/--no-x``. Values are checked by
the options classes themselves; their messages are rewritten to name the flag. Help is per model,
because help texts and defaults differ between models: ``train --model wordpiece --help`` shows
WordPiece's options with WordPiece's defaults, and ``train --help`` which flags each model takes,
all rendered from the same specs, so an option added to a dataclass appears by itself. The command
writes ``OUTDIR/tokenizer.json`` plus the model's own files and draws a progress bar when stderr
is a terminal. ``--dask-scheduler tcp://HOST:8786`` counts the corpus on a Dask cluster
(``engine.trainers.cluster``), with the same files as a result. Error reporting is ``cli.py``'s:
everything here raises TokenforgeError.

Internal: not part of the engine's API (``engine.PUBLIC_MODULES``).
"""

from __future__ import annotations

import argparse
import os
import re
import sys
import textwrap
from pathlib import Path
from typing import Any

from engine.errors import ConfigError
from engine.gc_pause import collector_paused
from engine.tokenizer import Tokenizer
from engine.trainers.base import OptionSpec

_OPTION_PREFIX = "option__"  # namespace attributes that hold trainer options


def add_train_arguments(parser: argparse.ArgumentParser) -> None:
    """The fixed arguments of ``train``, one flag per trainer option, and a help per model.

    ``parser`` must come without argparse's own ``-h`` (``add_help=False``): ours shows the
    options of the model named before it, or an overview of every model's flags.
    """
    from engine.trainers import TRAINERS

    specs = _trainer_specs()
    parser.usage = "%(prog)s [-h] --model MODEL -o OUTDIR [OPTION ...] FILE [FILE ...]"
    parser.formatter_class = argparse.RawDescriptionHelpFormatter
    parser.epilog = _overview(parser.prog, specs)
    parser.add_argument("-h", "--help", action=_TrainHelp, specs=specs,
                        help="show this help; after --model MODEL, that model's options and defaults")
    _add_fixed_arguments(parser, list(TRAINERS))
    # Every flag of every model, for parsing; each model's help (``_model_help``) describes its own.
    _add_option_flags(parser, [spec for options in specs.values() for spec in options], shown=False)


def _add_fixed_arguments(parser: argparse.ArgumentParser, models: list[str] | None) -> None:
    """--model (unless one model's help names it already), -o and the corpus files."""
    if models is not None:
        parser.add_argument("--model", required=True, choices=models, help="the algorithm")
    parser.add_argument("-o", "--output", required=True, metavar="OUTDIR", help="folder to write the files to")
    parser.add_argument("--dask-scheduler", metavar="ADDRESS", default=None,
                        help="count the corpus on the Dask cluster whose scheduler is at ADDRESS, e.g. "
                             "tcp://HOST:8786 (needs tokenforge[dask]; every worker must see the files at "
                             "the same path); the files written are the same")
    parser.add_argument("files", nargs="+", metavar="FILE", help="UTF-8 corpus files")


def _trainer_specs() -> dict[str, list[OptionSpec]]:
    """The option specs of every trainer that imports; a missing one only loses its flags."""
    from engine.trainers import TRAINERS, option_specs

    specs: dict[str, list[OptionSpec]] = {}
    for algorithm in TRAINERS:
        try:
            specs[algorithm] = option_specs(algorithm)
        except Exception:  # noqa: BLE001 - a trainer being written must not break `encode`
            continue
    return specs


def _flag(name: str, kind: str) -> str:
    if kind == "list" and name.endswith("s"):
        name = name[:-1]
    return "--" + name.replace("_", "-")


# The specs' help is written for the web form too, where an empty field means "no value" and a
# list is a text box: "(empty: no limit)" says what the missing default means, and "one per
# line" is how the box is filled. On the command line the first becomes the default's wording
# and the second goes (the flag repeats instead).
_EMPTY_MEANS = re.compile(r"\s*\(empty: ([^)]*)\)")
_FORM_ONLY = re.compile(r",? one per line")


def _help_and_default(spec: OptionSpec) -> tuple[str, str]:
    """The spec's help as the command line reads it, and its default in words."""
    meaning = _EMPTY_MEANS.search(spec.help)
    text = _FORM_ONLY.sub("", _EMPTY_MEANS.sub("", spec.help))
    default = spec.default
    if default is None or default == "" or (spec.type == "list" and not default):
        shown = meaning.group(1) if meaning else "none"
    elif spec.type == "bool":
        shown = "on" if default else "off"
    elif spec.type == "list":
        shown = " ".join(default)
    else:
        shown = str(default)
    return text, shown


def _add_option_flags(parser: argparse.ArgumentParser | argparse._ArgumentGroup,
                      options: list[OptionSpec], *, shown: bool) -> None:
    """One flag per option (the first spec of a name wins); ``shown=False`` parses without listing.

    Values stay strings: the options class checks them, once, for the CLI and the web form alike.
    """
    seen: set[str] = set()
    for spec in options:
        if spec.name in seen:
            continue
        seen.add(spec.name)
        flags = [_flag(spec.name, spec.type)]
        if "pretokenizer" in spec.name.replace("_", ""):
            flags += [f for f in ("--pretokenizer", "--pre-tokenizer") if f not in flags]
        text, default = _help_and_default(spec)
        repeat = " Repeat the flag for each." if spec.type == "list" else ""
        text = f"{text}{repeat} (default: {default})".replace("%", "%%")  # argparse formats help with %
        if not shown:
            text = argparse.SUPPRESS
        try:
            _add_flag(parser, spec, flags, text, shown)
        except argparse.ArgumentError:
            continue  # the name clashes with a fixed flag (-o, --model): keep the fixed one


def _add_flag(parser: argparse.ArgumentParser | argparse._ArgumentGroup, spec: OptionSpec,
              flags: list[str], text: str, shown: bool) -> None:
    dest = _OPTION_PREFIX + spec.name
    if spec.type == "bool":
        parser.add_argument(*flags, dest=dest, action=argparse.BooleanOptionalAction,
                            default=argparse.SUPPRESS, help=text)
    elif spec.type == "list":
        parser.add_argument(*flags, dest=dest, action="append", metavar="TOKEN" if "token" in spec.name else "VALUE",
                            default=argparse.SUPPRESS, help=text)
        parser.add_argument("--no-" + spec.name.replace("_", "-"), dest=dest, action="store_const", const=[],
                            default=argparse.SUPPRESS,
                            help=f"no {spec.name.replace('_', ' ')} at all" if shown else argparse.SUPPRESS)
    else:
        metavar = "{" + ",".join(spec.choices) + "}" if spec.choices else spec.type.upper()
        parser.add_argument(*flags, dest=dest, metavar=metavar, default=argparse.SUPPRESS, help=text)


def _model_help(prog: str, model: str, options: list[OptionSpec]) -> str:
    """``train --model MODEL --help``: the fixed arguments and that model's options with its defaults."""
    parser = argparse.ArgumentParser(
        prog=f"{prog} --model {model}", add_help=False,
        usage="%(prog)s -o OUTDIR [OPTION ...] FILE [FILE ...]",
        description=f"Train a {model} tokenizer and write OUTDIR/tokenizer.json plus the model's own files.")
    _add_fixed_arguments(parser, None)
    _add_option_flags(parser.add_argument_group(f"{model} options"), options, shown=True)
    return parser.format_help()


def _overview(prog: str, specs: dict[str, list[OptionSpec]]) -> str:
    """The epilog of ``train --help``: which flags each model takes (their help is per model)."""
    width = max(len(model) for model in specs) + 2 if specs else 2
    lines = ["Each model has its own options and defaults; name the model first to see them:",
             f"  {prog} --model {next(iter(specs), 'MODEL')} --help", ""]
    for model, options in specs.items():
        flags = " ".join(dict.fromkeys(_flag(spec.name, spec.type) for spec in options)) or "(none)"
        lines += textwrap.wrap(flags, width=78, initial_indent="  " + model.ljust(width),
                               subsequent_indent=" " * (width + 2), break_on_hyphens=False)
    return "\n".join(lines)


class _TrainHelp(argparse.Action):
    """``-h``/``--help`` for ``train``: argparse calls it where it appears, so ``--model`` named
    before it is already parsed and picks which model's options to show."""

    def __init__(self, option_strings: list[str], specs: dict[str, list[OptionSpec]],
                 dest: str = argparse.SUPPRESS, default: str = argparse.SUPPRESS, help: str | None = None) -> None:
        super().__init__(option_strings, dest=dest, default=default, nargs=0, help=help)
        self.specs = specs

    def __call__(self, parser: argparse.ArgumentParser, namespace: argparse.Namespace, values: Any,
                 option_string: str | None = None) -> None:
        model = getattr(namespace, "model", None)
        if model in self.specs:
            sys.stdout.write(_model_help(parser.prog, model, self.specs[model]))
        else:
            parser.print_help()
        parser.exit()


class _ProgressBar:
    """A one-line progress bar on stderr, drawn only when stderr is a terminal."""

    def __init__(self) -> None:
        self.active = sys.stderr.isatty()
        self.drawn = False

    def __call__(self, stage: str, current: int, total: int) -> None:
        if not self.active:
            return
        if total > 0:
            done = min(30, 30 * current // total)
            line = f"{stage:<16} [{'#' * done}{'.' * (30 - done)}] {100 * current // total:3d}%  {current}/{total}"
        else:
            line = f"{stage:<16} {current}"
        sys.stderr.write("\r" + line[:100].ljust(80))
        sys.stderr.flush()
        self.drawn = True

    def close(self) -> None:
        if self.drawn:
            sys.stderr.write("\n")
            sys.stderr.flush()


def _write_model_files(tokenizer: Tokenizer, outdir: Path) -> list[Path]:
    """Write the model's own files beside tokenizer.json (BPE, WordPiece and Unigram have some;
    sentencepiece BPE, ``--level spm``, its ``tokenizer.model``)."""
    kind = tokenizer.model.kind
    if kind == "bpe" and getattr(tokenizer.model, "level", "byte") == "spm":  # sentencepiece BPE: its .model
        from engine.formats.spm_model import dump_spm_model

        (outdir / "tokenizer.model").write_bytes(dump_spm_model(tokenizer))
        return [outdir / "tokenizer.model"]
    if kind == "bpe" and getattr(tokenizer.model, "level", "byte") == "byte":  # char-level BPE: tokenizer.json only
        from engine.formats.gpt2 import save_gpt2

        save_gpt2(tokenizer, outdir / "vocab.json", outdir / "merges.txt")
        return [outdir / "vocab.json", outdir / "merges.txt"]
    if kind == "wordpiece":
        from engine.formats.vocab_txt import write_vocab_txt

        write_vocab_txt(tokenizer.model.vocab(), outdir / "vocab.txt")
        return [outdir / "vocab.txt"]
    if kind == "unigram":
        from engine.formats.spm import save_vocab

        save_vocab(tokenizer.model, outdir / "tokenizer.vocab")  # type: ignore[arg-type]
        from engine.formats.spm_model import dump_spm_model

        try:  # the sentencepiece .model too, where it can hold this tokenizer (identity normalization)
            (outdir / "tokenizer.model").write_bytes(dump_spm_model(tokenizer))
        except ConfigError:
            return [outdir / "tokenizer.vocab"]
        return [outdir / "tokenizer.vocab", outdir / "tokenizer.model"]
    return []


def _in_flags(problem: ConfigError, specs: dict[str, OptionSpec]) -> ConfigError:
    """``problem`` worded for the command line: each option it names becomes its flag
    ("vocab_size=10 must be …" -> "--vocab-size=10 must be …"), the data it carries is kept."""
    message = str(problem).replace("Option ", "", 1) if str(problem).startswith("Option ") else str(problem)
    for name, spec in specs.items():
        message = re.sub(rf"(?<![\w-]){re.escape(name)}(?!\w)", _flag(name, spec.type), message)
    return ConfigError(message, option=problem.option, value=problem.value, least=problem.least,
                       most=problem.most, why=problem.why)


def _check_writable(outdir: Path) -> None:
    """Refuse an output folder that could not be written, without creating it: a typo in a corpus
    name must not leave an empty folder behind, and hours of training must not end in EACCES."""
    if outdir.exists() and not outdir.is_dir():
        raise ConfigError(f"Output {str(outdir)!r} is a file, not a folder.")
    existing = outdir
    while not existing.exists():
        existing = existing.parent
    if not existing.is_dir() or not os.access(existing, os.W_OK | os.X_OK):
        raise ConfigError(f"Cannot write the output folder {str(outdir)!r}: {str(existing)!r} is not writable.")


def cmd_train(args: argparse.Namespace) -> int:
    """Train a tokenizer and write OUTDIR/tokenizer.json plus the model's own files."""
    # One pause of the cyclic collector (engine/gc_pause.py) over the training and the writing:
    # resumed between them, it walked everything the training had allocated at the first chance,
    # then again writing the files (~35 ms of an 0.8 s spm BPE training on en_5M).
    with collector_paused():
        return _train(args)


def _train(args: argparse.Namespace) -> int:
    from engine.trainers import option_specs, train
    from engine.trainers.cluster import counting_on

    try:
        specs = {spec.name: spec for spec in option_specs(args.model)}
    except ImportError as exc:
        raise ConfigError(f"The {args.model} trainer is not available ({exc}).") from None
    given = {k[len(_OPTION_PREFIX):]: v for k, v in vars(args).items() if k.startswith(_OPTION_PREFIX)}
    for name in given:
        if name not in specs:
            flags = ", ".join(_flag(n, s.type) for n, s in specs.items())
            raise ConfigError(f"{_flag(name, 'str')} is not an option of the {args.model} trainer; "
                              f"its options are: {flags}.")
    outdir = Path(args.output)
    _check_writable(outdir)  # before the work; the folder itself is made only once there is a result
    bar = _ProgressBar()
    try:
        with counting_on(args.dask_scheduler):  # connects first: a bad scheduler stops here
            result = train(args.model, args.files, given, progress=bar)
    except ConfigError as exc:  # name the flag, not the dataclass field
        raise ConfigError.of([_in_flags(problem, specs) for problem in exc.problems]) from None
    finally:
        bar.close()
    tokenizer = result.tokenizer
    outdir.mkdir(parents=True, exist_ok=True)
    tokenizer.save(outdir / "tokenizer.json")
    written = [outdir / "tokenizer.json", *_write_model_files(tokenizer, outdir)]
    seconds = result.stats.get("seconds", "?")
    print(f"Trained a {args.model} tokenizer of {tokenizer.vocab_size} tokens in {seconds} s; "
          f"wrote {', '.join(str(p) for p in written)}.")
    return 0
