"""The one loader for the CUDA sources shipped in ``rnapipe/gpu/kernels``.

Each ``.cu`` file is read from package data, prefixed with ``#line 1 "<path>"`` so that compiler
messages name the real file, compiled once per (file, options, template instantiations) with
``cupy.RawModule`` and cached. CuPy is imported only here, and only when a module is first asked for.
"""

from __future__ import annotations

import functools
import logging
from importlib import resources
from pathlib import Path

log = logging.getLogger(__name__)

# Always passed: C++17 for the templates, and the kernel folder for #include "....cuh".
BASE_OPTIONS = ("-std=c++17",)


def kernel_dir() -> Path:
    """The folder holding the ``.cu``/``.cuh`` files (a real directory for a normal install)."""
    return Path(str(resources.files("rnapipe.gpu") / "kernels"))


def kernel_files() -> list[Path]:
    return sorted(kernel_dir().glob("*.cu"))


def source(filename: str) -> str:
    path = kernel_dir() / filename
    return f'#line 1 "{path}"\n' + path.read_text()


def _device_id() -> int:
    import cupy  # lazily: a CPU-only user never gets here
    return cupy.cuda.Device().id


def module(filename: str, options: tuple[str, ...] = (), name_expressions: tuple[str, ...] = ()):
    """Compile ``kernels/<filename>`` (once per GPU: a module is loaded into one device's context) and
    return the ``cupy.RawModule`` for the current device.

    ``name_expressions`` lists template instantiations such as ``"outer_tiles<u16,false>"``; fetch
    them afterwards with ``get_function`` under the same spelling.
    """
    return _module(_device_id(), filename, tuple(options), tuple(name_expressions))


@functools.lru_cache(maxsize=None)
def _module(device: int, filename: str, options: tuple[str, ...], name_expressions: tuple[str, ...]):
    import cupy

    opts = BASE_OPTIONS + (f"-I{kernel_dir()}",) + tuple(options)
    log.debug("compiling %s with %s for device %d", filename, opts, device)
    mod = cupy.RawModule(code=source(filename), options=opts,
                         name_expressions=list(name_expressions) if name_expressions else None)
    mod.compile()
    return mod


def function(filename: str, name: str, options: tuple[str, ...] = (), name_expressions: tuple[str, ...] = (),
             dynamic_shared: int = 0):
    """One kernel of a cached module on the current device, its dynamic shared-memory limit raised to at
    least ``dynamic_shared`` bytes (the limit belongs to the kernel, so it only ever goes up)."""
    kernel = _function(_device_id(), filename, name, tuple(options), tuple(name_expressions))
    if dynamic_shared > 48 * 1024 and dynamic_shared > kernel.max_dynamic_shared_size_bytes:
        kernel.max_dynamic_shared_size_bytes = dynamic_shared
    return kernel


@functools.lru_cache(maxsize=None)
def _function(device: int, filename: str, name: str, options: tuple[str, ...], name_expressions: tuple[str, ...]):
    return _module(device, filename, options, name_expressions).get_function(name)
