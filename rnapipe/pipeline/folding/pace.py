"""How fast the device in use folds: what cuts the input into journal units of a few seconds of work and bounds
an engine call, so that a killed run loses seconds, not minutes, whatever the input's size.

A record's work is ``work(L) = L³ + SHAPE_B·L² + SHAPE_C``: the CPU engines' time per record follows this
shape within about ±40 % from 30 to 1,000 nt (the L² term is what grows with the matrices, the interior loops'
fixed window above all; the constant the record's own overhead); a GPU's time per record departs further from
it where its fill changes, which the measured rate follows as the lengths change. A run's :class:`Pace`
starts from a guess of the rate (work a second) per algorithm and device, on the slow side so that the first
units come out short rather than long, and then follows the rate its engine calls measure: after each call,
:meth:`Pace.observe` with the call's work and seconds (the first call, which also loads the engine, is not
counted).
"""

from __future__ import annotations

import math
import threading

import numpy as np

SHAPE_B = 330.0
SHAPE_C = 1e4

UNIT_SECONDS = 2.0                  # a journal unit: this much predicted work on the device in use
# One engine call takes chunks up to this much predicted work (or the batch limits in records and
# nucleotides, :data:`.stream.BATCH`; one chunk always goes): a killed run loses the call in flight. The CPU's
# calls are relayed (the next starts on the threads the last one frees, :class:`~rnapipe.cpu.batch.Relay`),
# so a short call costs them no idle threads; a GPU's call reaches its full rate within a second or two at every
# length (calls of 2 s fold some 3 % slower than calls of 3 s, and a killed run loses a third less); a hybrid
# call is split between CPU and GPU, which needs more work to split well.
BATCH_SECONDS = {"cpu": 1.0, "gpu": 2.0, "hybrid": 4.0}

# Rates (work a second) before any call is measured: on the slow side of the engines measured (a 2-vCPU
# Xeon folds Zuker at some 1.1·10¹⁰ a thread, Nussinov two-vector about as fast, the other Nussinov
# variants 3-30 times faster; an H100 folds Zuker at 3·10¹¹-10¹³ depending on the length).
GUESS = {"cpu": 5e9, "gpu": 1e11}   # CPU: a thread
# The partition function (-p, variant "partition") folds a record several times slower than the MFE engines: on
# 2 CPU threads 4.4-6.1 times (60-800 nt), on an H100 about 20 times at 1,000 nt and 40-55 times at 68-221 nt
# against its own MFE call (benchmarks/RESULTS.md), where the GPU's MFE guess is itself 3 times or more below an
# H100's MFE rate; its first guess is the MFE's divided by this much, so that its first units too come out short.
SLOWER = {"partition": {"cpu": 6.0, "gpu": 20.0, "hybrid": 6.0}}
MEMORY_SECONDS = 10.0               # the measured rate weighs the last calls' seconds with this time constant


def work(lens) -> np.ndarray:
    """Each record's work (see the module docstring) for lengths ``lens``."""
    x = np.asarray(lens, dtype=np.float64)
    return (x + SHAPE_B) * x * x + SHAPE_C


def guess(device: str, threads: int, variant: str | None = None) -> float:
    cpu = GUESS["cpu"] * max(1, threads)
    if device == "cpu":
        rate = cpu
    elif device == "hybrid":
        rate = cpu + GUESS["gpu"]
    else:
        rate = GUESS["gpu"]
    return rate / SLOWER.get(variant, {}).get(device, 1.0)


class Pace:
    """The rate of one run's engine (work a second): guessed, then measured (see the module docstring).
    Read from the reading thread, updated from the folding one."""

    def __init__(self, device: str = "cpu", threads: int = 1, rate: float | None = None,
                 variant: str | None = None):
        self.device = device
        self._rate = float(rate) if rate is not None else guess(device, threads, variant)
        self._work = 0.0                # decayed sums of the calls measured
        self._seconds = 0.0
        self._calls = 0
        self._lock = threading.Lock()

    @classmethod
    def of(cls, folder) -> "Pace":
        """The pace of a run of ``folder`` (a pipeline Folder: its device, threads and engine variant)."""
        return cls(folder.device, folder.threads, variant=folder.variant)

    @property
    def rate(self) -> float:
        return self._rate

    def seconds(self, amount: float) -> float:
        """Predicted seconds of ``amount`` of work."""
        return amount / self._rate

    def unit_work(self) -> float:
        """The work of one journal unit."""
        return UNIT_SECONDS * self._rate

    def batch_work(self) -> float:
        """The most work one engine call takes (one chunk always goes, however large)."""
        return BATCH_SECONDS.get(self.device, BATCH_SECONDS["cpu"]) * self._rate

    def observe(self, amount: float, seconds: float) -> None:
        """An engine call folded ``amount`` of work in ``seconds``."""
        with self._lock:
            self._calls += 1
            if self._calls == 1 or amount <= 0 or seconds <= 0:
                return
            decay = math.exp(-seconds / MEMORY_SECONDS)
            self._work = self._work * decay + amount
            self._seconds = self._seconds * decay + seconds
            self._rate = self._work / self._seconds
