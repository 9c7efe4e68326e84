"""An engine's compile on a cold Numba cache, split over two processes.

Numba compiles a function the first time it is called with new argument types, one compile at a time in a
process (its compiler lock), and keeps the result in its cache (``cache=True``) for later processes. The Zuker
CPU engine's compile is a few large pieces (the fill, the traceback) that do not depend on each other: on a
fresh machine (no cache), :func:`compile_in_two` compiles one of them in a child process while this one
compiles another, and the first fold then loads the child's piece from the cache instead of compiling it.
With the cache filled it does nothing; any failure of the child leaves the piece to the first fold, as
without it.
"""

from __future__ import annotations

import os
import subprocess
import sys
import threading
from typing import Callable

CHILD_SECONDS = 300             # a child still compiling after this long is stopped (the fold compiles its piece)
_ROOT = os.path.dirname(os.path.dirname(os.path.dirname(os.path.abspath(__file__))))  # holds the package


def cached(dispatcher, sig) -> bool:
    """Whether Numba's cache holds ``dispatcher`` compiled for the argument types ``sig`` on this machine (True
    where that cannot be told: a Numba without a cache for it, or another layout of its cache)."""
    try:
        cache = dispatcher._cache
        key = cache._index_key(sig, dispatcher.targetctx.codegen())
        return key in cache._cache_file._load_index()
    except Exception:
        return True


def child_command(code: str) -> list[str]:
    """This Python running ``code`` with this rnapipe imported: the directory that holds it first on the path
    unless the path has it already (an installed rnapipe), and never the working directory (``-c`` puts it
    first, where another rnapipe may be)."""
    prefix = (f"import sys\nsys.path[:] = [p for p in sys.path if p]\n"
              f"if {_ROOT!r} not in sys.path: sys.path.insert(0, {_ROOT!r})\n")
    return [sys.executable, "-c", prefix + code]


def compile_in_two(here: Callable[[], None], child_code: str) -> bool:
    """Run ``child_code`` (which compiles pieces into the cache) in a child process while ``here()`` compiles
    others in this one; wait for the child. Returns whether the child ended well."""
    try:
        child = subprocess.Popen(child_command(child_code), stdin=subprocess.DEVNULL, stdout=subprocess.DEVNULL,
                                 stderr=subprocess.DEVNULL)
    except OSError:
        here()
        return False
    try:
        here()
    finally:
        try:
            code = child.wait(timeout=CHILD_SECONDS)
        except subprocess.TimeoutExpired:
            child.kill()
            code = child.wait()
    return code == 0


class Once:
    """Runs a function once per process, the first caller running it and the others waiting for it."""

    def __init__(self):
        self._lock = threading.Lock()
        self._done = False

    def run(self, function: Callable[[], None]) -> None:
        with self._lock:
            if self._done:
                return
            self._done = True
            function()
