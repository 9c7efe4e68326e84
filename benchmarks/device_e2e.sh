#!/usr/bin/env bash
# The end-to-end benchmark and the streaming GPU tests on a GPU machine with no package index: carried
# wheels (biopython, viennarna) in .whl/, the shared miRBase hairpins copied to .data/ (both git-ignored).
#   bash benchmarks/device_e2e.sh tests       # pytest -m gpu on the streaming tests
#   bash benchmarks/device_e2e.sh bench SETS [N]  # benchmarks/end_to_end.py --device gpu --sets SETS, N CLI runs
#   bash benchmarks/device_e2e.sh workflow [ARGS]  # benchmarks/workflow_vs_hybrid.py ARGS (snakemake among the wheels)
set -euo pipefail
source benchmarks/device_env.sh
out="${OUT:-/tmp}"
case "$1" in
  tests) shift; python3 -m pytest -m gpu -q -p no:cacheprovider "$@" 2>&1 | tee "$out/gpu_tests.log" ;;
  bench) python3 benchmarks/end_to_end.py --device gpu --sets "$2" --results "$out/RESULTS_e2e.md" \
           --work /tmp/e2e --cli-repeat "${3:-1}" 2>&1 | tee -a "$out/bench.log" ;;
  workflow) shift; python3 benchmarks/workflow_vs_hybrid.py "$@" 2>&1 | tee -a "$out/workflow.log" ;;
esac
