#!/usr/bin/env bash
# Proof that the workflow runs on a real SLURM cluster, with outputs identical to a local run.
#
# Opt-in, not part of CI or pytest; needs root on a Debian (or Ubuntu) machine with apt. It:
#   1. installs the distribution's slurm-wlm, slurmdbd, munge and mariadb-server (apt), if missing;
#   2. writes a munge key (if there is none) and starts munged (unless one already answers);
#   3. starts a private MariaDB server and slurmdbd (job accounting: the executor plugin reads job states
#      with sacct), and registers the cluster, an account and root as its user;
#   4. writes a single-node, CPU-only slurm.conf (/etc/slurm, where the jobs' srun looks) sized from this host
#      (nproc, memory), and starts slurmctld and slurmd (as host node1, see RNAPIPE_SLURM_NODE);
#   5. makes a fresh virtual environment with `pip install .` and snakemake-executor-plugin-slurm;
#   6. runs the workflow with `snakemake --workflow-profile profiles/slurm` (account, partition, threads and memory
#      set for this node, see site_profile.py), checks in sacct that its jobs ran on SLURM, then runs it with
#      `snakemake --cores all`;
#   7. compares every output file of the two runs byte for byte (cmp), the measured ones aside (NOT_COMPARED).
# Exit status 0 only if every step worked and every output is identical. The daemons it started are stopped
# at the end, also on failure; running it again starts from a clean state.
#
# usage: sudo tests/cluster/run_slurm.sh            (from any directory; the log is also written to
#                                                     $RNAPIPE_SLURM_WORK/run_slurm.log)
# environment: RNAPIPE_SLURM_WORK  work folder for daemons' state, logs, venv and outputs
#                                  (default /tmp/rnapipe-slurm; emptied at the start, except the pip cache)
#              RNAPIPE_SLURM_KEEP=1  leave the daemons running at the end (stop them by running with --stop)
#              RNAPIPE_SLURM_NODE=NAME  the compute node's host name (default node1). slurmd runs in a UTS
#                                  namespace of its own (unshare --uts) under that name, so the jobs see another
#                                  host than the one Snakemake starts on, as on a cluster; this host's own name
#                                  (or a system without unshare) runs slurmd as this host.
#              SNAKEMAKE_ARGS      extra arguments for both snakemake runs, e.g. --configfile my.yaml (not
#                                  --config: it would replace the script's --config outdir=...)
#              RNAPIPE_SLURM_{CTLD,SLURMD,DBD,DB}_PORT  ports of slurmctld, slurmd, slurmdbd and MariaDB
#                                  (default 6817, 6818, 6819, 3306)
#              PYTHON              the interpreter for the venv (default python3)
# usage: sudo tests/cluster/run_slurm.sh --stop    stops the daemons a previous run left
set -euo pipefail

REPO="$(cd "$(dirname "${BASH_SOURCE[0]}")/../.." && pwd)"
HERE="$REPO/tests/cluster"
WORK="${RNAPIPE_SLURM_WORK:-/tmp/rnapipe-slurm}"
PYTHON="${PYTHON:-python3}"
CTLD_PORT="${RNAPIPE_SLURM_CTLD_PORT:-6817}"
SLURMD_PORT="${RNAPIPE_SLURM_SLURMD_PORT:-6818}"
DBD_PORT="${RNAPIPE_SLURM_DBD_PORT:-6819}"
DB_PORT="${RNAPIPE_SLURM_DB_PORT:-3306}"
CLUSTER=rnapipe
ACCOUNT=rnapipe
PARTITION=local
CONF_DIR=/etc/slurm  # SLURM's default configuration folder (Debian's build)
MARK="tests/cluster/run_slurm.sh"  # in the first line of the configuration files this script writes
PACKAGES=(slurm-wlm slurmdbd munge mariadb-server python3-venv)
# Files under these folders of an output directory are not compared: they hold what was measured during the run,
# which differs between any two runs: the jobs' logs, Snakemake's benchmark tables, the report's pictures, and
# the host's profile (timings, and the longest sequence the memory free at that moment holds).
NOT_COMPARED='^\./(logs|benchmarks|report|profile)/'

log() { printf '[%s] %s\n' "$(date -u +%H:%M:%S)" "$*"; }
step() { printf '\n[%s] ==== %s\n' "$(date -u +%H:%M:%S)" "$*"; }
die() { log "FAIL: $*"; exit 1; }

# ---- daemons: started with pid files under $WORK/run, stopped by those pids only --------------------------

stop_pidfile() {  # stop_pidfile NAME: stop the process in $WORK/run/NAME.pid if it is still NAME
  local name="$1" pidfile="$WORK/run/$1.pid" pid
  [ -f "$pidfile" ] || return 0
  pid="$(cat "$pidfile" 2>/dev/null || true)"
  if [ -n "$pid" ] && [ "$(ps -p "$pid" -o comm= 2>/dev/null || true)" = "$name" ]; then
    log "stopping $name (pid $pid)"
    kill "$pid" 2>/dev/null || true
    for _ in $(seq 1 40); do
      [ "$(ps -p "$pid" -o comm= 2>/dev/null || true)" = "$name" ] || break
      sleep 0.5
    done
    if [ "$(ps -p "$pid" -o comm= 2>/dev/null || true)" = "$name" ]; then
      log "$name (pid $pid) did not stop in 20 s: SIGKILL"
      kill -9 "$pid" 2>/dev/null || true
    fi
  fi
  rm -f "$pidfile"
}

stop_all() {
  if [ -f "$WORK/run/slurmctld.pid" ]; then scancel --quiet --user root 2>/dev/null || true; fi
  for name in slurmd slurmctld slurmdbd mariadbd munged; do stop_pidfile "$name"; done
  for conf in slurm.conf slurmdbd.conf; do  # only the files this script wrote
    if [ -f "$CONF_DIR/$conf" ] && grep -q "$MARK" "$CONF_DIR/$conf"; then rm -f "$CONF_DIR/$conf"; fi
  done
}

port_free() { ! (exec 3<>"/dev/tcp/127.0.0.1/$1") 2>/dev/null; }

wait_for() {  # wait_for SECONDS WHAT COMMAND...: poll until the command succeeds
  local seconds="$1" what="$2"; shift 2
  for _ in $(seq 1 $((seconds * 2))); do
    if "$@" >/dev/null 2>&1; then return 0; fi
    sleep 0.5
  done
  die "$what not ready after ${seconds} s (see $WORK/log/)"
}

if [ "${1:-}" = "--stop" ]; then
  stop_all
  exit 0
fi

[ "$(id -u)" -eq 0 ] || die "run as root: it installs packages with apt and starts daemons"
command -v apt-get >/dev/null || die "needs a Debian-like system with apt-get"

mkdir -p "$WORK"
exec > >(tee "$WORK/run_slurm.log") 2>&1
log "SLURM proof of the rnapipe workflow; repository $REPO, work folder $WORK"

cleanup() {
  local rc=$?
  if [ "${RNAPIPE_SLURM_KEEP:-0}" = 1 ]; then
    log "daemons left running (RNAPIPE_SLURM_KEEP=1); stop them with: $0 --stop"
  else
    step "cleanup"
    stop_all
  fi
  if [ "$rc" -eq 0 ]; then log "RESULT: PASS"; else log "RESULT: FAIL (exit $rc)"; fi
  log "full log: $WORK/run_slurm.log"
}
trap cleanup EXIT

# ---- 0. a clean start ------------------------------------------------------------------------------------
step "clean start"
stop_all  # daemons a previous, interrupted run left
find "$WORK" -mindepth 1 -maxdepth 1 ! -name pip-cache ! -name run_slurm.log -exec rm -rf {} +
mkdir -p "$WORK"/{run,log,state/slurmctld,state/slurmd,out}
for port in "$CTLD_PORT" "$SLURMD_PORT" "$DBD_PORT" "$DB_PORT"; do
  port_free "$port" || die "port $port on 127.0.0.1 is in use (another SLURM or MySQL?); set RNAPIPE_SLURM_*_PORT"
done
HOST="$(hostname -s)"
NODE="${RNAPIPE_SLURM_NODE:-node1}"
if [ "$NODE" != "$HOST" ] && ! unshare --uts true 2>/dev/null; then
  log "unshare --uts is not allowed here: the compute node is this host, $HOST"
  NODE="$HOST"
fi
CPUS="$(nproc)"
MEM_TOTAL_MB="$(awk '/^MemTotal:/ {print int($2 / 1024)}' /proc/meminfo)"
MEM_MB=$((MEM_TOTAL_MB * 9 / 10))  # what the node offers to jobs; the rest stays for the daemons
log "host $HOST: $CPUS CPUs, ${MEM_TOTAL_MB} MB memory (${MEM_MB} MB for jobs), no GPU configured; compute node $NODE"

# ---- 1. packages -------------------------------------------------------------------------------------------
step "1. Debian packages: ${PACKAGES[*]}"
missing=()
for pkg in "${PACKAGES[@]}"; do
  dpkg-query -W -f='${Status}' "$pkg" 2>/dev/null | grep -q "install ok installed" || missing+=("$pkg")
done
if [ "${#missing[@]}" -gt 0 ]; then
  log "installing ${missing[*]}"
  export DEBIAN_FRONTEND=noninteractive
  apt-get update -qq
  # policy-rc.d 101: the packages' init scripts must not start daemons; this script starts its own.
  printf '#!/bin/sh\nexit 101\n' > /usr/sbin/policy-rc.d && chmod +x /usr/sbin/policy-rc.d
  apt-get install -y -qq --no-install-recommends "${missing[@]}" || { rm -f /usr/sbin/policy-rc.d; die "apt-get install"; }
  rm -f /usr/sbin/policy-rc.d
else
  log "all installed"
fi
for pkg in slurm-wlm slurmdbd munge mariadb-server; do
  log "  $pkg $(dpkg-query -W -f='${Version}' "$pkg")"
done

# ---- 2. munge ----------------------------------------------------------------------------------------------
step "2. munge"
if [ ! -s /etc/munge/munge.key ]; then
  log "writing a new munge key /etc/munge/munge.key"
  mkdir -p /etc/munge
  mungekey --create --keyfile=/etc/munge/munge.key --force
  chown munge:munge /etc/munge/munge.key
  chmod 600 /etc/munge/munge.key
else
  log "munge key /etc/munge/munge.key exists; kept"
fi
if munge -n 2>/dev/null | unmunge >/dev/null 2>&1; then
  log "a munged already answers on this host; using it"
else
  install -d -o munge -g munge -m 755 /run/munge
  runuser -u munge -- munged --pid-file=/run/munge/munged.pid
  wait_for 10 munged bash -c 'munge -n | unmunge'
  cp /run/munge/munged.pid "$WORK/run/munged.pid"
  log "munged started (pid $(cat "$WORK/run/munged.pid"))"
fi
munge -n | unmunge | grep STATUS

# ---- 3. accounting: MariaDB and slurmdbd -----------------------------------------------------------------
step "3. accounting: MariaDB on 127.0.0.1:$DB_PORT, slurmdbd on port $DBD_PORT"
DB_PASS="$(head -c 12 /dev/urandom | od -An -tx1 | tr -d ' \n')"
mariadb-install-db --no-defaults --datadir="$WORK/mariadb" --user=root --skip-test-db \
  --auth-root-authentication-method=socket > "$WORK/log/mariadb-install.log" 2>&1 \
  || die "mariadb-install-db (see $WORK/log/mariadb-install.log)"
mariadbd --no-defaults --datadir="$WORK/mariadb" --user=root --port="$DB_PORT" --bind-address=127.0.0.1 \
  --socket="$WORK/run/mariadb.sock" --pid-file="$WORK/run/mariadbd.pid" --log-error="$WORK/log/mariadbd.log" \
  --innodb-buffer-pool-size=256M --innodb-lock-wait-timeout=900 >> "$WORK/log/mariadbd.log" 2>&1 &
wait_for 60 MariaDB mariadb-admin --no-defaults --socket="$WORK/run/mariadb.sock" -u root ping
log "MariaDB $(mariadb --no-defaults --socket="$WORK/run/mariadb.sock" -u root -N -e 'SELECT VERSION()') started (pid $(cat "$WORK/run/mariadbd.pid"))"
mariadb --no-defaults --socket="$WORK/run/mariadb.sock" -u root -e "
  CREATE DATABASE slurm_acct_db;
  CREATE USER 'slurm'@'127.0.0.1' IDENTIFIED BY '$DB_PASS';
  CREATE USER 'slurm'@'localhost' IDENTIFIED BY '$DB_PASS';
  GRANT ALL ON slurm_acct_db.* TO 'slurm'@'127.0.0.1';
  GRANT ALL ON slurm_acct_db.* TO 'slurm'@'localhost';"

fill() {  # fill TEMPLATE DEST: replace the @NAME@ placeholders
  sed -e "s|@HOST@|$HOST|g" -e "s|@NODE@|$NODE|g" -e "s|@CPUS@|$CPUS|g" -e "s|@MEM_MB@|$MEM_MB|g" -e "s|@WORK@|$WORK|g" \
      -e "s|@PARTITION@|$PARTITION|g" -e "s|@CTLD_PORT@|$CTLD_PORT|g" -e "s|@SLURMD_PORT@|$SLURMD_PORT|g" \
      -e "s|@DBD_PORT@|$DBD_PORT|g" -e "s|@DB_PORT@|$DB_PORT|g" -e "s|@DB_PASS@|$DB_PASS|g" "$1" > "$2"
}
# The configuration goes where SLURM's commands look by default: the executor plugin's job step drops SLURM_*
# variables (SLURM_CONF among them) before it calls srun inside a job.
for conf in slurm.conf slurmdbd.conf; do
  if [ -e "$CONF_DIR/$conf" ] && ! grep -q "$MARK" "$CONF_DIR/$conf"; then
    die "$CONF_DIR/$conf exists and was not written by this script: this machine has a SLURM of its own; not touched"
  fi
done
mkdir -p "$CONF_DIR"
fill "$HERE/slurm.conf.in" "$CONF_DIR/slurm.conf"
fill "$HERE/slurmdbd.conf.in" "$CONF_DIR/slurmdbd.conf"
chmod 600 "$CONF_DIR/slurmdbd.conf"
slurmdbd
wait_for 60 slurmdbd sacctmgr -n list cluster
log "slurmdbd started (pid $(cat "$WORK/run/slurmdbd.pid"))"
sacctmgr -i add cluster "$CLUSTER" >/dev/null
sacctmgr -i add account "$ACCOUNT" Cluster="$CLUSTER" Description="rnapipe SLURM proof" Organization=rnapipe >/dev/null
sacctmgr -i add user root Account="$ACCOUNT" DefaultAccount="$ACCOUNT" Cluster="$CLUSTER" >/dev/null
sacctmgr -n -P list associations format=Cluster,Account,User | sed 's/^/    association: /'

# ---- 4. slurmctld and slurmd -----------------------------------------------------------------------------
step "4. slurmctld and slurmd (node $NODE: CPUs=$CPUS RealMemory=$MEM_MB, partition $PARTITION)"
log "$CONF_DIR/slurm.conf:"
grep -v '^#' "$CONF_DIR/slurm.conf" | sed 's/^/    /'
slurmctld
wait_for 60 slurmctld scontrol ping
if [ "$NODE" = "$HOST" ]; then
  slurmd -N "$NODE"
else
  log "slurmd runs as host $NODE (its own UTS namespace): the jobs see another host name than $HOST"
  # shellcheck disable=SC2016
  unshare --uts sh -c 'hostname "$1" && exec slurmd -N "$1"' sh "$NODE"
fi
node_idle() { [ "$(sinfo -h -n "$NODE" -o %T)" = idle ]; }
wait_for 60 "node $NODE" node_idle
log "slurmctld (pid $(cat "$WORK/run/slurmctld.pid")) and slurmd (pid $(cat "$WORK/run/slurmd.pid")) up"
sinfo -N -o '    %N %P %T cpus=%c memory=%m MB' | sed 's/^ *NODELIST/    NODELIST/'
log "smoke test: srun -A $ACCOUNT -p $PARTITION hostname -> $(srun -A "$ACCOUNT" -p "$PARTITION" -n1 -t 1 hostname)"
wait_for 30 "the smoke test's accounting record" bash -c "sacct -X -n -o State | grep -q COMPLETED"
sacct -X -o JobID,JobName,Account,Partition,State,ExitCode | sed 's/^/    /'

# ---- 5. a fresh virtual environment ------------------------------------------------------------------------
step "5. fresh venv: pip install . snakemake-executor-plugin-slurm"
unset PYTHONPATH VIRTUAL_ENV  # the workflow must use the package as installed, not a source tree
"$PYTHON" -m venv "$WORK/venv"
# shellcheck disable=SC1091
source "$WORK/venv/bin/activate"
export PIP_CACHE_DIR="$WORK/pip-cache"
log "pip output: $WORK/log/pip.log"
python -m pip install --upgrade pip > "$WORK/log/pip.log" 2>&1 || die "pip install --upgrade pip (see $WORK/log/pip.log)"
python -m pip install "$REPO" snakemake-executor-plugin-slurm >> "$WORK/log/pip.log" 2>&1 \
  || die "pip install . snakemake-executor-plugin-slurm (see $WORK/log/pip.log)"
log "$(python -V); $(python -m pip list 2>/dev/null | grep -E '^(rnapipe|snakemake|snakemake-executor-plugin-slurm|snakemake-executor-plugin-slurm-jobstep|numba|numpy) ' | awk '{printf "%s %s; ", $1, $2}')"
log "$(sbatch --version)"

# ---- 6. the workflow, on SLURM and locally -----------------------------------------------------------------
cd "$REPO"
# The host's timing profile (rnapipe profile --cached) starts empty: the SLURM run's profile job measures it, and
# the local run finds it in this cache, as a second run on a host does.
export RNAPIPE_CACHE="$WORK/cache"
python "$HERE/site_profile.py" profiles/slurm "$WORK/profile-slurm" "$ACCOUNT" "$PARTITION" "$CPUS" "$MEM_MB"
read -r -a extra <<< "${SNAKEMAKE_ARGS:-}"
snakemake --unlock --cores 1 "${extra[@]}" >/dev/null 2>&1 || true  # a lock an interrupted run left

# Both runs write to the same folder, moved aside after each: the outputs may name paths under it (the shard
# lists do), and so must be the same files byte for byte.
RUN_OUT="$WORK/out/run"

step "6a. workflow on SLURM: snakemake --workflow-profile profiles/slurm (this node's copy) -> $RUN_OUT"
start_slurm="$(date +%Y-%m-%dT%H:%M:%S)"
t0=$SECONDS
snakemake --workflow-profile "$WORK/profile-slurm" --config "outdir=$RUN_OUT" "${extra[@]}" \
  || die "the workflow on SLURM failed"
mv "$RUN_OUT" "$WORK/out/slurm"
log "SLURM run finished in $((SECONDS - t0)) s (outputs moved to $WORK/out/slurm); the jobs SLURM ran (sacct):"
sacct -X -S "$start_slurm" -o JobID,Comment%28,Account,Partition,AllocCPUS,ReqMem,State,ExitCode,Elapsed \
  | sed 's/^/    /'
n_done="$(sacct -X -n -P -S "$start_slurm" -o State | grep -c '^COMPLETED$' || true)"
n_bad="$(sacct -X -n -P -S "$start_slurm" -o State | grep -v -c '^COMPLETED$' || true)"
[ "$n_done" -ge 1 ] || die "SLURM ran no job: the run did not go through SLURM"
[ "$n_bad" -eq 0 ] || die "$n_bad SLURM job(s) did not complete"
log "$n_done SLURM job(s) completed, none failed"

step "6b. workflow locally: snakemake --cores all -> $RUN_OUT"
t0=$SECONDS
snakemake --cores all --config "outdir=$RUN_OUT" "${extra[@]}" || die "the local workflow run failed"
mv "$RUN_OUT" "$WORK/out/local"
log "local run finished in $((SECONDS - t0)) s (outputs moved to $WORK/out/local)"

# ---- 7. byte-for-byte comparison -------------------------------------------------------------------------
step "7. compare every output (cmp), except $NOT_COMPARED"
list_outputs() { (cd "$1" && { find . -type f | LC_ALL=C sort | grep -v -E "$NOT_COMPARED" || true; }); }
list_outputs "$WORK/out/slurm" > "$WORK/outputs.slurm"
list_outputs "$WORK/out/local" > "$WORK/outputs.local"
if ! diff "$WORK/outputs.slurm" "$WORK/outputs.local" > "$WORK/outputs.diff"; then
  sed 's/^/    /' "$WORK/outputs.diff"
  die "the two runs wrote different sets of files (< SLURM, > local)"
fi
n_files="$(wc -l < "$WORK/outputs.slurm")"
[ "$n_files" -ge 1 ] || die "no outputs to compare"
n_diff=0
while read -r path; do
  if cmp -s "$WORK/out/slurm/$path" "$WORK/out/local/$path"; then
    printf '    identical  %10d bytes  %s  %s\n' "$(stat -c %s "$WORK/out/slurm/$path")" \
      "$(sha256sum < "$WORK/out/slurm/$path" | cut -c1-16)" "${path#./}"
  else
    printf '    DIFFERENT  %s: %s\n' "${path#./}" "$(cmp "$WORK/out/slurm/$path" "$WORK/out/local/$path" 2>&1 | head -1)"
    n_diff=$((n_diff + 1))
  fi
done < "$WORK/outputs.slurm"
[ "$n_diff" -eq 0 ] || die "$n_diff of $n_files output files differ between the SLURM and the local run"
log "all $n_files output files identical between the SLURM run and the local run"
