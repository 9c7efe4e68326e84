"""CPU engines (Numba): nussinov, fourrussians, zuker."""
