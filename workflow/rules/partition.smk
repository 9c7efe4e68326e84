# partition: the shards of one input assigned to jobs.cpu CPU jobs and the GPU jobs by the profile, so that both
# sides are predicted to end together (the boundary B between them: the shards the CPU does relatively best go
# to the CPU). Writes one shard list per job, plan.tsv and jobs.tsv; the log shows each device's share.


rule partition:
    input:
        prepared=f"{WORK}/{{sample}}/prepared",
        profile=PROFILE,
    output:
        lists=expand(f"{WORK}/{{{{sample}}}}/plan/{{job}}.list", job=job_names()),
        plan=f"{WORK}/{{sample}}/plan/plan.tsv",
        jobs=f"{WORK}/{{sample}}/plan/jobs.tsv",
    log:
        f"{OUTDIR}/logs/partition/{{sample}}.log",
    benchmark:
        f"{OUTDIR}/benchmarks/partition/{{sample}}.tsv"
    params:
        rnapipe=RNAPIPE,
        cpu_jobs=CPU_JOBS,
        gpu_jobs=GPU_JOBS,
        plan=lambda wildcards, output: os.path.dirname(output.plan),
    threads: 1
    resources:
        mem_mb=1000,
    conda:
        "../envs/partition.yaml"
    shell:
        "{params.rnapipe} partition {input.prepared} --profile {input.profile} --cpu-jobs {params.cpu_jobs}"
        " --gpu-jobs {params.gpu_jobs} -o {params.plan} > {log} 2>&1"
