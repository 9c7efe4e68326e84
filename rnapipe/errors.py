"""Errors that reach the user as one line, and the exit codes the CLI gives them.

Exit codes (documented in the README and in ``rnapipe --help``):

====  ==========================================================================
0     success (with ``--on-invalid skip``: every valid record was folded)
1     internal error (a bug: please report it)
2     bad input or usage (invalid FASTA or option, missing file); a full disk
3     the requested algorithm, variant or device is not available here
4     not enough memory for a sequence (``--on-invalid error``; or run out of)
130   interrupted (Ctrl-C); nothing partial is left under the output name
====  ==========================================================================
"""

from __future__ import annotations

import errno
import re

EXIT_OK = 0
EXIT_INTERNAL = 1
EXIT_INPUT = 2
EXIT_UNAVAILABLE = 3
EXIT_MEMORY = 4
EXIT_INTERRUPTED = 130


class RnapipeError(Exception):
    """Base class: an error with a message fit to print as one line."""

    exit_code = EXIT_INTERNAL


class InputError(RnapipeError):
    """Bad input: names the file, the record and the 1-based position where known."""

    exit_code = EXIT_INPUT

    def __init__(self, message: str, file: str | None = None, record: str | None = None,
                 position: int | None = None):
        self.reason = message
        self.file = file
        self.record = record
        self.position = position
        super().__init__(self.format())

    def format(self) -> str:
        where = []
        if self.file is not None:
            where.append(str(self.file))
        if self.record is not None:
            where.append(f"record '{shown_id(self.record)}'")
        if self.position is not None:
            where.append(f"position {self.position}")
        prefix = ", ".join(where)
        return f"{prefix}: {self.reason}" if prefix else self.reason


class NoStructure(InputError):
    """A record's hard constraints leave no structure that can form; ``index``: its input index (the stream adds
    the file's name)."""

    def __init__(self, message: str, file: str | None = None, record: str | None = None,
                 position: int | None = None, index: int | None = None):
        self.index = index
        super().__init__(message, file, record, position)


class UsageError(RnapipeError):
    """An option or a combination of options that cannot be honoured."""

    exit_code = EXIT_INPUT


class UnavailableError(RnapipeError):
    """The requested algorithm, variant or device does not exist (yet) or is missing here."""

    exit_code = EXIT_UNAVAILABLE


class NoSpaceError(RnapipeError):
    """A disk rnapipe writes to is full or over its quota: the message names the directory and how to go on.
    Exit 2, as for an output that cannot be written."""

    exit_code = EXIT_INPUT


def is_no_space(err: BaseException) -> bool:
    """Whether ``err`` says a disk is full or over its quota (ENOSPC, EDQUOT)."""
    return isinstance(err, OSError) and err.errno in (errno.ENOSPC, getattr(errno, "EDQUOT", errno.ENOSPC))


def no_space_reason(err: OSError) -> str:
    """``no space left on the device`` or ``disk quota exceeded``: what an :func:`is_no_space` error means."""
    return "no space left on the device" if err.errno == errno.ENOSPC else "disk quota exceeded"


class SequenceTooLongError(InputError):
    """Folding this sequence would need more memory than is available."""

    exit_code = EXIT_MEMORY


class OutOfMemoryError(SequenceTooLongError, MemoryError):
    """An engine ran out of memory on a batch that the memory estimate let through; names the longest record of
    the batch (``index``: its input index). A MemoryError too, for callers that catch those."""

    def __init__(self, message: str, file: str | None = None, record: str | None = None,
                 position: int | None = None, index: int | None = None):
        self.index = index
        super().__init__(message, file, record, position)


_ESCAPED = re.compile("[\udc80-\udcff]")


def shown_id(record_id: str) -> str:
    """A record id as messages show it: a byte of the input that is not UTF-8 text (kept in the id as a
    surrogate escape, see :mod:`rnapipe.io.idtext`) as ``\\xNN``."""
    return _ESCAPED.sub(lambda m: f"\\x{ord(m.group()) - 0xDC00:02x}", record_id)
