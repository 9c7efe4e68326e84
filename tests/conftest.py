import os
import sys

import pytest

sys.path.insert(0, os.path.dirname(__file__))  # tests/naive.py


def _gpu_present() -> bool:
    try:
        import cupy
        return cupy.cuda.runtime.getDeviceCount() > 0
    except Exception:
        return False


def pytest_collection_modifyitems(config, items):
    if _gpu_present():
        return
    skip = pytest.mark.skip(reason="no CUDA GPU (or no CuPy) here")
    for item in items:
        if "gpu" in item.keywords:
            item.add_marker(skip)


@pytest.fixture
def memory_gates(monkeypatch):
    """Every rnapipe.cpu.batch.MemoryGate made while the test runs, in order (to read held and peak)."""
    from rnapipe.cpu import batch

    made = []

    class Recorded(batch.MemoryGate):
        def __init__(self, budget):
            super().__init__(budget)
            made.append(self)

    monkeypatch.setattr(batch, "MemoryGate", Recorded)
    return made
