"""Model options for Zuker MFE folding: RNAfold's defaults unless told otherwise.

Fixed, as in ``RNAfold`` without options: hairpins of at least 3 unpaired nucleotides, interior loops of at
most 30 unpaired nucleotides, special hairpins (tri-, tetra-, hexaloops) on, no G-quadruplexes, standard salt
(no correction), N and other IUPAC codes never pair.
Adjustable: ``temperature`` (°C, RNAfold ``-T``), ``dangles`` (0 or 2, RNAfold ``-d0`` / ``-d2``; 2 is
the default), ``params`` (a ViennaRNA v2.0 parameter file, RNAfold ``--paramFile``; ``None`` is
Turner 2004), and the pairing rules, each off by default as in RNAfold:

* ``no_lp`` (RNAfold ``--noLP``): no lonely pairs: every pair stacks on a pair inside or outside it;
* ``no_gu`` (``--noGU``): no GU pairs at all;
* ``no_closing_gu`` (``--noClosingGU``): a GU pair closes no hairpin, multiloop, bulge or interior loop and is
  the inner pair of no bulge or interior loop: GU pairs only inside helices (stacked on both sides), or
  ending them towards the exterior loop or a multiloop (ViennaRNA's ``noGUclosure``);
* ``max_bp_span`` (``--maxBPspan``): a pair i·j spans at most this many nucleotides, j - i + 1 <= span
  (``None``: no limit).

and ``enforce_constraint`` (RNAfold ``--enforceConstraint``: the pairs of a hard-constraint line, and its ``|``,
must form; the constraint lines themselves are per-record data, rnapipe.constraints).
"""

from __future__ import annotations

import math
import numbers
from dataclasses import dataclass, fields
from functools import lru_cache
from pathlib import Path

from .errors import UsageError

DANGLE_MODELS = (0, 2)


ABSOLUTE_ZERO = -273.15
# Above this the rescaled loop energies leave the integer range the engines hold (RNAfold's own tables are
# measured near 37 °C; far from it the model extrapolates).
MAX_TEMPERATURE = 1000.0

# The pairing rules ride with the energy tables the engines read: with a rule on, Model.tables() appends them
# to the RULES scalars of rnapipe.params' tables, at these indices (a span of 0: no limit); with every rule off
# the tables are rnapipe.params' own (an engine reads missing rules as off).
RULES = 8
RULE_NO_LP, RULE_NO_GU, RULE_NO_CLOSING_GU, RULE_MAX_BP_SPAN = range(RULES, RULES + 4)
# The options of the pairing rules, each with the value that leaves the rule off.
PAIRING_DEFAULTS = {"no_lp": False, "no_gu": False, "no_closing_gu": False, "max_bp_span": None}


@dataclass(frozen=True)
class Model:
    temperature: float = 37.0
    dangles: int = 2
    params: str | Path | None = None
    enforce_constraint: bool = False
    no_lp: bool = False
    no_gu: bool = False
    no_closing_gu: bool = False
    max_bp_span: int | None = None

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
        for name in ("no_lp", "no_gu", "no_closing_gu"):
            value = getattr(self, name)
            if not isinstance(value, bool):
                raise UsageError(f"{name} must be True or False, not {value!r}")
            object.__setattr__(self, name, bool(value))
        span = self.max_bp_span
        if span is not None:
            if isinstance(span, bool) or not isinstance(span, numbers.Integral) or span < 1:
                raise UsageError(f"max_bp_span must be a whole number of at least 1 (the most nucleotides a pair "
                                 f"i·j may span, j - i + 1), or None for no limit; not {span!r}")
            object.__setattr__(self, "max_bp_span", int(span))
        if not isinstance(self.enforce_constraint, bool):
            raise UsageError(f"enforce_constraint must be True or False, not {self.enforce_constraint!r}")

    @classmethod
    def from_options(cls, options: dict | None) -> "Model":
        """Build from an engine options dict (keys: the fields; others are ignored)."""
        options = options or {}
        kwargs = {f.name: options[f.name] for f in fields(cls)
                  if f.name in options and options[f.name] is not None}
        return cls(**kwargs)

    def pairing(self) -> dict:
        """The pairing rules that are on, by option name (empty when all are off, RNAfold's default)."""
        return {name: getattr(self, name) for name, off in PAIRING_DEFAULTS.items() if getattr(self, name) != off}

    def tables(self):
        """The frozen energy tables for this model (cached); with a pairing rule on, the rules appended to the
        scalars (see RULE_NO_LP and the others)."""
        from . import params

        if not self.pairing():
            return params.tables(self.params, self.temperature, self.dangles)
        return _tables_with_rules(self.params, self.temperature, self.dangles, self.no_lp, self.no_gu,
                                  self.no_closing_gu, self.max_bp_span or 0)


@lru_cache(maxsize=32)
def _tables_with_rules(path, temperature: float, dangles: int, no_lp: bool, no_gu: bool, no_closing_gu: bool,
                       span: int):
    import numpy as np

    from . import params

    T = params.tables(path, temperature, dangles)
    if T.scalars.shape[0] != RULES:
        raise AssertionError(f"the energy tables have {T.scalars.shape[0]} scalars, the rules expect {RULES}")
    scalars = np.concatenate([T.scalars, np.array([no_lp, no_gu, no_closing_gu, span], dtype=T.scalars.dtype)])
    scalars.setflags(write=False)
    return T._replace(scalars=scalars)
