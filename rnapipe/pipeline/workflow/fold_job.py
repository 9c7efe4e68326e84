"""The workflow's fold stage: one job's shards folded by ``rnapipe fold`` into ``OUTPUT.fold``, then linked to
the job's output ``OUTPUT``.

Snakemake removes the output of a job that was cut off before it runs the job again, so rnapipe's finished
file must not be only under that name: the fold writes ``OUTPUT.fold`` (as ``OUTPUT.fold.part``, renamed when
complete) and keeps its journal ``OUTPUT.fold.journal`` meanwhile, so that a job cut off goes on from its
finished chunks; the finished fold is then linked to ``OUTPUT`` (a hard link, a copy where the file system has
none). The steps of a job, :func:`next_step`:

- a job with no shards (its list is empty or missing) writes an empty output;
- a fold that was complete (no journal) and is newer than the list is linked again, folding nothing;
- otherwise the fold runs, resuming from its journal, or afresh where the list is newer than the journal
  (the journal belongs to another plan).
"""

from __future__ import annotations

import contextlib
import enum
import os
import shutil

from ..resume.journal import journal_path

SUFFIX = ".fold"


class Step(enum.Enum):
    NO_SHARDS = "no shards: an empty output"
    LINK = "the fold is complete: link it"
    RESUME = "fold, resuming from the journal if there is one"
    RESTART = "fold afresh: the journal belongs to another plan"


def fold_path(output: str) -> str:
    """Where the fold of the job whose output is ``output`` is written."""
    return output + SUFFIX


def next_step(shard_list: str, output: str) -> Step:
    """What the job with the shard list ``shard_list`` and the output ``output`` does (see the module
    docstring)."""
    fold = fold_path(output)
    journal = journal_path(fold)
    if not _size(shard_list):
        return Step.NO_SHARDS
    if os.path.exists(fold) and not os.path.exists(journal) and _newer(fold, shard_list):
        return Step.LINK
    if os.path.exists(journal) and _newer(shard_list, journal):
        return Step.RESTART
    return Step.RESUME


def read_list(shard_list: str) -> list[str]:
    """The shard files a list names (one per line)."""
    with open(shard_list) as handle:
        return handle.read().split()


def write_empty(output: str) -> None:
    with open(output, "wb"):
        pass


def link_or_copy(source: str, target: str) -> None:
    """``target`` made a hard link of ``source`` (replacing what is there), or a copy where the file system
    has no hard links."""
    with contextlib.suppress(FileNotFoundError):
        os.unlink(target)
    try:
        os.link(source, target)
    except OSError:
        shutil.copyfile(source, target)


def _size(path: str) -> int:
    try:
        return os.path.getsize(path)
    except OSError:
        return 0


def _newer(path: str, than: str) -> bool:
    """``path`` modified after ``than`` (both exist)."""
    return os.stat(path).st_mtime_ns > os.stat(than).st_mtime_ns
