# fold: one job per (input, device, job number), each `rnapipe fold-job` of the shards its list names, in db format
# (what the merge reads). rnapipe folds into OUTPUT.fold, resumable from its journal, and links the finished
# fold to OUTPUT (Snakemake removes the output of a job that was cut off before running it again: rnapipe's own
# finished file must not be only under that name), so a job cut off goes on from its finished chunks, or only
# links again where its fold was complete (and folded with the same options: a job run again because its
# options changed folds again). A journal older than the job's list belongs to another plan: the fold
# starts afresh. A job with no shards writes an empty file. A GPU job takes one core and the resource gpu=1, and
# folds on its GPU; a CPU job takes CPU_THREADS. On one node both kinds run at once (--cores all
# --resources gpu=N).


rule fold:
    input:
        shards=f"{WORK}/{{sample}}/plan/{{device}}{{j}}.list",
        prepared=f"{WORK}/{{sample}}/prepared",
        shape=shape_input,
    output:
        f"{WORK}/{{sample}}/fold/{{device}}{{j}}.db",
    log:
        f"{OUTDIR}/logs/fold/{{sample}}.{{device}}{{j}}.log",
    benchmark:
        f"{OUTDIR}/benchmarks/fold/{{sample}}.{{device}}{{j}}.tsv"
    wildcard_constraints:
        device="cpu|gpu",
        j=r"\d+",
    params:
        rnapipe=RNAPIPE,
        options=fold_options,
    threads: fold_threads
    resources:
        mem_mb=config["fold"]["mem_mb"],
        gpu=lambda wildcards: 1 if wildcards.device == "gpu" else 0,
    conda:
        "../envs/fold_{device}.yaml"
    shell:
        "{params.rnapipe} fold-job {input.shards} -o {output} --threads {threads} {params.options} 2> {log}"
