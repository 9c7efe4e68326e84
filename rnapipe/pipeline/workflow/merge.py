"""The workflow's merge stage: the fold jobs' outputs of one input put back in input order, in every format.

Each fold job writes its shards' records in db format (``>id``, sequence, ``structure (score)``), shard
after shard in the order of its list. The manifest of the prepared input gives each record's bin in input
order; the shards of a bin hold its records in turn. So the merge reads, for every bin, a cursor that walks
that bin's shards in the job outputs, and takes from it as many records as the manifest asks for, a block of
records at a time; each block is then written to every output as ``rnapipe fold`` writes a chunk
(:func:`..output.sinks.chunk_bytes`), so the outputs are byte for byte those of one ``rnapipe fold`` of the input.
Memory holds one block and one buffered reader per bin.

A fold job run with ``on_invalid='skip'`` leaves out the records whose hard constraints leave no structure (they
can be found only by folding) and lists them beside its fold (``OUTPUT.fold.rejected.tsv``, indices counted over
the job's shards). The merge skips them where the manifest has them and adds them, at their index in the input,
to the prepared rejected list: the list is then the one ``rnapipe fold --on-invalid skip`` of the input writes.
"""

from __future__ import annotations

import os
import shutil

import numpy as np

from ...io.ensemble import JOB_LINES, EnsembleChunk, read_job_values
from ...io.ensemble import header as ensemble_header
from ...io.formats import REJECTED_HEADER, _field, header
from ...io.idtext import ID_ERRORS
from ...io.writers import atomic_output, rejected_path
from ..output.sinks import Sink, chunk_bytes, fsync_directory
from .partition import read_plan
from ..records import Records
from .prepare import read_shards
from ..pause import pause_point

BLOCK = 1 << 16               # records per block
SCAN_BYTES = 1 << 24


class MergeError(Exception):
    pass


def shard_offsets(path: str, records_per_shard: list[int], lines: int = 3) -> list[int]:
    """Byte offset in the db file ``path`` where each of its shards starts (``lines`` lines per record: 3, or
    the pfjob format's 6); checks that the file holds exactly the records the plan gave its job."""
    starts = np.cumsum([0] + records_per_shard[:-1]) * lines if records_per_shard else np.zeros(0, np.int64)
    want = [int(m) for m in starts]
    out = [0] * len(want)
    seen = 0                               # newlines before the current block
    at = 0                                 # next entry of `want` to find
    while at < len(want) and want[at] == 0:
        at += 1
    base = 0
    with open(path, "rb") as handle:
        while True:
            buf = handle.read(SCAN_BYTES)
            if not buf:
                break
            nl = np.flatnonzero(np.frombuffer(buf, dtype=np.uint8) == 10)
            while at < len(want) and want[at] - 1 < seen + len(nl):
                out[at] = base + int(nl[want[at] - 1 - seen]) + 1
                at += 1
            seen += len(nl)
            base += len(buf)
    total = lines * sum(records_per_shard)
    if seen != total:
        raise MergeError(f"{path} holds {seen // lines} records, its job was given {total // lines}: fold it again "
                         "(remove it and rerun)")
    return out


class Skipped:
    """A record its fold job left out (no structure under its hard constraints): its id and the reason."""

    def __init__(self, record_id: str, reason: str):
        self.id = record_id
        self.reason = reason


class _Cursor:
    """The records of one bin, shard after shard, from the job outputs."""

    def __init__(self, pieces: list[tuple[str, int, int, dict]], partition: bool = False):
        self.partition = partition    # the pfjob format: three more lines a record, the ensemble's
        self.pieces = pieces          # (path, offset, records, {place in the shard: Skipped}) in the bin's order
        self.next = 0
        self.left = 0
        self.place = 0
        self.skipped: dict = {}
        self.handle = None

    def take(self, n: int, ids: list, seqs: list, structures: list, scores: list, extra: list) -> None:
        """The next ``n`` records of the bin; a record its job left out comes as a :class:`Skipped` id. In the
        pfjob format each record's ensemble (rnapipe.io.ensemble.Ensemble) goes to ``extra``."""
        while n:
            if not self.left:
                if self.handle is not None:
                    self.handle.close()
                if self.next >= len(self.pieces):
                    raise MergeError("the manifest asks for more records of a length range than its shards hold")
                path, offset, self.left, self.skipped = self.pieces[self.next]
                self.next += 1
                self.place = 0
                self.handle = open(path, "rb", buffering=1 << 20)
                self.handle.seek(offset)
            readline = self.handle.readline
            k = min(n, self.left)
            for _ in range(k):
                gone = self.skipped.get(self.place) if self.skipped else None
                self.place += 1
                if gone is not None:
                    ids.append(gone)
                    seqs.append(b"")
                    structures.append(b"")
                    scores.append(b"0")
                    if self.partition:
                        extra.append(None)
                    continue
                ids.append(readline()[1:-1])          # the whole header line
                seqs.append(readline()[:-1])
                line = readline()
                cut = line.index(b" ")
                structures.append(line[:cut])
                scores.append(line[cut + 1:].strip()[1:-1].strip())
                if self.partition:
                    extra.append(read_job_values(readline(), readline(), readline()))
            self.left -= k
            n -= k

    def close(self) -> None:
        if self.handle is not None:
            self.handle.close()
            self.handle = None


def merge(prepared: str, plan_dir: str, fold_dir: str, outputs: list[tuple[str, str]], algorithm: str,
          rejected_out: str | None = None, ensemble=None) -> int:
    """Write ``outputs`` ((path, format) pairs) of the prepared input from its fold jobs' db outputs
    (``fold_dir/{job}.db``; with ``ensemble``, the partition function's settings
    (rnapipe.pipeline.ensemble.request.Settings), in the pfjob format); write the prepared rejected list, with the
    records the fold jobs left out, to ``rejected_out``. Returns the records of the manifest."""
    cursors = _bin_cursors(prepared, plan_dir, fold_dir, ensemble is not None)
    sinks = [Sink(path, fmt, compressed=False) for path, fmt in outputs]
    total = 0
    skipped: list[tuple[int, Skipped]] = []               # (manifest position, record) left out by a fold job
    try:
        for sink in sinks:
            sink.open(None, header(sink.fmt) if ensemble is None else ensemble_header(sink.fmt))
        with open(os.path.join(prepared, "manifest.bin"), "rb") as manifest:
            while True:
                block = np.frombuffer(manifest.read(BLOCK), dtype=np.uint8)
                if not len(block):
                    break
                skipped += _write_block(block, cursors, sinks, algorithm, total,
                                        ensemble.mea if ensemble is not None else None)
                total += len(block)
                pause_point("merge:block")
        for b, cursor in cursors.items():
            if cursor.left or cursor.next < len(cursor.pieces):
                raise MergeError(f"the shards of length range {b} hold more records than the manifest lists")
        for sink in sinks:
            sink.sync()
        if rejected_out is not None and not skipped:
            with (open(os.path.join(prepared, "rejected.tsv"), "rb") as source,
                  atomic_output(rejected_out, binary=True) as target):
                shutil.copyfileobj(source, target)
        elif rejected_out is not None:
            with atomic_output(rejected_out, binary=True) as target:
                target.write(_rejected_list(prepared, skipped).encode("utf-8", ID_ERRORS))
        for sink in sinks:
            sink.finish()
        if sinks:
            fsync_directory(sinks[0].path)
    except BaseException:
        for sink in sinks:
            if sink.held:
                sink.discard()
        raise
    finally:
        for cursor in cursors.values():
            cursor.close()
    return total


def _bin_cursors(prepared: str, plan_dir: str, fold_dir: str, partition: bool = False) -> dict[int, _Cursor]:
    """A cursor per bin over its shards' records, in input order, in the job outputs (``partition``: in the
    pfjob format)."""
    if not os.path.exists(os.path.join(prepared, "done")):
        raise MergeError(f"'{prepared}' is not a prepared input (rnapipe prepare makes one)")
    if not os.path.exists(os.path.join(plan_dir, "plan.tsv")):
        raise MergeError(f"'{plan_dir}' holds no plan (plan.tsv): rnapipe partition makes one")
    shards = read_shards(prepared)
    where = read_plan(plan_dir)
    missing_folds(where, plan_dir, fold_dir)
    located = _locate(shards, where, fold_dir, JOB_LINES if partition else 3)
    bins: dict[int, list] = {}
    for s in shards:                                      # a bin's shards in input order
        bins.setdefault(s.bin, []).append((*located[s.number][:2], s.records, located[s.number][2]))
    return {b: _Cursor(pieces, partition) for b, pieces in bins.items()}


def job_skipped(fold_output: str) -> dict[int, Skipped]:
    """The records a fold job left out (its fold's rejected list; none where it has no list): index over the
    job's shards -> :class:`Skipped`."""
    from .fold_job import fold_path               # here: fold_job brings the fold's run module (30 ms of start)

    out = {}
    try:
        handle = open(rejected_path(fold_path(fold_output)), encoding="utf-8", errors=ID_ERRORS)
    except FileNotFoundError:
        return out
    with handle:
        next(handle, None)
        for line in handle:
            index, record_id, _, reason = line.rstrip("\n").split("\t", 3)
            out[int(index)] = Skipped(record_id, reason)
    return out


def _rejected_list(prepared: str, skipped: list[tuple[int, Skipped]]) -> str:
    """The prepared rejected list with the records the fold jobs left out, all in input order, as ``rnapipe fold``
    lists them (the valid records' manifest positions turned into input indices)."""
    with open(os.path.join(prepared, "rejected.tsv"), encoding="utf-8", errors=ID_ERRORS) as handle:
        rows = handle.read().splitlines(keepends=True)[1:]
    with open(os.path.join(prepared, "done"), encoding="utf-8", errors=ID_ERRORS) as handle:
        done = dict(line.rstrip("\n").split("\t", 1) for line in handle if "\t" in line)
    name = done.get("input", "")
    keyed = [(int(row.split("\t", 1)[0]) if not row.startswith("-") else -1, row) for row in rows]
    before = np.array(sorted(index for index, _ in keyed if index >= 0), dtype=np.int64)
    shifted = before - np.arange(len(before))             # valid records ahead of each prepared rejection
    for position, record in skipped:
        index = position + int(np.searchsorted(shifted, position, side="right"))
        keyed.append((index, "\t".join((str(index), _field(record.id), name, _field(record.reason))) + "\n"))
    keyed.sort(key=lambda item: item[0])
    return REJECTED_HEADER + "".join(row for _, row in keyed)


def missing_folds(where: dict[int, tuple[str, int]], plan_dir: str, fold_dir: str) -> None:
    """Raise a MergeError naming the first job of the plan whose output is not in ``fold_dir`` (and how
    many more are missing), with the command that makes it."""
    jobs = sorted({job for job, _ in where.values()})
    missing = [job for job in jobs if not os.path.exists(os.path.join(fold_dir, f"{job}.db"))]
    if missing:
        job = missing[0]
        path = os.path.join(fold_dir, f"{job}.db")
        more = f" (and {len(missing) - 1} more of the {len(jobs)} jobs' outputs)" if len(missing) > 1 else ""
        raise MergeError(f"the fold of job {job} is missing: {path}{more}; 'rnapipe fold-job "
                         f"{os.path.join(plan_dir, job + '.list')} -o {path}' makes it (the workflow's rule fold)")


def _locate(shards: list, where: dict[int, tuple[str, int]], fold_dir: str,
            lines: int = 3) -> dict[int, tuple[str, int]]:
    """Shard number -> (its job's output, the byte offset of its first record there); ``where``: the plan's
    shard number -> (job, place in the job); ``lines``: lines a record."""
    per_job: dict[str, list] = {}
    for s in shards:
        job, place = where[s.number]
        per_job.setdefault(job, []).append((place, s))
    located: dict[int, tuple[str, int, dict]] = {}
    for job, items in per_job.items():
        items.sort(key=lambda item: item[0])
        path = os.path.join(fold_dir, f"{job}.db")
        starts = np.cumsum([0] + [s.records for _, s in items])
        gone: list[dict] = [{} for _ in items]            # per shard: place -> Skipped
        for index, record in job_skipped(path).items():
            k = int(np.searchsorted(starts, index, side="right")) - 1
            if not 0 <= k < len(items):
                raise MergeError(f"{rejected_path(path)} lists record {index}, its job was given {starts[-1]}: "
                                 "fold it again (remove it and rerun)")
            gone[k][index - int(starts[k])] = record
        kept = [s.records - len(g) for (_, s), g in zip(items, gone)]
        for (_, s), offset, g in zip(items, shard_offsets(path, kept, lines), gone):
            located[s.number] = (path, offset, g)
    return located


def _write_block(block: np.ndarray, cursors: dict[int, _Cursor], sinks: list[Sink], algorithm: str,
                 first: int, mea: bool | None = None) -> list[tuple[int, Skipped]]:
    """One block of the manifest (a bin per record, in input order): its records taken from their bins'
    cursors and written to every sink; ``first`` is the manifest position of its first record; ``mea``: None
    for MFE folds, else whether db prints the MEA line (a fold with the partition function). Returns the
    records a fold job left out, with their manifest positions."""
    n = len(block)
    ids, seqs, structures, scores, extra = [None] * n, [None] * n, [None] * n, [None] * n, [None] * n
    for b in np.unique(block).tolist():
        at = np.flatnonzero(block == b).tolist()
        i, s, t, e, x = [], [], [], [], []
        cursors[b].take(len(at), i, s, t, e, x)
        for k, p in enumerate(at):
            ids[p], seqs[p], structures[p], scores[p] = i[k], s[k], t[k], e[k]
            if x:
                extra[p] = x[k]
    skipped = [(first + p, x) for p, x in enumerate(ids) if isinstance(x, Skipped)]
    if skipped:
        keep = [p for p, x in enumerate(ids) if not isinstance(x, Skipped)]
        ids, seqs = [ids[p] for p in keep], [seqs[p] for p in keep]
        structures, scores = [structures[p] for p in keep], [scores[p] for p in keep]
        extra = [extra[p] for p in keep]
        n = len(keep)
        if not n:
            return skipped
    if algorithm == "zuker":
        values = np.array([int(x.replace(b".", b"")) for x in scores], dtype=np.int64)
    else:
        values = np.array([int(x) for x in scores], dtype=np.int64)
    lens = np.fromiter(map(len, seqs), dtype=np.int64, count=n)
    heads = ids
    ids = [head.split(None, 1)[0] for head in heads]          # an id is its header's first word
    id_lens = np.fromiter(map(len, ids), dtype=np.int64, count=n)
    head_lens = np.fromiter(map(len, heads), dtype=np.int64, count=n)
    records = Records(b"\n".join(ids) + b"\n", b"\n".join(seqs) + b"\n", id_lens, lens,
                      np.arange(first, first + n, dtype=np.int64), None, b"\n".join(heads) + b"\n", head_lens)
    structures_text = b"\n".join(structures) + b"\n"
    ensembles = EnsembleChunk(extra, mea) if mea is not None else None
    made: dict = {}
    for sink in sinks:
        if sink.fmt not in made:
            made[sink.fmt] = chunk_bytes(sink.fmt, algorithm, records, structures_text, values, ensembles)
        sink.write(made[sink.fmt])
    return skipped
