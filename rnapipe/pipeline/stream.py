"""The streaming core shared by ``rnapipe.fold_iter`` / ``rnapipe.fold`` and ``rnapipe fold``: chunks are
read and parsed on one thread, folded on the calling one (engine calls of one or more chunks), and handed
on in input order, so that parsing chunk k+1 and writing chunk k-1 overlap folding chunk k. At most
``DEPTH`` chunks wait between two stages, so memory is bounded by the chunks in flight, not the input.
"""

from __future__ import annotations

import os
import queue
import threading
import time
from typing import Callable, Iterable, Iterator

from .. import config
from ..engines import get_engine, longest_fitting, resolve_device
from . import timeline
from .chunks import Chunk
from .reader import LengthCheck

DEPTH = 2
# One engine call takes the chunks already parsed, up to this many records: a GPU wants large batches,
# the CPU engines balance their threads within one chunk.
BATCH_RECORDS = {"cpu": 1 << 16, "gpu": 1 << 19}


class Folder:
    """One engine, as asked for: algorithm, variant, device, threads, options (and GPUs)."""

    def __init__(self, algorithm: str, variant: str | None = None, device: str = "cpu", threads: int | None = None,
                 gpus=None, options: dict | None = None, progress: Callable[[int], None] | None = None):
        from ..api import check_gpus, memory_budget

        self.engine, self.variant = get_engine(algorithm, device, variant)
        self.algorithm = algorithm
        self.device = resolve_device(algorithm, device)
        self.gpus = check_gpus(gpus, self.device) if gpus is not None else None
        self.threads = threads or config.default_threads()
        self.options = dict(options or {})
        self.progress = progress
        self.budget = getattr(self.engine, "memory_budget", memory_budget)()

    def length_check(self) -> LengthCheck:
        budget = self.budget
        engine, variant = self.engine, self.variant

        def need(n: int) -> int:
            return engine.bytes_needed(n, variant)

        def describe(n: int) -> str:
            return (f"sequence of {n} nt needs about {need(n) / 2**30:.1f} GiB to fold, "
                    f"more than the {budget / 2**30:.1f} GiB available")
        return LengthCheck(longest_fitting(need, budget), describe)

    def fold(self, sequences: list[str]) -> list[tuple[int, str]]:
        if self.gpus and len(self.gpus) > 1:
            from ..api import fold_on_gpus
            return fold_on_gpus(self.engine, sequences, self.variant, self.threads, self.options, self.progress,
                                self.gpus)
        if self.gpus:
            import cupy
            with cupy.cuda.Device(self.gpus[0]):
                return self.engine.fold_batch(sequences, self.variant, self.threads, self.options, self.progress)
        return self.engine.fold_batch(sequences, self.variant, self.threads, self.options, self.progress)


def pause_point(name: str) -> None:
    """Tests of kill and resume: with ``RNAPIPE_PAUSE_AT=name`` the run stops here (it creates the file
    ``RNAPIPE_PAUSE_FILE`` and sleeps) until the test kills it."""
    if os.environ.get("RNAPIPE_PAUSE_AT") == name:
        with open(os.environ["RNAPIPE_PAUSE_FILE"], "w") as handle:
            handle.write(str(os.getpid()))
        while True:
            time.sleep(1)


class _End:
    pass


class _Failed:
    def __init__(self, error: BaseException):
        self.error = error


class Background:
    """Iterate ``items`` on a thread of its own, ``depth`` items ahead; its errors come out in order.
    ``ready()`` says whether the next item can be had without waiting."""

    def __init__(self, items: Iterable, depth: int = DEPTH, name: str = "rnapipe-reader"):
        self._q: queue.Queue = queue.Queue(maxsize=depth)
        self._stop = threading.Event()
        self._ended = False
        self._thread = threading.Thread(target=self._run, args=(items,), name=name, daemon=True)
        self._thread.start()

    def _put(self, item) -> bool:
        while not self._stop.is_set():
            try:
                self._q.put(item, timeout=0.1)
                return True
            except queue.Full:
                continue
        return False

    def _run(self, items) -> None:
        try:
            items = iter(items)
            while True:
                with timeline.timed("read"):
                    item = next(items, _End)
                if item is _End:
                    break
                if not self._put(item):
                    return
            self._put(_End)
        except BaseException as err:           # handed to the consumer, raised there
            self._put(_Failed(err))

    def __iter__(self):
        return self

    def __next__(self):
        if self._ended:
            raise StopIteration
        with timeline.timed("wait for a chunk"):
            item = self._q.get()
        if item is _End:
            self._ended = True
            raise StopIteration
        if isinstance(item, _Failed):
            self._ended = True
            raise item.error
        return item

    def ready(self) -> bool:
        return not self._ended and not self._q.empty()

    def close(self) -> None:
        self._stop.set()


def folded(chunks: Iterable[Chunk], folder: Folder, done: int = 0,
           check: Callable[[Chunk], None] | None = None) -> Iterator[tuple[Chunk, list | None]]:
    """``(chunk, [(score, structure), ...])`` in order; the first ``done`` chunks are not folded (``None``)
    but passed to ``check`` (a resumed run's digest check, on the reading thread)."""
    def checked():
        for chunk in chunks:
            if chunk.number < done and check is not None:
                check(chunk)
            yield chunk

    limit = BATCH_RECORDS.get(folder.device, BATCH_RECORDS["cpu"])
    source = Background(checked())
    try:
        yield from _fold_batches(source, folder, done, limit)
    finally:
        source.close()


def _fold_batches(source: Background, folder: Folder, done: int, limit: int):
    pending: BaseException | None = None      # an error met while gathering a batch: raised after it
    for chunk in source:
        if chunk.number < done:
            yield chunk, None
            continue
        batch = [chunk]
        size = len(chunk)
        # take whatever more is parsed already, for one larger engine call
        while size < limit and source.ready():
            try:
                more = next(source)
            except StopIteration:
                break
            except Exception as err:
                pending = err
                break
            if more.number < done:
                raise RuntimeError("a finished chunk after an unfinished one")
            batch.append(more)
            size += len(more)
        for c in batch:
            pause_point(f"fold:{c.number}")
        with timeline.timed("sequence lists"):
            sequences = batch[0].seqs if len(batch) == 1 else [s for c in batch for s in c.seqs]
        with timeline.timed("fold"):
            results = folder.fold(sequences) if sequences else []
        at = 0
        for c in batch:
            yield c, results[at:at + len(c)]
            at += len(c)
        if pending is not None:
            raise pending
