"""The Python API: ``rnapipe.fold``."""

from __future__ import annotations

from dataclasses import dataclass
from typing import Callable, Iterable

import psutil

from . import config
from .engines import get_engine
from .errors import InputError, SequenceTooLongError
from .io import Record, Rejected, as_records


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


def check_memory(record: Record, need: int, budget: int) -> None:
    if need > budget:
        raise SequenceTooLongError(
            f"sequence of {len(record.sequence)} nt needs about {need / 2**30:.1f} GiB to fold, "
            f"more than the {budget / 2**30:.1f} GiB available", file=record.file, record=record.id)


def fold(sequences_or_records, algorithm: str = config.DEFAULT_ALGORITHM, variant: str | None = None,
         device: str = "cpu", threads: int | None = None, on_invalid: str = "error",
         progress: Callable[[int], None] | None = None, **options) -> Results:
    """Fold sequences and return a :class:`Results` list in input order.

    ``sequences_or_records``: one sequence string, or an iterable of strings, ``(id, sequence)`` pairs,
    :class:`rnapipe.io.Record` or Biopython ``SeqRecord`` objects. Sequences are normalised (upper case,
    T→U) and validated; a bad one raises :class:`rnapipe.errors.InputError` naming it, or with
    ``on_invalid='skip'`` is left out and listed in ``results.rejected``.

    ``options`` go to the engine: ``min_loop`` (Nussinov), ``temperature``, ``dangles``, ``params`` (Zuker).
    """
    if on_invalid not in ("error", "skip"):
        raise ValueError("on_invalid must be 'error' or 'skip'")
    engine, variant = get_engine(algorithm, device, variant)
    threads = threads or config.default_threads()
    rejected: list[Rejected] = []
    records = list(as_records(sequences_or_records, on_invalid=on_invalid, rejected=rejected))
    budget = getattr(engine, "memory_budget", memory_budget)()
    keep = []
    for record in records:
        try:
            check_memory(record, engine.bytes_needed(len(record.sequence), variant), budget)
        except InputError as err:
            if on_invalid == "error":
                raise
            rejected.append(Rejected(record.index, record.id, record.file, err.reason))
            continue
        keep.append(record)
    folded = engine.fold_batch([r.sequence for r in keep], variant, threads, options, progress)
    results = [Result(r.id, r.sequence, structure, int(score), algorithm, r.index)
               for r, (score, structure) in zip(keep, folded)]
    rejected.sort(key=lambda r: r.index)
    return Results(results, rejected)
