"""Write a copy of profiles/slurm for this test cluster and print what it changed.

usage: python site_profile.py SOURCE_DIR DEST_DIR ACCOUNT PARTITION CPUS MEM_MB

The project's SLURM profile names a placeholder account and partition and sizes jobs for a cluster node. On the
single test node the account and partition become the ones run_slurm.sh created, and thread and memory requests
are capped at what the node has (SLURM refuses a job that asks for more than any node offers). Everything else
is kept as it is.
"""

import shutil
import sys
from pathlib import Path

import yaml


def as_dict(value):
    """Profile resources are either a mapping or a list of 'key=value' strings."""
    if value is None:
        return {}
    if isinstance(value, dict):
        return dict(value)
    return dict(item.split("=", 1) for item in value)


def capped(value, limit):
    try:
        return min(int(value), limit)
    except (TypeError, ValueError):
        return f"min({value}, {limit})"  # an expression Snakemake evaluates itself, capped there


def main(source, dest, account, partition, cpus, mem_mb):
    cpus, mem_mb = int(cpus), int(mem_mb)
    source, dest = Path(source), Path(dest)
    profile = yaml.safe_load((source / "config.yaml").read_text())
    before = yaml.safe_dump(profile, sort_keys=False)

    defaults = as_dict(profile.get("default-resources"))
    defaults["slurm_account"] = account
    defaults["slurm_partition"] = partition
    if "mem_mb" in defaults:
        defaults["mem_mb"] = capped(defaults["mem_mb"], mem_mb)
    profile["default-resources"] = defaults

    threads = as_dict(profile.get("set-threads"))
    if threads:
        profile["set-threads"] = {rule: capped(n, cpus) for rule, n in threads.items()}

    resources = profile.get("set-resources") or {}
    for rule, res in resources.items():
        res = as_dict(res)
        for key in ("mem_mb", "cpus_per_task"):
            if key in res:
                res[key] = capped(res[key], mem_mb if key == "mem_mb" else cpus)
        resources[rule] = res
    if resources:
        profile["set-resources"] = resources

    if dest.exists():
        shutil.rmtree(dest)
    shutil.copytree(source, dest)
    after = yaml.safe_dump(profile, sort_keys=False)
    (dest / "config.yaml").write_text(after)

    old, new = before.splitlines(), after.splitlines()
    changed = [line for line in new if line not in old]
    print(f"profile {source} -> {dest}; lines set for this node:")
    for line in changed:
        print(f"    {line}")


if __name__ == "__main__":
    if len(sys.argv) != 7:
        sys.exit(__doc__.strip().splitlines()[2])
    main(*sys.argv[1:])
