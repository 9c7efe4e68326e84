#!/usr/bin/env bash
# The README's quick start as a new user's first run (issue 26): `snakemake --cores all` on the bundled example,
# in a fresh copy of a commit of this repository, with empty caches (Numba's and rnapipe's profile cache), as on
# a fresh machine. Prints the run's total seconds and each job's seconds from Snakemake's benchmark files, then
# the same run again with the caches kept (results/ removed), as a later run on the machine.
#   bash benchmarks/quick_start.sh [RUNS] [COMMIT]     # default: 3 runs of HEAD
# Run from the repository root, in an environment with rnapipe's dependencies and Snakemake (the rules run the
# copy's own rnapipe). Extra Snakemake arguments: SNAKEMAKE_ARGS="--config 'jobs={gpu: 0}'".
set -euo pipefail
runs="${1:-3}"
commit="${2:-HEAD}"
repo="$(git rev-parse --show-toplevel)"
python="${PYTHON:-python}"
echo "commit $(git -C "$repo" rev-parse --short "$commit"); $(nproc) CPUs; load $(cut -d' ' -f1-3 /proc/loadavg)"
for run in $(seq 1 "$runs"); do
  tmp="$(mktemp -d)"
  mkdir "$tmp/src" "$tmp/cache"
  git -C "$repo" archive "$commit" | tar -x -C "$tmp/src"
  start=$(date +%s.%N)
  (cd "$tmp/src" && env -u RNAPIPE_CACHE XDG_CACHE_HOME="$tmp/cache" NUMBA_CACHE_DIR="$tmp/cache/numba" \
     bash -c "$python -m snakemake --cores all ${SNAKEMAKE_ARGS:-}" > "$tmp/console.txt" 2>&1) \
    || { echo "run $run failed; its console: $tmp/console.txt"; exit 1; }
  end=$(date +%s.%N)
  jobs=""
  for f in "$tmp"/src/results/benchmarks/*/*.tsv; do
    name="$(basename "$(dirname "$f")")"
    jobs+=" $name $(awk 'NR == 2 {printf "%.1f", $1}' "$f")"
  done
  first="$(echo "$end - $start" | bc)"
  rm -rf "$tmp/src/results" "$tmp/src/.snakemake"
  start=$(date +%s.%N)
  (cd "$tmp/src" && env -u RNAPIPE_CACHE XDG_CACHE_HOME="$tmp/cache" NUMBA_CACHE_DIR="$tmp/cache/numba" \
     bash -c "$python -m snakemake --cores all ${SNAKEMAKE_ARGS:-}" > "$tmp/console2.txt" 2>&1) \
    || { echo "run $run failed again; its console: $tmp/console2.txt"; exit 1; }
  end=$(date +%s.%N)
  printf 'run %d: %.1f s in all; jobs (s):%s; again with the caches: %.1f s\n' "$run" "$first" "$jobs" \
    "$(echo "$end - $start" | bc)"
  rm -rf "$tmp"
done
echo "load after $(cut -d' ' -f1-3 /proc/loadavg)"
