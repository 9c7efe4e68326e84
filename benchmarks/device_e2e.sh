#!/usr/bin/env bash
# The end-to-end benchmark and the streaming GPU tests on a GPU machine with no package index: carried
# wheels (biopython, viennarna) in .whl/, the shared miRBase hairpins copied to .data/ (both git-ignored).
#   bash benchmarks/device_e2e.sh tests       # pytest -m gpu on the streaming tests
#   bash benchmarks/device_e2e.sh bench SETS [N]  # benchmarks/end_to_end.py --device gpu --sets SETS, N CLI runs
#   bash benchmarks/device_e2e.sh workflow [ARGS]  # benchmarks/workflow_vs_hybrid.py ARGS (snakemake among the wheels)
set -euo pipefail
python3 -m pip install -q --no-index --no-deps --no-compile --no-cache-dir --upgrade --target /tmp/site .whl/*.whl
export PYTHONPATH="/tmp/site:$PWD" PYTHONUNBUFFERED=1
out="${OUT:-/tmp}"
# Bytecode for rnapipe, the carried wheels and the packages a fold imports, as `pip install` leaves them:
# the device image has none and sets PYTHONDONTWRITEBYTECODE, so every process would compile its imports.
dirs=$(python3 -c "
import importlib, os
for name in ('numba', 'llvmlite', 'cupy', 'cupy_backends', 'numpy', 'psutil', 'scipy', 'snakemake'):
    try:
        print(os.path.dirname(importlib.import_module(name).__file__))
    except ImportError:
        pass")
python3 -m compileall -q -j 0 rnapipe /tmp/site $dirs > /dev/null || true
case "$1" in
  tests) shift; python3 -m pytest -m gpu -q -p no:cacheprovider "$@" 2>&1 | tee "$out/gpu_tests.log" ;;
  bench) python3 benchmarks/end_to_end.py --device gpu --sets "$2" --results "$out/RESULTS_e2e.md" \
           --work /tmp/e2e --cli-repeat "${3:-1}" 2>&1 | tee -a "$out/bench.log" ;;
  workflow) shift; python3 benchmarks/workflow_vs_hybrid.py "$@" 2>&1 | tee -a "$out/workflow.log" ;;
esac
