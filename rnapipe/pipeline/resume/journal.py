"""The journal of a ``rnapipe fold`` run: what is finished, so that a killed run goes on where it stopped.

It lies beside the first output (``OUTPUT.journal``), next to a part file per output (``OUTPUT.part``,
and ``OUTPUT.rejected.tsv.part``). Its first line says what the run is (inputs, options, outputs, chunk
limits); after each finished chunk, whose bytes are already on disk in every part file, one line records
the chunk's number, its digest (of its records, beginning with where the chunk ends: the input is unchanged
up to there if the digests agree) and the size of every part file. A rerun of the same command truncates the
parts to the last recorded sizes, reads the input again up to there, cut where the journal's chunks end
(checking the digests, folding nothing), and goes on. When every
chunk is done a last line says so, the parts are renamed onto the outputs, and the journal is removed.
JSON, one object per line; a line cut short by a kill is ignored.

A journal that cannot be resumed raises a :class:`ResumeRefused` carrying the facts (which journal, what
differs); the front door says how to start over.
"""

from __future__ import annotations

import contextlib
import json
import os

from ...errors import UsageError

try:
    import fcntl
except ImportError:                      # not POSIX: no lock, the rest works
    fcntl = None

SUFFIX = ".journal"
PART = ".part"


def journal_path(output: str) -> str:
    return output + SUFFIX


def part_path(output: str) -> str:
    return output + PART


class ResumeRefused(UsageError):
    """The run cannot go on from the journal at ``path``; discarding the journal (a restart) would fold
    everything again."""

    def __init__(self, path: str, message: str):
        self.path = path
        super().__init__(message)


class NotAJournal(ResumeRefused):
    """``path`` is not a journal this version of rnapipe reads."""

    def __init__(self, path: str):
        super().__init__(path, f"{path} is not a journal this version of rnapipe can resume")


class OtherRun(ResumeRefused):
    """The journal belongs to a run whose ``key`` (inputs, options or outputs) differs from this
    one's; ``differences`` says how."""

    def __init__(self, path: str, key: str, differences: str):
        self.key = key
        self.differences = differences
        super().__init__(path, f"{path} belongs to an interrupted run with other {key} ({differences})")


class InputChanged(ResumeRefused):
    """A chunk the journal records as finished reads differently now: the input differs before record
    ``record`` (1-based)."""

    def __init__(self, path: str, record: int):
        self.record = record
        super().__init__(path, f"the input changed since the interrupted run (it differs before record {record})")


def _fsync(handle) -> None:
    handle.flush()
    os.fsync(handle.fileno())


class Journal:
    """An open journal (locked against a second run on the same outputs)."""

    def __init__(self, path: str, header: dict, restart: bool):
        self.path = path
        self.header = header
        self.entries: list[dict] = []
        self.complete = False
        self._handle = open(path, "a+b")
        if fcntl is not None:
            try:
                fcntl.flock(self._handle.fileno(), fcntl.LOCK_EX | fcntl.LOCK_NB)
            except OSError:
                self._handle.close()
                raise UsageError(f"another rnapipe run is writing the same output (its journal {path} is "
                                 "locked); wait for it or choose another output") from None
        self._handle.seek(0)
        data = self._handle.read()
        if restart or not data:
            self._start()
            return
        try:
            self._resume(data)
        except ResumeRefused:
            self._handle.close()                    # the lock goes with it: the journal stays as it was
            raise

    def _resume(self, data: bytes) -> None:
        """Read the finished chunks of the journal's text ``data``, which must be this run's (else
        :class:`ResumeRefused`), and cut off a last line a kill left short."""
        good = 0
        lines = []
        for line in data.split(b"\n")[:-1]:          # the last piece is empty or a line cut short
            try:
                lines.append(json.loads(line))
            except ValueError:
                break
            good += len(line) + 1
        if not lines or lines[0].get("journal") != self.header["journal"]:
            raise NotAJournal(self.path)
        old = lines[0]
        for key in ("inputs", "options", "outputs"):
            if old.get(key) != self.header.get(key):
                raise OtherRun(self.path, key, _differ(old.get(key), self.header.get(key)))
        for entry in lines[1:]:
            if entry.get("complete"):
                self.complete = True
            elif "chunk" in entry:
                self.entries.append(entry)
        self._handle.truncate(good)
        self._handle.seek(0, os.SEEK_END)

    def _start(self) -> None:
        self._handle.seek(0)
        self._handle.truncate(0)
        self._write(self.header)

    def _write(self, obj: dict, durable: bool = True) -> None:
        self._handle.write(json.dumps(obj, separators=(",", ":")).encode() + b"\n")
        if durable:
            _fsync(self._handle)
        else:
            self._handle.flush()

    def record(self, entry: dict, durable: bool = True) -> None:
        """Add a finished chunk's line. Written to the OS at once (a killed process loses nothing);
        ``durable`` also flushes it to the disk (the parts must be flushed before)."""
        self.entries.append(entry)
        self._write(entry, durable)

    def keep(self, count: int) -> None:
        """Forget all but the first ``count`` chunk lines (a crash left parts shorter than the rest say)."""
        del self.entries[count:]
        self._handle.seek(0)
        self._handle.truncate(0)
        self._write(self.header, durable=False)
        for entry in self.entries:
            self._write(entry, durable=False)
        _fsync(self._handle)

    def finish(self, entry: dict) -> None:
        self._write({"complete": True, **entry})

    def remove(self) -> None:
        self.close()
        with contextlib.suppress(FileNotFoundError):
            os.unlink(self.path)

    def close(self) -> None:
        if not self._handle.closed:
            self._handle.close()


def _differ(old, new) -> str:
    if isinstance(old, dict) and isinstance(new, dict):
        keys = [k for k in sorted(set(old) | set(new)) if old.get(k) != new.get(k)]
        return ", ".join(f"{k}: {old.get(k)!r} then, {new.get(k)!r} now" for k in keys)
    return f"{old!r} then, {new!r} now"
