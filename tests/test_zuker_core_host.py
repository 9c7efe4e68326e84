"""zuker_core.cuh's pair-type arithmetic (branch-free on the device) built as plain C++ against the CPU
engine's tables rnapipe.params.PAIR_TYPE and RTYPE. Runs wherever a C++ compiler is on PATH."""

from __future__ import annotations

import shutil
import subprocess

import pytest

from rnapipe import params
from rnapipe.gpu import loader

CXX = shutil.which("g++") or shutil.which("c++")
pytestmark = pytest.mark.skipif(CXX is None, reason="no C++ compiler on PATH")

PROGRAM = r"""
#include <cstdio>
#include "zuker_core.cuh"
int main() {
    for (int a = 0; a < 5; ++a)
        for (int b = 0; b < 5; ++b) std::printf("%d ", zk_ptype(a, b));
    for (int t = 0; t < 8; ++t) std::printf("%d ", zk_rtype(t));
    return 0;
}
"""


def test_pair_types_equal_the_cpu_tables(tmp_path):
    src = tmp_path / "pt.cpp"
    src.write_text(PROGRAM)
    exe = tmp_path / "pt"
    subprocess.run([CXX, "-std=c++17", f"-I{loader.kernel_dir()}", "-o", str(exe), str(src)], check=True)
    got = [int(x) for x in subprocess.run([str(exe)], check=True, capture_output=True, text=True).stdout.split()]
    want = [int(params.PAIR_TYPE[a, b]) for a in range(5) for b in range(5)] + [int(t) for t in params.RTYPE]
    assert got == want
