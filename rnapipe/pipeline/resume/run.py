"""``rnapipe fold``'s run: FASTA files in, one fold, every output written a chunk at a time, a journal so
that a killed run resumes (see :mod:`.journal`), progress on a stream the caller gives.
"""

from __future__ import annotations

import contextlib
import hashlib
import os
import queue
import threading
import time
from concurrent.futures import ThreadPoolExecutor
from dataclasses import dataclass, field
from typing import Callable, TextIO

from ... import config
from ...constraints import shape_identity
from ..._version import __version__
from ...model import PAIRING_DEFAULTS, Model
from ...io.ensemble import header as ensemble_header
from ...io.formats import REJECTED_HEADER, header, rejected_rows
from ...io.idtext import ID_ERRORS
from ...io.writers import rejected_path
from ..folding import chunks as _chunks
from .. import timeline
from .journal import InputChanged, Journal, journal_path
from ..output.sinks import Sink, chunk_bytes, fsync_directory
from .progress import Progress
from ..input.reader import PARSE_THREADS, FastaReader
from ..folding.stream import DEPTH, fold_chunks, without_empty_solutions
from ..folding.folder import Folder
from ..folding.pace import Pace
from ..pause import pause_point

JOURNAL_VERSION = 1
# Part files and the journal are flushed to the disk at most this often (and at the end): a killed process
# loses nothing (what it wrote is with the OS); a machine that goes down loses at most this much work.
SYNC_SECONDS = 10.0
RENDER_THREADS = PARSE_THREADS         # chunks formatted at once (the compiled writer runs without the GIL)


@dataclass
class Outcome:
    folded: int = 0
    rejected_records: int = 0
    rejected_files: int = 0
    resumed_chunks: int = 0
    folded_chunks: int = 0
    rejected_path: str | None = None
    synced: float = field(default_factory=time.monotonic)


def _file_digest(path) -> str | None:
    if path is None:
        return None
    with open(path, "rb") as handle:
        return hashlib.sha256(handle.read()).hexdigest()


def _with_defaults(algorithm: str, options: dict) -> dict:
    """The engine options with the model's defaults filled in, so that a rerun that spells out a default
    (``temperature=37``) is the same run as one that left it out. The pairing rules appear only when on
    (``no_lp``, ``max_bp_span``, ...): a run with all of them off has the header it had before they existed."""
    full = dict(options)
    if algorithm == "zuker":
        model = Model.from_options(options)
        if model.params is not None:
            model.tables()                  # the parameter file read and checked (one line if it cannot be)
        full.update(temperature=model.temperature, dangles=model.dangles, params=model.params)
        for name in PAIRING_DEFAULTS:
            full.pop(name, None)
        full.update(model.pairing())
        if model.enforce_constraint:
            full["enforce_constraint"] = True
        else:
            full.pop("enforce_constraint", None)
    elif algorithm == "nussinov":
        full.setdefault("min_loop", config.NUSSINOV_MIN_LOOP)
    return full


def journal_header(inputs, sinks: list[Sink], algorithm: str, variant: str, on_invalid: str, options: dict,
                   noconv: bool = False, constraints: bool = False, shape=None) -> dict:
    opts = {"algorithm": algorithm, "variant": variant, "on_invalid": on_invalid}
    if noconv:
        opts["noconv"] = True
    if constraints:
        opts["constraint"] = True
    if shape is not None:
        opts["shape"] = shape_identity(shape.path) + ["deigan", shape.slope, shape.intercept]
    for key, value in sorted(_with_defaults(algorithm, options).items()):
        if key == "params" and value is not None:
            opts["params"] = [os.path.abspath(value), _file_digest(value)]
        else:
            opts[key] = value
    return {"journal": JOURNAL_VERSION, "rnapipe": __version__,
            "inputs": [os.path.abspath(p) if p != "-" else "-" for p in inputs],
            "options": opts,
            "outputs": [[os.path.abspath(s.path), s.fmt, s.gz] for s in sinks],
            "chunking": list(_chunks.limits())}


def run(inputs, sinks: list[Sink], folder: Folder, on_invalid: str = "error", restart: bool = False,
        say: Callable[[str], None] | None = None, progress_to: TextIO | None = None,
        report_skipped=None, noconv: bool = False, constraints: bool = False, shape=None) -> Outcome:
    """Fold ``inputs`` into every sink. ``say`` takes the notes for the user (none when None); the progress
    line is drawn on ``progress_to`` (no progress when None). Raises what the reader or the engine raises
    (:class:`.journal.ResumeRefused` where the journal cannot be resumed); the journal and the parts of the
    chunks finished so far stay for a rerun (unless no chunk was finished). ``noconv``: the outputs print T as
    the input gives it (RNAfold's --noconv), not as U. ``constraints``: each record has its constraint line
    (RNAfold's -C), folded on the CPU engine; ``shape``: SHAPE data (rnapipe.constraints.ShapeData) for the
    records, also on the CPU engine."""
    started = timeline.since_start()
    files = [s for s in sinks if not s.stdout]
    side = Sink(str(rejected_path(files[0].path)), "rejected", compressed=False) if files else None
    journal = _open_journal(inputs, sinks, files, folder, on_invalid, restart, say, noconv, constraints, shape)
    outcome = Outcome(rejected_path=str(side.path) if side else None)
    if journal is not None and journal.entries and not journal.complete:
        _truncate_journal_to_parts(journal, files, side)
    done = len(journal.entries) if journal else 0
    last = journal.entries[-1] if done else None
    try:
        if journal is not None and journal.complete:
            _finish(journal, files, side, last)
            _fill_counts(outcome, last, done)
            return outcome
        _open_parts(sinks, side, last, partition=getattr(folder, "ensemble", None) is not None)
        _fill_counts(outcome, last, done)
        progress = None if progress_to is None else Progress(progress_to, paths=inputs)
        reader = FastaReader(inputs, on_invalid, folder.length_check(), scratch=None, noconv=noconv,
                             constraints=constraints, shape=shape)
        pace = Pace.of(folder)
        ends = [_chunks.end_of(e["digest"]) for e in journal.entries] if journal else []
        failed: list[BaseException] = []             # the writer's error: no further engine call after it
        stream = fold_chunks(_chunks.chunked(reader, pace=pace, ends=ends), folder, done, _digest_check(journal),
                             reader.file_of, pace, lambda: bool(failed))
        try:
            _write_all(stream, sinks, side, journal, outcome, progress, report_skipped, folder.algorithm, failed,
                       lambda c, r: without_empty_solutions(c, r, on_invalid, reader.file_of))
        finally:
            if progress is not None:
                progress.stop()
        if progress is not None:
            progress.close()
        with timeline.timed("finish"):
            _complete(journal, sinks, files, side, outcome)
        timeline.write(records=outcome.folded, start_of_run=started)
        return outcome
    except BaseException:
        _keep_for_rerun(journal, sinks, files, side)
        raise


def _open_journal(inputs, sinks: list[Sink], files: list[Sink], folder: Folder, on_invalid: str, restart: bool,
                  say: Callable[[str], None] | None, noconv: bool = False,
                  constraints: bool = False, shape=None) -> Journal | None:
    """The run's journal beside the first output, or None where an output is standard output (it cannot
    be resumed). A journal of a complete run whose outputs are gone is started afresh: nothing is left to
    finish."""
    if not files or len(files) != len(sinks):
        return None
    head = journal_header(inputs, sinks, folder.algorithm, folder.variant, on_invalid, folder.options, noconv,
                          constraints, shape)
    journal = Journal(journal_path(files[0].path), head, restart)
    if journal.complete and any(not os.path.exists(s.part) and not os.path.exists(s.path) for s in files):
        # the run was done but an output went (removed before the journal was)
        if say is not None:
            say(f"{journal.path} says the run was complete, but its outputs are gone: folding everything again")
        journal.close()
        journal = Journal(journal_path(files[0].path), head, True)
    return journal


def _truncate_journal_to_parts(journal: Journal, files: list[Sink], side: Sink | None) -> None:
    """Truncate the journal to its chunks whose bytes are all in the part files (after a crash of the
    machine the last lines may be ahead of the data)."""
    def size(path) -> int:
        try:
            return os.path.getsize(path)
        except OSError:
            return -1

    have = [size(s.part) for s in files]
    side_have = size(side.part) if side is not None else 0
    good = 0
    for k, entry in enumerate(journal.entries):
        if all(0 <= want <= got for want, got in zip(entry["sizes"], have)) and entry["rejected_size"] <= side_have:
            good = k + 1
        else:
            break
    if good < len(journal.entries):
        journal.keep(good)


def _open_parts(sinks: list[Sink], side: Sink | None, last: dict | None, partition: bool = False) -> None:
    """Every part file opened: cut back to the sizes of the journal's last chunk ``last``, or new (with the
    partition function's headers where ``partition``)."""
    for k, sink in enumerate(sinks):
        sink.open(last["sizes"][k] if last else None, ensemble_header(sink.fmt) if partition else header(sink.fmt))
    if side is not None:
        side.open(last["rejected_size"] if last else None, REJECTED_HEADER)


def _digest_check(journal: Journal | None) -> Callable:
    """The check of each chunk a resumed run reads again: it must read as the journal recorded it."""
    digests = {e["chunk"]: e["digest"] for e in journal.entries} if journal else {}

    def check(chunk) -> None:
        if digests.get(chunk.number) != chunk.digest():
            raise InputChanged(journal.path, chunk.end + 1)

    return check


def _complete(journal: Journal | None, sinks: list[Sink], files: list[Sink], side: Sink | None,
              outcome: Outcome) -> None:
    """Every chunk written: the parts flushed to the disk, the journal's last line, the outputs in place."""
    for sink in sinks:
        sink.sync()
    if side is not None:
        side.sync()
    entry = _entry(-1, "", sinks, side, outcome)
    if journal is not None:
        entry = journal.entries[-1] if journal.entries else entry
        journal.finish(entry)
    _finish(journal, files, side, entry)


def _keep_for_rerun(journal: Journal | None, sinks: list[Sink], files: list[Sink], side: Sink | None) -> None:
    """A run that stops: the journal and the parts stay for a rerun to go on from; with no chunk finished
    (nothing to resume) nothing stays."""
    for sink in sinks:
        sink.close()
    if side is not None:
        side.close()
    if journal is None or not journal.entries:
        for sink in files:
            if sink.held:                       # not a part another run holds (a refused second run)
                sink.discard()
        if side is not None and side.held:
            side.discard()
        if journal is not None:
            journal.remove()
    else:
        journal.close()


def _fill_counts(outcome: Outcome, last: dict | None, done: int) -> None:
    if last:
        outcome.folded = last["folded"]
        outcome.rejected_records = last["rejected"]
        outcome.rejected_files = last["rejected_files"]
    outcome.resumed_chunks = done


def _entry(number: int, digest: str, sinks, side, outcome: Outcome) -> dict:
    return {"chunk": number, "digest": digest, "sizes": [s.size() for s in sinks],
            "rejected_size": side.size() if side else 0, "folded": outcome.folded,
            "rejected": outcome.rejected_records, "rejected_files": outcome.rejected_files}


def _write_all(stream, sinks, side, journal, outcome: Outcome, progress, report_skipped, algorithm: str,
               failed: list, screen=None) -> None:
    """Write the folded chunks in order on a thread of their own; their text is made (formatted and, for a
    .gz output, compressed) on a pool of threads, several chunks at once, while the next ones fold. The
    writer's error goes into ``failed`` (which the stream reads to stop folding) and is raised here.
    ``screen(chunk, results)``: the chunk and results to write (records left out after folding)."""
    q: queue.Queue = queue.Queue(maxsize=DEPTH + RENDER_THREADS)   # chunks whose text is under way
    pool = ThreadPoolExecutor(RENDER_THREADS, thread_name_prefix="rnapipe-render")

    def writer() -> None:
        try:
            while True:
                with timeline.timed("wait for a folded chunk"):
                    item = q.get()
                    if item is not None:
                        texts, digest = item[1].result()
                if item is None:
                    return
                chunk = item[0]
                with timeline.timed("write"):
                    _write_chunk(chunk, texts, digest, sinks, side, journal, outcome, report_skipped)
                if progress is not None:
                    progress.add(len(chunk), chunk.nucleotides, chunk.cost)
        except BaseException as err:
            failed.append(err)
            while q.get() is not None:    # let the producer finish putting
                pass

    thread = threading.Thread(target=writer, name="rnapipe-writer", daemon=True)
    thread.start()
    try:
        for chunk, results in stream:
            if results is None:
                if progress is not None:
                    progress.skipped(chunk.cost)
                continue
            if failed:
                break
            if screen is not None:
                chunk, results = screen(chunk, results)
            future = pool.submit(_texts, chunk, results, sinks, algorithm, journal is not None)
            # what waits for the writer is the chunk's text: its records and results go once it is made
            q.put((_Done.of(chunk), future))
            del chunk, results
    finally:
        q.put(None)
        thread.join()
        pool.shutdown(wait=True, cancel_futures=True)
    if failed:
        raise failed[0]


@dataclass
class _Done:
    """What the writer needs of a chunk besides its text."""

    number: int
    rejected: list
    records: int
    nucleotides: int
    cost: float

    @classmethod
    def of(cls, chunk) -> "_Done":
        return cls(chunk.number, chunk.rejected, len(chunk), chunk.nucleotides, chunk.cost)

    def __len__(self) -> int:
        return self.records


def _texts(chunk, results, sinks, algorithm: str, digest: bool) -> tuple[list, str]:
    """The bytes of one chunk for each sink (one text per format, compressed for a .gz sink), and the chunk's
    digest for the journal (if ``digest``)."""
    scores, structures = results.scores, results.structures
    made: dict = {}
    out = []
    for sink in sinks:
        if sink.fmt not in made:
            with timeline.timed("render"):
                made[sink.fmt] = chunk_bytes(sink.fmt, algorithm, chunk.records, structures, scores,
                                             results.ensembles)
        key = (sink.fmt, sink.gz)
        if key not in made:
            made[key] = sink.encode(made[sink.fmt])
        out.append(made[key])
    return out, chunk.digest() if digest else ""


def _write_chunk(chunk, texts: list, digest: str, sinks, side, journal, outcome: Outcome, report_skipped) -> None:
    with timeline.timed("disk write"):
        for sink, data in zip(sinks, texts):
            sink.write(data)
    if chunk.rejected:
        if side is not None:
            side.write(rejected_rows(chunk.rejected).encode("utf-8", ID_ERRORS))
        if report_skipped is not None:
            report_skipped(chunk.rejected)
        files = sum(1 for r in chunk.rejected if r.id is None)
        outcome.rejected_files += files
        outcome.rejected_records += len(chunk.rejected) - files
    outcome.folded += len(chunk)
    outcome.folded_chunks += 1
    if journal is not None:
        now = time.monotonic()
        durable = now - outcome.synced >= SYNC_SECONDS
        if durable:
            with timeline.timed("sync"):
                for sink in sinks:
                    sink.sync()
                if side is not None:
                    side.sync()
            outcome.synced = now
        journal.record(_entry(chunk.number, digest, sinks, side, outcome), durable)
    pause_point(f"written:{chunk.number}")


def _finish(journal: Journal | None, files: list[Sink], side: Sink | None, entry: dict | None) -> None:
    """Every chunk is done (the journal says so): parts onto the outputs, then the journal goes."""
    for k, sink in enumerate(files):
        if k:
            pause_point(f"rename:{k}")
        sink.finish()
    if side is not None:
        rejected = entry is not None and (entry["rejected"] or entry["rejected_files"])
        if rejected:
            side.finish()
        else:
            side.discard()
            with contextlib.suppress(FileNotFoundError):
                os.unlink(side.path)
    if files:
        fsync_directory(files[0].path)
    if journal is not None:
        journal.remove()

