"""The workflow's subcommands (``rnapipe prepare``, ``profile``, ``partition``, ``merge``, ``resources``):
their arguments checked and their results printed; the work is the pipeline's (:mod:`rnapipe.pipeline.workflow`,
:mod:`rnapipe.pipeline.hybrid.profile`). :mod:`rnapipe.cli.main` parses the command line."""

from __future__ import annotations

import json
import os
import sys

from .. import config
from ..errors import UsageError
from ..gpu.devices import NoGpu, gpu_count


def say(text: str) -> None:
    print(f"rnapipe: {text}", file=sys.stderr, flush=True)


def run_prepare(path: str, directory: str, algorithm: str, on_invalid: str, shard_records: int,
                shard_cost: float, constraints: bool = False, partition: bool = False) -> None:
    from ..pipeline.workflow.prepare import length_check, prepare

    if partition and algorithm != "zuker":
        raise UsageError("-p/--partition applies to --algorithm zuker only")
    counts = prepare(path, directory, on_invalid, length_check(algorithm, partition), shard_records, shard_cost,
                     constraints)
    if counts["rejected"]:
        say(f"skipped {counts['rejected']:,} record(s), listed in {os.path.join(directory, 'rejected.tsv')}")
    say(f"{path}: {counts['records']:,} record(s) in {counts['shards']:,} shard(s) under {directory}")


def run_profile(device: str | None, algorithm: str, variant: str | None, threads: int | None, gpus, options: dict,
                lengths, cached: bool, output: str | None, partition: bool = False) -> None:
    """``--device cpu``: the CPU alone; ``auto``: the CPU, and the GPU when there is one (one line says when
    there is none); ``hybrid``: both (a GPU is required); None (no ``--device``): hybrid where there is a GPU,
    else the CPU alone, and one line says so. ``partition``: the partition function's engines (Zuker)."""
    from ..pipeline import warm
    from ..pipeline.hybrid import profile as profiling

    # the reading and writing passes loaded (on a fresh machine: compiled) beside the engines' compile, so that
    # the workflow's fold jobs, which run after the profile, find them in Numba's cache
    loading = warm.start()
    gpus_here = gpu_count() if device in ("hybrid", "auto", None) else 0
    if device is None:
        device = "hybrid" if gpus_here > 0 else "cpu"
        if device == "cpu":
            say("no GPU here: profiling the CPU alone (what the workflow's CPU jobs are planned by; "
                "--device hybrid needs a GPU)")
    use_gpu = device == "hybrid" or (device == "auto" and gpus_here > 0)
    if device == "hybrid" and gpus_here == 0:
        raise NoGpu("profiling the GPU", "--device cpu")
    if device == "auto" and not use_gpu:
        say("no GPU here: profiling the CPU only")
    cores = threads or config.default_threads()
    # hybrid: the CPU engine runs beside the GPUs' feeding threads, as in --device hybrid
    cpu_threads = config.cpu_threads(cores, len(gpus or [0])) if device == "hybrid" else cores
    ensemble, gpu_threads = None, 1
    if partition:
        from ..pipeline.ensemble import hybrid
        from ..pipeline.ensemble.request import Settings

        if algorithm != "zuker":
            raise UsageError("-p/--partition applies to --algorithm zuker only")
        ensemble = Settings()
        if device == "hybrid":              # as --device hybrid -p folds: its threads on either side
            n = len(gpus or [0])
            cpu_threads, gpu_threads = hybrid.cpu_threads(cores, n), hybrid.gpu_threads(cores, n)
        else:                               # as the workflow's jobs with fold.partition: alike
            gpu_threads = cpu_threads
    data = profiling.host_profile(algorithm, variant, cpu_threads, use_gpu, gpus, options, lengths,
                                  reprofile=not cached, say=say, ensemble=ensemble, gpu_threads=gpu_threads)
    loading.join()
    if output:
        profiling.write(data, output)
    print_profile(data)


def print_profile(data: dict) -> None:
    """One row per timed length: each device's sequences a second and K = t_CPU / t_GPU; a device not timed at a
    length shows its fitted cost there, marked ``~`` (the CPU is timed at fewer lengths than the GPU)."""
    import numpy as np

    from ..pipeline.hybrid.costmodel import Cost

    devices = data["devices"]
    lengths = sorted({int(k) for d in devices for k in data["samples"][d]})
    costs = {d: Cost(**data["costs"][d]) for d in devices}
    fitted = False

    def seconds(d: str, length: int) -> tuple[float, bool]:
        t = data["samples"][d].get(str(length))
        return (t, False) if t else (float(costs[d].seconds(np.array([length]))[0]), True)

    head = f"{'length':>7}" + "".join(f"{d.upper() + ' seq/s':>13}" for d in devices)
    print(head + (f"{'K':>8}" if "gpu" in devices else ""))
    for length in lengths:
        t = {d: seconds(d, length) for d in devices}
        fitted = fitted or any(f for _, f in t.values())
        line = f"{length:>7}" + "".join(f"{1 / t[d][0]:>12,.0f}{'~' if t[d][1] else ' '}" for d in devices)
        if "gpu" in devices:
            line += f"{t['cpu'][0] / t['gpu'][0]:>8.1f}"
        print(line)
    if fitted:
        print("~: not timed at this length; its fitted cost")
    for d in devices:
        c = data["costs"][d]
        call = data.get("calls", {}).get(d)
        model = (f"; the model joins the timed lengths (log-log), ∝ L^{c['tail']:.2f} beyond {c['lengths'][-1]} nt"
                 if c.get("lengths") else "")
        print(f"{d}: fit t(L) = {c['a']:.3e}·L³ + {c['b']:.3e}·L² + {c['c']:.3e} s a sequence{model}"
              + (f"; {1000 * call:.2f} ms a call" if call is not None else ""))


def run_partition(prepared: str, profile_path: str | None, cpu_jobs: int, gpu_jobs: int, output: str,
                  min_gain: float | None = None) -> None:
    """The plan of ``prepared``; without ``profile_path`` only for one job, which takes every shard, or for CPU
    jobs alone, which share the shards by their predicted work."""
    from ..pipeline.workflow import partition
    from ..pipeline.hybrid import profile as profiling

    if cpu_jobs + gpu_jobs == 0:
        raise UsageError("no jobs: give --cpu-jobs or --gpu-jobs at least 1")
    if profile_path is None and gpu_jobs and cpu_jobs + gpu_jobs > 1:
        raise UsageError(f"{cpu_jobs + gpu_jobs} jobs with GPU jobs among them share the shards by their predicted "
                         "time: give --profile (rnapipe profile -o makes one)")
    if not os.path.exists(os.path.join(prepared, "done")):
        raise UsageError(f"'{prepared}' is not a prepared input (rnapipe prepare makes one)")
    costs, longest, threads = None, {}, 1
    if profile_path is not None:
        try:
            costs, longest, threads = profiling.load(profile_path)
        except OSError as err:
            raise UsageError(f"cannot read the profile '{profile_path}': {err.strerror or err}") from None
        except (ValueError, KeyError, TypeError) as err:
            raise UsageError(f"'{profile_path}' is not a profile written by rnapipe profile -o ({err})") from None
        if gpu_jobs and "gpu" not in costs:
            raise UsageError(f"{gpu_jobs} GPU job(s) asked for, but the profile {profile_path} has no GPU")
    rows = partition.make(prepared, output, costs, longest, cpu_jobs, gpu_jobs, threads,
                          partition.MIN_GAIN if min_gain is None else min_gain)
    if costs is None and cpu_jobs + gpu_jobs == 1:
        say("one job and no profile: every shard goes to it (its time is not predicted)")
    elif costs is None:
        say(f"{cpu_jobs} CPU jobs and no profile: they share the shards by the records' predicted work "
            "(their times are not predicted)")
    elif gpu_jobs == 0:
        say("no GPU jobs: every shard goes to the CPU")
    sys.stdout.write(partition.share_table(rows))


def run_merge(prepared: str, plan_dir: str, fold_dir: str, outputs: list[str], formats: list[str] | None,
              algorithm: str, rejected: str | None, partition: bool = False, mea: bool = False) -> None:
    """``partition``: the fold jobs folded with -p (they wrote the pfjob format); ``mea``: db prints the MEA
    line (--MEA)."""
    from ..pipeline.workflow.merge import MergeError, merge
    from ..pipeline.output.sinks import format_of

    if formats and len(formats) != len(outputs):
        raise UsageError(f"{len(formats)} formats for {len(outputs)} outputs: give one format per -o")
    pairs = [(path, formats[k] if formats else format_of(path)) for k, path in enumerate(outputs)]
    if any(path.lower().endswith(".gz") for path, _ in pairs):
        raise UsageError("merge writes uncompressed outputs only")
    from ..io.formats import PARTITION_FORMATS
    from ..pipeline.ensemble.request import Settings

    needing = [fmt for _, fmt in pairs if fmt in PARTITION_FORMATS]
    if needing and not partition:
        raise UsageError(f"format {needing[0]} holds the partition function's results: add -p/--partition (the "
                         "fold jobs' -p)")
    if mea and not partition:
        raise UsageError("--MEA applies with -p/--partition only")
    try:
        count = merge(prepared, plan_dir, fold_dir, pairs, algorithm, rejected,
                      Settings(mea=mea) if partition else None)
    except (MergeError, FileNotFoundError) as err:
        raise UsageError(f"cannot merge {prepared}: {err}") from None
    say(f"merged {count:,} record(s) into {', '.join(p for p, _ in pairs)}")


def run_resources(cores: int, cpu_jobs: int, gpu_jobs: int | str, count_gpus: bool, as_json: bool,
                  algorithm: str | None = None, partition: bool = False) -> None:
    """What the workflow's fold jobs take on this host: one JSON object with ``as_json`` (the workflow reads
    it), else one line per item."""
    from ..pipeline.workflow.resources import job_resources

    found = job_resources(cores, cpu_jobs, gpu_jobs, count_gpus, algorithm, partition)
    if as_json:
        print(json.dumps(found))
        return
    gpus = "not counted" if found["gpus"] is None else found["gpus"]
    print(f"GPUs here: {gpus}\nGPU jobs: {found['gpu_jobs']}\nCPU jobs: {found['cpu_jobs']}\n"
          f"CPU threads per CPU job: {found['cpu_threads']}\nthreads per GPU job: {found['gpu_threads']}")
    if algorithm is not None:
        said = {True: "yes", False: "no (the first fold on this machine compiles it)", None: "not told"}
        print(f"CPU engine compiled in Numba's cache: {said[found['cpu_compiled']]}")
