"""The ``rnapipe`` command: the argument parser, ``fold``, ``fold-job`` (a workflow job's fold) and ``eval`` in
:mod:`.main`, the workflow's other commands (``prepare``, ``profile``, ``partition``, ``merge``,
``resources``) and their printing in :mod:`.workflow`. Only this package and the API turn errors into messages
and exit codes, print, or name command-line flags (tests/test_layers.py holds the pipeline to that)."""

import sys

from .main import main

__all__ = ["command", "main"]


def command() -> int:
    """The ``rnapipe`` console command and ``python -m rnapipe``: :func:`main`, in a process of its own that keeps
    SciPy out. Numba imports SciPy as it starts, only to offer linear algebra inside compiled code, which
    rnapipe's engines do not use: 0.1-0.25 s of every command's start on a host that has SciPy."""
    sys.modules.setdefault("scipy", None)      # an import of scipy fails at once, as where it is not installed
    return main()
