"""GPU engines (CUDA C through CuPy). Nothing here imports CuPy until a kernel is asked for.

``devices``: the GPUs of the host (count, names, checks, memory budget, dealing sequences to several);
``loader``: the one CuPy ``RawModule`` loader of ``kernels/*.cu``; ``nussinov``, ``zuker``, ``zuker_short``: the
engines; ``zuker_tables``: the energy tables of the Zuker kernels, as they lie in device memory."""
