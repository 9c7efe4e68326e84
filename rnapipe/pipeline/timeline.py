"""Where a streamed run spends its time, for benchmarks: with ``RNAPIPE_TIMELINE=FILE`` the run adds up the
seconds of each stage (reading, waiting for a chunk, folding, writing) and writes them to FILE as JSON: wall
seconds under the stage's name, and the CPU seconds its thread spent under ``NAME cpu`` (wall well above
CPU on a busy stage means waiting: for the GIL, the disk or the device)."""

from __future__ import annotations

import json
import os
import threading
import time

_PATH = os.environ.get("RNAPIPE_TIMELINE")
_totals: dict[str, float] = {}
_lock = threading.Lock()
enabled = bool(_PATH)


def add(stage: str, seconds: float) -> None:
    with _lock:
        _totals[stage] = _totals.get(stage, 0.0) + seconds


class timed:
    """``with timed("fold"): ...`` adds the block's seconds to the stage (nothing when not enabled)."""

    def __init__(self, stage: str):
        self.stage = stage

    def __enter__(self):
        if enabled:
            self.start = time.perf_counter()
            self.cpu = time.thread_time()
        return self

    def __exit__(self, *exc):
        if enabled:
            add(self.stage, time.perf_counter() - self.start)
            add(self.stage + " cpu", time.thread_time() - self.cpu)
        return False


def mark(name: str) -> None:
    """Note the seconds since the process started under ``name`` (the first time only)."""
    if enabled and name not in _totals:
        add(name, since_start())


def since_start() -> float | None:
    """Seconds since the process started (interpreter start, imports), when enabled."""
    if not enabled:
        return None
    import psutil

    return time.time() - psutil.Process().create_time()


def write(**extra) -> None:
    if not enabled:
        return
    with _lock:
        data = dict(_totals, **extra, end_of_run=since_start())
    with open(_PATH, "w") as handle:
        json.dump(data, handle, indent=1)
