"""``python -m rnapipe``: the same command as ``rnapipe``."""

import sys

from .cli import command

sys.exit(command())
