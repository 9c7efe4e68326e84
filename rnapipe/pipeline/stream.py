"""The streaming core shared by ``rnapipe.fold_iter`` / ``rnapipe.fold`` and ``rnapipe fold``: chunks are
read and parsed on one thread, folded on the calling one (engine calls of one or more chunks), and handed
on in input order, so that parsing chunk k+1 and writing chunk k-1 overlap folding chunk k. At most
``DEPTH`` chunks wait between two stages, so memory is bounded by the chunks in flight, not the input.
"""

from __future__ import annotations

import collections
import os
import threading
import time
from typing import Callable, Iterable, Iterator

import numpy as np

from .. import config
from ..engines import get_engine, longest_fitting, resolve_device
from . import timeline
from .chunks import Chunk
from .reader import LengthCheck

DEPTH = 2
# One engine call takes the chunks already parsed, up to this many (records, nucleotides): enough for the
# engine's full rate (the GPU reaches it at some 20,000 short sequences; the CPU engines want enough to keep
# their threads busy to the end), and no more, so that the first fold starts and the last write ends soon.
BATCH = {"cpu": (1 << 16, 1 << 22), "gpu": (1 << 17, 1 << 26), "hybrid": (1 << 17, 1 << 26)}


def make_folder(algorithm: str, variant: str | None = None, device: str = "cpu", threads: int | None = None,
                gpus=None, options: dict | None = None, progress: Callable[[int], None] | None = None,
                reprofile: bool = False, say: Callable[[str], None] | None = None, split: str | None = None):
    """A :class:`Folder`, or for ``device='hybrid'`` a :class:`~.hybrid.HybridFolder` (CPU and GPUs at once);
    ``device='auto'`` picks one of hybrid, gpu and cpu (:func:`~.hybrid.auto_device`) and says why."""
    profile = None
    if device == "auto":
        from .hybrid import auto_device
        device, why, profile = auto_device(algorithm, variant, threads, gpus, options, reprofile)
        if say:
            say(f"--device auto: {device} ({why})")
    if device == "hybrid":
        from .hybrid import HybridFolder
        return HybridFolder(algorithm, variant, threads, gpus, options, progress, reprofile and profile is None,
                            say, profile=profile, split=split)
    return Folder(algorithm, variant, device, threads, gpus, options, progress)


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

    def fold_packed(self, parts: list) -> tuple[np.ndarray, bytes]:
        """Fold the records of ``parts`` (:class:`Records`) in order: int64 scores and the structures, each
        followed by a newline. Through the engine's ``fold_packed`` where it has one (no object a
        sequence), else its ``fold_batch``."""
        count = sum(len(p) for p in parts)
        if count == 0:
            return np.zeros(0, dtype=np.int64), b""
        packed = getattr(self.engine, "fold_packed", None)
        if packed is not None and not (self.gpus and len(self.gpus) > 1):
            text = parts[0].seqs_text if len(parts) == 1 else b"".join(p.seqs_text for p in parts)
            lens = parts[0].lens if len(parts) == 1 else np.concatenate([p.lens for p in parts])
            if self.gpus:
                import cupy
                with cupy.cuda.Device(self.gpus[0]):
                    return packed(text, lens, self.variant, self.threads, self.options, self.progress)
            return packed(text, lens, self.variant, self.threads, self.options, self.progress)
        with timeline.timed("sequence lists"):
            sequences = parts[0].seqs if len(parts) == 1 else [s for p in parts for s in p.seqs]
        results = self.fold(sequences)
        scores = np.fromiter((r[0] for r in results), dtype=np.int64, count=count)
        structures = ("\n".join([r[1] for r in results]) + "\n").encode("ascii")
        return scores, structures

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
    """Iterate ``items`` on a thread of its own, ahead of the consumer by at most ``depth`` items and, with
    ``weight``, by at most ``limit`` of their summed weight (one item always goes); its errors come out in
    order. ``ready()`` says whether the next item can be had without waiting."""

    def __init__(self, items: Iterable, depth: int = DEPTH, name: str = "rnapipe-reader",
                 weight: Callable[[object], float] | None = None, limit: float = float("inf")):
        self._q: collections.deque = collections.deque()
        self._cv = threading.Condition()
        self._depth, self._weight, self._limit = depth, weight, limit
        self._held = 0.0
        self._stop = False
        self._ended = False
        self._thread = threading.Thread(target=self._run, args=(items,), name=name, daemon=True)
        self._thread.start()

    def _put(self, item, weight: float) -> bool:
        with self._cv:
            while not self._stop and self._q and (len(self._q) >= self._depth or self._held + weight > self._limit):
                self._cv.wait()
            if self._stop:
                return False
            self._q.append((item, weight))
            self._held += weight
            self._cv.notify_all()
            return True

    def _run(self, items) -> None:
        try:
            items = iter(items)
            while True:
                with timeline.timed("read"):
                    item = next(items, _End)
                if item is _End:
                    break
                if not self._put(item, self._weight(item) if self._weight else 0.0):
                    return
            self._put(_End, 0.0)
        except BaseException as err:           # handed to the consumer, raised there
            self._put(_Failed(err), 0.0)

    def __iter__(self):
        return self

    def __next__(self):
        if self._ended:
            raise StopIteration
        with timeline.timed("wait for a chunk"), self._cv:
            while not self._q:
                self._cv.wait()
            item, weight = self._q.popleft()
            self._held -= weight
            self._cv.notify_all()
        if item is _End:
            self._ended = True
            raise StopIteration
        if isinstance(item, _Failed):
            self._ended = True
            raise item.error
        return item

    def ready(self) -> bool:
        with self._cv:
            return not self._ended and bool(self._q)

    def close(self) -> None:
        with self._cv:
            self._stop = True
            self._cv.notify_all()


class Folded:
    """One chunk's results, packed: ``scores`` (int64, pairs or dcal/mol) and ``structures`` (each followed by
    a newline), in the chunk's order."""

    __slots__ = ("scores", "structures")

    def __init__(self, scores: np.ndarray, structures: bytes):
        self.scores = scores
        self.structures = structures

    def pairs(self) -> list[tuple[int, str]]:
        """``[(score, structure), ...]`` (what the engines' fold_batch returns)."""
        text = self.structures[:-1].decode("ascii").split("\n") if len(self.scores) else []
        return list(zip(self.scores.tolist(), text))


def folded(chunks: Iterable[Chunk], folder: Folder, done: int = 0,
           check: Callable[[Chunk], None] | None = None) -> Iterator[tuple[Chunk, Folded | None]]:
    """``(chunk, Folded)`` in input order; the first ``done`` chunks are not folded (``None``) but passed to
    ``check`` (a resumed run's digest check, on the reading thread)."""
    def checked():
        for chunk in chunks:
            if chunk.number < done and check is not None:
                check(chunk)
            yield chunk

    records, nucleotides = BATCH.get(folder.device, BATCH["cpu"])
    records = int(os.environ.get("RNAPIPE_BATCH_RECORDS") or records)     # smaller batches (tests)
    # parsed chunks wait, up to two batches' worth, so that a batch can be gathered from what is ready
    source = Background(checked(), depth=1 << 30, weight=lambda c: len(c) / records + c.nucleotides / nucleotides,
                        limit=4.0)
    try:
        yield from _fold_batches(source, folder, done, records, nucleotides)
    finally:
        source.close()


def _fold_batches(source: Background, folder: Folder, done: int, records: int, nucleotides: int):
    pending: BaseException | None = None      # an error met while gathering a batch: raised after it
    for chunk in source:
        if chunk.number < done:
            yield chunk, None
            continue
        batch = [chunk]
        size, nt = len(chunk), chunk.nucleotides
        # take whatever more is parsed already, for one larger engine call
        while size < records and nt < nucleotides and source.ready():
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
            nt += more.nucleotides
        for c in batch:
            pause_point(f"fold:{c.number}")
        timeline.mark("first fold starts")
        with timeline.timed("fold"):
            scores, structures = folder.fold_packed([c.records for c in batch])
        timeline.mark("first fold ends")
        at, offset = 0, 0
        for c in batch:
            n = len(c)
            end = offset + int(c.lens.sum()) + n
            yield c, Folded(scores[at:at + n], structures[offset:end])
            at += n
            offset = end
        del batch, c, scores, structures        # not held while the next batch is gathered and folded
        if pending is not None:
            raise pending
