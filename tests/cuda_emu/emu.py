"""rnapipe.gpu.partition.fold_batch with its CUDA kernels built for the CPU (g++ and shim.h) and numpy in CuPy's
place, so that the GPU engine's kernels can be checked where there is no GPU (tests/test_partition_emulated.py).

Run in a process of its own (it puts a stand-in ``cupy`` module in sys.modules):

    python tests/cuda_emu/emu.py BUILD_DIR COUNT SEED MIN MAX

folds COUNT random sequences of MIN..MAX nt (seed SEED) with the emulated GPU engine and with the CPU engine and
prints one JSON line: the largest relative difference of the ensemble free energies, the largest absolute
difference of a pair probability (pairs above 1e-6), the number of sequences whose pair lists, centroid or MEA
structures differ, whether the many-sequences path (a block a sequence) was taken, the engine's progress calls
(one a group or piece) with the sequences they counted, and whether ``host_signature()`` (what
``host_compiled()`` looks up in Numba's cache) is among the types the fold compiled its host part for.

The MFE comes from the CPU engine (the GPU MFE engine is not emulated); the multiprocessor count is 1, so two
sequences or more take the many-sequences path and one takes a launch a diagonal.
"""

from __future__ import annotations

import ctypes
import hashlib
import json
import os
import random
import subprocess
import sys
import types

import numpy as np

HERE = os.path.dirname(os.path.abspath(__file__))
ROOT = os.path.dirname(os.path.dirname(HERE))


class DeviceArray(np.ndarray):
    """A numpy array with CuPy's ``get``."""

    def get(self, out=None):
        if out is None:
            return np.array(self)
        out[...] = self
        return out

    def __getitem__(self, k):
        r = super().__getitem__(k)
        return r if isinstance(r, np.ndarray) else np.asarray(r).view(DeviceArray)


def _device(a) -> DeviceArray:
    return np.ascontiguousarray(a).view(DeviceArray)


def _poisoned(n, dtype=np.float64) -> DeviceArray:
    """An uninitialised array as a kernel may find one: integers -12,345 (below every real energy, so that a min
    over a cell never written takes it), floats NaN."""
    return _device(np.full(n, -12345 if np.issubdtype(np.dtype(dtype), np.integer) else np.nan, dtype=dtype))


def fake_cupy() -> types.ModuleType:
    cp = types.ModuleType("cupy")
    cp.asarray = lambda a, dtype=None: _device(np.array(a, dtype=dtype))
    cp.zeros = lambda n, dtype=np.float64: _device(np.zeros(n, dtype=dtype))
    cp.empty = _poisoned                      # as CuPy's: what is read before it is written shows
    cp.ones = lambda n, dtype=np.float64: _device(np.ones(n, dtype=dtype))
    cp.full = lambda n, v, dtype=None: _device(np.full(n, v, dtype=dtype))
    cp.concatenate = lambda xs: _device(np.concatenate([np.asarray(x) for x in xs]))
    cp.cumsum = lambda x: _device(np.cumsum(np.asarray(x)))
    for t in ("int8", "int32", "int64", "uint8", "uint64", "float64"):
        setattr(cp, t, getattr(np, t))

    class Device:
        id = 0
        attributes = {"MultiProcessorCount": 1}

        def synchronize(self):
            pass

    cp.cuda = types.SimpleNamespace(Device=Device,
                                    runtime=types.SimpleNamespace(memGetInfo=lambda: (2**40, 2**40)))
    cp.get_default_memory_pool = lambda: types.SimpleNamespace(free_bytes=lambda: 0, free_all_blocks=lambda: None)
    return cp


def fake_cupyx() -> types.ModuleType:
    """``cupyx`` with empty_pinned (an uninitialised host array)."""
    cx = types.ModuleType("cupyx")
    cx.empty_pinned = lambda n, dtype=np.float64: np.empty(n, dtype=dtype)
    return cx


class Kernel:
    """One emulated kernel, called as a CuPy RawKernel is: ``kernel(grid, block, args)`` (``shared_mem``: the
    dynamic shared memory, which the shim's kernels take from a buffer of their own)."""

    max_dynamic_shared_size_bytes = 1 << 20

    def __init__(self, lib, name: str):
        self.f = getattr(lib, "run_" + name)
        self.name = name

    def __call__(self, grid, block, args, shared_mem=0):
        grid = tuple(grid) + (1,) * (3 - len(grid))
        held = []
        for a in args:
            if isinstance(a, np.ndarray) and a.ndim >= 1:
                held.append(ctypes.c_void_p(a.ctypes.data))
            elif isinstance(a, np.int64):
                held.append(ctypes.c_longlong(int(a)))
            elif isinstance(a, (np.int32, int)):
                held.append(ctypes.c_int(int(a)))
            elif isinstance(a, (np.float64, float)):
                held.append(ctypes.c_double(float(a)))
            else:
                raise TypeError(f"{self.name}: an argument of type {type(a).__name__}")
        params = (ctypes.c_void_p * len(held))(*[ctypes.addressof(h) for h in held])
        self.f(*(ctypes.c_uint(g) for g in grid), ctypes.c_uint(block[0]), params)


def gxx(cpp: str, so: str, options, include_dirs) -> None:
    """Build tests/cuda_emu/CPP (a driver that includes the shim and the kernels) into the shared library SO."""
    subprocess.run(["g++", "-O1", "-std=c++20", "-shared", "-fPIC", "-w", *options,
                    *(x for d in include_dirs for x in ("-I", d)), os.path.join(HERE, cpp), "-o", so], check=True)


def build(build_dir: str, options) -> ctypes.CDLL:
    src = os.path.join(ROOT, "rnapipe", "gpu", "kernels", "partition.cu")
    text = open(src).read()
    extra = ["-DEMU_SOLO"] if "pf_inside_solo" in text else []
    key = hashlib.sha1((text + open(os.path.join(HERE, "shim.h")).read() + " ".join(options)).encode()).hexdigest()
    so = os.path.join(build_dir, f"partition_emu_{key[:16]}.so")
    if not os.path.exists(so):
        gxx("emu.cpp", so, [*options, *extra], [HERE, os.path.dirname(src)])
    return ctypes.CDLL(so)


def install(build_dir: str):
    """The GPU engine's module with the emulated kernels, the CPU MFE engine and one multiprocessor."""
    sys.modules["cupy"] = fake_cupy()
    sys.modules["cupyx"] = fake_cupyx()
    sys.path.insert(0, ROOT)
    from rnapipe import energy as E
    from rnapipe.cpu import zuker as cz
    from rnapipe.gpu import devices, partition as gp, zuker as gz
    from rnapipe.model import Model

    T = Model().tables()
    libs = {}

    def mfe_batch(seqs, variant, threads, options):
        return [(int(m), bytes(db).decode("ascii")) for m, db in (cz.fold_codes(T, E.padded_codes(s)) for s in seqs)]

    def kernel(name, options):
        if options not in libs:
            libs[options] = build(build_dir, options)
        return Kernel(libs[options], name)

    gz.fold_batch = mfe_batch
    gz.release = lambda *a, **k: None
    devices.memory_budget = lambda kept=0: 2**40
    gp._sm_count = lambda: 1
    gp._kernel = kernel
    return gp


def main(argv) -> int:
    build_dir, count, seed, lo, hi = argv[0], *map(int, argv[1:5])
    gp = install(build_dir)
    from rnapipe.cpu import partition as cp

    rng = random.Random(seed)
    seqs = ["".join(rng.choice("ACGU") for _ in range(rng.randint(lo, hi))) for _ in range(count)]
    seen = []
    gpu = gp.fold_batch(seqs, threads=2, threshold=1e-6, progress=seen.append)
    cpu = cp.fold_batch(seqs, threads=2, threshold=1e-6)
    G = p = 0.0
    differ = 0
    for a, b in zip(gpu, cpu):
        G = max(G, abs(a.energy - b.energy) / max(abs(b.energy), 1e-300))
        same = len(a.i) == len(b.i) and bool((a.i == b.i).all() and (a.j == b.j).all())
        if same:
            p = max(p, float(np.abs(a.p - b.p).max(initial=0.0)))
        if not same or a.centroid != b.centroid or a.mea != b.mea:
            differ += 1
    print(json.dumps({"G": G, "p": p, "differ": differ, "many": count >= 2, "calls": len(seen),
                      "folded": sum(seen), "host_signature": gp.host_signature() in cp._mea_range.signatures}))
    return 0


if __name__ == "__main__":
    sys.exit(main(sys.argv[1:]))
