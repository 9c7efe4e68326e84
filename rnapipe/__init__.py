"""rnapipe: exact RNA secondary-structure folding (Nussinov, Zuker MFE) for many sequences on CPU and GPU."""

from ._version import __version__
from .api import Result, Results, fold, fold_iter


def eval_structure(sequence: str, structure: str, temperature: float = 37.0, dangles: int = 2,
                   params=None) -> int:
    """Free energy (integer dcal/mol) of a dot-bracket structure under RNAfold's model, like RNAeval: any
    structure RNAeval scores (non-canonical pairs, short hairpins) gets ViennaRNA's energy.

    See :func:`rnapipe.energy.eval_structure`; imported on first use so that ``import rnapipe`` stays light.
    """
    from .energy import eval_structure as _eval

    return _eval(sequence, structure, temperature=temperature, dangles=dangles, params=params)


__all__ = ["__version__", "fold", "fold_iter", "eval_structure", "Result", "Results"]
