"""The Python API: ``rnapipe.fold``."""

from __future__ import annotations

from dataclasses import dataclass
from typing import Callable, Iterable, Iterator, Sequence

import psutil

from . import config
from .errors import UnavailableError, UsageError
from .io import Rejected


@dataclass(frozen=True)
class Result:
    """One folded sequence. ``score`` is base pairs (Nussinov) or kcal/mol (Zuker);
    ``score_int`` is the exact integer behind it (pairs, or dcal/mol)."""

    id: str
    sequence: str
    structure: str
    score_int: int
    algorithm: str
    index: int

    @property
    def score(self) -> float | int:
        return self.score_int / 100.0 if self.algorithm == "zuker" else self.score_int

    @property
    def length(self) -> int:
        return len(self.sequence)


class Results(list):
    """Results in input order; ``rejected`` lists the records skipped under ``on_invalid='skip'``."""

    def __init__(self, items: Iterable[Result] = (), rejected: Iterable[Rejected] = ()):
        super().__init__(items)
        self.rejected: list[Rejected] = list(rejected)


def memory_budget() -> int:
    """Bytes one sequence's matrices may take: a fraction of the host memory available now.

    An engine that keeps its matrices elsewhere (a GPU) defines its own ``memory_budget()``."""
    return int(psutil.virtual_memory().available * config.MEMORY_FRACTION)


def fold(sequences_or_records, algorithm: str = config.DEFAULT_ALGORITHM, variant: str | None = None,
         device: str = "cpu", threads: int | None = None, on_invalid: str = "error",
         progress: Callable[[int], None] | None = None, gpus: Sequence[int] | None = None,
         **options) -> Results:
    """Fold sequences and return a :class:`Results` list in input order.

    ``sequences_or_records``: one sequence string, or an iterable of strings, ``(id, sequence)`` pairs,
    :class:`rnapipe.io.Record` or Biopython ``SeqRecord`` objects. Sequences are normalised (upper case,
    T→U) and validated; a bad one raises :class:`rnapipe.errors.InputError` naming it, or with
    ``on_invalid='skip'`` is left out and listed in ``results.rejected``.

    ``gpus`` (with ``device='gpu'``): CUDA device numbers to spread the sequences over, one host thread
    each (default: the current device only).

    ``options`` go to the engine: ``min_loop`` (Nussinov), ``temperature``, ``dangles``, ``params`` (Zuker).
    """
    rejected: list[Rejected] = []
    results = list(fold_iter(sequences_or_records, algorithm, variant, device, threads, on_invalid, rejected,
                             progress, gpus, **options))
    rejected.sort(key=lambda r: r.index)
    return Results(results, rejected)


def fold_iter(sequences_or_records, algorithm: str = config.DEFAULT_ALGORITHM, variant: str | None = None,
              device: str = "cpu", threads: int | None = None, on_invalid: str = "error",
              rejected: list | None = None, progress: Callable[[int], None] | None = None,
              gpus: Sequence[int] | None = None, **options) -> Iterator[Result]:
    """Fold a stream of sequences, yielding :class:`Result` objects in input order as chunks finish.

    Takes what :func:`fold` takes, any iterable (a generator, a Biopython ``SeqIO.parse``), and reads it a
    chunk at a time: memory holds the chunks in flight, not the whole input. Records skipped under
    ``on_invalid='skip'`` are appended to ``rejected`` (a list, if given) as they are met.
    """
    from .pipeline.chunks import chunked
    from .pipeline.reader import record_pieces
    from .pipeline.stream import folded, make_folder

    if on_invalid not in ("error", "skip"):
        raise ValueError("on_invalid must be 'error' or 'skip'")
    folder = make_folder(algorithm, variant, device, threads, gpus, options, progress)
    if rejected is None:
        rejected = []
    pieces = record_pieces(sequences_or_records, on_invalid, folder.length_check(), rejected)
    for chunk, results in folded(chunked(pieces), folder):
        for record_id, sequence, tag, (score, structure) in zip(chunk.ids, chunk.seqs, chunk.tags, results.pairs()):
            yield Result(record_id, sequence, structure, int(score), algorithm, tag)


def check_gpus(gpus: Sequence[int], device: str) -> list[int]:
    """The GPU numbers of a ``gpus=`` request, checked against the devices CUDA sees."""
    gpus = [int(g) for g in gpus]
    if device != "gpu":
        raise UsageError("--gpus (gpus=) needs --device gpu")
    if not gpus:
        raise UsageError("gpus= / --gpus needs at least one GPU number")
    import cupy
    count = cupy.cuda.runtime.getDeviceCount()
    wrong = [g for g in gpus if not 0 <= g < count]
    if wrong:
        raise UnavailableError(f"GPU {wrong[0]} does not exist: CUDA sees {count} GPU(s), numbered 0 to {count - 1}")
    return gpus


def split_for_gpus(lengths: Sequence[int], parts: int) -> list[list[int]]:
    """Indices of ``lengths`` dealt to ``parts`` workers, longest first in turn, so that each gets a like
    share of every length (each part keeps input order)."""
    order = sorted(range(len(lengths)), key=lambda k: -lengths[k])
    return [sorted(order[p::parts]) for p in range(parts)]


def fold_on_gpus(engine, sequences: list[str], variant: str, threads: int, options: dict,
                 progress: Callable[[int], None] | None, gpus: Sequence[int]) -> list:
    """``engine.fold_batch`` over several GPUs, one host thread each; results in input order."""
    import threading
    from concurrent.futures import ThreadPoolExecutor

    import cupy

    lock = threading.Lock()

    def report(k: int) -> None:
        if progress is not None:
            with lock:
                progress(k)

    parts = split_for_gpus([len(s) for s in sequences], len(gpus))
    per_gpu_threads = max(1, threads // len(gpus))

    def run(gpu: int, part: list[int]) -> list:
        with cupy.cuda.Device(gpu):
            return engine.fold_batch([sequences[k] for k in part], variant, per_gpu_threads, options, report)

    results: list = [None] * len(sequences)
    with ThreadPoolExecutor(max_workers=len(gpus)) as pool:
        futures = [pool.submit(run, g, part) for g, part in zip(gpus, parts)]
        for part, future in zip(parts, futures):
            for k, r in zip(part, future.result()):
                results[k] = r
    return results
