"""CPU engines (Numba), one module per algorithm: :mod:`.nussinov` (Chang et al.'s recurrence, Li et al.'s
cache-efficient and multicore versions), :mod:`.fourrussians` (Venkatachalam et al.'s two-vector method and
variants), :mod:`.zuker` (minimum free energy, Turner 2004) with :mod:`.zuker_packed` (its entry for the hybrid's
CPU threads: records of a packed text in one compiled call); :mod:`.batch` runs per-sequence folds over a pool
of threads, longest first, within a memory budget."""
