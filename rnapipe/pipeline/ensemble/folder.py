"""The folder of a fold with the partition function: the CPU or the GPU partition engine (rnapipe.cpu.partition,
rnapipe.gpu.partition) behind the interface of :class:`~..folding.folder.Folder`, so that the stream, the journal
and the outputs take it as they take the MFE engines. Its results carry each record's MFE structure and score, as
the MFE folds' do, and the ensembles (:class:`rnapipe.io.ensemble.EnsembleChunk`) beside them."""

from __future__ import annotations

from typing import Callable

import numpy as np

from ...io.ensemble import Ensemble, EnsembleChunk
from ...model import Model
from .. import timeline
from ..folding.folder import Folder
from .request import Settings

VARIANT = "partition"


class _Engine:
    """What the memory checks read of an engine: the bytes one sequence takes (on the CPU about 78·n²: the
    partition function's matrices and the MFE fold's; on the GPU 32·n²)."""

    VARIANTS = (VARIANT,)

    def __init__(self, device: str):
        self.device = device

    def module(self):
        if self.device == "gpu":
            from ...gpu import partition
        else:
            from ...cpu import partition
        return partition

    def bytes_needed(self, n: int, variant: str = VARIANT) -> int:
        return self.module().bytes_needed(n)


def packed_results(results: list, settings: Settings) -> tuple[np.ndarray, bytes, EnsembleChunk]:
    """A batch's engine results (``PartitionResult``, in order) as a folder returns them: int64 MFE scores
    (dcal/mol), the MFE structures (each followed by a newline) and the records' ensembles."""
    scores = np.fromiter((round(r.mfe * 100) for r in results), dtype=np.int64, count=len(results))
    structures = "".join([r.structure + "\n" for r in results]).encode("ascii")
    return scores, structures, EnsembleChunk([Ensemble.of(r) for r in results], settings.mea)


class EnsembleFolder(Folder):
    """Zuker's partition function on ``device`` ('cpu' or 'gpu'; ``gpus``: the GPUs, default the current one),
    with ``settings`` (:class:`~.request.Settings`)."""

    def __init__(self, threads: int | None = None, options: dict | None = None,
                 progress: Callable[[int], None] | None = None, settings: Settings | None = None,
                 device: str = "cpu", gpus=None):
        super().__init__("zuker", None, device, threads, gpus, options, progress)
        self.engine, self.variant = _Engine(self.device), VARIANT
        self.ensemble = settings or Settings()
        self.model = Model.from_options(self.options)
        self.options.update(self.ensemble.options())      # what the journal records of the fold

    def fold_packed(self, parts: list) -> tuple[np.ndarray, bytes, EnsembleChunk]:
        """Fold the records of ``parts`` in order: int64 MFE scores (dcal/mol), the MFE structures (each
        followed by a newline) and the records' ensembles."""
        with timeline.timed("sequence lists"):
            sequences = [s for p in parts for s in p.seqs]
        return packed_results(self.fold_ensembles(sequences), self.ensemble)

    def fold_ensembles(self, sequences: list[str]) -> list:
        """The engine's results (``PartitionResult``) of ``sequences``, in order: on this folder's GPUs where it
        has a list of them (several: a like share of every length each, :func:`rnapipe.gpu.devices.on_gpus`)."""
        module = self.engine.module()

        def fold(seqs: list[str], threads: int, progress) -> list:
            return module.fold_batch(seqs, self.model, threads, self.ensemble.threshold, self.ensemble.gamma,
                                     progress)
        if self.gpus:
            from ...gpu.devices import on_gpus
            return on_gpus(fold, sequences, self.threads, self.progress, self.gpus)
        return fold(sequences, self.threads, self.progress)
