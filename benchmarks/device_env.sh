# Sourced by the device scripts (device_e2e.sh, device_hybrid.sh), from the repository root, on a GPU machine
# with no package index: installs the carried wheels of .whl/ (git-ignored) when there are any, puts them and
# this checkout on PYTHONPATH, and writes bytecode for rnapipe, the wheels and the packages a fold imports, as
# `pip install` leaves them (the device image has none and sets PYTHONDONTWRITEBYTECODE, so every process would
# compile its imports).
if compgen -G ".whl/*.whl" > /dev/null; then
  python3 -m pip install -q --no-index --no-deps --no-compile --no-cache-dir --upgrade --target /tmp/site .whl/*.whl
fi
export PYTHONPATH="/tmp/site:$PWD" PYTHONUNBUFFERED=1
dirs=$(python3 -c "
import importlib, os
for name in ('numba', 'llvmlite', 'cupy', 'cupy_backends', 'numpy', 'psutil', 'scipy', 'matplotlib', 'snakemake'):
    try:
        print(os.path.dirname(importlib.import_module(name).__file__))
    except ImportError:
        pass")
python3 -m compileall -q -j 0 rnapipe /tmp/site $dirs > /dev/null 2>&1 || true
