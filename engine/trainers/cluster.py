"""Whether pre-tokens are counted on a Dask cluster: a context the CLI and the job worker set around a training.

``with counting_on("tcp://HOST:8786"): train(...)`` connects to the scheduler first (so an
unreachable one fails the training before any work, with a plain sentence), then every
``counting.count_pretokens`` inside the block sends its counting to the cluster
(``trainers/distributed.py``, made the active counter of ``trainers/remote_counting.py``)
instead of local processes. A context, not a trainer option,
because where the counting runs changes nothing in the result: the options, the statistics and
``tokenizer.json`` stay the same as for a local run, and no trainer needs to know.

This module never imports Dask at import time: without the extra ``tokenforge[dask]`` everything
else works, and only asking for a cluster raises :class:`ConfigError` with the install command.
Left out: the counting itself, and where the address comes from (a CLI flag, a setting).

Internal: not part of the engine's API (``engine.PUBLIC_MODULES``).
"""

from __future__ import annotations

import importlib
from collections.abc import Iterator
from contextlib import contextmanager

import regex

from engine.errors import ConfigError
from engine.limits import shown
from engine.trainers.remote_counting import active_cluster, counting_with

EXTRA_MISSING = ("Counting on a Dask cluster needs the dask extra, which is not installed: "
                 "pip install 'tokenforge[dask]'.")
MAX_ADDRESS_CHARS = 300
_ADDRESS = regex.compile(r"(?:tcp|tls)://(?:\[[0-9A-Fa-f:.]+\]|[A-Za-z0-9._-]+):[0-9]{1,5}")
__all__ = ["EXTRA_MISSING", "active_cluster", "check_address", "counting_on", "require_dask"]


def check_address(address: str) -> str:
    """Return ``address`` if it names a scheduler as ``tcp://HOST:PORT`` or ``tls://HOST:PORT``."""
    well_formed = len(address) <= MAX_ADDRESS_CHARS and _ADDRESS.fullmatch(address) is not None
    if not well_formed or not 0 < int(address.rsplit(":", 1)[1]) < 65536:
        raise ConfigError(f"The Dask scheduler address {shown(address)} must look like tcp://HOST:8786 "
                          "(or tls://HOST:PORT).")
    return address


def require_dask() -> None:
    """Raise ConfigError with the install command unless Dask's distributed scheduler imports."""
    try:
        importlib.import_module("engine.trainers.distributed")
    except ImportError:
        raise ConfigError(EXTRA_MISSING) from None


@contextmanager
def counting_on(address: str | None, *, range_bytes: int | None = None) -> Iterator[None]:
    """Count pre-tokens on the Dask scheduler at ``address`` inside the block (``None``: locally).

    Connects on entry: a bad address, the missing extra or an unreachable scheduler raise
    :class:`ConfigError` before anything runs. ``range_bytes`` fixes the size of the ranges one
    task counts (default: a few per thread of the cluster, see ``distributed.py``).
    """
    if not address:
        yield
        return
    check_address(address)
    require_dask()
    from engine.trainers.distributed import ClusterCounter

    counter = ClusterCounter.connect(address, range_bytes=range_bytes)
    try:
        with counting_with(counter):
            yield
    finally:
        counter.close()
