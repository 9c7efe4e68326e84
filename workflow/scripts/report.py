"""The report rule's pictures (see workflow/rules/report.smk). Reads the plans (jobs.tsv), the fold jobs'
benchmark files, the profile and the merged outputs; streams the outputs (one score at a time)."""

import collections
import csv
import json
import os
import sys

import matplotlib

matplotlib.use("Agg")
import matplotlib.pyplot as plt  # noqa: E402
import numpy as np  # noqa: E402

COLOURS = {"cpu": "#4477aa", "gpu": "#cc6677"}


def read_tsv(path):
    with open(path, newline="") as handle:
        return list(csv.DictReader(handle, delimiter="\t"))


def jobs_measured(sm):
    """Rows of every input's jobs.tsv with the measured seconds and peak memory of the job's run."""
    rows = []
    for sample, path in zip(sm.params.samples, sm.input.jobs):
        for row in read_tsv(path):
            bench = os.path.join(sm.params.benchmarks, f"{sample}.{row['job']}.tsv")
            measured = read_tsv(bench)[-1] if os.path.exists(bench) else {}
            rows.append({"sample": sample, "job": row["job"], "device": row["device"],
                         "records": int(row["records"]), "nucleotides": int(row["nucleotides"]),
                         "predicted": float(row["predicted_s"]), "measured": float(measured.get("s", "nan"))})
    return rows


def throughput(rows, path):
    fig, ax = plt.subplots(figsize=(7, 4))
    devices = [d for d in ("cpu", "gpu") if any(r["device"] == d for r in rows)]
    rates = []
    for d in devices:
        mine = [r for r in rows if r["device"] == d and r["records"]]
        seconds = sum(r["measured"] for r in mine)
        rates.append(sum(r["records"] for r in mine) / seconds if seconds > 0 else 0.0)
    ax.bar(devices, rates, color=[COLOURS[d] for d in devices])
    for k, rate in enumerate(rates):
        ax.text(k, rate, f"{rate:,.0f}", ha="center", va="bottom")
    ax.set_ylabel("sequences a second (one job's wall time)")
    ax.set_title("Throughput per device (fold jobs)")
    fig.tight_layout()
    fig.savefig(path)
    plt.close(fig)


def partition(rows, path):
    """Left: each device's share of the fold jobs' time, predicted and measured (and of the records); right:
    each job's predicted and measured seconds."""
    fig, (ax, jobs) = plt.subplots(1, 2, figsize=(11, 4), gridspec_kw={"width_ratios": [1, 2]})
    devices = [d for d in ("cpu", "gpu") if any(r["device"] == d for r in rows)]
    # NaN predicted seconds (no profile: one fold job an input) draw no bar
    total_p = sum(r["predicted"] for r in rows) or 1.0
    total_m = sum(r["measured"] for r in rows if r["measured"] == r["measured"]) or 1.0
    x = np.arange(len(devices))
    predicted = [100 * sum(r["predicted"] for r in rows if r["device"] == d) / total_p for d in devices]
    measured = [100 * sum(r["measured"] for r in rows if r["device"] == d) / total_m for d in devices]
    records = [100 * sum(r["records"] for r in rows if r["device"] == d) / max(1, sum(r["records"] for r in rows))
               for d in devices]
    ax.bar(x - 0.2, predicted, 0.4, label="predicted", color="#999933")
    ax.bar(x + 0.2, measured, 0.4, label="measured", color="#332288")
    ax.set_xticks(x, [f"{d}\n({share:.1f} % of the records)" for d, share in zip(devices, records)])
    ax.set_ylabel("share of the fold jobs' time (%)")
    ax.set_title("Each device's share")
    ax.legend()
    k = np.arange(len(rows))
    jobs.bar(k - 0.2, [r["predicted"] for r in rows], 0.4, label="predicted", color="#999933")
    jobs.bar(k + 0.2, [r["measured"] for r in rows], 0.4, label="measured", color="#332288")
    jobs.set_xticks(k, [f"{r['sample']} {r['job']}" for r in rows], rotation=90, fontsize=7)
    jobs.set_ylabel("seconds")
    jobs.set_title("Each fold job (measured: its wall time)")
    jobs.legend()
    unpredicted = all(r["predicted"] != r["predicted"] for r in rows)
    fig.suptitle("Partition: measured (one fold job an input: no profile, nothing predicted)" if unpredicted
                 else "Partition: predicted against measured")
    fig.tight_layout()
    fig.savefig(path)
    plt.close(fig)


def time_vs_length(profile_path, path):
    fig, ax = plt.subplots(figsize=(7, 4))
    if not profile_path:                     # one fold job an input: the workflow made no profile
        ax.text(0.5, 0.5, "no profile: one fold job an input takes every shard,\nso the workflow timed no lengths",
                ha="center", va="center", transform=ax.transAxes)
        ax.set_axis_off()
        ax.set_title("Time against length")
        fig.savefig(path)
        plt.close(fig)
        return
    with open(profile_path) as handle:
        data = json.load(handle)
    for d in data["devices"]:
        samples = data["samples"][d]
        lens = np.array(sorted(int(k) for k in samples), dtype=float)
        secs = np.array([samples[str(int(n))] for n in lens])
        c = data["costs"][d]
        grid = np.geomspace(lens.min(), lens.max(), 100)
        ax.loglog(lens, secs, "o", color=COLOURS.get(d), label=f"{d} measured")
        if c.get("lengths"):              # the model rnapipe uses: the timed points joined in log-log
            ax.loglog(c["lengths"], c["per_seq"], "-", color=COLOURS.get(d), label=f"{d} model (points joined)")
            style, name = ":", "fit"
        else:
            style, name = "-", "fitted"
        ax.loglog(grid, c["a"] * grid ** 3 + c["b"] * grid ** 2 + c["c"], style, color=COLOURS.get(d),
                  label=f"{d} {name} a·L³ + b·L² + c")
    ax.set_xlabel("sequence length (nt)")
    ax.set_ylabel("seconds a sequence (throughput)")
    ax.set_title(f"Time against length ({data['threads']} CPU thread(s))")
    ax.legend()
    fig.tight_layout()
    fig.savefig(path)
    plt.close(fig)


def scores(path, fmt, db_lines=3):
    """How often each score text occurs in a merged output (tsv: third column; db: the number in parentheses of
    each record's third line, ``db_lines`` lines a record: more with the partition function's lines):
    scores are few distinct values (pairs, or energies in 0.01 kcal/mol), so this stays small."""
    counts = collections.Counter()
    with open(path, "rb") as handle:
        if fmt == "tsv":
            next(handle, None)
            counts.update(line.split(b"\t", 3)[2] for line in handle)
        elif fmt == "db":
            counts.update(line.rsplit(b"(", 1)[1].strip()[:-1].strip()
                          for k, line in enumerate(handle) if k % db_lines == 2)
    return counts


def energy(sm, path):
    fmt = sm.params.fmt
    counts = collections.Counter()
    if fmt in ("tsv", "db"):
        for output in sm.input.outputs:
            counts.update(scores(output, fmt, sm.params.db_lines))
    values = np.array([float(x) for x in counts], dtype=float)
    weights = np.array(list(counts.values()), dtype=float)
    total = int(weights.sum())
    fig, ax = plt.subplots(figsize=(7, 4))
    if total:
        ax.hist(values, bins=min(60, max(5, len(values))), weights=weights, color="#117733")
    else:
        ax.text(0.5, 0.5, f"no scores (formats without db or tsv: {fmt})", ha="center", transform=ax.transAxes)
    zuker = sm.params.algorithm == "zuker"
    ax.set_xlabel("minimum free energy (kcal/mol)" if zuker else "base pairs (Nussinov)")
    ax.set_ylabel("records")
    ax.set_title(f"Distribution of the scores ({total:,} records)")
    fig.tight_layout()
    fig.savefig(path)
    plt.close(fig)


def main(sm):
    rows = jobs_measured(sm)
    throughput(rows, sm.output.throughput)
    partition(rows, sm.output.partition)
    time_vs_length(sm.input.get("profile"), sm.output.time_vs_length)
    energy(sm, sm.output.energy)


with open(snakemake.log[0], "w") as log:  # noqa: F821 (given by Snakemake)
    sys.stderr = log
    main(snakemake)  # noqa: F821
