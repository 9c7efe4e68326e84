"""The partition function's front doors: ``rnapipe fold -p`` against RNAfold -p's standard output, the TSV,
bpp and unpaired formats against ViennaRNA's probabilities, ``rnapipe.fold(partition=True)``, the refusals,
the memory limit, runs killed and resumed, and the workflow's stages.

The reference printer builds what RNAfold -p prints from ViennaRNA's Python API, after src/bin/RNAfold.c
(ViennaRNA 2.x): after the MFE line, the pseudo-bracket line of ``fc.pf()`` with ``[%6.2f]`` (the ensemble free
energy), the centroid ``{%6.2f d=%.2f}`` (``fc.centroid()``, its energy ``fc.eval_structure``), with --MEA the
MEA structure ``{%6.2f MEA=%.2f}`` (``fc.MEA(gamma)``), then `` frequency of mfe structure in ensemble %g;
ensemble diversity %-6.2f`` (``fc.pr_energy(mfe)``, ``fc.mean_bp_distance()``), ViennaRNA scaled as RNAfold
scales it (``fc.exp_params_rescale(mfe)``). rnapipe's code takes no part in the expected bytes. A line that
differs is compared by its numbers: the structures must be the same and the numbers within the last printed
digit (our probabilities and ViennaRNA's differ by rounding, up to 1e-9); the test counts such lines.
"""

from __future__ import annotations

import gzip
import os
import re
import subprocess
import sys

import numpy as np
import pytest

import rnapipe
from rnapipe.errors import UsageError
from shared_data import DATA
from test_cli import ROOT, one_error_line
from test_resume import CHUNK, chunks_in, cli, killed_at, make_input, resumed, total_chunks
from test_rnafold_conventions import fasta, random_records, sample_of_shared_data

RNA = pytest.importorskip("RNA")


def rnafold_p_stdout(records, mea: float | None = None, temperature: float | None = None,
                     dangles: int | None = None) -> str:
    """RNAfold -p's stdout (with --MEA=``mea`` when given) for ``records`` ((header, sequence) pairs)."""
    md = RNA.md()
    if temperature is not None:
        md.temperature = temperature
    if dangles is not None:
        md.dangles = dangles
    out = []
    for header, sequence in records:
        printed = sequence.replace("T", "U").replace("t", "u")
        fc = RNA.fold_compound(printed.upper(), md)
        structure, mfe = fc.mfe()
        fc.exp_params_rescale(mfe)
        pseudo, energy = fc.pf()
        centroid, distance = fc.centroid()
        if header is not None:
            out.append(f">{header.rstrip()}\n")
        out.append(f"{printed}\n{structure} ({mfe:6.2f})\n{pseudo} [{energy:6.2f}]\n")
        out.append(f"{centroid} {{{fc.eval_structure(centroid):6.2f} d={distance:.2f}}}\n")
        if mea is not None:
            mea_structure, accuracy = fc.MEA(mea)
            out.append(f"{mea_structure} {{{fc.eval_structure(mea_structure):6.2f} MEA={accuracy:.2f}}}\n")
        out.append(f" frequency of mfe structure in ensemble {fc.pr_energy(mfe):g}; "
                   f"ensemble diversity {fc.mean_bp_distance():<6.2f}\n")
    return "".join(out)


NUMBER = r"(-?\d+\.\d+|[-+\d.e]+)"
BRACKETED = re.compile(r"^(\S*) ([\[{(])\s*" + NUMBER + r"(?: (d|MEA)=" + NUMBER + r")?([\]})])$")
FREQUENCY = re.compile(r"^ frequency of mfe structure in ensemble (\S+); ensemble diversity (\S+)\s*$")


def same_as_rnafold(ours: str, want: str) -> int:
    """Assert that ``ours`` is RNAfold's ``want`` line for line: the same bytes, or where a line differs, the
    same structure and numbers within one unit of their last printed digit. Returns the count of such lines."""
    a, b = ours.split("\n"), want.split("\n")
    assert len(a) == len(b), (len(a), len(b))
    near = 0
    for x, y in zip(a, b):
        if x == y:
            continue
        near += 1
        fx, fy = FREQUENCY.match(x), FREQUENCY.match(y)
        if fy is not None:
            assert fx is not None, (x, y)
            assert float(fx.group(1)) == pytest.approx(float(fy.group(1)), rel=1e-5, abs=1e-300), (x, y)
            assert abs(float(fx.group(2)) - float(fy.group(2))) <= 0.0100001, (x, y)
            continue
        mx, my = BRACKETED.match(x), BRACKETED.match(y)
        assert mx is not None and my is not None, (x, y)
        assert mx.group(1) == my.group(1) and mx.group(2) == my.group(2) and mx.group(4) == my.group(4), (x, y)
        assert abs(float(mx.group(3)) - float(my.group(3))) <= 0.0100001, (x, y)
        if my.group(5) is not None:
            assert abs(float(mx.group(5)) - float(my.group(5))) <= 0.0100001, (x, y)
    return near


def run_rnapipe(args, cwd, **kw) -> subprocess.CompletedProcess:
    env = {"PYTHONPATH": str(ROOT), "PATH": "/usr/bin:/bin"}
    return subprocess.run([sys.executable, "-m", "rnapipe", *map(str, args)], cwd=cwd, env=env,
                          capture_output=True, text=True, timeout=600, **kw)


def records_for_tests() -> list[tuple[str, str]]:
    """A few records of every set of ../shared/data (up to 400 nt) and random ones with N, T and lower case."""
    picked = sample_of_shared_data(8, seed=24) if (DATA / "transcripts").is_dir() else []
    return picked + random_records(14, seed=24)


@pytest.fixture(scope="module")
def folded(tmp_path_factory):
    """One `rnapipe fold -p --MEA` of the test records in every format, and ViennaRNA's results for them."""
    tmp = tmp_path_factory.mktemp("partition")
    records = records_for_tests()
    (tmp / "in.fa").write_text(fasta(records))
    proc = run_rnapipe(["fold", "in.fa", "-p", "--MEA", "-q", "--threads", "2", "-o", "out",
                        "--format", "db,tsv,bpp,unpaired"], tmp)
    assert proc.returncode == 0, proc.stderr
    return tmp, records


def test_fold_p_prints_what_rnafold_p_prints(folded):
    tmp, records = folded
    ours = (tmp / "out.db").read_text()
    near = same_as_rnafold(ours, rnafold_p_stdout(records, mea=1.0))
    lines = ours.count("\n")
    assert near <= max(1, lines // 50), f"{near} of {lines} lines differ in their last digit"


def test_fold_p_on_standard_output_without_mea_and_with_options(tmp_path):
    """Without --MEA no MEA line, as RNAfold -p; -d0 and -T as RNAfold's; --MEA=G sets gamma; headerless
    sequences from stdin print no header line."""
    records = random_records(8, seed=7)
    plain = run_rnapipe(["fold", "-p", "-d0", "-T", "30"], tmp_path, input=fasta(records))
    assert plain.returncode == 0, plain.stderr
    same_as_rnafold(plain.stdout, rnafold_p_stdout(records, dangles=0, temperature=30.0))
    gamma = run_rnapipe(["fold", "--MEA=0.5", "-"], tmp_path, input="".join(s + "\n" for _, s in records))
    assert gamma.returncode == 0, gamma.stderr
    same_as_rnafold(gamma.stdout, rnafold_p_stdout([(None, s) for _, s in records], mea=0.5))


def _vienna(seq):
    fc = RNA.fold_compound(seq.upper().replace("T", "U"))
    _, mfe = fc.mfe()
    fc.exp_params_rescale(mfe)
    fc.pf()
    return fc, np.array(fc.bpp())


def test_tsv_bpp_and_unpaired_against_vienna(folded):
    """The TSV's columns are the db lines' numbers; every pair ViennaRNA gives above the threshold is in bpp
    (1-based i < j, each within 1e-6), no pair at or below it; unpaired is 1 less each nucleotide's pairs."""
    tmp, records = folded
    rows = (tmp / "out.tsv").read_text().splitlines()
    assert rows[0].split("\t") == ["id", "length", "score", "structure", "algorithm", "ensemble_structure",
                                   "ensemble_energy", "mfe_frequency", "ensemble_diversity", "centroid",
                                   "centroid_energy", "centroid_distance", "mea", "mea_energy", "mea_accuracy"]
    db = (tmp / "out.db").read_text().splitlines()
    bpp = {}
    for line in (tmp / "out.bpp").read_text().splitlines()[1:]:
        rid, i, j, p = line.split("\t")
        bpp.setdefault(rid, {})[int(i), int(j)] = float(p)
    assert (tmp / "out.bpp").read_text().startswith("id\ti\tj\tp\n")
    unpaired = [line.split("\t") for line in (tmp / "out.unpaired").read_text().splitlines()]
    assert len(rows) - 1 == len(unpaired) == len(records)
    worst = 0.0
    for k, (header, seq) in enumerate(records):
        rid = header.split()[0]
        fields = rows[k + 1].split("\t")
        block = db[7 * k:7 * k + 7]
        assert fields[:4] == [rid, str(len(seq)), block[2].rsplit("(", 1)[1].strip(" )"), block[2].split(" ")[0]]
        assert fields[5] == block[3].split(" ")[0] and f"[{fields[6]:>6}]" == block[3].split(" ", 1)[1]
        assert f"{fields[9]} {{{fields[10]:>6} d={fields[11]}}}" == block[4]
        assert f"{fields[12]} {{{fields[13]:>6} MEA={fields[14]}}}" == block[5]
        assert block[6] == f" frequency of mfe structure in ensemble {fields[7]}; ensemble diversity {fields[8]:<6}"
        fc, P = _vienna(seq)
        n = len(seq)
        ours = bpp.get(rid, {})
        want = {(i, j) for i in range(1, n + 1) for j in range(i + 1, n + 1) if P[i, j] > 1e-5 + 1e-6}
        assert want <= set(ours), rid
        for (i, j), p in ours.items():
            assert 1 <= i < j <= n and p > 1e-5 - 1e-6
            worst = max(worst, abs(p - P[i, j]))
        assert unpaired[k][0] == rid and len(unpaired[k]) == n + 1
        pu = 1.0 - P.sum(axis=0)[1:] - P.sum(axis=1)[1:]
        assert np.abs(np.array(unpaired[k][1:], dtype=float) - np.clip(pu, 0, None)).max() < 1e-6, rid
    assert worst < 1e-6, worst


def test_api_partition_results(tmp_path):
    """rnapipe.fold(partition=True): each Result carries its ensemble; bpp as sparse arrays above the threshold;
    the MFE part is the MFE fold's."""
    seqs = [s.upper().replace("T", "U").replace("N", "A") for _, s in random_records(6, seed=3)]
    results = rnapipe.fold(seqs, partition=True, bpp_threshold=1e-3, mea_gamma=2.0, threads=2)
    mfe = rnapipe.fold(seqs, threads=2)
    for r, m, seq in zip(results, mfe, seqs):
        assert (r.structure, r.score_int) == (m.structure, m.score_int) and m.ensemble is None
        fc, P = _vienna(seq)
        _, energy = fc.pf()
        e = r.ensemble
        assert abs(e.energy - energy) < 0.01
        i, j, p = e.bpp
        assert np.all(p > 1e-3) and np.abs(p - P[i, j]).max(initial=0.0) < 1e-6
        assert set(zip(i.tolist(), j.tolist())) >= {(a, b) for a in range(1, len(seq) + 1)
                                                   for b in range(a + 1, len(seq) + 1) if P[a, b] > 1e-3 + 1e-6}
        assert e.mea == fc.MEA(2.0)[0] and e.centroid == fc.centroid()[0] and e.pseudo == fc.pf()[0]
        assert e.centroid_energy == round(fc.eval_structure(e.centroid) * 100)


@pytest.mark.parametrize("options, named", [({"no_lp": True}, "option no_lp"),
                                            ({"max_bp_span": 20}, "option max_bp_span"),
                                            ({"constraints": ["." * 12]}, "option constraints"),
                                            ({"shape": [[0.5] * 12]}, "option shape"),
                                            ({"algorithm": "nussinov"}, "algorithm 'nussinov'")])
def test_api_refuses_what_the_partition_engine_does_not_take(options, named):
    with pytest.raises(UsageError) as err:
        rnapipe.fold(["GGGGAAAACCCC"], partition=True, **options)
    assert named in str(err.value) and "\n" not in str(err.value)


@pytest.mark.parametrize("options", [{"bpp_threshold": 0.1}, {"mea_gamma": 2.0}, {"partition": "yes"},
                                     {"partition": True, "bpp_threshold": 1.5}, {"partition": True, "mea_gamma": 0}])
def test_api_refuses_partition_settings_that_would_be_lost_or_are_wrong(options):
    with pytest.raises(UsageError):
        rnapipe.fold(["GGGGAAAACCCC"], **options)


@pytest.mark.parametrize("args, flag", [(["--noLP"], "--noLP"), (["--noGU"], "--noGU"),
                                        (["--noClosingGU"], "--noClosingGU"), (["--maxBPspan", "30"], "--maxBPspan"),
                                        (["-C"], "-C/--constraint"), (["--shape", "x.shape"], "--shape"),
                                        (["--algorithm", "nussinov"], "--algorithm nussinov")])
def test_cli_refuses_what_the_partition_engine_does_not_take_in_one_line(tmp_path, args, flag):
    (tmp_path / "in.fa").write_text(">a\nGGGGAAAACCCC\n")
    proc = run_rnapipe(["fold", "in.fa", "-p", *args, "-o", "out.db"], tmp_path)
    assert proc.returncode == 2
    assert f"-p/--partition with {flag}" in one_error_line(proc)
    assert not (tmp_path / "out.db").exists()


def _gpu_here() -> bool:
    from rnapipe.gpu.devices import gpu_available
    return gpu_available()


def test_partition_on_a_gpu_that_is_not_there_is_one_line(tmp_path):
    """-p --device gpu folds on the GPU partition engine; without a GPU, one line that says so."""
    if _gpu_here():
        pytest.skip("a GPU is present (tests/test_partition_gpu.py)")
    (tmp_path / "in.fa").write_text(">a\nGGGGAAAACCCC\n")
    for device in (["--device", "gpu"], ["--device", "gpu", "--gpus", "0"], ["--device", "auto", "--gpus", "0"]):
        proc = run_rnapipe(["fold", "in.fa", "-p", *device, "-o", "out.db"], tmp_path)
        assert proc.returncode != 0 and "GPU" in one_error_line(proc), device
        assert not (tmp_path / "out.db").exists()
    with pytest.raises(Exception) as err:
        rnapipe.fold(["GGGGAAAACCCC"], partition=True, device="gpu")
    assert "GPU" in str(err.value) and "\n" not in str(err.value)


def test_partition_options_and_formats_need_p_and_auto_folds_on_the_cpu(tmp_path):
    (tmp_path / "in.fa").write_text(">a\nGGGGAAAACCCC\n")
    for args, said in ((["-o", "x.bpp"], "format bpp"), (["-o", "x", "--format", "db,unpaired"], "format unpaired"),
                       (["--mea-gamma", "2"], "--mea-gamma"), (["--bpp-threshold", "0.1"], "--bpp-threshold")):
        proc = run_rnapipe(["fold", "in.fa", *args], tmp_path)
        assert proc.returncode == 2 and said in one_error_line(proc), args
    proc = run_rnapipe(["fold", "in.fa", "-p", "--device", "auto"], tmp_path)
    assert proc.returncode == 0, proc.stderr
    said = "gpu (a GPU is present)" if _gpu_here() else "cpu (no GPU here)"
    assert f"--device auto: {said}" in proc.stderr
    assert proc.stdout.count("\n") == 6


def test_gzipped_bpp_is_the_same_text(folded, tmp_path):
    _, records = folded
    (tmp_path / "in.fa").write_text(fasta(records[:6]))
    proc = run_rnapipe(["fold", "in.fa", "-p", "-q", "-o", "a.bpp", "-o", "b.bpp.gz", "-o", "c.unpaired.gz"],
                       tmp_path)
    assert proc.returncode == 0, proc.stderr
    assert gzip.decompress((tmp_path / "b.bpp.gz").read_bytes()) == (tmp_path / "a.bpp").read_bytes()
    assert len(gzip.decompress((tmp_path / "c.unpaired.gz").read_bytes()).splitlines()) == 6


def test_a_sequence_too_long_for_the_partition_functions_memory_is_refused(tmp_path):
    """The partition function takes about 78·n² bytes a sequence (its matrices and the MFE fold's): under
    ulimit -v 2 GiB a 7,000-nt sequence, which the MFE fold (13·n²) would take, is refused in one line with
    exit 4."""
    import resource

    from rnapipe import memory
    from rnapipe.cpu import partition, zuker

    limit, n = 2 << 30, 7000
    hard = resource.getrlimit(resource.RLIMIT_AS)[1]
    if hard != resource.RLIM_INFINITY and hard < limit:
        pytest.skip("the hard RLIMIT_AS is below the test's limit")
    if min(memory.headrooms().values()) * 0.8 < partition.bytes_needed(n) * 1.2:
        pytest.skip("the host's memory alone refuses the sequence")
    assert zuker.bytes_needed(n) < 0.5 * limit < partition.bytes_needed(n)
    (tmp_path / "in.fa").write_text(">short\nGGGGAAAACCCC\n>long\n" + "GCAU" * (n // 4) + "\n")

    def limited():
        resource.setrlimit(resource.RLIMIT_AS, (limit, hard))

    proc = subprocess.run([sys.executable, "-m", "rnapipe", "fold", "in.fa", "-p", "-o", "out.db", "--threads",
                           "1"], cwd=tmp_path, env={"PYTHONPATH": str(ROOT), "PATH": "/usr/bin:/bin"},
                          preexec_fn=limited, capture_output=True, text=True, timeout=300)
    assert proc.returncode == 4, proc.stderr
    line = one_error_line(proc)
    need = f"{partition.bytes_needed(n) / 2**30:.1f}"
    assert line.startswith(f"rnapipe: error: in.fa, record 'long': sequence of 7000 nt needs about {need} GiB"), line
    assert "ulimit -v" in line
    assert not (tmp_path / "out.db").exists()


PF_OUTPUTS = ["out.db", "out.tsv", "out.bpp.gz", "out.unpaired"]
PF_FOLD = ["fold", "in.fa", "-p", "--MEA", "--threads", "1", "--on-invalid", "skip", "-q"] + \
          [x for o in PF_OUTPUTS for x in ("-o", o)]


@pytest.fixture(scope="module", params=["cpu", pytest.param("gpu", marks=pytest.mark.gpu)])
def resume_dir(request, tmp_path_factory):
    """An input of 38 records (one bad) and an uninterrupted `rnapipe fold -p` of it in four formats, on the CPU
    and on the GPU engine; the directory, the outputs and the command."""
    fold = PF_FOLD + ["--device", request.param]
    d = tmp_path_factory.mktemp(f"pf-resume-{request.param}")
    make_input(d / "in.fa")
    proc = cli(fold, d)
    assert proc.returncode == 0, proc.stderr
    clean = {name: (d / name).read_bytes() for name in PF_OUTPUTS + ["out.db.rejected.tsv"]}
    want = rnafold_p_stdout([(f"r{k} some description", s) for k, s in enumerate(read_input(d / "in.fa"))
                             if k != 9], mea=1.0)
    same_as_rnafold(clean["out.db"].decode(), want)
    return d, clean, fold


def read_input(path):
    out = []
    for block in path.read_text().split(">")[1:]:
        lines = block.splitlines()
        out.append("".join(lines[1:]))
    return out


@pytest.mark.parametrize("point, done_at_kill", [("written:0", 1), ("written:4", 5), ("fold:9", None)])
def test_killed_partition_run_resumes_byte_identical(resume_dir, point, done_at_kill):
    """SIGKILL at three points of a `rnapipe fold -p` run (after the first chunk's write, after the fifth, while
    the last chunk folds); the same command finishes with every output byte for byte the uninterrupted run's."""
    d, clean, fold = resume_dir
    for name in clean:
        (d / name).unlink(missing_ok=True)
    killed_at(point, d, fold)
    assert not any((d / name).exists() for name in clean)
    done = chunks_in(d / "out.db.journal")
    if done_at_kill is not None:
        assert done == done_at_kill
    else:
        assert done < total_chunks()
    proc = cli(fold, d)
    assert proc.returncode == 0, proc.stderr
    assert resumed(proc) == (done, total_chunks() - done)
    for name, data in clean.items():
        assert (d / name).read_bytes() == data, name
    assert not (d / "out.db.journal").exists() and not list(d.glob("*.part"))


def test_the_partition_settings_are_part_of_the_run(resume_dir):
    """The journal records -p and its settings: a run killed with -p is not resumed without it, nor with
    another gamma or threshold; the refusal is one line naming the journal."""
    d, clean, fold = resume_dir
    for name in clean:
        (d / name).unlink(missing_ok=True)
    killed_at("written:1", d, fold)
    for changed in (["--mea-gamma", "2"], ["--bpp-threshold", "0.01"]):
        proc = cli(fold + changed, d)
        assert proc.returncode == 2 and "belongs to an interrupted run with other options" in one_error_line(proc)
    mfe = [x for x in fold if x not in ("-p", "--MEA")]
    mfe = mfe[:mfe.index("-o")] + ["-o", "out.db", "-o", "out.tsv"] + fold[fold.index("--device"):]
    proc = cli(mfe, d)
    assert proc.returncode == 2 and "belongs to an interrupted run with other" in one_error_line(proc)
    proc = cli(fold, d)
    assert proc.returncode == 0, proc.stderr
    for name, data in clean.items():
        assert (d / name).read_bytes() == data, name


# -------------------------------------------------------------------------------------------------------------
# the workflow


def test_workflow_stages_with_p_merge_to_one_fold_p(tmp_path):
    """prepare -p, partition, three fold-job -p (the pfjob format; one killed and run again) and merge -p --MEA:
    every format byte for byte one `rnapipe fold -p --MEA` of the input."""
    from test_workflow import environment, mixed_input, rnapipe as stage

    env = environment(tmp_path)
    mixed_input(tmp_path / "in.fa", 45, seed=24, bad=False)
    formats = ["db", "tsv", "bpp", "unpaired", "ct"]
    direct = stage(["fold", "in.fa", "-p", "--MEA", "-q", "-o", "direct", "--format", ",".join(formats)],
                   tmp_path, env)
    assert direct.returncode == 0, direct.stderr
    for args in (["prepare", "in.fa", "-o", "prep", "-p", "--shard-records", "7"],
                 ["partition", "prep", "--cpu-jobs", "3", "-o", "plan"]):
        run = stage(args, tmp_path, env)
        assert run.returncode == 0, run.stderr
    (tmp_path / "folds").mkdir()
    records = [sum((tmp_path / shard).read_text().count(">") for shard in (tmp_path / f"plan/cpu{j}.list").read_text()
                   .split()) for j in range(3)]
    most = records.index(max(records))
    assert records[most] > 3 * CHUNK
    for j in range(3):
        args = ["fold-job", f"plan/cpu{j}.list", "-o", f"folds/cpu{j}.db", "-p", "-q", "--threads", "1"]
        if j == most:                   # killed after its second chunk, then the same command goes on from there
            killed_at("written:1", tmp_path, args)
            job = cli(args, tmp_path)
            assert resumed(job)[0] == 2, job.stderr
        else:
            job = stage(args, tmp_path, env)
        assert job.returncode == 0, job.stderr
    outputs = [x for fmt in formats for x in ("-o", f"merged.{fmt}")]
    refused = stage(["merge", "prep", "--plan", "plan", "--folds", "folds", "-o", "x.bpp"], tmp_path, env)
    assert refused.returncode == 2 and "add -p/--partition" in one_error_line(refused)
    run = stage(["merge", "prep", "--plan", "plan", "--folds", "folds", "-p", "--MEA", *outputs], tmp_path, env)
    assert run.returncode == 0, run.stderr
    for fmt in formats:
        assert (tmp_path / f"merged.{fmt}").read_bytes() == (tmp_path / f"direct.{fmt}").read_bytes(), fmt


def test_workflow_with_fold_partition_equals_one_fold_p(tmp_path):
    """fold.partition: true (with mea, a gamma and a threshold) runs CPU jobs and writes every format as one
    `rnapipe fold -p` does; partition with a pairing rule, or bpp without partition, is refused at the start."""
    from test_workflow import environment, mixed_input, needs_snakemake, snakemake_cmd

    if needs_snakemake.args[0]:
        pytest.skip("snakemake is not installed")
    env = environment(tmp_path)
    mixed_input(tmp_path / "in.fa", 30, seed=3, bad=False)
    fold = "{partition: true, mea: true, mea_gamma: 0.5, bpp_threshold: 0.001}"
    run = subprocess.run(snakemake_cmd(tmp_path, {"inputs": "[in.fa]", "outdir": "out", "fold": fold,
                                                  "formats": "[db, tsv, bpp, unpaired]", "jobs": "{cpu: 2}"}),
                         env=env, capture_output=True, text=True, timeout=600)
    assert run.returncode == 0, run.stdout[-3000:] + run.stderr[-3000:]
    direct = run_rnapipe(["fold", "in.fa", "-p", "--MEA=0.5", "--bpp-threshold", "0.001", "-q", "-o", "direct",
                          "--format", "db,tsv,bpp,unpaired"], tmp_path)
    assert direct.returncode == 0, direct.stderr
    for fmt in ("db", "tsv", "bpp", "unpaired"):
        assert (tmp_path / "out" / f"in.zuker.{fmt}").read_bytes() == (tmp_path / f"direct.{fmt}").read_bytes(), fmt
    for config, said in (({"fold": "{partition: true, no_lp: true}"}, "fold.partition with fold.no_lp"),
                         ({"formats": "[db, bpp]"}, "set fold.partition: true"),
                         ({"fold": "{mea_gamma: 2.0}"}, "fold.mea_gamma applies with fold.partition: true only")):
        dry = subprocess.run(snakemake_cmd(tmp_path, {"inputs": "[in.fa]", "outdir": "out2", **config}, "-n"),
                             env=env, capture_output=True, text=True, timeout=600)
        assert dry.returncode != 0 and said in dry.stdout + dry.stderr, config


def test_workflow_with_fold_partition_plans_gpu_jobs(tmp_path):
    """fold.partition with GPU jobs (jobs.gpu: 2 plans them here too): each GPU job folds with -p on its GPU, and
    the profile the plan is made from times the partition function's engines (rnapipe profile -p), under a name
    of its own."""
    from test_workflow import environment, mixed_input, needs_snakemake, snakemake_cmd

    if needs_snakemake.args[0]:
        pytest.skip("snakemake is not installed")
    mixed_input(tmp_path / "in.fa", 30, seed=3, bad=False)
    fold = "{partition: true, mea_gamma: 0.5}"
    dry = subprocess.run(snakemake_cmd(tmp_path, {"inputs": "[in.fa]", "outdir": "out", "fold": fold,
                                                  "jobs": "{cpu: 1, gpu: 2, gpus: [0, 1]}"}, "-n", "-p"),
                         env=environment(tmp_path), capture_output=True, text=True, timeout=600)
    assert dry.returncode == 0, dry.stdout[-3000:] + dry.stderr[-3000:]
    lines = dry.stdout.splitlines()
    jobs = [line for line in lines if " fold-job " in line]
    gpu_jobs = [line for line in jobs if "--device gpu" in line]
    assert len(jobs) == 3 and len(gpu_jobs) == 2, jobs
    assert all(" -p --mea-gamma 0.5 " in line for line in jobs), jobs
    assert sorted(line.split("--gpus ")[1].split()[0] for line in gpu_jobs) == ["0", "1"]
    profile = [line for line in lines if " profile " in line and "--cached" in line]
    assert len(profile) == 1 and " -p " in profile[0] and "cpu+gpu.zuker.partition.json" in profile[0], profile
    assert all(" --threads 1 " in line for line in jobs), jobs             # --cores 2 for three jobs
    # every job a like share of the cores (a GPU job computes its records' derived values on the host), and the
    # profile times both engines on that share
    dry = subprocess.run(snakemake_cmd(tmp_path, {"inputs": "[in.fa]", "outdir": "out", "fold": fold,
                                                  "jobs": "{cpu: 1, gpu: 2, gpus: [0, 1]}"}, "-n", "-p", "--cores",
                                       "9"),
                         env=environment(tmp_path), capture_output=True, text=True, timeout=600)
    assert dry.returncode == 0, dry.stdout[-3000:] + dry.stderr[-3000:]
    lines = dry.stdout.splitlines()
    jobs = [line for line in lines if " fold-job " in line]
    assert len(jobs) == 3 and all(" --threads 3 " in line for line in jobs), jobs
    assert [line for line in lines if " profile " in line and " -p --threads 3 " in line], lines
    # no CPU jobs: the GPU jobs share the cores (the host's part of the partition function)
    dry = subprocess.run(snakemake_cmd(tmp_path, {"inputs": "[in.fa]", "outdir": "out", "fold": fold,
                                                  "jobs": "{cpu: 0, gpu: 2, gpus: [0, 1]}"}, "-n", "-p", "--cores",
                                       "8"),
                         env=environment(tmp_path), capture_output=True, text=True, timeout=600)
    assert dry.returncode == 0, dry.stdout[-3000:] + dry.stderr[-3000:]
    gpu_jobs = [line for line in dry.stdout.splitlines() if " fold-job " in line]
    assert len(gpu_jobs) == 2 and all(" --threads 4 " in line for line in gpu_jobs), gpu_jobs


def test_api_writers_print_what_the_command_prints(folded, tmp_path):
    """rnapipe.io.writers on rnapipe.fold(partition=True)'s results write the command's TSV, bpp and unpaired
    bytes, and db with --MEA's lines given mea=True; MFE results are refused the partition formats."""
    from rnapipe.io import read_records, writers

    tmp, records = folded
    results = rnapipe.fold(list(read_records([tmp / "in.fa"])), partition=True, threads=2)
    for fmt in ("tsv", "bpp", "unpaired"):
        writers.write_output(results, tmp_path / f"api.{fmt}", fmt)
        assert (tmp_path / f"api.{fmt}").read_bytes() == (tmp / f"out.{fmt}").read_bytes(), fmt
    writers.write_output(results, tmp_path / "api.db", "db", mea=True)
    # the API's results carry ids, not whole header lines, and their sequences normalised (upper case, U)
    ours = (tmp_path / "api.db").read_text().splitlines()
    want = (tmp / "out.db").read_text().splitlines()
    assert [x for k, x in enumerate(ours) if k % 7 > 1] == [x for k, x in enumerate(want) if k % 7 > 1]
    with pytest.raises(ValueError, match="partition"):
        writers.write_output(rnapipe.fold(["GGGGAAAACCCC"]), tmp_path / "mfe.bpp", "bpp")


def test_profile_p_times_the_partition_engines(tmp_path):
    """rnapipe profile -p (the workflow's profile with fold.partition): the partition function's CPU engine timed,
    under a key of its own (a cached MFE profile is not taken for it), with its own length limit (about 78·n²
    bytes a sequence against the MFE fold's 13·n²: a shorter longest sequence)."""
    import json

    env = dict(os.environ, RNAPIPE_CACHE=str(tmp_path / "cache"))
    got = {}
    for name, extra in (("mfe", []), ("p", ["-p"])):
        proc = subprocess.run([sys.executable, "-m", "rnapipe", "profile", "--device", "cpu", "--cached", "--threads",
                               "1", "--lengths", "20,60", *extra, "-o", f"{name}.json"], cwd=tmp_path, env=env,
                              capture_output=True, text=True, timeout=600)
        assert proc.returncode == 0, proc.stderr
        assert "taken from" not in proc.stderr, name
        got[name] = json.loads((tmp_path / f"{name}.json").read_text())
    assert got["p"]["key"]["options"].get("partition") is True and "partition" not in got["mfe"]["key"]["options"]
    assert 0 < got["p"]["longest"]["cpu"] < got["mfe"]["longest"]["cpu"]
    assert got["p"]["devices"] == ["cpu"] and set(got["p"]["samples"]["cpu"]) == {"20", "60"}
    proc = subprocess.run([sys.executable, "-m", "rnapipe", "profile", "-p", "--algorithm", "nussinov", "--device",
                           "cpu"], cwd=tmp_path, env=env, capture_output=True, text=True, timeout=600)
    assert proc.returncode == 2 and "zuker" in one_error_line(proc)
