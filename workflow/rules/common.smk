# Settings and helpers shared by the rules: inputs and their names, job counts, threads, devices.

import json
import os
import re
import shlex
import subprocess
import sys
import time
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


# fold: keys that are RNAfold's pairing rules, with their flags (CPU and GPU jobs take them).
PAIRING_FLAGS = {"no_lp": "--noLP", "no_gu": "--noGU", "no_closing_gu": "--noClosingGU", "max_bp_span": "--maxBPspan"}
PAIRING = {key: config["fold"].get(key) for key in PAIRING_FLAGS if config["fold"].get(key) not in (None, False)}
if PAIRING and ALGORITHM != "zuker":
    raise ValueError(f"fold.{', fold.'.join(PAIRING)}: pairing rules of the zuker algorithm, not of {ALGORITHM}")
# fold.partition: RNAfold -p. Its engine takes none of the pairing rules, constraint lines or SHAPE data, and only
# it writes the formats bpp and unpaired.
PARTITION = bool(config["fold"]["partition"])
if PARTITION:
    _refused = [f"fold.{key}" for key in list(PAIRING) + ["constraint", "enforce_constraint", "shape"]
                if config["fold"].get(key)]
    if ALGORITHM != "zuker":
        raise ValueError(f"fold.partition: the partition function is Zuker's, not {ALGORITHM}'s")
    if _refused:
        raise ValueError(f"fold.partition with {_refused[0]}: the partition function's engine takes RNAfold's "
                         "default pairing rules only, without constraints or SHAPE data (for now)")
else:
    _needing = [fmt for fmt in config["formats"] if fmt in ("bpp", "unpaired")]
    if _needing:
        raise ValueError(f"formats: {_needing[0]} holds the partition function's results: set fold.partition: true")
    _given = [key for key, default in (("mea", False), ("mea_gamma", 1.0), ("bpp_threshold", 1e-5))
              if config["fold"][key] != default]
    if _given:
        raise ValueError(f"fold.{_given[0]} applies with fold.partition: true only")


def _gpu_jobs_asked():
    jobs = config["jobs"]
    if jobs["gpu"] == "auto" and ALGORITHM != "zuker" and jobs["cpu"] > 0:
        return 0        # Nussinov's CPU and GPU engines may pick different structures of one score
    return jobs["gpu"]


# jobs.gpu auto is counted once, by the Snakemake process the user started, on its host. The jobs evaluate this
# file again where they run (on a cluster, other hosts, which may have other GPUs or none): they take that count
# from this environment variable (the envvars directive below passes it to them) instead of counting their own
# GPUs, so that every process plans the same jobs and files.
GPU_JOBS_VAR = "RNAPIPE_WORKFLOW_GPU_JOBS"


def _main_process():
    try:
        return workflow.is_main_process
    except AttributeError:
        return True


def _resources():
    """rnapipe's reckoning of the fold jobs on this host (`rnapipe resources`, one process when the Snakefile is
    read): the GPUs CUDA shows (counted, which imports CuPy, only for jobs.gpu auto in the main process, or for
    GPU jobs whose GPU numbers are not configured), the GPU jobs (auto: one per GPU) and each job's threads (a
    GPU job one, which feeds its GPU, the CPU jobs the other cores; with fold.partition every job a like
    share)."""
    gpu_jobs = _gpu_jobs_asked()
    if gpu_jobs == "auto" and not _main_process() and os.environ.get(GPU_JOBS_VAR, "").isdigit():
        gpu_jobs = int(os.environ[GPU_JOBS_VAR])
    command = [sys.executable, "-m", "rnapipe", "resources", "--json", "--cores", str(_cores()),
               "--cpu-jobs", str(config["jobs"]["cpu"]), "--gpu-jobs", str(gpu_jobs)]
    if gpu_jobs != "auto" and gpu_jobs > 0 and not config["jobs"]["gpus"]:
        command.append("--count-gpus")
    if _main_process() and config["jobs"]["cpu"] > 0:
        command += ["--algorithm", ALGORITHM]            # is the CPU engine compiled here? (said at the start)
    if PARTITION:
        command.append("-p")                             # every fold job a like share of the cores
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
if _main_process():
    os.environ[GPU_JOBS_VAR] = str(GPU_JOBS)


envvars:
    GPU_JOBS_VAR,


# The profile decides the plan only where a GPU's jobs share an input's shards with other jobs: with one fold
# job an input that job takes every shard whatever they cost, and CPU jobs alone, all alike, share the shards by
# the records' predicted work; so no profile is made for them.
PROFILE_NEEDED = GPU_JOBS > 0 and CPU_JOBS + GPU_JOBS > 1
# Named after the device kind, not the host: every job evaluates this file again where it runs, and on a cluster
# that is another host than the one Snakemake starts on (the host's cache keeps a profile per host).
# With fold.partition the partition function's engines are timed (their own profile, beside the MFE's).
PROFILE = f"{OUTDIR}/profile/{'cpu+gpu' if GPU_JOBS else 'cpu'}.{ALGORITHM}{'.partition' if PARTITION else ''}.json"


def profile_input():
    """The profile the partition and the report read: none with one fold job an input or CPU jobs alone."""
    return PROFILE if PROFILE_NEEDED else []


def say(text):
    print(f"rnapipe: {text}", file=sys.stderr, flush=True)


def print_devices():
    if GPU_JOBS:
        say(f"{CPU_JOBS} CPU job(s) of {CPU_THREADS} thread(s) and {GPU_JOBS} GPU job(s) of "
            f"{RESOURCES['gpu_threads']} an input")
    else:
        say(f"no GPU jobs (no GPU here, or jobs.gpu: 0): the workflow runs on the CPU only, "
            f"{CPU_JOBS} job(s) of {CPU_THREADS} thread(s) an input")
    if RESOURCES.get("cpu_compiled") is False:
        say("the CPU engine is not compiled on this machine yet: the first job that folds on the CPU compiles it "
            "first (Numba, once: seconds, split over two processes; later runs load it from Numba's cache)")
    if not PROFILE_NEEDED and CPU_JOBS + GPU_JOBS == 1:
        say("one fold job an input: no profile is made (it could not change the plan: the one job takes every "
            "shard)")
    elif not PROFILE_NEEDED:
        say(f"{CPU_JOBS} CPU jobs an input and no GPU job: no profile is made (CPU jobs are alike: they share the "
            "shards by the records' predicted work)")
    if config["jobs"]["gpu"] == "auto" and not getattr(workflow, "local_exec", True):
        executor = getattr(workflow.executor_plugin, "name", None) or "not local"
        say(f"jobs.gpu: auto counted {RESOURCES['gpus']} GPU(s) on this host, where Snakemake runs, and plans "
            f"{GPU_JOBS} GPU job(s) an input; the jobs run elsewhere (executor: {executor}): if their hosts have "
            "other GPUs, set jobs.gpu to the number of GPU jobs an input (--config 'jobs={gpu: 2}')")


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


def shape_input(wildcards):
    """fold.shape as an input of the fold jobs (a changed SHAPE file folds again), or none."""
    return [config["fold"]["shape"]] if config["fold"]["shape"] else []


def fold_options(wildcards):
    """The rnapipe options of a fold job: the configured fold (algorithm, variant, RNAfold's pairing rules as
    its flags), on the job's device (a GPU job on its GPU)."""
    fold = config["fold"]
    # prepare has left out the records a fold cannot read; under skip a job leaves out those whose constraint
    # lines leave no structure (only a fold finds them) and lists them for the merge
    opts = [f"--algorithm {ALGORITHM}", f"--on-invalid {fold['on_invalid']}"]
    if fold.get("variant"):
        opts.append(f"--variant {fold['variant']}")
    for key, value in PAIRING.items():
        opts.append(PAIRING_FLAGS[key] if value is True else f"{PAIRING_FLAGS[key]} {int(value)}")
    if fold["constraint"]:
        opts.append("-C")
    if fold["enforce_constraint"]:
        opts.append("--enforceConstraint")
    if fold["shape"]:
        opts.append(f"--shape {shlex.quote(os.path.abspath(fold['shape']))} --shapeMethod {fold['shape_method']}")
    if PARTITION:
        opts.append(f"-p --mea-gamma {float(fold['mea_gamma'])!r} --bpp-threshold {float(fold['bpp_threshold'])!r}")
    if wildcards.device == "gpu":
        opts.append(f"--device gpu --gpus {gpu_of(wildcards)}")
    else:
        opts.append("--device cpu")
    return " ".join(opts)


def fold_threads(wildcards):
    """A GPU job takes one core (it feeds its GPU), a CPU job CPU_THREADS; with fold.partition every job a like
    share of the cores (`rnapipe resources -p`): a GPU job's engine computes its records' MEA structures and
    derived values on the host, on the job's threads."""
    return RESOURCES["gpu_threads"] if wildcards.device == "gpu" else CPU_THREADS


def gpu_of(wildcards):
    return GPU_IDS[int(wildcards.j) % len(GPU_IDS)]


# When a job fails Snakemake names its log file; the reason is that log's last line (rnapipe ends a failed
# command with one line, `rnapipe: error: ...`). The Snakefile's onerror handler prints it for each job that
# failed: a job of this run's DAG whose log was written during this run and whose outputs are missing
# (Snakemake removes a failed job's outputs; a job that ran to its end has them, one not started wrote no log).
RUN_STARTED = time.time()


def last_line(path, tail=8192):
    """The last non-empty line of a text file (its last ``tail`` bytes read); '' when there is none."""
    try:
        with open(path, "rb") as handle:
            handle.seek(0, os.SEEK_END)
            handle.seek(max(0, handle.tell() - tail))
            text = handle.read().decode("utf-8", "replace")
    except OSError:
        return ""
    lines = [line.strip() for line in re.split(r"[\r\n]", text) if line.strip()]
    return lines[-1] if lines else ""


def failed_jobs():
    """(rule, wildcards, log, its last line) of each job of this run that failed."""
    found = []
    for job in workflow.dag.jobs:
        logs = [str(path) for path in job.log if os.path.exists(path) and os.path.getmtime(path) >= RUN_STARTED - 1]
        if not logs or all(os.path.exists(path) for path in job.output):
            continue
        wildcards = ", ".join(f"{key}={value}" for key, value in job.wildcards_dict.items())
        found += [(job.rule.name, wildcards, path, last_line(path)) for path in logs]
    return found


def print_failures():
    for rule, wildcards, path, line in failed_jobs():
        where = f"{rule} ({wildcards})" if wildcards else rule
        say(f"{where} failed (log {path}): {line or 'its log is empty'}")
