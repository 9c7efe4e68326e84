"""What a fold with the partition function may ask for: its settings (:class:`Settings`), and the check that
refuses what its engine does not take (:func:`refusal`). Light (no Numba): the command line reads it before it
loads an engine."""

from __future__ import annotations

import math
from dataclasses import dataclass

from ...errors import UsageError

THRESHOLD = 1e-5             # the default lowest pair probability of the bpp output (RNAfold's dot plot's)
GAMMA = 1.0                  # the default MEA gamma (RNAfold's --MEA)


@dataclass(frozen=True)
class Settings:
    """``threshold``: pairs of probability above it are kept (bpp, ``Ensemble.i/j/p``); ``gamma``: the MEA
    structure's weight of pairs against unpaired nucleotides; ``mea``: db output prints the MEA line (RNAfold's
    ``--MEA``)."""

    threshold: float = THRESHOLD
    gamma: float = GAMMA
    mea: bool = False

    def __post_init__(self):
        for name in ("threshold", "gamma"):
            value = getattr(self, name)
            if isinstance(value, bool) or not isinstance(value, (int, float)) or not math.isfinite(value):
                raise UsageError(f"{name} must be a number, not {value!r}")
            object.__setattr__(self, name, float(value))
        if not 0.0 <= self.threshold <= 1.0:
            raise UsageError(f"the pair probability threshold must be from 0 to 1, not {self.threshold!r}")
        if self.gamma <= 0.0:
            raise UsageError(f"the MEA gamma must be above 0, not {self.gamma!r}")

    def options(self) -> dict:
        """The settings as the journal and a fold job's options record them."""
        out = {"partition": True, "bpp_threshold": self.threshold, "mea_gamma": self.gamma}
        if self.mea:
            out["mea"] = True
        return out


# What the CPU partition engine (rnapipe.cpu.partition) takes: RNAfold's default pairing rules only, no hard
# constraints, no SHAPE data, the Zuker model.
NOT_TAKEN = ("no_lp", "no_gu", "no_closing_gu", "max_bp_span", "enforce_constraint", "constraints", "shape")


def refusal(algorithm: str, given: list[str]) -> tuple[str, str] | None:
    """Why a fold with the partition function cannot be made as asked: ``(what, reason)`` with ``what`` the
    first of ``given`` (the options of :data:`NOT_TAKEN` the request has, named as the caller names them) or
    the algorithm; None where it can. It folds on every device (:func:`rnapipe.pipeline.choose.folder_for`)."""
    if algorithm != "zuker":
        return "algorithm", f"the partition function is Zuker's energy model's, not {algorithm}'s"
    if given:
        return given[0], "the partition function's engine takes RNAfold's default pairing rules only, without " \
                         "hard constraints or SHAPE data (for now)"
    return None
