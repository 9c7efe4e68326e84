"""The ``rnapipe`` command: a thin layer over :func:`rnapipe.fold`, the readers and the writers.

Every :class:`rnapipe.errors.RnapipeError` ends the run with one line ``rnapipe: error: <message>`` on
stderr and its exit code; nothing partial is left under the output name.
"""

from __future__ import annotations

import argparse
import contextlib
import logging
import os
import signal
import sys
import threading
import time
from typing import Callable, Sequence

from .. import config, errors
from . import ensemble
from .._version import __version__
from ..errors import InputError, NoSpaceError, RnapipeError, UnavailableError, UsageError
from ..gpu.devices import NoGpu
from ..model import ABSOLUTE_ZERO, MAX_TEMPERATURE, Model

log = logging.getLogger("rnapipe")

EXIT_BROKEN_PIPE = 141  # what a shell reports for a process killed by SIGPIPE (`rnapipe ... -o - | head`)

EXIT_CODES_HELP = f"""\
exit codes:
  {errors.EXIT_OK:<4} success (with --on-invalid skip: every valid record was folded)
  {errors.EXIT_INTERNAL:<4} internal error (a bug: please report it; RNAPIPE_DEBUG=1 shows the traceback)
  {errors.EXIT_INPUT:<4} bad input or usage: invalid FASTA, sequence, structure, option, a missing file; a full disk
  {errors.EXIT_UNAVAILABLE:<4} the requested algorithm, variant or device is not available here
  {errors.EXIT_MEMORY:<4} not enough memory for a sequence (refused with --on-invalid error, or run out of)
  {errors.EXIT_INTERRUPTED:<4} interrupted (Ctrl-C); nothing partial is left under the output name
  143  stopped by SIGTERM (129: SIGHUP), e.g. a cluster job's time limit; as Ctrl-C: run again to go on
  {EXIT_BROKEN_PIPE:<4} the reader of stdout went away (e.g. `| head`)
"""

FOLD_EPILOG = """\
formats (--format, default from the output's suffix: .tsv, .ct, .bpseq, anything else db):
  db     RNAfold's layout: >the whole header line (none for a sequence read without one), sequence,
         structure and score; Zuker "( -1.20)" kcal/mol, Nussinov "( 12)" base pairs
  tsv    header "id length score structure algorithm" (score: pairs, or kcal/mol with 2 decimals)
  ct     connect format, records concatenated
  bpseq  "# id" comments then "index base partner", records concatenated
  with -p (the partition function): db adds RNAfold -p's lines, tsv its columns, and
  bpp    header "id i j p", then one line per pair of probability above --bpp-threshold
  unpaired  one line per record: id, then each nucleotide's probability of being unpaired

Inputs are FASTA or gzipped FASTA (recognised by content), or sequences one a line without headers (ids
sequence_0001, ... as RNAfold --auto-id makes them); '-' (or no INPUT, stdin not a terminal) reads stdin;
no -o (or '-o -') writes stdout. RNAfold's -T, -d0/-d2, -j and --noPS work as in RNAfold, and so do
--noLP, --noGU, --noClosingGU and --maxBPspan (on every device).
Sequences fold upper-cased with T as U; outputs print them as RNAfold does, in the input's case with T
as U (--noconv: T as given). N and the other IUPAC codes are kept and never pair.
With --on-invalid skip, each skipped record is reported on stderr and listed in OUTPUT.rejected.tsv
(index, id, file, reason; stderr only with -o -); a stale list from an earlier run is removed when
nothing was skipped. A file that cannot be read at all is skipped whole and reported the same way.

""" + EXIT_CODES_HELP


class _Parser(argparse.ArgumentParser):
    """Usage errors become one-line UsageErrors (exit 2) like every other error, not usage + message."""

    def error(self, message: str):
        raise UsageError(f"{message} (see '{self.prog} --help')")


def _positive_int(text: str) -> int:
    value = _int(text)
    if value < 1:
        raise argparse.ArgumentTypeError(f"must be at least 1, not {value}")
    return value


def _gpu_list(text: str) -> list[int]:
    try:
        gpus = [int(x) for x in text.split(",") if x.strip()]
    except ValueError:
        raise argparse.ArgumentTypeError(f"expected GPU numbers like 0,1, not '{text}'") from None
    if not gpus or min(gpus) < 0 or len(set(gpus)) != len(gpus):
        raise argparse.ArgumentTypeError(f"expected distinct GPU numbers like 0,1, not '{text}'")
    return gpus


def _formats(known):
    def parse(text: str) -> list[str]:
        names = [x.strip() for x in text.split(",") if x.strip()]
        wrong = [x for x in names if x not in known]
        if not names or wrong:
            raise argparse.ArgumentTypeError(f"invalid choice: '{text}' (choose from {', '.join(known)}; "
                                             "several as db,tsv)")
        return names
    return parse


class _Once(argparse.Action):
    """An option that may be given once: a second one is refused instead of silently replacing the first."""

    def __call__(self, parser, namespace, values, option_string=None):
        if getattr(namespace, self.dest, None) is not None:
            raise argparse.ArgumentError(self, "given twice: give several formats once, as --format db,tsv")
        setattr(namespace, self.dest, values)


def _job_count(text: str) -> int | str:
    return text if text == "auto" else _nonnegative_int(text)


def _nonnegative_int(text: str) -> int:
    value = _int(text)
    if value < 0:
        raise argparse.ArgumentTypeError(f"must be 0 or more, not {value}")
    return value


def _int(text: str) -> int:
    try:
        return int(text)
    except ValueError:
        raise argparse.ArgumentTypeError(f"not a whole number: {text!r}") from None


def _length_list(text: str) -> list[int]:
    try:
        lengths = sorted({int(x) for x in text.split(",") if x.strip()})
    except ValueError:
        raise argparse.ArgumentTypeError(f"expected lengths like 30,68,120, not '{text}'") from None
    if not lengths or lengths[0] < 1:
        raise argparse.ArgumentTypeError(f"expected positive lengths like 30,68,120, not '{text}'")
    return lengths


def _float(text: str) -> float:
    try:
        return float(text)
    except ValueError:
        raise argparse.ArgumentTypeError(f"not a number: {text!r}") from None


def _share(text: str) -> float:
    value = _float(text)
    if not 0.0 <= value <= 1.0:
        raise argparse.ArgumentTypeError(f"must be a share from 0 to 1, not {value}")
    return value


def _positive_float(text: str) -> float:
    value = _float(text)
    if not value > 0:
        raise argparse.ArgumentTypeError(f"must be above 0, not {value}")
    return value


def _temperature(text: str) -> float:
    value = _float(text)
    if not ABSOLUTE_ZERO < value < MAX_TEMPERATURE:
        raise argparse.ArgumentTypeError(f"{value} °C is not a usable temperature")
    return value


def _dangles(text: str) -> int:
    value = _int(text)
    if value in (1, 3):
        raise argparse.ArgumentTypeError(f"-d{value} (RNAfold's dangles {value}) is not supported yet: use 0 or 2")
    if value not in (0, 2):
        raise argparse.ArgumentTypeError(f"invalid choice: {value} (choose from 0, 2)")
    return value


def _max_bp_span(text: str) -> int:
    value = _int(text)
    if value < 1:
        raise argparse.ArgumentTypeError(f"must be at least 1 (the most nucleotides a pair spans), not {value}; "
                                         "leave it out for no limit")
    return value


# The pairing rules' options as RNAfold spells them, by the name rnapipe.fold takes them under.
PAIRING_FLAGS = {"no_lp": "--noLP", "no_gu": "--noGU", "no_closing_gu": "--noClosingGU",
                 "max_bp_span": "--maxBPspan"}


def _add_pairing_options(parser: argparse.ArgumentParser) -> None:
    group = parser.add_argument_group("pairing rules (Zuker, as RNAfold's)")
    group.add_argument("--noLP", dest="no_lp", action="store_true",
                       help="no lonely pairs (helices of one pair), as RNAfold --noLP")
    group.add_argument("--noGU", dest="no_gu", action="store_true", help="no GU pairs, as RNAfold --noGU")
    group.add_argument("--noClosingGU", dest="no_closing_gu", action="store_true",
                       help="no GU pair closing a hairpin, bulge, interior loop or multiloop, nor enclosed by a "
                       "bulge or interior loop (GU pairs only inside helices and at their ends towards the exterior "
                       "loop or a multiloop), as RNAfold --noClosingGU")
    group.add_argument("--maxBPspan", dest="max_bp_span", type=_max_bp_span, metavar="N",
                       help="no pair i·j spans more than N nucleotides (j - i + 1 <= N), as RNAfold --maxBPspan; "
                       "the fold's work then grows as n·N² instead of n³")


def _add_energy_options(parser: argparse.ArgumentParser) -> None:
    group = parser.add_argument_group("energy model (Zuker)")
    group.add_argument("-T", "--temperature", type=_temperature, metavar="C",
                       help=f"temperature in °C, as RNAfold -T (default {Model.temperature:g})")
    group.add_argument("-d", "--dangles", type=_dangles, metavar="{0,2}",
                       help=f"dangling-end model, as RNAfold -d0, -d2 (default {Model.dangles})")
    group.add_argument("--params", metavar="FILE", help="energy parameter file (ViennaRNA .par; default Turner 2004)")


def variants_help() -> str:
    """``--variant`` names per algorithm and device; imports the engines, so only for ``fold --help``."""
    from .. import engines

    lines = ["variants (--variant; the first is the default):"]
    pairs = dict.fromkeys(list(engines._MODULES) + [(a, d) for a, d, _ in engines._VARIANT_MODULES])
    for algorithm, device in pairs:
        try:
            names = ", ".join(engines.variants(algorithm, device))
        except Exception as err:  # an engine that cannot even be imported here
            names = f"(not available here: {_one_line(err)})"
        lines.append(f"  {algorithm:<9}{device:<5}{names}")
    return "\n".join(lines) + "\n\n"


class _FoldHelp(argparse.Action):
    """``fold --help`` with the variant list, computed only when asked for (it imports every engine)."""

    def __init__(self, option_strings, dest=argparse.SUPPRESS, default=argparse.SUPPRESS, help=None):
        super().__init__(option_strings, dest=dest, default=default, nargs=0, help=help)

    def __call__(self, parser, namespace, values, option_string=None):
        parser.epilog = variants_help() + (parser.epilog or "")
        parser.print_help()
        parser.exit()


def build_parser() -> argparse.ArgumentParser:
    from ..engines import ALGORITHMS, DEVICES
    from ..io.formats import FORMATS

    parser = _Parser(prog="rnapipe", description="Exact RNA secondary-structure folding (Nussinov, Zuker MFE) "
                     "for many sequences on CPU and GPU.", epilog=EXIT_CODES_HELP,
                     formatter_class=argparse.RawDescriptionHelpFormatter)
    parser.add_argument("--version", action="version", version=f"rnapipe {__version__}")
    commands = parser.add_subparsers(dest="command", metavar="COMMAND")
    _add_fold_command(commands, ALGORITHMS, DEVICES, FORMATS)
    _add_profile_command(commands, ALGORITHMS)
    _add_workflow_commands(commands, ALGORITHMS, DEVICES, FORMATS)
    _add_eval_command(commands)
    return parser


def _add_fold_command(commands, algorithms, devices, formats) -> None:
    fold = commands.add_parser("fold", help="fold the sequences of FASTA files", epilog=FOLD_EPILOG,
                               formatter_class=argparse.RawDescriptionHelpFormatter, add_help=False,
                               description="Fold every sequence of the input FASTA files; write the results "
                               "in input order.")
    fold.add_argument("-h", "--help", action=_FoldHelp, help="show this help (with the variants) and exit")
    _add_fold_options(fold, algorithms, devices, formats)
    fold.set_defaults(run=_fold)


def _add_fold_options(parser: argparse.ArgumentParser, algorithms, devices, formats, job: bool = False) -> None:
    """The options of ``fold``; with ``job``, those of ``fold-job``: its shard list and its one output are
    its own, and it writes db format and chooses between resuming and restarting itself."""
    if not job:
        parser.add_argument("inputs", nargs="*", metavar="INPUT",
                            help="FASTA or gzipped FASTA file, or sequences one a line without headers ('-', or "
                            "no INPUT with stdin not a terminal: stdin)")
        parser.add_argument("-o", "--output", action="append", metavar="OUTPUT",
                            help="output file (default, or '-': stdout); give -o several times for several formats "
                            "from one fold; a name ending in .gz is gzipped")
    parser.add_argument("--algorithm", choices=algorithms, default=config.DEFAULT_ALGORITHM,
                        help=f"scoring model (default {config.DEFAULT_ALGORITHM})")
    parser.add_argument("--variant", metavar="V", help="engine variant (default: the engine's first)")
    parser.add_argument("--device", choices=devices, default="cpu", help="where to fold (default cpu)")
    parser.add_argument("--gpus", type=_gpu_list, metavar="LIST",
                        help="with --device gpu or hybrid: GPUs to spread the batches over, e.g. 0,1 (default: "
                        "GPU 0)")
    parser.add_argument("--split", choices=config.HYBRID_SPLITS, metavar="{static,dynamic}",
                        help="with --device hybrid: share each batch by the profile (static) or on the costs "
                        f"measured so far in the run (dynamic; default {config.HYBRID_SPLIT}, or "
                        "RNAPIPE_HYBRID_SPLIT)")
    parser.add_argument("--threads", type=_positive_int, metavar="N",
                        help="CPU threads (default: the usable physical cores)")
    parser.add_argument("-j", "--jobs", type=_nonnegative_int, nargs="?", const=0, metavar="N",
                        help="as RNAfold -j: CPU threads, as --threads; 0 or no number: the usable physical cores")
    if not job:
        parser.add_argument("--format", type=_formats(formats), action=_Once, metavar="FMT[,FMT...]",
                            help=f"output format ({', '.join(formats)}; default from the output's suffix): one "
                            "per -o, or several with one -o PREFIX, written to PREFIX.FMT")
    parser.add_argument("--reprofile", action="store_true",
                        help="with --device hybrid: time the CPU and the GPU again (else the host's saved profile)")
    if not job:
        parser.add_argument("--restart", action="store_true",
                            help="discard the journal of an interrupted run on the same output and start over")
    parser.add_argument("--on-invalid", choices=("error", "skip"), default="error",
                        help="a bad record stops the run (error, default) or is skipped and reported (skip)")
    parser.add_argument("-q", "--quiet", action="store_true",
                        help="no progress and no per-record skip lines (the summary stays)")
    rnafold = parser.add_argument_group("RNAfold's options (see README, 'RNAfold users')")
    rnafold.add_argument("--noPS", action="store_true", help="accepted and ignored: rnapipe draws no structure plots")
    rnafold.add_argument("--noconv", action="store_true",
                         help="as RNAfold --noconv: print T as the input gives it, not as U (it folds as U)")
    rnafold.add_argument("-C", "--constraint", action="store_true",
                         help="as RNAfold -C: each FASTA record's sequence is followed by its hard-constraint line "
                         "(. x | < > ( ), one per nucleotide); Zuker, every device")
    rnafold.add_argument("--enforceConstraint", action="store_true", dest="enforce_constraint",
                         help="as RNAfold --enforceConstraint: the pairs ( ) of -C must form, and | must pair")
    rnafold.add_argument("--shape", metavar="FILE",
                         help="SHAPE reactivities, as RNAfold --shape: RNAfold's file of one sequence ('position "
                         "[nucleotide] reactivity' lines), a table of 'id position reactivity' lines for many, or "
                         "a directory of RNAfold's files named ID.shape; Zuker, every device")
    rnafold.add_argument("--shapeMethod", metavar="D[mX][bY]", dest="shape_method",
                         help="as RNAfold --shapeMethod: Deigan's method (D) with slope m and intercept b "
                         "(default D: m 1.8, b -0.6)")
    parser.add_argument("--min-loop", type=_nonnegative_int, metavar="K",
                        help=f"Nussinov: a pair (i, j) needs j - i > K (default {config.NUSSINOV_MIN_LOOP})")
    _add_energy_options(parser)
    _add_pairing_options(parser)
    ensemble.add_options(parser)


def _add_profile_command(commands, algorithms) -> None:
    profile = commands.add_parser("profile", help="time the CPU and GPU engines (for --device hybrid; the CPU "
                                  "alone without a GPU)",
                                  epilog=EXIT_CODES_HELP, formatter_class=argparse.RawDescriptionHelpFormatter,
                                  description="Time the CPU engine and the GPU engine on random sequences of a few "
                                  "lengths, print their costs (the CPU's fitted to t(L) = a·L³ + b·L² + c, the "
                                  "GPU's joining its timed lengths) and save them as this host's profile, which "
                                  "--device hybrid splits its batches by.")
    profile.add_argument("--algorithm", choices=algorithms, default=config.DEFAULT_ALGORITHM,
                         help=f"scoring model (default {config.DEFAULT_ALGORITHM})")
    profile.add_argument("--variant", metavar="V", help="engine variant (default: the engine's first)")
    profile.add_argument("--threads", type=_positive_int, metavar="N",
                         help="CPU threads of the hybrid run (default: the usable physical cores)")
    profile.add_argument("--gpus", type=_gpu_list, metavar="LIST", help="the GPU to time (default: GPU 0)")
    profile.add_argument("--device", choices=("hybrid", "auto", "cpu"),
                         help="hybrid: the CPU and the GPU, for --device hybrid (needs a GPU); auto: the CPU, and "
                         "the GPU when there is one; cpu: the CPU alone, on all --threads (default: hybrid where "
                         "there is a GPU, else cpu, and one line says so)")
    profile.add_argument("-p", "--partition", action="store_true",
                         help="time the partition function's engines (RNAfold -p; the workflow's fold.partition)")
    profile.add_argument("--cached", action="store_true",
                         help="use this host's saved profile when there is one (else measure and save)")
    profile.add_argument("--lengths", type=_length_list, metavar="L,L,...", help=argparse.SUPPRESS)
    profile.add_argument("-o", "--output", metavar="FILE", help="also write the profile as JSON to FILE")
    profile.add_argument("--min-loop", type=_nonnegative_int, metavar="K", help=argparse.SUPPRESS)
    _add_energy_options(profile)
    profile.set_defaults(run=_profile)


def _add_eval_command(commands) -> None:
    evaluate = commands.add_parser("eval", help="free energy of given structures (kcal/mol)",
                                   epilog=EXIT_CODES_HELP, formatter_class=argparse.RawDescriptionHelpFormatter,
                                   description="Evaluate the Zuker free energy of a structure, as RNAeval does. "
                                   "Give SEQUENCE STRUCTURE, or -i FILE with records '>id', sequence, "
                                   "dot-bracket (RNAfold output works). Every structure RNAeval scores gets its "
                                   "energy: a non-canonical pair is scored with ViennaRNA's non-standard pair "
                                   "type, a hairpin of fewer than 3 nucleotides as INF (100000 kcal/mol), "
                                   "[]{}<> as unpaired; one warning line per such record on stderr.")
    evaluate.add_argument("sequence", nargs="?", metavar="SEQUENCE")
    evaluate.add_argument("structure", nargs="?", metavar="STRUCTURE", help="dot-bracket, same length")
    evaluate.add_argument("-i", "--input", metavar="FILE", help="dot-bracket FASTA file ('-': stdin)")
    evaluate.add_argument("--on-invalid", choices=("error", "skip"), default="error",
                          help="a record that cannot be read stops the run (error, default) or is skipped and "
                          "reported (skip)")
    evaluate.add_argument("-j", "--jobs", type=_nonnegative_int, nargs="?", const=0, metavar="N",
                          help="accepted as RNAeval takes it (its threads); rnapipe eval scores the records in "
                          "order on one thread")
    evaluate.add_argument("-q", "--quiet", action="store_true",
                          help="no warning lines and no per-record skip lines (the summary stays)")
    _add_energy_options(evaluate)
    evaluate.set_defaults(run=_eval)


def _add_workflow_commands(commands, algorithms, devices, formats) -> None:
    """The workflow's stages as subcommands (workflow/rules/*.smk run them)."""
    _add_prepare_command(commands, algorithms)
    _add_partition_command(commands)
    _add_merge_command(commands, algorithms)
    _add_fold_job_command(commands, algorithms, devices, formats)
    _add_resources_command(commands, algorithms)


def _workflow_command(commands, name: str, help_: str, description: str) -> argparse.ArgumentParser:
    return commands.add_parser(name, help=help_, description=description, epilog=EXIT_CODES_HELP,
                               formatter_class=argparse.RawDescriptionHelpFormatter)


def _add_prepare_command(commands, algorithms) -> None:
    prepare = _workflow_command(commands, "prepare", "cut a FASTA file into shards by length (workflow)",
                                "Read and check INPUT as rnapipe fold does, and write its valid records into "
                                "shards of one length range each under DIR, with a manifest of every record's "
                                "place and the list of rejected records.")
    prepare.add_argument("input", metavar="INPUT", help="FASTA or gzipped FASTA file")
    prepare.add_argument("-o", "--output", required=True, metavar="DIR", help="directory to make (replaced)")
    prepare.add_argument("--algorithm", choices=algorithms, default=config.DEFAULT_ALGORITHM,
                         help="the algorithm the shards will be folded with (for the length limit)")
    prepare.add_argument("--on-invalid", choices=("error", "skip"), default="error",
                         help="a bad record stops the run (error, default) or is skipped and listed (skip)")
    prepare.add_argument("-C", "--constraint", action="store_true",
                         help="each record's sequence is followed by its constraint line (as rnapipe fold -C); "
                         "checked here and written to the shards")
    prepare.add_argument("-p", "--partition", action="store_true",
                         help="the shards will be folded with the partition function (for the length limit)")
    prepare.add_argument("--shard-records", type=_positive_int, default=None, metavar="N",
                         help=f"records per shard at most (default {config.SHARD_RECORDS})")
    prepare.add_argument("--shard-cost", type=_positive_float, default=None, metavar="C",
                         help=f"predicted work (sum of L^3) per shard at most (default {config.SHARD_COST:g})")
    prepare.set_defaults(run=_prepare)


def _add_partition_command(commands) -> None:
    partition = _workflow_command(commands, "partition", "assign prepared shards to CPU and GPU jobs (workflow)",
                                  "Assign the shards of a prepared input to CPU jobs and GPU jobs by the host's "
                                  "profile, so that both sides are predicted to end together; print each "
                                  "device's share.")
    partition.add_argument("prepared", metavar="DIR", help="a directory made by rnapipe prepare")
    partition.add_argument("--profile", metavar="FILE",
                           help="JSON from rnapipe profile -o; needed where GPU jobs share the shards with other "
                           "jobs (one job takes every shard whatever they cost; CPU jobs alone share them by their "
                           "predicted work; their times are then not predicted)")
    partition.add_argument("--cpu-jobs", type=_nonnegative_int, default=1, metavar="N", help="default 1")
    partition.add_argument("--gpu-jobs", type=_nonnegative_int, default=0, metavar="N", help="default 0")
    partition.add_argument("--min-gain", type=_share, metavar="F",
                           help="the CPU jobs get shards only where that is predicted to end the input this "
                           f"share sooner than the GPU jobs alone, 0 to 1 (default {config.HYBRID_MIN_GAIN})")
    partition.add_argument("-o", "--output", required=True, metavar="DIR", help="plan directory")
    partition.set_defaults(run=_partition)


def _add_merge_command(commands, algorithms) -> None:
    merge = _workflow_command(commands, "merge", "merge fold jobs' outputs in input order (workflow)",
                              "Put the records the fold jobs of a plan wrote back in input order and write every "
                              "output, byte for byte what one rnapipe fold of the input writes.")
    merge.add_argument("prepared", metavar="DIR", help="a directory made by rnapipe prepare")
    merge.add_argument("--plan", required=True, metavar="DIR", help="its plan (rnapipe partition -o)")
    merge.add_argument("--folds", required=True, metavar="DIR", help="where the jobs wrote JOB.db")
    merge.add_argument("-o", "--output", required=True, action="append", metavar="OUTPUT", help="output file")
    merge.add_argument("--format", action="append", metavar="FMT", help="format of each -o (default: suffix)")
    merge.add_argument("--algorithm", choices=algorithms, default=config.DEFAULT_ALGORITHM)
    merge.add_argument("--rejected", metavar="FILE", help="write the rejected records' list here")
    merge.add_argument("-p", "--partition", action="store_true",
                       help="the fold jobs folded with -p (their outputs hold the partition function's results)")
    merge.add_argument("--MEA", dest="mea_line", action="store_true", help="with -p: db prints the MEA line")
    merge.set_defaults(run=_merge)


def _add_fold_job_command(commands, algorithms, devices, formats) -> None:
    job = _workflow_command(commands, "fold-job", "fold one job's shards, resumable (workflow)",
                            "Fold the shards LIST names (one file per line) into OUTPUT in db format, as rnapipe "
                            "fold does: into OUTPUT.fold, with its journal while it runs, then linked to OUTPUT "
                            "(a hard link, else a copy). A fold already complete is only linked again; a journal "
                            "older than LIST belongs to another plan and is discarded; an empty LIST gives an "
                            "empty OUTPUT.")
    job.add_argument("shards", metavar="LIST", help="the shard files of the job, one per line")
    job.add_argument("-o", "--output", required=True, metavar="OUTPUT", help="the job's output")
    _add_fold_options(job, algorithms, devices, formats, job=True)
    job.set_defaults(run=_fold_job)


def _add_resources_command(commands, algorithms) -> None:
    resources = _workflow_command(commands, "resources",
                                  "GPU jobs and CPU threads of the workflow's fold jobs on this host (workflow)",
                                  "Print what the workflow's fold jobs take on this host: the GPUs CUDA shows "
                                  "(counted for --gpu-jobs auto or with --count-gpus), the GPU jobs (auto: one per "
                                  "GPU), and each job's threads: a GPU job one (it feeds its GPU), the CPU jobs "
                                  "the other cores; with -p every job a like share of the cores.")
    resources.add_argument("--cores", type=_positive_int, metavar="N",
                           help="cores of the run (default: the usable physical cores)")
    resources.add_argument("--cpu-jobs", type=_nonnegative_int, default=1, metavar="N", help="default 1")
    resources.add_argument("--gpu-jobs", type=_job_count, default="auto", metavar="N|auto",
                           help="a number, or auto (default): one per GPU")
    resources.add_argument("--count-gpus", action="store_true",
                           help="count the GPUs also when --gpu-jobs is a number (the workflow numbers its GPUs "
                           "from the count)")
    resources.add_argument("--algorithm", choices=algorithms,
                           help="also tell whether this host's Numba cache holds the algorithm's CPU engine "
                           "compiled (JSON key cpu_compiled; null for an engine that does not tell)")
    resources.add_argument("-p", "--partition", action="store_true",
                           help="the fold has the partition function (the workflow's fold.partition)")
    resources.add_argument("--json", action="store_true", help="print one JSON object")
    resources.set_defaults(run=_resources)


def _prepare(args) -> int:
    from . import workflow
    from ..pipeline.workflow.prepare import SHARD_COST, SHARD_RECORDS

    if args.constraint and args.algorithm != "zuker":
        raise UsageError("-C applies to --algorithm zuker only")
    workflow.run_prepare(args.input, args.output, args.algorithm, args.on_invalid,
                         args.shard_records or SHARD_RECORDS, args.shard_cost or SHARD_COST, args.constraint,
                         args.partition)
    return errors.EXIT_OK


def _partition(args) -> int:
    from . import workflow

    workflow.run_partition(args.prepared, args.profile, args.cpu_jobs, args.gpu_jobs, args.output, args.min_gain)
    return errors.EXIT_OK


def _merge(args) -> int:
    from . import workflow

    workflow.run_merge(args.prepared, args.plan, args.folds, args.output, args.format, args.algorithm,
                       args.rejected, args.partition, args.mea_line)
    return errors.EXIT_OK


def _resources(args) -> int:
    from . import workflow

    workflow.run_resources(args.cores or config.default_threads(), args.cpu_jobs, args.gpu_jobs, args.count_gpus,
                           args.json, args.algorithm, args.partition)
    return errors.EXIT_OK


# ---------------------------------------------------------------------------------------------------------
# fold


def _engine_options(args) -> dict:
    zuker_only = {"--temperature": args.temperature, "--dangles": args.dangles, "--params": args.params}
    for name, flag in PAIRING_FLAGS.items():         # on fold and fold-job; a flag left out is None here
        zuker_only[flag] = getattr(args, name, None) or None
    options = {}
    if args.algorithm == "nussinov":
        given = [flag for flag, value in zuker_only.items() if value is not None]
        given += [flag for flag, on in (("-C", getattr(args, "constraint", False)),
                                         ("--enforceConstraint", getattr(args, "enforce_constraint", False))) if on]
        if given:
            raise UsageError(f"{', '.join(given)} applies to --algorithm zuker only")
        if args.min_loop is not None:
            options["min_loop"] = args.min_loop
    else:
        if args.min_loop is not None:
            raise UsageError("--min-loop applies to --algorithm nussinov only (Zuker's hairpins follow the "
                             "energy model)")
        names = {flag: name for name, flag in PAIRING_FLAGS.items()}
        options.update({names.get(flag, flag[2:]): value for flag, value in zuker_only.items() if value is not None})
        if getattr(args, "enforce_constraint", False):
            options["enforce_constraint"] = True
    return options


def _per_record_options(args) -> None:
    """-C and --shape are Zuker's (every device folds them); --shapeMethod needs --shape."""
    if args.shape_method is not None and not args.shape:
        raise UsageError("--shapeMethod needs --shape FILE")
    if args.shape and args.algorithm != "zuker":
        raise UsageError("--shape applies to --algorithm zuker only")
    if args.constraint and args.algorithm != "zuker":
        raise UsageError("-C/--constraint applies to --algorithm zuker only")


def _shape(args):
    """The --shape file read (rnapipe.constraints.ShapeData), or None."""
    if not args.shape:
        return None
    from ..constraints import read_shape, shape_method

    return read_shape(args.shape, *shape_method(args.shape_method or "D"))


def _describe(rejected) -> str:
    where = [rejected.file] if rejected.file else []
    if rejected.id:
        where.append(f"record '{errors.shown_id(rejected.id)}'")
    return f"{', '.join(where)}: {rejected.reason}" if where else rejected.reason


def _report_skipped(rejected, quiet: bool) -> None:
    if not quiet:
        for r in rejected:
            print(f"rnapipe: skipped {_describe(r)}", file=sys.stderr)


def _check_output(path: str) -> None:
    """Fail before folding, not after, when the output cannot be written."""
    if os.path.isdir(path):
        raise UsageError(f"output '{path}' is a directory")
    directory = os.path.dirname(os.path.abspath(path))
    if not os.path.isdir(directory):
        raise UsageError(f"cannot write '{path}': directory '{os.path.dirname(path)}' does not exist")
    if not os.access(directory, os.W_OK | os.X_OK):
        raise UsageError(f"cannot write '{path}': no write permission in its directory")


def _suffix_format(path: str) -> str | None:
    """The format an output's suffix names (``.db``, ``.tsv``, ``.ct``, ``.bpseq``, any case), or None."""
    from ..io.formats import FORMATS

    suffix = os.path.splitext(path)[1].lower()[1:]
    return suffix if suffix in FORMATS else None


def _outputs(args) -> list[tuple[str, str | None]]:
    """(path, format) of every output: -o paired with --format, or one -o PREFIX with several formats."""
    paths, formats = args.output, args.format
    if formats and len(set(formats)) != len(formats):
        raise UsageError(f"--format {','.join(formats)} names a format twice")
    if formats and len(formats) > 1 and len(paths) == 1:
        prefix = paths[0]
        if prefix == "-":
            raise UsageError("several formats need file outputs: -o PREFIX writes PREFIX.db, PREFIX.tsv, ...")
        gz = prefix.lower().endswith(".gz")
        base = prefix[:-3] if gz else prefix
        if _suffix_format(base) is not None:
            raise UsageError(f"-o {prefix} with --format {','.join(formats)}: a PREFIX for several formats "
                             f"has no format suffix (-o {base[:-len(os.path.splitext(base)[1])]} writes "
                             f"{', '.join(f'.{fmt}' for fmt in formats)})")
        # PREFIX.gz: every output gzipped, PREFIX.FMT.gz
        return [(f"{base}.{fmt}" + (prefix[-3:] if gz else ""), fmt) for fmt in formats]
    if formats and len(formats) not in (1, len(paths)):
        raise UsageError(f"{len(formats)} formats for {len(paths)} outputs: give one format per -o, or one -o")
    if formats and len(formats) == 1:
        formats = formats * len(paths)
    pairs = list(zip(paths, formats or [None] * len(paths)))
    for path, fmt in pairs:
        named = _suffix_format(path[:-3] if path.lower().endswith(".gz") else path)
        if fmt is not None and named is not None and named != fmt:
            raise UsageError(f"-o {path} is a .{named} name but --format says {fmt}: make them agree")
    if sum(1 for p, _ in pairs if p == "-") > 1:
        raise UsageError("standard output ('-o -') can take one output only")
    seen = set()
    for path, _ in pairs:
        key = path if path == "-" else os.path.abspath(path)
        if key in seen:
            raise UsageError(f"output '{path}' is given twice")
        seen.add(key)
    return pairs


def _profile(args) -> int:
    from . import workflow
    from ..pipeline.hybrid import costmodel

    workflow.run_profile(args.device, args.algorithm, args.variant, args.threads, args.gpus, _engine_options(args),
                         args.lengths or costmodel.LENGTHS, args.cached, args.output, args.partition)
    return errors.EXIT_OK


def _fold(args) -> int:
    from ..pipeline import warm

    started = time.monotonic()
    warm.start()                                # while the engine below is set up
    from ..pipeline.resume import run as job
    from ..pipeline.output.sinks import check_paths, format_of
    from ..pipeline.resume.journal import ResumeRefused
    from ..pipeline import timeline

    _rnafold_conventions(args)
    options = _engine_options(args)
    _per_record_options(args)
    partition = ensemble.settings(args, [fmt or format_of(path) for path, fmt in _outputs(args)])
    shape = _shape(args)
    # a wrong request (algorithm, variant, device, GPUs) fails before any reading
    timeline.mark("options read")
    if args.split is not None and args.device not in ("hybrid", "auto"):
        raise UsageError("--split applies to --device hybrid (or auto) only")
    if args.gpus is not None and args.device not in ("gpu", "hybrid", "auto"):
        raise UsageError("--gpus needs --device gpu or hybrid")
    say = stderr_say(args.quiet)
    folder = _folder(args, options, say, partition)
    timeline.mark("engine ready")
    sinks = _sinks(args)
    check_paths([s.path for s in sinks], args.inputs)

    def report(rejected) -> None:
        _report_skipped(rejected, args.quiet)

    try:
        outcome = job.run(args.inputs, sinks, folder, args.on_invalid, args.restart, say=say,
                          progress_to=None if args.quiet else sys.stderr, report_skipped=report,
                          noconv=args.noconv, constraints=args.constraint, shape=shape)
    except BrokenPipeError:
        raise
    except KeyboardInterrupt:
        _print_resume_hint(sinks)
        raise
    except ResumeRefused as err:
        raise UsageError(_how_to_restart(err)) from None
    except InputError as err:
        kept = _journal_of(sinks)
        if kept is None:
            raise
        raise type(err)(f"{err.reason} (the chunks before it are kept in {kept}: correct the input and run the "
                        "same command to go on from there)", err.file, err.record, err.position) from None
    except NoSpaceError as err:             # the temporary directory's disk
        raise NoSpaceError(f"{err}{_kept_note(sinks)}") from None
    except OSError as err:  # disk full, quota, permissions changed under us: not a bug, nothing partial left
        files = [s.path for s in sinks if not s.stdout]
        raise _cannot_write(err, err.filename or (files[0] if files else "-"), _kept_note(sinks)) from None
    _note_unused_shape(shape)
    _print_summary(folder, outcome, args.quiet, time.monotonic() - started)
    return errors.EXIT_OK


def _note_unused_shape(shape) -> None:
    """A SHAPE table's rows whose id matches no record: said on stderr (also with -q), as data given and not
    used."""
    unused = shape.unused() if shape is not None else []
    if unused:
        shown = ", ".join(repr(key) for key in unused[:5]) + (", ..." if len(unused) > 5 else "")
        _note(f"{len(unused):,} id(s) of the SHAPE table {shape.path} match no record folded, so their "
              f"reactivities were not used: {shown}")


def _rnafold_conventions(args) -> None:
    """RNAfold's ways of asking on ``fold``: stdin when no input is named and it is not a terminal, stdout
    when no -o is given, -j as --threads (0: every usable core)."""
    if args.jobs is not None:
        if args.threads is not None:
            raise UsageError("give --threads or -j/--jobs, not both")
        args.threads = args.jobs or None
    if hasattr(args, "inputs") and not args.inputs:
        if sys.stdin is None or sys.stdin.isatty():
            raise UsageError("no input: give FASTA files, or '-' for stdin, or pipe sequences in")
        args.inputs = ["-"]
    if args.output is None:
        args.output = ["-"]


def _cannot_write(err: OSError, path, kept: str = "") -> RnapipeError:
    """The one line for an output (or the journal beside it) that could not be written: a full disk (or quota)
    names the output's directory, where the part files and the journal grow too."""
    path = os.fsdecode(path)
    if not errors.is_no_space(err):
        return UsageError(f"cannot write '{path}': {err.strerror or err}")
    if path == "-":
        return NoSpaceError(f"{errors.no_space_reason(err)} writing standard output")
    directory = os.path.dirname(os.path.abspath(path))
    return NoSpaceError(f"{errors.no_space_reason(err)} in the output's directory '{directory}' (writing "
                        f"'{path}'): make room there, or write the output to a disk with room{kept}")


def _kept_note(sinks) -> str:
    kept = _journal_of(sinks)
    return f" (the chunks finished so far are kept in {kept}: run the same command to go on)" if kept else ""


def _folder(args, options: dict, say: Callable[[str], None] | None, partition=None):
    """The folder the command asks for (``partition``: the partition function's settings, or None); a device
    that cannot fold here is refused in the command's terms."""
    from ..pipeline.choose import folder_for
    from ..pipeline.hybrid import NoGpuForHybrid, NoHybridMode

    def chosen(device: str, why: str) -> None:
        if say is not None:
            say(f"--device auto: {device} ({why})")

    try:
        return folder_for(args.algorithm, args.variant, args.device, args.threads, args.gpus, options,
                           reprofile=args.reprofile, say=say, split=args.split, chosen=chosen, ensemble=partition)
    except NoHybridMode as err:
        raise UnavailableError(f"{err.algorithm} on device 'hybrid' is not available: --device hybrid folds "
                               f"{', '.join(err.hybrid_algorithms)} only (the {err.algorithm} engines of the CPU "
                               "and the GPU may pick different structures of the same score)") from None
    except NoGpuForHybrid:
        raise NoGpu("device 'hybrid'", "device 'cpu'") from None


def _sinks(args) -> list:
    """A sink per output (``-``: standard output), each file checked before anything is folded."""
    from ..pipeline.output.sinks import Sink, format_of

    sinks = []
    for path, fmt in _outputs(args):
        if path == "-":
            sinks.append(Sink(path, fmt or "db", stream=sys.stdout.buffer))
        else:
            _check_output(path)
            sinks.append(Sink(path, fmt or format_of(path)))
    return sinks


def _how_to_restart(err) -> str:
    """A refused resume (:class:`~rnapipe.pipeline.resume.journal.ResumeRefused`) with the way to start over."""
    from ..pipeline.resume.journal import InputChanged, OtherRun

    if isinstance(err, InputChanged):
        return f"{err}: run with --restart to discard the journal {err.path} and fold everything again"
    if isinstance(err, OtherRun):
        return f"{err}: run the same command to resume it, or add --restart to discard it and start over"
    return f"{err}: run again with --restart to discard it"


def _print_summary(folder, outcome, quiet: bool, seconds: float) -> None:
    """The lines a run ends with. Without --quiet the last says what was done, terminal or not: records folded,
    seconds (from the command's start), records per second, and what was skipped. With --quiet only what the
    user must know stays: a resumed run, and skipped records."""
    if hasattr(folder, "summary") and not quiet:
        print(f"rnapipe: {folder.summary()}", file=sys.stderr)
    if outcome.resumed_chunks:                  # a summary line: shown with --quiet too
        print(f"rnapipe: resumed an interrupted run: {outcome.resumed_chunks} chunk(s) were done already, "
              f"{outcome.folded_chunks} folded now", file=sys.stderr)
    skipped = listed = ""
    if outcome.rejected_records or outcome.rejected_files:
        what = [f"{outcome.rejected_records} record(s)"]
        if outcome.rejected_files:
            what.append(f"{outcome.rejected_files} file(s)")
        skipped = " and ".join(what)
        listed = f"; listed in {outcome.rejected_path}" if outcome.rejected_path else ""
    if quiet:
        if skipped:
            print(f"rnapipe: skipped {skipped}, folded {outcome.folded}{listed}", file=sys.stderr)
        return
    rate = outcome.folded / seconds if seconds > 0 else 0.0
    print(f"rnapipe: folded {outcome.folded:,} record(s) in {seconds:.2f} s ({rate:,.0f} per second)"
          + (f"; skipped {skipped}{listed}" if skipped else ""), file=sys.stderr)


def _recorded_options(args) -> dict:
    """What a fold-job's fold is folded with beyond the engine options: -C, and the --shape file's identity
    (path and digest) with its method, so that a finished fold is not reused for other constraints or data."""
    from ..constraints import shape_identity

    options = _engine_options(args)
    partition = ensemble.settings(args, [])
    if partition is not None:
        options.update(partition.options())
    if args.constraint:
        options["constraint"] = True
    if args.shape:
        try:
            options["shape"] = shape_identity(args.shape) + [args.shape_method or "D"]
        except OSError:                 # the fold says what is wrong with it
            options["shape"] = [os.path.abspath(args.shape), None, args.shape_method or "D"]
    return options


def _fold_job(args) -> int:
    """``fold-job``: one workflow job's shards folded as ``fold`` folds them, resumable (see
    :mod:`rnapipe.pipeline.workflow.fold_job` for the steps)."""
    from ..pipeline.workflow import fold_job

    output, fold = args.output, fold_job.fold_path(args.output)
    folded_with = fold_job.options_text(args.algorithm, args.variant, _recorded_options(args))
    step = fold_job.next_step(args.shards, output, folded_with)
    if step is fold_job.Step.NO_SHARDS:
        fold_job.write_empty(output)
        _note("no shards for this job")
        return errors.EXIT_OK
    if step is fold_job.Step.LINK:
        fold_job.link_or_copy(fold, output)
        _note("the fold was complete before the job was cut off")
        return errors.EXIT_OK
    args.inputs = fold_job.read_list(args.shards)
    # with -p the job writes every value in full (pfjob format), so that the merge prints every format exactly
    job_format = "pfjob" if args.partition or args.mea_line else "db"
    args.output, args.format, args.restart = [fold], [job_format], step is fold_job.Step.RESTART
    fold_job.start(output, folded_with, step)
    _fold(args)
    fold_job.link_or_copy(fold, output)
    return errors.EXIT_OK


def _note(text: str) -> None:
    """One ``rnapipe: ...`` line on stderr."""
    print(f"rnapipe: {text}", file=sys.stderr, flush=True)


def _journal_of(sinks) -> str | None:
    """The journal an interrupted run left beside the outputs, if any."""
    from ..pipeline.resume.journal import journal_path

    files = [s for s in sinks if not s.stdout]
    if files and os.path.exists(journal_path(files[0].path)):
        return journal_path(files[0].path)
    return None


def _print_resume_hint(sinks) -> None:
    kept = _journal_of(sinks)
    if kept is not None:
        print(f"rnapipe: the chunks finished so far are kept ({kept}): run the same command again to go on "
              "from there", file=sys.stderr)


# ---------------------------------------------------------------------------------------------------------
# eval


def _eval_functions():
    try:
        from ..energy import eval_structure, eval_warnings
    except ImportError as err:
        # Only a missing piece of rnapipe itself means this build has no energy evaluation (exit 3); a missing
        # third-party package is a bug.
        if not (err.name or "rnapipe").startswith("rnapipe"):
            raise
        raise UnavailableError(f"energy evaluation is not available in this version of rnapipe "
                               f"({_one_line(err)})") from None
    return eval_structure, eval_warnings


def _rnaeval_kcal(dcal: int) -> str:
    """An energy as RNAeval prints it. Below 10,000 kcal/mol that is the exact decimal ``kcal`` gives; above,
    reached only through ViennaRNA's INF (short hairpins), RNAeval prints its single-precision ``e / 100.``,
    which no longer holds every hundredth."""
    from ..io.formats import kcal

    if abs(dcal) < 1_000_000:
        return kcal(dcal)
    import numpy as np

    return f"{float(np.float32(float(np.float32(dcal)) / 100.0)):.2f}"


def _eval(args) -> int:
    """``eval``: each record's energy on stdout as RNAeval prints it; RNAeval's warnings (non-canonical pairs,
    short hairpins) one line per record on stderr; with ``--on-invalid skip`` the records that cannot be read
    are reported as ``fold`` reports them, and the rest is evaluated."""
    from ..io import read_dotbracket, validate_sequence
    from ..structure import StructureError

    rejected: list = []
    if args.input is not None:
        if args.sequence is not None:
            raise UsageError("give SEQUENCE STRUCTURE or --input FILE, not both")
        items = read_dotbracket(args.input, on_invalid=args.on_invalid, rejected=rejected)
        name = "<stdin>" if args.input == "-" else args.input
    else:
        if args.sequence is None or args.structure is None:
            raise UsageError("give SEQUENCE STRUCTURE, or --input FILE (see 'rnapipe eval --help')")
        sequence = validate_sequence(args.sequence, file="SEQUENCE argument")
        if len(args.structure) != len(sequence):
            raise StructureError(f"structure has {len(args.structure)} characters but the sequence has "
                                 f"{len(sequence)}", file="STRUCTURE argument")
        items = [(None, sequence, args.structure)]
        name = None
    eval_structure, eval_warnings = _eval_functions()
    options = {key: getattr(args, key) for key in ("temperature", "dangles", "params")
               if getattr(args, key) is not None}
    evaluated = reported = 0
    for record_id, sequence, structure in items:
        _report_skipped(rejected[reported:], args.quiet)
        reported = len(rejected)
        where = f"{name}, record '{errors.shown_id(record_id)}'" if name is not None else "STRUCTURE argument"
        try:
            energy = eval_structure(sequence, structure, **options)
            notes = eval_warnings(sequence, structure)
        except InputError as err:   # the argument form: the file's records are checked as they are read
            raise InputError(err.reason, file=where) from None
        if notes and not args.quiet:
            print(f"rnapipe: warning: {where}: {'; '.join(notes)}", file=sys.stderr)
        head = f">{record_id}\n" if name is not None else ""
        sys.stdout.write(f"{head}{sequence}\n{structure} ({_rnaeval_kcal(energy):>6})\n")
        evaluated += 1
    sys.stdout.flush()
    _report_skipped(rejected[reported:], args.quiet)
    if rejected:
        files = sum(1 for r in rejected if r.id is None)
        what = [f"{count} {kind}(s)" for count, kind in ((len(rejected) - files, "record"), (files, "file")) if count]
        skipped = " and ".join(what)
        if args.quiet:
            print(f"rnapipe: skipped {skipped}, evaluated {evaluated}", file=sys.stderr)
        else:
            print(f"rnapipe: evaluated {evaluated} record(s); skipped {skipped}", file=sys.stderr)
    return errors.EXIT_OK


# ---------------------------------------------------------------------------------------------------------
# entry point


def _one_line(text: str) -> str:
    return " ".join(str(text).split())


class Terminated(KeyboardInterrupt):
    """SIGTERM or SIGHUP (a cluster's time limit, a closed terminal), taken as Ctrl-C is: the run stops with the
    chunks finished so far kept in its journal and one line saying how to go on; exit 128 + the signal."""

    def __init__(self, signum: int):
        super().__init__(signum)
        self.signum = signum


def _terminate(signum, frame) -> None:
    raise Terminated(signum)


@contextlib.contextmanager
def _stop_signals():
    """SIGTERM and SIGHUP raise :class:`Terminated` in the main thread while the command runs."""
    wanted = [getattr(signal, name) for name in ("SIGTERM", "SIGHUP") if hasattr(signal, name)]
    if threading.current_thread() is not threading.main_thread():
        yield
        return
    before = {s: signal.signal(s, _terminate) for s in wanted}
    try:
        yield
    finally:
        for s, handler in before.items():
            signal.signal(s, handler)


def main(argv: Sequence[str] | None = None) -> int:
    """Run the command line; return the exit code (the console script passes it to ``sys.exit``)."""
    logging.basicConfig(level=logging.WARNING, format="rnapipe: %(levelname)s: %(message)s")
    with _stop_signals():
        return _main(argv)


def _main(argv: Sequence[str] | None) -> int:
    try:
        parser = build_parser()
        try:
            args = parser.parse_args(ensemble.mea_argument(_bare_jobs(list(sys.argv[1:] if argv is None else argv))))
        except SystemExit as done:  # --help, --version
            return int(done.code or 0)
        if args.command is None:
            parser.print_help(sys.stderr)
            return errors.EXIT_INPUT
        return args.run(args)
    except NoGpu as err:                    # the layers below say device 'gpu'; the command says --device gpu
        _print_error(_one_line(NoGpu(_as_flag(err.what), _as_flag(err.instead))))
        return err.exit_code
    except RnapipeError as err:
        _print_error(_one_line(err))
        return err.exit_code
    except Terminated as stop:
        name = signal.Signals(stop.signum).name
        _print_error(f"stopped by {name}")
        _exit_now_if_threads(128 + stop.signum)
        return 128 + stop.signum
    except KeyboardInterrupt:
        _print_error("interrupted")
        _exit_now_if_threads(errors.EXIT_INTERRUPTED)
        return errors.EXIT_INTERRUPTED
    except BrokenPipeError:
        # Python's recipe: point stdout at devnull so the flush at exit does not fail again.
        with contextlib.suppress(OSError):
            os.dup2(os.open(os.devnull, os.O_WRONLY), sys.stdout.fileno())
        return EXIT_BROKEN_PIPE
    except Exception as err:  # a bug: one line, the traceback only on request
        if os.environ.get("RNAPIPE_DEBUG"):
            import traceback

            traceback.print_exc()
        _print_error(f"internal error: {type(err).__name__}: {_one_line(err)} (please report this bug; "
                     "RNAPIPE_DEBUG=1 shows the traceback)")
        return errors.EXIT_INTERNAL


def _as_flag(what: str) -> str:
    """``device 'gpu'`` (the API's words) as the command line's ``--device gpu``; other words unchanged."""
    if what.startswith("device '") and what.endswith("'"):
        return f"--device {what[len('device '):].strip(chr(39))}"
    return what


def _bare_jobs(argv: list[str]) -> list[str]:
    """RNAfold's -j takes its number attached (-j4) or none: a bare -j (or --jobs) followed by something that
    is not a number means every core, so ``-j in.fa`` does not read the input's name as the number."""
    out = []
    for k, token in enumerate(argv):
        if token == "--":
            return out + argv[k:]
        following = argv[k + 1] if k + 1 < len(argv) else None
        if token in ("-j", "--jobs") and not (following is not None and following.isdigit()):
            token = "--jobs=0"
        out.append(token)
    return out


def _print_error(message: str) -> None:
    with contextlib.suppress(Exception):
        sys.stderr.write(f"rnapipe: error: {message}\n")
        sys.stderr.flush()


def _exit_now_if_threads(code: int) -> None:
    """Engine threads run nogil kernels that cannot be stopped; leaving normally would wait for them."""
    if threading.active_count() > 1 and threading.current_thread() is threading.main_thread():
        with contextlib.suppress(Exception):
            sys.stdout.flush()
        os._exit(code)


def stderr_say(quiet: bool) -> Callable[[str], None] | None:
    """The notes of a run, one ``rnapipe: ...`` line each on stderr; None (no notes) with ``quiet``."""
    return None if quiet else _note


if __name__ == "__main__":
    sys.exit(main())
