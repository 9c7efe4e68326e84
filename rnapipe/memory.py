"""Memory budgets: how many bytes one sequence's matrices may take on the host, and the longest sequence that fits
a budget. Engines and the pipeline both read these; the GPU engines have their own budget (device memory).

The host budget is a fraction (config.MEMORY_FRACTION) of the least this process may still take under every
limit that is set: the memory available on the host; the address space left under ``ulimit -v`` (RLIMIT_AS)
and the data segment under ``ulimit -d`` (RLIMIT_DATA); what the process's cgroup (and each cgroup above it)
may still take, v1 or v2; and a SLURM job's memory on this node less what the process holds. A limit that is
not set is not read into it: an unlimited rlimit, a cgroup without a limit, no SLURM variables.
"""

from __future__ import annotations

import os
from typing import Callable, Mapping

import psutil

from . import config

try:
    import resource
except ImportError:                      # not POSIX: no rlimits
    resource = None

CGROUP_ROOT = "/sys/fs/cgroup"
PROC_CGROUP = "/proc/self/cgroup"
# cgroup v1 writes a limit that is not set as the largest page-aligned 64-bit count (about 2**63)
_CGROUP_UNLIMITED = 1 << 60

AVAILABLE = "the memory available"
LIMITS = {
    "as": "ulimit -v (RLIMIT_AS)",
    "data": "ulimit -d (RLIMIT_DATA)",
    "cgroup": "the cgroup's memory limit",
    "slurm": "the SLURM job's memory",
}

_process: psutil.Process | None = None


def _this_process() -> psutil.Process:
    """The psutil handle of this process (made once per process: a fork gets its own)."""
    global _process
    if _process is None or _process.pid != os.getpid():
        _process = psutil.Process()
    return _process


def memory_budget() -> int:
    """Bytes one sequence's matrices may take: a fraction of the least this process may still take under the
    limits in force (see the module docstring).

    An engine that keeps its matrices elsewhere (a GPU) defines its own ``memory_budget()``."""
    return budget_and_limit()[0]


def budget_and_limit() -> tuple[int, str]:
    """``(memory_budget(), the name of the limit that sets it)``, the name one of :data:`AVAILABLE` or the
    values of :data:`LIMITS`."""
    room = headrooms()
    name = min(room, key=room.__getitem__)
    return int(room[name] * config.MEMORY_FRACTION), name


def headrooms(environ: Mapping[str, str] | None = None, cgroup_root: str | None = None,
              proc_cgroup: str | None = None) -> dict[str, int]:
    """Bytes this process may still take under each limit that is set, by the limit's name: the memory
    available on the host always, each of the others only where it is set. ``environ`` (default: os.environ)
    holds the SLURM variables; ``cgroup_root`` and ``proc_cgroup`` (default: :data:`CGROUP_ROOT`,
    :data:`PROC_CGROUP`) are where the cgroups are read."""
    room = {AVAILABLE: psutil.virtual_memory().available}
    usage = None
    if resource is not None:
        for key, which, field in (("as", resource.RLIMIT_AS, "vms"),
                                  ("data", getattr(resource, "RLIMIT_DATA", None), "data")):
            if which is None:
                continue
            soft = resource.getrlimit(which)[0]
            if soft == resource.RLIM_INFINITY or soft < 0:
                continue
            usage = usage or _this_process().memory_info()
            held = getattr(usage, field, None)
            if held is None:
                held = usage.vms
            room[LIMITS[key]] = max(0, soft - held)
    cgroup = cgroup_headroom(cgroup_root or CGROUP_ROOT, proc_cgroup or PROC_CGROUP)
    if cgroup is not None:
        room[LIMITS["cgroup"]] = cgroup
    slurm = slurm_allocation(os.environ if environ is None else environ)
    if slurm is not None:
        usage = usage or _this_process().memory_info()
        room[LIMITS["slurm"]] = max(0, slurm - usage.rss)
    return room


# ---------------------------------------------------------------------------------------------------------
# cgroups


def cgroup_headroom(root: str = CGROUP_ROOT, proc_cgroup: str = PROC_CGROUP) -> int | None:
    """Bytes the memory cgroup of this process may still take: over its cgroup and each one above it that has a
    limit, the least of the limit less the usage, the usage without the page cache the kernel may drop to make
    room (``inactive_file``). v2 (``memory.max``, ``memory.current``) or v1 (``memory.limit_in_bytes``,
    ``memory.usage_in_bytes``), the hierarchy mounted at ``root``; ``proc_cgroup`` names the process's cgroups.
    None where no limit is set or nothing can be read."""
    try:
        with open(proc_cgroup) as handle:
            lines = handle.read().splitlines()
    except OSError:
        return None
    v1 = v2 = None
    for line in lines:
        parts = line.split(":", 2)
        if len(parts) != 3:
            continue
        hierarchy, controllers, path = parts
        if "memory" in controllers.split(","):
            v1 = path
        elif hierarchy == "0" and controllers == "":
            v2 = path
    if v1 is not None:
        base, names = os.path.join(root, "memory"), ("memory.limit_in_bytes", "memory.usage_in_bytes",
                                                     "total_inactive_file")
    elif v2 is not None:
        base, names = root, ("memory.max", "memory.current", "inactive_file")
    else:
        return None
    least = None
    for directory in _cgroup_levels(base, v1 if v1 is not None else v2):
        room = _cgroup_room(directory, *names)
        if room is not None and (least is None or room < least):
            least = room
    return least


def _cgroup_levels(base: str, path: str) -> list[str]:
    """The directory of the process's cgroup under ``base``, then each one above it up to ``base``. Where the
    path is not there (a container that sees its own cgroup as the root) only ``base``."""
    parts = [p for p in path.strip("/").split("/") if p and p not in (".", "..")]
    if not os.path.isdir(os.path.join(base, *parts)):
        return [base]
    return [os.path.join(base, *parts[:k]) for k in range(len(parts), -1, -1)]


def _cgroup_room(directory: str, limit_name: str, usage_name: str, inactive_name: str) -> int | None:
    limit = _read_int(os.path.join(directory, limit_name))
    if limit is None or limit >= _CGROUP_UNLIMITED:
        return None
    usage = _read_int(os.path.join(directory, usage_name))
    if usage is None:
        return None
    inactive = 0
    try:
        with open(os.path.join(directory, "memory.stat")) as handle:
            for line in handle:
                key, _, value = line.partition(" ")
                if key == inactive_name:
                    inactive = int(value)
                    break
    except (OSError, ValueError):
        inactive = 0
    return max(0, limit - max(0, usage - inactive))


def _read_int(path: str) -> int | None:
    """The number in a cgroup file; None where it is missing, unreadable or ``max`` (no limit)."""
    try:
        with open(path) as handle:
            text = handle.read().strip()
    except OSError:
        return None
    try:
        return int(text)
    except ValueError:
        return None


# ---------------------------------------------------------------------------------------------------------
# SLURM

_UNITS = {"": 1 << 20, "K": 1 << 10, "M": 1 << 20, "G": 1 << 30, "T": 1 << 40}


def slurm_allocation(environ: Mapping[str, str]) -> int | None:
    """Bytes of memory a SLURM job holds on this node, from its environment: ``SLURM_MEM_PER_NODE``, else
    ``SLURM_MEM_PER_CPU`` times the job's CPUs on the node (``SLURM_CPUS_ON_NODE``, else the CPUs this process
    may run on), else ``SLURM_MEM_PER_GPU`` times its GPUs on the node (``SLURM_GPUS_ON_NODE``); values in MB (a
    K, M, G or T suffix is read as such). None outside a job, or where the job has all of the node's memory
    (``--mem=0``)."""
    per_node = _megabytes(environ.get("SLURM_MEM_PER_NODE"))
    if per_node:
        return per_node
    per_cpu = _megabytes(environ.get("SLURM_MEM_PER_CPU"))
    if per_cpu:
        cpus = _count(environ.get("SLURM_CPUS_ON_NODE"))
        if cpus is None:
            cpus = len(os.sched_getaffinity(0)) if hasattr(os, "sched_getaffinity") else os.cpu_count() or 1
        return per_cpu * cpus
    per_gpu = _megabytes(environ.get("SLURM_MEM_PER_GPU"))
    gpus = _count(environ.get("SLURM_GPUS_ON_NODE"))
    if per_gpu and gpus:
        return per_gpu * gpus
    return None


def _megabytes(text: str | None) -> int | None:
    text = (text or "").strip().upper()
    unit = text[-1:] if text[-1:] in ("K", "M", "G", "T") else ""
    number = text[:len(text) - len(unit)]
    if not number.isdigit():
        return None
    return int(number) * _UNITS[unit]


def _count(text: str | None) -> int | None:
    text = (text or "").strip()
    return int(text) if text.isdigit() and int(text) > 0 else None


# ---------------------------------------------------------------------------------------------------------


def longest_fitting(bytes_needed: Callable[[int], int], budget_bytes: int) -> int:
    """Longest n with ``bytes_needed(n) <= budget_bytes`` (``bytes_needed`` grows with n)."""
    lo, hi = 0, 1
    while bytes_needed(hi) <= budget_bytes:
        hi *= 2
    while hi - lo > 1:
        mid = (lo + hi) // 2
        lo, hi = (mid, hi) if bytes_needed(mid) <= budget_bytes else (lo, mid)
    return lo
