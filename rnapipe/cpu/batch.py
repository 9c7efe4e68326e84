"""Run a nogil per-sequence fold over many sequences on a pool of threads, longest first, with no more
sequences' matrices in memory at once than the memory holds.

The pool's threads are kept for the process (:data:`POOL`), and a call's threads pull groups of sequences
from one shared queue: a call of a few sequences costs no thread starts, no per-thread copies of the energy
tables and one hand-over of the GIL per group, which matters when another thread (the GPU's feeder in a
hybrid run) keeps the GIL busy: each hand-over can wait for the interpreter's switch interval (5 ms)."""

from __future__ import annotations

import contextlib
import contextvars
import queue
import threading
from typing import Callable, Iterator, Sequence, TypeVar

T = TypeVar("T")


class MemoryGate:
    """Bytes that threads take before they allocate a sequence's matrices and give back after. A thread
    waits while what the others hold and what it needs would pass the budget; a thread alone always goes
    on (the caller has checked that every single sequence fits). Every holder gives back when its
    sequence is done, so every wait ends."""

    def __init__(self, budget: int):
        self.budget = budget
        self.held = 0
        self.peak = 0
        self._cv = threading.Condition()

    def take(self, need: int) -> None:
        with self._cv:
            while self.held and self.held + need > self.budget:
                self._cv.wait()
            self.held += need
            self.peak = max(self.peak, self.held)

    def give_back(self, need: int) -> None:
        with self._cv:
            self.held -= need
            self._cv.notify_all()

    def set_budget(self, budget: int) -> None:
        with self._cv:
            self.budget = budget
            self._cv.notify_all()


class Relay:
    """Engine calls made one after another on the same cores, each started while the one before folds its last
    groups (the stream's CPU calls, :mod:`rnapipe.pipeline.folding.stream`), so that no core idles at the end of
    a call: a worker of any of them takes one of ``threads`` cores before its first group and gives it back when
    no group is left for it, so the next call's workers start as the last one's end; the call in progress
    sets its ``drained`` event when it has handed out its last group (:func:`relayed`); one memory gate
    (:meth:`gate`) bounds the large workspaces of the calls together; ``stop`` ends them all (the workers
    take no further group)."""

    def __init__(self, threads: int):
        self.cores = threading.Semaphore(max(1, threads))
        self.stop = threading.Event()
        self._gate: MemoryGate | None = None
        self._lock = threading.Lock()

    def gate(self, budget: int) -> MemoryGate:
        """The calls' one memory gate, its budget the latest call's."""
        with self._lock:
            if self._gate is None:
                self._gate = MemoryGate(budget)
            else:
                self._gate.set_budget(budget)
            return self._gate


_RELAYED: contextvars.ContextVar[tuple[Relay, threading.Event] | None] = contextvars.ContextVar(
    "rnapipe_relayed", default=None)


@contextlib.contextmanager
def relayed(relay: Relay, drained: threading.Event) -> Iterator[None]:
    """Calls of :func:`map_longest_first` made by this thread inside the block are calls of ``relay``, and set
    ``drained`` when their last group is handed out."""
    token = _RELAYED.set((relay, drained))
    try:
        yield
    finally:
        _RELAYED.reset(token)


def current_relay() -> Relay | None:
    """The relay this thread's calls are made in (:func:`relayed`), if any."""
    held = _RELAYED.get()
    return held[0] if held is not None else None


def host_budget(options: dict | None = None) -> int:
    """Bytes of host memory one batch's matrices may take together: ``options['memory_budget']`` (tests),
    else rnapipe's share of the memory available now (rnapipe.memory.memory_budget)."""
    if options and options.get("memory_budget") is not None:
        return int(options["memory_budget"])
    from ..memory import memory_budget
    return memory_budget()


def map_longest_first(fold_one: Callable[[str], T], sequences: Sequence[str], threads: int,
                      progress: Callable[[int], None] | None = None,
                      bytes_of: Callable[[int], int] | None = None, budget: int | None = None,
                      grouped: bool = False) -> list[T]:
    """Apply ``fold_one`` to every sequence and return the results in input order.

    ``fold_one`` should spend its time in ``njit(nogil=True)`` code so that threads run in parallel.
    Longest sequences start first so that the pool does not end waiting on one long straggler.
    ``progress(k)`` is called with the number of sequences finished since the last call. With
    ``bytes_of(len(sequence))`` and ``budget``, threads fold only as many sequences at once as fit in
    ``budget`` bytes together (see MemoryGate). Short sequences are folded in groups, one task of the pool a
    group (:func:`_groups`); ``grouped``: the items are groups already, in the order to fold them (their
    longest sequences first), one task each, so that a call's last tasks, which other threads may idle beside,
    are its smallest.
    """
    if bytes_of is not None and budget is not None and threads > 1:
        gate = MemoryGate(budget)
        inner = fold_one

        def fold_one(sequence):
            need = bytes_of(len(sequence))
            gate.take(need)
            try:
                return inner(sequence)
            finally:
                gate.give_back(need)
    order = list(range(len(sequences))) if grouped else sorted(range(len(sequences)), key=lambda k: -len(sequences[k]))
    results: list = [None] * len(sequences)
    relay, drained = _RELAYED.get() or (None, None)
    if threads <= 1 or len(sequences) <= 1:
        with relay.cores if relay is not None else contextlib.nullcontext():
            for k in order:
                results[k] = fold_one(sequences[k])
                if progress is not None:
                    progress(1)
        return results
    groups = [[k] for k in order] if grouped else _groups(order, [len(s) for s in sequences], threads)
    following = iter(range(len(groups)))       # next() on it is atomic under the GIL: the shared queue
    done: queue.SimpleQueue = queue.SimpleQueue()
    stop = threading.Event()

    def work() -> None:
        if relay is not None:
            relay.cores.acquire()
        try:
            for g in following:
                if stop.is_set() or (relay is not None and relay.stop.is_set()):
                    break
                for k in groups[g]:
                    results[k] = fold_one(sequences[k])
                done.put(len(groups[g]))
            else:
                if drained is not None:
                    drained.set()
        except BaseException as err:          # raised on the calling thread
            done.put(err)
        finally:
            if relay is not None:
                relay.cores.release()
            done.put(None)

    workers = min(threads, len(groups))
    for _ in range(workers):
        POOL.submit(work)
    try:
        ended = 0
        while ended < workers:
            item = done.get()
            if item is None:
                ended += 1
            elif isinstance(item, BaseException):
                raise item
            elif progress is not None:
                progress(item)
    except BaseException:
        # Ctrl-C or a failed fold: the workers take no further group (the ones running finish theirs).
        stop.set()
        raise
    return results


class _Pool:
    """Threads kept from one call to the next (a call starts no thread and each thread keeps what it holds
    per thread: the engines' table copies, Numba's thread state). ``submit`` runs a job on an idle thread,
    starting one when none is idle, so concurrent calls never wait on each other's jobs."""

    def __init__(self):
        self._jobs: queue.SimpleQueue = queue.SimpleQueue()
        self._lock = threading.Lock()
        self._idle = 0

    def submit(self, job: Callable[[], None]) -> None:
        with self._lock:
            if self._idle:
                self._idle -= 1
            else:
                threading.Thread(target=self._serve, name="rnapipe-cpu", daemon=True).start()
        self._jobs.put(job)

    def _serve(self) -> None:
        while True:
            job = self._jobs.get()
            try:
                job()
            finally:
                with self._lock:
                    self._idle += 1


POOL = _Pool()


# A group of sequences is one task of the pool: a future per sequence costs more than folding a short one.
# A group closes at GROUP_CELLS (sum of n²), or sooner so that each thread gets about four groups.
GROUP_CELLS = 1 << 20


def _groups(order: list[int], lengths: list[int], threads: int) -> list[list[int]]:
    """Consecutive runs of ``order`` (longest first), so the longest start first."""
    most = max(1, -(-len(order) // (4 * threads)))
    groups, group, cells = [], [], 0
    for k in order:
        group.append(k)
        cells += lengths[k] * lengths[k]
        if cells >= GROUP_CELLS or len(group) >= most:
            groups.append(group)
            group, cells = [], 0
    if group:
        groups.append(group)
    return groups
