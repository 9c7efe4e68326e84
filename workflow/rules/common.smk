# Settings and helpers shared by the rules: inputs and their names, job counts, threads, devices.

import json
import os
import re
import shlex
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


def _cores():
    """--cores; a cluster run has none (Snakemake raises on the question): this host's count then, and the
    profile's set-threads sizes the CPU jobs."""
    try:
        cores = workflow.cores
    except WorkflowError:
        cores = None
    return cores if isinstance(cores, int) and cores > 0 else (os.cpu_count() or 1)


def _gpu_jobs_asked():
    jobs = config["jobs"]
    if jobs["gpu"] == "auto" and ALGORITHM != "zuker" and jobs["cpu"] > 0:
        return 0        # Nussinov's CPU and GPU engines may pick different structures of one score
    return jobs["gpu"]


def _resources():
    """rnapipe's reckoning of the fold jobs on this host (`rnapipe resources`, one process when the Snakefile is
    read): the GPUs CUDA shows (counted, which imports CuPy, only for jobs.gpu auto, or for GPU jobs whose GPU
    numbers are not configured), the GPU jobs (auto: one per GPU) and each CPU job's threads (the cores less
    one per GPU job, which feeds its GPU, shared by the CPU jobs)."""
    gpu_jobs = _gpu_jobs_asked()
    command = [sys.executable, "-m", "rnapipe", "resources", "--json", "--cores", str(_cores()),
               "--cpu-jobs", str(config["jobs"]["cpu"]), "--gpu-jobs", str(gpu_jobs)]
    if gpu_jobs != "auto" and gpu_jobs > 0 and not config["jobs"]["gpus"]:
        command.append("--count-gpus")
    path = os.environ.get("PYTHONPATH")
    env = dict(os.environ, PYTHONPATH=workflow.basedir + (os.pathsep + path if path else ""))
    done = subprocess.run(command, env=env, capture_output=True, text=True)
    if done.returncode != 0:
        asked = shlex.join(["rnapipe"] + command[3:])
        raise WorkflowError(f"{asked} failed (the Python running Snakemake needs rnapipe's dependencies: "
                            f"pip install .): {done.stderr.strip()[-2000:]}")
    return json.loads(done.stdout)


RESOURCES = _resources()
CPU_JOBS = int(config["jobs"]["cpu"])
GPU_JOBS = RESOURCES["gpu_jobs"]
if CPU_JOBS + GPU_JOBS == 0:
    raise ValueError("jobs.cpu is 0 and there are no GPU jobs (no GPU here, or jobs.gpu: 0): nothing would fold")
if ALGORITHM != "zuker" and CPU_JOBS and GPU_JOBS:
    raise ValueError("fold.algorithm nussinov: its CPU and GPU engines may pick different structures of the "
                     "same score; set jobs.cpu: 0 or jobs.gpu: 0")
CPU_THREADS = config["jobs"]["cpu_threads"] or RESOURCES["cpu_threads"]
GPU_IDS = config["jobs"]["gpus"] or list(range(max(1, RESOURCES["gpus"] or 0)))
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


def fold_options(wildcards):
    """The rnapipe options of a fold job: the configured fold, on the job's device (a GPU job on its GPU)."""
    fold = config["fold"]
    opts = [f"--algorithm {ALGORITHM}", "--on-invalid error"]
    if fold.get("variant"):
        opts.append(f"--variant {fold['variant']}")
    if wildcards.device == "gpu":
        opts.append(f"--device gpu --gpus {gpu_of(wildcards)}")
    else:
        opts.append("--device cpu")
    return " ".join(opts)


def fold_threads(wildcards):
    """A GPU job takes one core (it feeds its GPU); a CPU job CPU_THREADS."""
    return 1 if wildcards.device == "gpu" else CPU_THREADS


def gpu_of(wildcards):
    return GPU_IDS[int(wildcards.j) % len(GPU_IDS)]
