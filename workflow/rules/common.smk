# Settings and helpers shared by the rules: inputs and their names, job counts, threads, devices.

import importlib.util
import os
import re
import shlex
import shutil
import subprocess
import sys
from pathlib import Path

from snakemake.exceptions import WorkflowError

OUTDIR = config["outdir"]
WORK = f"{OUTDIR}/work"
ALGORITHM = config["fold"]["algorithm"]
FORMATS = list(dict.fromkeys(config["formats"]))


def _python():
    """The rules' Python: the rule's conda environment's (--sdm conda), else the one running Snakemake."""
    try:
        methods = {str(m).lower() for m in workflow.deployment_settings.deployment_method}
    except AttributeError:
        methods = set()
    return "python" if any("conda" in m for m in methods) else shlex.quote(sys.executable)


# The workflow's own rnapipe (this checkout), whichever one the environment has installed.
RNAPIPE = f"PYTHONPATH={shlex.quote(workflow.basedir)}${{PYTHONPATH:+:$PYTHONPATH}} {_python()} -m rnapipe"

if re.search(r"\s", OUTDIR):
    raise ValueError(f"outdir '{OUTDIR}' has white space in it: choose a name without")


def sample_name(path):
    """example.fa.gz -> example: the output prefix of one input file."""
    return re.sub(r"(\.(fa|fasta|fna|fas))?(\.gz)?$", "", Path(path).name, flags=re.IGNORECASE)


SAMPLES = {}
for _path in config["inputs"]:
    _name = sample_name(_path)
    if _name in SAMPLES:
        raise ValueError(f"inputs {SAMPLES[_name]} and {_path} would both write {OUTDIR}/{_name}.*; rename one")
    SAMPLES[_name] = _path


def visible_gpus():
    """NVIDIA GPUs this host shows when CuPy is installed: nvidia-smi's count (CUDA_VISIBLE_DEVICES respected), or
    where there is no nvidia-smi, CuPy's (in a process of its own: Snakemake's does not start CUDA)."""
    if importlib.util.find_spec("cupy") is None:
        return 0
    try:
        if shutil.which("nvidia-smi") is None:
            probe = "import cupy; print(cupy.cuda.runtime.getDeviceCount())"
            listed = subprocess.run([sys.executable, "-c", probe], capture_output=True, text=True, timeout=120)
            return int(listed.stdout.strip() or 0) if listed.returncode == 0 else 0
        listed = subprocess.run(["nvidia-smi", "-L"], capture_output=True, text=True, timeout=60).stdout
    except (OSError, subprocess.SubprocessError, ValueError):
        return 0
    count = sum(1 for line in listed.splitlines() if line.startswith("GPU "))
    shown = os.environ.get("CUDA_VISIBLE_DEVICES")
    if shown is not None:
        count = min(count, len([x for x in shown.split(",") if x.strip() and not x.strip().startswith("-")]))
    return count


VISIBLE_GPUS = visible_gpus() if config["jobs"]["gpu"] == "auto" or not config["jobs"]["gpus"] else 0


def _gpu_jobs():
    jobs = config["jobs"]
    if jobs["gpu"] != "auto":
        return int(jobs["gpu"])
    if ALGORITHM != "zuker" and jobs["cpu"] > 0:
        return 0        # Nussinov's CPU and GPU engines may pick different structures of one score
    return VISIBLE_GPUS


CPU_JOBS = int(config["jobs"]["cpu"])
GPU_JOBS = _gpu_jobs()
if CPU_JOBS + GPU_JOBS == 0:
    raise ValueError("jobs.cpu is 0 and there are no GPU jobs (no GPU here, or jobs.gpu: 0): nothing would fold")
if ALGORITHM != "zuker" and CPU_JOBS and GPU_JOBS:
    raise ValueError("fold.algorithm nussinov: its CPU and GPU engines may pick different structures of the "
                     "same score; set jobs.cpu: 0 or jobs.gpu: 0")


def _cores():
    """--cores; a cluster run has none (Snakemake raises on the question): this host's count then, and the
    profile's set-threads sizes the CPU jobs."""
    try:
        cores = workflow.cores
    except WorkflowError:
        cores = None
    return cores if isinstance(cores, int) and cores > 0 else (os.cpu_count() or 1)


CORES = _cores()
# a GPU job's process takes one core (it feeds the GPU); the CPU jobs share the rest
CPU_THREADS = config["jobs"]["cpu_threads"] or max(1, (CORES - GPU_JOBS) // max(1, CPU_JOBS))
GPU_IDS = config["jobs"]["gpus"] or list(range(max(1, VISIBLE_GPUS)))
# Named after the device kind, not the host: every job evaluates this file again where it runs, and on a cluster
# that is another host than the one Snakemake starts on (the host's cache keeps a profile per host).
PROFILE = f"{OUTDIR}/profile/{'cpu+gpu' if GPU_JOBS else 'cpu'}.{ALGORITHM}.json"


def print_devices():
    if GPU_JOBS:
        print(f"rnapipe: {CPU_JOBS} CPU job(s) of {CPU_THREADS} thread(s) and {GPU_JOBS} GPU job(s) an input",
              file=sys.stderr)
    else:
        print(f"rnapipe: no GPU jobs (no GPU here, or jobs.gpu: 0): the workflow runs on the CPU only, "
              f"{CPU_JOBS} job(s) of {CPU_THREADS} thread(s) an input", file=sys.stderr)


def job_names():
    return [f"cpu{j}" for j in range(CPU_JOBS)] + [f"gpu{j}" for j in range(GPU_JOBS)]


def final_outputs(sample):
    """The outputs of one input: one file per configured format, all from one fold."""
    return [f"{OUTDIR}/{sample}.{ALGORITHM}.{fmt}" for fmt in FORMATS]


SCORE_FORMAT = next((fmt for fmt in FORMATS if fmt in ("tsv", "db")), FORMATS[0])


def score_output(sample):
    """The output the report reads the scores from (tsv or db when configured)."""
    return f"{OUTDIR}/{sample}.{ALGORITHM}.{SCORE_FORMAT}"


def rejected_output(sample):
    """Beside the first output, as rnapipe fold names it: <output>.rejected.tsv."""
    return final_outputs(sample)[0] + ".rejected.tsv"


def all_outputs():
    return [path for sample in SAMPLES for path in final_outputs(sample) + [rejected_output(sample)]]


def report_outputs():
    return [f"{OUTDIR}/report/{name}.svg" for name in ("throughput", "partition", "time_vs_length", "energy")]


def input_of(wildcards):
    return SAMPLES[wildcards.sample]


def fold_options():
    fold = config["fold"]
    opts = [f"--algorithm {ALGORITHM}", "--on-invalid error"]
    if fold.get("variant"):
        opts.append(f"--variant {fold['variant']}")
    return " ".join(opts)


def gpu_of(wildcards):
    return GPU_IDS[int(wildcards.j) % len(GPU_IDS)]


# The fold jobs' command (see fold.smk): rnapipe fold into {output}.fold, resumable, then linked to {output}
# (a hard link, a copy where the file system has none): {output}.fold stays, so a job cut off after its fold
# was complete links it again instead of folding again.
FOLD_SHELL = """
fold={output}.fold
if [ ! -s {input.shards} ]; then
    : > {output}
    echo 'rnapipe: no shards for this job' > {log}
elif [ -e "$fold" ] && [ ! -e "$fold.journal" ] && [ "$fold" -nt {input.shards} ]; then
    ln -f "$fold" {output} 2> /dev/null || cp "$fold" {output}
    echo 'rnapipe: the fold was complete before the job was cut off' > {log}
else
    restart=
    if [ -e "$fold.journal" ] && [ {input.shards} -nt "$fold.journal" ]; then restart=--restart; fi
    {params.rnapipe} fold $(cat {input.shards}) -o "$fold" --format db --threads {threads} {params.options} \\
        $restart 2> {log}
    ln -f "$fold" {output} 2> /dev/null || cp "$fold" {output}
fi
"""
