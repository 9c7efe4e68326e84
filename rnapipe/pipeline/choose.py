"""The folder a request asks for: one engine on one device (:class:`.folding.folder.Folder`), or the CPU and the
GPUs at once (:class:`.hybrid.folder.HybridFolder`), ``device='auto'`` choosing between them."""

from __future__ import annotations

from typing import Callable

from ..gpu.devices import gpu_available
from .folding.folder import Folder


def folder_for(algorithm: str, variant: str | None = None, device: str = "cpu", threads: int | None = None,
                gpus=None, options: dict | None = None, progress: Callable[[int], None] | None = None,
                reprofile: bool = False, say: Callable[[str], None] | None = None, split: str | None = None,
                chosen: Callable[[str, str], None] | None = None, ensemble=None):
    """A :class:`Folder`, or for ``device='hybrid'`` a :class:`~.hybrid.folder.HybridFolder` (CPU and GPUs at once);
    ``device='auto'`` picks one of hybrid, gpu and cpu (:func:`~.hybrid.auto.auto_device`) and tells ``chosen``
    the device and why. With ``ensemble`` (:class:`~.ensemble.request.Settings`), the partition function's
    folder (:class:`~.ensemble.folder.EnsembleFolder`) on the CPU or the GPUs ('auto': the GPU where there is
    one), or on both ('hybrid': :class:`~.ensemble.hybrid.EnsembleHybridFolder`, a static split): the caller
    has refused what it does not take
    (:func:`~.ensemble.request.refusal`)."""
    if device == "auto" and gpus is not None:
        if not gpu_available():
            device = "gpu"                      # GPUs asked for and none here: the GPU folder says so in one line
    if ensemble is not None:
        from .ensemble.folder import EnsembleFolder
        if device == "auto":
            device = "gpu" if gpu_available() else "cpu"
            if chosen is not None:
                chosen(device, "a GPU is present" if device == "gpu" else "no GPU here")
        if device in ("cpu", "hybrid") and say is not None:
            from ..cpu import partition
            if not partition.compiled():
                say("compiling the partition function's CPU engine first (once on this machine: about half a "
                    "minute on 2 cores; later runs load it from Numba's cache)")
        elif device == "gpu" and say is not None and gpu_available():
            from ..gpu import partition as gpu_partition
            if not gpu_partition.host_compiled():
                say("compiling the partition function's host part first (once on this machine: about half a "
                    "minute; later runs load it from Numba's cache)")
        if device == "hybrid":
            from .ensemble.hybrid import EnsembleHybridFolder
            return EnsembleHybridFolder(threads, gpus, options, progress, ensemble, reprofile, say)
        return EnsembleFolder(threads, options, progress, ensemble, device, gpus)
    profile = None
    if device == "auto":
        from .hybrid.auto import auto_device
        device, why, profile = auto_device(algorithm, variant, threads, gpus, options, reprofile)
        if chosen is not None:
            chosen(device, why)
    if device == "hybrid":
        from .hybrid.folder import HybridFolder
        return HybridFolder(algorithm, variant, threads, gpus, options, progress, reprofile and profile is None,
                            say, profile=profile, split=split)
    return Folder(algorithm, variant, device, threads, gpus, options, progress)
