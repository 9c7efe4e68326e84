"""rnapipe: exact RNA secondary-structure folding (Nussinov, Zuker MFE) for many sequences on CPU and GPU."""

__version__ = "0.1.0"

from .api import Result, Results, fold  # noqa: E402

__all__ = ["__version__", "fold", "Result", "Results"]
