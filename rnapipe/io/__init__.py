"""Sequence input (FASTA / gzipped FASTA through Biopython, validation) and result writers.

See :mod:`rnapipe.io.fasta` for reading and :mod:`rnapipe.io.writers` for output formats; the formats' text
is made by :mod:`rnapipe.io.render`, records travel as packed texts (:mod:`rnapipe.io.packed`).
"""

from .fasta import as_records, open_text, read_dotbracket, read_records, validate_sequence
from .records import Record, Rejected

__all__ = ["Record", "Rejected", "as_records", "open_text", "read_dotbracket", "read_records",
           "validate_sequence"]
