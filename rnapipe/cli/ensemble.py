"""The command line's partition function (RNAfold ``-p``): its options on ``fold`` and ``fold-job``, and the
settings they ask for, with what the CPU partition engine does not take refused in one line naming the flag
(:func:`rnapipe.pipeline.ensemble.request.refusal` says why)."""

from __future__ import annotations

import argparse

from ..errors import UsageError
from ..io.formats import PARTITION_FORMATS
from ..pipeline.ensemble.request import GAMMA, THRESHOLD, Settings, refusal

# The options the partition function's engine does not take, by rnapipe.fold's name, as the command names them.
FLAGS = {"no_lp": "--noLP", "no_gu": "--noGU", "no_closing_gu": "--noClosingGU", "max_bp_span": "--maxBPspan",
         "enforce_constraint": "--enforceConstraint", "constraint": "-C/--constraint", "shape": "--shape"}


def _probability(text: str) -> float:
    try:
        value = float(text)
    except ValueError:
        raise argparse.ArgumentTypeError(f"not a number: {text!r}") from None
    if not 0.0 <= value <= 1.0:
        raise argparse.ArgumentTypeError(f"must be a probability from 0 to 1, not {value}")
    return value


def _gamma(text: str) -> float:
    try:
        value = float(text)
    except ValueError:
        raise argparse.ArgumentTypeError(f"not a number: {text!r}") from None
    if not value > 0:
        raise argparse.ArgumentTypeError(f"must be above 0, not {value}")
    return value


def add_options(parser: argparse.ArgumentParser) -> None:
    group = parser.add_argument_group("partition function (Zuker, on the CPU or the GPUs; as RNAfold -p)")
    group.add_argument("-p", "--partition", action="store_true",
                       help="also the partition function, as RNAfold -p: ensemble free energy, pair probabilities, "
                       "MFE frequency, ensemble diversity, centroid and MEA structures (db prints RNAfold -p's "
                       "lines; formats bpp and unpaired)")
    group.add_argument("--MEA", dest="mea_line", action="store_true",
                       help="as RNAfold --MEA (implies -p): db also prints the MEA structure's line; --MEA=G sets "
                       "its gamma, as --mea-gamma G")
    group.add_argument("--mea-gamma", type=_gamma, metavar="G",
                       help=f"with -p: the MEA structure's gamma (default {GAMMA:g})")
    group.add_argument("--bpp-threshold", type=_probability, metavar="P",
                       help=f"with -p: the bpp output lists the pairs of probability above P (default {THRESHOLD:g})")


def mea_argument(argv: list[str]) -> list[str]:
    """RNAfold's ``--MEA=G`` as ``--MEA --mea-gamma G`` (a bare --MEA takes no value here, so that ``--MEA
    in.fa`` does not read the input's name as gamma)."""
    out = []
    for k, token in enumerate(argv):
        if token == "--":
            return out + argv[k:]
        if token.startswith("--MEA="):
            out += ["--MEA", "--mea-gamma", token[len("--MEA="):]]
        else:
            out.append(token)
    return out


def settings(args, formats: list[str | None]) -> Settings | None:
    """The partition function's settings of a ``fold`` or ``fold-job`` command (None without -p or --MEA);
    ``formats``: the outputs' formats (bpp and unpaired need -p). Refuses, in one line naming the flag, what the
    engine does not take (``--device auto`` folds it on the GPU where there is one)."""
    on = args.partition or args.mea_line
    if not on:
        for flag, value in (("--mea-gamma", args.mea_gamma), ("--bpp-threshold", args.bpp_threshold)):
            if value is not None:
                raise UsageError(f"{flag} applies with -p/--partition only")
        needing = [fmt for fmt in formats if fmt in PARTITION_FORMATS]
        if needing:
            raise UsageError(f"format {needing[0]} holds the partition function's results: add -p/--partition")
        return None
    given = [name for name in FLAGS if getattr(args, name, None)]
    if args.device == "hybrid" and getattr(args, "split", None) == "dynamic":
        raise UsageError("-p/--partition with --split dynamic: the partition function's hybrid split is static "
                         "(leave --split out, or --split static)")
    refused = refusal(args.algorithm, given)
    if refused is not None:
        what, why = refused
        shown = f"--algorithm {args.algorithm}" if what == "algorithm" else FLAGS.get(what, f"--{what}")
        raise UsageError(f"-p/--partition with {shown}: {why}")
    return Settings(threshold=THRESHOLD if args.bpp_threshold is None else args.bpp_threshold,
                    gamma=GAMMA if args.mea_gamma is None else args.mea_gamma, mea=bool(args.mea_line))
