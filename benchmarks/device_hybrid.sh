#!/usr/bin/env bash
# Hybrid CPU ∥ GPU on a GPU machine (issue 16), from the repository root, each form under 10 minutes:
#   bash benchmarks/device_hybrid.sh        # one GPU: profile, sweeps (about 6 min; SMALL_CALLS=1: the CPU
#                                           # engine's small calls too)
#   bash benchmarks/device_hybrid.sh identity  # 4. byte identity, then the hybrid's, CLI's and resume GPU tests
#   bash benchmarks/device_hybrid.sh cli    # profile, transcript sweep, whole chr19 through `rnapipe fold` (7-9 min)
#   bash benchmarks/device_hybrid.sh lengths  # the GPU's and the CPU's time by length, forced splits (5-7 min)
#   bash benchmarks/device_hybrid.sh two    # two GPUs and the CPU: profile, transcript sweep, identity (4-6 min)
# Carried wheels in .whl/ (biopython, viennarna: git-ignored) are installed when present. Writes into $OUT
# (else /tmp/hybrid-out): profile.txt, small_calls.txt, sweep_{random,transcripts}.{json,png},
# sweep.md, identity.txt, steps.log (with "two": profile2.txt, sweep2.{json,png,md}, identity2.txt).
set -uo pipefail
out="${OUT:-/tmp/hybrid-out}"
mkdir -p "$out"
source benchmarks/device_env.sh
export RNAPIPE_CACHE=/tmp/rnapipe-cache
gpus=$(nvidia-smi -L 2>/dev/null | wc -l)
log="$out/steps.log"
step() {        # step NAME SECONDS COMMAND...: run with a time limit, log its duration and exit code
  local name=$1 limit=$2; shift 2
  local t0=$SECONDS
  echo "== $name (limit ${limit}s)" | tee -a "$log"
  timeout "$limit" "$@"
  local rc=$?
  echo "== $name: exit $rc after $((SECONDS - t0)) s" | tee -a "$log"
}
echo "host: $(nproc) CPUs, $gpus GPU(s); $(nvidia-smi --query-gpu=name --format=csv,noheader | head -1)" | tee "$log"

# 1. this host's profile (also the one every later step reuses: RNAPIPE_CACHE)
if [ "${1:-one}" = two ]; then
  step profile2 110 bash -c "python3 -m rnapipe profile --gpus 0,1 2>&1 | tee '$out/profile2.txt'"
  step sweep2 240 python3 benchmarks/hybrid_sweep.py --gpus 0,1 --repeat 3 --point-repeat 1 --steps 16 \
    --sets "file:benchmarks/data/homo_sapiens_GRCh38_chr19_ensembl_cdna.fa.gz:1000:2500" \
    --json "$out/sweep2.json" --png "$out/sweep2.png" --results "$out/sweep2.md"
  step identity2 120 bash -c "python3 benchmarks/hybrid_identity.py --gpus 0,1 2>&1 | tee '$out/identity2.txt'"
  cat "$out/sweep2.md" 2>/dev/null
  echo "total: $SECONDS s" | tee -a "$log"
  exit 0
fi
if [ "${1:-one}" = lengths ]; then      # where the GPU's time goes by length (benchmarks/hybrid_lengths.py)
  step lengths 420 bash -c "python3 benchmarks/hybrid_lengths.py 2>&1 | tee '$out/lengths.txt'"
  echo "total: $SECONDS s" | tee -a "$log"
  exit 0
fi
if [ "${1:-one}" = cli ]; then           # what a user gets: the whole chr19 cDNA through `rnapipe fold`
  in=benchmarks/data/homo_sapiens_GRCh38_chr19_ensembl_cdna.fa.gz
  step profile 200 bash -c "python3 -m rnapipe profile > '$out/profile.txt' 2>&1"
  step sweep-transcripts 220 python3 benchmarks/hybrid_sweep.py --repeat 5 --point-repeat 1 --steps 16 \
    --sets "file:$in:1000:2500" --json "$out/sweep_transcripts.json" --png "$out/sweep_transcripts.png" \
    --results "$out/sweep.md"
  n=0
  for mode in gpu dynamic static gpu dynamic static; do   # alternating; the profile made above is reused
    if [ $mode = gpu ]; then dev=(--device gpu); else dev=(--device hybrid --split $mode); fi
    n=$((n + 1))
    t0=$(date +%s.%N)
    RNAPIPE_HYBRID_LOG="$out/batches_${n}_$mode.tsv" python3 -m rnapipe fold "$in" -o "/tmp/chr19.$mode.db" \
      "${dev[@]}" 2>&1 | grep -i "hybrid (\|error" | tail -2
    echo "cli $mode: $(python3 -c "import sys; print(f'{float(sys.argv[2]) - float(sys.argv[1]):.2f}')" "$t0" \
      "$(date +%s.%N)") s wall" | tee -a "$log"
  done
  cmp /tmp/chr19.gpu.db /tmp/chr19.dynamic.db && cmp /tmp/chr19.gpu.db /tmp/chr19.static.db && echo "cli: outputs identical"
  cat "$out/sweep.md"
  echo "total: $SECONDS s" | tee -a "$log"
  exit 0
fi
if [ "${1:-one}" = identity ]; then     # byte identity (4.) and the hybrid's GPU tests, a call of their own
  step identity 240 bash -c "python3 benchmarks/hybrid_identity.py 2>&1 | tee '$out/identity.txt'"
  grep -c DIFFERENT "$out"/identity*.txt
  step overhead 60 bash -c "python3 benchmarks/hybrid_lengths.py --overhead 2>&1 | tee '$out/overhead.txt'"
  step gpu-tests 400 python3 -m pytest -q -m gpu tests/test_hybrid.py tests/test_cli.py tests/test_resume.py tests/test_workflow.py
  echo "total: $SECONDS s" | tee -a "$log"
  exit 0
fi
step profile 200 bash -c "python3 -m rnapipe profile 2>&1 | tee '$out/profile.txt'"

# 2. the CPU engine's fixed cost for small calls (per-call pool before, kept pool now, with a GIL-busy thread)
if [ -n "${SMALL_CALLS:-}" ]; then
  step small-calls 45 bash -c "python3 benchmarks/cpu_small_calls.py --repeat 5 2>&1 | tee '$out/small_calls.txt'"
fi

# 3. the sweep: T_cpu, T_gpu, T_add, forced CPU shares, static and dynamic; 4 random sets and the first 1,000
#    chr19 transcripts of at most 2,500 nt (the CPU alone on all 11,470, up to 43,816 nt, would take hours)
step sweep 150 python3 benchmarks/hybrid_sweep.py --sets random:68:20000,random:120:20000,random:154:20000,random:221:20000 \
  --repeat 3 --steps 16 --json "$out/sweep_random.json" --png "$out/sweep_random.png" --results "$out/sweep.md"
# (forced shares once each here: a share of the longest transcripts on one thread each takes seconds)
step sweep-transcripts 220 python3 benchmarks/hybrid_sweep.py --repeat 3 --point-repeat 1 --steps 16 \
  --sets file:benchmarks/data/homo_sapiens_GRCh38_chr19_ensembl_cdna.fa.gz:1000:2500 \
  --json "$out/sweep_transcripts.json" --png "$out/sweep_transcripts.png" --results "$out/sweep.md"

cat "$out/sweep.md" 2>/dev/null
echo "total: $SECONDS s" | tee -a "$log"
