# partition: the shards of one input assigned to jobs.cpu CPU jobs and the GPU jobs by the profile, so that both
# sides are predicted to end together (the boundary B between them: the shards the CPU does relatively best go
# to the CPU). Writes one shard list per job, plan.tsv and jobs.tsv; the log shows each device's share. With one
# fold job an input there is no profile: the job takes every shard, its time not predicted; CPU jobs alone share
# the shards by the records' predicted work, their times not predicted either.


rule partition:
    input:
        prepared=f"{WORK}/{{sample}}/prepared",
        profile=profile_input(),
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
        profile=lambda wildcards, input: f"--profile {input.profile}" if input.profile else "",
    threads: 1
    resources:
        mem_mb=1000,
    conda:
        "../envs/partition.yaml"
    shell:
        "{params.rnapipe} partition {input.prepared} {params.profile} --cpu-jobs {params.cpu_jobs}"
        " --gpu-jobs {params.gpu_jobs} -o {params.plan} > {log} 2>&1"
