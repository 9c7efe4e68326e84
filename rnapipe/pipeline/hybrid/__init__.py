"""CPU ∥ GPU (Lei et al.'s hybrid Zuker): :mod:`.costmodel` (seconds per record on each device),
:mod:`.profile` (the host's profile, measured or cached), :mod:`.static` (a batch split once on the profile,
B = N / (K + 1) generalised), :mod:`.dynamic` (each batch planned on the costs measured so far),
:mod:`.folder` (the hybrid folder that runs a split batch) and :mod:`.auto` (``--device auto``)."""
