"""The streaming core shared by ``rnapipe.fold_iter`` / ``rnapipe.fold`` and ``rnapipe fold``: chunks are
read and parsed on one thread, folded in engine calls of one or more chunks (on the calling thread, or on the
CPU each call on a thread of its own, started as the call before it hands out its last records), and handed
on in input order, so that parsing chunk k+1 and writing chunk k-1 overlap folding chunk k. At most
``DEPTH`` chunks wait between two stages, so memory is bounded by the chunks in flight, not the input.
"""

from __future__ import annotations

import collections
import os
import threading
import time
from contextlib import nullcontext
from typing import Callable, Iterable, Iterator

import numpy as np

from ...cpu.batch import Relay, relayed
from ...errors import NoStructure, OutOfMemoryError
from ...io.records import Rejected
from ...params import INF
from .. import timeline
from ..pause import pause_point
from .chunks import Chunk
from .folder import Folder
from .pace import Pace

DEPTH = 2
# One engine call takes the chunks already parsed, up to this many (records, nucleotides) and up to the
# pace's batch of work (a few seconds: what a killed run loses): enough for the engine's full rate (the GPU
# reaches it at some 20,000 short sequences; the CPU engines want enough to keep their threads busy to the
# end), and no more, so that the first fold starts and the last write ends soon.
BATCH = {"cpu": (1 << 16, 1 << 22), "gpu": (1 << 17, 1 << 26), "hybrid": (1 << 17, 1 << 26)}


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


class ChunkResults:
    """One chunk's results, packed: ``scores`` (int64, pairs or dcal/mol) and ``structures`` (each followed by
    a newline), in the chunk's order; ``ensembles`` (:class:`~rnapipe.io.ensemble.EnsembleChunk`) where folded
    with the partition function, else None."""

    __slots__ = ("scores", "structures", "ensembles")

    def __init__(self, scores: np.ndarray, structures: bytes, ensembles=None):
        self.scores = scores
        self.structures = structures
        self.ensembles = ensembles

    def pairs(self) -> list[tuple[int, str]]:
        """``[(score, structure), ...]`` (what the engines' fold_batch returns)."""
        text = self.structures[:-1].decode("ascii").split("\n") if len(self.scores) else []
        return list(zip(self.scores.tolist(), text))


NO_STRUCTURE = "the constraint line leaves no structure that can form (RNAfold: empty solution set)"


def without_empty_solutions(chunk: Chunk, results: ChunkResults, on_invalid: str,
                            file_of: Callable[[int], str | None] | None = None) -> tuple[Chunk, ChunkResults]:
    """The chunk and its results without the records whose hard constraints leave no structure (the engine's
    score INF; only --enforceConstraint's can): under on_invalid 'error' the first one raises
    :class:`~rnapipe.errors.NoStructure` naming it (RNAfold stops there too), under 'skip' they join the chunk's
    rejected records. The chunk keeps the digest of what was read, so that a resumed run reads it the same."""
    bad = np.flatnonzero(results.scores >= INF)
    if not len(bad):
        return chunk, results
    ids, index = chunk.ids, chunk.index
    if on_invalid == "error":
        k = int(bad[0])
        raise NoStructure(NO_STRUCTURE, file_of(int(index[k])) if file_of is not None else None, ids[k],
                          index=int(index[k]))
    keep = np.ones(len(chunk), dtype=bool)
    keep[bad] = False
    rejected = chunk.rejected + [Rejected(int(index[k]), ids[k], file_of(int(index[k])) if file_of else None,
                                          NO_STRUCTURE) for k in bad.tolist()]
    rejected.sort(key=lambda r: r.index)
    lines = results.structures.split(b"\n")
    structures = b"".join(lines[k] + b"\n" for k in np.flatnonzero(keep).tolist())
    kept = Chunk(chunk.number, chunk.records.keep(keep), rejected, chunk.end, chunk.cost, as_read=chunk.digest())
    ensembles = results.ensembles.keep(keep) if results.ensembles is not None else None
    return kept, ChunkResults(results.scores[keep], structures, ensembles)


def fold_chunks(chunks: Iterable[Chunk], folder: Folder, done: int = 0,
                check: Callable[[Chunk], None] | None = None,
                file_of: Callable[[int], str | None] | None = None,
                pace: Pace | None = None,
                halted: Callable[[], bool] | None = None) -> Iterator[tuple[Chunk, ChunkResults | None]]:
    """``(chunk, ChunkResults)`` in input order; the first ``done`` chunks are not folded (``None``) but passed to
    ``check`` (a resumed run's digest check, on the reading thread). Each engine call takes at most ``pace``'s
    batch of work, and tells ``pace`` what it took (the pace that cuts the chunks, if they are cut by one). An
    engine that runs out of memory raises :class:`~rnapipe.errors.OutOfMemoryError` naming the longest record of
    its batch and, with ``file_of`` (a record's input index to its file's name), the file. Where ``halted()``
    says so (the consumer has failed: a closed pipe, a full disk), no further engine call is made and the
    iteration ends."""
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
    if pace is None:
        pace = Pace.of(folder)
    try:
        yield from _fold_batches(source, folder, done, records, nucleotides, pace, file_of, halted)
    finally:
        source.close()


class _Call:
    """One engine call on ``batch`` (chunks). With a relay (:class:`~rnapipe.cpu.batch.Relay`: the CPU engines)
    the call runs on a thread of its own, and ``drained`` is set once it has handed out its last group of
    records, so that the next call can start on the cores this one frees; without, it runs at once, here."""

    def __init__(self, folder: Folder, batch: list[Chunk], amount: float, relay: Relay | None):
        self.batch, self.amount = batch, amount
        self.drained = threading.Event()
        self.result: tuple | None = None           # (scores, structures[, ensembles])
        self.error: BaseException | None = None
        self.began = time.perf_counter()
        self.ended = self.began
        self._done = threading.Event()
        if relay is None:
            self._run(folder, None)
        else:
            threading.Thread(target=self._run, args=(folder, relay), name="rnapipe-fold", daemon=True).start()

    def _run(self, folder: Folder, relay: Relay | None) -> None:
        try:
            with timeline.timed("fold"), relayed(relay, self.drained) if relay is not None else nullcontext():
                self.result = folder.fold_packed([c.records for c in self.batch])
        except BaseException as err:          # raised where the results are taken
            self.error = err
        finally:
            self.ended = time.perf_counter()
            self.drained.set()
            self._done.set()

    def results(self, folder: Folder, file_of) -> tuple:
        """The call's scores and structures (and ensembles: a fold with the partition function), once it has
        ended; its error raised here."""
        self._done.wait()
        if self.error is not None:
            err, self.error = self.error, None
            if isinstance(err, MemoryError) and not isinstance(err, OutOfMemoryError):
                raise out_of_memory(err, self.batch, folder, file_of) from err
            raise err
        return self.result


def _fold_batches(source: Background, folder: Folder, done: int, records: int, nucleotides: int, pace: Pace,
                  file_of=None, halted=None):
    """The chunks of ``source`` folded in engine calls of one or more chunks, ``(chunk, ChunkResults)`` in
    order. On the CPU a call starts as soon as the one before it has handed out its last records, so the two
    overlap only while that one's threads finish theirs (:class:`~rnapipe.cpu.batch.Relay`); on a GPU one
    call follows the other."""
    relay = Relay(folder.threads) if folder.device == "cpu" else None
    calls: collections.deque[_Call] = collections.deque()
    last_end = 0.0                            # when the call before the oldest in flight ended

    def settle(keep: int):
        nonlocal last_end
        while len(calls) > keep:
            call = calls.popleft()
            scores, structures, *more = call.results(folder, file_of)
            ensembles = more[0] if more else None      # a fold with the partition function's
            pace.observe(call.amount, call.ended - max(call.began, last_end))
            last_end = call.ended
            timeline.mark("first fold ends")
            at, offset = 0, 0
            for c in call.batch:
                n = len(c)
                end = offset + int(c.lens.sum()) + n
                part = ensembles.take(at, at + n) if ensembles is not None else None
                yield c, ChunkResults(scores[at:at + n], structures[offset:end], part)
                at += n
                offset = end
            del call, scores, structures, ensembles     # not held while the next batch is gathered and folded

    pending: BaseException | None = None      # an error met while gathering a batch: raised after it
    held: Chunk | None = None                 # a chunk left for the next call: the first of its batch
    try:
        while True:
            if held is not None:
                chunk, held = held, None
            else:
                chunk = next(source, None)
                if chunk is None:
                    break
            if chunk.number < done:
                yield chunk, None
                continue
            batch = [chunk]
            size, nt, amount = len(chunk), chunk.nucleotides, chunk.cost
            most = pace.batch_work()
            # take whatever more is parsed already, for one larger engine call, while the call stays within
            # the batch limits and the pace's batch of work (what a killed run loses): a chunk that would take
            # it past them waits for the next call
            while size < records and nt < nucleotides and amount < most and source.ready():
                try:
                    more = next(source)
                except StopIteration:
                    break
                except Exception as err:
                    pending = err
                    break
                if more.number < done:
                    raise RuntimeError("a finished chunk after an unfinished one")
                if amount + more.cost > most or size + len(more) > records or nt + more.nucleotides > nucleotides:
                    held = more
                    break
                batch.append(more)
                size += len(more)
                nt += more.nucleotides
                amount += more.cost
            if halted is not None and halted():
                return
            for c in batch:
                pause_point(f"fold:{c.number}")
            timeline.mark("first fold starts")
            calls.append(_Call(folder, batch, amount, relay))
            del batch, c
            if relay is None:
                yield from settle(0)
            else:
                yield from settle(1)              # every call but the one just started
                calls[-1].drained.wait()
            if pending is not None:
                yield from settle(0)
                raise pending
        yield from settle(0)
    finally:
        if relay is not None:
            relay.stop.set()                   # a call still in flight (the consumer stopped) takes no more


def out_of_memory(err: MemoryError, batch: list[Chunk], folder, file_of=None) -> OutOfMemoryError:
    """The error for an engine's MemoryError on ``batch``: it names the batch's longest record (the one whose
    matrices are the largest), its length, what the engine said and the memory the estimate allowed."""
    lens = np.concatenate([c.lens for c in batch])
    k = int(np.argmax(lens))
    for chunk in batch:
        if k < len(chunk):
            break
        k -= len(chunk)
    index = int(chunk.index[k])
    count = len(lens)
    others = f", the longest of the {count} records folded together" if count > 1 else ""
    said = " ".join(str(err).split())
    reason = f"ran out of memory folding its {int(chunk.lens[k])} nt{others}" + (f" ({said})" if said else "")
    limit = getattr(folder, "budget_limit", None)
    if limit is not None:
        from ...memory import AVAILABLE

        under = "" if limit == AVAILABLE else f" under {limit}"
        reason += f"; rnapipe expected {folder.budget / 2**30:.1f} GiB available{under}"
    return OutOfMemoryError(reason, file=file_of(index) if file_of is not None else None, record=chunk.ids[k],
                            index=index)
