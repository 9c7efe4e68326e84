"""A named point where a test of kill and resume can stop a run."""

from __future__ import annotations

import os
import time


def pause_point(name: str) -> None:
    """Tests of kill and resume: with ``RNAPIPE_PAUSE_AT=name`` the run stops here (it creates the file
    ``RNAPIPE_PAUSE_FILE`` and sleeps) until the test kills it."""
    if os.environ.get("RNAPIPE_PAUSE_AT") == name:
        with open(os.environ["RNAPIPE_PAUSE_FILE"], "w") as handle:
            handle.write(str(os.getpid()))
        while True:
            time.sleep(1)
