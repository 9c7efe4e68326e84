"""Outputs of a fold: :mod:`.sinks`, each output's part file (the chunks' text made by :mod:`rnapipe.io.render`,
compressed by suffix), renamed onto the output name when the run is complete."""
