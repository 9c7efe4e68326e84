"""Zuker MFE on the GPU for batches of short sequences (see rnapipe.gpu.zuker for the engine).

Interface used by rnapipe.gpu.zuker.fold_batch:

* ``MAX_N``: the longest sequence this path folds (0: the path is off and every batch goes to the
  general fills of rnapipe.gpu.zuker);
* ``bytes_needed(n)``: device memory one sequence of n nt takes in a batch;
* ``fold_group(seqs, model)``: fold non-empty sequences (longest first, each <= MAX_N) on the current
  device and return [(mfe, dot-bracket)] in the same order, identical to rnapipe.cpu.zuker.
"""

from __future__ import annotations

from ..model import Model

MAX_N = 0


def bytes_needed(n: int) -> int:
    N = n + 2
    return 28 * N * N + 64


def fold_group(seqs: list[str], model: Model) -> list[tuple[int, str]]:
    raise NotImplementedError("the short-sequence GPU path is not built yet")
