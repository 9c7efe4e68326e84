#!/usr/bin/env bash
# A change that must keep behaviour and speed, checked on a GPU machine: this checkout against an older tree of
# rnapipe carried as .base/ (git-ignored; e.g. `git archive REV rnapipe | tar -x -C .base`), with the wheels of
# .whl/ and the shared transcripts copied to .data/ (both git-ignored) carried too. Writes into $OUT.
#   bash benchmarks/device_compare.sh tests [PYTEST ARGS]   # pytest -m gpu
#   bash benchmarks/device_compare.sh cpu                  # benchmarks/compare_trees.py: CPU engine, rnapipe fold on the CPU
#   bash benchmarks/device_compare.sh gpu                  # the same, rnapipe fold --device gpu (miRBase, whole chr19)
set -euo pipefail
source benchmarks/device_env.sh
out="${OUT:-/tmp}"
case "$1" in
  tests) shift; python3 -m pytest -m gpu -q -p no:cacheprovider "$@" 2>&1 | tee "$out/gpu_tests.log" ;;
  cpu)      # the CPU engine and rnapipe fold on the CPU
    python3 benchmarks/compare_trees.py --old .base --new . --threads "$(nproc)" --rounds 3 --work /tmp/compare \
      --engine 120:20000,500:1500 \
      --cli "trna=zuker:cpu:.data/tRNAs_GtRNAdb_6species.fa,mir=zuker:cpu:.data/miRBase21_hairpin_all_species.fa@2,r68=nussinov:cpu:random:68:500000@2" \
      --results "$out/RESULTS_cpu.md" 2>&1 | tee "$out/cpu.log" ;;
  gpu)      # rnapipe fold --device gpu: the miRBase hairpins and the whole chr19 cDNA
    gzip -dc benchmarks/data/homo_sapiens_GRCh38_chr19_ensembl_cdna.fa.gz > /tmp/chr19.fa
    python3 benchmarks/compare_trees.py --old .base --new . --threads "$(nproc)" --work /tmp/compare --engine "" \
      --cli "mirgpu=zuker:gpu:.data/miRBase21_hairpin_all_species.fa@2,chr19gpu=zuker:gpu:/tmp/chr19.fa@1" \
      --results "$out/RESULTS_gpu.md" 2>&1 | tee "$out/gpu.log" ;;
esac
