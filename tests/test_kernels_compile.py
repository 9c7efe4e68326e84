"""Every CUDA source shipped in rnapipe/gpu/kernels compiles with nvcc for Ampere and Hopper.

Runs wherever nvcc is on PATH (no GPU needed), so CI catches kernel syntax and template errors.
"""

import shutil
import subprocess

import pytest

from rnapipe.gpu import loader

NVCC = shutil.which("nvcc")
pytestmark = pytest.mark.skipif(NVCC is None, reason="nvcc not on PATH")


def test_kernels_are_shipped():
    names = {p.name for p in loader.kernel_files()}
    assert {"nussinov_tiled.cu", "nussinov_chang.cu", "nussinov_fr.cu", "nussinov_batch.cu"} <= names


@pytest.mark.parametrize("arch", ["sm_80", "sm_90"])
@pytest.mark.parametrize("path", loader.kernel_files(), ids=lambda p: p.name)
def test_kernel_compiles(path, arch, tmp_path):
    cmd = [NVCC, f"-arch={arch}", "-std=c++17", f"-I{loader.kernel_dir()}", "-DNUSS_INSTANTIATE_ALL",
           "-c", str(path), "-o", str(tmp_path / "k.o")]
    proc = subprocess.run(cmd, capture_output=True, text=True)
    assert proc.returncode == 0, proc.stderr
    assert "warning" not in proc.stderr.lower(), proc.stderr
