"""Every CUDA source shipped in rnapipe/gpu/kernels compiles with nvcc for Ampere and Hopper.

Runs wherever nvcc is on PATH (no GPU needed), so CI catches kernel syntax and template errors.
"""

import shutil
import subprocess

import pytest

from rnapipe.gpu import loader
from rnapipe.model import Model

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
    if path.name == "partition.cu":                 # the table offsets the host passes
        from rnapipe.cpu.partition import exp_tables
        from rnapipe.gpu.partition import build_options
        cmd[-4:-4] = list(build_options(exp_tables(Model())))
    proc = subprocess.run(cmd, capture_output=True, text=True)
    assert proc.returncode == 0, proc.stderr
    assert "warning" not in proc.stderr.lower(), proc.stderr


@pytest.mark.parametrize("arch", ["sm_80", "sm_90"])
@pytest.mark.parametrize("name", ["zuker.cu", "zuker_short.cu"])
def test_zuker_kernels_compile_with_the_pairing_rules(name, arch, tmp_path):
    """The Zuker kernels as the GPU engine builds them for a model with a pairing rule (-DZK_RULES), with the short
    kernels' int16 ring and separate traceback too."""
    extra = ["-DZ2_RING16", "-DZ2_TB_APART", "-DZ2_SEQS=2"] if name == "zuker_short.cu" else []
    cmd = [NVCC, f"-arch={arch}", "-std=c++17", f"-I{loader.kernel_dir()}", "-DZK_RULES", *extra, "-c",
           str(loader.kernel_dir() / name), "-o", str(tmp_path / "k.o")]
    proc = subprocess.run(cmd, capture_output=True, text=True)
    assert proc.returncode == 0, proc.stderr
    assert "warning" not in proc.stderr.lower(), proc.stderr


@pytest.mark.parametrize("arch", ["sm_80", "sm_90"])
@pytest.mark.parametrize("name", ["zuker.cu", "zuker_short.cu"])
@pytest.mark.parametrize("rules", [False, True], ids=["shape", "shape+rules"])
def test_zuker_kernels_compile_with_shape(name, arch, rules, tmp_path):
    """The Zuker kernels as the GPU engine builds them for a batch with SHAPE data (-DZK_SHAPE), with and without
    the pairing rules, with the short kernels' int16 ring and separate traceback too."""
    extra = ["-DZ2_RING16", "-DZ2_TB_APART", "-DZ2_SEQS=2"] if name == "zuker_short.cu" else []
    cmd = [NVCC, f"-arch={arch}", "-std=c++17", f"-I{loader.kernel_dir()}", "-DZK_SHAPE",
           *(["-DZK_RULES"] if rules else []), *extra, "-c", str(loader.kernel_dir() / name),
           "-o", str(tmp_path / "k.o")]
    proc = subprocess.run(cmd, capture_output=True, text=True)
    assert proc.returncode == 0, proc.stderr
    assert "warning" not in proc.stderr.lower(), proc.stderr


@pytest.mark.parametrize("arch", ["sm_80", "sm_90"])
@pytest.mark.parametrize("name", ["zuker.cu", "zuker_short.cu"])
@pytest.mark.parametrize("extra", [[], ["-DZK_RULES"], ["-DZK_RULES", "-DZK_SHAPE"], ["-DZ2_HC_BOUNDED"],
                                   ["-DZK_RULES", "-DZK_SHAPE", "-DZ2_HC_BOUNDED"]],
                         ids=["hc", "hc+rules", "hc+rules+shape", "hc+enforce", "hc+rules+shape+enforce"])
def test_zuker_kernels_compile_with_hard_constraints(name, arch, extra, tmp_path):
    """The Zuker kernels as the GPU engine builds them for a batch with hard constraints (-DZK_HC), alone, with the
    pairing rules and with SHAPE data too, with and without --enforceConstraint's bounded loops (-DZ2_HC_BOUNDED,
    the short kernels'); the short kernels with their int16 words (-DZK_HC16) copied to shared memory
    (-DZ2_HC_SMEM), int16 ring and separate traceback too."""
    if name == "zuker_short.cu":
        extra = [*extra, "-DZK_HC16", "-DZ2_HC_SMEM", "-DZ2_RING16", "-DZ2_TB_APART", "-DZ2_SEQS=2"]
    cmd = [NVCC, f"-arch={arch}", "-std=c++17", f"-I{loader.kernel_dir()}", "-DZK_HC", *extra, "-c",
           str(loader.kernel_dir() / name), "-o", str(tmp_path / "k.o")]
    proc = subprocess.run(cmd, capture_output=True, text=True)
    assert proc.returncode == 0, proc.stderr
    assert "warning" not in proc.stderr.lower(), proc.stderr


@pytest.mark.parametrize("ring16, seqs, hc", [(True, 1, False), (False, 1, False), (True, 2, False),
                                              (False, 3, False), (True, 4, False), (True, 2, True), (False, 1, True)])
def test_short_kernel_sizes_match_the_host(ring16, seqs, hc, tmp_path):
    """The pool words and shared-memory bytes that zuker_short.py gives each sequence and launch are the
    ones the kernels use: zuker_short.cu's own z2_pool_words, z2_shared_bytes and zs_pool_words, compiled
    for the host and run (no GPU needed), for lengths across both kernels' ranges, both rings, 1 to 4
    sequences per zs_fold_smem block, and hard constraints' words in shared memory (Z2_HC_SMEM) or not."""
    from rnapipe.gpu import zuker_short as short

    lengths = [1, 2, 5, 30, 68, 80, 81, 120, 154, 221, 231, 232, 233, 400, 600]
    prog = tmp_path / "sizes.cu"
    prog.write_text('#include "zuker_short.cu"\n#include <cstdio>\nint main() {\n'
                    + "".join(f'    printf("%d %lld %d %lld\\n", {n}, z2_pool_words({n}), z2_shared_bytes({n}), '
                              f"zs_pool_words({n}));\n" for n in lengths)
                    + "    return 0;\n}\n")
    exe = tmp_path / "sizes"
    cmd = [NVCC, "-arch=sm_90", "-std=c++17", f"-I{loader.kernel_dir()}", *(["-DZ2_RING16"] if ring16 else []),
           *(["-DZK_HC", "-DZK_HC16", "-DZ2_HC_SMEM"] if hc else []), f"-DZ2_SEQS={seqs}", str(prog), "-o", str(exe)]
    proc = subprocess.run(cmd, capture_output=True, text=True)
    assert proc.returncode == 0, proc.stderr
    run = subprocess.run([str(exe)], capture_output=True, text=True)
    assert run.returncode == 0, run.stderr
    for line in run.stdout.split("\n")[:-1]:
        n, pool, shared, zs_pool = map(int, line.split())
        assert pool == short.smem_pool_words(n), n
        assert shared == short._smem_shared_bytes(n, ring16, seqs, hc), n
        assert zs_pool == short.pool_words(n), n
    assert len(run.stdout.split("\n")) == len(lengths) + 1
