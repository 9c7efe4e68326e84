"""The Zuker CPU engine's compile on a cold Numba cache, split over two processes (rnapipe.cpu.ahead,
rnapipe.cpu.zuker.compile_ahead): the child compiles the fill for the very argument types the fold uses (the
fold loads it from the cache instead of compiling it), the results are the engine's, and a filled cache or a
process with one usable core spawns no child; `rnapipe resources --algorithm` tells whether the cache holds
the engine."""

from __future__ import annotations

import json
import os
import subprocess
import sys
from pathlib import Path

REPO = Path(__file__).resolve().parents[1]
SEQUENCES = ["GGGGAAAACCCC", "GCGCAUAUGCGCAAAAGCGCAUAUGCGC", "ACGUACGUAGCUAGCUAGCAUCGAUCGAUGCAUGCAUCG" * 3]

COLD_RUN = """
import json, sys
from rnapipe.cpu import ahead, zuker
from rnapipe.model import Model

sigs = zuker.signatures(Model.from_options({}).tables())
before = {name: ahead.cached(getattr(zuker, name), sig) for name, sig in sigs.items()}
results = zuker.fold_batch(json.loads(sys.argv[1]), "default", 2, {})
stats = {name: [str(s) for s in getattr(zuker, name).stats.cache_hits] for name in sigs}
misses = {name: [str(s) for s in getattr(zuker, name).stats.cache_misses] for name in sigs}
print(json.dumps({"before": before, "results": results, "hits": stats, "misses": misses,
                  "signatures": {name: [str(s) for s in getattr(zuker, name).signatures] for name in sigs},
                  "want": {name: str(sig) for name, sig in sigs.items()}}))
"""


def test_a_cold_fold_loads_the_fill_the_child_compiled(tmp_path):
    """An empty cache, 2 threads: the traceback is compiled here, the fill in the child and loaded here from
    the cache (a hit, no miss), fold_range compiled here; the signatures are the ones the fold compiles for; the
    results are those of a fold in this process."""
    from rnapipe.cpu import zuker

    env = dict(os.environ, NUMBA_CACHE_DIR=str(tmp_path / "numba"), PYTHONPATH=str(REPO))

    def compiled(algorithm):          # what `rnapipe resources` tells the workflow's start
        said = subprocess.run([sys.executable, "-m", "rnapipe", "resources", "--json", "--gpu-jobs", "0",
                               "--algorithm", algorithm], env=env, capture_output=True, text=True, timeout=120)
        assert said.returncode == 0, said.stderr
        return json.loads(said.stdout)["cpu_compiled"]

    assert compiled("zuker") is False and compiled("nussinov") is None
    run = subprocess.run([sys.executable, "-c", COLD_RUN, json.dumps(SEQUENCES)], env=env, capture_output=True,
                         text=True, timeout=600)
    assert run.returncode == 0, run.stderr[-3000:]
    assert compiled("zuker") is True
    got = json.loads(run.stdout)
    assert got["before"] == {"fold_range": False, "_fill": False, "traceback": False}
    want = got["want"]
    assert got["hits"]["_fill"] == [want["_fill"]] and got["misses"]["_fill"] == []
    assert got["misses"]["traceback"] == [want["traceback"]] and got["misses"]["fold_range"] == [want["fold_range"]]
    for name, sig in want.items():
        assert got["signatures"][name] == [sig], name
    assert [tuple(r) for r in got["results"]] == zuker.fold_batch(SEQUENCES, "default", 1, {})


def test_a_filled_cache_or_one_usable_core_spawns_no_child(monkeypatch):
    from rnapipe import config
    from rnapipe.cpu import ahead, zuker
    from rnapipe.model import Model

    tables = Model.from_options({}).tables()
    zuker.fold_batch(SEQUENCES[:1], "default", 1, {})          # this process's cache: fold_range compiled or loaded
    assert ahead.cached(zuker.fold_range, zuker.signatures(tables)["fold_range"])
    spawned = []
    monkeypatch.setattr(ahead, "compile_in_two", lambda here, code: spawned.append(code))
    monkeypatch.setattr(config, "default_threads", lambda: 2)
    monkeypatch.setattr(zuker, "_AHEAD", ahead.Once())
    zuker.compile_ahead(tables)
    assert spawned == []                                        # filled cache
    monkeypatch.setattr(ahead, "cached", lambda dispatcher, sig: False)       # as if cold
    monkeypatch.setattr(config, "default_threads", lambda: 1)
    monkeypatch.setattr(zuker, "_AHEAD", ahead.Once())
    zuker.compile_ahead(tables)
    assert spawned == []                                        # one usable core
    monkeypatch.setattr(config, "default_threads", lambda: 2)
    monkeypatch.setattr(zuker, "_AHEAD", ahead.Once())
    zuker.compile_ahead(tables)
    zuker.compile_ahead(tables)
    assert len(spawned) == 1 and "compile_alone('_fill')" in spawned[0]          # cold, two cores: once


def test_a_child_that_fails_leaves_the_compile_to_this_process():
    from rnapipe.cpu import ahead

    ran = []
    assert ahead.compile_in_two(lambda: ran.append(1), "raise SystemExit(3)") is False and ran == [1]
    assert ahead.compile_in_two(lambda: ran.append(2), "import rnapipe.cpu.ahead") is True and ran == [1, 2]


def test_the_child_imports_this_rnapipe_not_one_in_its_working_directory(tmp_path):
    import rnapipe
    from rnapipe.cpu import ahead

    (tmp_path / "rnapipe").mkdir()
    (tmp_path / "rnapipe" / "__init__.py").write_text("raise SystemExit(7)\n")
    run = subprocess.run(ahead.child_command("import rnapipe\nprint(rnapipe.__file__)"), cwd=tmp_path,
                         capture_output=True, text=True, timeout=120)
    assert run.returncode == 0, run.stderr
    assert run.stdout.strip() == rnapipe.__file__


def test_partition_compile_ahead_as_the_mfe_engines(monkeypatch, tmp_path):
    """The partition function's CPU engine (rnapipe.cpu.partition.compile_ahead): a filled cache or one usable
    core spawns no child; cold on two cores, one child (the MFE engine's fold) once a process, while this
    process compiles its own pieces; `rnapipe fold -p` says it compiles only where the cache lacks the engine."""
    from rnapipe import config
    from rnapipe.cpu import ahead, partition
    from rnapipe.model import Model

    model = Model()
    X, T = partition.exp_tables(model), model.tables()
    partition.fold_batch(SEQUENCES[:1], model, 1)
    assert partition.compiled()
    spawned, here = [], []
    monkeypatch.setattr(ahead, "compile_in_two", lambda mine, code: (spawned.append(code), here.append(mine)))
    monkeypatch.setattr(config, "default_threads", lambda: 2)
    monkeypatch.setattr(partition, "_AHEAD", ahead.Once())
    partition.compile_ahead(X, T)
    assert spawned == []                                        # filled cache
    monkeypatch.setattr(ahead, "cached", lambda dispatcher, sig: False)       # as if cold
    monkeypatch.setattr(config, "default_threads", lambda: 1)
    monkeypatch.setattr(partition, "_AHEAD", ahead.Once())
    partition.compile_ahead(X, T)
    assert spawned == []                                        # one usable core
    monkeypatch.setattr(config, "default_threads", lambda: 2)
    monkeypatch.setattr(partition, "_AHEAD", ahead.Once())
    partition.compile_ahead(X, T)
    partition.compile_ahead(X, T)
    assert len(spawned) == 1 and "compile_alone()" in spawned[0]
    here[0]()                                                   # this process's pieces: they run (cache warm)
    monkeypatch.undo()
    (tmp_path / "in.fa").write_text(">a\nGGGGAAAACCCC\n")
    here = str(Path(partition.__file__).resolve().parents[2])   # the rnapipe this process compiled (its cache)
    proc = subprocess.run([sys.executable, "-m", "rnapipe", "fold", "in.fa", "-p", "-o", "out.tsv"], cwd=tmp_path,
                          env=dict(os.environ, PYTHONPATH=here), capture_output=True, text=True, timeout=600)
    assert proc.returncode == 0 and "compiling the partition function" not in proc.stderr, proc.stderr


def test_fold_p_on_a_gpu_says_when_its_host_part_compiles(monkeypatch):
    """The folder of `rnapipe fold -p --device gpu` (choose.folder_for): one line where Numba's cache lacks the GPU
    engine's host part (rnapipe.gpu.partition.host_compiled), none where the cache holds it or there is no GPU
    (the folder then says that in one line)."""
    from rnapipe.gpu import partition as gpu_partition
    from rnapipe.pipeline import choose
    from rnapipe.pipeline.ensemble import folder as ensemble_folder
    from rnapipe.pipeline.ensemble.request import Settings

    monkeypatch.setattr(ensemble_folder, "EnsembleFolder", lambda *a, **k: "the folder")
    for gpu, compiled, lines in ((True, False, 1), (True, True, 0), (False, False, 0)):
        monkeypatch.setattr(choose, "gpu_available", lambda: gpu)
        monkeypatch.setattr(gpu_partition, "host_compiled", lambda: compiled)
        said: list[str] = []
        assert choose.folder_for("zuker", device="gpu", ensemble=Settings(), say=said.append) == "the folder"
        assert len(said) == lines and all("compiling the partition function's host part" in s for s in said), said
