"""The workflow's partition stage: the shards of one prepared input assigned to CPU jobs and GPU jobs.

Each shard's predicted seconds on either device come from the host's profile (:mod:`..hybrid.costmodel`: its
records times one record's seconds at the shard's cube-mean length, a shard being one length bin; the profile's
costs are throughputs). On the CPU a shard takes no less than its longest record on one thread (the CPU engine
folds one sequence per thread: its threads × that record's cost). Shards are ordered by how much better the
CPU does on them (t_CPU / t_GPU, :func:`..balance.cpu_first`); the CPU jobs take the prefix of that order, the
GPU jobs the rest, at the boundary that makes the later of the two sides' predicted ends earliest (a side's
end: its total over its jobs, and no earlier than its longest shard), and nothing unless that is predicted to
end at least :data:`..balance.MIN_GAIN` sooner than the GPU jobs alone (:func:`..balance.best_prefix`).
Within a side, shards go to the job with the least predicted work so far, longest first
(:func:`..balance.lpt`). CPU jobs alone need no profile: alike, they share the shards by the records' predicted
work (:class:`WorkShape`). A job folds its shards by length range (bin), in input order within a bin.

A plan directory holds ``{device}{j}.list`` (the shard files a job folds, one per line), ``plan.tsv``
(shard, job, place in the job) and ``jobs.tsv`` (per job: device, shards, records, nucleotides, predicted
seconds).
"""

from __future__ import annotations

import os

import numpy as np

from ...io.writers import atomic_output
from ..balance import MIN_GAIN, best_prefix, cpu_first, lpt
from ..folding.pace import SHAPE_B, SHAPE_C, work
from .prepare import Shard, read_shards, shard_name


class WorkShape:
    """CPU jobs' cost without a profile: a record's predicted work (:func:`..folding.pace.work`), in units of work,
    not seconds. CPU jobs are alike, so they share the shards by it as well as by their times; no time is
    predicted."""

    def total(self, s3, s2, n):
        return s3 + SHAPE_B * s2 + SHAPE_C * n

    def seconds(self, lens):
        return work(lens)


def predicted(shards: list[Shard], cost, longest: int | None) -> np.ndarray:
    """Seconds of each shard on a device of cost ``cost`` (inf where a record is longer than ``longest``)."""
    s3 = np.array([s.sum_len3 for s in shards], dtype=np.float64)
    s2 = np.array([s.sum_len2 for s in shards], dtype=np.float64)
    n = np.array([s.records for s in shards], dtype=np.float64)
    t = cost.total(s3, s2, n)
    if longest is not None:
        t[np.array([s.longest for s in shards], dtype=np.int64) > longest] = np.inf
    return t


def on_one_thread(shards: list[Shard], cost, threads: int, longest: int | None) -> np.ndarray:
    """Seconds of each shard's longest record on one of ``threads`` CPU threads (inf past ``longest``)."""
    top = np.array([s.longest for s in shards], dtype=np.float64)
    t = threads * cost.seconds(top)
    if longest is not None:
        t[top > longest] = np.inf
    return t


def boundary(tc: np.ndarray, tg: np.ndarray, cpu_jobs: int, gpu_jobs: int, min_gain: float = 0.0) -> np.ndarray:
    """Boolean mask of the shards the CPU jobs take (see the module docstring)."""
    n = len(tc)
    mask = np.zeros(n, dtype=bool)
    if n == 0 or gpu_jobs == 0:
        mask[:] = cpu_jobs > 0
        return mask
    if cpu_jobs == 0:
        return mask
    order = cpu_first(tc, tg)
    a, g = tc[order], tg[order]
    with np.errstate(invalid="ignore"):
        cpu_end = np.concatenate([[0.0], np.maximum(np.cumsum(a) / cpu_jobs, np.maximum.accumulate(a))])
        rest_sum = np.concatenate([np.cumsum(g[::-1])[::-1], [0.0]])
        rest_max = np.concatenate([np.maximum.accumulate(g[::-1])[::-1], [0.0]])
        gpu_end = np.maximum(rest_sum / gpu_jobs, rest_max)
    must = int(np.count_nonzero(np.isinf(g) & np.isfinite(a)))     # only the CPU can fold these (first)
    mask[order[:best_prefix(cpu_end, gpu_end, must, min_gain)]] = True
    return mask


def make(prepared: str, directory: str, costs: dict | None, longest: dict, cpu_jobs: int, gpu_jobs: int,
         cpu_threads: int = 1, min_gain: float = MIN_GAIN) -> list[dict]:
    """Write the plan of ``prepared`` into ``directory``; returns the rows of ``jobs.tsv``. ``cpu_threads``:
    a CPU job's threads (those the profile timed the CPU with). ``costs`` None (no profile) is for one job,
    which takes every shard, or for CPU jobs alone, which share the shards by their predicted work
    (:class:`WorkShape`); the predicted seconds are NaN."""
    shards = read_shards(prepared)
    share = None                              # what the jobs of a side share the shards by, where not times
    if costs is None:
        if gpu_jobs and cpu_jobs + gpu_jobs != 1:
            raise ValueError("CPU and GPU jobs, or several GPU jobs: the shards are shared by a profile's costs")
        tc = tg = np.full(len(shards), np.nan)
        on_cpu = np.full(len(shards), cpu_jobs > 0)
        if cpu_jobs > 1:
            shape = WorkShape()
            share = np.maximum(predicted(shards, shape, None), on_one_thread(shards, shape, 1, None))
    else:
        if gpu_jobs and "gpu" not in costs:
            raise ValueError("GPU jobs asked for, but the profile has no GPU (profile on a host with one)")
        tc = np.maximum(predicted(shards, costs["cpu"], longest.get("cpu")),
                        on_one_thread(shards, costs["cpu"], cpu_threads, longest.get("cpu")))
        tg = (predicted(shards, costs["gpu"], longest.get("gpu")) if "gpu" in costs
              else np.full(len(shards), np.inf))
        on_cpu = boundary(tc, tg, cpu_jobs, gpu_jobs, min_gain)
    jobs = []
    for device, times, side, count in (("cpu", tc, np.flatnonzero(on_cpu), cpu_jobs),
                                       ("gpu", tg, np.flatnonzero(~on_cpu), gpu_jobs)):
        # longest first, each shard to the job with the least work so far (an infinite time counted as 0 s)
        t = share[side] if share is not None and device == "cpu" else times[side]
        t = np.where(np.isfinite(t), t, 0.0)      # NaN (no profile, one job) as 0 s too
        jobs += [(device, j, side[share].tolist()) for j, share in enumerate(lpt(t, count))]
    os.makedirs(directory, exist_ok=True)
    rows = []
    plan_lines = []
    for device, j, members in jobs:
        members = sorted(members, key=lambda k: (shards[k].bin, shards[k].number))
        name = f"{device}{j}"
        _write(os.path.join(directory, f"{name}.list"),
               "".join(os.path.join(prepared, "shards", shard_name(shards[k].number)) + "\n" for k in members))
        times = tc if device == "cpu" else tg
        for place, k in enumerate(members):
            plan_lines.append(f"{shards[k].number}\t{name}\t{place}\n")
        rows.append({"job": name, "device": device, "shards": len(members),
                     "records": sum(shards[k].records for k in members),
                     "nucleotides": int(sum(shards[k].sum_len for k in members)),
                     "predicted_s": float(sum(times[k] for k in members))})
    _write(os.path.join(directory, "plan.tsv"), "shard\tjob\tplace\n" + "".join(sorted(
        plan_lines, key=lambda line: int(line.split("\t", 1)[0]))))
    _write(os.path.join(directory, "jobs.tsv"), "job\tdevice\tshards\trecords\tnucleotides\tpredicted_s\n" + "".join(
        f"{r['job']}\t{r['device']}\t{r['shards']}\t{r['records']}\t{r['nucleotides']}\t{r['predicted_s']:.6g}\n"
        for r in rows))
    return rows


def read_plan(directory: str) -> dict[int, tuple[str, int]]:
    """shard number -> (job, place in the job)."""
    out = {}
    with open(os.path.join(directory, "plan.tsv")) as handle:
        next(handle)
        for line in handle:
            shard, job, place = line.rstrip("\n").split("\t")
            out[int(shard)] = (job, int(place))
    return out


def shares(rows: list[dict]) -> list[dict]:
    """Per device: jobs, shards, records, nucleotides, the share of the records and of the nucleotides, and
    the predicted seconds (all jobs, and the busiest job's)."""
    records = sum(r["records"] for r in rows) or 1
    nucleotides = sum(r["nucleotides"] for r in rows) or 1
    out = []
    for device in dict.fromkeys(r["device"] for r in rows):
        mine = [r for r in rows if r["device"] == device]
        out.append({"device": device, "jobs": len(mine), "shards": sum(r["shards"] for r in mine),
                    "records": sum(r["records"] for r in mine),
                    "record_share": sum(r["records"] for r in mine) / records,
                    "nucleotides": sum(r["nucleotides"] for r in mine),
                    "nucleotide_share": sum(r["nucleotides"] for r in mine) / nucleotides,
                    "predicted_s": sum(r["predicted_s"] for r in mine),
                    "busiest_s": max((r["predicted_s"] for r in mine), default=0.0)})
    return out


def share_table(rows: list[dict]) -> str:
    lines = [f"{'device':<7}{'jobs':>5}{'shards':>8}{'records':>12}{'share':>8}{'nucleotides':>14}{'share':>8}"
             f"{'predicted s':>13}{'busiest job s':>15}"]
    def seconds(value: float, width: int) -> str:
        return f"{value:>{width}.2f}" if value == value else f"{'-':>{width}}"       # NaN: not predicted

    for s in shares(rows):
        lines.append(f"{s['device']:<7}{s['jobs']:>5}{s['shards']:>8}{s['records']:>12,}{100 * s['record_share']:>7.1f}%"
                     f"{s['nucleotides']:>14,}{100 * s['nucleotide_share']:>7.1f}%{seconds(s['predicted_s'], 13)}"
                     f"{seconds(s['busiest_s'], 15)}")
    return "\n".join(lines) + "\n"


def _write(path: str, text: str) -> None:
    with atomic_output(path) as handle:
        handle.write(text)
