"""FASTA input as packed records: :mod:`.scan` (compiled passes over raw bytes: parse, normalise, validate,
hash ids), :mod:`.ids` (duplicate ids over a whole stream without holding them), :mod:`.reader` (blocks of
records read and parsed on threads, with the same outcome record for record as :func:`rnapipe.io.read_records`)."""
