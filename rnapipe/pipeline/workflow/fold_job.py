"""The workflow's fold stage: one job's shards folded by ``rnapipe fold`` into ``OUTPUT.fold``, then linked to
the job's output ``OUTPUT``.

Snakemake removes the output of a job that was cut off before it runs the job again, so rnapipe's finished
file must not be only under that name: the fold writes ``OUTPUT.fold`` (as ``OUTPUT.fold.part``, renamed when
complete) and keeps its journal ``OUTPUT.fold.journal`` meanwhile, so that a job cut off goes on from its
finished chunks; the finished fold is then linked to ``OUTPUT`` (a hard link, a copy where the file system has
none). ``OUTPUT.fold.options``, written as the fold starts, says what it is folded with (algorithm, variant,
the model's options). The steps of a job, :func:`next_step`:

- a job with no shards (its list is empty or missing) writes an empty output;
- a fold that was complete (no journal), is newer than the list and was folded with the job's options is linked
  again, folding nothing (Snakemake runs a job again when its options change: the fold is then made again);
- otherwise the fold runs, resuming from its journal, or afresh where the list is newer than the journal (the
  journal belongs to another plan) or the journal's fold had other options.

Under ``on_invalid='skip'`` a fold leaves out the records whose hard constraints leave no structure and lists
them in ``OUTPUT.fold.rejected.tsv`` (as ``rnapipe fold`` lists them beside its output), which the merge reads.
"""

from __future__ import annotations

import contextlib
import enum
import json
import os
import shutil

from ...io.writers import rejected_path
from ..resume.journal import journal_path
from ..resume.run import _with_defaults

SUFFIX = ".fold"


class Step(enum.Enum):
    NO_SHARDS = "no shards: an empty output"
    LINK = "the fold is complete: link it"
    RESUME = "fold, resuming from the journal if there is one"
    RESTART = "fold afresh: the journal belongs to another plan, or to a fold of other options"


def fold_path(output: str) -> str:
    """Where the fold of the job whose output is ``output`` is written."""
    return output + SUFFIX


def options_path(output: str) -> str:
    """Where the options of the fold of the job whose output is ``output`` are written (see :func:`start`)."""
    return fold_path(output) + ".options"


def options_text(algorithm: str, variant: str | None, options: dict) -> str:
    """What a fold was folded with, as one line of JSON: algorithm, variant and the engine options with the
    model's defaults filled in (a default spelled out is the same fold)."""
    return json.dumps({"algorithm": algorithm, "variant": variant,
                       "options": _with_defaults(algorithm, options)}, sort_keys=True, default=str)


def start(output: str, text: str, step: Step) -> None:
    """Before the fold of ``output`` runs (``step`` RESUME or RESTART): a finished fold that is not resumed (of
    other options, or of another plan) removed, so that no later job can take it for this one's, and ``text``
    (:func:`options_text`) written beside the fold."""
    if step is Step.RESTART or not os.path.exists(journal_path(fold_path(output))):
        discard_fold(output)
    path = options_path(output)
    with open(path + ".part", "w") as handle:
        handle.write(text + "\n")
    os.replace(path + ".part", path)


def _recorded_options(output: str) -> str | None:
    try:
        with open(options_path(output)) as handle:
            return handle.read().strip()
    except OSError:
        return None


def next_step(shard_list: str, output: str, options: str | None = None) -> Step:
    """What the job with the shard list ``shard_list``, the output ``output`` and the options ``options``
    (:func:`options_text`; None: not compared) does (see the module docstring)."""
    fold = fold_path(output)
    journal = journal_path(fold)
    if not _size(shard_list):
        return Step.NO_SHARDS
    recorded = _recorded_options(output)
    if os.path.exists(fold) and not os.path.exists(journal) and _newer(fold, shard_list) \
            and (options is None or recorded == options):
        return Step.LINK
    if os.path.exists(journal) and (_newer(shard_list, journal) or
                                    None not in (options, recorded) and recorded != options):
        return Step.RESTART
    return Step.RESUME


def read_list(shard_list: str) -> list[str]:
    """The shard files a list names (one per line)."""
    with open(shard_list) as handle:
        return handle.read().split()


def discard_fold(output: str) -> None:
    """The fold of ``output`` and its list of records left out removed (where they exist)."""
    for path in (fold_path(output), rejected_path(fold_path(output))):
        with contextlib.suppress(FileNotFoundError):
            os.unlink(path)


def write_empty(output: str) -> None:
    """A job with no shards: an empty output, and no fold of an earlier plan left beside it."""
    discard_fold(output)
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
