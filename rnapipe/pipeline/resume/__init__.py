"""A run that survives being killed: :mod:`.journal` (what is finished, beside the first output),
:mod:`.run` (``rnapipe fold``'s run: inputs to outputs a chunk at a time, resumed from the journal) and
:mod:`.progress` (progress by predicted work)."""
