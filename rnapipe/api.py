"""The Python API: ``rnapipe.fold``."""

from __future__ import annotations

import dataclasses
import difflib
import numbers
from collections.abc import Mapping
from dataclasses import dataclass, field
from typing import Callable, Iterable, Iterator, Sequence

import numpy as np

from . import config
from .errors import UsageError
from .io import Record, Rejected
from .io.ensemble import Ensemble
from .model import Model


@dataclass(frozen=True)
class Result:
    """One folded sequence. ``score`` is base pairs (Nussinov) or kcal/mol (Zuker);
    ``score_int`` is the exact integer behind it (pairs, or dcal/mol). Folded with ``partition=True``,
    ``ensemble`` holds the partition function's values (:class:`rnapipe.io.ensemble.Ensemble`: ensemble free
    energy, MFE frequency, diversity, centroid, MEA, the sparse pair probabilities ``bpp`` and the unpaired
    probabilities); else None."""

    id: str
    sequence: str
    structure: str
    score_int: int
    algorithm: str
    index: int
    ensemble: Ensemble | None = field(default=None, compare=False)

    @property
    def score(self) -> float | int:
        return self.score_int / 100.0 if self.algorithm == "zuker" else self.score_int

    @property
    def length(self) -> int:
        return len(self.sequence)


class Results(list):
    """Results in input order; ``rejected`` lists the records skipped under ``on_invalid='skip'``."""

    def __init__(self, items: Iterable[Result] = (), rejected: Iterable[Rejected] = ()):
        super().__init__(items)
        self.rejected: list[Rejected] = list(rejected)



def fold(sequences_or_records, algorithm: str = config.DEFAULT_ALGORITHM, variant: str | None = None,
         device: str = "cpu", threads: int | None = None, on_invalid: str = "error",
         progress: Callable[[int], None] | None = None, gpus: Sequence[int] | None = None,
         constraints: Sequence[str] | str | None = None, shape: Sequence | None = None, shape_method: str = "D",
         partition: bool = False, bpp_threshold: float | None = None, mea_gamma: float | None = None,
         **options) -> Results:
    """Fold sequences and return a :class:`Results` list in input order.

    ``sequences_or_records``: one sequence string, or an iterable of strings, ``(id, sequence)`` pairs,
    :class:`rnapipe.io.Record` or Biopython ``SeqRecord`` objects. Sequences are normalised (upper case,
    T→U) and validated; a bad one raises :class:`rnapipe.errors.InputError` naming it, or with
    ``on_invalid='skip'`` is left out and listed in ``results.rejected``.

    ``gpus`` (with ``device='gpu'``): CUDA device numbers to spread the sequences over, one host thread
    each (default: the current device only).

    ``constraints`` (Zuker, every device): RNAfold's hard-constraint line of each sequence (``-C``: symbols
    ``. x | < > ( )``, one per nucleotide, see :mod:`rnapipe.constraints`), in the order of the sequences;
    ``enforce_constraint=True`` is RNAfold's ``--enforceConstraint``. A bad line is refused as a bad sequence is.
    ``shape`` (Zuker, every device): the SHAPE reactivities of each sequence (one number a nucleotide, a negative
    one or None missing; None for a sequence without data), applied by Deigan's method as RNAfold's ``--shape``
    with ``--shapeMethod`` ``shape_method`` (``"D"``, ``"Dm1.8b-0.6"``: slope and intercept, kcal/mol).

    ``options`` go to the engine: ``min_loop`` (Nussinov); ``temperature``, ``dangles``, ``params`` and the
    pairing rules ``no_lp``, ``no_gu``, ``no_closing_gu`` (True or False) and ``max_bp_span`` (an int, or None
    for no limit), ``enforce_constraint`` (Zuker; see :class:`rnapipe.model.Model`). The pairing rules fold on every
    device.
    ``partition=True`` (Zuker, device 'cpu', 'gpu' or 'auto'; RNAfold's ``-p``): the partition function
    too; each result's ``ensemble`` then holds its values, with the pair probabilities above ``bpp_threshold``
    (default 1e-5) and the MEA structure of ``mea_gamma`` (RNAfold's ``--MEA`` gamma, default 1). Its engine
    takes RNAfold's default pairing rules only, without constraints or SHAPE data: those are refused.
    ``progress(k)``: k more sequences folded; called one call at a time, from the threads that fold.
    """
    rejected: list[Rejected] = []
    results = list(fold_iter(sequences_or_records, algorithm, variant, device, threads, on_invalid, rejected,
                             progress, gpus, constraints=constraints, shape=shape, shape_method=shape_method,
                             partition=partition, bpp_threshold=bpp_threshold, mea_gamma=mea_gamma, **options))
    rejected.sort(key=lambda r: r.index)
    return Results(results, rejected)


def fold_iter(sequences_or_records, algorithm: str = config.DEFAULT_ALGORITHM, variant: str | None = None,
              device: str = "cpu", threads: int | None = None, on_invalid: str = "error",
              rejected: list | None = None, progress: Callable[[int], None] | None = None,
              gpus: Sequence[int] | None = None, constraints: Sequence[str] | str | None = None,
              shape: Sequence | None = None, shape_method: str = "D", partition: bool = False,
              bpp_threshold: float | None = None, mea_gamma: float | None = None, **options) -> Iterator[Result]:
    """Fold a stream of sequences, yielding :class:`Result` objects in input order as chunks finish.

    Takes what :func:`fold` takes, any iterable (a generator, a Biopython ``SeqIO.parse``), and reads it a
    chunk at a time: memory holds the chunks in flight, not the whole input (with ``constraints`` or ``shape``,
    one item for each sequence, the sequences are taken into a list first). Records skipped under
    ``on_invalid='skip'`` are appended to ``rejected`` (a list, if given) as they are met.
    """
    from .pipeline.folding.chunks import chunked
    from .pipeline.input.reader import record_pieces
    from .pipeline.folding.pace import Pace
    from .pipeline.folding.stream import NO_STRUCTURE, fold_chunks, without_empty_solutions
    from .pipeline.choose import folder_for

    if on_invalid not in ("error", "skip"):
        raise ValueError("on_invalid must be 'error' or 'skip'")
    _check_request(sequences_or_records, algorithm, threads, options)
    ensemble = _ensemble_request(partition, algorithm, constraints, shape, options, bpp_threshold,
                                 mea_gamma)
    if constraints is not None:
        sequences_or_records, constraints = _with_constraints(sequences_or_records, constraints, algorithm)
    method = None
    if shape is not None:
        from .constraints import shape_method as parse_method

        method = parse_method(shape_method)
        sequences_or_records, shape = _per_sequence(sequences_or_records, shape, algorithm, "shape",
                                                    "SHAPE reactivities")
    folder = folder_for(algorithm, variant, device, threads, gpus, options, progress, ensemble=ensemble)
    if rejected is None:
        rejected = []
    pieces = record_pieces(sequences_or_records, on_invalid, folder.length_check(), rejected,
                           constraints=constraints, shape=shape, shape_method=method)
    pace = Pace.of(folder)
    for chunk, results in fold_chunks(chunked(pieces, pace=pace), folder, pace=pace):
        if constraints is not None:
            chunk, results = without_empty_solutions(chunk, results, on_invalid)
            rejected.extend(r for r in chunk.rejected if r.reason == NO_STRUCTURE)
        ensembles = results.ensembles.values if results.ensembles is not None else [None] * len(chunk)
        for record_id, sequence, tag, (score, structure), values in zip(chunk.ids, chunk.seqs, chunk.tags,
                                                                         results.pairs(), ensembles):
            yield Result(record_id, sequence, structure, int(score), algorithm, tag, values)


def _ensemble_request(partition, algorithm: str, constraints, shape, options: dict, threshold, gamma):
    """The partition function's settings (:class:`rnapipe.pipeline.ensemble.request.Settings`) for
    ``partition=True``, None without; what its engine does not take refused in one line naming it."""
    if partition is not True and partition is not False:
        raise UsageError(f"partition must be True or False, not {partition!r}")
    if not partition:
        given = [name for name, value in (("bpp_threshold", threshold), ("mea_gamma", gamma)) if value is not None]
        if given:
            raise UsageError(f"{given[0]} applies with partition=True only")
        return None
    from .pipeline.ensemble.request import GAMMA, THRESHOLD, Settings, refusal

    model = Model.from_options({k: v for k, v in options.items() if k in MODEL_OPTIONS["zuker"]}) \
        if algorithm == "zuker" else Model()
    given = list(model.pairing()) + (["enforce_constraint"] if model.enforce_constraint else [])
    given += [name for name, value in (("constraints", constraints), ("shape", shape)) if value is not None]
    refused = refusal(algorithm, given)
    if refused is not None:
        what, why = refused
        shown = f"algorithm {algorithm!r}" if what == "algorithm" else f"option {what}"
        raise UsageError(f"partition=True with {shown}: {why}")
    return Settings(threshold=THRESHOLD if threshold is None else threshold, gamma=GAMMA if gamma is None else gamma)


def _with_constraints(sequences, constraints, algorithm: str) -> tuple[list, dict]:
    """The sequences as a list and the constraint lines by record index (see :func:`_per_sequence`; a lone
    sequence may have its line as a string); refused for another algorithm than Zuker or a count that differs."""
    lines = [constraints] if isinstance(constraints, str) else list(constraints)
    if any(not isinstance(line, str) for line in lines):
        raise UsageError("constraints must be strings (RNAfold's constraint lines), one for each sequence")
    return _per_sequence(sequences, lines, algorithm, "constraints", "constraint lines")


def _per_sequence(sequences, data, algorithm: str, name: str, what: str) -> tuple[list, dict]:
    """The sequences as a list and ``data`` (``name``, one item for each: ``what``) by the index each record will
    have (a Record's own, else its place); refused for another algorithm than Zuker or a count that differs."""
    if algorithm != "zuker":
        raise UsageError(f"{name} apply to algorithm 'zuker' only, not {algorithm!r}")
    if isinstance(sequences, (str, bytes, bytearray, Record)) or hasattr(sequences, "seq"):    # one, a SeqRecord too
        items = [sequences]
    elif isinstance(sequences, Mapping):
        items = list(sequences.items())
    else:
        items = list(sequences)
    lines = list(data)
    if name == "shape" and len(items) == 1 and lines and not isinstance(lines[0], (list, tuple, np.ndarray,
                                                                                    type(None))):
        lines = [lines]                     # one sequence's reactivities, not a list of them
    if len(lines) != len(items):
        raise UsageError(f"{len(lines)} {what} for {len(items)} sequences: give one for each")
    # the reader finds a record's item by the record's index: a Record's own, else its place
    by_index = {item.index if isinstance(item, Record) else k: line for k, (item, line) in enumerate(zip(items, lines))}
    if len(by_index) != len(items):
        raise UsageError(f"{name}: Records with the same index cannot be told apart")
    return items, by_index


# The options of Zuker's model, as fold() takes them by name (the Nussinov engines refuse what they do not take).
MODEL_OPTIONS = {"zuker": tuple(f.name for f in dataclasses.fields(Model))}


def _check_request(sequences, algorithm: str, threads, options: dict) -> None:
    """Refuse, before anything is read, what fold() would otherwise misread: no sequences, a thread count that
    is not a whole number of at least 1, an option the algorithm does not have (a misspelt one would
    otherwise leave the default in force without a word), or a model option's bad value."""
    if sequences is None:
        raise UsageError("no sequences: give a sequence string, or an iterable of strings, (id, sequence) pairs, "
                         "Record or SeqRecord objects")
    if threads is not None and (isinstance(threads, bool) or not isinstance(threads, numbers.Integral)
                                or threads < 1):
        raise UsageError(f"threads must be a whole number of at least 1, not {threads!r}")
    known = MODEL_OPTIONS.get(algorithm)
    if known is None:
        return
    for name in options:
        if name not in known:
            close = difflib.get_close_matches(name.lower(), known, n=1)     # RNAfold's noLP: no_lp
            hint = f" (did you mean {close[0]!r}?)" if close else ""
            raise UsageError(f"unknown option {name!r} for {algorithm}{hint}; its options: {', '.join(known)}")
    Model.from_options(options)             # a bad value refused now, not at the first fold
