"""Every CUDA source shipped in rnapipe/gpu/kernels compiles with nvcc for Ampere and Hopper.

Runs wherever nvcc is on PATH (no GPU needed), so CI catches kernel syntax and template errors. The sources are
built to device code only (-cubin), as the engines build them at run time (NVRTC): the whole file is still parsed,
but no host compiler runs.
"""

import os
import shutil
import subprocess
from concurrent.futures import ThreadPoolExecutor

import pytest

from rnapipe.gpu import loader
from rnapipe.model import Model

NVCC = shutil.which("nvcc")
pytestmark = pytest.mark.skipif(NVCC is None, reason="nvcc not on PATH")


def test_kernels_are_shipped():
    names = {p.name for p in loader.kernel_files()}
    assert {"nussinov_tiled.cu", "nussinov_chang.cu", "nussinov_fr.cu", "nussinov_batch.cu"} <= names


ARCHS = ["sm_80", "sm_90"]
# the short kernels' int16 ring with its 16-bit WM / WM1 copies, own traceback, two sequences a block
SHORT_EXTRA = ["-DZ2_RING16", "-DZ2_PM16", "-DZ2_XCHUNK=16", "-DZ2_TB_APART", "-DZ2_SEQS=2"]
HC_EXTRA = [[], ["-DZK_RULES"], ["-DZK_RULES", "-DZK_SHAPE"], ["-DZ2_HC_BOUNDED"],
            ["-DZK_RULES", "-DZK_SHAPE", "-DZ2_HC_BOUNDED"]]
HC_IDS = ["hc", "hc+rules", "hc+rules+shape", "hc+enforce", "hc+rules+shape+enforce"]


def _shipped(path, arch):
    """The nvcc command (without its output) of one shipped source as it is."""
    cmd = [NVCC, f"-arch={arch}", "-std=c++17", f"-I{loader.kernel_dir()}", "-DNUSS_INSTANTIATE_ALL", "-cubin",
           str(path)]
    if path.name == "partition.cu":                 # the table offsets the host passes
        from rnapipe.cpu.partition import exp_tables
        from rnapipe.gpu.partition import build_options
        cmd[-2:-2] = list(build_options(exp_tables(Model())))
    return cmd


def _zuker(name, arch, defines):
    """The nvcc command of a Zuker source built with these -D options (the short kernels' ring and traceback
    options added to zuker_short.cu's)."""
    extra = SHORT_EXTRA if name == "zuker_short.cu" else []
    return [NVCC, f"-arch={arch}", "-std=c++17", f"-I{loader.kernel_dir()}", *defines, *extra, "-cubin",
            str(loader.kernel_dir() / name)]


def _rules(name, arch):
    return _zuker(name, arch, ["-DZK_RULES"])


def _shape(name, arch, rules):
    return _zuker(name, arch, ["-DZK_SHAPE", *(["-DZK_RULES"] if rules else [])])


def _hc(name, arch, extra):
    if name == "zuker_short.cu":                    # int16 words (-DZK_HC16) copied to shared memory
        extra = [*extra, "-DZK_HC16", "-DZ2_HC_SMEM"]
    return _zuker(name, arch, ["-DZK_HC", *extra])


def _lanes(arch):
    """zuker.cu with zk_fin_lanes' options as the GPU engine builds it for the default model up to AUX_VGATE_MAX_N
    nt (its 16-bit window, its interior loops' terms, its window's loads only at pairs)."""
    from rnapipe.gpu import zuker as gz
    return _zuker("zuker.cu", arch, list(gz.fin_lanes_options(gz._gpu_model({}), True, True)))


def _every_command():
    for arch in ARCHS:
        for path in loader.kernel_files():
            yield _shipped(path, arch)
        yield _lanes(arch)
        for name in ("zuker.cu", "zuker_short.cu"):
            yield _rules(name, arch)
            for rules in (False, True):
                yield _shape(name, arch, rules)
            for extra in HC_EXTRA:
                yield _hc(name, arch, extra)


class _Compiles:
    """Every compile of this module started at once on as many workers as there are cores (nvcc runs on one core:
    on a 2-core CI machine the module takes about half the time); calling it with a command waits for that one's
    result, output() names its output."""

    def __init__(self, commands, out):
        self.pool = ThreadPoolExecutor(max_workers=os.cpu_count() or 1)
        self.jobs, self.outputs = {}, {}
        for cmd in commands:
            key = tuple(cmd)
            if key not in self.jobs:
                self.outputs[key] = str(out / f"k{len(self.jobs)}")
                self.jobs[key] = self.pool.submit(subprocess.run, [*cmd, "-o", self.outputs[key]],
                                                  capture_output=True, text=True)

    def __call__(self, cmd):
        return self.jobs[tuple(cmd)].result()

    def output(self, cmd):
        return self.outputs[tuple(cmd)]


@pytest.fixture(scope="module")
def nvcc(tmp_path_factory, sizes_program):
    compiles = _Compiles([*_every_command(), *(_sizes(*p, sizes_program) for p in SIZES)],
                         tmp_path_factory.mktemp("nvcc"))
    yield compiles
    compiles.pool.shutdown(wait=True)


def _compiles(proc):
    assert proc.returncode == 0, proc.stderr
    assert "warning" not in proc.stderr.lower(), proc.stderr


@pytest.mark.parametrize("arch", ARCHS)
@pytest.mark.parametrize("path", loader.kernel_files(), ids=lambda p: p.name)
def test_kernel_compiles(path, arch, nvcc):
    _compiles(nvcc(_shipped(path, arch)))


@pytest.mark.parametrize("arch", ARCHS)
def test_zk_fin_lanes_compiles_as_the_engine_builds_it(arch, nvcc):
    _compiles(nvcc(_lanes(arch)))


@pytest.mark.parametrize("arch", ARCHS)
@pytest.mark.parametrize("name", ["zuker.cu", "zuker_short.cu"])
def test_zuker_kernels_compile_with_the_pairing_rules(name, arch, nvcc):
    """The Zuker kernels as the GPU engine builds them for a model with a pairing rule (-DZK_RULES), with the short
    kernels' int16 ring and separate traceback too."""
    _compiles(nvcc(_rules(name, arch)))


@pytest.mark.parametrize("arch", ARCHS)
@pytest.mark.parametrize("name", ["zuker.cu", "zuker_short.cu"])
@pytest.mark.parametrize("rules", [False, True], ids=["shape", "shape+rules"])
def test_zuker_kernels_compile_with_shape(name, arch, rules, nvcc):
    """The Zuker kernels as the GPU engine builds them for a batch with SHAPE data (-DZK_SHAPE), with and without
    the pairing rules, with the short kernels' int16 ring and separate traceback too."""
    _compiles(nvcc(_shape(name, arch, rules)))


@pytest.mark.parametrize("arch", ARCHS)
@pytest.mark.parametrize("name", ["zuker.cu", "zuker_short.cu"])
@pytest.mark.parametrize("extra", HC_EXTRA, ids=HC_IDS)
def test_zuker_kernels_compile_with_hard_constraints(name, arch, extra, nvcc):
    """The Zuker kernels as the GPU engine builds them for a batch with hard constraints (-DZK_HC), alone, with the
    pairing rules and with SHAPE data too, with and without --enforceConstraint's bounded loops (-DZ2_HC_BOUNDED,
    the short kernels'); the short kernels with their int16 words (-DZK_HC16) copied to shared memory
    (-DZ2_HC_SMEM), int16 ring and separate traceback too."""
    _compiles(nvcc(_hc(name, arch, extra)))


SIZES = [(True, 1, False), (False, 1, False), (True, 2, False), (False, 3, False), (True, 4, False), (True, 2, True),
         (False, 1, True)]
SIZE_LENGTHS = [1, 2, 5, 30, 68, 80, 81, 120, 154, 221, 231, 232, 233, 400, 600]


def _sizes(ring16, seqs, hc, prog):
    """The nvcc command of the host program that prints zuker_short.cu's own sizes (prog: its source)."""
    return [NVCC, "-arch=sm_90", "-std=c++17", f"-I{loader.kernel_dir()}", *(["-DZ2_RING16"] if ring16 else []),
            *(["-DZK_HC", "-DZK_HC16", "-DZ2_HC_SMEM"] if hc else []), f"-DZ2_SEQS={seqs}", str(prog)]


@pytest.fixture(scope="module")
def sizes_program(tmp_path_factory):
    prog = tmp_path_factory.mktemp("sizes") / "sizes.cu"
    prog.write_text('#include "zuker_short.cu"\n#include <cstdio>\nint main() {\n'
                    + "".join(f'    printf("%d %lld %d %lld\\n", {n}, z2_pool_words({n}), z2_shared_bytes({n}), '
                              f"zs_pool_words({n}));\n" for n in SIZE_LENGTHS)
                    + "    return 0;\n}\n")
    return prog


@pytest.mark.parametrize("ring16, seqs, hc", SIZES)
def test_short_kernel_sizes_match_the_host(ring16, seqs, hc, nvcc, sizes_program):
    """The pool words and shared-memory bytes that zuker_short.py gives each sequence and launch are the
    ones the kernels use: zuker_short.cu's own z2_pool_words, z2_shared_bytes and zs_pool_words, compiled
    for the host and run (no GPU needed), for lengths across both kernels' ranges, both rings, 1 to 4
    sequences per zs_fold_smem block, and hard constraints' words in shared memory (Z2_HC_SMEM) or not."""
    from rnapipe.gpu import zuker_short as short

    cmd = _sizes(ring16, seqs, hc, sizes_program)
    proc = nvcc(cmd)
    assert proc.returncode == 0, proc.stderr
    run = subprocess.run([nvcc.output(cmd)], capture_output=True, text=True)
    assert run.returncode == 0, run.stderr
    for line in run.stdout.split("\n")[:-1]:
        n, pool, shared, zs_pool = map(int, line.split())
        assert pool == short.smem_pool_words(n), n
        assert shared == short._smem_shared_bytes(n, ring16, seqs, hc), n
        assert zs_pool == short.pool_words(n), n
    assert len(run.stdout.split("\n")) == len(SIZE_LENGTHS) + 1
