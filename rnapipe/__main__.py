"""``python -m rnapipe``: the same command as ``rnapipe``."""

import sys

from .cli import main

sys.exit(main())
