# profile: this host's CPU engine (at a CPU fold job's threads) and, when there are GPU jobs, its GPU engine,
# timed where the job runs (on a cluster, a compute node): the CPU at 6 lengths, its cost fitted to
# t(L) = a*L^3 + b*L^2 + c; the GPU at 14, its cost joining them. The file is named after the device kind; rnapipe
# keeps the host's profile in its cache (~/.cache/rnapipe), so later runs on the same host take it from there.
# Made only where GPU jobs share an input with other jobs (PROFILE_NEEDED): one job takes every shard whatever
# they cost, and CPU jobs alone share the shards by the records' predicted work.


rule profile:
    output:
        PROFILE,
    log:
        f"{OUTDIR}/logs/profile/{Path(PROFILE).stem}.log",
    benchmark:
        f"{OUTDIR}/benchmarks/profile/{Path(PROFILE).stem}.tsv"
    params:
        rnapipe=RNAPIPE,
        device="auto" if GPU_JOBS or config["jobs"]["gpu"] == "auto" else "cpu",
        gpu=f"--gpus {GPU_IDS[0]}" if GPU_JOBS else "",
        lengths=(
            "--lengths " + ",".join(str(n) for n in config["profile"]["lengths"])
            if config["profile"]["lengths"]
            else ""
        ),
        algorithm=ALGORITHM,
        partition=" -p" if PARTITION else "",
    threads: CPU_THREADS
    resources:
        mem_mb=config["fold"]["mem_mb"],
        gpu=1 if GPU_JOBS else 0,
    conda:
        "../envs/profile.yaml"
    shell:
        "{params.rnapipe} profile --device {params.device} --cached --algorithm {params.algorithm}{params.partition}"
        " --threads {threads} {params.gpu} {params.lengths} -o {output} > {log} 2>&1"
