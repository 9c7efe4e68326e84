#!/usr/bin/env bash
# Issue #23's drop-in comparison on a GPU machine, from the repository root: benchmarks/rnafold_dropin.py on the
# GPU engine and the hybrid (by default), its references taken from a cache carried from a checkout that computed
# them (a fresh device host would spend minutes of ViennaRNA per set and option):
#   bash benchmarks/device_dropin.sh CACHE SETS OPTIONS [DEVICES]
# For example, here first (the cache folder of a checkout that ran the harness: .cache/rnafold_dropin):
#   mkdir -p .scratch/cache-slim/random
#   cp -r .cache/rnafold_dropin/{mirbase,trna,known} .scratch/cache-slim/
#   for o in noLP d0 T25 maxBPspan150 noGU; do cp -r .cache/rnafold_dropin/random/$o .scratch/cache-slim/random/; done
# then, in one device call carrying .scratch/cache-slim, a wheels folder and .data (64 MiB in all: biopython,
# viennarna, pytest_xdist and execnet take 17 MB, the shared sets' and random's references ~1.3 MB an option):
#   WHEELS=.scratch/whl2 bash benchmarks/device_dropin.sh .scratch/cache-slim shared,random noLP,d0,T25,maxBPspan150,noGU
# A fresh host compiles each option's kernels on its first set (tens of seconds an option). The table goes to
# $OUT/dropin.md (--no-append: RESULTS.md is written here, not there), the whole log to $OUT/dropin.log.
set -uo pipefail
out="${OUT:-/tmp/dropin-out}"
mkdir -p "$out"
if [ -n "${WHEELS:-}" ]; then
  python3 -m pip install -q --no-index --no-deps --no-compile --no-cache-dir --upgrade --target /tmp/site "$WHEELS"/*.whl
fi
source benchmarks/device_env.sh
if [ -d .data ] && [ ! -e ../shared/data ]; then
  mkdir -p ../shared && ln -sfn "$PWD/.data" ../shared/data
fi
cache=$1 sets=$2 options=$3 devices=${4:-gpu,hybrid}
gpu=$(nvidia-smi --query-gpu=name --format=csv,noheader | head -1)
echo "host: $(nproc) CPUs, $gpu" | tee "$out/dropin.log"
python3 benchmarks/rnafold_dropin.py --sets "$sets" --options "$options" --devices "$devices" --jobs "$(nproc)" \
  --cache "$cache" --no-append --machine "$gpu, $(nproc) CPUs" 2>&1 | tee -a "$out/dropin.log" | grep '^|' > "$out/dropin.md"
