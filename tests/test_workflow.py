"""The Snakemake workflow end to end on a few records of the bundled example, in a temporary directory."""

import os
import shutil
import subprocess
import sys
from pathlib import Path

import pytest

from naive import pairs_of

REPO = Path(__file__).resolve().parents[1]

pytestmark = pytest.mark.skipif(shutil.which("snakemake", path=os.path.dirname(sys.executable) + os.pathsep
                                             + os.environ.get("PATH", "")) is None,
                                reason="snakemake is not installed")


def read_fasta(path):
    records, name = [], None
    for line in Path(path).read_text().splitlines():
        if line.startswith(">"):
            name = line[1:].split()[0]
        elif name:
            records.append((name, line.strip()))
            name = None
    return records


def test_workflow_folds_example_subset(tmp_path):
    example = read_fasta(REPO / "workflow" / "resources" / "example.fa")
    subset = example[:12]
    with open(tmp_path / "few.fa", "w") as handle:
        for name, seq in subset:
            handle.write(f">{name}\n{seq}\n")
    env = dict(os.environ, PATH=os.path.dirname(sys.executable) + os.pathsep + os.environ.get("PATH", ""))
    cmd = [sys.executable, "-m", "snakemake", "-s", str(REPO / "Snakefile"), "--directory", str(tmp_path),
           "--configfile", str(REPO / "config" / "config.yaml"), "--cores", "2",
           "--config", "inputs=[few.fa]", "outdir=out"]
    run = subprocess.run(cmd, env=env, capture_output=True, text=True, timeout=600)
    assert run.returncode == 0, run.stdout[-3000:] + run.stderr[-3000:]
    # one fold job for the input, writing every configured format
    assert sorted(p.name for p in (tmp_path / "out" / "benchmarks" / "fold").iterdir()) == ["few.zuker.tsv"]
    assert not list((tmp_path / "out").glob("*.journal")) and not list((tmp_path / "out").glob("*.part"))

    # the default configuration folds with Zuker: energies must be RNAfold's, to the integer dcal/mol
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
