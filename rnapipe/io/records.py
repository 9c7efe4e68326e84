"""The two record types that pass between input, engines and output."""

from __future__ import annotations

from typing import NamedTuple


class Record(NamedTuple):
    """A validated input sequence: upper case, T→U; ``index`` is its 0-based place in the input."""

    id: str
    sequence: str
    index: int
    file: str | None = None


class Rejected(NamedTuple):
    """A record left out under ``--on-invalid skip``, with the one-line reason."""

    index: int
    id: str | None
    file: str | None
    reason: str
