"""The ``rnapipe`` command: the argument parser and ``fold``/``eval`` in :mod:`.main`, the workflow's
commands (``prepare``, ``profile``, ``partition``, ``merge``) and their printing in :mod:`.workflow`. Only
this package and the API turn errors into messages and exit codes, print, or name command-line flags."""

from .main import main

__all__ = ["main"]
