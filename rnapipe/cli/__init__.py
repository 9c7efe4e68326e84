"""The ``rnapipe`` command: the argument parser, ``fold``, ``fold-job`` (a workflow job's fold) and ``eval`` in
:mod:`.main`, the workflow's other commands (``prepare``, ``profile``, ``partition``, ``merge``,
``resources``) and their printing in :mod:`.workflow`. Only this package and the API turn errors into messages
and exit codes, print, or name command-line flags (tests/test_layers.py holds the pipeline to that)."""

from .main import main

__all__ = ["main"]
