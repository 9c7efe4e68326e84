"""The workflow's prepare stage: one input streamed, checked and cut into shards.

A shard is a FASTA file of valid records of one length range (a *bin*: lengths L with the same
⌊4·log₂ L⌋, ranges about 19 % wide), in input order, closed when it holds ``shard_records`` records or its
predicted work (Σ L³) reaches ``shard_cost``. Beside the shards a prepared directory holds:

- ``shards.tsv``: one row per shard: its number, bin, records, Σ L, Σ L², Σ L³ and shortest and longest
  length (what the partition predicts each device's time from);
- ``manifest.bin``: one byte per valid record, in input order: its bin (the shard follows: the shards of a
  bin take its records in turn), so that the merge can put the folded records back in input order;
- ``rejected.tsv``: the records left out under ``on_invalid='skip'``, as ``rnapipe fold`` lists them;
- ``done``: written last (the counts, and the input's name as ``rnapipe fold`` names it in its lists): the
  directory is complete.

The input is read by the streaming reader of ``rnapipe fold`` (same checks, same messages), so memory
holds a block of records, not the input.
"""

from __future__ import annotations

import contextlib
import os
import shutil
from dataclasses import dataclass

import numpy as np

from ... import config
from ...errors import InputError
from ...io.fasta import _display
from ...io.formats import REJECTED_HEADER, _field, rejected_rows
from ...io.idtext import ID_ERRORS
from ..folding.folder import Folder
from ..input.reader import FastaReader, LengthCheck
from ..pause import pause_point

SHARD_RECORDS = config.SHARD_RECORDS
SHARD_COST = config.SHARD_COST
SHARDS_TSV_COLUMNS = ("shard", "bin", "records", "sum_len", "sum_len2", "sum_len3", "shortest", "longest")


def bin_of(lens: np.ndarray) -> np.ndarray:
    """The bin of each length: ⌊4·log₂ L⌋ (0 for L ≤ 1)."""
    x = np.maximum(np.asarray(lens, dtype=np.float64), 1.0)
    return np.floor(4.0 * np.log2(x)).astype(np.int64)


def bin_range(b: int) -> tuple[int, int]:
    """The lengths of bin ``b``: ``lo <= L < hi``."""
    lo = 1 if b == 0 else int(np.ceil(2.0 ** (b / 4.0)))
    hi = int(np.ceil(2.0 ** ((b + 1) / 4.0)))
    while bin_of(np.array([lo]))[0] < b:        # float edges: the exact first length of the bin
        lo += 1
    while bin_of(np.array([hi]))[0] <= b:
        hi += 1
    return lo, hi


@dataclass
class Shard:
    number: int
    bin: int
    records: int = 0
    sum_len: float = 0.0
    sum_len2: float = 0.0
    sum_len3: float = 0.0
    shortest: int = 0
    longest: int = 0

    def row(self) -> str:
        return "\t".join(str(v) for v in (self.number, self.bin, self.records, int(self.sum_len),
                                             int(self.sum_len2), int(self.sum_len3), self.shortest,
                                             self.longest)) + "\n"


def shard_name(number: int) -> str:
    return f"{number:06d}.fa"


def read_shards(directory: str) -> list[Shard]:
    """The rows of a prepared directory's ``shards.tsv``."""
    out = []
    with open(os.path.join(directory, "shards.tsv")) as handle:
        next(handle)
        for line in handle:
            f = line.rstrip("\n").split("\t")
            out.append(Shard(int(f[0]), int(f[1]), int(f[2]), float(f[3]), float(f[4]), float(f[5]), int(f[6]),
                             int(f[7])))
    return out


class _Open:
    """The shard being filled for one bin."""

    def __init__(self, shard: Shard, path: str):
        self.shard = shard
        self.path = path
        self.handle = open(path, "wb", buffering=1 << 20)


def length_check(algorithm: str, partition: bool = False) -> LengthCheck:
    """The length limit of ``algorithm`` on this host's CPU (``partition``: with the partition function, whose
    matrices are larger): the shards hold what ``rnapipe fold`` would fold here."""
    if partition:
        from ..ensemble.folder import EnsembleFolder

        return EnsembleFolder(1).length_check()
    return Folder(algorithm, None, "cpu", 1).length_check()


def prepare(path: str, directory: str, on_invalid: str = "error", length_check: LengthCheck | None = None,
            shard_records: int = SHARD_RECORDS, shard_cost: float = SHARD_COST, constraints: bool = False) -> dict:
    """Cut ``path`` into shards under ``directory`` (see the module docstring), made as ``directory.part`` and
    renamed when complete (an existing ``directory`` is replaced). Returns counts: records, rejected, shards.
    Raises the reader's errors (a bad record under ``on_invalid='error'``), leaving nothing behind.
    ``constraints``: each record has its constraint line (RNAfold's -C), checked and written to its shard after
    the sequence, where ``rnapipe fold -C`` reads it."""
    final = directory
    directory = f"{final.rstrip(os.sep)}.part"
    with contextlib.suppress(FileNotFoundError):
        shutil.rmtree(directory)
    os.makedirs(os.path.join(directory, "shards"))
    try:
        counts = _cut(path, directory, on_invalid, length_check, shard_records, shard_cost, constraints)
    except BaseException:
        shutil.rmtree(directory, ignore_errors=True)
        raise
    with contextlib.suppress(FileNotFoundError):
        shutil.rmtree(final)
    os.replace(directory, final)
    return counts


def _cut(path: str, directory: str, on_invalid: str, length_check: LengthCheck | None, shard_records: int,
         shard_cost: float, constraints: bool = False) -> dict:
    shards: list[Shard] = []
    open_: dict[int, _Open] = {}
    records = rejected = 0

    def close(b: int) -> None:
        item = open_.pop(b)
        item.handle.close()

    manifest = open(os.path.join(directory, "manifest.bin"), "wb", buffering=1 << 20)
    side = open(os.path.join(directory, "rejected.tsv"), "w", encoding="utf-8", errors=ID_ERRORS)
    try:
        side.write(REJECTED_HEADER)
        for piece in FastaReader([path], on_invalid, length_check, constraints=constraints):
            if piece.rejected:
                side.write(rejected_rows(piece.rejected))
                rejected += sum(1 for r in piece.rejected if r.id is not None)
            recs = piece.records
            n = len(recs)
            if not n:
                continue
            records += n
            lens = recs.lens
            bins = bin_of(lens)
            if int(bins.max()) > 255:
                raise ValueError("a sequence longer than 2^64 nt")   # bins are one byte in the manifest
            manifest.write(bins.astype(np.uint8).tobytes())
            ids = recs.headers()[0].split(b"\n")        # the whole header lines: db output prints them
            if not ids[0]:
                raise InputError("sequences without FASTA headers: the workflow reads FASTA files (rnapipe fold "
                                 "reads sequences one a line)", file=_display(path))
            seqs = recs.printed().split(b"\n")           # as printed: the fold jobs print what they read
            cons = recs.cons_text.split(b"\n") if recs.cons_text is not None else None
            for k in range(n):
                b = int(bins[k])
                item = open_.get(b)
                if item is None:
                    shard = Shard(len(shards), b)
                    shards.append(shard)
                    item = open_[b] = _Open(shard, os.path.join(directory, "shards", shard_name(shard.number)))
                length = int(lens[k])
                item.handle.write(b">" + ids[k] + b"\n" + seqs[k] + b"\n")
                if cons is not None:
                    item.handle.write(cons[k] + b"\n")
                s = item.shard
                s.shortest = length if not s.records else min(s.shortest, length)
                s.longest = max(s.longest, length)
                s.records += 1
                s.sum_len += length
                s.sum_len2 += float(length) ** 2
                s.sum_len3 += float(length) ** 3
                if s.records >= shard_records or s.sum_len3 >= shard_cost:
                    close(b)
                    pause_point("prepare:shard")
    finally:
        for b in list(open_):
            close(b)
        manifest.close()
        side.close()
    with open(os.path.join(directory, "shards.tsv"), "w") as handle:
        handle.write("\t".join(SHARDS_TSV_COLUMNS) + "\n")
        for shard in shards:
            handle.write(shard.row())
    with open(os.path.join(directory, "done"), "w") as handle:
        handle.write(f"records\t{records}\nrejected\t{rejected}\nshards\t{len(shards)}\n"
                     f"input\t{_field(_display(path))}\n")
    return {"records": records, "rejected": rejected, "shards": len(shards)}
