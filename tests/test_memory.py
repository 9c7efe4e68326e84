"""Memory limits other than the free RAM: ulimit -v / -d, cgroups (v1 and v2) and a SLURM job's memory are read
into the memory budget, a sequence too long for them is refused with the one exit-4 line, and an engine that
runs out of memory all the same ends in that line (the CLI) or in SequenceTooLongError (the API), not in a bug
report."""

from __future__ import annotations

import os
import subprocess
import sys
from pathlib import Path

import psutil
import pytest

import rnapipe
from rnapipe import memory
from rnapipe.errors import EXIT_MEMORY, SequenceTooLongError

from test_cli import one_error_line

ROOT = Path(__file__).resolve().parents[1]
GiB = 1 << 30
resource = pytest.importorskip("resource")


# ---------------------------------------------------------------------------------------------------------
# ulimit -v


def _run_limited(args, cwd: Path, address_space: int) -> subprocess.CompletedProcess:
    """``python -m rnapipe ARGS`` with its address space (RLIMIT_AS, ``ulimit -v``) limited."""
    def limit():
        resource.setrlimit(resource.RLIMIT_AS, (address_space, resource.getrlimit(resource.RLIMIT_AS)[1]))

    paths = [str(ROOT)] + ([os.environ["PYTHONPATH"]] if os.environ.get("PYTHONPATH") else [])
    env = dict(os.environ, PYTHONPATH=os.pathsep.join(paths))
    env.pop("RNAPIPE_DEBUG", None)
    return subprocess.run([sys.executable, "-m", "rnapipe", *args], cwd=cwd, env=env, preexec_fn=limit,
                          capture_output=True, text=True, timeout=300)


LIMIT = 2 * GiB
LONG = 15_000               # a Zuker fold of 15,000 nt takes about 13·n² = 2.7 GiB: more than LIMIT, less than most hosts


def _hard_limit_allows(size: int) -> bool:
    hard = resource.getrlimit(resource.RLIMIT_AS)[1]
    return hard == resource.RLIM_INFINITY or hard >= size


@pytest.mark.skipif(not _hard_limit_allows(LIMIT), reason="the hard RLIMIT_AS is below the test's limit")
def test_a_sequence_too_long_for_ulimit_v_is_refused_with_exit_4(tmp_path):
    from rnapipe.cpu import zuker

    if min(memory.headrooms().values()) * 0.8 < zuker.bytes_needed(LONG) * 1.2:
        pytest.skip("the host's memory (or another limit) alone refuses the sequence: ulimit -v would not be "
                    "what refuses it")
    (tmp_path / "in.fa").write_text(">short\nGGGGAAAACCCC\n>long\n" + "GCAU" * (LONG // 4) + "\n")
    proc = _run_limited(["fold", "in.fa", "-o", "out.db", "--threads", "1"], tmp_path, LIMIT)
    assert proc.returncode == EXIT_MEMORY, proc.stderr
    line = one_error_line(proc)
    assert line.startswith("rnapipe: error: in.fa, record 'long': sequence of 15000 nt needs about 2.7 GiB")
    assert "ulimit -v (RLIMIT_AS)" in line
    assert not (tmp_path / "out.db").exists()


@pytest.mark.skipif(not _hard_limit_allows(LIMIT), reason="the hard RLIMIT_AS is below the test's limit")
def test_a_sequence_that_fits_under_ulimit_v_is_folded(tmp_path):
    """The limit refuses only what does not fit under it."""
    (tmp_path / "in.fa").write_text(">short\nGGGGAAAACCCC\n>mid\n" + "GCAU" * 100 + "\n")
    proc = _run_limited(["fold", "in.fa", "-o", "out.db", "--threads", "1", "-q"], tmp_path, LIMIT)
    assert proc.returncode == 0, proc.stderr
    assert (tmp_path / "out.db").read_text().count(">") == 2


def test_an_unlimited_address_space_is_not_a_limit(monkeypatch):
    monkeypatch.setattr(resource, "getrlimit", lambda which: (resource.RLIM_INFINITY, resource.RLIM_INFINITY))
    room = memory.headrooms(environ={}, cgroup_root="/nonexistent", proc_cgroup="/nonexistent")
    assert list(room) == [memory.AVAILABLE]
    budget, limit = memory.budget_and_limit()
    assert limit == memory.AVAILABLE or limit in memory.LIMITS.values()


def test_rlimits_count_what_the_process_holds(monkeypatch):
    """ulimit -v leaves the limit less the address space in use; ulimit -d the limit less the data segment."""
    limits = {resource.RLIMIT_AS: (40 * GiB, resource.RLIM_INFINITY),
              resource.RLIMIT_DATA: (30 * GiB, resource.RLIM_INFINITY)}
    monkeypatch.setattr(resource, "getrlimit", lambda which: limits.get(which, (resource.RLIM_INFINITY,) * 2))
    used = psutil.Process().memory_info()
    room = memory.headrooms(environ={}, cgroup_root="/nonexistent", proc_cgroup="/nonexistent")
    # the process grows a little between the two readings
    assert 0 <= 40 * GiB - used.vms - room[memory.LIMITS["as"]] < 64 << 20
    assert 0 <= 30 * GiB - used.data - room[memory.LIMITS["data"]] < 64 << 20


# ---------------------------------------------------------------------------------------------------------
# cgroups


def _cgroup_files(directory: Path, **files) -> None:
    directory.mkdir(parents=True, exist_ok=True)
    for name, text in files.items():
        (directory / name.replace("_", ".", 1)).write_text(text)


def test_cgroup_v2_limit_less_usage_with_droppable_cache(tmp_path):
    root = tmp_path / "cg"
    _cgroup_files(root / "job" / "step", memory_max="max\n", memory_current=f"{GiB}\n",
                  memory_stat="anon 1\n")
    _cgroup_files(root / "job", memory_max=f"{8 * GiB}\n", memory_current=f"{5 * GiB}\n",
                  memory_stat=f"anon {4 * GiB}\nfile {GiB}\ninactive_file {GiB}\nactive_file 0\n")
    (tmp_path / "cgroup").write_text("0::/job/step\n")
    assert memory.cgroup_headroom(str(root), str(tmp_path / "cgroup")) == 8 * GiB - 4 * GiB
    # a tighter limit further down wins
    _cgroup_files(root / "job" / "step", memory_max=f"{GiB + GiB // 2}\n")
    assert memory.cgroup_headroom(str(root), str(tmp_path / "cgroup")) == GiB // 2


def test_cgroup_v1_and_no_limit(tmp_path):
    root = tmp_path / "cg"
    unlimited = "9223372036854771712\n"
    _cgroup_files(root / "memory" / "slurm" / "job_7", memory_limit_in_bytes=f"{16 * GiB}\n",
                  memory_usage_in_bytes=f"{10 * GiB}\n", memory_stat=f"cache 9\ntotal_inactive_file {2 * GiB}\n")
    _cgroup_files(root / "memory" / "slurm", memory_limit_in_bytes=unlimited, memory_usage_in_bytes="1\n")
    (tmp_path / "cgroup").write_text("12:pids:/slurm/job_7\n4:memory:/slurm/job_7\n1:name=systemd:/x\n")
    assert memory.cgroup_headroom(str(root), str(tmp_path / "cgroup")) == 16 * GiB - 8 * GiB
    _cgroup_files(root / "memory" / "slurm" / "job_7", memory_limit_in_bytes=unlimited)
    assert memory.cgroup_headroom(str(root), str(tmp_path / "cgroup")) is None


def test_cgroup_seen_from_inside_a_container(tmp_path):
    """A container that sees its own cgroup at the root of the mount: the path the process names is not
    there, the root's files are its cgroup's."""
    root = tmp_path / "cg"
    _cgroup_files(root, memory_max=f"{4 * GiB}\n", memory_current=f"{GiB}\n")
    (tmp_path / "cgroup").write_text("0::/docker/0123abcd\n")
    assert memory.cgroup_headroom(str(root), str(tmp_path / "cgroup")) == 3 * GiB


def test_no_cgroup_to_read(tmp_path):
    assert memory.cgroup_headroom(str(tmp_path), str(tmp_path / "missing")) is None
    (tmp_path / "cgroup").write_text("0::/\n")
    assert memory.cgroup_headroom(str(tmp_path), str(tmp_path / "cgroup")) is None     # no memory.max file


def test_the_cgroup_limit_goes_into_the_budget(tmp_path, monkeypatch):
    root = tmp_path / "cg"
    _cgroup_files(root, memory_max=f"{GiB}\n", memory_current=f"{GiB // 4}\n")
    (tmp_path / "cgroup").write_text("0::/\n")
    monkeypatch.setattr(memory, "CGROUP_ROOT", str(root))
    monkeypatch.setattr(memory, "PROC_CGROUP", str(tmp_path / "cgroup"))
    budget, limit = memory.budget_and_limit()
    assert limit == memory.LIMITS["cgroup"]
    assert budget == int(3 * GiB // 4 * rnapipe.config.MEMORY_FRACTION)


# ---------------------------------------------------------------------------------------------------------
# SLURM


@pytest.mark.parametrize("environ, expected", [
    ({}, None),
    ({"SLURM_JOB_ID": "7"}, None),
    ({"SLURM_MEM_PER_NODE": "4096"}, 4 * GiB),
    ({"SLURM_MEM_PER_NODE": "0"}, None),                    # --mem=0: all of the node's memory
    ({"SLURM_MEM_PER_NODE": "2G"}, 2 * GiB),
    ({"SLURM_MEM_PER_CPU": "1000", "SLURM_CPUS_ON_NODE": "3"}, 3000 << 20),
    ({"SLURM_MEM_PER_NODE": "512", "SLURM_MEM_PER_CPU": "1000", "SLURM_CPUS_ON_NODE": "3"}, 512 << 20),
    ({"SLURM_MEM_PER_GPU": "8192", "SLURM_GPUS_ON_NODE": "2"}, 16 * GiB),
    ({"SLURM_MEM_PER_NODE": "lots"}, None),
])
def test_slurm_allocation(environ, expected):
    assert memory.slurm_allocation(environ) == expected


def test_slurm_memory_per_cpu_without_a_cpu_count_uses_the_cpus_of_the_process():
    cpus = len(os.sched_getaffinity(0)) if hasattr(os, "sched_getaffinity") else os.cpu_count()
    assert memory.slurm_allocation({"SLURM_MEM_PER_CPU": "100"}) == cpus * (100 << 20)


def test_the_slurm_allocation_less_what_the_process_holds():
    room = memory.headrooms(environ={"SLURM_MEM_PER_NODE": "65536"}, cgroup_root="/nonexistent",
                            proc_cgroup="/nonexistent")
    rss = psutil.Process().memory_info().rss
    assert 0 <= 64 * GiB - rss - room[memory.LIMITS["slurm"]] < 64 << 20


def test_headrooms_are_cheap():
    """Read once per engine call: well under a millisecond."""
    import timeit

    seconds = min(timeit.repeat(memory.memory_budget, number=20, repeat=3)) / 20
    assert seconds < 2e-3


# ---------------------------------------------------------------------------------------------------------
# an engine that runs out of memory all the same


def _failing_on(record: str, monkeypatch):
    """Folder.fold_packed raises MemoryError for the batch that holds ``record``, as numpy does."""
    from rnapipe.pipeline.folding.folder import Folder

    real = Folder.fold_packed

    def fold_packed(self, parts):
        if any(record in p.ids for p in parts):
            raise MemoryError("Unable to allocate 4.49 GiB for an array with shape (1204400444,) and data type "
                              "int32")
        return real(self, parts)

    monkeypatch.setattr(Folder, "fold_packed", fold_packed)


def test_an_engine_memory_error_is_exit_4_naming_the_record_and_its_file(tmp_path, monkeypatch, capsys):
    from rnapipe.cli.main import main

    _failing_on("long", monkeypatch)
    (tmp_path / "a.fa").write_text(">a1\nGGGGAAAACCCC\n>a2\nGGGAAACCC\n")
    (tmp_path / "b.fa").write_text(">b1\nGGGGAAAACCCC\n>long\n" + "GCAU" * 30 + "\n>b3\nGGGAAACCC\n")
    code = main(["fold", str(tmp_path / "a.fa"), str(tmp_path / "b.fa"), "-o", str(tmp_path / "out.db"),
                 "--threads", "1", "-q"])
    err = capsys.readouterr().err.splitlines()
    assert code == EXIT_MEMORY, err
    assert len(err) == 1 and "internal error" not in err[0], err
    assert err[0].startswith(f"rnapipe: error: {tmp_path / 'b.fa'}, record 'long': ran out of memory folding its "
                             "120 nt"), err
    assert "Unable to allocate 4.49 GiB" in err[0]
    assert not (tmp_path / "out.db").exists()


def test_an_engine_memory_error_is_sequence_too_long_in_the_api(monkeypatch):
    _failing_on("long", monkeypatch)
    with pytest.raises(SequenceTooLongError) as caught:
        rnapipe.fold([("a", "GGGGAAAACCCC"), ("long", "GCAU" * 30), ("c", "GGGAAACCC")], threads=1)
    assert caught.value.record == "long"
    assert "ran out of memory folding its 120 nt" in str(caught.value)
    assert isinstance(caught.value, MemoryError)            # what callers that catch MemoryError still catch
