"""The Snakemake workflow (prepare -> profile -> partition -> fold -> merge -> report) on small inputs in a
temporary directory: results against RNAfold and against one direct `rnapipe fold` of the same input; the
stages' subcommands on their own; killed at several points and run again."""

import json
import os
import shutil
import signal
import subprocess
import sys
import time
from pathlib import Path

import numpy as np
import psutil
import pytest

from naive import pairs_of

REPO = Path(__file__).resolve().parents[1]
BIN = os.path.dirname(sys.executable)
FORMATS = ("db", "tsv", "ct", "bpseq")

needs_snakemake = pytest.mark.skipif(shutil.which("snakemake", path=BIN + os.pathsep + os.environ.get("PATH", ""))
                                     is None, reason="snakemake is not installed")


def read_fasta(path):
    records, name = [], None
    for line in Path(path).read_text().splitlines():
        if line.startswith(">"):
            name = line[1:].split()[0]
        elif name:
            records.append((name, line.strip()))
            name = None
    return records


def environment(tmp_path, **extra):
    env = dict(os.environ, PATH=BIN + os.pathsep + os.environ.get("PATH", ""),
               RNAPIPE_CACHE=str(tmp_path / "cache"), PYTHONPATH=str(REPO))
    for key in ("RNAPIPE_PAUSE_AT", "RNAPIPE_PAUSE_FILE", "RNAPIPE_CHUNK_RECORDS", "RNAPIPE_BATCH_RECORDS"):
        env.pop(key, None)
    env.update(extra)
    return env


def snakemake_cmd(workdir, config: dict, *more):
    lines = [f"{key}: {value}" for key, value in config.items()]
    (workdir / "run.yaml").write_text("\n".join(lines) + "\n")
    return [sys.executable, "-m", "snakemake", "-s", str(REPO / "Snakefile"), "--directory", str(workdir),
            "--configfile", str(REPO / "config" / "config.yaml"), str(workdir / "run.yaml"), "--cores", "2", *more]


def rnapipe(args, cwd, env):
    return subprocess.run([sys.executable, "-m", "rnapipe", *args], cwd=cwd, env=env, capture_output=True, text=True,
                          timeout=600)


def mixed_input(path, count, seed, bad=True):
    """Random RNA of 5-300 nt (several length ranges), a few bad records when ``bad``."""
    rng = np.random.default_rng(seed)
    lines = []
    for k in range(count):
        n = int(rng.integers(5, 300)) if k % 3 else int(rng.integers(5, 40))
        seq = "".join(rng.choice(list("ACGU"), size=n))
        name = f"r{k}"
        if bad and k == 7:
            seq = seq[:3] + "X" + seq[4:]             # a wrong character
        if bad and k == 11:
            name = "r3"                               # a duplicate id
        lines.append(f">{name} description {k}\n{seq}\n")
    if bad:
        lines.insert(20, ">empty\n")
    path.write_text("".join(lines))


# -------------------------------------------------------------------------------------------------------------
# the stages' subcommands, without Snakemake


@pytest.mark.parametrize("algorithm", ["nussinov", "zuker"])
def test_prepare_partition_merge_equal_one_fold(tmp_path, algorithm):
    """Many shards over several length ranges and jobs, bad records skipped: the merged outputs are byte for byte
    those of one `rnapipe fold` of the input, in every format, and the rejected lists are the same."""
    env = environment(tmp_path)
    mixed_input(tmp_path / "in.fa", 160 if algorithm == "zuker" else 400, seed=5)
    direct = rnapipe(["fold", "in.fa", "-q", "--algorithm", algorithm, "--on-invalid", "skip"]
                     + [x for fmt in FORMATS for x in ("-o", f"direct.{fmt}")], tmp_path, env)
    assert direct.returncode == 0, direct.stderr
    run = rnapipe(["prepare", "in.fa", "-o", "prep", "--on-invalid", "skip", "--shard-records", "7",
                   "--algorithm", algorithm], tmp_path, env)
    assert run.returncode == 0, run.stderr
    shards = (tmp_path / "prep" / "shards.tsv").read_text().splitlines()[1:]
    assert len({row.split("\t")[1] for row in shards}) >= 5                   # several length ranges
    for row in shards:                                                          # each shard one range
        fields = row.split("\t")
        lens = [len(s) for _, s in read_fasta(tmp_path / "prep" / "shards" / f"{int(fields[0]):06d}.fa")]
        assert len(lens) == int(fields[2]) and min(lens) == int(fields[6]) and max(lens) == int(fields[7])
        assert len({int(np.floor(4 * np.log2(n))) for n in lens}) == 1
    run = rnapipe(["profile", "--device", "cpu", "--cached", "--algorithm", algorithm, "--threads", "1",
                   "--lengths", "20,40", "-o", "profile.json"], tmp_path, env)
    assert run.returncode == 0, run.stderr
    run = rnapipe(["partition", "prep", "--profile", "profile.json", "--cpu-jobs", "4", "-o", "plan"], tmp_path, env)
    assert run.returncode == 0, run.stderr
    assert "cpu        4" in run.stdout and "100.0%" in run.stdout          # the device's share
    (tmp_path / "folds").mkdir()
    listed = []
    for j in range(4):
        names = (tmp_path / "plan" / f"cpu{j}.list").read_text().split()
        listed += names
        assert names, "every job has shards here"
        job = rnapipe(["fold", *names, "-o", f"folds/cpu{j}.db", "-q", "--algorithm", algorithm, "--threads", "1"],
                      tmp_path, env)
        assert job.returncode == 0, job.stderr
    assert len(listed) == len(set(listed)) == len(shards)                      # every shard once
    run = rnapipe(["merge", "prep", "--plan", "plan", "--folds", "folds", "--algorithm", algorithm,
                   "--rejected", "merged.rejected.tsv"] + [x for fmt in FORMATS for x in ("-o", f"merged.{fmt}")],
                  tmp_path, env)
    assert run.returncode == 0, run.stderr
    for fmt in FORMATS:
        assert (tmp_path / f"merged.{fmt}").read_bytes() == (tmp_path / f"direct.{fmt}").read_bytes(), fmt
    rejected = (tmp_path / "merged.rejected.tsv").read_text()
    assert rejected == (tmp_path / "direct.db.rejected.tsv").read_text()
    assert len(rejected.splitlines()) == 4                                     # header + three bad records


def test_partition_between_cpu_and_gpu_jobs_merges_to_one_fold(tmp_path):
    """A profile with a GPU 5 times faster on every length: the CPU jobs get some shards, the GPU jobs the
    most; every shard once; each side's jobs (folded here on the CPU: Zuker's CPU and GPU engines agree bit for
    bit) merge to one fold's outputs; the printed shares are the plan's."""
    import json

    env = environment(tmp_path)
    mixed_input(tmp_path / "in.fa", 150, seed=8, bad=False)
    assert rnapipe(["prepare", "in.fa", "-o", "prep", "--shard-records", "2"], tmp_path, env).returncode == 0
    cost = {"a": 4e-11, "b": 2e-8, "c": 1e-6}
    profile = {"devices": ["cpu", "gpu"], "threads": 1, "longest": {"cpu": None, "gpu": None},
               "costs": {"cpu": cost, "gpu": {k: v / 5 for k, v in cost.items()}},
               "samples": {"cpu": {"20": 1e-5}, "gpu": {"20": 5e-7}}, "calls": {}}
    (tmp_path / "p.json").write_text(json.dumps(profile))
    run = rnapipe(["partition", "prep", "--profile", "p.json", "--cpu-jobs", "2", "--gpu-jobs", "2", "-o", "plan"],
                  tmp_path, env)                    # the CPU's best share, 2 / (2 + 10), is above MIN_GAIN
    assert run.returncode == 0, run.stderr
    jobs = [line.split("\t") for line in (tmp_path / "plan" / "jobs.tsv").read_text().splitlines()[1:]]
    records = {d: sum(int(j[3]) for j in jobs if j[1] == d) for d in ("cpu", "gpu")}
    assert 0 < records["cpu"] < records["gpu"]
    rows = {line.split()[0]: line.split() for line in run.stdout.splitlines()[1:]}
    assert rows["cpu"][3] == f"{records['cpu']:,}" and rows["gpu"][3] == f"{records['gpu']:,}"
    direct = rnapipe(["fold", "in.fa", "-q", "-o", "direct.db", "-o", "direct.tsv"], tmp_path, env)
    assert direct.returncode == 0, direct.stderr
    (tmp_path / "folds").mkdir()
    listed = []
    for name in ("cpu0", "cpu1", "gpu0", "gpu1"):
        names = (tmp_path / "plan" / f"{name}.list").read_text().split()
        listed += names
        if names:
            assert rnapipe(["fold", *names, "-o", f"folds/{name}.db", "-q"], tmp_path, env).returncode == 0
        else:
            (tmp_path / "folds" / f"{name}.db").write_bytes(b"")
    assert len(listed) == len(set(listed)) == len((tmp_path / "prep" / "shards.tsv").read_text().splitlines()) - 1
    run = rnapipe(["merge", "prep", "--plan", "plan", "--folds", "folds", "-o", "m.db", "-o", "m.tsv"], tmp_path, env)
    assert run.returncode == 0, run.stderr
    assert (tmp_path / "m.db").read_bytes() == (tmp_path / "direct.db").read_bytes()
    assert (tmp_path / "m.tsv").read_bytes() == (tmp_path / "direct.tsv").read_bytes()


def test_merge_refuses_a_job_output_with_missing_records(tmp_path):
    env = environment(tmp_path)
    mixed_input(tmp_path / "in.fa", 40, seed=2, bad=False)
    assert rnapipe(["prepare", "in.fa", "-o", "prep", "--shard-records", "5"], tmp_path, env).returncode == 0
    assert rnapipe(["profile", "--device", "cpu", "--cached", "--algorithm", "nussinov", "--threads", "1",
                    "--lengths", "20,40", "-o", "p.json"], tmp_path, env).returncode == 0
    assert rnapipe(["partition", "prep", "--profile", "p.json", "-o", "plan"], tmp_path, env).returncode == 0
    (tmp_path / "folds").mkdir()
    names = (tmp_path / "plan" / "cpu0.list").read_text().split()
    assert rnapipe(["fold", *names, "-o", "folds/cpu0.db", "-q", "--algorithm", "nussinov"], tmp_path,
                   env).returncode == 0
    db = (tmp_path / "folds" / "cpu0.db").read_bytes().splitlines(keepends=True)
    (tmp_path / "folds" / "cpu0.db").write_bytes(b"".join(db[:-3]))          # one record short
    run = rnapipe(["merge", "prep", "--plan", "plan", "--folds", "folds", "--algorithm", "nussinov", "-o", "m.db"],
                  tmp_path, env)
    assert run.returncode == 2
    assert run.stderr.strip().count("\n") == 0 and "39 records, its job was given 40" in run.stderr
    assert not (tmp_path / "m.db").exists() and not (tmp_path / "m.db.part").exists()


def test_partition_without_a_profile_gives_the_one_job_every_shard(tmp_path):
    """One job needs no profile: every shard to it, its time not predicted (NaN in jobs.tsv, '-' printed). CPU
    jobs alone share the shards by the records' predicted work L³ + 330·L² + 10⁴ (computed here from the input),
    longest first to the least loaded job: each shard once, and the loads differ by no more than the largest
    shard. With a GPU job among several, no profile is refused in one line."""
    env = environment(tmp_path)
    mixed_input(tmp_path / "in.fa", 40, seed=3, bad=False)
    assert rnapipe(["prepare", "in.fa", "-o", "prep", "--shard-records", "5"], tmp_path, env).returncode == 0
    shards = len((tmp_path / "prep" / "shards.tsv").read_text().splitlines()) - 1
    for cpu_jobs, gpu_jobs, job in ((1, 0, "cpu0"), (0, 1, "gpu0")):
        run = rnapipe(["partition", "prep", "--cpu-jobs", str(cpu_jobs), "--gpu-jobs", str(gpu_jobs), "-o", job],
                      tmp_path, env)
        assert run.returncode == 0, run.stderr
        assert "one job and no profile: every shard goes to it" in run.stderr
        assert len((tmp_path / job / f"{job}.list").read_text().split()) == shards
        rows = [line.split("\t") for line in (tmp_path / job / "jobs.tsv").read_text().splitlines()[1:]]
        assert [(r[0], r[2], r[3], r[5]) for r in rows] == [(job, str(shards), "40", "nan")]
        assert run.stdout.splitlines()[1].split()[-2:] == ["-", "-"]

    run = rnapipe(["partition", "prep", "--cpu-jobs", "3", "-o", "three"], tmp_path, env)
    assert run.returncode == 0, run.stderr
    assert "3 CPU jobs and no profile: they share the shards by the records' predicted work" in run.stderr
    work_of = {}                              # shard file name -> its records' work, from the shard's FASTA
    for path in (tmp_path / "prep" / "shards").iterdir():
        lens = [len(s) for _, s in read_fasta(path)]
        work_of[path.name] = sum(n ** 3 + 330 * n * n + 1e4 for n in lens)
    loads, seen = [], []
    for j in range(3):
        names = [os.path.basename(line) for line in (tmp_path / "three" / f"cpu{j}.list").read_text().split()]
        seen += names
        loads.append(sum(work_of[n] for n in names))
    assert sorted(seen) == sorted(work_of)
    assert max(loads) - min(loads) <= max(work_of.values())
    rows = [line.split("\t") for line in (tmp_path / "three" / "jobs.tsv").read_text().splitlines()[1:]]
    assert [r[5] for r in rows] == ["nan"] * 3

    run = rnapipe(["partition", "prep", "--cpu-jobs", "1", "--gpu-jobs", "1", "-o", "two"], tmp_path, env)
    assert run.returncode == 2 and run.stderr.count("\n") == 1
    assert "2 jobs with GPU jobs among them share the shards by their predicted time: give --profile" in run.stderr
    assert not (tmp_path / "two").exists()


def test_merge_without_the_folds_names_the_missing_one_and_what_makes_it(tmp_path):
    """`rnapipe merge` before the fold jobs ran: one line naming the missing job output and the command (and
    the workflow's rule) that makes it; without a plan, one line naming the command that makes that."""
    env = environment(tmp_path)
    mixed_input(tmp_path / "in.fa", 30, seed=6, bad=False)
    assert rnapipe(["prepare", "in.fa", "-o", "prep", "--shard-records", "4"], tmp_path, env).returncode == 0
    run = rnapipe(["merge", "prep", "--plan", "plan", "--folds", "folds", "-o", "m.db"], tmp_path, env)
    assert run.returncode == 2 and run.stderr.count("\n") == 1
    assert "'plan' holds no plan (plan.tsv): rnapipe partition makes one" in run.stderr
    assert rnapipe(["partition", "prep", "-o", "plan"], tmp_path, env).returncode == 0
    (tmp_path / "folds").mkdir()
    run = rnapipe(["merge", "prep", "--plan", "plan", "--folds", "folds", "-o", "m.db"], tmp_path, env)
    assert run.returncode == 2 and run.stderr.count("\n") == 1, run.stderr
    assert ("the fold of job cpu0 is missing: folds/cpu0.db; 'rnapipe fold-job plan/cpu0.list -o folds/cpu0.db' "
            "makes it (the workflow's rule fold)") in run.stderr
    assert "Errno" not in run.stderr and not (tmp_path / "m.db").exists()


def test_fold_job_folds_links_and_resumes_as_the_workflow_needs(tmp_path):
    """`rnapipe fold-job`: a job's shards folded into OUTPUT.fold and linked to OUTPUT, byte for byte one
    `rnapipe fold` of them; a complete fold only linked again; a journal older than the list discarded, a newer
    one kept (and refused here, being no journal); an empty list an empty output. Each step says so in the log."""
    env = environment(tmp_path)
    mixed_input(tmp_path / "in.fa", 30, seed=4, bad=False)
    assert rnapipe(["prepare", "in.fa", "-o", "prep", "--shard-records", "4"], tmp_path, env).returncode == 0
    shards = sorted(str(p) for p in (tmp_path / "prep" / "shards").iterdir())
    (tmp_path / "job.list").write_text("".join(f"{name}\n" for name in shards))
    job = ["fold-job", "job.list", "-o", "job.db", "--algorithm", "nussinov", "--threads", "1", "--device", "cpu"]
    direct = rnapipe(["fold", *shards, "-o", "direct.db", "-q", "--algorithm", "nussinov", "--threads", "1"],
                     tmp_path, env)
    assert direct.returncode == 0, direct.stderr
    run = rnapipe(job + ["-q"], tmp_path, env)
    assert run.returncode == 0 and run.stderr == "", run.stderr
    assert (tmp_path / "job.db").read_bytes() == (tmp_path / "direct.db").read_bytes()
    assert (tmp_path / "job.db").stat().st_ino == (tmp_path / "job.db.fold").stat().st_ino      # a hard link
    (tmp_path / "job.db").unlink()                  # Snakemake's removal of a cut-off job's output
    run = rnapipe(job, tmp_path, env)
    assert run.returncode == 0 and run.stderr == "rnapipe: the fold was complete before the job was cut off\n"
    assert (tmp_path / "job.db").read_bytes() == (tmp_path / "direct.db").read_bytes()

    (tmp_path / "job.db").unlink()
    (tmp_path / "job.db.fold").unlink()
    journal = tmp_path / "job.db.fold.journal"
    journal.write_text('{"journal": 99}\n')       # not resumable: refused unless the fold starts afresh
    os.utime(journal, ns=(1, 1))                   # older than the list: another plan's, discarded
    run = rnapipe(job + ["-q"], tmp_path, env)
    assert run.returncode == 0, run.stderr
    assert (tmp_path / "job.db").read_bytes() == (tmp_path / "direct.db").read_bytes()
    (tmp_path / "job.db").unlink()
    (tmp_path / "job.db.fold").unlink()
    journal.write_text('{"journal": 99}\n')       # newer than the list: this plan's, resumed (and refused)
    run = rnapipe(job + ["-q"], tmp_path, env)
    assert run.returncode == 2 and "is not a journal" in run.stderr and "--restart" in run.stderr
    assert not (tmp_path / "job.db").exists()

    (tmp_path / "empty.list").write_text("")
    run = rnapipe(["fold-job", "empty.list", "-o", "none.db"], tmp_path, env)
    assert run.returncode == 0 and run.stderr == "rnapipe: no shards for this job\n"
    assert (tmp_path / "none.db").read_bytes() == b""


def test_fold_job_links_a_finished_fold_only_when_folded_with_the_same_options(tmp_path):
    """Snakemake runs a fold job again when its options change (fold.no_lp, fold.max_bp_span, ...), after
    removing its output: the finished fold of other options beside it is folded again, not linked; one of the
    same options is linked (a default spelled out is the same options)."""
    env = environment(tmp_path)
    mixed_input(tmp_path / "in.fa", 12, seed=6, bad=False)
    assert rnapipe(["prepare", "in.fa", "-o", "prep"], tmp_path, env).returncode == 0
    shards = sorted(str(p) for p in (tmp_path / "prep" / "shards").iterdir())
    (tmp_path / "job.list").write_text("".join(f"{name}\n" for name in shards))
    job = ["fold-job", "job.list", "-o", "job.db", "--threads", "1", "--device", "cpu"]
    direct = {}
    for name, rules in (("plain", []), ("rules", ["--noLP", "--maxBPspan", "40"])):
        proc = rnapipe(["fold", *shards, "-o", f"{name}.db", "-q", "--threads", "1", *rules], tmp_path, env)
        assert proc.returncode == 0, proc.stderr
        direct[name] = (tmp_path / f"{name}.db").read_bytes()
    assert direct["plain"] != direct["rules"]
    for rules, name, said in ((["--noLP", "--maxBPspan", "40"], "rules", "folded"),
                              ([], "plain", "folded"),
                              (["--dangles", "2"], "plain", "the fold was complete before the job was cut off"),
                              (["--maxBPspan", "40", "--noLP"], "rules", "folded")):
        (tmp_path / "job.db").unlink(missing_ok=True)         # Snakemake's removal before it runs the job again
        run = rnapipe(job + rules, tmp_path, env)
        assert run.returncode == 0 and said in run.stderr, (rules, run.stderr)
        assert (tmp_path / "job.db").read_bytes() == direct[name], rules
    # a job of other options cut off before its first chunk: its journal is not resumed by a job of the first
    # options, nor is the finished fold of the first options, removed as the other job started, linked
    pause = tmp_path / "paused"
    proc = subprocess.Popen([sys.executable, "-m", "rnapipe", *job, "--noGU"], cwd=tmp_path,
                            env=dict(env, RNAPIPE_PAUSE_AT="fold:0", RNAPIPE_PAUSE_FILE=str(pause)),
                            stdout=subprocess.DEVNULL, stderr=subprocess.DEVNULL, start_new_session=True)
    deadline = time.monotonic() + 300
    while not pause.exists():
        assert proc.poll() is None and time.monotonic() < deadline
        time.sleep(0.02)
    kill_all(proc)
    assert (tmp_path / "job.db.fold.journal").exists() and not (tmp_path / "job.db.fold").exists()
    (tmp_path / "job.db").unlink()
    run = rnapipe(job + ["--maxBPspan", "40", "--noLP"], tmp_path, env)
    assert run.returncode == 0 and "folded" in run.stderr, run.stderr
    assert (tmp_path / "job.db").read_bytes() == direct["rules"]


def test_resources_counts_gpus_only_when_asked(tmp_path, monkeypatch):
    """`rnapipe resources`: the GPU jobs (auto: one per GPU) and each CPU job's threads, the cores less one per
    GPU job shared by the CPU jobs; CuPy is asked for the GPU count only for auto or --count-gpus."""
    import json

    from rnapipe import config
    from rnapipe.gpu.devices import gpu_count
    from rnapipe.pipeline.workflow import resources

    assert config.cpu_threads(16, 2) == 14 and config.cpu_threads(2, 4) == 1
    run = rnapipe(["resources", "--json", "--cores", "8", "--cpu-jobs", "3", "--gpu-jobs", "2"], tmp_path,
                  environment(tmp_path))
    assert run.returncode == 0, run.stderr
    assert json.loads(run.stdout) == {"gpus": None, "gpu_jobs": 2, "cpu_jobs": 3, "cpu_threads": 2, "gpu_threads": 1}
    run = rnapipe(["resources", "--json", "--cores", "8"], tmp_path, environment(tmp_path))
    here = gpu_count()
    assert json.loads(run.stdout) == {"gpus": here, "gpu_jobs": here, "cpu_jobs": 1,
                                      "cpu_threads": max(1, 8 - here), "gpu_threads": 1}
    run = rnapipe(["resources", "--cores", "8", "--gpu-jobs", "0", "--cpu-jobs", "0"], tmp_path,
                  environment(tmp_path))
    assert run.returncode == 0 and "CPU threads per CPU job: 8" in run.stdout

    def no_count():
        raise AssertionError("the GPUs were counted")

    monkeypatch.setattr(resources, "gpu_count", no_count)
    assert resources.job_resources(4, 1, 0) == {"gpus": None, "gpu_jobs": 0, "cpu_jobs": 1, "cpu_threads": 4,
                                                "gpu_threads": 1}
    assert resources.job_resources(5, 2, 1)["cpu_threads"] == 2
    # with the partition function every job a like share of the cores (a GPU job's derived values on the host)
    assert [resources.job_resources(c, cpu, gpu, partition=True)[k] for c, cpu, gpu in ((32, 1, 2), (8, 0, 2),
            (2, 2, 2), (9, 3, 0)) for k in ("cpu_threads", "gpu_threads")] == [10, 10, 4, 4, 1, 1, 3, 1]
    monkeypatch.setattr(resources, "gpu_count", lambda: 3)
    assert resources.job_resources(10, 2, "auto") == {"gpus": 3, "gpu_jobs": 3, "cpu_jobs": 2, "cpu_threads": 3,
                                                      "gpu_threads": 1}
    assert resources.job_resources(10, 1, 1, count_gpus=True)["gpus"] == 3


def test_boundary_balances_like_the_papers_rule():
    """Equal shards: the CPU jobs take B = N / (K + 1) of them (Lei et al.), K = t_CPU / t_GPU; and the split
    is the best prefix of the CPU-first order (brute force over every boundary)."""
    from rnapipe.pipeline.balance import cpu_first
    from rnapipe.pipeline.workflow.partition import boundary

    for n, k in ((100, 4.0), (90, 8.0), (33, 1.0)):
        tc, tg = np.full(n, k), np.full(n, 1.0)
        got = int(boundary(tc, tg, 1, 1).sum())
        assert abs(got - n / (k + 1)) <= 1, (n, k, got)
    rng = np.random.default_rng(3)
    for _ in range(200):
        n = int(rng.integers(1, 12))
        tc, tg = rng.uniform(0.1, 5, n), rng.uniform(0.1, 5, n)
        cj, gj = int(rng.integers(1, 4)), int(rng.integers(1, 3))
        mask = boundary(tc, tg, cj, gj)

        def finish(m):
            c = max(tc[m].sum() / cj, tc[m].max(initial=0))
            g = max(tg[~m].sum() / gj, tg[~m].max(initial=0))
            return max(c, g)
        order = cpu_first(tc, tg)
        best = min(finish(np.isin(np.arange(n), order[:b])) for b in range(n + 1))
        assert finish(mask) == pytest.approx(best)


def test_cpu_gets_nothing_unless_it_saves_min_gain_and_long_records_wait_on_one_thread(tmp_path):
    """K = 21 (the H100 on transcripts): the CPU could save 1/22 = 4.5 % < MIN_GAIN, so it gets no shard, as
    --device hybrid decides; with K = 4 it gets about N / 5. A shard whose one record would take longer on one of
    the CPU job's threads than the GPU's whole share stays on the GPU."""
    from rnapipe.pipeline.balance import MIN_GAIN
    from rnapipe.pipeline.workflow import partition as plan
    from rnapipe.pipeline.hybrid.costmodel import Cost
    from rnapipe.pipeline.workflow.prepare import Shard

    n = 100
    assert plan.boundary(np.full(n, 21.0), np.ones(n), 1, 1, MIN_GAIN).sum() == 0
    assert abs(plan.boundary(np.full(n, 21.0), np.ones(n), 1, 1, 0.0).sum() - n / 22) <= 1
    assert abs(plan.boundary(np.full(n, 4.0), np.ones(n), 1, 1, MIN_GAIN).sum() - n / 5) <= 1
    # one shard of one long record that the CPU does relatively best (K = 2), and 40 shards it does worse (K = 10)
    tc, tg = np.array([0.2] + [1.0] * 40), np.array([0.1] + [0.1] * 40)
    assert plan.boundary(tc, tg, 1, 1, MIN_GAIN)[0]                   # by throughput alone: to the CPU
    shards = [Shard(0, 43, 1, 2e3, 4e6, 8e9, 2000, 2000)] + [Shard(k, 26, 100, 1e4, 1e6, 1e8, 100, 100)
                                                             for k in range(1, 41)]
    one = plan.on_one_thread(shards, Cost(2.5e-11, 0, 0), 16, None)         # 0.2 s of throughput for 2,000 nt
    assert one[0] == pytest.approx(16 * 0.2) and one[1] == pytest.approx(16 * 2.5e-5)
    mask = plan.boundary(np.maximum(tc, one), tg, 1, 1, MIN_GAIN)      # on one of 16 threads: 3.2 s
    assert not mask[0] and mask.sum() > 0


def test_cpu_threads_leave_one_core_per_gpu():
    """config.cpu_threads: the cores less one per GPU (--device hybrid's CPU folder, the hybrid profile), shared
    out among the workflow's CPU jobs (floor), never below one thread."""
    from rnapipe import config

    for cores in range(1, 20):
        for gpus in range(0, 5):
            assert config.cpu_threads(cores, gpus) == max(1, cores - gpus)
            for jobs in range(0, 6):
                want = max(1, (cores - gpus) // jobs) if jobs else max(1, cores - gpus)
                assert config.cpu_threads(cores, gpus, jobs) == want


def test_shard_bins_are_length_ranges():
    from rnapipe.pipeline.workflow.prepare import bin_of, bin_range

    lens = np.arange(1, 20001)
    bins = bin_of(lens)
    assert np.all(np.diff(bins) >= 0)
    for b in np.unique(bins).tolist()[:-1]:           # the last range goes on past 20,000
        lo, hi = bin_range(b)
        assert lens[bins == b].min() == lo and lens[bins == b].max() == hi - 1


# -------------------------------------------------------------------------------------------------------------
# the workflow


@needs_snakemake
def test_workflow_folds_example_subset(tmp_path):
    """The default configuration (Zuker, CPU) on 12 records of the bundled example: RNAfold's energies, input
    order, every stage run once, nothing partial left, the pictures made. Without a GPU that is one fold job an
    input: no profile is made (it could not change the plan), and the console says so."""
    example = read_fasta(REPO / "workflow" / "resources" / "example.fa")
    subset = example[:12]
    with open(tmp_path / "few.fa", "w") as handle:
        for name, seq in subset:
            handle.write(f">{name}\n{seq}\n")
    from rnapipe.gpu.devices import gpu_available

    cmd = snakemake_cmd(tmp_path, {"inputs": "[few.fa]", "outdir": "out", "profile": "{lengths: [20, 40]}"})
    run = subprocess.run(cmd, env=environment(tmp_path), capture_output=True, text=True, timeout=600)
    assert run.returncode == 0, run.stdout[-3000:] + run.stderr[-3000:]
    bench = tmp_path / "out" / "benchmarks"
    if not gpu_available():          # jobs.gpu: auto, and no GPU: CPU only, one job, no profile; said once each
        assert run.stderr.count("the workflow runs on the CPU only") == 1
        assert run.stderr.count("one fold job an input: no profile is made") == 1
        assert sorted(p.name for p in bench.iterdir()) == ["fold", "merge", "partition", "prepare", "report"]
        assert sorted(p.name for p in (bench / "fold").iterdir()) == ["few.cpu0.tsv"]
        assert not (tmp_path / "out" / "profile").exists() and not (tmp_path / "cache").exists()
        jobs = [line.split("\t") for line in
                (tmp_path / "out" / "work" / "few" / "plan" / "jobs.tsv").read_text().splitlines()[1:]]
        assert [(j[0], j[3], j[4], j[5]) for j in jobs] == [("cpu0", "12", str(sum(len(s) for _, s in subset)),
                                                             "nan")]          # every record, time not predicted
    else:
        assert sorted(p.name for p in bench.iterdir()) == ["fold", "merge", "partition", "prepare", "profile",
                                                           "report"]
    assert not list((tmp_path / "out").rglob("*.journal")) and not list((tmp_path / "out").rglob("*.part"))
    assert sorted(p.name for p in (tmp_path / "out" / "report").iterdir()) == [
        "energy.svg", "partition.svg", "throughput.svg", "time_vs_length.svg"]

    RNA = pytest.importorskip("RNA")
    tsv = (tmp_path / "out" / "few.zuker.tsv").read_text().splitlines()
    assert tsv[0].split("\t")[:4] == ["id", "length", "score", "structure"]
    rows = [line.split("\t") for line in tsv[1:]]
    assert [r[0] for r in rows] == [name for name, _ in subset]  # input order
    for (name, seq), row in zip(subset, rows):
        assert int(row[1]) == len(seq)
        mfe = round(RNA.fold(seq)[1] * 100)
        assert round(float(row[2]) * 100) == mfe
        pairs_of(row[3])  # balanced
        assert round(RNA.fold_compound(seq).eval_structure(row[3]) * 100) == mfe
    db = (tmp_path / "out" / "few.zuker.db").read_text().splitlines()
    assert db[0::3] == [f">{name}" for name, _ in subset]
    assert db[1::3] == [seq for _, seq in subset]
    assert [line.split(" ")[0] for line in db[2::3]] == [r[3] for r in rows]
    assert (tmp_path / "out" / "few.zuker.db.rejected.tsv").read_text() == "index\tid\tfile\treason\n"


@needs_snakemake
def test_pairing_rules_in_the_config_reach_the_fold_jobs(tmp_path):
    """fold.no_lp, fold.no_closing_gu and fold.max_bp_span reach the fold jobs, CPU and GPU, as RNAfold's flags:
    the outputs are ViennaRNA's with those rules. A GPU job takes them as a CPU job does (jobs.gpu: 1 plans one,
    its command carrying the flags)."""
    RNA = pytest.importorskip("RNA")
    subset = read_fasta(REPO / "workflow" / "resources" / "example.fa")[:10]
    with open(tmp_path / "few.fa", "w") as handle:
        for name, seq in subset:
            handle.write(f">{name}\n{seq}\n")
    fold = "{no_lp: true, no_closing_gu: true, max_bp_span: 50}"
    gpu_dry = subprocess.run(snakemake_cmd(tmp_path, {"inputs": "[few.fa]", "outdir": "out", "fold": fold,
                                                      "jobs": "{gpu: 1}"}, "-n", "-p"),
                             env=environment(tmp_path), capture_output=True, text=True, timeout=600)
    assert gpu_dry.returncode == 0, gpu_dry.stdout[-3000:] + gpu_dry.stderr[-3000:]
    gpu_jobs = [line for line in gpu_dry.stdout.splitlines() if " fold-job " in line and "--device gpu" in line]
    assert gpu_jobs and all(" --noLP --noClosingGU --maxBPspan 50 --device gpu " in line for line in gpu_jobs), \
        gpu_jobs
    assert "the CPU engine alone" not in gpu_dry.stdout + gpu_dry.stderr
    # the README's --config form hands the values over as text ('true', '50'): taken as the schema's types
    dry = subprocess.run([sys.executable, "-m", "snakemake", "-s", str(REPO / "Snakefile"),
                          "--directory", str(tmp_path),
                          "--configfile", str(REPO / "config" / "config.yaml"), "-n", "-p", "--cores", "2",
                          "--config", "inputs=[few.fa]", "fold={no_lp: true, no_gu: false, max_bp_span: 50}",
                          "jobs={gpu: 0}"],
                         env=environment(tmp_path), capture_output=True, text=True, timeout=600)
    assert dry.returncode == 0, dry.stdout[-3000:] + dry.stderr[-3000:]
    jobs = [line for line in dry.stdout.splitlines() if " fold-job " in line]
    assert jobs and all(" --noLP --maxBPspan 50 --device cpu " in line for line in jobs), jobs
    assert "--noGU" not in dry.stdout
    run = subprocess.run(snakemake_cmd(tmp_path, {"inputs": "[few.fa]", "outdir": "out", "fold": fold}),
                         env=environment(tmp_path), capture_output=True, text=True, timeout=600)
    assert run.returncode == 0, run.stdout[-3000:] + run.stderr[-3000:]
    assert "the CPU engine alone" not in run.stderr
    md = RNA.md()
    md.noLP, md.noGUclosure, md.max_bp_span = 1, 1, 50
    db = (tmp_path / "out" / "few.zuker.db").read_text().splitlines()
    assert db[0::3] == [f">{name}" for name, _ in subset]
    for (name, seq), line in zip(subset, db[2::3]):
        structure, mfe = RNA.fold_compound(seq, md).mfe()
        assert line == f"{structure} ({mfe:6.2f})", name


@needs_snakemake
def test_records_without_a_structure_are_skipped_and_listed_as_rnapipe_fold_lists_them(tmp_path):
    """fold.on_invalid skip with enforced constraints: records whose constraint lines leave no structure (found
    only by folding, in any job and shard) and records prepare refuses are left out; the outputs and the
    rejected list are byte for byte one `rnapipe fold -C --enforceConstraint --on-invalid skip` of the input."""
    rng = np.random.default_rng(23)
    lines = []
    for k in range(40):
        n = int(rng.integers(10, 120))
        seq = "".join(rng.choice(list("ACGU"), size=n))
        cons = "." * n
        if k % 7 == 3:                                 # all A: a nucleotide that must pair finds no partner
            seq, cons = "A" * n, "." * (n // 2) + "|" + "." * (n - n // 2 - 1)
        if k in (5, 26):
            seq = seq[:4] + "X" + seq[5:]              # refused by prepare
        lines.append(f">r{k} note {k}\n{seq}\n{cons}\n")
    (tmp_path / "con.fa").write_text("".join(lines))
    config = {"inputs": "[con.fa]", "outdir": "out", "formats": "[db, tsv]", "jobs": "{cpu: 2, gpu: 0}",
              "prepare": "{shard_records: 3}",
              "fold": "{constraint: true, enforce_constraint: true, on_invalid: skip}"}
    env = environment(tmp_path)
    run = subprocess.run(snakemake_cmd(tmp_path, config), env=env, capture_output=True, text=True, timeout=600)
    assert run.returncode == 0, run.stdout[-3000:] + run.stderr[-3000:]
    direct = rnapipe(["fold", "con.fa", "-q", "-C", "--enforceConstraint", "--on-invalid", "skip",
                      "-o", "d.db", "-o", "d.tsv"], tmp_path, env)
    assert direct.returncode == 0, direct.stderr
    rejected = (tmp_path / "d.db.rejected.tsv").read_text()
    assert rejected.count("no structure that can form") == 6 and rejected.count("invalid character") == 2
    assert (tmp_path / "out" / "con.zuker.db.rejected.tsv").read_text() == rejected
    for fmt in ("db", "tsv"):
        assert (tmp_path / "out" / f"con.zuker.{fmt}").read_bytes() == (tmp_path / f"d.{fmt}").read_bytes(), fmt
    lists = list((tmp_path / "out" / "work" / "con" / "fold").glob("*.fold.rejected.tsv"))
    assert len(lists) == 2                             # both fold jobs left records out and listed them


@needs_snakemake
def test_a_failed_jobs_reason_reaches_the_console(tmp_path):
    """A bad record stops the prepare job: Snakemake's console shows rnapipe's one-line reason from the job's
    log (and the log's name), not only 'check log file(s)'."""
    (tmp_path / "bad.fa").write_text(">a\nGGGGAAAACCCC\n>b\nACGXU\n")
    cmd = snakemake_cmd(tmp_path, {"inputs": "[bad.fa]", "outdir": "out"})
    run = subprocess.run(cmd, env=environment(tmp_path), capture_output=True, text=True, timeout=600)
    assert run.returncode != 0
    console = run.stdout + run.stderr
    reason = "rnapipe: error: bad.fa, record 'b', position 4: invalid character 'X'"
    assert (tmp_path / "out" / "logs" / "prepare" / "bad.log").read_text().count(reason) == 1
    lines = [line for line in console.splitlines() if reason in line]
    assert len(lines) == 1 and lines[0].startswith("rnapipe: prepare (sample=bad) failed (log ")
    assert "out/logs/prepare/bad.log" in lines[0]


@needs_snakemake
def test_jobs_take_the_gpu_count_of_the_process_the_user_started(tmp_path):
    """jobs.gpu auto is counted once, by the Snakemake process the user started (which passes it on in
    RNAPIPE_WORKFLOW_GPU_JOBS, and ignores a value found there); a job's process, which evaluates the
    Snakefile again on its own host, plans with the passed count instead of counting its host's GPUs."""
    from rnapipe.gpu.devices import gpu_count

    def lists(*mode):
        cmd = snakemake_cmd(tmp_path, {"inputs": "[few.fa]", "outdir": "out"}, "--summary", *mode)
        run = subprocess.run(cmd, env=environment(tmp_path, RNAPIPE_WORKFLOW_GPU_JOBS="2"), capture_output=True,
                             text=True, timeout=300)
        assert run.returncode == 0, run.stdout[-2000:] + run.stderr[-2000:]
        return sorted({word.rsplit("/", 1)[1] for word in run.stdout.split() if word.endswith(".list")})

    (tmp_path / "few.fa").write_text(">a\nGGGGAAAACCCC\n")
    here = gpu_count()
    assert lists() == ["cpu0.list"] + [f"gpu{j}.list" for j in range(here)]
    assert lists("--mode", "subprocess") == ["cpu0.list", "gpu0.list", "gpu1.list"]


KILL_CONFIG = {"inputs": "[in.fa, other.fa]", "outdir": "out", "formats": "[db, tsv, ct, bpseq]",
               "fold": "{algorithm: nussinov, on_invalid: skip}", "jobs": "{cpu: 3, gpu: 0}",
               "prepare": "{shard_records: 6}", "profile": "{lengths: [20, 40]}"}
KILL_ENV = {"RNAPIPE_CHUNK_RECORDS": "4", "RNAPIPE_BATCH_RECORDS": "1"}


def outputs_of(directory):
    out = {}
    for sample in ("in", "other"):
        for fmt in FORMATS:
            out[f"{sample}.{fmt}"] = (directory / "out" / f"{sample}.nussinov.{fmt}").read_bytes()
        out[f"{sample}.rejected"] = (directory / "out" / f"{sample}.nussinov.db.rejected.tsv").read_bytes()
    return out


@pytest.fixture(scope="module")
def clean_run(tmp_path_factory):
    """An uninterrupted run of KILL_CONFIG, and one direct `rnapipe fold` of each input."""
    tmp = tmp_path_factory.mktemp("clean")
    mixed_input(tmp / "in.fa", 120, seed=11)
    mixed_input(tmp / "other.fa", 60, seed=12, bad=False)
    env = environment(tmp, **KILL_ENV)
    run = subprocess.run(snakemake_cmd(tmp, KILL_CONFIG), env=env, capture_output=True, text=True, timeout=600)
    assert run.returncode == 0, run.stdout[-3000:] + run.stderr[-3000:]
    direct = {}
    for sample in ("in", "other"):
        fold = rnapipe(["fold", f"{sample}.fa", "-q", "--algorithm", "nussinov", "--on-invalid", "skip"]
                       + [x for fmt in FORMATS for x in ("-o", f"direct.{sample}.{fmt}")], tmp, env)
        assert fold.returncode == 0, fold.stderr
        for fmt in FORMATS:
            direct[f"{sample}.{fmt}"] = (tmp / f"direct.{sample}.{fmt}").read_bytes()
    return tmp, outputs_of(tmp), direct


@needs_snakemake
def test_workflow_equals_one_fold_of_each_input(clean_run):
    """Two inputs, three CPU jobs each, many shards, bad records skipped: every format byte for byte one
    `rnapipe fold` of the input; the rejected list as rnapipe fold writes it."""
    tmp, got, direct = clean_run
    for key, data in direct.items():
        assert got[key] == data, key
    assert got["in.rejected"] == (tmp / "direct.in.db.rejected.tsv").read_bytes()
    assert got["other.rejected"] == b"index\tid\tfile\treason\n"
    jobs = sorted(p.name for p in (tmp / "out" / "work" / "in" / "fold").glob("*.db"))
    assert jobs == ["cpu0.db", "cpu1.db", "cpu2.db"]
    assert not (tmp / "out" / "profile").exists()        # CPU jobs alone share by predicted work: no profile
    for sample in ("in", "other"):
        rows = (tmp / "out" / "work" / sample / "plan" / "jobs.tsv").read_text().splitlines()[1:]
        assert len(rows) == 3 and all(int(row.split("\t")[2]) > 0 for row in rows)     # every job has shards


def start_paused(tmp, point):
    """Start the workflow with rnapipe told to stop at ``point``; return the process once stopped there."""
    pause = tmp / "paused"
    pause.unlink(missing_ok=True)
    env = environment(tmp, RNAPIPE_PAUSE_AT=point, RNAPIPE_PAUSE_FILE=str(pause), **KILL_ENV)
    proc = subprocess.Popen(snakemake_cmd(tmp, KILL_CONFIG), env=env, stdout=subprocess.DEVNULL,
                            stderr=subprocess.DEVNULL, start_new_session=True)
    deadline = time.monotonic() + 300
    while not pause.exists():
        assert proc.poll() is None, f"the workflow ended before {point}"
        assert time.monotonic() < deadline, f"never reached {point}"
        time.sleep(0.1)
    time.sleep(0.5)                       # what was done before the point is written
    return proc


def kill_all(proc):
    os.killpg(proc.pid, signal.SIGKILL)   # Snakemake and every job it started (one process group)
    proc.wait()


@needs_snakemake
@pytest.mark.parametrize("point", ["prepare:shard", "fold:2", "merge:block", "first fold complete"])
def test_killed_workflow_resumes_byte_identical(tmp_path, clean_run, point):
    """SIGKILL to Snakemake and all its jobs at a point of the run; the same command (no `snakemake --unlock`)
    finishes with outputs byte for byte those of the uninterrupted run; a fold job cut off keeps its chunks."""
    _, want, _ = clean_run
    mixed_input(tmp_path / "in.fa", 120, seed=11)
    mixed_input(tmp_path / "other.fa", 60, seed=12, bad=False)
    if point == "first fold complete":       # as soon as rnapipe fold has renamed its first output
        env = environment(tmp_path, **KILL_ENV)
        proc = subprocess.Popen(snakemake_cmd(tmp_path, KILL_CONFIG), env=env, stdout=subprocess.DEVNULL,
                                stderr=subprocess.DEVNULL, start_new_session=True)
        deadline = time.monotonic() + 300
        while not list((tmp_path / "out" / "work").glob("*/fold/cpu*.db.fold")):
            assert proc.poll() is None and time.monotonic() < deadline
            time.sleep(0.005)
        kill_all(proc)
    else:
        kill_all(start_paused(tmp_path, point))
    assert not (tmp_path / "out" / "in.nussinov.db").exists()
    env = environment(tmp_path, **KILL_ENV)
    holder = tmp_path / ".snakemake" / "rnapipe.lock-holder.json"
    killed = json.loads(holder.read_text())
    assert list((tmp_path / ".snakemake" / "locks").glob("*.lock")), "the killed run left no lock"
    if point == "fold:2":
        # a lock whose holder still runs (this test's process), or one taken on another host, is not removed
        for other in ({"pid": os.getpid(), "started": psutil.Process().create_time()}, {"host": "elsewhere"}):
            holder.write_text(json.dumps({**killed, **other}))
            refused = subprocess.run(snakemake_cmd(tmp_path, KILL_CONFIG), env=env, capture_output=True,
                                     text=True, timeout=600)
            assert refused.returncode != 0 and "cannot be locked" in refused.stdout + refused.stderr, other
        holder.write_text(json.dumps(killed))
    # the same command again: the lock the killed run left is removed, with a line saying so
    again = subprocess.run(snakemake_cmd(tmp_path, KILL_CONFIG), env=env, capture_output=True, text=True,
                           timeout=600)
    assert again.returncode == 0, again.stdout[-3000:] + again.stderr[-3000:]
    assert f"removed the lock of a run that was killed (process {killed['pid']} " in again.stderr
    assert outputs_of(tmp_path) == want
    assert not list((tmp_path / "out").rglob("*.journal")) and not list((tmp_path / "out").rglob("*.part"))
    if point == "fold:2":
        logs = [p.read_text() for p in (tmp_path / "out" / "logs" / "fold").iterdir()]
        resumed = [log for log in logs if "resumed an interrupted run: " in log]
        assert resumed, "no fold job went on from its journal"
        assert all(int(log.split("resumed an interrupted run: ")[1].split()[0]) >= 1 for log in resumed)


@needs_snakemake
def test_config_numbers_given_on_the_command_line_and_unknown_keys(tmp_path):
    """`--config 'jobs={gpu: 0, cpu: 2}'` (the README's form: nested values arrive as text) is taken as numbers;
    a key the schema does not know (`input=` for `inputs=`) is refused, not ignored."""
    fasta = tmp_path / "mine.fa"
    fasta.write_text(">a\nGGGGAAAACCCC\n")
    env = environment(tmp_path)
    base = [sys.executable, "-m", "snakemake", "-s", str(REPO / "Snakefile"), "--directory", str(tmp_path),
            "--configfile", str(REPO / "config" / "config.yaml"), "-n", "--cores", "2"]
    ok = subprocess.run(base + ["--config", f"inputs=[{fasta}]", "jobs={gpu: 0, cpu: 2, cpu_threads: 1}",
                                "fold={mem_mb: 1000}"], env=env, capture_output=True, text=True, timeout=300)
    assert ok.returncode == 0, ok.stderr            # as text, '0' and '2' fail the schema's integers
    typo = subprocess.run(base + ["--config", f"input=[{fasta}]"], env=env, capture_output=True, text=True,
                          timeout=300)
    assert typo.returncode != 0
    assert "'input' was unexpected" in typo.stdout + typo.stderr


@needs_snakemake
def test_constraint_lines_plan_gpu_fold_jobs(tmp_path):
    """fold.constraint (with fold.enforce_constraint) no longer keeps the workflow off the GPU: jobs.gpu: 1 plans GPU
    fold jobs whose command carries -C and --enforceConstraint, as the CPU jobs' does (the GPU engine folds them as
    the CPU engine does: tests/test_zuker_gpu_constraints.py), and nothing is refused."""
    subset = read_fasta(REPO / "workflow" / "resources" / "example.fa")[:6]
    with open(tmp_path / "con.fa", "w") as handle:
        for name, seq in subset:
            handle.write(f">{name}\n{seq}\n{'.' * len(seq)}\n")
    fold = "{constraint: true, enforce_constraint: true}"
    dry = subprocess.run(snakemake_cmd(tmp_path, {"inputs": "[con.fa]", "outdir": "out", "fold": fold,
                                                  "jobs": "{cpu: 1, gpu: 1}"}, "-n", "-p"),
                         env=environment(tmp_path), capture_output=True, text=True, timeout=600)
    assert dry.returncode == 0, dry.stdout[-3000:] + dry.stderr[-3000:]
    jobs = [line for line in dry.stdout.splitlines() if " fold-job " in line]
    gpu_jobs = [line for line in jobs if "--device gpu" in line]
    assert gpu_jobs and all(" -C --enforceConstraint --device gpu " in line for line in gpu_jobs), gpu_jobs
    assert all(" -C --enforceConstraint --device " in line for line in jobs), jobs
    assert "CPU engine" not in dry.stdout + dry.stderr
