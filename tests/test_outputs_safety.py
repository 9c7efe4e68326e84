"""What the user gave is never destroyed by `rnapipe fold`'s outputs: an output that is an input (by any path or
link) is refused, an existing output that is not a regular file (FIFO, device) is refused rather than renamed
over, and a second run writing an output that a running one writes is refused rather than mixed into it."""

from __future__ import annotations

import os
import stat
from pathlib import Path

import pytest

from test_cli import one_error_line
from test_resume import cli, expected, held, make_input

FOLD = ["fold", "--algorithm", "nussinov", "--threads", "1", "--on-invalid", "skip", "-q"]


def _leftovers(workdir: Path) -> list[str]:
    return sorted(p.name for p in workdir.iterdir() if p.name.endswith((".journal", ".part")))


@pytest.mark.parametrize("outputs", [["in.fa"], ["./in.fa"], ["link.fa"], ["out.db", "in.fa"],
                                     ["hard.fa"], ["other.db"]])
def test_an_output_that_is_an_input_is_refused(tmp_path, outputs):
    make_input(tmp_path / "in.fa")
    original = (tmp_path / "in.fa").read_bytes()
    (tmp_path / "link.fa").symlink_to("in.fa")
    os.link(tmp_path / "in.fa", tmp_path / "hard.fa")
    # the rejected list beside the first output is an input too: other.db.rejected.tsv is in.fa by a hard link
    os.link(tmp_path / "in.fa", tmp_path / "other.db.rejected.tsv")
    proc = cli(FOLD + ["in.fa"] + [x for o in outputs for x in ("-o", o)], tmp_path)
    assert proc.returncode == 2
    line = one_error_line(proc)
    assert "is the input" in line and "in.fa" in line
    assert (tmp_path / "in.fa").read_bytes() == original
    assert _leftovers(tmp_path) == []


def test_an_output_beside_its_input_is_folded(tmp_path):
    """The check does not refuse what it should not: outputs next to the input, one of them existing already."""
    make_input(tmp_path / "in.fa")
    (tmp_path / "out.db").write_text("old results\n")
    proc = cli(FOLD + ["in.fa", "-o", "out.db"], tmp_path)
    assert proc.returncode == 0, proc.stderr
    assert (tmp_path / "out.db").read_bytes() == expected(tmp_path / "in.fa", "db", "nussinov")


@pytest.mark.skipif(not hasattr(os, "mkfifo"), reason="no FIFOs here")
def test_a_fifo_output_is_refused_and_stays_a_fifo(tmp_path):
    make_input(tmp_path / "in.fa")
    os.mkfifo(tmp_path / "pipe")
    proc = cli(FOLD + ["in.fa", "-o", "pipe"], tmp_path)
    assert proc.returncode == 2
    assert "FIFO" in one_error_line(proc)
    assert stat.S_ISFIFO(os.stat(tmp_path / "pipe").st_mode)
    assert _leftovers(tmp_path) == []


@pytest.mark.skipif(not hasattr(os, "geteuid") or os.geteuid() != 0, reason="making a device node needs root")
def test_a_device_node_output_is_refused_and_stays_a_device(tmp_path):
    make_input(tmp_path / "in.fa")
    node = tmp_path / "null"
    os.mknod(node, stat.S_IFCHR | 0o666, os.makedev(1, 3))         # what /dev/null is
    proc = cli(FOLD + ["in.fa", "-o", str(node)], tmp_path)
    assert proc.returncode == 2
    assert "a device" in one_error_line(proc)
    assert stat.S_ISCHR(os.stat(node).st_mode)


def test_a_second_run_on_a_shared_output_is_refused(tmp_path):
    """Run 1 writes a.db and shared.tsv and is held mid-way; run 2 writes b.db and shared.tsv: refused, and
    run 1, run again to its end, writes shared.tsv as one uninterrupted run does."""
    make_input(tmp_path / "in.fa")
    first = FOLD + ["in.fa", "-o", "a.db", "-o", "shared.tsv"]
    with held(first, tmp_path, "fold:1"):
        second = cli(FOLD + ["in.fa", "-o", "b.db", "-o", "shared.tsv"], tmp_path)
        assert second.returncode == 2
        assert "another rnapipe run is writing the output shared.tsv" in one_error_line(second)
        # the refused run leaves run 1's files alone, and takes its own away
        assert (tmp_path / "shared.tsv.part").exists() and (tmp_path / "a.db.part").exists()
        assert not (tmp_path / "b.db.part").exists() and not (tmp_path / "b.db.journal").exists()
    again = cli(first, tmp_path)
    assert again.returncode == 0, again.stderr
    assert (tmp_path / "shared.tsv").read_bytes() == expected(tmp_path / "in.fa", "tsv", "nussinov")
    assert (tmp_path / "a.db").read_bytes() == expected(tmp_path / "in.fa", "db", "nussinov")
