"""Settings: every knob the web app and the job worker read, from environment variables.

One function, :func:`load_settings`, turns an environment mapping into a flat dict of Flask
config keys, with the documented defaults (see ``docs/configuration.md``, which lists the same
names). It also maps ``postgresql://`` URLs onto the psycopg 3 driver and creates or reads the
persisted ``SECRET_KEY``. It deliberately knows nothing about Flask apps or database engines.
"""

from __future__ import annotations

import os
from collections.abc import Mapping
from pathlib import Path
from typing import Any

GIB = 1024**3

#: name -> (default, one-line description); docs/configuration.md mirrors this table.
ENV_DEFAULTS: dict[str, tuple[str, str]] = {
    "TOKENFORGE_DATA_DIR": ("./instance", "Folder for the SQLite file, the corpus store and the secret key."),
    "DATABASE_URL": ("", "Database URL; empty means sqlite:///<data dir>/tokenforge.sqlite3."),
    "TOKENFORGE_CORPUS_DIR": ("", "Corpus store; empty means <data dir>/corpora."),
    "TOKENFORGE_MAX_UPLOAD_BYTES": (str(GIB), "Largest corpus file, after decompression."),
    "TOKENFORGE_TEAM_CORPUS_BYTES": (str(20 * GIB), "Bytes of stored corpora (after decompression) one team may keep."),
    "TOKENFORGE_UPLOAD_RATE_LIMIT": ("100/3600", "Corpus files one member may upload: N/SECONDS."),
    "TOKENFORGE_UPLOADS_PER_MEMBER": ("2", "Uploads one member may have in progress at once."),
    "TOKENFORGE_UPLOADS_PER_IP": ("4", "Uploads one IP address may have in progress at once."),
    "TOKENFORGE_TEAM_TOKENIZER_BYTES": (str(5 * GIB), "Bytes of stored tokenizers (documents, statistics, kept "
                                                      "originals) one team may keep."),
    "TOKENFORGE_IMPORT_RATE_LIMIT": ("60/3600", "Tokenizer imports one member may make: N/SECONDS."),
    "TOKENFORGE_IMPORTS_PER_MEMBER": ("2", "Tokenizer imports one member may have in progress at once."),
    "TOKENFORGE_UPLOAD_MIN_RATE": ("8192", "Bytes/second an upload must keep up in each window after the first, "
                                           "or it is cut off."),
    "TOKENFORGE_UPLOAD_RATE_WINDOW": ("30", "Seconds over which the upload rate is measured "
                                            "(the first window is free)."),
    "TOKENFORGE_UPLOAD_MAX_SECONDS": ("3600", "Seconds a large request body may take in all, however fast it arrives."),
    "SECRET_KEY": ("", "Signs sessions and CSRF tokens; generated into <data dir>/secret_key if unset."),
    "TOKENFORGE_HEARTBEAT_SECONDS": ("1", "How often a worker writes a running job's heartbeat and progress."),
    "TOKENFORGE_STALE_SECONDS": ("30", "A running job whose heartbeat is older than this is recovered."),
    "TOKENFORGE_MAX_ATTEMPTS": ("2", "Attempts before a job whose worker keeps dying is marked failed."),
    "TOKENFORGE_CANCEL_GRACE_SECONDS": ("5", "How long a cancelled run may take to stop before it is killed."),
    "TOKENFORGE_WORKER_NICE": ("10", "How much to lower the CPU priority of training processes."),
    "TOKENFORGE_SECURE_COOKIES": ("0", "1 marks session cookies Secure (serve over HTTPS)."),
    "TOKENFORGE_OPEN_SIGNUP": ("0", "1 lets anyone sign up; otherwise only the first user and invitees."),
    "TOKENFORGE_LOGIN_RATE_LIMIT": ("10/300", "Login attempts allowed per IP address and per e-mail: N/SECONDS."),
    "TOKENFORGE_API_RATE_LIMIT": ("600/60", "JSON API encode/decode calls allowed per user (or IP): N/SECONDS."),
    "TOKENFORGE_MAX_ENCODE_CHARS": ("200000", "Longest text the playground and the API encode, in characters."),
    "TOKENFORGE_INVITE_DAYS": ("7", "How many days an invite link stays valid."),
    "TOKENFORGE_SIGNUP_RATE_LIMIT": ("5/3600", "Sign-ups allowed per IP address: N/SECONDS."),
    "TOKENFORGE_SESSION_DAYS": ("14", "How many days a login session lasts before signing in again."),
    "TOKENFORGE_JOB_TIME_LIMIT": ("21600", "Seconds a job may run before it is stopped and failed."),
    "TOKENFORGE_JOB_MEMORY_BYTES": ("", "Address space (RLIMIT_AS) each job process may use; empty: half the "
                                        "machine's memory, at least 2 GiB."),
    "TOKENFORGE_TRAIN_PATTERN_SECONDS_PER_MB": ("10", "CPU seconds per million characters a custom pre-tokenizer "
                                                      "pattern may take on a chunk of a training corpus (a shorter "
                                                      "chunk gets a million's)."),
    "TOKENFORGE_MAX_QUEUED_JOBS": ("20", "Training jobs one team may have waiting in the queue at once."),
    "TOKENFORGE_MAX_TEAMS_PER_MEMBER": ("10", "Teams one member may create (counted as the teams they own)."),
    "TOKENFORGE_ENCODE_TIMEOUT": ("0.5", "CPU seconds of pattern matching (and model work on very long pieces) "
                                         "one request may use."),
    "TOKENFORGE_DASK_SCHEDULER": ("", "Dask scheduler (tcp://HOST:8786) counting each training's corpus; empty: here."),
    "TOKENFORGE_LEADERBOARD_MAX_BYTES": ("1048576", "Bytes of each held-out corpus a leaderboard evaluates, at most."),
    "TOKENFORGE_LEADERBOARD_PAIR_SECONDS": ("60", "CPU seconds of encoding one tokenizer × corpus pair of a "
                                                  "leaderboard may use."),
    "TOKENFORGE_CHAT_RENDER_SECONDS": ("3", "Wall seconds one chat template render may take."),
    "TOKENFORGE_CHAT_RATE_LIMIT": ("120/60", "Chat renders allowed per member, API key or share link: N/SECONDS."),
    "TOKENFORGE_CHAT_CONCURRENCY": ("2", "Chat renders one member, API key or share link may run at once."),
    "TOKENFORGE_CHAT_RENDERS_AT_ONCE": ("3", "Chat renders the whole server runs at once, for everyone together."),
    "TOKENFORGE_TOKENIZER_CACHE_BYTES": (str(384 << 20), "Approximate bytes of parsed tokenizers one web process "
                                                         "keeps."),
    "TOKENFORGE_SNAPSHOT_BYTES": (str(GIB), "Disk for snapshots of large parsed tokenizers in <data dir>/snapshots "
                                            "(fast cold loads); 0 turns them off."),
}


class SettingsError(ValueError):
    """An environment variable has a value the app cannot use."""


def normalize_database_url(url: str) -> str:
    """Use psycopg 3 for PostgreSQL URLs, whichever spelling the user gave."""
    for prefix in ("postgresql://", "postgres://"):
        if url.startswith(prefix):
            return "postgresql+psycopg://" + url[len(prefix) :]
    return url


def _number(env: Mapping[str, str], name: str, kind: type[int] | type[float]) -> Any:
    raw = env.get(name) or ENV_DEFAULTS[name][0]
    try:
        value = kind(raw)
    except ValueError:
        raise SettingsError(f"{name} must be a number, not {raw!r}.") from None
    if value < 0:
        raise SettingsError(f"{name} must not be negative, got {raw!r}.")
    return value


def _positive(env: Mapping[str, str], name: str, kind: type[int] | type[float]) -> Any:
    """A number that bounds something: zero would switch the bound off, so it is refused."""
    value = _number(env, name, kind)
    if value <= 0:
        raise SettingsError(f"{name} must be greater than 0, got {value!r}.")
    return value


def secret_key_for(data_dir: Path) -> str:
    """Read the persisted secret key, creating it atomically on first use.

    Several gunicorn workers may start at once; linking a fully written temp file into place
    means every process ends up reading the same key, never a half-written one.
    """
    import secrets  # here: the CLI's commands import this module, and few need a key

    path = data_dir / "secret_key"
    if not path.exists():
        data_dir.mkdir(parents=True, exist_ok=True)
        tmp = data_dir / f".secret_key.{os.getpid()}.{secrets.token_hex(4)}"
        tmp.write_text(secrets.token_hex(32), encoding="ascii")
        os.chmod(tmp, 0o600)
        try:
            os.link(tmp, path)
        except FileExistsError:
            pass
        finally:
            tmp.unlink()
    return path.read_text(encoding="ascii").strip()


def _flag(env: Mapping[str, str], name: str) -> bool:
    raw = (env.get(name) or ENV_DEFAULTS[name][0]).strip().lower()
    if raw in ("1", "true", "yes", "on"):
        return True
    if raw in ("0", "false", "no", "off"):
        return False
    raise SettingsError(f"{name} must be 1 or 0, not {raw!r}.")


def parse_limit(raw: str) -> tuple[int, float]:
    """``"10/300"`` → (10, 300.0); raise SettingsError naming the value otherwise."""
    count, _, seconds = str(raw).partition("/")
    try:
        limit = (int(count), float(seconds))
    except ValueError:
        raise SettingsError(f"A rate limit is written N/SECONDS, for example 10/300, not {raw!r}.") from None
    # The counters are 32-bit integers and the windows whole milliseconds.
    if not 1 <= limit[0] <= 10**9 or not 0.001 <= limit[1] <= 10**9:
        raise SettingsError(f"A rate limit allows 1 to 10^9 events in 0.001 to 10^9 seconds, not {raw!r}; "
                            "for example 10/300.")
    return limit


def _rate(env: Mapping[str, str], name: str) -> str:
    raw = env.get(name) or ENV_DEFAULTS[name][0]
    try:
        parse_limit(raw)
    except SettingsError as exc:
        raise SettingsError(f"{name}: {exc}") from None
    return raw


def _dask_scheduler(env: Mapping[str, str]) -> str | None:
    """The Dask scheduler that trainings count on, checked at start-up: its address, and that the
    extra is installed (else every training would fail later, one by one)."""
    from engine import ConfigError
    from engine.trainers import check_address, require_dask

    address = (env.get("TOKENFORGE_DASK_SCHEDULER") or "").strip()
    if not address:
        return None
    try:
        check_address(address)
        require_dask()
    except ConfigError as exc:
        raise SettingsError(f"TOKENFORGE_DASK_SCHEDULER: {exc}") from None
    return address


MIN_JOB_MEMORY_BYTES = 256 << 20
"""Below this a Python process with numpy loaded cannot train anything."""


def default_job_memory() -> int:
    """Half of this machine's memory (or of the container's limit, if lower), at least 2 GiB."""
    try:
        physical = os.sysconf("SC_PAGE_SIZE") * os.sysconf("SC_PHYS_PAGES")
    except (AttributeError, ValueError, OSError):  # not POSIX: assume a small machine
        physical = 4 * GIB
    try:  # cgroup v2: "max", or the bytes the container may use
        raw = Path("/sys/fs/cgroup/memory.max").read_text(encoding="ascii").strip()
        physical = min(physical, int(raw)) if raw.isdigit() else physical
    except (OSError, ValueError):
        pass
    return max(2 * GIB, physical // 2)


def job_memory_bytes(env: Mapping[str, str]) -> int:
    """``TOKENFORGE_JOB_MEMORY_BYTES`` from ``env``: the address space one job process may use.

    Read again by every job process from the environment it inherits (``jobs/job_child.py``).
    """
    raw = (env.get("TOKENFORGE_JOB_MEMORY_BYTES") or "").strip()
    if not raw:
        return default_job_memory()
    value = int(raw) if raw.isascii() and raw.isdigit() else -1
    if value < MIN_JOB_MEMORY_BYTES:
        raise SettingsError(f"TOKENFORGE_JOB_MEMORY_BYTES must be a whole number of bytes of at least "
                            f"{MIN_JOB_MEMORY_BYTES} (256 MiB), or empty for half the machine's memory; not {raw!r}.")
    return value


def train_pattern_rate(env: Mapping[str, str]) -> float:
    """``TOKENFORGE_TRAIN_PATTERN_SECONDS_PER_MB`` from ``env`` (read again by each training process)."""
    return float(_positive(env, "TOKENFORGE_TRAIN_PATTERN_SECONDS_PER_MB", float))


def load_settings(env: Mapping[str, str] | None = None) -> dict[str, Any]:
    """Return Flask config values built from ``env`` (default: ``os.environ``)."""
    env = os.environ if env is None else env
    data_dir = Path(env.get("TOKENFORGE_DATA_DIR") or ENV_DEFAULTS["TOKENFORGE_DATA_DIR"][0]).resolve()
    corpus_dir = env.get("TOKENFORGE_CORPUS_DIR")
    # Unset paths stay None so that a test config overriding DATA_DIR moves them too.
    return {
        "DATA_DIR": str(data_dir),
        "DATABASE_URL": env.get("DATABASE_URL") or None,
        "CORPUS_DIR": str(Path(corpus_dir).resolve()) if corpus_dir else None,
        "MAX_UPLOAD_BYTES": _number(env, "TOKENFORGE_MAX_UPLOAD_BYTES", int),
        "TEAM_CORPUS_BYTES": _positive(env, "TOKENFORGE_TEAM_CORPUS_BYTES", int),
        "UPLOAD_RATE_LIMIT": _rate(env, "TOKENFORGE_UPLOAD_RATE_LIMIT"),
        "UPLOADS_PER_MEMBER": _positive(env, "TOKENFORGE_UPLOADS_PER_MEMBER", int),
        "UPLOADS_PER_IP": _positive(env, "TOKENFORGE_UPLOADS_PER_IP", int),
        "TEAM_TOKENIZER_BYTES": _positive(env, "TOKENFORGE_TEAM_TOKENIZER_BYTES", int),
        "IMPORT_RATE_LIMIT": _rate(env, "TOKENFORGE_IMPORT_RATE_LIMIT"),
        "IMPORTS_PER_MEMBER": _positive(env, "TOKENFORGE_IMPORTS_PER_MEMBER", int),
        "UPLOAD_MIN_RATE": _positive(env, "TOKENFORGE_UPLOAD_MIN_RATE", int),
        "UPLOAD_RATE_WINDOW": _positive(env, "TOKENFORGE_UPLOAD_RATE_WINDOW", float),
        "UPLOAD_MAX_SECONDS": _positive(env, "TOKENFORGE_UPLOAD_MAX_SECONDS", float),
        "SECRET_KEY": env.get("SECRET_KEY") or None,  # filled from the data dir by finish_settings
        "HEARTBEAT_SECONDS": _number(env, "TOKENFORGE_HEARTBEAT_SECONDS", float),
        "STALE_SECONDS": _number(env, "TOKENFORGE_STALE_SECONDS", float),
        "MAX_ATTEMPTS": max(1, _number(env, "TOKENFORGE_MAX_ATTEMPTS", int)),
        "CANCEL_GRACE_SECONDS": _number(env, "TOKENFORGE_CANCEL_GRACE_SECONDS", float),
        "WORKER_NICE": _number(env, "TOKENFORGE_WORKER_NICE", int),
        "SESSION_COOKIE_SECURE": _flag(env, "TOKENFORGE_SECURE_COOKIES"),
        "REMEMBER_COOKIE_SECURE": _flag(env, "TOKENFORGE_SECURE_COOKIES"),
        "OPEN_SIGNUP": _flag(env, "TOKENFORGE_OPEN_SIGNUP"),
        "LOGIN_RATE_LIMIT": _rate(env, "TOKENFORGE_LOGIN_RATE_LIMIT"),
        "API_RATE_LIMIT": _rate(env, "TOKENFORGE_API_RATE_LIMIT"),
        "PLAYGROUND_MAX_CHARS": max(1, _number(env, "TOKENFORGE_MAX_ENCODE_CHARS", int)),
        "INVITE_DAYS": _number(env, "TOKENFORGE_INVITE_DAYS", float),
        "SIGNUP_RATE_LIMIT": _rate(env, "TOKENFORGE_SIGNUP_RATE_LIMIT"),
        "SESSION_DAYS": _positive(env, "TOKENFORGE_SESSION_DAYS", float),
        "JOB_TIME_LIMIT": _positive(env, "TOKENFORGE_JOB_TIME_LIMIT", float),
        "JOB_MEMORY_BYTES": job_memory_bytes(env),
        "TRAIN_PATTERN_SECONDS_PER_MB": train_pattern_rate(env),
        "ENCODE_TIMEOUT": _positive(env, "TOKENFORGE_ENCODE_TIMEOUT", float),
        "MAX_QUEUED_JOBS": max(1, _number(env, "TOKENFORGE_MAX_QUEUED_JOBS", int)),
        "MAX_TEAMS_PER_MEMBER": _positive(env, "TOKENFORGE_MAX_TEAMS_PER_MEMBER", int),
        "DASK_SCHEDULER": _dask_scheduler(env),
        "LEADERBOARD_MAX_BYTES": _positive(env, "TOKENFORGE_LEADERBOARD_MAX_BYTES", int),
        "LEADERBOARD_PAIR_SECONDS": _positive(env, "TOKENFORGE_LEADERBOARD_PAIR_SECONDS", float),
        "CHAT_RENDER_SECONDS": _positive(env, "TOKENFORGE_CHAT_RENDER_SECONDS", float),
        "CHAT_RATE_LIMIT": _rate(env, "TOKENFORGE_CHAT_RATE_LIMIT"),
        "CHAT_CONCURRENCY": _positive(env, "TOKENFORGE_CHAT_CONCURRENCY", int),
        "CHAT_RENDERS_AT_ONCE": _positive(env, "TOKENFORGE_CHAT_RENDERS_AT_ONCE", int),
        "TOKENIZER_CACHE_BYTES": _positive(env, "TOKENFORGE_TOKENIZER_CACHE_BYTES", int),
        "SNAPSHOT_BYTES": _number(env, "TOKENFORGE_SNAPSHOT_BYTES", int),
    }


def finish_settings(config: dict[str, Any]) -> dict[str, Any]:
    """Fill values that depend on others (after test overrides): paths, secret key, URL driver."""
    data_dir = Path(config["DATA_DIR"])
    config["DATABASE_URL"] = normalize_database_url(
        config.get("DATABASE_URL") or f"sqlite:///{data_dir / 'tokenforge.sqlite3'}"
    )
    config["CORPUS_DIR"] = str(config.get("CORPUS_DIR") or data_dir / "corpora")
    if not config.get("SECRET_KEY"):
        config["SECRET_KEY"] = secret_key_for(data_dir)
    return config
