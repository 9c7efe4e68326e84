"""GPU engines (CUDA C through CuPy). Nothing here imports CuPy until a kernel is asked for."""
