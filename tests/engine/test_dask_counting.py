"""Counting on a Dask cluster (issue 14): byte ranges, byte-identical trainings, cancel, failures.

The range tests need no Dask: the counts of the planned ranges, added up, must be the local
counts exactly, under every kind of split. The cluster tests start the issue's ``LocalCluster``
(``dask_cluster.py``: 2 worker processes, 127.0.0.1) and train BPE, WordPiece and Unigram through
it; the ``tokenizer.json`` must be the local one byte for byte.
"""

from __future__ import annotations

import os
import signal
import socket
import sys
import time
from collections import deque
from collections.abc import Iterator
from pathlib import Path
from typing import Any

import pytest

from engine.cli import main
from engine.errors import ConfigError, FormatError, TrainingCancelled
from engine.normalizers import get_normalizer
from engine.trainers import train
from engine.trainers.base import Reporter
from engine.trainers.byte_ranges import count_range, overlap_free, plan_ranges, tally_range
from engine.trainers.cluster import EXTRA_MISSING, active_cluster, check_address, counting_on
from engine.trainers.counting import add_counts, count_pretokens
from engine.trainers.tally import CHAR_PATTERN, Tally
from engine.trainers.unigram.words import MetaspaceSplit
from tests.engine.dask_cluster import local_cluster

EOT = "<|endoftext|>"
# Documents of several lengths, with accents, CJK, emoji, CRLF, runs of spaces, and one long
# document without a separator (only safe cuts can split it).
DOCS = [
    "Once upon a time Ben saw a vase.  He said: “Wow!”\r\nThe shopkeeper smiled.",
    "Naïve café owners déjà vu 日本語のテキスト 🙂🙂 and   spaces\n\n\nnew lines",
    " ".join(f"word{i % 37} Straße ΣΑΣ ﬁne" for i in range(120)),
    "x",
    "The end. " * 40,
]
CORPUS = EOT.join(DOCS) + EOT + "\n".join(DOCS)


@pytest.fixture
def corpus(tmp_path: Path) -> Path:
    path = tmp_path / "corpus.txt"
    path.write_bytes(CORPUS.encode())
    return path


# --- Ranges and their counts (no Dask) --------------------------------------------------------

def test_ranges_end_right_after_a_document_separator(tmp_path: Path) -> None:
    path = tmp_path / "docs.txt"
    path.write_text(("x" * 100 + EOT) * 3, encoding="utf-8")
    ranges = plan_ranges([path], [EOT], safe_cuts=True, step=100)
    assert [(r.start, r.stop) for r in ranges] == [(0, 113), (113, 226), (226, 339)]


def test_ranges_cover_every_file_and_cut_only_at_boundaries(corpus: Path, tmp_path: Path) -> None:
    empty = tmp_path / "empty.txt"
    empty.write_bytes(b"")
    ranges = plan_ranges([corpus, empty, corpus], [EOT], safe_cuts=True, step=64)
    data = corpus.read_bytes()
    assert len(ranges) > 20
    assert "".join(data[r.start:r.stop].decode() for r in ranges) == CORPUS * 2  # no gap, no overlap
    for r in ranges:
        if r.stop != len(data):
            before, after = data[:r.stop].decode(), data[r.stop:].decode()
            assert before.endswith(EOT) or (before[-1].isalpha() and after[0] in " \n" and after[1].isalpha())


SPLITS = [
    pytest.param("gpt2", (EOT,), None, True, id="gpt2"),
    pytest.param("gpt4", (EOT, "<|fim|>"), None, True, id="gpt4"),
    pytest.param("bert", ("[CLS]", EOT), "nfd,strip_accents,lowercase", True, id="bert-normalized"),
    pytest.param("whitespace", (), None, True, id="whitespace-safe-cuts-only"),
    pytest.param(CHAR_PATTERN, (EOT,), None, False, id="characters"),
    pytest.param(r"\w+|\W", (EOT,), "nfkc", False, id="custom-regex"),
    pytest.param(MetaspaceSplit(add_dummy_prefix=True, split_by_whitespace=True), (), None, True, id="unigram"),
    pytest.param(MetaspaceSplit(add_dummy_prefix=True, split_by_whitespace=False), (), None, False, id="unigram-lines"),
]


@pytest.mark.parametrize("split, specials, normalizer, safe_cuts", SPLITS)
def test_the_ranges_add_up_to_the_local_counts(corpus: Path, split: Any, specials: tuple[str, ...],
                                              normalizer: str | None, safe_cuts: bool) -> None:
    norm = get_normalizer(normalizer)
    local = count_pretokens([corpus], special_tokens=specials, split=split, normalizer=norm, num_workers=1,
                            safe_cuts=safe_cuts)
    ranges = plan_ranges([corpus, corpus], specials, safe_cuts=safe_cuts, step=40)
    parts = [count_range(r, (split, specials, norm), safe_cuts=safe_cuts, max_chunk_chars=16) for r in ranges]
    assert add_counts(*parts) == {piece: 2 * n for piece, n in local.items()}
    can_cut = bool(specials) or safe_cuts
    assert (len(ranges) > 4) == can_cut  # the ranges were really cut where cuts are allowed


@pytest.mark.parametrize("split, specials, normalizer, safe_cuts", SPLITS)
def test_a_running_count_carried_from_range_to_range_gives_the_local_counts(
        corpus: Path, split: Any, specials: tuple[str, ...], normalizer: str | None, safe_cuts: bool) -> None:
    # What one Dask lane does: each range continues the previous range's running count.
    norm = get_normalizer(normalizer)
    local = count_pretokens([corpus], special_tokens=specials, split=split, normalizer=norm, num_workers=1,
                            safe_cuts=safe_cuts)
    running: dict[str, int] | None = None
    for part in plan_ranges([corpus, corpus], specials, safe_cuts=safe_cuts, step=40):
        before = dict(running) if running is not None else None
        tally = Tally(split, specials, norm, running=running)
        tally_range(tally, part, safe_cuts=safe_cuts, max_chunk_chars=16)
        assert running == before  # the earlier count is copied, never changed (Dask may reuse it)
        running = tally.running
    assert Tally(split, specials, norm, running=running).result() == {piece: 2 * n for piece, n in local.items()}


def test_a_callable_step_sizes_each_range_from_the_bytes_left_in_every_file(tmp_path: Path) -> None:
    first, second = tmp_path / "a.txt", tmp_path / "b.txt"
    first.write_text(("x" * 99 + EOT) * 60, encoding="utf-8")  # documents of 112 bytes
    second.write_text(("x" * 99 + EOT) * 4, encoding="utf-8")
    asked: list[int] = []

    def step(left: int) -> int:
        asked.append(left)
        return left // 4

    ranges = plan_ranges([first, second], [EOT], safe_cuts=True, step=step)
    total = 64 * 112
    assert asked == [total - sum(r.size for r in ranges[:i]) for i in range(len(ranges))]  # over both files
    # Each cut is the last document end in a window of the step's size after the target (64 KB on real
    # ranges), so these small ranges come out twice the size asked for.
    assert [(r.path == str(first), r.size) for r in ranges] == [
        (True, 3584), (True, 1792), (True, 896), (True, 448), (False, 224), (False, 112), (False, 112)]


def test_guided_ranges_shrink_towards_the_end_between_the_bounds() -> None:
    pytest.importorskip("distributed")
    from engine.trainers.byte_ranges import MAX_RANGE_BYTES, MIN_RANGE_BYTES, guided_range_bytes

    assert guided_range_bytes(2, 10 << 30) == MAX_RANGE_BYTES == 64 << 20
    assert guided_range_bytes(2, 100 << 20) == 25 << 20  # half of what each of 2 threads has left
    assert guided_range_bytes(16, 10 << 20) == MIN_RANGE_BYTES == 1 << 20


def test_overlapping_special_tokens_keep_each_file_whole(corpus: Path) -> None:
    assert overlap_free([EOT, "[CLS]", "[SEP]", "<s>", "</s>"])
    for tokens in (["aa"], ["<a", "<a>"], ["ab", "xab"], ["abc", "b"], ["ab", "bc"]):
        assert not overlap_free(tokens), tokens
    ranges = plan_ranges([corpus], [EOT, "|>"], safe_cuts=True, step=40)
    assert [(r.start, r.stop) for r in ranges] == [(0, corpus.stat().st_size)]


def test_a_range_that_is_not_utf8_raises_the_local_error(tmp_path: Path) -> None:
    path = tmp_path / "bad.txt"
    path.write_bytes(("hello world " * 20 + EOT).encode() * 3 + b"\xff tail")
    with pytest.raises(FormatError) as local:
        count_pretokens([path], special_tokens=[EOT], num_workers=1)
    with pytest.raises(FormatError) as ranged:
        for r in plan_ranges([path], [EOT], safe_cuts=True, step=50):
            count_range(r, ("gpt2", (EOT,), None), safe_cuts=True, max_chunk_chars=30)
    assert str(ranged.value) == str(local.value)
    assert "byte 759 cannot be decoded" in str(local.value)


def test_a_stopped_range_raises_cancelled(corpus: Path) -> None:
    [whole] = plan_ranges([corpus], [], safe_cuts=False, step=1 << 20)
    with pytest.raises(TrainingCancelled):
        count_range(whole, ("gpt2", (), None), safe_cuts=False, max_chunk_chars=64, stopped=lambda: True)


# --- Turning it on: the address and the extra (no cluster) ------------------------------------

@pytest.mark.parametrize("address", ["", "8786", "http://host:8786", "tcp://host", "tcp://host:0",
                                     "tcp://host:99999", "tcp://a b:8786", "tcp://" + "h" * 400 + ":1"])
def test_a_bad_scheduler_address_is_refused(address: str) -> None:
    with pytest.raises(ConfigError, match="must look like tcp://HOST:8786"):
        check_address(address)


def test_without_the_extra_asking_for_a_cluster_says_how_to_install_it(
        monkeypatch: pytest.MonkeyPatch, corpus: Path) -> None:
    monkeypatch.setitem(sys.modules, "distributed", None)  # "import distributed" now fails
    monkeypatch.delitem(sys.modules, "engine.trainers.distributed", raising=False)
    with pytest.raises(ConfigError) as caught:
        with counting_on("tcp://127.0.0.1:8786"):
            pass
    assert str(caught.value) == EXTRA_MISSING == ("Counting on a Dask cluster needs the dask extra, which is not "
                                                  "installed: pip install 'tokenforge[dask]'.")
    with counting_on(None):  # everything else works
        assert active_cluster() is None
        assert train("bpe", [corpus], {"vocab_size": 270}).tokenizer.vocab_size == 270


# --- On the cluster ---------------------------------------------------------------------------

@pytest.fixture(scope="module")
def scheduler() -> Iterator[str]:
    pytest.importorskip("distributed")
    with local_cluster() as address:
        yield address


@pytest.fixture
def counted(monkeypatch: pytest.MonkeyPatch) -> list[int]:
    """Records how many bytes each cluster count covered (proof that the cluster did count)."""
    from engine.trainers.distributed import ClusterCounter

    calls: list[int] = []
    original = ClusterCounter.count

    def spy(self: ClusterCounter, files: Any, *args: Any, **kwargs: Any) -> dict[str, int]:
        calls.append(sum(Path(f).stat().st_size for f in files))
        return original(self, files, *args, **kwargs)

    monkeypatch.setattr(ClusterCounter, "count", spy)
    return calls


TRAININGS = [
    pytest.param("bpe", {"vocab_size": 400}, id="bpe"),
    pytest.param("bpe", {"vocab_size": 300, "level": "char"}, id="bpe-char"),
    pytest.param("bpe", {"vocab_size": 400, "level": "spm"}, id="bpe-spm"),  # the table summarised in the leader
    pytest.param("wordpiece", {"vocab_size": 300}, id="wordpiece"),
    pytest.param("unigram", {"vocab_size": 400}, id="unigram"),
    pytest.param("wordlevel", {"vocab_size": 200}, id="wordlevel"),
    pytest.param("char", {"vocab_size": 60}, id="char"),
]


@pytest.mark.parametrize("algorithm, options", TRAININGS)
def test_a_training_through_dask_writes_the_same_bytes(scheduler: str, counted: list[int], corpus: Path,
                                                       algorithm: str, options: dict[str, Any]) -> None:
    local = train(algorithm, [corpus, corpus], options).tokenizer.to_json()
    stages: list[tuple[str, int, int]] = []
    with counting_on(scheduler, range_bytes=97):
        remote = train(algorithm, [corpus, corpus], options, progress=lambda *s: stages.append(s))
    assert remote.tokenizer.to_json() == local
    assert counted == [2 * corpus.stat().st_size]
    total = 2 * corpus.stat().st_size
    assert stages[0] == ("count", 0, total) and ("count", total, total) in stages


@pytest.mark.parametrize("algorithm, options", TRAININGS)
def test_tinystories_through_dask_is_byte_identical(scheduler: str, counted: list[int], cs336: Path,
                                                    algorithm: str, options: dict[str, Any]) -> None:
    files = [cs336 / "tinystories_sample.txt"]
    local = train(algorithm, files, options).tokenizer.to_json()
    with counting_on(scheduler, range_bytes=500):
        assert train(algorithm, files, options).tokenizer.to_json() == local
    assert len(counted) == 1


def test_the_cli_flag_writes_the_same_files(scheduler: str, counted: list[int], corpus: Path, tmp_path: Path) -> None:
    args = ["train", "--model", "bpe", "--vocab-size", "400", str(corpus)]
    assert main([*args, "-o", str(tmp_path / "local")]) == 0
    assert main([*args, "-o", str(tmp_path / "dask"), "--dask-scheduler", scheduler]) == 0
    assert counted == [corpus.stat().st_size]
    for name in ("tokenizer.json", "vocab.json", "merges.txt"):
        assert (tmp_path / "dask" / name).read_bytes() == (tmp_path / "local" / name).read_bytes()


def test_each_thread_carries_one_running_count_and_the_tree_adds_only_those(scheduler: str, corpus: Path) -> None:
    from engine.trainers.distributed import ClusterCounter, Lanes

    local = count_pretokens([corpus], special_tokens=[EOT], num_workers=1)
    ranges = plan_ranges([corpus, corpus], [EOT], safe_cuts=True, step=97)
    total = sum(r.size for r in ranges)
    counter = ClusterCounter.connect(scheduler)
    live: list[Any] = []
    try:
        task_args = (("gpt2", (EOT,), None), True, 16, "tokenforge-test-never-stopped")
        tails = Lanes(counter.client, live, task_args).count(deque(ranges), 2, total, Reporter())
        assert len(ranges) > 20 and {f.key for f in live} == {f.key for f in tails}  # each lane's earlier tables were released as it went on
        assert len(set(counter.client.who_has(tails).values())) == 2  # one lane on each worker
        tables = [tail.result().table for tail in tails]
        assert all(tables) and add_counts(*map(dict, tables)) == {piece: 2 * n for piece, n in local.items()}
    finally:
        for future in live:
            future.release()
        counter.close()


def test_a_lost_worker_costs_its_lanes_not_the_result(tmp_path: Path) -> None:
    import distributed

    path = tmp_path / "big.txt"
    path.write_text((CORPUS + EOT) * 2000, encoding="utf-8")  # ~5 MB: the kill lands mid-count
    local = count_pretokens([path], special_tokens=[EOT], num_workers=1)
    killed: list[str] = []

    def kill_a_worker_once(stage: str, current: int, total: int) -> None:
        if stage == "count" and 0 < current < total and not killed:
            killed.append(sorted(client.scheduler_info()["workers"])[0])
            [pid] = client.run(os.getpid, workers=killed).values()
            os.kill(pid, signal.SIGKILL)  # its nanny starts a new one

    # A cluster of its own: the shared one must keep both of its first workers.
    with local_cluster() as address, distributed.Client(address, set_as_default=False) as client:
        with counting_on(address, range_bytes=64 << 10):
            counts = count_pretokens([path], special_tokens=[EOT], reporter=Reporter(kill_a_worker_once))
    assert killed and counts == local  # the lost lane was counted again from its first range


def test_a_task_error_reaches_the_trainer(scheduler: str, tmp_path: Path) -> None:
    path = tmp_path / "bad.txt"
    path.write_bytes(("hello world " * 20 + EOT).encode() * 3 + b"\xff tail")
    with pytest.raises(FormatError, match="byte 759 cannot be decoded"):
        with counting_on(scheduler, range_bytes=50):
            train("bpe", [path], {"vocab_size": 300})


def _cluster_tasks(scheduler: str) -> tuple[set[Any], int]:
    """The keys running on the workers, and how many tasks the scheduler holds."""
    import distributed

    from engine.trainers.distributed import running_keys

    with distributed.Client(scheduler, set_as_default=False) as client:
        return running_keys(client), client.run_on_scheduler(_task_count)


def _task_count(dask_scheduler: Any) -> int:
    return len(dask_scheduler.tasks)


def test_a_cancel_leaves_no_task_on_the_cluster(scheduler: str, tmp_path: Path) -> None:
    path = tmp_path / "big.txt"
    path.write_text((CORPUS + EOT) * 400, encoding="utf-8")  # ~1 MB: tens of ranges
    seen: list[int] = []

    def cancel_once_counting() -> bool:
        return bool(seen) and seen[-1] > 0  # after the first range is counted, many still wait

    with pytest.raises(TrainingCancelled):
        with counting_on(scheduler, range_bytes=16 << 10):
            train("bpe", [path], {"vocab_size": 300},
                  progress=lambda stage, current, total: seen.append(current) if stage == "count" else None,
                  should_cancel=cancel_once_counting)
    assert 0 < seen[-1] < path.stat().st_size
    # The cancel waits for running tasks to stop (STOP_WAIT_SECONDS); the workers report a task's
    # end and the scheduler forgets released tasks asynchronously, so both are polled for a while
    # (checking the workers once, at once, failed once in a full run on a busy machine).
    running, held = _cluster_tasks(scheduler)
    deadline = time.monotonic() + 10
    while (running or held) and time.monotonic() < deadline:
        time.sleep(0.05)
        running, held = _cluster_tasks(scheduler)
    assert (running, held) == (set(), 0)


def test_an_unreachable_scheduler_fails_before_any_work(corpus: Path) -> None:
    pytest.importorskip("distributed")
    with socket.socket() as probe:  # a port nobody listens on
        probe.bind(("127.0.0.1", 0))
        port = probe.getsockname()[1]
    started: list[str] = []
    with pytest.raises(ConfigError, match=f"Cannot reach the Dask scheduler at tcp://127.0.0.1:{port}"):
        with counting_on(f"tcp://127.0.0.1:{port}"):
            started.append("training")
    assert started == [] and active_cluster() is None
