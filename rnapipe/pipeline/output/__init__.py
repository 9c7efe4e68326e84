"""Outputs of a fold: :mod:`.render` (db and TSV text of a chunk in one compiled pass) and :mod:`.sinks`
(each output's part file, compressed by suffix, renamed onto the output name when the run is complete)."""
