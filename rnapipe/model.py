"""Model options for Zuker MFE folding: RNAfold's defaults unless told otherwise.

Fixed, as in ``RNAfold`` without options: lonely pairs allowed, hairpins of at least 3 unpaired nucleotides,
interior loops of at most 30 unpaired nucleotides, special hairpins (tri-, tetra-, hexaloops) on, GU closure
allowed, no G-quadruplexes, standard salt (no correction), N and other IUPAC codes never pair.
Adjustable: ``temperature`` (°C, RNAfold ``-T``), ``dangles`` (0 or 2, RNAfold ``-d0`` / ``-d2``; 2 is
the default) and ``params`` (a ViennaRNA v2.0 parameter file, RNAfold ``--paramFile``; ``None`` is
Turner 2004) and ``enforce_constraint`` (RNAfold ``--enforceConstraint``: the pairs of a hard-constraint line,
and its ``|``, must form; the constraint lines themselves are per-record data, rnapipe.constraints).
"""

from __future__ import annotations

import math
from dataclasses import dataclass

import numpy as np
from pathlib import Path

from .errors import UsageError

DANGLE_MODELS = (0, 2)


ABSOLUTE_ZERO = -273.15
# Above this the rescaled loop energies leave the integer range the engines hold (RNAfold's own tables are
# measured near 37 °C; far from it the model extrapolates).
MAX_TEMPERATURE = 1000.0


@dataclass(frozen=True)
class Model:
    temperature: float = 37.0
    dangles: int = 2
    params: str | Path | None = None
    enforce_constraint: bool = False

    def __post_init__(self):
        try:
            t = float(self.temperature)
        except (TypeError, ValueError):
            raise UsageError(f"temperature must be a number of °C, not {self.temperature!r}") from None
        if not math.isfinite(t) or not ABSOLUTE_ZERO < t < MAX_TEMPERATURE:
            raise UsageError(f"temperature {self.temperature} °C is not a usable temperature (above "
                             f"{ABSOLUTE_ZERO} and below {MAX_TEMPERATURE:g} °C)")
        object.__setattr__(self, "temperature", t)
        if self.dangles not in DANGLE_MODELS or isinstance(self.dangles, bool):
            raise UsageError(f"dangles must be 0 or 2 (RNAfold -d0 or -d2), not {self.dangles!r}")
        object.__setattr__(self, "dangles", int(self.dangles))
        if not isinstance(self.enforce_constraint, (bool, np.bool_)):
            raise UsageError(f"enforce_constraint must be True or False, not {self.enforce_constraint!r}")
        object.__setattr__(self, "enforce_constraint", bool(self.enforce_constraint))

    @classmethod
    def from_options(cls, options: dict | None) -> "Model":
        """Build from an engine options dict (keys temperature, dangles, params, enforce_constraint; others are
        ignored)."""
        options = options or {}
        kwargs = {k: options[k] for k in ("temperature", "dangles", "params", "enforce_constraint")
                  if k in options and options[k] is not None}
        return cls(**kwargs)

    def tables(self):
        """The frozen energy tables for this model (cached)."""
        from . import params
        return params.tables(self.params, self.temperature, self.dangles)
