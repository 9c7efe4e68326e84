# Snakemake's lock after a kill. A run holds `.snakemake/locks/` while it works and removes it at its end; a run
# that was killed (SIGKILL, a cluster's time limit, a lost session) leaves it, and the next run would stop with
# "Directory cannot be locked" until `snakemake --unlock`. Each run records who holds the lock (host, process id,
# the process's start time) as soon as it has it (onstart); a later run on the same host whose recorded holder
# no longer runs, and whose lock files are not newer than that record, removes the lock and says so. A holder
# that still runs, one on another host, or a lock without a record is left alone: Snakemake refuses as before.

import shutil
import socket

import psutil

LOCK_DIR = Path(".snakemake") / "locks"
LOCK_HOLDER = Path(".snakemake") / "rnapipe.lock-holder.json"


def _process_started(pid):
    """The start time of process ``pid``, None when no such process runs."""
    try:
        return psutil.Process(pid).create_time()
    except (psutil.NoSuchProcess, psutil.AccessDenied, ValueError):
        return None


def record_lock_holder():
    """Called once this run holds the lock: write who holds it (atomically)."""
    holder = {"host": socket.gethostname(), "pid": os.getpid(), "started": _process_started(os.getpid())}
    part = LOCK_HOLDER.with_name(LOCK_HOLDER.name + ".part")
    part.write_text(json.dumps(holder) + "\n")
    os.replace(part, LOCK_HOLDER)


def stale_lock_holder():
    """The record of a killed run whose lock is still there, or None (no lock, or one that may be live)."""
    try:
        locks = [path for path in LOCK_DIR.iterdir() if path.name.endswith(".lock")]
        holder = json.loads(LOCK_HOLDER.read_text())
        recorded = LOCK_HOLDER.stat().st_mtime
    except (OSError, ValueError):
        return None
    if not locks or not isinstance(holder, dict) or holder.get("host") != socket.gethostname():
        return None
    pid, started = holder.get("pid"), holder.get("started")
    if not isinstance(pid, int) or pid == os.getpid():
        return None
    now = _process_started(pid)
    if now is not None and (started is None or abs(now - started) < 1.0):
        return None          # the holder runs
    if any(path.stat().st_mtime > recorded for path in locks):
        return None          # locked after the record was written: a run that has not recorded itself yet
    return holder


def clear_stale_lock():
    holder = stale_lock_holder()
    if holder is None:
        return
    shutil.rmtree(LOCK_DIR, ignore_errors=True)
    say(f"removed the lock of a run that was killed (process {holder['pid']} on {holder['host']} no longer runs); "
        "going on from what it finished")


clear_stale_lock()
