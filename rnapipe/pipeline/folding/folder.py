"""One engine, as asked for: algorithm, variant, device, threads, options and GPUs; folds a batch of packed
records (:meth:`Folder.fold_packed`) or a list of sequences (:meth:`Folder.fold`)."""

from __future__ import annotations

import contextlib
import threading
from typing import Callable

import numpy as np

from ... import config
from ...engines import get_engine, resolve_device
from ...gpu.devices import check_gpus, fold_on_gpus
from ...memory import AVAILABLE, budget_and_limit, longest_fitting
from .. import timeline
from ..input.reader import LengthCheck


def one_at_a_time(callback: Callable[[int], None] | None) -> Callable[[int], None] | None:
    """``callback`` called by one thread at a time: engine calls may overlap (the stream's relayed CPU calls),
    and each reports its progress from its own thread."""
    if callback is None:
        return None
    lock = threading.Lock()

    def call(count: int) -> None:
        with lock:
            callback(count)
    return call


class Folder:
    """One engine, as asked for: algorithm, variant, device, threads, options (and GPUs)."""

    def __init__(self, algorithm: str, variant: str | None = None, device: str = "cpu", threads: int | None = None,
                 gpus=None, options: dict | None = None, progress: Callable[[int], None] | None = None):
        self.engine, self.variant = get_engine(algorithm, device, variant)
        self.algorithm = algorithm
        self.device = resolve_device(algorithm, device)
        self.gpus = check_gpus(gpus, self.device) if gpus is not None else None
        self.threads = threads or config.default_threads()
        self.options = dict(options or {})
        self.progress = one_at_a_time(progress)
        own = getattr(self.engine, "memory_budget", None)     # an engine with its own memory (a GPU's)
        # bytes one sequence may take, and the limit that sets it (None: the engine's own memory)
        self.budget, self.budget_limit = (own(), None) if own is not None else budget_and_limit()

    def length_check(self) -> LengthCheck:
        budget = self.budget
        engine, variant = self.engine, self.variant
        under = f" under {self.budget_limit}" if self.budget_limit not in (None, AVAILABLE) else ""

        def need(n: int) -> int:
            return engine.bytes_needed(n, variant)

        def describe(n: int) -> str:
            return (f"sequence of {n} nt needs about {need(n) / 2**30:.1f} GiB to fold, "
                    f"more than the {budget / 2**30:.1f} GiB available{under}")
        return LengthCheck(longest_fitting(need, budget), describe)

    def _first_gpu(self):
        """The context that makes the first of ``gpus`` current (none where this folder has no GPU list)."""
        if not self.gpus:
            return contextlib.nullcontext()
        import cupy
        return cupy.cuda.Device(self.gpus[0])

    def fold_packed(self, parts: list) -> tuple[np.ndarray, bytes]:
        """Fold the records of ``parts`` (:class:`~..records.Records`) in order: int64 scores and the structures, each
        followed by a newline. Through the engine's ``fold_packed`` where it has one (no object per
        sequence), else its ``fold_batch``."""
        count = sum(len(p) for p in parts)
        if count == 0:
            return np.zeros(0, dtype=np.int64), b""
        if any(p.cons_text is not None or p.shape is not None for p in parts):
            constraints = shape = None
            if any(p.cons_text is not None for p in parts):
                constraints = [c for p in parts for c in (p.constraints or ["." * int(n) for n in p.lens])]
            if any(p.shape is not None for p in parts):
                shape = [v for p in parts for v in (p.shape or [None] * len(p))]
                shape = [np.zeros(int(n), dtype=np.int32) if v is None else v
                         for v, n in zip(shape, np.concatenate([p.lens for p in parts]))]
            with self._first_gpu():               # per-record data: folded on the first GPU
                results = self.engine.fold_batch([s for p in parts for s in p.seqs], self.variant, self.threads,
                                                 self.options, self.progress, constraints=constraints, shape=shape)
            scores = np.fromiter((r[0] for r in results), dtype=np.int64, count=count)
            return scores, ("\n".join([r[1] for r in results]) + "\n").encode("ascii")
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
            return fold_on_gpus(self.engine, sequences, self.variant, self.threads, self.options, self.progress,
                                self.gpus)
        if self.gpus:
            import cupy
            with cupy.cuda.Device(self.gpus[0]):
                return self.engine.fold_batch(sequences, self.variant, self.threads, self.options, self.progress)
        return self.engine.fold_batch(sequences, self.variant, self.threads, self.options, self.progress)

