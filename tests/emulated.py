"""What the tests of the CUDA kernels emulated on the CPU share (tests/cuda_emu): whether this machine's g++ builds the
shim (C++20, <ucontext.h>), and one run of a driver there in a process of its own (it replaces CuPy in its sys.modules),
its last line read as JSON."""

from __future__ import annotations

import json
import os
import shutil
import subprocess
import sys

import pytest

CUDA_EMU = os.path.join(os.path.dirname(os.path.abspath(__file__)), "cuda_emu")


def gxx_builds_the_shim() -> bool:
    if shutil.which("g++") is None:
        return False
    probe = subprocess.run(["g++", "-std=c++20", "-x", "c++", "-fsyntax-only", "-"],
                           input="#include <ucontext.h>\n#include <memory>\n", capture_output=True, text=True)
    return probe.returncode == 0


needs_gxx = pytest.mark.skipif(not gxx_builds_the_shim(), reason="no g++ with C++20 and <ucontext.h> here")


def run(driver: str, *args, timeout: int = 900) -> dict:
    """``python tests/cuda_emu/DRIVER ARGS...``: its last line of output as JSON (the test fails on an error)."""
    proc = subprocess.run([sys.executable, os.path.join(CUDA_EMU, driver), *map(str, args)], capture_output=True,
                          text=True, timeout=timeout)
    assert proc.returncode == 0, proc.stderr[-3000:]
    return json.loads(proc.stdout.strip().splitlines()[-1])
