"""A full disk is named for what it is: the temporary directory (TMPDIR), where the duplicate-id check keeps the
ids, or the output's directory, where the part files and the journal grow; one line, exit 2, never a traceback
and never the one blamed for the other."""

from __future__ import annotations

import errno
import os
import tempfile

import pytest

from rnapipe.cli.main import main
from rnapipe.errors import EXIT_INPUT
from rnapipe.pipeline.input import ids as ids_module
from rnapipe.pipeline.output import sinks

FOLD = ["fold", "--algorithm", "nussinov", "--threads", "1", "-q"]
needs_dev_full = pytest.mark.skipif(not os.path.exists("/dev/full"), reason="no /dev/full here")


def _fasta(path, count: int) -> None:
    path.write_text("".join(f">record{k:05d}\nGGGAAACCC\n" for k in range(count)))


class _FullTemporaryFiles:
    """tempfile for the id table: the files are made where they would be, but written through /dev/full,
    whose every write the kernel refuses with ENOSPC."""

    def __getattr__(self, name):
        return getattr(tempfile, name)

    @staticmethod
    def mkstemp(*args, **kwargs):
        fd, path = tempfile.mkstemp(*args, **kwargs)
        os.close(fd)
        return os.open("/dev/full", os.O_RDWR), path


def _one_line(capsys) -> str:
    err = capsys.readouterr().err
    assert "Traceback" not in err
    lines = err.splitlines()
    assert len(lines) == 1, err
    return lines[0]


@pytest.fixture
def full_tmpdir(tmp_path, monkeypatch):
    scratch = tmp_path / "scratch"
    scratch.mkdir()
    monkeypatch.setattr(tempfile, "tempdir", str(scratch))
    monkeypatch.setattr(ids_module, "tempfile", _FullTemporaryFiles())
    return scratch


@needs_dev_full
def test_a_full_tmpdir_is_named_as_tmpdir(tmp_path, full_tmpdir, capsys):
    _fasta(tmp_path / "in.fa", 3000)            # ids enough to go past the files' buffers
    (tmp_path / "results").mkdir()
    code = main(FOLD + [str(tmp_path / "in.fa"), "-o", str(tmp_path / "results" / "out.db")])
    line = _one_line(capsys)
    assert code == EXIT_INPUT, line
    assert line.startswith(f"rnapipe: error: no space left on the device in the temporary directory "
                           f"'{full_tmpdir}' (TMPDIR)"), line
    assert "set TMPDIR to a directory" in line
    assert "results" not in line                # the output's disk is not blamed
    assert sorted(p.name for p in (tmp_path / "results").iterdir()) == []
    assert list(full_tmpdir.iterdir()) == []    # the id table's files are removed


@needs_dev_full
def test_a_full_tmpdir_that_is_never_written_to_does_not_stop_a_run(tmp_path, full_tmpdir, capsys):
    """A few ids stay in the files' buffers: the disk is never needed, and the run is folded."""
    _fasta(tmp_path / "in.fa", 5)
    code = main(FOLD + [str(tmp_path / "in.fa"), "-o", str(tmp_path / "out.db")])
    assert code == 0, capsys.readouterr().err
    assert (tmp_path / "out.db").read_text().count(">") == 5
    assert list(full_tmpdir.iterdir()) == []


class _FullOutputDisk:
    """os for the sinks, with every write to a file whose name ends in ``suffix`` refused as a full disk
    refuses it."""

    def __init__(self, suffix: str):
        self.suffix = suffix
        self.fds: set[int] = set()

    def __getattr__(self, name):
        return getattr(os, name)

    def open(self, path, *args, **kwargs):
        fd = os.open(path, *args, **kwargs)
        if os.fspath(path).endswith(self.suffix):
            self.fds.add(fd)
        return fd

    def write(self, fd, data):
        if fd in self.fds:
            raise OSError(errno.ENOSPC, os.strerror(errno.ENOSPC))
        return os.write(fd, data)


@pytest.mark.parametrize("second", [False, True])
def test_a_full_output_disk_names_the_output_directory(tmp_path, monkeypatch, capsys, second):
    _fasta(tmp_path / "in.fa", 20)
    (tmp_path / "results").mkdir()
    (tmp_path / "other").mkdir()
    outputs = ["-o", str(tmp_path / "results" / "out.db")]
    if second:                                  # the output that cannot be written is the second one
        outputs += ["-o", str(tmp_path / "other" / "out.tsv")]
    monkeypatch.setattr(sinks, "os", _FullOutputDisk(".tsv.part" if second else ".db.part"))
    code = main(FOLD + [str(tmp_path / "in.fa")] + outputs)
    line = _one_line(capsys)
    assert code == EXIT_INPUT, line
    where, name = (tmp_path / "other", "out.tsv") if second else (tmp_path / "results", "out.db")
    assert line.startswith(f"rnapipe: error: no space left on the device in the output's directory '{where}' "
                           f"(writing '{where / name}')"), line
    assert "TMPDIR" not in line
    assert not (tmp_path / "results" / "out.db").exists()
