#!/usr/bin/env bash
# Runs that survive, on a GPU machine: this checkout against an older tree carried as .base/ (git-ignored; e.g.
# `git archive REV | tar -x -C .base`), the wheels of .whl/ carried too. Writes into $OUT.
#   bash benchmarks/device_resume.sh tests      # the GPU tests of the front doors (resume, CLI)
#   bash benchmarks/device_resume.sh cli16      # engine vs rnapipe fold, Zuker on all cores, chr19 transcripts <= 1,000 nt, old and new
#   bash benchmarks/device_resume.sh cli16r     # the same on 3,000 random sequences of 100-1,000 nt
#   bash benchmarks/device_resume.sh kill       # a ~30-s GPU run (60,000 random 150-1,000 nt) killed at 30/60/90 %
#                                               # and SIGTERM at 50 %, rerun
#   bash benchmarks/device_resume.sh calls16    # 3,000 random 100-1,000 nt on all cores: the engine's one list, its
#                                               # calls of 2 s, then the one list and rnapipe fold in turn, 4 rounds
#   bash benchmarks/device_resume.sh doors      # the GPU tests of every front door (resume, CLI, hybrid, GPUs, workflow)
#   bash benchmarks/device_resume.sh gpu40k     # 40,000 random 150-1,000 nt through rnapipe fold --device gpu, old and new
#   bash benchmarks/device_resume.sh gpu        # the whole chr19 through rnapipe fold --device gpu, old and new
#   bash benchmarks/device_resume.sh sweep      # the profile made cold (timed), then the hybrid's sweep of the first
#                                               # 1,000 chr19 transcripts <= 2,500 nt with it (SWEEP_TREE: another tree)
#   bash benchmarks/device_resume.sh e2e16      # end_to_end.py: the engine's one list and rnapipe fold (3 runs),
#                                               # Zuker on all cores, 3,000 random 100-1,000 nt
set -euo pipefail
source benchmarks/device_env.sh
out="${OUT:-/tmp}"
gzip -dc benchmarks/data/homo_sapiens_GRCh38_chr19_ensembl_cdna.fa.gz > /tmp/chr19.fa
for mode in "$@"; do
  case "$mode" in
    tests) python3 -m pytest -m gpu -q -p no:cacheprovider tests/test_resume.py tests/test_cli.py 2>&1 | tee "$out/gpu_tests.log" ;;
    doors) python3 -m pytest -m gpu -q -p no:cacheprovider tests/test_resume.py tests/test_cli.py tests/test_hybrid.py \
             tests/test_gpus.py tests/test_zuker_gpu_packed.py tests/test_workflow.py 2>&1 | tee "$out/gpu_doors.log" ;;
    gpu40k)   # 40,000 random sequences of 150-1,000 nt through rnapipe fold --device gpu, old and new
      python3 - <<'PY'
import random
rng = random.Random(26)
with open("/tmp/r40k.fa", "w") as out:
    for k in range(40000):
        out.write(f">r{k}\n" + "".join(rng.choice("ACGU") for _ in range(rng.randint(150, 1000))) + "\n")
PY
      python3 benchmarks/compare_trees.py --old .base --new . --threads "$(nproc)" --work /tmp/compare --engine "" \
        --cli "r40kgpu=zuker:gpu:/tmp/r40k.fa@1" --results "$out/RESULTS_gpu40k.md" 2>&1 | tee "$out/gpu40k.log" ;;
    cli16)
      python3 - <<'PY'
name, seq, out = None, [], open("/tmp/chr19_1000.fa", "w")
def flush():
    s = "".join(seq)
    if name and 0 < len(s) <= 1000:
        out.write(f">{name}\n{s}\n")
for line in open("/tmp/chr19.fa"):
    if line.startswith(">"):
        flush(); name, seq = line[1:].split()[0], []
    else:
        seq.append(line.strip())
flush(); out.close()
PY
      for tree in .base .; do
        python3 "$tree/benchmarks/end_to_end.py" --device cpu --algorithm zuker --sets file:/tmp/chr19_1000.fa \
          --repeat 1 --cli-repeat 2 --results "$out/RESULTS_cli16_$( [ "$tree" = . ] && echo new || echo old ).md" 2>&1 | tail -4
      done ;;
    sweep)
      tree="${SWEEP_TREE:-.}"
      ( cd "$tree" && export RNAPIPE_CACHE=/tmp/rnapipe-cache-$RANDOM && t0=$(date +%s.%N) \
        && python3 -m rnapipe profile > "$out/profile_$(basename "$(realpath .)").txt" 2>&1 \
        && echo "profile made cold in $(python3 -c "import sys; print(f'{float(sys.argv[2]) - float(sys.argv[1]):.1f}')" \
             "$t0" "$(date +%s.%N)") s ($tree)" \
        && python3 benchmarks/hybrid_sweep.py --repeat 3 --point-repeat 1 --steps 16 \
             --sets "file:benchmarks/data/homo_sapiens_GRCh38_chr19_ensembl_cdna.fa.gz:1000:2500" \
             --json "$out/sweep.json" --results "$out/RESULTS_sweep.md" 2>&1 | tail -8 ) ;;
    cli16r|calls16|e2e16)
      python3 - <<'PY'
import random
rng = random.Random(2026)
with open("/tmp/r3000.fa", "w") as out:
    for k in range(3000):
        out.write(f">r{k}\n" + "".join(rng.choice("ACGU") for _ in range(rng.randint(100, 1000))) + "\n")
PY
      if [ "$mode" = e2e16 ]; then
        python3 benchmarks/end_to_end.py --device cpu --algorithm zuker --sets file:/tmp/r3000.fa \
          --repeat 1 --cli-repeat 3 --results "$out/RESULTS_e2e16.md" 2>&1 | tail -4
        continue
      fi
      if [ "$mode" = calls16 ]; then
        python3 benchmarks/cpu_calls.py --fasta /tmp/r3000.fa --threads "$(nproc)" --seconds 2 --rounds 4 \
          2>&1 | tee "$out/calls16.txt"
        continue
      fi
      for tree in .base . .base .; do
        python3 "$tree/benchmarks/end_to_end.py" --device cpu --algorithm zuker --sets file:/tmp/r3000.fa \
          --repeat 1 --cli-repeat 1 --results "$out/RESULTS_cli16r_$( [ "$tree" = . ] && echo new || echo old ).md" 2>&1 | tail -1
      done ;;
    kill)
      python3 benchmarks/kill_resume.py --device gpu --threads 0 --records 60000 --min 150 --max 1000 \
        --term 0.5 --results "$out/RESULTS_kill.md" 2>&1 | tee "$out/kill.log" ;;
    gpu)
      python3 benchmarks/compare_trees.py --old .base --new . --threads "$(nproc)" --work /tmp/compare --engine "" \
        --cli "chr19gpu=zuker:gpu:/tmp/chr19.fa@1" --results "$out/RESULTS_gpu.md" 2>&1 | tee "$out/gpu.log" ;;
  esac
done
