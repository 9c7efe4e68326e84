"""rnapipe: exact RNA secondary-structure folding (Nussinov, Zuker MFE) for many sequences on CPU and GPU."""

__version__ = "0.1.0"

from .api import Result, Results, fold  # noqa: E402
def eval_structure(*args, **kwargs): from .energy import eval_structure as f; return f(*args, **kwargs)  # noqa: E302,E402,E704  (lazy: no Numba import until used)

__all__ = ["__version__", "fold", "Result", "Results"]
