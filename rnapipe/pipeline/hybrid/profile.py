"""A host's profile for the workflow's partition: the CPU engine alone, or the CPU and the GPU engines.

With a GPU this is the profile ``--device hybrid`` uses (the same cache file when the lengths are the
default ones: :func:`profile_key`); without one, the CPU is timed alone. With the default lengths the GPU is
timed at the 14 of :data:`.costmodel.LENGTHS` and the CPU at the 6 of :data:`.costmodel.CPU_LENGTHS`. Either
way the profile is taken from the host's cache (:mod:`.costmodel`) when there is one, measured and saved
otherwise (:func:`load_or_measure`), and written as JSON with each device's longest foldable sequence.
"""

from __future__ import annotations

import json
import time
from typing import Callable

from ...gpu.devices import gpu_name
from ...io.writers import atomic_output
from ..folding.folder import Folder
from . import costmodel


def _key(cpu, gpu, lengths) -> dict:
    if gpu is not None:
        key = profile_key(cpu, gpu)
    else:
        key = costmodel.host_key(cpu.algorithm, cpu.variant, cpu.options, None, cpu.threads)
    key["lengths"] = list(lengths)      # host_key holds the default ones; these where the caller gave others
    return key


def device_lengths(device: str, lengths) -> tuple:
    """The lengths ``device`` is timed at: the CPU's own few (:data:`.costmodel.CPU_LENGTHS`) where ``lengths``
    are the default ones, else ``lengths``."""
    if device == "cpu" and tuple(lengths) == tuple(costmodel.LENGTHS):
        return tuple(costmodel.CPU_LENGTHS)
    return tuple(lengths)


def measure(folders: dict, key: dict, lengths, say: Callable[[str], None] | None = None) -> costmodel.Profile:
    """Each folder timed at its lengths (:func:`device_lengths`); the CPU engine warmed up once (it folds every
    length with the same compiled code), a GPU engine before each length."""
    samples, calls = {}, {}
    for name, folder in folders.items():
        mine = device_lengths(name, lengths)
        if say:
            say(f"profiling the {name.upper()} engine at {len(mine)} lengths"
                + (f" ({folder.threads} thread(s))" if name == "cpu" else ""))
        samples[name] = costmodel.measure(folder, mine, longest=folder.length_check().longest,
                                          warm_each=name != "cpu")
        calls[name] = costmodel.call_seconds(folder)
    return costmodel.Profile.fitted(key, samples, calls)


def load_or_measure(cpu, gpu=None, lengths=costmodel.LENGTHS, reprofile: bool = False,
                    say: Callable[[str], None] | None = None) -> costmodel.Profile:
    """The host's profile of the folders ``cpu`` and ``gpu`` (the CPU alone where ``gpu`` is None) at
    ``lengths``: the one saved in the host's cache, or (none saved, or ``reprofile``) a new one measured on
    them and saved."""
    folders = {"cpu": cpu} if gpu is None else {"cpu": cpu, "gpu": gpu}
    key = _key(cpu, gpu, lengths)
    path = costmodel.cache_path(key)
    profile = None if reprofile else costmodel.Profile.load(path, key)
    if profile is not None:
        if say:
            say(f"profile of this host taken from {path}")
        return profile
    start = time.perf_counter()
    profile = measure(folders, key, lengths, say)
    try:
        profile.save(path)
        where = f"; saved in {path}"
    except OSError as err:
        where = f"; not saved ({err.strerror or err})"
    if say:
        say(f"profiled in {time.perf_counter() - start:.0f} s{where}")
    return profile


def host_profile(algorithm: str, variant: str | None, threads: int, use_gpu: bool, gpus=None,
                 options: dict | None = None, lengths=costmodel.LENGTHS, reprofile: bool = False,
                 say: Callable[[str], None] | None = None, ensemble=None, gpu_threads: int = 1) -> dict:
    """The host's profile as a JSON-ready dict: ``devices``, ``costs`` (a, b, c per device), ``calls``,
    ``samples``, ``longest`` (per device, None: no limit), ``threads`` (the CPU's). With ``ensemble``
    (:class:`..ensemble.request.Settings`), the partition function's engines (Zuker), the GPU's with
    ``gpu_threads`` host threads (a workflow's GPU job: one; the hybrid device: its own count)."""
    if ensemble is not None:
        from ..ensemble.folder import EnsembleFolder
        cpu = EnsembleFolder(threads, options, None, ensemble, "cpu")
        gpu = EnsembleFolder(gpu_threads, options, None, ensemble, "gpu", gpus[:1] if gpus else None) \
            if use_gpu else None
    else:
        cpu = Folder(algorithm, variant, "cpu", threads, None, options)
        gpu = Folder(algorithm, variant, "gpu", 1, gpus, options) if use_gpu else None
    folders = {"cpu": cpu} if gpu is None else {"cpu": cpu, "gpu": gpu}
    profile = load_or_measure(cpu, gpu, lengths, reprofile, say)
    data = json.loads(profile.to_json())
    data["devices"] = list(folders)
    data["threads"] = cpu.threads
    data["longest"] = {name: folder.length_check().longest for name, folder in folders.items()}
    return data


def write(data: dict, path: str) -> None:
    with atomic_output(path) as handle:
        json.dump(data, handle, indent=1)
        handle.write("\n")


def load(path: str) -> tuple[dict, dict, int]:
    """(costs, longest, CPU threads) of a profile written by :func:`write`: ``costs[device]`` a
    :class:`costmodel.Cost`."""
    with open(path) as handle:
        data = json.load(handle)
    costs = {d: costmodel.Cost(**c) for d, c in data["costs"].items() if d in data["devices"]}
    return costs, data.get("longest", {}), int(data.get("threads", 1))


def profile_key(cpu, gpu) -> dict:
    return costmodel.host_key(cpu.algorithm, cpu.variant, cpu.options, gpu_name((gpu.gpus or [0])[0]), cpu.threads)
