"""Progress of a long fold, by predicted work (:func:`..folding.pace.work` summed over the sequences, not
their count), drawn on the stream the caller gives (the command line's standard error).

On a terminal: one status line, redrawn. Otherwise (a cluster job's log): a plain line every
``LOG_SECONDS``, on time whether or not a chunk was written since (a clock thread draws it; the work done
moves on as chunks are written). The total comes from a quick survey of the input files on a thread of their
own (lengths only); until it is known, or for standard input, the line says what is done without a share or an
ETA.
"""

from __future__ import annotations

import os
import threading
import time
from typing import TextIO

import numpy as np

LOG_SECONDS = 30.0
TTY_SECONDS = 0.5


def _clock(seconds: float) -> str:
    seconds = int(round(seconds))
    h, rest = divmod(seconds, 3600)
    m, s = divmod(rest, 60)
    return f"{h}:{m:02d}:{s:02d}"


def _si(x: float) -> str:
    for unit, size in (("G", 1e9), ("M", 1e6), ("k", 1e3)):
        if x >= size:
            return f"{x / size:.1f}{unit}"
    return f"{x:.0f}"


class Progress:
    """The progress of one run on ``stream``; ``paths`` (the input files) are surveyed for the total."""

    def __init__(self, stream: TextIO, paths=None, interval: float | None = None):
        self.stream = stream
        self.tty = bool(getattr(self.stream, "isatty", lambda: False)())
        if interval is None:
            interval = float(os.environ.get("RNAPIPE_PROGRESS_SECONDS") or (TTY_SECONDS if self.tty else LOG_SECONDS))
        self.interval = interval
        self.start = time.monotonic()
        self.last = float("-inf") if self.tty else self.start
        self.records = 0              # folded in this run
        self.nucleotides = 0
        self.work = 0.0
        self.skipped_work = 0.0       # finished by an earlier run (resumed)
        self.total_work: float | None = None
        self.total_records: int | None = None
        self._shown = False
        self._lock = threading.Lock()
        self._stop = threading.Event()
        self._clock = threading.Thread(target=self._tick, daemon=True, name="rnapipe-progress")
        self._clock.start()
        self._survey_thread = None
        if paths and all(p != "-" for p in paths):
            self._survey_thread = threading.Thread(target=self._survey, args=(list(paths),), daemon=True,
                                                   name="rnapipe-survey")
            self._survey_thread.start()

    def _survey(self, paths) -> None:
        try:
            records, work = survey(paths)
        except Exception:                 # the fold itself reports unreadable input
            return
        self.total_records, self.total_work = records, work

    def skipped(self, work: float) -> None:
        self.skipped_work += work

    def add(self, records: int, nucleotides: int, work: float) -> None:
        with self._lock:
            self.records += records
            self.nucleotides += nucleotides
            self.work += work
            now = time.monotonic()
            if now - self.last >= self.interval:
                self.last = now
                self._show(now)

    def _tick(self) -> None:
        """Draw the line every interval while nothing else does (a long chunk in flight)."""
        while not self._stop.wait(max(0.1, min(self.interval, 1.0))):
            with self._lock:
                now = time.monotonic()
                if self.records and now - self.last >= self.interval:
                    self.last = now
                    self._show(now)

    def line(self, now: float | None = None) -> str:
        now = now or time.monotonic()
        elapsed = max(1e-9, now - self.start)
        count = f"{self.records:,}"
        if self.total_records is not None:
            count += f"/{self.total_records:,}"
        text = (f"{count} sequences folded, {self.records / elapsed:,.0f} seq/s, "
                f"{_si(self.nucleotides / elapsed)} nt/s")
        total = self.total_work
        if total:
            done = self.skipped_work + self.work
            share = min(1.0, done / total)
            text = f"{100 * share:5.1f}% of the predicted work; " + text
            if self.work > 0 and share < 1:
                text += f", ETA {_clock(elapsed * (total - done) / self.work)}"
        return text

    def _show(self, now: float) -> None:
        if self.tty:
            self.stream.write("\r\x1b[2K" + self.line(now))
        else:
            self.stream.write(f"rnapipe: {time.strftime('%H:%M:%S')} {self.line(now)}\n")
        self.stream.flush()
        self._shown = True

    def stop(self) -> None:
        """No more lines (a run that failed or was stopped: its own message follows)."""
        self._stop.set()
        if self._clock is not threading.current_thread():
            self._clock.join()

    def close(self) -> None:
        self.stop()
        if self.tty and self.records:
            if self._survey_thread is not None:
                self._survey_thread.join(timeout=2.0)
            self._show(time.monotonic())
        if self._shown and self.tty:
            self.stream.write("\r\x1b[2K")
            self.stream.flush()


def survey(paths) -> tuple[int, float]:
    """Records and work (:func:`..folding.pace.work`) of FASTA files (lengths only; nothing validated)."""
    from ...io.fasta import open_binary
    from ..folding.pace import SHAPE_B, SHAPE_C
    from ..input import scan

    records, work = 0, 0.0
    for path in paths:
        raw = open_binary(path)
        try:
            carry = b""
            while True:
                data = raw.read(4 << 20)
                buf = carry + data
                if data:
                    cut = buf.rfind(b"\n>") + 1
                    if cut <= 0:
                        carry = buf
                        continue
                    block, carry = buf[:cut], buf[cut:]
                else:
                    block, carry = buf, b""
                at = block.find(b">")
                if at >= 0:
                    n, w = scan.lengths_block(np.frombuffer(block, dtype=np.uint8), at, scan._CLASS,
                                                SHAPE_B, SHAPE_C)
                    records += n
                    work += w
                if not data:
                    break
        finally:
            raw.close()
    return records, work
