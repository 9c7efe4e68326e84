"""`rnapipe fold` streaming: several outputs from one fold, compressed outputs, and runs killed (SIGKILL to
the process group) at chosen points and run again, ending byte-identical to an uninterrupted run.

The reference outputs come from rnapipe.fold (list in, list out) and the writers of rnapipe.io.writers, the
path the other tests check against naive folds and RNAfold.
"""

from __future__ import annotations

import contextlib
import gzip
import json
import os
import random
import re
import signal
import subprocess
import sys
import time
from pathlib import Path

import pytest

import rnapipe
from rnapipe.io import formats, read_records, writers
from db_headers import with_header_lines
from test_cli import ROOT, one_error_line

CHUNK = 4                                    # records per chunk in these tests (RNAPIPE_CHUNK_RECORDS)
FORMATS = ["db", "tsv", "ct", "bpseq"]


def env(**extra) -> dict:
    e = dict(os.environ)
    e["PYTHONPATH"] = os.pathsep.join([str(ROOT)] + ([e["PYTHONPATH"]] if e.get("PYTHONPATH") else []))
    e.pop("RNAPIPE_DEBUG", None)
    e["RNAPIPE_CHUNK_RECORDS"] = str(CHUNK)
    e["RNAPIPE_BATCH_RECORDS"] = str(CHUNK)     # one chunk per engine call: the chunks before a kill are done
    e.update({k: str(v) for k, v in extra.items()})
    return e


def cli(args, cwd, **extra) -> subprocess.CompletedProcess:
    return subprocess.run([sys.executable, "-m", "rnapipe", *map(str, args)], cwd=cwd, env=env(**extra),
                          capture_output=True, text=True, timeout=300)


def make_input(path: Path, count: int = 38, seed: int = 5, bad: int | None = 9) -> None:
    rng = random.Random(seed)
    lines = []
    for k in range(count):
        seq = "".join(rng.choice("ACGU") for _ in range(rng.randint(8, 70)))
        if k == bad:
            seq = seq[:3] + "X" + seq[3:]
        lines.append(f">r{k} some description\n{seq[:30]}\n{seq[30:]}\n")
    path.write_text("".join(lines))


def expected(path: Path, fmt: str, algorithm: str, on_invalid: str = "skip") -> bytes:
    """The reference text: rnapipe.fold on read_records, written by rnapipe.io.writers."""
    results = rnapipe.fold(list(read_records([path], on_invalid=on_invalid)), algorithm=algorithm, threads=1)
    out = path.parent / f".expected.{fmt}"
    writers.write_output(results, out, fmt)
    # db prints each record's whole header line, as RNAfold does; the API's results carry the id only
    return with_header_lines(out.read_bytes(), [path]) if fmt == "db" else out.read_bytes()


def read_output(path: Path) -> bytes:
    data = path.read_bytes()
    return gzip.decompress(data) if path.suffix == ".gz" else data


OUTPUTS = ["out.db", "out.tsv", "out.ct.gz", "out.bpseq"]
FOLD = ["fold", "in.fa", "--algorithm", "nussinov", "--threads", "1", "--on-invalid", "skip", "-q"] + \
       [x for o in OUTPUTS for x in ("-o", o)]


@pytest.fixture(scope="module")
def workdir(tmp_path_factory):
    d = tmp_path_factory.mktemp("resume")
    make_input(d / "in.fa")
    return d


@pytest.fixture(scope="module")
def clean_run(workdir):
    """An uninterrupted run: its outputs, checked against the reference writers."""
    proc = cli(FOLD, workdir)
    assert proc.returncode == 0, proc.stderr
    outputs = {name: (workdir / name).read_bytes() for name in OUTPUTS + ["out.db.rejected.tsv"]}
    for name in OUTPUTS:
        fmt = name.split(".")[1]
        assert read_output(workdir / name) == expected(workdir / "in.fa", fmt, "nussinov"), name
    rows = (workdir / "out.db.rejected.tsv").read_text().splitlines()
    assert rows[0].split("\t") == list(formats.REJECTED_COLUMNS) and rows[1].split("\t")[:2] == ["9", "r9"]
    assert sorted(p.name for p in workdir.iterdir()) == sorted(["in.fa"] + list(outputs) + [
        p.name for p in workdir.iterdir() if p.name.startswith(".expected")])
    return outputs


def chunks_in(path: Path) -> int:
    """Finished chunks in a journal (its last line, once every chunk is done, repeats the last one)."""
    lines = [json.loads(x) for x in path.read_text().splitlines() if x.strip()]
    return sum(1 for x in lines if "chunk" in x and not x.get("complete"))


@contextlib.contextmanager
def held(args, workdir: Path, point: str):
    """A run of ``rnapipe`` with ``args`` held at ``point`` while the block runs, then killed (its process
    group, SIGKILL)."""
    flag = workdir / "paused"
    flag.unlink(missing_ok=True)
    proc = subprocess.Popen([sys.executable, "-m", "rnapipe", *args], cwd=workdir,
                            env=env(RNAPIPE_PAUSE_AT=point, RNAPIPE_PAUSE_FILE=flag),
                            stdout=subprocess.DEVNULL, stderr=subprocess.PIPE, start_new_session=True)
    try:
        deadline = time.monotonic() + 120
        while not flag.exists():
            assert proc.poll() is None, f"the run ended before {point}: {proc.stderr.read().decode()}"
            assert time.monotonic() < deadline, f"the run never reached {point}"
            time.sleep(0.02)
        yield proc
    finally:
        with contextlib.suppress(ProcessLookupError):         # a test may have ended it already
            os.killpg(proc.pid, signal.SIGKILL)
        proc.wait()


def killed_at(point: str, workdir: Path, args=FOLD) -> None:
    """Start the run, wait until it reaches ``point`` and SIGKILL its process group."""
    with held(args, workdir, point):
        pass
    (workdir / "paused").unlink()


def resumed(proc) -> tuple[int, int]:
    """(chunks kept, chunks folded) from the rerun's line; (0, all) when it had nothing to keep (no line)."""
    match = re.search(r"resumed an interrupted run: (\d+) chunk\(s\) were done already, (\d+) folded now",
                      proc.stderr)
    if match is None:
        assert "resumed" not in proc.stderr, proc.stderr
        return 0, total_chunks()
    return int(match.group(1)), int(match.group(2))


def total_chunks() -> int:
    return -(-38 // CHUNK)


@pytest.mark.parametrize("point, done_at_kill", [("written:0", 1), ("written:4", 5), ("fold:9", None)])
def test_killed_while_folding_resumes_byte_identical(workdir, clean_run, point, done_at_kill):
    for name in clean_run:
        (workdir / name).unlink()
    killed_at(point, workdir)
    assert not any((workdir / name).exists() for name in clean_run)     # nothing under an output name
    journal = workdir / "out.db.journal"
    done = chunks_in(journal)
    if done_at_kill is not None:
        assert done == done_at_kill
    else:                                    # killed while the last chunk was in flight: it is not journaled
        assert done < total_chunks()
    proc = cli(FOLD, workdir)
    assert proc.returncode == 0, proc.stderr
    assert resumed(proc) == (done, total_chunks() - done)
    for name, data in clean_run.items():
        assert (workdir / name).read_bytes() == data, name
    assert not journal.exists() and not list(workdir.glob("*.part"))


def test_a_run_is_journaled_in_units_of_seconds_not_records(tmp_path):
    """Without the tests' small record limit, 1,200 records of 100-200 nt (Zuker, one thread) are far below the
    65,536 records of a chunk, yet the run journals them in units of a few seconds of predicted work: killed
    after the first unit was written, the rerun keeps it and folds only the rest."""
    rng = random.Random(11)
    count = 1200
    (tmp_path / "in.fa").write_text("".join(f">r{k}\n" + "".join(rng.choice("ACGU") for _ in range(rng.randint(100, 200)))
                                            + "\n" for k in range(count)))
    args = ["fold", "in.fa", "--threads", "1", "-q", "-o", "out.db"]
    plain = dict(RNAPIPE_CHUNK_RECORDS="", RNAPIPE_BATCH_RECORDS="")
    flag = tmp_path / "paused"
    proc = subprocess.Popen([sys.executable, "-m", "rnapipe", *args], cwd=tmp_path,
                            env=env(RNAPIPE_PAUSE_AT="written:0", RNAPIPE_PAUSE_FILE=flag, **plain),
                            stdout=subprocess.DEVNULL, stderr=subprocess.PIPE, start_new_session=True)
    try:
        deadline = time.monotonic() + 120
        while not flag.exists():
            assert proc.poll() is None, proc.stderr.read().decode()
            assert time.monotonic() < deadline
            time.sleep(0.02)
    finally:
        os.killpg(proc.pid, signal.SIGKILL)
        proc.wait()
    lines = [json.loads(x) for x in (tmp_path / "out.db.journal").read_text().splitlines()]
    first = [x for x in lines if "chunk" in x]
    assert len(first) == 1 and 0 < first[0]["folded"] < count
    again = cli(args, tmp_path, **plain)
    assert again.returncode == 0, again.stderr
    kept, folded = resumed(again)
    assert kept == 1 and folded >= 1
    assert (tmp_path / "out.db").read_bytes() == expected(tmp_path / "in.fa", "db", "zuker")


@pytest.mark.parametrize("signum, code", [(signal.SIGTERM, 143), (signal.SIGHUP, 129)])
def test_sigterm_and_sighup_stop_as_ctrl_c_does_and_the_rerun_goes_on(workdir, clean_run, signum, code):
    """A cluster's time limit sends SIGTERM (a closed terminal SIGHUP): the run stops within seconds, says how to
    go on, exits 128 + the signal, and the rerun keeps the chunks that were finished."""
    for name in clean_run:
        (workdir / name).unlink()
    with held(FOLD, workdir, "fold:5") as proc:
        proc.send_signal(signum)
        start = time.monotonic()
        proc.wait(timeout=60)
        waited = time.monotonic() - start
        err = proc.stderr.read().decode()
    assert proc.returncode == code, err
    assert waited < 5
    assert err.splitlines()[-1] == f"rnapipe: error: stopped by {signal.Signals(signum).name}"
    assert "run the same command again to go on" in err and "Traceback" not in err
    assert not any((workdir / name).exists() for name in clean_run)
    done = chunks_in(workdir / "out.db.journal")
    assert done >= 1
    proc = cli(FOLD, workdir)
    assert proc.returncode == 0, proc.stderr
    assert resumed(proc) == (done, total_chunks() - done)
    for name, data in clean_run.items():
        assert (workdir / name).read_bytes() == data, name


@pytest.mark.parametrize("algorithm, spelled", [("nussinov", ["--min-loop", "1"]),
                                               ("zuker", ["--temperature", "37", "--dangles", "2"])])
def test_a_rerun_that_spells_out_the_defaults_resumes(tmp_path, algorithm, spelled):
    make_input(tmp_path / "in.fa")
    args = ["fold", "in.fa", "--algorithm", algorithm, "--threads", "1", "--on-invalid", "skip", "-q", "-o", "out.db"]
    killed_at("written:2", tmp_path, args)
    done = chunks_in(tmp_path / "out.db.journal")
    assert done == 3
    proc = cli(args + spelled, tmp_path)
    assert proc.returncode == 0, proc.stderr
    assert resumed(proc) == (done, total_chunks() - done)
    assert (tmp_path / "out.db").read_bytes() == expected(tmp_path / "in.fa", "db", algorithm)


def test_pairing_rules_are_part_of_the_run(tmp_path):
    """A run with --noLP --maxBPspan 40 killed: a rerun without them, or with another span, is another run
    (refused, the journal kept); the same rules resume it, and the output is rnapipe.fold's with them (which
    test_zuker_options checks against ViennaRNA)."""
    make_input(tmp_path / "in.fa")
    args = ["fold", "in.fa", "--threads", "1", "--on-invalid", "skip", "-q", "-o", "out.db"]
    rules = ["--noLP", "--maxBPspan", "40"]
    killed_at("written:2", tmp_path, args + rules)
    done = chunks_in(tmp_path / "out.db.journal")
    for other in ([], ["--noLP"], ["--noLP", "--maxBPspan", "41"], rules + ["--noGU"]):
        proc = cli(args + other, tmp_path)
        assert proc.returncode == 2 and "other options" in one_error_line(proc), (other, proc.stderr)
        assert chunks_in(tmp_path / "out.db.journal") == done
    proc = cli(args + ["--maxBPspan=40", "--noLP"], tmp_path)
    assert proc.returncode == 0, proc.stderr
    assert resumed(proc) == (done, total_chunks() - done)
    results = rnapipe.fold(list(read_records([tmp_path / "in.fa"], on_invalid="skip")), threads=1, no_lp=True,
                           max_bp_span=40)
    writers.write_output(results, tmp_path / "expected.db", "db")
    expected_db = with_header_lines((tmp_path / "expected.db").read_bytes(), [tmp_path / "in.fa"])
    assert (tmp_path / "out.db").read_bytes() == expected_db
    assert expected_db != expected(tmp_path / "in.fa", "db", "zuker")        # the rules changed something


def test_a_finished_run_whose_output_was_removed_folds_again(workdir, clean_run):
    """Killed after the first rename, then that output removed (as a workflow manager removes the outputs of
    a job it saw fail): the journal's run has nothing left to finish, so the rerun folds everything."""
    for name in clean_run:
        (workdir / name).unlink()
    killed_at("rename:1", workdir)
    (workdir / OUTPUTS[0]).unlink()
    proc = cli([x for x in FOLD if x != "-q"], workdir)
    assert proc.returncode == 0, proc.stderr
    assert "folding everything again" in proc.stderr
    for name, data in clean_run.items():
        assert (workdir / name).read_bytes() == data, name
    assert not (workdir / "out.db.journal").exists() and not list(workdir.glob("*.part"))


@pytest.mark.parametrize("point", ["rename:1", "rename:3"])
def test_killed_during_the_final_rename_resumes_without_folding(workdir, clean_run, point):
    for name in clean_run:
        (workdir / name).unlink()
    killed_at(point, workdir)
    renamed = int(point.split(":")[1])
    assert [(workdir / n).exists() for n in OUTPUTS] == [k < renamed for k in range(len(OUTPUTS))]
    proc = cli(FOLD, workdir)
    assert proc.returncode == 0, proc.stderr
    assert not (workdir / "out.db.journal").exists()
    for name, data in clean_run.items():
        assert (workdir / name).read_bytes() == data, name


def test_killed_at_random_moments(tmp_path):
    make_input(tmp_path / "in.fa", count=3000, seed=8, bad=None)
    args = ["fold", "in.fa", "--algorithm", "nussinov", "--threads", "2", "-q", "-o", "out.db", "-o", "out.tsv.gz"]
    ref = cli(args + ["--restart"], tmp_path, RNAPIPE_CHUNK_RECORDS=50)
    assert ref.returncode == 0, ref.stderr
    want = {n: (tmp_path / n).read_bytes() for n in ("out.db", "out.tsv.gz")}
    rng = random.Random(1)
    for _ in range(3):
        for n in want:
            (tmp_path / n).unlink()
        proc = subprocess.Popen([sys.executable, "-m", "rnapipe", *args], cwd=tmp_path,
                                env=env(RNAPIPE_CHUNK_RECORDS=50), stdout=subprocess.DEVNULL,
                                stderr=subprocess.DEVNULL, start_new_session=True)
        time.sleep(rng.uniform(0.3, 2.0))
        with pytest.raises(ProcessLookupError) if proc.poll() is not None else _nothing():
            os.killpg(proc.pid, signal.SIGKILL)
        proc.wait()
        again = cli(args, tmp_path, RNAPIPE_CHUNK_RECORDS=50)
        assert again.returncode == 0, again.stderr
        for n, data in want.items():
            assert (tmp_path / n).read_bytes() == data
        assert not list(tmp_path.glob("*.journal")) and not list(tmp_path.glob("*.part"))


class _nothing:
    def __enter__(self):
        return self

    def __exit__(self, *exc):
        return False


def test_changed_input_or_options_refuse_to_resume(tmp_path):
    make_input(tmp_path / "in.fa")
    killed_at("written:4", tmp_path)
    # another option: refused, nothing touched
    proc = cli(FOLD + ["--min-loop", "2"], tmp_path)
    assert proc.returncode == 2
    assert "other options" in one_error_line(proc) and "--restart" in proc.stderr
    # the input changed in a finished chunk: refused
    text = (tmp_path / "in.fa").read_text().replace(">r2 ", ">r2x ")
    (tmp_path / "in.fa").write_text(text)
    proc = cli(FOLD, tmp_path)
    assert proc.returncode == 2
    assert "input changed" in one_error_line(proc)
    assert (tmp_path / "out.db.journal").exists()
    # --restart folds everything again: the outputs of the changed input
    proc = cli(FOLD + ["--restart"], tmp_path)
    assert proc.returncode == 0, proc.stderr
    assert (tmp_path / "out.db").read_bytes() == expected(tmp_path / "in.fa", "db", "nussinov")
    assert not (tmp_path / "out.db.journal").exists()


def test_a_refused_resume_carries_the_facts_and_the_command_line_names_the_flag(tmp_path):
    """The journal's refusals name no flag (the pipeline speaks no command line); they carry the journal, the
    part of the run that differs, or the record where the input changed, and `rnapipe fold` adds --restart."""
    from rnapipe.cli.main import _how_to_restart
    from rnapipe.pipeline.resume.journal import InputChanged, Journal, NotAJournal, OtherRun, ResumeRefused

    path = str(tmp_path / "out.db.journal")
    head = {"journal": 1, "inputs": ["a.fa"], "options": {"algorithm": "zuker"}, "outputs": [], "chunking": [1]}
    Journal(path, head, restart=False).close()
    with pytest.raises(OtherRun) as refused:
        Journal(path, {**head, "options": {"algorithm": "nussinov"}}, restart=False)
    err = refused.value
    assert (err.path, err.key) == (path, "options") and "'zuker' then, 'nussinov' now" in err.differences
    assert str(err) == f"{path} belongs to an interrupted run with other options ({err.differences})"
    assert _how_to_restart(err) == f"{err}: run the same command to resume it, or add --restart to discard it " \
                                   "and start over"
    Path(path).write_text('{"journal": 99}\n')
    with pytest.raises(NotAJournal) as refused:
        Journal(path, head, restart=False)
    assert refused.value.path == path and "--" not in str(refused.value)
    assert _how_to_restart(refused.value) == f"{path} is not a journal this version of rnapipe can resume: run " \
                                             "again with --restart to discard it"
    changed = InputChanged(path, 9)
    assert isinstance(changed, ResumeRefused) and changed.record == 9 and changed.exit_code == 2
    assert _how_to_restart(changed) == "the input changed since the interrupted run (it differs before record 9): " \
                                       f"run with --restart to discard the journal {path} and fold everything again"


def test_a_bad_record_mid_stream_then_a_corrected_rerun_resumes(tmp_path):
    make_input(tmp_path / "in.fa", bad=30)
    args = ["fold", "in.fa", "--algorithm", "nussinov", "--threads", "1", "-o", "out.db", "-o", "out.tsv"]
    proc = cli(args, tmp_path)
    assert proc.returncode == 2
    line = one_error_line(proc)
    assert "record 'r30'" in line and "invalid character 'X'" in line and "correct the input" in line
    assert not (tmp_path / "out.db").exists() and not (tmp_path / "out.tsv").exists()
    done = chunks_in(tmp_path / "out.db.journal")
    assert 1 <= done <= 30 // CHUNK
    fixed = (tmp_path / "in.fa").read_text().replace("X", "")
    (tmp_path / "in.fa").write_text(fixed)
    proc = cli(args + ["-q"], tmp_path)
    assert proc.returncode == 0, proc.stderr
    assert resumed(proc) == (done, total_chunks() - done)
    assert (tmp_path / "out.db").read_bytes() == expected(tmp_path / "in.fa", "db", "nussinov", "error")
    assert (tmp_path / "out.tsv").read_bytes() == expected(tmp_path / "in.fa", "tsv", "nussinov", "error")


def test_a_second_run_on_the_same_output_is_refused(tmp_path):
    make_input(tmp_path / "in.fa")
    with held(FOLD, tmp_path, "written:1"):
        proc = cli(FOLD, tmp_path)
        assert proc.returncode == 2
        assert "another rnapipe run" in one_error_line(proc)


@pytest.mark.parametrize("algorithm", ["nussinov", "zuker"])
def test_several_outputs_formats_and_prefix(tmp_path, algorithm):
    make_input(tmp_path / "in.fa", count=12, bad=None)
    proc = cli(["fold", "in.fa", "--algorithm", algorithm, "-o", "all", "--format", "db,tsv,ct,bpseq"], tmp_path)
    assert proc.returncode == 0, proc.stderr
    for fmt in FORMATS:
        assert (tmp_path / f"all.{fmt}").read_bytes() == expected(tmp_path / "in.fa", fmt, algorithm), fmt
    proc = cli(["fold", "in.fa", "--algorithm", algorithm, "-o", "x.txt.gz", "-o", "-", "--format", "tsv"],
               tmp_path)
    assert proc.returncode == 0, proc.stderr
    want = expected(tmp_path / "in.fa", "tsv", algorithm)
    assert gzip.decompress((tmp_path / "x.txt.gz").read_bytes()) == want
    assert proc.stdout.encode() == want


def test_output_usage_errors(tmp_path):
    make_input(tmp_path / "in.fa", count=3, bad=None)
    for args, words in [(["-o", "a.db", "-o", "a.db"], "given twice"), (["-o", "-", "-o", "-"], "one output"),
                        (["-o", "a", "-o", "b", "-o", "c", "--format", "db,tsv"], "2 formats for 3 outputs")]:
        proc = cli(["fold", "in.fa", *args], tmp_path)
        assert proc.returncode == 2, args
        assert words in one_error_line(proc)


def test_progress_lines_in_a_log(tmp_path):
    make_input(tmp_path / "in.fa", count=20, bad=None)
    proc = cli(["fold", "in.fa", "--algorithm", "nussinov", "-o", "o.db"], tmp_path, RNAPIPE_PROGRESS_SECONDS=0)
    assert proc.returncode == 0
    *lines, summary = proc.stderr.splitlines()
    assert lines and all(re.match(r"rnapipe: \d\d:\d\d:\d\d .*sequences folded, .* seq/s, .* nt/s", x) for x in lines)
    assert re.fullmatch(r"rnapipe: folded 20 record\(s\) in \d+\.\d\d s \([\d,]+ per second\)", summary)
    quiet = cli(["fold", "in.fa", "--algorithm", "nussinov", "-o", "o.db", "-q"], tmp_path,
                RNAPIPE_PROGRESS_SECONDS=0)
    assert quiet.returncode == 0 and quiet.stderr == ""


def test_progress_share_and_eta_by_predicted_work():
    import io

    from rnapipe.pipeline.resume.progress import Progress

    out = io.StringIO()
    p = Progress(stream=out, interval=0.0)
    p.stop()                                 # no line from the clock: the lines below are add()'s
    p.total_work, p.total_records = 1000.0 + 8.0, 2
    p.start -= 10.0                          # 10 s in
    p.add(1, 2, 8.0)                         # the short record: 8 of 1,008 units of work
    line = out.getvalue().splitlines()[-1]
    assert "1/2 sequences folded" in line
    assert "0.8% of the predicted work" in line
    # 8 units took 10 s: the other 1,000 need about 1,250 s
    assert re.search(r"ETA 0:20:(4[89]|5[0-2])", line), line


def test_progress_lines_keep_their_cadence_while_a_chunk_is_long():
    """A log gets its line every interval even when no chunk was written since (one long record in flight)."""
    import io

    from rnapipe.pipeline.resume.progress import Progress

    out = io.StringIO()
    p = Progress(stream=out, interval=0.2)
    p.add(1, 100, 1.0)                       # the first chunk; then nothing for a while
    time.sleep(1.1)
    p.stop()
    lines = out.getvalue().splitlines()
    assert len(lines) >= 4, lines
    assert all("1 sequences folded" in line for line in lines)
    time.sleep(0.3)
    assert out.getvalue().splitlines() == lines      # stopped: no more lines


@pytest.mark.gpu
@pytest.mark.parametrize("point", ["written:2", "fold:9", "rename:1"])
def test_gpu_run_killed_and_resumed_equals_the_cpu_run(tmp_path, point):
    make_input(tmp_path / "in.fa")
    outputs = ["z.db", "z.tsv.gz"]
    base = ["fold", "in.fa", "--on-invalid", "skip", "-q"] + [x for o in outputs for x in ("-o", o)]
    cpu = cli(base + ["--device", "cpu"], tmp_path)
    assert cpu.returncode == 0, cpu.stderr
    want = {o: (tmp_path / o).read_bytes() for o in outputs}
    for o in outputs:
        (tmp_path / o).unlink()
    killed_at(point, tmp_path, base + ["--device", "gpu"])
    done = chunks_in(tmp_path / "z.db.journal")
    proc = cli(base + ["--device", "gpu"], tmp_path)
    assert proc.returncode == 0, proc.stderr
    assert resumed(proc) == (done, total_chunks() - done)
    for o, data in want.items():
        assert (tmp_path / o).read_bytes() == data, o


def test_parts_shorter_than_the_journal_resume_from_the_last_whole_chunk(workdir, clean_run):
    """A machine that went down may leave journal lines whose bytes never reached the disk: the rerun goes on
    from the last chunk whose bytes are all in the part files."""
    for name in clean_run:
        (workdir / name).unlink()
    killed_at("written:6", workdir)
    journal = workdir / "out.db.journal"
    entries = [json.loads(x) for x in journal.read_text().splitlines()]
    chunk_lines = [e for e in entries if "chunk" in e]
    assert len(chunk_lines) == 7
    cut = chunk_lines[3]["sizes"][0] + 5                  # out.db holds chunks 0-3 and a bit of chunk 4
    with open(workdir / "out.db.part", "r+b") as handle:
        handle.truncate(cut)
    proc = cli(FOLD, workdir)
    assert proc.returncode == 0, proc.stderr
    assert resumed(proc) == (4, total_chunks() - 4)
    for name, data in clean_run.items():
        assert (workdir / name).read_bytes() == data, name


SHARED = ROOT.parent / "shared" / "data" / "transcripts"


@pytest.mark.skipif(not SHARED.is_dir(), reason="../shared/data not present")
@pytest.mark.parametrize("name, algorithm, every", [("miRBase21_hairpin_all_species.fa", "nussinov", 1),
                                                    ("miRBase21_hairpin_all_species.fa", "zuker", 3),
                                                    ("tRNAs_GtRNAdb_6species.fa", "nussinov", 1),
                                                    ("tRNAs_GtRNAdb_6species.fa", "zuker", 1)])
def test_shared_data_every_format_as_the_record_path(tmp_path, name, algorithm, every):
    """rnapipe fold, streamed with the default chunks, writes in every format what the whole-list path
    gives: read_records, the engine's fold_batch on the whole list, rnapipe.io.writers. ``every``: the file's
    every so many records (the whole miRBase set folds twice with Zuker in 39 s on 2 cores; a third of it keeps
    the suite's time; test_zuker_cpu.py checks a sample of them against ViennaRNA)."""
    from rnapipe.api import Result
    from rnapipe.engines import get_engine

    path = SHARED / name
    if every > 1:
        text = path.read_text().split(">")[1:]
        path = tmp_path / name
        path.write_text("".join(">" + record for record in text[::every]))
    records = list(read_records([path], on_invalid="skip"))
    engine, variant = get_engine(algorithm, "cpu", None)
    folded = engine.fold_batch([r.sequence for r in records], variant, 2, {})
    results = [Result(r.id, r.sequence, structure, int(score), algorithm, r.index)
               for r, (score, structure) in zip(records, folded)]
    outputs = [f"out.{fmt}" for fmt in FORMATS]
    run = cli(["fold", path, "--algorithm", algorithm, "--threads", "2", "--on-invalid", "skip", "-q"]
              + [x for o in outputs for x in ("-o", o)], tmp_path, RNAPIPE_CHUNK_RECORDS="")
    assert run.returncode == 0, run.stderr
    for fmt, out in zip(FORMATS, outputs):
        writers.write_output(results, tmp_path / f"ref.{fmt}", fmt)
        ref = (tmp_path / f"ref.{fmt}").read_bytes()
        assert (tmp_path / out).read_bytes() == (with_header_lines(ref, [path]) if fmt == "db" else ref), fmt
