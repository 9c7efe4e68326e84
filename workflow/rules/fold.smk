# fold_cpu, fold_gpu: one job a (input, job number), each one `rnapipe fold` of the shards its list names, in db
# format (what the merge reads). rnapipe writes OUTPUT.fold (as OUTPUT.fold.part, renamed when complete) and
# keeps OUTPUT.fold.journal meanwhile, so a job cut off goes on from its finished chunks when it runs again; the
# job then links OUTPUT.fold to its output. (Snakemake removes the output of a job that was cut off before
# running it again: rnapipe's own finished file must not be only under that name.) A journal or a finished file older
# than the job's list belongs to another plan: the fold starts afresh (--restart). A job with no shards writes
# an empty file. On one node both kinds run at once (--cores all --resources gpu=N); GPU jobs ask for gpu=1.


rule fold_cpu:
    input:
        shards=f"{WORK}/{{sample}}/plan/cpu{{j}}.list",
        prepared=f"{WORK}/{{sample}}/prepared",
    output:
        f"{WORK}/{{sample}}/fold/cpu{{j}}.db",
    log:
        f"{OUTDIR}/logs/fold/{{sample}}.cpu{{j}}.log",
    benchmark:
        f"{OUTDIR}/benchmarks/fold/{{sample}}.cpu{{j}}.tsv"
    wildcard_constraints:
        j=r"\d+",
    params:
        rnapipe=RNAPIPE,
        options=fold_options() + " --device cpu",
    threads: CPU_THREADS
    resources:
        mem_mb=config["fold"]["mem_mb"],
    conda:
        "../envs/fold_cpu.yaml"
    shell:
        FOLD_SHELL


rule fold_gpu:
    input:
        shards=f"{WORK}/{{sample}}/plan/gpu{{j}}.list",
        prepared=f"{WORK}/{{sample}}/prepared",
    output:
        f"{WORK}/{{sample}}/fold/gpu{{j}}.db",
    log:
        f"{OUTDIR}/logs/fold/{{sample}}.gpu{{j}}.log",
    benchmark:
        f"{OUTDIR}/benchmarks/fold/{{sample}}.gpu{{j}}.tsv"
    wildcard_constraints:
        j=r"\d+",
    params:
        rnapipe=RNAPIPE,
        options=lambda wildcards: f"{fold_options()} --device gpu --gpus {gpu_of(wildcards)}",
    threads: 1
    resources:
        mem_mb=config["fold"]["mem_mb"],
        gpu=1,
    conda:
        "../envs/fold_gpu.yaml"
    shell:
        FOLD_SHELL
